"""``vidlabel import`` and ``vidlabel export-labels``: thin argument parsing over ``import_labels`` / ``export_labels``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command

from ._registry import FORMATS

if TYPE_CHECKING:
    from vidlabel._command import Subparsers

__all__ = ["register"]


def _formats_help() -> str:
    """Each registered format, one line: name, what it is, its files and import options (the help's epilog)."""
    lines = ["formats:"]
    for fmt in sorted(FORMATS.values(), key=lambda f: f.name):
        options = f"; options: {', '.join(fmt.options)}" if fmt.options else ""
        lines.append(f"  {fmt.name}: {fmt.summary}; {fmt.files.replace('`', '')}{options}")
    return "\n".join(lines)


def _pairs(text: str) -> dict[str, str]:
    """``K=V,K=V`` as a dict; a key given twice is refused (the later value would replace the earlier without a
    word: ``1=person,1=car`` would import class 1 as car)."""
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not KEY=VALUE (e.g. 1=person,3=car)")
        _add_once(out, key.strip(), value.strip())
    return out


def _add_once(out: dict[Any, str], key: Any, value: str) -> None:
    if key in out:
        raise argparse.ArgumentTypeError(f"{key} is given twice ({key}={out[key]} and {key}={value}): give it once")
    out[key] = value


def _label_map(text: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for key, value in _pairs(text).items():
        try:
            _add_once(out, int(key), value)  # "01" and "1" are one class id
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"class ids must be integers ({err}), e.g. 1=person,3=car") from err
    return out


class _MergeOnce(argparse.Action):
    """A ``K=V,...`` flag that may be given more than once: the maps are merged, a key in two of them refused."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        merged = dict(getattr(namespace, self.dest) or {})
        for key, value in values.items():
            if key in merged:
                parser.error(f"{option}: {key} is given twice ({key}={merged[key]} and {key}={value}): give it once")
            merged[key] = value
        setattr(namespace, self.dest, merged)


def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. frames=digits)")
    lowered = value.lower()
    parsed: Any = {"true": True, "false": False}.get(lowered, value)
    return key, parsed


#: import_labels' keywords that ``vidlabel import`` sets from flags of its own, with the flag.
_OWN_FLAGS = {
    "video_id": "--video", "videos": "--video-map", "label_map": "--label-map", "label": "--label",
    "add_labels": "--add-labels", "dry_run": "--dry-run", "clip": "--no-clip (clipping is the default)",
    "read_as": "--read-as",
}  # fmt: skip


def _cmd_import(args: argparse.Namespace) -> int:
    from vidlabel.dataset import Dataset
    from vidlabel.errors import OptionError
    from vidlabel.formats import import_labels

    seen: dict[str, Any] = {}
    for key, value in args.option:
        if key in _OWN_FLAGS:
            raise OptionError(f"--option {key}=... is set by a flag of its own here: use {_OWN_FLAGS[key]}")
        if key in seen:
            raise OptionError(f"--option {key} is given twice ({key}={seen[key]} and {key}={value}): give it once")
        seen[key] = value
    if args.read_as is not None:
        seen["read_as"] = args.read_as
    report = import_labels(
        Dataset.open(args.dataset),
        args.format,
        args.file,
        video_id=args.video,
        videos=args.video_map,
        label_map=args.label_map,
        label=args.label,
        add_labels=args.add_labels,
        dry_run=args.dry_run,
        clip=not args.no_clip,
        **seen,
    )
    print(json.dumps(report.to_dict()) if args.json else str(report))
    return 0


def _cmd_export_labels(args: argparse.Namespace) -> int:
    from vidlabel.dataset import Dataset
    from vidlabel.formats import export_labels

    report = export_labels(Dataset.open(args.dataset), args.format, args.out, release=args.release, videos=args.videos)
    print(json.dumps(report.to_dict()) if args.json else str(report))
    return 0


def _describe_formats(parser: argparse.ArgumentParser) -> None:
    """End the command's help with the registered formats, kept as written (one line each)."""
    parser.epilog = _formats_help()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def register(subparsers: Subparsers) -> None:
    """Add ``vidlabel import`` and ``vidlabel export-labels``."""
    choices = sorted(FORMATS)
    names = ", ".join(choices)
    p = add_command(
        subparsers,
        "import",
        _cmd_import,
        f"Import a label file of another tool through add_annotations (formats: {names}).",
    )
    _describe_formats(p)
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("format", metavar="FORMAT", choices=choices, help=f"one of: {names}")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--video", help="the dataset video of a file that holds one video")
    p.add_argument(
        "--video-map",
        type=_pairs,
        action=_MergeOnce,
        default=None,
        metavar="K=ID,...",
        help="file video key (id, name, folder) -> video id",
    )
    p.add_argument(
        "--label-map", type=_label_map, action=_MergeOnce, default=None, metavar="1=person,3=car",
        help="class id -> label, for formats that name classes by id (mot, coco-vid, ytvis; over the file's "
        "categories where it has them)",
    )  # fmt: skip
    p.add_argument(
        "--read-as", choices=("gt", "results"), default=None,
        help="mot: read 10-column lines as ground truth (MOT15 gt.txt: column 7 the consider flag) or as tracker "
        "results (column 7 a score); by default decided from the file's name and column 7, said in the report",
    )  # fmt: skip
    p.add_argument("--label", help="one label for every row of a file without classes (MOT det.txt)")
    p.add_argument("--add-labels", action="store_true", help="add labels the file names that the dataset lacks")
    p.add_argument("--dry-run", action="store_true", help="read and check the file, write nothing")
    p.add_argument("--no-clip", action="store_true", help="refuse boxes that leave the frame instead of clipping them")
    p.add_argument(
        "--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
        help="a format option, e.g. frames=digits (ytvis), one_based_pixels=true (mot), frames_count_mismatch=warn, "
        "track_ids=keep (any format: keep the file's track ids even where the video already holds tracks)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = add_command(
        subparsers,
        "export-labels",
        _cmd_export_labels,
        f"Write a release as a label file of another tool (formats: {names}).",
    )
    _describe_formats(p)
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("format", metavar="FORMAT", choices=choices, help=f"one of: {names}")
    p.add_argument("out", metavar="OUT", help="a file (.json, .xml) or a folder (MOT; CVAT for several videos)")
    p.add_argument("--release", default="latest", help="release id, or 'latest' (default)")
    p.add_argument("--videos", nargs="*", default=[], help="only these videos (default: all)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
