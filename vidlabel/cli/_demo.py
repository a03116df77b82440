"""``vidlabel demo``: the whole pipeline on a generated clip."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from vidlabel._command import add_command

if TYPE_CHECKING:
    from vidlabel._command import Subparsers


def _cmd_demo(args: argparse.Namespace) -> int:
    from vidlabel.demo import run_demo

    result = run_demo(args.dir, progress=True)
    return 0 if result["ok"] else 1


def register(subparsers: Subparsers) -> None:
    """Add ``demo``."""
    p = add_command(subparsers, "demo", _cmd_demo, "Run the whole pipeline on a generated clip and check every target.")
    p.add_argument(
        "dir",
        metavar="DIR",
        nargs="?",
        default="vidlabel_demo",
        help="folder for the clip, the dataset and the store (default: ./vidlabel_demo)",
    )
