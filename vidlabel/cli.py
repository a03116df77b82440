"""The ``vidlabel`` command: thin argument parsing over the library.

Each sub-command is one ``_cmd_*`` function taking the parsed arguments and
returning an exit status. Bad input prints one line ``vidlabel: error: ...``
to stderr and exits with status 2 (argument errors) or 1 (everything else).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from vidlabel._version import __version__
from vidlabel.errors import VidlabelError

__all__ = ["main"]


def _cmd_create(args: argparse.Namespace) -> int:
    raise NotImplementedError("create (dataset helper)")


def _cmd_add_video(args: argparse.Namespace) -> int:
    raise NotImplementedError("add-video (dataset helper; probing from the reader helper)")


def _cmd_add_labels(args: argparse.Namespace) -> int:
    raise NotImplementedError("add-labels (dataset helper)")


def _cmd_add_view(args: argparse.Namespace) -> int:
    raise NotImplementedError("add-view (dataset helper)")


def _cmd_add_annotations(args: argparse.Namespace) -> int:
    raise NotImplementedError("add-annotations (dataset helper)")


def _cmd_build(args: argparse.Namespace) -> int:
    raise NotImplementedError("build (dataset helper)")


def _cmd_releases(args: argparse.Namespace) -> int:
    raise NotImplementedError("releases (dataset helper)")


def _cmd_validate(args: argparse.Namespace) -> int:
    raise NotImplementedError("validate (dataset helper)")


def _cmd_info(args: argparse.Namespace) -> int:
    raise NotImplementedError("info (dataset helper for a dataset, store helper for a store)")


def _cmd_index(args: argparse.Namespace) -> int:
    raise NotImplementedError("index (reader helper)")


def _cmd_check_video(args: argparse.Namespace) -> int:
    raise NotImplementedError("check-video (reader helper)")


def _cmd_export(args: argparse.Namespace) -> int:
    raise NotImplementedError("export (store helper)")


def _cmd_cache(args: argparse.Namespace) -> int:
    raise NotImplementedError("cache (store helper)")


def _cmd_verify(args: argparse.Namespace) -> int:
    raise NotImplementedError("verify (store helper)")


def _cmd_demo(args: argparse.Namespace) -> int:
    from vidlabel.demo import run_demo

    result = run_demo(args.dir, progress=True)
    return 0 if result["ok"] else 1


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from err


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vidlabel`` command (one sub-parser per command)."""
    parser = argparse.ArgumentParser(prog="vidlabel", description="Annotated videos to training data.")
    parser.add_argument("--version", action="version", version=f"vidlabel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func)
        return p

    p = add("create", _cmd_create, "Create an empty dataset folder.")
    p.add_argument("dataset", metavar="DATASET")

    p = add("add-video", _cmd_add_video, "Register a video file: probe its metadata and write its frame index.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--video-id", help="id of the video (default: the file name without extension)")
    p.add_argument("--metadata", type=_json_arg, help="JSON VideoMetadata fields that override what the probe finds")
    p.add_argument("--no-index", action="store_true", help="do not build the frame index now (see 'vidlabel index')")

    p = add("add-labels", _cmd_add_labels, "Add labels to the vocabulary (in order; names already there are kept).")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("labels", metavar="LABEL", nargs="+")

    p = add("add-view", _cmd_add_view, "Add a view: a named crop of the frame, optionally resized.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("view_id", metavar="VIEW_ID")
    p.add_argument("--crop", type=int, nargs=4, metavar=("X0", "Y0", "X1", "Y1"), required=True)
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"))

    p = add("add-annotations", _cmd_add_annotations, "Add annotations from a JSON Lines file (one row per line).")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("file", metavar="FILE.jsonl")
    p.add_argument("--clip", action="store_true", help="clip boxes that leave the frame instead of refusing them")

    p = add("build", _cmd_build, "Pin an immutable release of the current annotations; prints its id.")
    p.add_argument("dataset", metavar="DATASET")

    p = add("releases", _cmd_releases, "List the releases of a dataset.")
    p.add_argument("dataset", metavar="DATASET")

    p = add("validate", _cmd_validate, "Check a dataset; prints problems with stable codes.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--json", action="store_true", help="print problems as JSON Lines")

    p = add("info", _cmd_info, "Describe a dataset or a frame store.")
    p.add_argument("path", metavar="PATH", help="a dataset folder or a frame store")

    p = add("index", _cmd_index, "Add a frame index to the videos registered without one.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")

    p = add("check-video", _cmd_check_video, "Keyframe spacing and random-access cost of a video, with the remedy.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--reads", type=int, default=20, help="random reads to time (default 20)")

    p = add("export", _cmd_export, "Decode a release once into a chunked frame store.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest")
    p.add_argument("--format", dest="store_format", choices=["hdf5", "zarr"], default="hdf5")
    p.add_argument("--codec", default=None, help="none, lz4, zstd, gzip, png or jpeg")
    p.add_argument("--view", dest="view_id", default=None)
    p.add_argument("--frames", choices=["annotated", "all"], default="annotated")
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"))
    p.add_argument("--chunk-frames", type=int, default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true")

    p = add("cache", _cmd_cache, "Write a frames-only store of the frames a release uses (the spec's frame cache).")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest")
    p.add_argument("--format", dest="codec", choices=["jpeg", "png", "none"], default="jpeg")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true")

    p = add("verify", _cmd_verify, "Check a frame store's structure, counts and per-chunk checksums.")
    p.add_argument("out", metavar="OUT")

    p = add("demo", _cmd_demo, "Run the whole pipeline on a generated clip and check every target.")
    p.add_argument("dir", metavar="DIR", nargs="?", default="vidlabel_demo")

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vidlabel`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except VidlabelError as err:
        print(f"vidlabel: error: {err}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as err:
        print(f"vidlabel: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vidlabel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
