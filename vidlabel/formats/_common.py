"""Helpers shared by the format modules: the registry, the parsed-file type, errors, masks, tracks, releases."""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import itertools
import json
import math
import os
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._json import RepeatedKeyError, SameRepeatsAllowed, json_error_text, repeated_key_line
from vidlabel._words import shown
from vidlabel.dataset import Release
from vidlabel.errors import FormatError
from vidlabel.spec import KINDS, ORIGINS, AnnotationTable, VideoMetadata

from ._videorows import VideoRows, Where, where_text

__all__ = [
    "ImportContext",
    "Parsed",
    "VideoRows",
    "check_frame_size",
    "fail",
    "import_each_file",
    "interpolate_keyframes",
    "keyframe_span",
    "float32_value",
    "read_json",
    "read_lines",
    "text_chunks",
]


def fail(path: Path | str, where: Where | None, message: str) -> FormatError:
    """A FormatError whose message starts with the file and the line or element."""
    at = f" {where_text(where)}" if where is not None else ""
    return FormatError(f"{path}{at}: {message}", path=str(path))


@dataclass
class Parsed:
    """What an importer read from one file, before anything is written."""

    videos: dict[str, VideoRows] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    #: label -> {attribute name: "bool" | "number" | "text"} of the attributes the rows carry
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)

    def declare(self, label: str, name: str, kind: str) -> str:
        """Record that rows of ``label`` carry attribute ``name`` of type ``kind``; the type recorded first,
        which a caller compares with ``kind`` to name the row that disagrees with the earlier ones."""
        return self.attributes.setdefault(label, {}).setdefault(name, kind)


@dataclass
class ImportContext:
    """What an importer may know of the dataset and of the call.

    Attributes
    ----------
    path : Path
        The file to read.
    videos : dict video_id -> VideoMetadata
        Every registered video.
    video_id : str or None
        ``--video``: the dataset video a one-video file belongs to.
    video_map : dict str -> str
        ``videos=``: a file's video key (its JSON id, name or first file-name folder) -> dataset video id.
    label_map : dict int -> str or None
        Class id -> label name (MOT).
    label : str or None
        One label for every row of a file without classes (MOT det.txt).
    options : dict
        Format options (``**format_options``); each importer pops the ones it knows.
    """

    path: Path
    videos: dict[str, VideoMetadata]
    video_id: str | None
    video_map: dict[str, str]
    label_map: dict[int, str] | None
    label: str | None
    options: dict[str, Any]
    #: keys of ``video_map`` some video of the file was found by
    map_keys_used: set[str] = field(default_factory=set)
    #: dataset videos a video of the file was matched to by a key that is a registered id, not through the map
    matched_by_id: list[str] = field(default_factory=list)
    #: whether ``video_id`` named the dataset video of the file (it does for a file of one video only)
    video_id_used: bool = False

    def resolve(self, keys: Sequence[Any], n_in_file: int, where: Where | None) -> VideoMetadata:
        """The dataset video for a video of the file known by ``keys`` (its id, name, folder...).

        ``--video`` when the file holds one video; else the first key found in ``videos=``;
        else a key that is a registered video id.
        """
        if self.video_id is not None and n_in_file == 1 and not self.video_map:
            vid = self.video_id
            self.video_id_used = True
        else:
            matched = [str(k) for k in keys if k is not None and str(k) in self.video_map]
            self.map_keys_used.update(matched)
            found = [self.video_map[k] for k in matched]
            if found:
                vid = found[0]
            else:
                direct = [str(k) for k in keys if k is not None and str(k) in self.videos]
                if not direct:
                    shown = ", ".join(repr(str(k)) for k in keys if k is not None) or "(no id)"
                    hint = (
                        "pass video_id= (--video) for a file of one video"
                        if n_in_file == 1
                        else f"the file holds {n_in_file} videos: pass videos={{file key: video id}} (--video-map K=ID,...)"
                    )
                    raise fail(
                        self.path,
                        where,
                        f"video {shown} of the file is not a registered video; {hint}; registered: "
                        f"{', '.join(sorted(self.videos)) or '(none)'}",
                    )
                vid = direct[0]
                self.matched_by_id.append(vid)
        if vid not in self.videos:
            raise fail(
                self.path,
                where,
                f"video {vid!r} is not registered; known: {', '.join(sorted(self.videos)) or '(none)'}",
            )
        return self.videos[vid]

    def option(self, name: str, default: Any, allowed: Sequence[Any] | None = None) -> Any:
        value = self.options.pop(name, default)
        if allowed is not None and value not in allowed:
            raise FormatError(f"option {name}={value!r}; allowed: {', '.join(map(repr, allowed))}")
        return value


Importer = Callable[[ImportContext], Parsed]


def import_each_file(ctx: ImportContext, suffix: str, one: Importer) -> Parsed:
    """A folder of label files (``*<suffix>``, as ``export_labels`` writes one per video) read file by file with
    ``one`` into one Parsed: each row's place and each note name the file; a file's tracks are numbered after
    those an earlier file gave its video (two jobs of one task, each counting its tracks from 0)."""
    files = sorted(p for p in ctx.path.iterdir() if p.is_file() and p.name.endswith(suffix))
    if not files:
        raise fail(ctx.path, None, f"is a folder holding no {suffix} file")
    out = Parsed()
    options = dict(ctx.options)
    for file in files:
        # video_id names the video of a file of one video: with several files, each finds its own
        sub = dataclasses.replace(
            ctx, path=file, options=dict(options), video_id=ctx.video_id if len(files) == 1 else None
        )
        got = one(sub)
        ctx.options = sub.options
        ctx.video_id_used |= sub.video_id_used
        name = file.name
        for vid, vr in got.videos.items():
            into = out.videos.setdefault(vid, VideoRows(vr.meta))
            held = into.track_ids()
            into.extend(vr, prefix=name, track_shift=int(held.max()) + 1 if held.size else 0)
        out.skipped.update(got.skipped)
        out.notes.extend(f"{name}: {note}" for note in got.notes)
        for label, names in got.attributes.items():
            for attr, kind in names.items():
                out.declare(label, attr, kind)
    return out


# --------------------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------------------


def no_file(path: Path) -> FormatError:
    """The FormatError of a label file path that is not a regular file: a folder, a pipe or a device (found by
    ``stat``, never opened: opening a FIFO would wait for a writer), or nothing."""
    if path.is_dir():
        return fail(path, None, "is a folder, not a file")
    if path.exists():  # /dev/stdin, a FIFO, a device: there, but not a file to read
        return fail(
            path,
            None,
            "is not a regular file (a pipe, a device or a socket); write the labels to a file and give its path",
        )
    return fail(path, None, "file not found")


def read_text(path: Path) -> str:
    if not path.is_file():
        raise no_file(path)
    raw = path.read_bytes()
    encoding = "utf-8"
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its byte order mark (Windows tools write it)
        encoding = "utf-16"
    elif raw[:2] in (b"<\x00", b"{\x00", b"[\x00"):
        encoding = "utf-16-le"
    elif raw[:2] in (b"\x00<", b"\x00{", b"\x00["):
        encoding = "utf-16-be"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        line = raw[: err.start].decode(encoding, errors="replace").count("\n") + 1
        name = "UTF-8" if encoding == "utf-8" else "UTF-16 (as its first bytes say)"
        raise fail(path, line, f"not {name} (byte 0x{raw[err.start : err.start + 1].hex()})") from err


def _utf16(path: Path) -> bool:
    """Whether a text file is UTF-16 (a byte-order mark, or a NUL beside its first markup character)."""
    with open(path, "rb") as fh:
        head = fh.read(3)
    return head.startswith((b"\xff\xfe", b"\xfe\xff")) or head[:2] in (
        b"<\x00",
        b"{\x00",
        b"[\x00",
        b"\x00<",
        b"\x00{",
        b"\x00[",
    )


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a file is read into millions of small objects.

    They hold no reference cycles, and every full collection walks all of them again (a million-row
    COCO-VID file took twice as long with it on). The collector's state is restored, also on error.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_lines(path: Path) -> Iterator[str]:
    """The lines of a text file as ``read_text(path).splitlines()`` gives them, read a line at a time (a file of
    millions of lines is never held whole); the same FormatErrors as :func:`read_text`, a bad byte's raised
    when its line is reached. UTF-16 files (rare: Windows tools) are read whole."""
    if not path.is_file():
        raise no_file(path)
    if _utf16(path):
        return iter(read_text(path).splitlines())
    return _utf8_lines(path)


def _utf8_lines(path: Path) -> Iterator[str]:
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise fail(path, number, f"not UTF-8 (byte 0x{raw[err.start : err.start + 1].hex()})") from err
            yield from text.splitlines()


def text_chunks(path: Path, size: int = 1 << 16) -> Iterator[str]:
    """The text of a file in pieces of about ``size`` characters, lines whole, as :func:`read_text` decodes it
    (its FormatErrors, a bad byte's raised when its piece is reached); UTF-16 files are read whole."""
    if not path.is_file():
        raise no_file(path)
    if _utf16(path):
        return iter([read_text(path)])
    return _utf8_chunks(path, size)


def _utf8_chunks(path: Path, size: int) -> Iterator[str]:
    parts: list[str] = []
    held = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                parts.append(raw.decode("utf-8"))
            except UnicodeDecodeError as err:
                raise fail(path, number, f"not UTF-8 (byte 0x{raw[err.start : err.start + 1].hex()})") from err
            held += len(raw)
            if held >= size:
                yield "".join(parts)
                parts, held = [], 0
    if parts:
        yield "".join(parts)


def float32_value(value: Any) -> float:
    """A confidence stored as float32, as the shortest decimal that reads back as that float32: ``0.9``, not
    ``0.8999999761581421`` (the float64 of the float32 nearest 0.9), in the label files export writes."""
    return float(str(np.float32(value)))


def read_json(path: Path, expect: type | tuple[type, ...], notes: list[str] | None = None) -> Any:
    """The JSON document of a file; a FormatError names line and column of a syntax error, and a key given
    twice in one object with two values. A key repeated with the same value is read (as ``json``, pycocotools
    and mmtracking read it) and counted in ``notes``."""
    text = read_text(path)
    hook = SameRepeatsAllowed()
    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except RepeatedKeyError as err:
        first, second = (shown(v) for v in (err.first, err.second))
        at = repeated_key_line(text, SameRepeatsAllowed())
        raise fail(
            path,
            None if at is None else at[0],
            f"key {err.key!r} is given twice in "
            f"{'one object' if at is None else f'the object opening at column {at[1]}'} ({first} and {second}): "
            "give each key once (a key repeated with the same value is read)",
        ) from None
    except json.JSONDecodeError as err:
        raise fail(path, err.lineno, f"not valid JSON ({json_error_text(err)})") from err
    except RecursionError as err:
        raise fail(path, None, "JSON nested too deeply to read (thousands of [ or { inside each other)") from err
    except ValueError as err:  # an integer of more than 4300 digits, which Python refuses to convert
        raise fail(path, None, f"a number in the JSON is too long to read ({str(err).split(';')[0]})") from None
    if not isinstance(doc, expect):
        names = expect.__name__ if isinstance(expect, type) else " or ".join(t.__name__ for t in expect)
        raise fail(path, None, f"expected a JSON {names} at the top, got {type(doc).__name__}")
    if hook.repeats and notes is not None:
        listed = ", ".join(f"{key!r} ({n})" for key, n in sorted(hook.repeats.items()))
        notes.append(f"keys repeated with the same value in one object, read once: {listed}")
    return doc


def json_key(path: Path, where: Where, value: Any, what: str) -> Any:
    """An id read from JSON that keys a dict (a number, a string or null); a list, an object or a boolean (``true``
    would key the same entry as ``1``) is a FormatError."""
    if isinstance(value, list | dict | bool):
        raise fail(path, where, f"{what} is {shown(value)}; expected a number or a string")
    return value


_MAX_FLOAT = sys.float_info.max


def number(path: Path, where: Where, value: Any, what: str) -> float:
    if type(value) is float and math.isfinite(value):  # the common case first: it runs once per coordinate
        return value
    v = float(value) if isinstance(value, int | float) and abs(value) <= _MAX_FLOAT else math.nan  # 10**400: nan
    if isinstance(value, bool) or not math.isfinite(v):
        raise fail(path, where, f"{what} is {shown(value)}; expected a finite number")
    return v


def check_frame_size(path: Path, where: Where, entry: Mapping[str, Any], meta: Any) -> None:
    """The ``width`` and ``height`` an entry of a label file gives (where it gives them) against the registered
    video's ``meta``: a FormatError naming the entry where one is no whole number ("64" is text, not the size
    64) or another size."""
    for key, have in (("width", meta.width), ("height", meta.height)):
        if key in entry and whole_number(path, where, entry[key], key) != have:
            raise fail(
                path, where, f"{key} {shown(entry[key])} disagrees with video {meta.video_id!r}, whose {key} is {have}"
            )


def whole_number(path: Path, where: Where, value: Any, what: str) -> int:
    """An integer, or a float with no fractional part (``3.0``); ``1.5``, NaN and text are errors."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    v = number(path, where, value, what)
    if not v.is_integer():
        raise fail(path, where, f"{what} is {shown(value)}; expected a whole number")
    return int(v)


def integer(path: Path, where: Where, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(path, where, f"{what} is {shown(value)}; expected an integer")
    return value


def xywh_boxes(path: Path, values: list[Any], wheres: list[Where], what: str = "bbox") -> list[list[float]]:
    """Corners of many xywh boxes at once (NumPy); a bad one is found and named by :func:`xywh_box`."""
    try:
        arr = np.array(values)  # numbers only: np.array(["1", ...], np.float64) would read text as numbers
        ok = arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] == 4
        arr = arr.astype(np.float64, copy=False)
        ok = ok and bool(np.isfinite(arr).all())
        # NumPy reads true as 1 beside numbers: a boolean is no coordinate, found and named below
        ok = ok and not any(c is True or c is False for v in values for c in v)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        for v, w in zip(values, wheres):
            xywh_box(path, w, v, what)
        arr = np.array(values, dtype=np.float64).reshape(-1, 4)
    arr[:, 2:] += arr[:, :2]
    return arr.tolist()  # type: ignore[no-any-return]


def xywh_box(path: Path, where: Where, value: Any, what: str = "bbox") -> tuple[float, float, float, float]:
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise fail(path, where, f"{what} is {shown(value)}; expected [x, y, width, height]")
    x, y, w, h = (number(path, where, v, what) for v in value)
    return (x, y, x + w, y + h)


# --------------------------------------------------------------------------------------------------
# Masks
# --------------------------------------------------------------------------------------------------


def coco_segmentation(
    path: Path, where: Where, seg: Any, height: int, width: int, skipped: Counter[str], *, box_kept: bool = False
) -> dict[str, Any] | None:
    """A COCO ``segmentation`` (polygons, uncompressed RLE with list counts, compressed RLE) as compressed RLE.

    Polygons are rasterised by pycocotools at the frame's size; polygons with fewer than 3 points are
    dropped (an annotation with none left, or whose polygons cover no pixel, is counted and None returned;
    with ``box_kept``, the caller imports the annotation's bbox instead, and the count says so).
    """
    kept = " (its bbox imported as a box)" if box_kept else ""
    from pycocotools import mask as mask_utils

    if isinstance(seg, list):
        polys = [p for p in seg if isinstance(p, list) and len(p) >= 6 and len(p) % 2 == 0]
        bad = [p for p in seg if not isinstance(p, list) or not all(map(_coordinate, p))]
        if bad:
            raise fail(
                path,
                where,
                f"segmentation polygon {shown(bad[0])} is not a list of x, y numbers "
                f"(finite, within ±{_FAR:.0e} pixels)",
            )
        if not polys:
            skipped["polygon with < 3 points" + kept] += 1
            return None
        polys = [_clip_polygon(p, width, height) for p in polys]
        polys = [p for p in polys if len(p) >= 6] or [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]
        rle = mask_utils.merge(mask_utils.frPyObjects(polys, height, width))
        if not mask_utils.area(rle):
            skipped["polygon of zero area" + kept] += 1
            return None
        return {"size": [height, width], "counts": bytes(rle["counts"])}
    if isinstance(seg, dict) and "counts" in seg and "size" in seg:
        size = seg["size"]
        if not isinstance(size, list) or size != [height, width]:
            raise fail(
                path, where, f"segmentation size {shown(size)} is not the frame's [height, width] = [{height}, {width}]"
            )
        counts = seg["counts"]
        if isinstance(counts, list):
            if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
                raise fail(path, where, "uncompressed RLE counts must be non-negative integers")
            if sum(counts) != height * width:
                raise fail(path, where, f"RLE counts cover {sum(counts)} pixels; the frame has {height * width}")
            rle = mask_utils.frPyObjects({"size": [height, width], "counts": counts}, height, width)
            return {"size": [height, width], "counts": bytes(rle["counts"])}
        if isinstance(counts, str):
            if not counts.isascii():
                raise fail(path, where, f"compressed RLE counts {shown(counts)} hold a character that is not ASCII")
            return {"size": [height, width], "counts": counts.encode("ascii")}
    raise fail(path, where, f"segmentation {shown(seg)} is neither polygons nor a COCO RLE dict")


#: Polygon coordinates are refused beyond this many pixels: no frame is that large, and pycocotools' rasteriser
#: allocates by the polygon's length in pixels (a vertex at 1e10 crashed the process, NaN too).
_FAR = 1e9


def _coordinate(v: Any) -> bool:
    """A polygon coordinate: a finite number (not a bool) within ``_FAR`` pixels."""
    if type(v) is float or (isinstance(v, int) and not isinstance(v, bool)):
        return -_FAR <= v <= _FAR  # False for NaN
    return False


def _clip_polygon(flat: list[Any], width: int, height: int) -> list[float]:
    """A polygon ``[x1, y1, x2, y2, ...]`` cut to the frame grown by 8 times its size on every side.

    Polygons inside that rectangle (every real one) are returned unchanged; a vertex further out
    (pycocotools walks every pixel of the outline, inside the frame or not: a vertex at 1e7 took
    0.8 GB) is replaced by the points where the outline crosses the rectangle (Sutherland-Hodgman).
    The part inside the frame is the same polygon; its rasterised edge may differ by a pixel.
    """
    lo_x, lo_y, hi_x, hi_y = -8.0 * width, -8.0 * height, 9.0 * width, 9.0 * height
    xs, ys = flat[0::2], flat[1::2]
    if min(xs) >= lo_x and max(xs) <= hi_x and min(ys) >= lo_y and max(ys) <= hi_y:
        return flat
    pts = [(float(x), float(y)) for x, y in zip(xs, ys)]
    for axis, bound, above in ((0, lo_x, True), (0, hi_x, False), (1, lo_y, True), (1, hi_y, False)):
        out: list[tuple[float, float]] = []
        for i, cur in enumerate(pts):
            prev = pts[i - 1]
            cur_in = cur[axis] >= bound if above else cur[axis] <= bound
            prev_in = prev[axis] >= bound if above else prev[axis] <= bound
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                cross = (prev[0] + t * (cur[0] - prev[0]), prev[1] + t * (cur[1] - prev[1]))
                out.append((bound, cross[1]) if axis == 0 else (cross[0], bound))
            if cur_in:
                out.append(cur)
        pts = out
        if not pts:
            return []
    return [v for p in pts for v in p]


def row_attributes(table: AnnotationTable, i: int) -> dict[str, Any]:
    """Row ``i``'s attributes (``{}`` for none)."""
    return table.attributes(i)


def mask_of(table: AnnotationTable, i: int) -> dict[str, Any]:
    """Mask row ``i``'s COCO RLE (:meth:`AnnotationTable.mask_rle`) with str counts, for JSON."""
    rle = table.mask_rle(i)
    assert rle is not None, f"row {i} has no mask"
    return {"size": rle["size"], "counts": rle["counts"].decode("ascii")}


# --------------------------------------------------------------------------------------------------
# Keyframed tracks (CVAT, Label Studio)
# --------------------------------------------------------------------------------------------------


@dataclass
class Keyframe:
    frame: int  # 0-based video frame
    box: tuple[float, float, float, float] | None  # xyxy; None for a keyframe that carries a mask
    visible: bool  # False: CVAT outside
    ends_after: bool = False  # Label Studio enabled=false: on this frame, the span ends after it
    payload: Any = None  # a mask, carried (not interpolated) to the following frames
    where: Where = ""


def interpolate_keyframes(
    path: Path, keys: Sequence[Keyframe], frames: np.ndarray
) -> Iterator[tuple[int, tuple[float, float, float, float] | None, Keyframe]]:
    """(frame, box, keyframe it comes from) of every frame in ``frames`` where the object is visible.

    Boxes are linear per coordinate between a visible keyframe and the next keyframe (also when
    that one is ``outside``, CVAT); a keyframe with ``visible=False`` hides the object until the
    next keyframe; ``ends_after`` shows it on its frame only (Label Studio ``enabled: false``);
    after the last visible keyframe the object persists to the last of ``frames``.
    ``frames`` is sorted (the task frames / every frame of the video).

    Raises
    ------
    FormatError
        If two keyframes of the track fall on one frame (naming both): the tools write one shape a
        frame per track, and taking either would drop the other without a word.
    """
    keys = sorted(keys, key=lambda k: k.frame)
    for a, b in itertools.pairwise(keys):
        if a.frame == b.frame:
            first = where_text(a.where)
            also = f" (first: {first})" if first != where_text(b.where) else ""
            raise fail(path, b.where, f"a second keyframe of the track on video frame {b.frame}{also}")
    for j, k in enumerate(keys):
        yield from keyframe_span(k, keys[j + 1] if j + 1 < len(keys) else None, frames)


def keyframe_span(
    k: Keyframe, nxt: Keyframe | None, frames: np.ndarray
) -> Iterator[tuple[int, tuple[float, float, float, float] | None, Keyframe]]:
    """(frame, box, ``k``) of every frame in ``frames`` that keyframe ``k`` covers, up to the next keyframe
    ``nxt`` (a later frame; ``None``: ``k`` is the last), as :func:`interpolate_keyframes` gives them; nothing
    for a keyframe with ``visible=False``."""
    if not k.visible:
        return
    if k.ends_after:
        stop = k.frame + 1
    elif nxt is None:
        stop = int(frames[-1]) + 1 if len(frames) else k.frame + 1
    else:
        stop = nxt.frame
    lo, hi = np.searchsorted(frames, [k.frame, stop])
    for f in frames[lo:hi].tolist():
        box = k.box
        if box is not None and nxt is not None and not k.ends_after and nxt.box is not None and f != k.frame:
            t = (f - k.frame) / (nxt.frame - k.frame)
            box = tuple(a + (b - a) * t for a, b in zip(k.box, nxt.box))  # type: ignore[assignment,arg-type]
        yield f, box, k


# --------------------------------------------------------------------------------------------------
# Releases
# --------------------------------------------------------------------------------------------------


@dataclass
class VideoTable:
    """One video's rows of a release, in columnar form (indices into the release table)."""

    meta: VideoMetadata
    rows: np.ndarray  # (R,) int64 row indices, sorted by (track, frame, annotation id)


def track_keyframes(
    table: AnnotationTable, rows: np.ndarray, n: int, report: Any, tool: str
) -> Iterator[tuple[int, int, bool]]:
    """Each row of a track (sorted by frame) as ``(row, frame, ends)``: ``ends`` when the track holds no box on
    the next frame, so that a keyframe format must close its span there; a second row on a frame is skipped and
    counted in ``report.not_written``, as ``tool`` holds one box a frame per track."""
    frames = table.start_frame[rows].tolist()
    seen: set[int] = set()
    for j, r in enumerate(rows.tolist()):
        f = frames[j]
        if f in seen:
            report.not_written[f"box on a frame its track already holds ({tool} holds one per frame)"] += 1
            continue
        seen.add(f)
        # the next frame of the track holding a box, not a second box on this frame (which is not written)
        k = bisect.bisect_right(frames, f, j + 1)
        nxt = frames[k] if k < len(frames) else None
        yield r, f, f + 1 < n and (nxt is None or nxt > f + 1)


def video_tables(release: Release, videos: Sequence[str]) -> list[VideoTable]:
    """The selected videos (all when empty) with their rows, in video id order."""
    t = release.table
    chosen = sorted(videos) if videos else sorted(release.videos)
    unknown = [v for v in chosen if v not in release.videos]
    if unknown:
        raise FormatError(
            f"video(s) {', '.join(unknown)} not in release {release.release_id}; "
            f"known: {', '.join(sorted(release.videos))}"
        )
    out = []
    codes = {v: i for i, v in enumerate(t.video_ids)}
    for vid in chosen:
        code = codes.get(vid, -1)
        rows = np.flatnonzero(t.video == code)
        order = np.lexsort((t.annotation_id[rows], t.start_frame[rows], t.track_id[rows]))
        out.append(VideoTable(release.videos[vid], rows[order]))
    return out


BOX, MASK, MARKER = (KINDS.index(k) for k in ("box", "mask", "marker"))
MODEL = ORIGINS.index("model")


def tracks_of(table: Any, rows: np.ndarray) -> dict[int, np.ndarray]:
    """Rows grouped by track id (untracked rows each their own group, keyed -1 - position)."""
    out: dict[int, np.ndarray] = {}
    tid = table.track_id[rows]
    for t in np.unique(tid[tid >= 0]).tolist():
        out[int(t)] = rows[tid == t]
    for j, r in enumerate(rows[tid < 0].tolist()):
        out[-1 - j] = np.array([r])
    return out


def human_rows_of_model_track(table: Any, rows: np.ndarray) -> int:
    """How many of a track's ``rows`` are human when the track also holds model rows: formats that give a track
    one origin (CVAT ``source``, a YouTube-VIS ``score``, a Label Studio prediction) write them as model rows."""
    model = table.origin[rows] == MODEL
    return int((~model).sum()) if model.any() else 0


def mixed_origin_reason(tool: str) -> str:
    """The ``not_written`` reason under which :func:`human_rows_of_model_track`'s rows are counted."""
    return f"origin of human rows in a track that also holds model rows ({tool} gives a track one origin: written as model)"


def output_files(out: Path, vids: Sequence[str], suffix: str) -> dict[str, Path]:
    """One file per video: ``out`` itself for one video when it ends in ``suffix``, else ``out/<video_id><suffix>``."""
    if len(vids) == 1 and out.suffix == suffix:
        return {vids[0]: out}
    return {v: out / f"{v}{suffix}" for v in vids}


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file beside it, renamed into place.

    The temporary file has a random name created with ``O_EXCL | O_NOFOLLOW`` (``tempfile.mkstemp``), so
    nothing planted in a shared output folder (a symlink at a guessable name) redirects the write. ``path``
    itself must be absent or a regular file.

    Raises
    ------
    FormatError
        If ``path`` is a symlink, a folder, a FIFO, a device or another non-regular file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise FormatError(
            f"{path}: the output path is {_file_kind(mode)}, not a regular file; a label export writes only a "
            "new file or over a regular file (remove it or choose another path)",
            path=str(path),
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        # mkstemp creates the file readable by its owner only: give it the mode a plain open would
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# read once at import: setting the umask to read it is not safe while other threads create files
_UMASK = _read_umask()


def _file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``"a symlink"``, ``"a FIFO"``)."""
    kinds = [
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def write_json(path: Path, doc: Any) -> None:
    write_text(path, json.dumps(doc, separators=(",", ":")))


def mapping_arg(value: Mapping[Any, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (value or {}).items()}
