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

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.errors import FormatError

from ._common import (
    ImportContext,
    Keyframe,
    Parsed,
    VideoRows,
    coco_segmentation,
    fail,
    import_each_file,
    interpolate_keyframes,
    keyframe_span,
    text_chunks,
)

__all__ = ["import_cvat"]

_TRACK_SHAPES = {"box", "mask", "polygon"}
_SHAPES = ("box", "mask", "polygon", "polyline", "points", "ellipse", "cuboid", "skeleton", "tag")


class _Chunks:
    """A file-like ``read`` over decoded text pieces, for ``iterparse``."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self._chunks = chunks

    def read(self, _size: int = -1) -> str:
        return next(self._chunks, "")


def _events(path: Path) -> Iterator[tuple[str, ET.Element]]:
    """The file's elements as the parser reaches them: ``("start", child)`` and ``("end", child)`` for each child
    of the root, and ``("part", part)`` at the end of each child of theirs (a track's shape); the root is checked
    to be ``<annotations>`` and forgets each child once the next event is asked for after its end (a file of
    millions of shapes is never held whole; a reader may also remove a part from its parent once read).
    Entity declarations and malformed XML are FormatErrors naming the line."""
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
                elif depth == 2:
                    yield "start", elem
                continue
            depth -= 1
            if depth == 2:
                yield "part", elem
            elif depth == 1 and root is not None:
                yield "end", elem
                root.remove(elem)
    except defusedxml.DefusedXmlException as err:
        raise fail(path, None, f"refused: the XML declares entities or a DTD ({err}); CVAT exports have none") from err
    except ET.ParseError as err:
        line, col = err.position
        # ParseError's text ends in ": line L, column C"; the line is said once, before the colon
        reason = re.sub(r":? line \d+, column \d+$", "", str(getattr(err, "msg", err)))
        # expat counts columns from 0
        raise fail(path, line, f"not well-formed XML ({reason}, column {col + 1})") from err


def children(path: Path) -> Iterator[ET.Element]:
    """Each child of the root element, whole, as the parser reaches its end (see :func:`_events`)."""
    return (elem for event, elem in _events(path) if event == "end")


def _child(path: Path, index: int) -> ET.Element:
    """The root's child number ``index`` (from 0), whole, read again from the file."""
    for i, elem in enumerate(children(path)):
        if i == index:
            return elem
    raise fail(
        path, None, f"changed while being read: element {index + 1} of <annotations> is gone on a second reading"
    )


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
            raise fail(path, where, f"attribute {key}={shown(value)}; allowed: '0', '1' (CVAT writes flags as 0/1)")


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


def import_cvat(ctx: ImportContext) -> Parsed:
    """Read a CVAT for video 1.1 file, or a folder of them (``export_labels`` writes one per video), see the
    module docstring."""
    if ctx.path.is_dir():
        return import_each_file(ctx, ".xml", import_cvat)
    path = ctx.path
    read: _CvatRead | None = None
    # the shapes before a <meta> (CVAT writes it first) wait for the task it describes
    waiting: list[ET.Element] = []
    stream: _BoxStream | None = None
    index = -1
    for event, elem in _events(path):
        if event == "start":
            index += 1
            # a box track's shapes are read as they end, so that a long track is never held whole
            stream = _BoxStream(read, elem, index) if read is not None and elem.tag == "track" else None
            continue
        if event == "part":
            if stream is not None:
                stream.part(elem)
            continue
        if stream is not None:
            stream.end()
            continue
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
                raise fail(path, where, f"checkbox attribute {shown(name)} is {shown(text)}; expected true or false")
            out[name] = text.strip().lower() == "true"
        elif kind == "number":
            try:
                out[name] = float(text)
            except ValueError:
                raise fail(path, where, f"number attribute {shown(name)} is {shown(text)}; expected a number") from None
            if not np.isfinite(out[name]):
                raise fail(path, where, f"number attribute {shown(name)} is {shown(text)}; expected a finite number")
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
        base = _track_base(elem)
        if self.skipped_kinds(kinds):
            return
        keyed = [c for c in shapes if c.attrib.get("keyframe", "1") == "1"]
        if "mask" in kinds:
            self.waiting_masks.append((elem, tw, base))
        elif "polygon" in kinds:
            gid = elem.attrib.get("group_id", "0")
            own = self.new_track() if gid in ("", "0") else None  # grouped: the group's box track, known later
            self.waiting_polygons.append((elem, tw, base, own))
        elif any(_rotated(self.path, c, _el(c, tw)) for c in keyed):
            self.parsed.skipped["rotated box (track)"] += 1
        else:
            self.box_track(elem, tw, base, keyed)

    def skipped_kinds(self, kinds: set[str]) -> bool:
        """Count a track of shapes we do not import, or of more than one kind; True if it is one."""
        if not (kinds - _TRACK_SHAPES or len(kinds) > 1):
            return False
        for kname in sorted(kinds - _TRACK_SHAPES):
            self.parsed.skipped[f"unsupported shape type: {kname} (track)"] += 1
        if kinds <= _TRACK_SHAPES:
            self.parsed.skipped[f"track mixing {' and '.join(sorted(kinds))} shapes"] += 1
        return True

    def box_key(self, c: ET.Element, cw: str, label: str) -> Keyframe:
        """A box keyframe: its box (pixels, xyxy), ``outside`` flag, attributes if visible, and video frame."""
        box = tuple(_float(self.path, c, cw, k) for k in ("xtl", "ytl", "xbr", "ybr"))
        visible = c.attrib.get("outside") != "1"
        attrs = _shape_attributes(self.path, c, cw, label, self.specs, self.parsed) if visible else None
        return Keyframe(self.absolute(c, cw), box, visible, payload=attrs, where=cw)  # type: ignore[arg-type]

    def box_rows(self, track: int, base: dict[str, Any], k: Keyframe, nxt: Keyframe | None) -> None:
        """The rows of box keyframe ``k`` up to the next keyframe ``nxt`` (``None``: to the task's end)."""
        for f, at_box, kk in keyframe_span(k, nxt, self.task_frames):
            row = {**base, "kind": "box", "start_frame": f, "box": at_box, "track_id": track, "attributes": kk.payload}
            self.vr.add(row, kk.where)

    def box_track(self, elem: ET.Element, tw: str, base: dict[str, Any], keyed: list[ET.Element]) -> None:
        """Box rows on every task frame, interpolated between keyframes (``outside`` hides)."""
        track = self.new_track()
        gid = elem.attrib.get("group_id", "0")
        if gid not in ("", "0"):
            self.box_groups.setdefault(gid, track)
        keys = [self.box_key(c, _el(c, tw), base["label"]) for c in keyed]
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


def _track_base(elem: ET.Element) -> dict[str, Any]:
    """The fields every row of a ``<track>`` shares: its label, and a model's origin for ``source="auto"``."""
    base: dict[str, Any] = {"label": elem.attrib.get("label")}
    if elem.attrib.get("source") == "auto":
        base["origin"] = "model"
    return base


def _rotated(path: Path, c: ET.Element, where: str) -> bool:
    """Whether a box shape is rotated (a ``rotation`` other than 0 degrees)."""
    return bool(c.attrib.get("rotation")) and _float(path, c, where, "rotation") != 0


class _BoxStream:
    """One ``<track>`` read as its shapes end, so that a track of any length is never held whole.

    A box track's rows are made keyframe by keyframe (a box needs the previous keyframe only) and each shape
    is dropped once read. What decides the track (a flag, the kinds of its shapes, a rotation, a bad number)
    is remembered and acted on at the track's end in the order :meth:`_CvatRead.track` checks them, so the
    rows, counts and messages are the same: a track that is not imported has its rows taken back; a track
    without a label or whose first shape is a mask or polygon is kept whole for :meth:`_CvatRead.track`;
    one whose keyframes are not in frame order is read again whole from the file.
    """

    def __init__(self, read: _CvatRead, elem: ET.Element, index: int) -> None:
        self.read, self.elem, self.index = read, elem, index
        self.tw = _el(elem)
        self.base = _track_base(elem)
        # False: the shapes stay in the element, which _CvatRead.track reads at the end
        self.streaming = bool(elem.attrib.get("label"))
        self.first_row, self.next_track = len(read.vr), read.next_track
        self.declared = {label: dict(names) for label, names in read.parsed.attributes.items()}
        self.kinds: set[str] = set()
        self.flag_error: FormatError | None = None
        # the first keyframe whose rotation decides: its error, or True (rotated: the track is not imported)
        self.rotation: FormatError | bool = False
        self.error: FormatError | None = None
        self.unordered = False
        self.track: int | None = None
        self.prev: Keyframe | None = None

    def part(self, c: ET.Element) -> None:
        """A child of the track has ended: a shape to check and, for a keyframe of a box track, to turn into
        rows up to it."""
        if not self.streaming:
            return
        if c.tag in _SHAPES and not self.kinds and c.tag != "box":
            self.streaming = False
            return
        self.elem.remove(c)
        if c.tag not in _SHAPES:
            return
        read, cw = self.read, _el(c, self.tw)
        if self.flag_error is None:
            try:
                _check_flags(read.path, c, cw)
            except FormatError as err:
                self.flag_error = err
        self.kinds.add(c.tag)
        decided = self.flag_error is not None or self.kinds != {"box"} or self.rotation is not False
        if decided or c.attrib.get("keyframe", "1") != "1":
            return
        try:
            self.rotation = _rotated(read.path, c, cw)
        except FormatError as err:
            self.rotation = err
        if self.rotation is not False or self.error is not None or self.unordered:
            return
        try:
            k = read.box_key(c, cw, self.base["label"])
        except FormatError as err:
            self.error = err
            return
        if self.prev is not None and k.frame <= self.prev.frame:
            self.unordered = True
            return
        if self.prev is not None:
            read.box_rows(self.track_id(), self.base, self.prev, k)
        self.prev = k

    def track_id(self) -> int:
        if self.track is None:
            self.track = self.read.new_track()
        return self.track

    def undo(self) -> None:
        """Take back the rows, track id and attribute declarations of the track."""
        read = self.read
        read.vr.truncate(self.first_row)
        read.next_track = self.next_track
        read.parsed.attributes.clear()
        read.parsed.attributes.update(self.declared)

    def end(self) -> None:
        """The track has ended: its last keyframe's rows, or the outcome its shapes decided."""
        read = self.read
        if not self.streaming:
            read.track(self.elem)
            return
        if self.flag_error is not None:
            raise self.flag_error
        if read.skipped_kinds(self.kinds):
            self.undo()
            return
        if isinstance(self.rotation, FormatError):
            raise self.rotation
        if self.rotation:
            self.undo()
            read.parsed.skipped["rotated box (track)"] += 1
            return
        if self.error is not None:
            raise self.error
        if self.unordered:
            self.undo()
            read.track(_child(read.path, self.index))
            return
        track = self.track_id()
        if self.prev is not None:
            read.box_rows(track, self.base, self.prev, None)
        gid = self.elem.attrib.get("group_id", "0")
        if gid not in ("", "0"):
            read.box_groups.setdefault(gid, track)
