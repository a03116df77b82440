"""The ``vidlabel`` command: thin argument parsing over the library.

The sub-commands come in groups, one module each, whose ``register(subparsers)``
adds their parsers (:func:`vidlabel._command.add_command`): ``_dataset``
(create, add-video, add-labels, add-view, add-annotations), ``_attributes``
(attributes show, declare, set), ``_releases``
(build, releases, validate), ``_inspect`` (info, index, check-video), ``_store``
(export, cache, verify, upload), ``vidlabel.formats._cli`` (import,
export-labels), ``vidlabel.viewer._cli`` (view) and ``_demo`` (demo). Each
sub-command is one ``_cmd_*`` function taking the parsed arguments and
returning an exit status. Bad input prints one line ``vidlabel: error: ...``
to stderr and exits with status 2 (argument errors) or 1 (everything else).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vidlabel._version import __version__
from vidlabel.cli import _attributes, _dataset, _demo, _inspect, _releases, _store
from vidlabel.cli._parser import Parser, list_took_positionals
from vidlabel.errors import VidlabelError, VidlabelWarning

if TYPE_CHECKING:
    from vidlabel._command import Subparsers

__all__ = ["build_parser", "main"]


def _registers() -> tuple[Callable[[Subparsers], None], ...]:
    """The ``register`` function of each group of sub-commands, in the order ``--help`` lists them."""
    from vidlabel.formats._cli import register as formats
    from vidlabel.viewer._cli import register as view

    return (
        _dataset.register,
        _attributes.register,
        _releases.register,
        _inspect.register,
        _store.register,
        formats,
        view,
        _demo.register,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vidlabel`` command (one sub-parser per command)."""
    parser = Parser(prog="vidlabel", description="Annotated videos to training data.")
    parser.add_argument("--version", action="version", version=f"vidlabel {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in _registers():
        register(subparsers)
    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Print vidlabel's own warnings as one line, like errors; others as Python would."""
    if issubclass(category, VidlabelWarning):  # one write: DataLoader workers forked from here share the stream
        sys.stderr.write(f"vidlabel: warning: {message}\n")
        sys.stderr.flush()
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file behind sys.stdout
        pass


_RESUMABLE = frozenset({"export", "cache", "upload"})  # commands whose rerun resumes an interrupted run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vidlabel`` console script; returns the exit status.

    Errors print ``vidlabel: error: ...`` and return 1 (2 for bad arguments,
    from argparse); vidlabel's warnings print ``vidlabel: warning: ...``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (None: ``sys.argv[1:]``).
    """
    for stream in (sys.stdout, sys.stderr):  # a file name with bytes that are not UTF-8 prints as \udcXX escapes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    Parser.hint = list_took_positionals(sys.argv[1:] if argv is None else list(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the command's usage (argparse's parse_args gives the top-level one)
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return int(args.func(args) or 0)
        except VidlabelError as err:
            print(f"vidlabel: error: {err}", file=sys.stderr)
            return 1
        except sqlite3.DatabaseError as err:  # a query on a damaged database (opening it is checked)
            dataset = getattr(args, "dataset", None) or getattr(args, "path", None) or "the dataset"
            from vidlabel.dataset._db import damaged_message

            print(f"vidlabel: error: {damaged_message(Path(dataset).absolute(), err)}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # the reader of our output went away (`vidlabel info STORE | head -1`)
            _stdout_to_devnull()
            return 141  # as a shell reports a command stopped by SIGPIPE; nothing to say on stderr
        except (OSError, ValueError) as err:
            print(f"vidlabel: error: {type(err).__name__}: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            # what an export or upload finished is kept, and rerunning it resumes (docs/how-to/frame-store.md)
            resumes = "; the same command resumes it" if args.command in _RESUMABLE else ""
            print(f"vidlabel: interrupted{resumes}", file=sys.stderr)
            return 130
