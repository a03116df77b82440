"""``vidlabel view``: its arguments and what it runs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command

if TYPE_CHECKING:
    from vidlabel._command import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``vidlabel view``."""
    p = add_command(
        subparsers,
        "view",
        run_view,
        "Serve a read-only web page over a dataset, a release or a frame store (127.0.0.1, a free port).",
    )
    p.add_argument("path", metavar="PATH", help="a dataset folder, a frame store, or a Zarr store's URL")
    p.add_argument(
        "--release", metavar="ID", default=None, help="for a dataset: a release id, 'latest' (default) or 'live'"
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=0, help="port to listen on (default 0: a free one)")


def run_view(args: argparse.Namespace) -> int:
    """Open the path, print the address, serve until interrupted; returns the exit status."""
    from vidlabel.viewer._server import start_server

    server: Any = start_server(args.path, release=args.release, host=args.host, port=args.port)
    print(f"vidlabel view: {server.source.title} at {server.url} (Ctrl+C stops)", flush=True)
    try:
        # Werkzeug's loop ends on Ctrl+C by itself; the interrupt may also land before it is entered.
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    print("vidlabel view: stopped", file=sys.stderr)
    return 0
