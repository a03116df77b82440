"""CVAT for video 1.1 XML export: one file per video, every box a keyframe (see :mod:`._cvat` for the reading).

Box tracks are written as keyframes with an ``outside`` keyframe closing each gap; masks as CVAT RLE one-frame
tracks sharing their box track's ``group_id``; markers as per-frame ``<image><tag>``; each label's attributes
are declared in the task's ``<labels>``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.dataset import Release
from vidlabel.spec import VideoMetadata

from ._common import (
    BOX,
    MARKER,
    MASK,
    MODEL,
    human_rows_of_model_track,
    mixed_origin_reason,
    output_files,
    row_attributes,
    track_keyframes,
    tracks_of,
    video_tables,
    write_text,
)
from ._report import ExportLabelsReport

__all__ = ["cvat_rle_encode", "export_cvat"]


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
    for r, f, ends in track_keyframes(t, boxes, n, report, "CVAT"):
        attrs = row_attributes(t, r)
        _box_el(el, f, t.box[r].tolist(), False, attrs)
        report.counts["box"] += 1
        # an outside keyframe closes the gap after f
        if ends:
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
