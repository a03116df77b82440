"""How a sub-command joins the ``vidlabel`` command: its parser and the function that runs it.

Every group of sub-commands (``vidlabel.cli``'s modules, ``vidlabel.formats._cli``,
``vidlabel.viewer._cli``) has a ``register(subparsers)`` that adds its parsers
through :func:`add_command`; it sits in layer 1 so that lower packages can plug
their commands in without importing ``vidlabel.cli``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    #: The object ``ArgumentParser.add_subparsers`` returns, which ``register`` functions add parsers to (of
    #: the class of the parser it belongs to).
    Subparsers = argparse._SubParsersAction[Any]

__all__ = ["add_command"]


def add_command(
    subparsers: Subparsers, name: str, func: Callable[[argparse.Namespace], int], help_: str
) -> argparse.ArgumentParser:
    """Add the sub-command ``name``, run by ``func(args)`` (which returns the exit status); returns its parser."""
    p = subparsers.add_parser(name, help=help_, description=help_)
    # The command's own parser names an argument it does not know, with the command's usage.
    p.set_defaults(func=func, command_parser=p)
    return p
