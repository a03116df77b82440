"""``vidlabel create``, ``add-video``, ``add-labels``, ``add-view``, ``add-annotations``: a dataset and what it holds."""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command
from vidlabel._json import RepeatedKeyError, json_error_text, no_repeated_keys
from vidlabel._words import plural
from vidlabel.cli._parser import json_arg
from vidlabel.errors import OptionError, VidlabelWarning

if TYPE_CHECKING:
    from vidlabel._command import Subparsers
    from vidlabel.spec import VideoMetadata


def _cmd_create(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    ds = Dataset.create(args.dataset)
    print(f"created dataset {ds.path}")
    return 0


def _cmd_add_video(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset, already_registered
    from vidlabel.spec import FrameIndex, VideoMetadata

    ds = Dataset.open(args.dataset)
    if args.metadata is not None and not isinstance(args.metadata, dict):
        raise OptionError("--metadata must be a JSON object of VideoMetadata fields")
    overrides = dict(args.metadata or {})
    video_id = _video_id(args, overrides)
    overrides["video_id"] = video_id
    if not args.replace and _registered(ds, video_id):  # say so before probing (which decodes the whole file)
        raise already_registered(ds.path, video_id)
    names = set(VideoMetadata.__dataclass_fields__)
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise OptionError(f"--metadata has unknown field(s) {unknown}; allowed: {', '.join(sorted(names))}")
    if isinstance(overrides.get("frame_index"), dict):
        overrides["frame_index"] = FrameIndex.from_dict(overrides["frame_index"])
    if os.path.exists(args.file) or args.metadata is None:
        meta = _probed(args, video_id, overrides)
    else:
        meta = _described(args, overrides)
    replace = args.replace and _registered(ds, meta.video_id)
    if replace:
        ds.update_video(meta)  # annotations are kept; validate reports rows the new metadata no longer fits
    else:
        ds.add_video(meta)
    fps = meta.fps
    index = f", frame index of {plural(meta.frame_index.frame_count, 'frame')}" if meta.frame_index is not None else ""
    untrusted = f", {meta.untrusted_count} without a trustworthy picture" if meta.untrusted_count else ""
    print(
        f"{'replaced' if replace else 'added'} video {meta.video_id!r}: {plural(meta.frame_count, 'frame')}{untrusted}, "
        f"{meta.width}x{meta.height}, {fps['num']}/{fps['den']} fps{index}"
    )
    return 0


def _video_id(args: argparse.Namespace, overrides: dict[str, Any]) -> str:
    """The id ``add-video`` registers the file under (``--video-id``, ``--metadata``'s, else the file's name)."""
    if args.video_id is not None:
        video_id, source = args.video_id, "--video-id"
    elif "video_id" in overrides:
        video_id, source = overrides["video_id"], "--metadata's video_id"
    else:
        video_id, source = Path(args.file).stem, f"the file name of {args.file!r} (the default id)"
    from vidlabel.spec import video_id_problem

    if not isinstance(video_id, str) or not video_id.strip() or "/" in video_id or video_id_problem(video_id):
        what = "is not a string" if not isinstance(video_id, str) else "contains '/'" if "/" in video_id else "is empty"
        if isinstance(video_id, str) and video_id.strip() and "/" not in video_id:
            what = str(video_id_problem(video_id))
        raise OptionError(
            f"video id {video_id!r} from {source} {what}; a video id is a non-empty name without '/', e.g. 'cam1'"
            + ("" if source == "--video-id" else " (give one with --video-id)")
        )
    return video_id


def _probed(args: argparse.Namespace, video_id: str, overrides: dict[str, Any]) -> VideoMetadata:
    """The file is there (or nothing else describes it): probe it; --metadata fields override what it finds."""
    from vidlabel.video._probe import probe

    meta = probe(args.file, video_id=video_id, with_index=not args.no_index, progress=not args.no_progress)
    # The file decides its size and rotation: the reader gives the pictures it decodes, whatever metadata says.
    claimed = {k: overrides[k] for k in ("width", "height", "rotation") if k in overrides}
    found = {"width": meta.width, "height": meta.height, "rotation": meta.rotation}
    wrong = [f"{k} {v!r} (the file has {found[k]})" for k, v in claimed.items() if v != found[k]]
    if wrong:
        raise OptionError(
            f"--metadata claims {', '.join(wrong)} for {args.file!r}: the size and rotation of a video whose "
            f"file is given are what the file decodes to ({meta.width}x{meta.height}, rotation "
            f"{meta.rotation}); drop those fields"
        )
    if "frame_count" in overrides and "untrusted_frames" not in overrides and meta.untrusted_frames:
        count = int(overrides["frame_count"])  # keep the probed untrusted frames that the new count keeps
        overrides["untrusted_frames"] = [(a, min(b, count - 1)) for a, b in meta.untrusted_frames if a < count]
    try:
        return meta.replace(**overrides)
    except ValueError as err:
        raise OptionError(f"--metadata: {err}") from err


def _described(args: argparse.Namespace, overrides: dict[str, Any]) -> VideoMetadata:
    """No file here: the video from --metadata alone (e.g. labelled elsewhere, read from a store)."""
    from vidlabel.spec import VideoMetadata

    overrides.setdefault("sources", [{"uri": os.path.abspath(args.file)}])
    try:
        return VideoMetadata(**overrides)
    except TypeError as err:
        raise OptionError(f"--metadata needs frame_count, fps, width and height ({err})") from err
    except ValueError as err:
        raise OptionError(f"--metadata: {err}") from err


def _registered(ds: Any, video_id: str) -> bool:
    from vidlabel.errors import DatasetError, UnknownVideoError

    try:
        ds.video(video_id)
    except UnknownVideoError:
        return False
    except DatasetError as err:
        if err.video_id != video_id:
            raise
        return True  # registered, its record damaged: --replace writes it anew, as the error says
    return True


def _cmd_add_labels(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    labels = Dataset.open(args.dataset).add_labels(args.labels)
    print(f"labels ({len(labels)}): {', '.join(labels)}")
    return 0


def _cmd_add_view(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    view = Dataset.open(args.dataset).add_view(args.view_id, tuple(args.crop), args.output_size)
    size = f", resized to {view.output_size[0]}x{view.output_size[1]}" if view.output_size else ""
    print(f"view {view.view_id!r}: crop {view.crop}{size}")
    return 0


def _cmd_add_annotations(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.errors import AnnotationError

    ds = Dataset.open(args.dataset)
    path = Path(args.file)
    rows, lines, size = _read_rows(path)
    try:
        ids = ds.add_annotations(rows, args.video_id, clip=args.clip, source=(str(path), lambda i: f"line {lines[i]}"))
    except AnnotationError as err:
        row_index = getattr(err, "row", None)
        detail = getattr(err, "detail", None)
        if row_index is None or detail is None or row_index >= len(lines):
            raise
        raise AnnotationError(f"{path} line {lines[row_index]}, {detail}", video_id=args.video_id) from err
    if not rows:
        what = "is empty" if size == 0 else "holds only blank lines"
        warnings.warn(
            f"{path} {what}: no annotation rows to add (expected one JSON object per line)",
            VidlabelWarning,
            stacklevel=2,
        )
    if len(ids) == 1:
        span = f" (id {ids[0]})"
    else:
        span = f" (ids {ids[0]}..{ids[-1]})" if ids else ""
    print(f"added {plural(len(ids), 'annotation')} to video {args.video_id!r}{span}")
    return 0


def _read_rows(path: Path) -> tuple[list[Any], list[int], int]:
    """The rows of a JSON Lines annotation file, the line number of each, and the file's size in bytes."""
    from vidlabel.errors import AnnotationError

    rows: list[Any] = []
    lines: list[int] = []
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "not found"
        if path.exists() and not path.is_dir():  # /dev/stdin, a pipe, a device: there, but no file to read twice
            what = "is not a regular file (a pipe or a device); write the rows to a .jsonl file and give its path"
        raise AnnotationError(f"annotation file {str(path)!r} {what}", path=str(path))
    offset = 0  # byte offset of the current line in the file
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            start, offset = offset, offset + len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw, start = raw[3:], start + 3  # a UTF-8 byte-order mark: UTF-8 all the same
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise AnnotationError(_not_utf8(path, number, start, raw, err), path=str(path)) from err
            if not text.strip():
                continue
            rows.append(_parse_row(path, number, text))
            lines.append(number)
    return rows, lines, offset


def _parse_row(path: Path, number: int, text: str) -> dict[str, Any]:
    """Line ``number`` of an annotation file: one JSON object."""
    from vidlabel.errors import AnnotationError

    try:
        row = json.loads(text, object_pairs_hook=no_repeated_keys)
    except RepeatedKeyError as err:  # {"label": "person", ..., "label": "car"}: json keeps the last, silently
        raise AnnotationError(
            f"{path} line {number}: field {err.key!r} is given twice; give each field once", path=str(path)
        ) from None
    except json.JSONDecodeError as err:
        raise AnnotationError(
            f"{path} line {number}: not valid JSON ({json_error_text(err)}); expected one annotation object per line"
        ) from err
    except RecursionError:
        raise AnnotationError(
            f"{path} line {number}: JSON nested too deeply to read; expected one flat annotation object per line"
        ) from None
    except ValueError as err:  # an integer of more than 4300 digits, which Python refuses to convert
        raise AnnotationError(
            f"{path} line {number}: a number is too long to read ({str(err).split(';')[0]})", path=str(path)
        ) from None
    if not isinstance(row, dict):
        raise AnnotationError(
            f"{path} line {number}: expected a JSON object (one annotation row), got {type(row).__name__}"
        )
    return row


def _not_utf8(path: Any, number: int, start: int, raw: bytes, err: UnicodeDecodeError) -> str:
    """The message for a JSON Lines file line that is not UTF-8: file, line, byte offset and the bad byte."""
    bad = raw[err.start : err.start + 1]
    hint = ""
    if number == 1 and err.start < 2 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        hint = "; this file starts with a UTF-16 byte-order mark: save it as UTF-8"
    return (
        f"{path} line {number}, byte offset {start + err.start}: not UTF-8 (byte 0x{bad.hex()}: {err.reason}); "
        f"JSON Lines files must be UTF-8{hint}"
    )


_ROW_FORMAT = """\
rows (frames 0-based in display order; pixels of the displayed frame, origin top-left):
  {"kind": "box", "label": "person", "start_frame": 0, "box": [x0, y0, x1, y1], "track_id": 1}
  {"kind": "mask", "label": "ball", "start_frame": 20, "mask": {"size": [H, W], "counts": "..."}}
  {"kind": "marker", "label": "lights_on", "start_frame": 30, "end_frame": 59}
kind and label and start_frame are required; box: corners inside the frame (x0 < x1, y0 < y1);
mask: COCO RLE of the frame's size [height, width]; end_frame: a marker's last frame, inclusive.
optional: track_id (>= 0), origin ("human" or "model"), confidence (0..1),
status ("unreviewed", "approved", "rejected"), view_id, attributes ({"occluded": true, ...}: names of the
label's attribute schema, Dataset.set_attribute_schema). One bad row refuses the whole file.
a mask's RLE from a (H, W) uint8 array: vidlabel.geometry.encode_rle; every field: docs/reference/annotation-file.md
"""


def register(subparsers: Subparsers) -> None:
    """Add ``create``, ``add-video``, ``add-labels``, ``add-view`` and ``add-annotations``."""
    p = add_command(subparsers, "create", _cmd_create, "Create an empty dataset folder.")
    p.add_argument("dataset", metavar="DATASET")

    p = add_command(
        subparsers, "add-video", _cmd_add_video, "Register a video file: probe its metadata and write its frame index."
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--video-id", help="id of the video (default: the file name without extension)")
    p.add_argument("--metadata", type=json_arg, help="JSON VideoMetadata fields that override what the probe finds")
    p.add_argument("--no-index", action="store_true", help="do not build the frame index now (see 'vidlabel index')")
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the metadata of a video already registered under this id (its annotations are kept)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar while the file is decoded")

    p = add_command(
        subparsers,
        "add-labels",
        _cmd_add_labels,
        "Add labels to the vocabulary (in order; names already there are kept).",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("labels", metavar="LABEL", nargs="+")

    p = add_command(subparsers, "add-view", _cmd_add_view, "Add a view: a named crop of the frame, optionally resized.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("view_id", metavar="VIEW_ID")
    p.add_argument(
        "--crop",
        type=int,
        nargs=4,
        metavar=("X0", "Y0", "X1", "Y1"),
        required=True,
        help="pixel corners of the crop; it must fit inside every registered video",
    )
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"), help="resize the crop to W x H")

    p = add_command(
        subparsers,
        "add-annotations",
        _cmd_add_annotations,
        "Add annotations from a JSON Lines file (one row per line).",
    )
    p.epilog = _ROW_FORMAT
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("file", metavar="FILE.jsonl", help="one JSON object per line (row format below)")
    p.add_argument("--clip", action="store_true", help="clip boxes that leave the frame instead of refusing them")
