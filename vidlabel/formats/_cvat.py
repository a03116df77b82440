"""CVAT for video 1.1 XML, parsed with defusedxml (no entity expansion, no DTD fetching, no network).

A folder is read file by file (every ``*.xml``, as ``export_labels`` writes one per video); a file's tracks are
numbered after those an earlier file gave the same video.

Task frames come from ``<meta><task>`` (or ``<job>``): video frames ``start_frame + k * step``
(``<frame_filter>step=N</frame_filter>``), ``stop_frame`` inclusive. A shape's ``frame`` (an
``<image>``'s ``id``) is the video frame itself, as CVAT writes it (its ``abs_frame_id``), and must be
a task frame.
Tracks count their keyframes only (non-keyframe shapes of full exports are re-derived): a box
is linear per coordinate between keyframes, also towards an ``outside`` keyframe; an
``outside`` keyframe hides the object until the next keyframe; after the last keyframe a
visible box persists to ``stop_frame``; only task frames get rows. ``<mask rle left top width
height>`` (CVAT RLE over the tight box, row-major, zero run first) become full-frame mask rows,
carried unchanged between keyframes; a mask track takes the track id of the box track with the
same ``group_id``, mask tracks of a group without a box track share a new track, ungrouped
ones are untracked. ``<polygon points="x1,y1;x2,y2;...">`` tracks become mask rows rasterised by
pycocotools at the frame's size, one per written shape on a task frame (keyframe or not: CVAT
writes its own point-resampled interpolation for every frame, which is not re-derived; frames after
the last written shape get nothing; an ``outside`` shape hides the object on its frame); a polygon
track takes the track id of the box track with the same ``group_id``, else a track of its own; a
polygon of fewer than 3 points or of zero area is counted, not imported. ``<image id=k><tag
label=.../></image>`` blocks give per-frame tags whose runs of consecutive task frames become
markers (model markers for ``source="auto"`` tags). ``<track id>`` is an export counter: our track ids
are assigned in document order per video. ``source="auto"`` shapes are model rows (CVAT stores no confidence).
A box, mask or polygon shape's ``occluded`` flag and its ``<attribute>``s (typed by the task's label specs:
checkbox bool, number, else text) are the attributes of the rows of its keyframe's span, and a tag's
``<attribute>``s those of its marker (a run of tags is cut where they change); the export writes them back,
declaring each label's attributes.
A track shape's ``keyframe``, ``outside`` and ``occluded`` are "0" or "1" (else a FormatError naming the element).
"""

from __future__ import annotations

import bisect
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.dataset import Release
from vidlabel.spec import VideoMetadata

from ._common import (
    BOX,
    MARKER,
    MASK,
    MODEL,
    ImportContext,
    Keyframe,
    Parsed,
    VideoRows,
    coco_segmentation,
    fail,
    human_rows_of_model_track,
    import_each_file,
    interpolate_keyframes,
    mixed_origin_reason,
    output_files,
    row_attributes,
    text_chunks,
    tracks_of,
    video_tables,
    write_text,
)
from ._report import ExportLabelsReport

__all__ = ["export_cvat", "import_cvat"]

_TRACK_SHAPES = {"box", "mask", "polygon"}
_SHAPES = ("box", "mask", "polygon", "polyline", "points", "ellipse", "cuboid", "skeleton", "tag")


class _Chunks:
    """A file-like ``read`` over decoded text pieces, for ``iterparse``."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self._chunks = chunks

    def read(self, _size: int = -1) -> str:
        return next(self._chunks, "")


def children(path: Path) -> Iterator[ET.Element]:
    """Each child of the root element, whole, as the parser reaches its end; the root is checked to be
    ``<annotations>`` and forgets each child once the next is asked for (a file of millions of shapes is never
    held whole). Entity declarations and malformed XML are FormatErrors naming the line."""
    import defusedxml
    import defusedxml.ElementTree as DET

    depth = 0
    root: ET.Element | None = None
    try:
        for event, elem in DET.iterparse(_Chunks(text_chunks(path)), events=("start", "end")):
            if event == "start":
                depth += 1
                if depth == 1:
                    root = elem
                    if root.tag != "annotations":
                        raise fail(path, f"<{root.tag}>", "the root element of a CVAT file is <annotations>")
                continue
            depth -= 1
            if depth == 1 and root is not None:
                yield elem
                root.remove(elem)
    except defusedxml.DefusedXmlException as err:
        raise fail(path, None, f"refused: the XML declares entities or a DTD ({err}); CVAT exports have none") from err
    except ET.ParseError as err:
        line, col = err.position
        # ParseError's text ends in ": line L, column C"; the line is said once, before the colon
        reason = re.sub(r":? line \d+, column \d+$", "", str(getattr(err, "msg", err)))
        # expat counts columns from 0
        raise fail(path, line, f"not well-formed XML ({reason}, column {col + 1})") from err


def _el(elem: ET.Element, parent: str = "") -> str:
    keys = [k for k in ("id", "label", "frame") if k in elem.attrib]
    inner = " ".join(f'{k}="{elem.attrib[k]}"' for k in keys)
    return f"{parent}<{elem.tag}{' ' + inner if inner else ''}>"


#: A number as CVAT writes one: ASCII digits (Python's float() and int() also read other scripts' digits).
_DECIMAL = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*|\s*[+-]?(?:inf|nan)\s*", re.I)
_INTEGER = re.compile(r"\s*[+-]?[0-9]{1,18}\s*")


def _float(path: Path, elem: ET.Element, where: str, key: str) -> float:
    try:
        raw = elem.attrib[key]
        if not _DECIMAL.fullmatch(raw):
            raise ValueError(raw)
        v = float(raw)
    except (KeyError, ValueError) as err:
        raise fail(path, where, f"attribute {key}={shown(elem.attrib.get(key))}; expected a number") from err
    if not np.isfinite(v):
        raise fail(path, where, f"attribute {key}={v}; expected a finite number")
    return v


def _int(path: Path, elem: ET.Element, where: str, key: str, default: int | None = None) -> int:
    raw = elem.attrib.get(key) if elem.attrib.get(key) is not None else (elem.findtext(key))
    if raw is None or not str(raw).strip():
        if default is None:
            raise fail(path, where, f"{key} is missing; expected an integer")
        return default
    if not _INTEGER.fullmatch(str(raw)):  # ASCII digits, and no more than any frame number needs
        raise fail(path, where, f"{key}={shown(raw)}; expected an integer (ASCII digits)")
    return int(str(raw).strip())


_FLAGS = ("keyframe", "outside", "occluded")


def _check_flags(path: Path, elem: ET.Element, where: str) -> None:
    """Refuse a shape whose ``keyframe``, ``outside`` or ``occluded`` is not CVAT's "0" or "1"."""
    for key in _FLAGS:
        value = elem.attrib.get(key)
        if value is not None and value not in ("0", "1"):
            raise fail(path, where, f"attribute {key}={value!r}; allowed: '0', '1' (CVAT writes flags as 0/1)")


def _points(path: Path, elem: ET.Element, where: str) -> list[float]:
    """The flat ``[x1, y1, x2, y2, ...]`` of a ``points="x1,y1;x2,y2;..."`` attribute (pixels)."""
    raw = elem.attrib.get("points")
    if raw is None:
        raise fail(path, where, "points is missing; expected 'x1,y1;x2,y2;...'")
    flat: list[float] = []
    for pair in (p for p in raw.split(";") if p.strip()):
        xy = pair.split(",")
        try:
            x, y = (float(v) for v in xy)
        except ValueError as err:
            raise fail(path, where, f"points entry {pair!r}; expected 'x,y' numbers ('x1,y1;x2,y2;...')") from err
        if not (np.isfinite(x) and np.isfinite(y)):
            raise fail(path, where, f"points entry {pair!r}; expected finite numbers")
        flat += [x, y]
    return flat


def cvat_rle_decode(path: Path, where: str, elem: ET.Element, height: int, width: int) -> np.ndarray:
    """Full-frame (H, W) uint8 mask of a CVAT ``<mask>``: runs over the tight box, row-major, zeros first."""
    left, top = _int(path, elem, where, "left"), _int(path, elem, where, "top")
    w, h = _int(path, elem, where, "width"), _int(path, elem, where, "height")
    try:
        runs = np.array([int(v) for v in elem.attrib.get("rle", "").split(",") if v.strip()], np.int64)
    except (ValueError, OverflowError) as err:  # OverflowError: a run past int64
        raise fail(path, where, f"rle is not comma-separated integers ({err})") from err
    if w <= 0 or h <= 0:
        raise fail(path, where, f"mask box width={w} height={h}; width and height must be positive (pixels)")
    if (runs < 0).any():
        raise fail(path, where, f"rle has a negative run ({int(runs.min())}); runs are pixel counts >= 0")
    covered = sum(runs.tolist())  # Python ints: an int64 sum wraps, and runs near 2**63 then summed to w * h
    if covered != w * h:
        raise fail(path, where, f"rle covers {covered} pixels; the mask's box {w}x{h} has {w * h}")
    if left < 0 or top < 0 or left + w > width or top + h > height:
        raise fail(path, where, f"mask box left={left} top={top} {w}x{h} leaves the {width}x{height} frame")
    tight = np.repeat((np.arange(runs.size) % 2).astype(np.uint8), runs).reshape(h, w)
    full = np.zeros((height, width), np.uint8)
    full[top : top + h, left : left + w] = tight
    return full


def cvat_rle_encode(mask: np.ndarray) -> tuple[str, int, int, int, int]:
    """(rle, left, top, width, height) of a non-empty mask, as CVAT writes ``<mask>``."""
    ys, xs = np.nonzero(mask)
    y0, y1, x0, x1 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
    flat = (np.asarray(mask)[y0:y1, x0:x1] != 0).reshape(-1).astype(np.int8)
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.r_[0, change, flat.size]
    runs = np.diff(bounds).tolist()
    if flat[0] == 1:
        runs = [0, *runs]
    return ", ".join(map(str, runs)), x0, y0, x1 - x0, y1 - y0


def import_cvat(ctx: ImportContext) -> Parsed:
    """Read a CVAT for video 1.1 file, or a folder of them (``export_labels`` writes one per video), see the
    module docstring."""
    if ctx.path.is_dir():
        return import_each_file(ctx, ".xml", import_cvat)
    path = ctx.path
    read: _CvatRead | None = None
    # the shapes before a <meta> (CVAT writes it first) wait for the task it describes
    waiting: list[ET.Element] = []
    for elem in children(path):
        if read is None and elem.tag == "meta":
            read = _task_read(ctx, path, elem)
        elif read is None:
            waiting.append(elem)
            continue
        for e in [*waiting, elem] if waiting else [elem]:
            _dispatch(read, e)
        waiting.clear()
    if read is None:
        read = _task_read(ctx, path, None)
        for e in waiting:
            _dispatch(read, e)
    read.mask_tracks()
    read.polygon_tracks()
    read.markers()
    read.notes()
    return read.parsed


def _task_read(ctx: ImportContext, path: Path, meta_el: ET.Element | None) -> _CvatRead:
    """The reading of a file's shapes, from its ``<meta>``: the dataset video and the task's frames."""
    task = None if meta_el is None else meta_el.find("task")
    if task is None and meta_el is not None:
        task = meta_el.find("job")
    keys: list[Any] = []
    if task is not None:
        keys = [task.findtext("name"), Path(task.findtext("source") or "").stem or None]
    meta = ctx.resolve(keys, 1, "<meta>")
    start, stop, step = _task_frames(path, task, meta)
    read = _CvatRead(path, meta, start, stop, step)
    read.specs = _attribute_specs(task)
    return read


def _dispatch(read: _CvatRead, elem: ET.Element) -> None:
    """One child of the root: a track, an image, or a shape outside both (counted); anything else is not read."""
    if elem.tag == "track":
        read.track(elem)
    elif elem.tag == "image":
        read.image(elem)
    elif elem.tag in _SHAPES:
        read.parsed.skipped[f"unsupported shape type: {elem.tag}"] += 1


def _task_frames(path: Path, task: ET.Element | None, meta: Any) -> tuple[int, int, int]:
    """(start_frame, stop_frame, step) of the task: its frames are video frames start + k * step, up to stop."""
    start, stop, step = 0, meta.frame_count - 1, 1
    if task is None:
        return start, stop, step
    mw = "<meta><task>"
    start = _int(path, task, mw, "start_frame", 0)
    stop = _int(path, task, mw, "stop_frame", meta.frame_count - 1)
    ff = (task.findtext("frame_filter") or "").strip()
    if ff:
        if not ff.startswith("step="):
            raise fail(path, f"{mw}<frame_filter>", f"{shown(ff)}; expected 'step=N'")
        if not _INTEGER.fullmatch(ff[5:]):
            raise fail(path, f"{mw}<frame_filter>", f"{shown(ff)}; expected 'step=N'")
        step = int(ff[5:])
        if step < 1:
            raise fail(path, f"{mw}<frame_filter>", f"step {step}; expected >= 1")
    size = task.find("original_size")
    if size is not None:
        for key, have in (("width", meta.width), ("height", meta.height)):
            got = size.findtext(key)
            if got is not None and _int(path, size, f"{mw}<original_size>", key) != have:
                raise fail(
                    path,
                    f"{mw}<original_size>",
                    f"{key} {got} disagrees with video {meta.video_id!r}, whose {key} is {have}",
                )
    if (task.findtext("size") or "").strip():
        # <size> counts the task's frames (CVAT's data size, after the frame filter): without a stop_frame it
        # says where the task ends (a visible box persists to there, not to the video's end); with one, the
        # two must agree
        n = _int(path, task, mw, "size")
        if n < 1:
            raise fail(path, f"{mw}<size>", f"size {n}; expected >= 1")
        if not (task.findtext("stop_frame") or "").strip():
            stop = start + (n - 1) * step
        elif (stop - start) // step + 1 != n:
            raise fail(
                path,
                f"{mw}<size>",
                f"size {n} disagrees with start_frame={start} .. stop_frame={stop} (step {step}): "
                f"{(stop - start) // step + 1} task frames",
            )
    if not 0 <= start <= stop < meta.frame_count:
        raise fail(
            path,
            mw,
            f"task frames start_frame={start} .. stop_frame={stop} do not lie in video {meta.video_id!r}: "
            f"frames 0..{meta.frame_count - 1}",
        )
    return start, stop, step


#: CVAT attribute input types -> our attribute types (select, radio and text are text).
_INPUT_TYPES = {"checkbox": "bool", "number": "number"}


def _attribute_specs(task: ET.Element | None) -> dict[tuple[str, str], str]:
    """(label, attribute name) -> our attribute type, from the task's ``<labels>`` (``input_type``)."""
    out: dict[tuple[str, str], str] = {}
    for label in task.findall("labels/label") if task is not None else []:
        for a in label.findall("attributes/attribute"):
            kind = _INPUT_TYPES.get((a.findtext("input_type") or "").strip(), "text")
            out[((label.findtext("name") or "").strip(), (a.findtext("name") or "").strip())] = kind
    return out


def _shape_attributes(
    path: Path,
    c: ET.Element,
    where: str,
    label: str,
    specs: dict[tuple[str, str], str],
    parsed: Parsed,
    *,
    flag: bool = True,
) -> dict[str, Any]:
    """A shape's attributes: ``occluded`` (bool; not for a tag, ``flag=False``) and its ``<attribute>``
    children, typed by the task's label specs (checkbox: bool, number: number, else text), each declared in
    ``parsed``."""
    out: dict[str, Any] = {"occluded": c.attrib.get("occluded") == "1"} if flag else {}
    for a in c.findall("attribute"):
        name = a.attrib.get("name", "")
        if not name:
            raise fail(path, where, "an <attribute> needs a name")
        text = a.text or ""
        kind = specs.get((label, name), "bool" if name == "occluded" else "text")
        if kind == "bool":
            if text.strip().lower() not in ("true", "false"):
                raise fail(path, where, f"checkbox attribute {name!r} is {text!r}; expected true or false")
            out[name] = text.strip().lower() == "true"
        elif kind == "number":
            try:
                out[name] = float(text)
            except ValueError:
                raise fail(path, where, f"number attribute {name!r} is {text!r}; expected a number") from None
            if not np.isfinite(out[name]):
                raise fail(path, where, f"number attribute {name!r} is {text!r}; expected a finite number")
        else:
            out[name] = text
    for name in out:
        parsed.declare(label, name, specs.get((label, name), "bool" if name == "occluded" else "text"))
    return out


class _CvatRead:
    """One CVAT file being read: the task frames, the rows so far, and what waits for the box tracks.

    Mask and polygon tracks are read after every box track, since a group's box track (whose id
    they take) may come later in the document.
    """

    def __init__(self, path: Path, meta: Any, start: int, stop: int, step: int) -> None:
        self.path, self.meta, self.start, self.stop, self.step = path, meta, start, stop, step
        self.task_frames = np.arange(start, stop + 1, step, dtype=np.int64)
        self.parsed = Parsed()
        self.vr = VideoRows(meta)
        self.parsed.videos[meta.video_id] = self.vr
        self.next_track = 0
        self.box_groups: dict[str, int] = {}
        self.mask_groups: dict[str, int] = {}
        self.waiting_masks: list[tuple[ET.Element, str, dict[str, Any]]] = []
        self.waiting_polygons: list[tuple[ET.Element, str, dict[str, Any], int | None]] = []
        # (label, source="auto") -> (frame, where, attributes)
        self.tags: dict[tuple[str, bool], list[tuple[int, str, dict[str, Any]]]] = {}
        self.specs: dict[tuple[str, str], str] = {}  # (label, attribute) -> type, from the task's labels

    def new_track(self) -> int:
        """The next track id, in document order."""
        self.next_track += 1
        return self.next_track - 1

    def absolute(self, elem: ET.Element, where: str) -> int:
        """The video frame of an element (``frame``, or ``id`` of an ``<image>``): CVAT writes the video frame
        itself (``start_frame + k * step`` for the task's k-th frame), never the position k."""
        key = "id" if elem.tag == "image" else "frame"
        f = _int(self.path, elem, where, key)
        if not (self.start <= f <= self.stop and (f - self.start) % self.step == 0):
            every = f" step {self.step} ({self.start}, {self.start + self.step}, ...)" if self.step > 1 else ""
            raise fail(
                self.path,
                where,
                f"frame {f} is not a task frame: the task's frames are video frames {self.start}..{self.stop}{every} "
                "(CVAT writes a shape's frame as the video frame, start_frame + k * step)",
            )
        return f

    def track(self, elem: ET.Element) -> None:
        """One ``<track>``: box tracks now; mask and polygon tracks wait; other shapes are counted."""
        tw = _el(elem)
        label = elem.attrib.get("label")
        if not label:
            raise fail(self.path, tw, "a track needs a label")
        shapes = [c for c in elem if c.tag in _SHAPES]
        for c in shapes:
            _check_flags(self.path, c, _el(c, tw))
        kinds = {c.tag for c in shapes}
        base: dict[str, Any] = {"label": label}
        if elem.attrib.get("source") == "auto":
            base["origin"] = "model"
        if kinds - _TRACK_SHAPES or len(kinds) > 1:
            for kname in sorted(kinds - _TRACK_SHAPES):
                self.parsed.skipped[f"unsupported shape type: {kname} (track)"] += 1
            if kinds <= _TRACK_SHAPES:
                self.parsed.skipped[f"track mixing {' and '.join(sorted(kinds))} shapes"] += 1
            return
        keyed = [c for c in shapes if c.attrib.get("keyframe", "1") == "1"]
        if "mask" in kinds:
            self.waiting_masks.append((elem, tw, base))
        elif "polygon" in kinds:
            gid = elem.attrib.get("group_id", "0")
            own = self.new_track() if gid in ("", "0") else None  # grouped: the group's box track, known later
            self.waiting_polygons.append((elem, tw, base, own))
        elif any(c.attrib.get("rotation") and _float(self.path, c, _el(c, tw), "rotation") != 0 for c in keyed):
            self.parsed.skipped["rotated box (track)"] += 1
        else:
            self.box_track(elem, tw, base, keyed)

    def box_track(self, elem: ET.Element, tw: str, base: dict[str, Any], keyed: list[ET.Element]) -> None:
        """Box rows on every task frame, interpolated between keyframes (``outside`` hides)."""
        track = self.new_track()
        gid = elem.attrib.get("group_id", "0")
        if gid not in ("", "0"):
            self.box_groups.setdefault(gid, track)
        keys = []
        for c in keyed:
            cw = _el(c, tw)
            box = tuple(_float(self.path, c, cw, k) for k in ("xtl", "ytl", "xbr", "ybr"))
            visible = c.attrib.get("outside") != "1"
            attrs = _shape_attributes(self.path, c, cw, base["label"], self.specs, self.parsed) if visible else None
            keys.append(Keyframe(self.absolute(c, cw), box, visible, payload=attrs, where=cw))  # type: ignore[arg-type]
        for f, at_box, k in interpolate_keyframes(self.path, keys, self.task_frames):
            row = {**base, "kind": "box", "start_frame": f, "box": at_box, "track_id": track, "attributes": k.payload}
            self.vr.add(row, k.where)

    def image(self, elem: ET.Element) -> None:
        """One ``<image>``: its tags (markers later); shapes in it are counted as not imported."""
        iw = _el(elem)
        f = self.absolute(elem, iw)
        for c in elem:
            if c.tag == "tag":
                if not c.attrib.get("label"):
                    raise fail(self.path, _el(c, iw), "a tag needs a label")
                key = (c.attrib["label"], c.attrib.get("source") == "auto")
                cw = _el(c, iw)
                attrs = _shape_attributes(self.path, c, cw, key[0], self.specs, self.parsed, flag=False)
                self.tags.setdefault(key, []).append((f, cw, attrs))
            elif c.tag in _SHAPES:
                self.parsed.skipped[f"unsupported shape type: {c.tag} (in <image>)"] += 1

    def mask_track_id(self, gid: str) -> int | None:
        """A mask track's id: its group's box track, else one new id per group; ungrouped: untracked."""
        if gid in ("", "0"):
            return None
        if gid in self.box_groups:
            return self.box_groups[gid]
        if gid not in self.mask_groups:
            self.mask_groups[gid] = self.new_track()
        return self.mask_groups[gid]

    def mask_tracks(self) -> None:
        """Mask rows of the ``<mask>`` tracks, carried unchanged between keyframes."""
        for elem, tw, base in self.waiting_masks:
            mask_track = self.mask_track_id(elem.attrib.get("group_id", "0"))
            keys = []
            for c in elem:
                if c.tag != "mask" or c.attrib.get("keyframe", "1") != "1":
                    continue
                cw = _el(c, tw)
                visible = c.attrib.get("outside") != "1"
                payload = None
                if visible:
                    mask = cvat_rle_decode(self.path, cw, c, self.meta.height, self.meta.width)
                    payload = (mask, _shape_attributes(self.path, c, cw, base["label"], self.specs, self.parsed))
                keys.append(Keyframe(self.absolute(c, cw), None, visible, payload=payload, where=cw))
            for f, _, k in interpolate_keyframes(self.path, keys, self.task_frames):
                row = {**base, "kind": "mask", "start_frame": f, "mask": k.payload[0], "attributes": k.payload[1]}
                if mask_track is not None:
                    row["track_id"] = mask_track
                self.vr.add(row, k.where)

    def polygon_tracks(self) -> None:
        """Mask rows of the polygon tracks: every written shape on a task frame, rasterised."""
        for elem, tw, base, own in self.waiting_polygons:
            if own is None:  # grouped: the group's box track, else a track of its own
                own = self.box_groups.get(elem.attrib["group_id"])
                if own is None:
                    own = self.new_track()
            seen: dict[int, str] = {}
            for c in elem:
                if c.tag != "polygon":
                    continue
                cw = _el(c, tw)
                f = self.absolute(c, cw)
                if f in seen:
                    raise fail(
                        self.path, cw, f"a second polygon on frame {c.attrib['frame']} of the track (first: {seen[f]})"
                    )
                seen[f] = cw
                if c.attrib.get("outside") == "1":
                    continue
                points = [_points(self.path, c, cw)]
                rle = coco_segmentation(self.path, cw, points, self.meta.height, self.meta.width, self.parsed.skipped)
                if rle is not None:
                    attrs = _shape_attributes(self.path, c, cw, base["label"], self.specs, self.parsed)
                    row = {**base, "kind": "mask", "start_frame": f, "mask": rle, "track_id": own, "attributes": attrs}
                    self.vr.add(row, cw)

    def markers(self) -> None:
        """Runs of consecutive task frames with a tag of one label and the same attributes become one marker
        each (a model's, for ``source="auto"``)."""
        for (label, auto), items in self.tags.items():
            items.sort(key=lambda item: (item[0], sorted(item[2].items())))
            ks = np.array([(f - self.start) // self.step for f, _, _ in items])
            changed = [items[i][2] != items[i + 1][2] for i in range(len(items) - 1)]
            breaks = np.flatnonzero((np.diff(ks) > 1) | np.array(changed, bool))
            firsts = np.r_[0, breaks + 1]
            lasts = np.r_[breaks, len(items) - 1]
            for a, b in zip(firsts.tolist(), lasts.tolist()):
                row = {"kind": "marker", "label": label, "start_frame": items[a][0], "end_frame": items[b][0]}
                if items[a][2]:
                    row["attributes"] = items[a][2]
                if auto:
                    row["origin"] = "model"
                self.vr.add(row, items[a][1])

    def notes(self) -> None:
        """What the file holds that rows do not: a frame step."""
        if self.step > 1:
            self.parsed.notes.append(
                f"task frames {self.start}..{self.stop} step {self.step}: only those frames got rows"
            )


def _box_el(
    parent: ET.Element, frame: int, box: Sequence[float], outside: bool, attrs: dict[str, Any] | None = None
) -> None:
    """A box keyframe; ``attrs``: the row's attributes (``occluded`` the flag, the others ``<attribute>``s)."""
    attrs = attrs or {}
    el = ET.SubElement(
        parent,
        "box",
        {
            "frame": str(frame), "keyframe": "1", "outside": "1" if outside else "0",
            "occluded": "1" if attrs.get("occluded") is True else "0",
            "xtl": repr(box[0]), "ytl": repr(box[1]), "xbr": repr(box[2]), "ybr": repr(box[3]), "z_order": "0",
        },
    )  # fmt: skip
    _attribute_els(el, attrs)


def _attribute_els(el: ET.Element, attrs: dict[str, Any], *, flag: bool = True) -> None:
    """A shape's or tag's ``<attribute>`` children: every attribute but a shape's ``occluded`` flag (a tag,
    ``flag=False``, has no such flag: its ``occluded`` is an ``<attribute>`` too)."""
    for name, value in sorted(attrs.items()):
        if flag and name == "occluded" and isinstance(value, bool):
            continue
        text = (
            ("true" if value else "false")
            if isinstance(value, bool)
            else repr(value)
            if isinstance(value, float)
            else value
        )
        ET.SubElement(el, "attribute", {"name": name}).text = text


#: Our attribute types -> CVAT input types.
_CVAT_INPUT = {"bool": "checkbox", "number": "number", "text": "text"}


def _label_specs(labels_el: ET.Element, names: Sequence[str], schema: dict[str, dict[str, str]]) -> None:
    """The task's ``<labels>``: each label with the attributes its rows carry (``occluded`` is CVAT's flag)."""
    for name in names:
        label = ET.SubElement(labels_el, "label")
        ET.SubElement(label, "name").text = name
        attrs = {k: v for k, v in schema.get(name, {}).items() if not (k == "occluded" and v == "bool")}
        if attrs:
            specs = ET.SubElement(label, "attributes")
            for attr, kind in sorted(attrs.items()):
                spec = ET.SubElement(specs, "attribute")
                ET.SubElement(spec, "name").text = attr
                ET.SubElement(spec, "mutable").text = "True"
                ET.SubElement(spec, "input_type").text = _CVAT_INPUT[kind]
                ET.SubElement(spec, "default_value").text = "false" if kind == "bool" else ""
                ET.SubElement(spec, "values").text = "false\ntrue" if kind == "bool" else ""


def _touching_markers(spans: dict[tuple[str, str], list[tuple[int, int]]]) -> int:
    """Markers (inclusive frame spans, per label and source) that start at or before the frame after an earlier
    one's end: their per-frame tags run together, so they read back as one marker."""
    n = 0
    for runs in spans.values():
        end = None
        for first, last in sorted(runs):
            n += end is not None and first <= end + 1
            end = last if end is None else max(end, last)
    return n


def _schema_of(release: Release) -> dict[str, dict[str, str]]:
    """Label -> attribute types of a release: its recorded schema, else the types its rows' values show."""
    recorded = release.info.get("attribute_schema")
    if recorded:
        return {k: dict(v) for k, v in recorded.items()}
    t = release.table
    out: dict[str, dict[str, str]] = {}
    offsets = t.attr_offsets
    if t.has_attributes and offsets is not None:
        for i in np.flatnonzero(np.diff(offsets)).tolist():
            for k, v in t.attributes(i).items():
                kind = "bool" if isinstance(v, bool) else "text" if isinstance(v, str) else "number"
                out.setdefault(release.labels[int(t.label[i])], {})[k] = kind
    return out


def export_cvat(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """One CVAT for video 1.1 file per video: every box a keyframe, ``outside`` keyframes closing gaps,
    masks as CVAT RLE one-frame tracks sharing their box track's ``group_id``, markers as ``<image><tag>``."""
    t = release.table
    report = ExportLabelsReport("cvat-video", release.release_id)
    tables = video_tables(release, videos)
    files = output_files(out, [vt.meta.video_id for vt in tables], ".xml")
    for vt in tables:
        meta, n = vt.meta, vt.meta.frame_count
        root = ET.Element("annotations")
        ET.SubElement(root, "version").text = "1.1"
        _task_meta(ET.SubElement(ET.SubElement(root, "meta"), "task"), release, meta)
        rows = vt.rows
        kind = t.kind[rows]
        untracked, conf_dropped = _write_tracks(root, release, rows[kind != MARKER], n, report)
        conf_dropped += _write_markers(root, release, rows[kind == MARKER], meta, report)
        if untracked:
            report.notes.append(f"video {meta.video_id!r}: {untracked} untracked rows written as one-frame tracks")
        if conf_dropped:
            report.not_written["confidence of model rows (CVAT holds none; the rows are written)"] += conf_dropped
        ET.indent(root)
        write_text(
            files[meta.video_id], '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"
        )
        report.paths.append(str(files[meta.video_id]))
    return report


def _task_meta(task: ET.Element, release: Release, meta: VideoMetadata) -> None:
    """Fill ``<meta><task>``: the video's name, frames, labels with their attributes, size and source file."""
    n = meta.frame_count
    for key, value in (
        ("id", "1"),
        ("name", meta.video_id),
        ("size", str(n)),
        ("mode", "interpolation"),
        ("overlap", "0"),
        ("start_frame", "0"),
        ("stop_frame", str(n - 1)),
        ("frame_filter", ""),
    ):
        ET.SubElement(task, key).text = value
    _label_specs(ET.SubElement(task, "labels"), release.labels, _schema_of(release))
    size = ET.SubElement(task, "original_size")
    ET.SubElement(size, "width").text = str(meta.width)
    ET.SubElement(size, "height").text = str(meta.height)
    if meta.uri:
        ET.SubElement(task, "source").text = Path(meta.uri).name


def _write_tracks(
    root: ET.Element, release: Release, rows: np.ndarray, n: int, report: ExportLabelsReport
) -> tuple[int, int]:
    """A ``<track>`` per box track and per mask of the box and mask ``rows`` of a video of ``n`` frames.

    Returns the number of untracked rows' tracks and of confidences dropped.
    """
    t = release.table
    counter = 0
    untracked = 0
    conf_dropped = 0
    for track, trows in tracks_of(t, rows).items():
        label = release.labels[int(t.label[trows[0]])]
        group = str(track + 1) if track >= 0 else "0"
        untracked += track < 0
        boxes = trows[t.kind[trows] == BOX]
        source = "auto" if (t.origin[trows] == MODEL).any() else "manual"
        mixed = human_rows_of_model_track(t, trows)
        if mixed:
            report.not_written[mixed_origin_reason("CVAT")] += mixed
        conf_dropped += int(np.isfinite(t.confidence[trows]).sum())
        if boxes.size:
            el = ET.SubElement(root, "track", {"id": str(counter), "label": label, "source": source, "group_id": group})
            counter += 1
            _box_keyframes(el, release, boxes, n, report)
        for r in trows[t.kind[trows] == MASK].tolist():
            el = ET.SubElement(root, "track", {"id": str(counter), "label": label, "source": source, "group_id": group})
            counter += 1
            _mask_keyframes(el, release, r, n)
            report.counts["mask"] += 1
    return untracked, conf_dropped


def _box_keyframes(el: ET.Element, release: Release, boxes: np.ndarray, n: int, report: ExportLabelsReport) -> None:
    """A track's boxes as keyframes, an ``outside`` keyframe after each that the next frame does not continue."""
    t = release.table
    frames = t.start_frame[boxes].tolist()
    seen: set[int] = set()
    for j, r in enumerate(boxes.tolist()):
        f = frames[j]
        if f in seen:
            report.not_written["box on a frame its track already holds (CVAT holds one per frame)"] += 1
            continue
        seen.add(f)
        attrs = row_attributes(t, r)
        _box_el(el, f, t.box[r].tolist(), False, attrs)
        report.counts["box"] += 1
        # the next frame of the track holding a box: not a second box on this frame, which is not
        # written (an outside keyframe must still close the gap after f)
        k = bisect.bisect_right(frames, f, j + 1)
        nxt = frames[k] if k < len(frames) else None
        if f + 1 < n and (nxt is None or nxt > f + 1):
            _box_el(el, f + 1, t.box[r].tolist(), True, attrs)


def _mask_keyframes(el: ET.Element, release: Release, r: int, n: int) -> None:
    """Mask row ``r`` as a CVAT RLE keyframe on its frame and an ``outside`` one on the next."""
    from vidlabel.geometry import decode_rle

    t = release.table
    f = int(t.start_frame[r])
    rle, left, top, w, h = cvat_rle_encode(decode_rle(t.mask_rle(r)))  # type: ignore[arg-type]
    attrs = row_attributes(t, r) or {}
    for ff, outside in ((f, "0"), (f + 1, "1")):
        if ff < n:
            shape = ET.SubElement(el, "mask", {
                "frame": str(ff), "keyframe": "1", "outside": outside,
                "occluded": "1" if attrs.get("occluded") is True else "0", "rle": rle,
                "left": str(left), "top": str(top), "width": str(w), "height": str(h), "z_order": "0",
            })  # fmt: skip
            _attribute_els(shape, attrs)


def _write_markers(
    root: ET.Element, release: Release, rows: np.ndarray, meta: VideoMetadata, report: ExportLabelsReport
) -> int:
    """The marker ``rows`` as ``<image><tag>`` per frame they cover; returns the number of confidences dropped."""
    t = release.table
    conf_dropped = 0
    per_frame: dict[int, list[tuple[str, str, str]]] = {}
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for r in rows.tolist():
        tag = (release.labels[int(t.label[r])], "auto" if t.origin[r] == MODEL else "manual")
        first, last = int(t.start_frame[r]), int(t.end_frame[r])
        attrs = json.dumps(row_attributes(t, r) or {}, sort_keys=True)
        for f in range(first, last + 1):
            per_frame.setdefault(f, []).append((*tag, attrs))
        spans.setdefault(tag, []).append((first, last))
        conf_dropped += int(np.isfinite(t.confidence[r]))
        report.counts["marker"] += 1
    touching = _touching_markers(spans)
    if touching:
        why = "marker touching or overlapping another of its label (CVAT tags are per frame: read back as one marker)"
        report.not_written[why] += touching
    for f in sorted(per_frame):
        img = ET.SubElement(root, "image", {"id": str(f), "name": f"frame_{f:06d}", "width": str(meta.width),
                                            "height": str(meta.height)})  # fmt: skip
        for label, source, attrs in dict.fromkeys(per_frame[f]):
            _attribute_els(ET.SubElement(img, "tag", {"label": label, "source": source}), json.loads(attrs), flag=False)
    return conf_dropped
