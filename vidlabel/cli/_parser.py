"""The ``vidlabel`` command's argument parser class and the argument types and hints shared by its commands."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, NoReturn

from vidlabel._json import RepeatedKeyError, no_repeated_keys


class Parser(argparse.ArgumentParser):
    """argparse's parser whose missing-argument error says when a list option took the positional arguments."""

    hint = ""  # set by :func:`vidlabel.cli.main` for the arguments it parses

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            message += Parser.hint
        super().error(message)


def json_arg(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=no_repeated_keys)
    except RepeatedKeyError as err:
        raise argparse.ArgumentTypeError(f"key {err.key!r} is given twice: give each key once") from None
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from err
    except RecursionError:
        raise argparse.ArgumentTypeError("JSON nested too deeply to read") from None
    except ValueError as err:  # an integer of more than 4300 digits, which Python refuses to convert
        raise argparse.ArgumentTypeError(f"a number is too long to read ({str(err).split(';')[0]})") from None


#: Options that take a list of values (``nargs="*"``): argparse gives them every value after them up to the next
#: option, a positional argument written after them included.
LIST_OPTIONS = ("--roots", "--videos")


def list_took_positionals(argv: Sequence[str]) -> str:
    """Where the last of ``argv``'s list options (:data:`LIST_OPTIONS`) runs to the end of ``argv``, so that it
    may have taken a positional argument: the words of a hint saying so, else ''."""
    for at in range(len(argv) - 1, -1, -1):
        word = argv[at]
        if word == "--" or (word.startswith("-") and word not in LIST_OPTIONS):
            return ""
        if word in LIST_OPTIONS:
            values = argv[at + 1 :]
            if not values:
                return ""
            return (
                f" ({word} took every value after it: {' '.join(values)}; end its list with `--` "
                f"or write {word} after the positional arguments)"
            )
    return ""
