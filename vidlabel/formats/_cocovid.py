"""COCO-VID (mmtracking ``CocoVID``, ImageNet-VID style) JSON.

``videos[]`` (id, name), ``images[]`` (id, video_id, frame_id, width, height), ``annotations[]``
(image_id, category_id, instance_id, bbox xywh, optional segmentation, optional score),
``categories[]`` (id, name). frame = ``images[].frame_id``, 0-based and dense per video (a gap
or a 1-based file is refused with the evidence), unless the image has TAO's ``frame_index`` (the 0-based
frame in the video, checked against its length; a note says so) or mmtracking's ``mot_frame_id`` (the
sequence's 1-based frame, which ``frame_id`` of a half split is not): then ``mot_frame_id - 1``; track =
``instance_id`` (per video; -1 or absent: untracked); categories are mapped by **name**, and ``label_map``
(``--label-map``) names category ids over them (a file without ``categories``); TAO's per-video
``neg_category_ids`` and ``not_exhaustive_category_ids`` are named in the notes; an annotation with a ``segmentation``
(polygons, list-count or string-count RLE) is a mask row (its box is the mask's bbox), else a
box row; a ``score`` makes it a model row with that confidence. ``iscrowd`` and ``ignore`` annotations (ignored
regions, as mmtracking's ``CocoVideoDataset`` reads them) are counted, not imported; ``occluded`` and
``truncated`` (0/1 or true/false), ``visibility`` and Datumaro's ``attributes`` object are the row's attributes
(written back so); ``generated`` is not stored, which the report's notes say.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.dataset import Release
from vidlabel.errors import FormatError

from ._common import (
    BOX,
    MARKER,
    MASK,
    MODEL,
    ImportContext,
    Parsed,
    VideoRows,
    Where,
    check_frame_size,
    coco_segmentation,
    fail,
    float32_value,
    integer,
    json_key,
    mask_of,
    number,
    row_attributes,
    video_tables,
    write_json,
    xywh_boxes,
)
from ._jsonstream import Items, JsonSource, Section, read_json_file
from ._report import ExportLabelsReport

__all__ = ["export_cocovid", "import_cocovid"]


#: Per-annotation fields of COCO-VID files that no row holds (ImageNet-VID's ``generated``): the import says
#: which it left out.
_NOT_STORED = ("generated",)
#: Per-annotation fields kept as the row's attributes: ImageNet-VID's ``occluded`` and ``truncated`` (0/1 or
#: true/false: bool), mmtracking's mot2coco ``visibility`` (a number); and Datumaro's ``attributes`` object,
#: each value by its JSON type.
_FLAGS = ("occluded", "truncated")


def _json_kind(value: Any) -> str | None:
    """The attribute type of a JSON value: "bool", "number", "text", or None for another (a list, null)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "text" if isinstance(value, str) else None


def annotation_attributes(path: Path, where: Where, a: dict[str, Any], label: str, parsed: Parsed) -> dict[str, Any]:
    """The attributes of a COCO-VID annotation (see ``_FLAGS``), declared in ``parsed`` for ``label``."""
    out: dict[str, Any] = {}
    for key in _FLAGS:
        value = a.get(key)
        if value is None:
            continue
        if not (isinstance(value, bool) or (type(value) is int and value in (0, 1))):
            raise fail(path, where, f"{key} is {value!r}; expected 0, 1, true or false")
        out[key] = bool(value)
    if a.get("visibility") is not None:
        out["visibility"] = number(path, where, a["visibility"], "visibility")
    extra = a.get("attributes")
    if isinstance(extra, dict):
        for key, value in extra.items():
            kind = _json_kind(value)
            if kind is None:
                raise fail(path, where, f"attributes.{key} is {str(value)[:40]!r}; expected a bool, number or string")
            out[key] = value
    elif extra is not None:
        raise fail(path, where, f"attributes is {str(extra)[:40]!r}; expected an object of name -> value")
    for key, value in out.items():
        kind = _json_kind(value)
        known = parsed.declare(label, key, kind)  # type: ignore[arg-type]
        # name this row: the first row's type is the attribute's, so a later row of another type is the odd one
        if known != kind:
            raise fail(
                path, where, f"attribute {key!r} is {shown(value)} ({kind}); earlier {label!r} rows give {known}"
            )
    return out


def attributes_doc(attrs: dict[str, Any]) -> dict[str, Any]:
    """A row's attributes as COCO-VID annotation fields: ``occluded`` / ``truncated`` as 0/1 and ``visibility``
    where they have those types, every other under ``attributes``."""
    out: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in attrs.items():
        if key in _FLAGS and isinstance(value, bool):
            out[key] = int(value)
        elif key == "visibility" and not isinstance(value, bool | str):
            out[key] = value
        else:
            rest[key] = value
    if rest:
        out["attributes"] = rest
    return out


def _categories(
    path: Path, cats: Any, ctx: ImportContext | None = None, notes: list[str] | None = None
) -> dict[int, str]:
    """Category id -> label: the file's ``categories[]`` (``cats``; None when absent), with ``ctx.label_map``
    (``--label-map``) naming ids over them (a file without ``categories``, or one whose names the dataset spells
    otherwise)."""
    out: dict[int, str] = {}
    for i, c in enumerate(cats if isinstance(cats, list) else []):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise fail(path, f"categories[{i}]", f"{str(c)[:60]!r} needs an id and a name")
        cid = integer(path, f"categories[{i}]", c.get("id"), "category id")
        if cid in out:
            raise fail(path, f"categories[{i}]", f"category id {cid} repeats ({out[cid]!r}, {c['name']!r})")
        out[cid] = c["name"]
    label_map = ctx.label_map if ctx is not None else None
    if label_map:
        renamed = sorted(k for k in label_map if k in out and out[k] != label_map[k])
        if notes is not None:
            over = f" (over the file's categories for ids {renamed})" if renamed else ""
            notes.append(
                f"category ids named by label_map{over}: " + ", ".join(f"{k}={v}" for k, v in sorted(label_map.items()))
            )
        out.update(label_map)
    return out


def unknown_category(path: Path, where: Where, cat: Any, cats: dict[int, str]) -> FormatError:
    """The error of an annotation whose category id no category (nor ``label_map``) names."""
    hint = "" if cats else "; the file has no categories: name the ids with label_map (--label-map 1=person,...)"
    return fail(path, where, f"category_id {cat!r} is not in categories[] (ids {sorted(cats)}){hint}")


def needs_list(path: Path, tool: str, key: str, value: Any) -> None:
    """The FormatError of a top-level section that is no list (None: absent)."""
    if not isinstance(value, list | Items):
        raise fail(path, key, f"a {tool} file needs a list {key!r}, got {type(value).__name__}")


#: The sections of a COCO-VID file, read in the file's order where what each needs is read.
_SECTIONS = ("categories", "videos", "images", "annotations")


def import_cocovid(ctx: ImportContext) -> Parsed:
    """Read a COCO-VID file (see the module docstring)."""
    return read_json_file(ctx, dict, lambda source, parsed: _Reader(ctx, parsed).read(source), _SECTIONS)


#: An image of the file: its video's rows, its video frame, its position in ``images[]``, whether it gives
#: ``mot_frame_id`` (the frame said 1-based in an error).
_Image = tuple[VideoRows, int, int, bool]

#: Annotations whose boxes are converted at once (one NumPy pass) before their rows are added.
_BOX_BATCH = 4096


class _Reader:
    """What reading one COCO-VID file carries from section to section."""

    def __init__(self, ctx: ImportContext, parsed: Parsed) -> None:
        self.ctx, self.path, self.parsed = ctx, ctx.path, parsed
        self.cats: dict[int, str] = {}
        self.vids: dict[Any, VideoRows] = {}
        self.images: dict[Any, _Image] = {}

    def read(self, source: JsonSource) -> None:
        source.sections([
            Section("categories", self._categories, items=False),
            Section("videos", self._videos, ("categories",), items=False),
            Section("images", self._images, ("videos",)),
            Section("annotations", self._annotations, ("images", "categories")),
        ])  # fmt: skip

    def _categories(self, value: Any) -> None:
        self.cats = _categories(self.path, value, self.ctx, self.parsed.notes)

    def _videos(self, value: Any) -> None:
        needs_list(self.path, "COCO-VID", "videos", value)
        self.vids = _read_videos(self.path, value, self.ctx, self.cats, self.parsed)

    def _images(self, value: Any) -> None:
        needs_list(self.path, "COCO-VID", "images", value)
        self.images = _read_images(self.path, value, self.vids, self.parsed)

    def _annotations(self, value: Any) -> None:
        needs_list(self.path, "COCO-VID", "annotations", value)
        _read_annotations(self.path, value, self.images, self.cats, self.parsed)


def _read_videos(
    path: Path, videos: list[Any], ctx: ImportContext, cats: dict[int, str], parsed: Parsed
) -> dict[Any, VideoRows]:
    """The file's ``videos[]``: video key -> the rows of the dataset video it resolves to."""
    vids: dict[Any, VideoRows] = {}
    for i, v in enumerate(videos):
        if not isinstance(v, dict) or "id" not in v:
            raise fail(path, f"videos[{i}]", f"{str(v)[:60]!r} needs an id")
        key = json_key(path, f"videos[{i}]", v["id"], "id")
        if key in vids:
            raise fail(path, f"videos[{i}]", f"video id {key!r} repeats")
        m = ctx.resolve([key, v.get("name")], len(videos), f"videos[{i}]")
        check_frame_size(path, f"videos[{i}]", v, m)  # as the images' sizes are below
        vids[key] = parsed.videos.setdefault(m.video_id, VideoRows(m))
        _tao_category_lists(path, i, v, cats, parsed.notes)
    return vids


def _read_images(path: Path, items: Items, vids: dict[Any, VideoRows], parsed: Parsed) -> dict[Any, _Image]:
    """The file's ``images[]``: image id -> (video rows, video frame, position in ``images[]``, mot_frame_id)."""
    images: dict[Any, _Image] = {}
    frames: dict[Any, tuple[array[int], array[int]]] = {}  # video key -> (frame_id, position in images[]) each
    mot_frames: dict[Any, dict[int, int]] = {}  # video key -> mot_frame_id -> position in images[]
    moved: dict[Any, tuple[int, int]] = {}  # video key -> (frame_id, mot_frame_id) of its first image that differs
    frame_index: dict[Any, dict[int, int]] = {}  # video key -> TAO frame_index -> position in images[]
    by_index: dict[Any, tuple[int, int]] = {}  # video key -> (frame_id, frame_index) of its first image that differs
    for i, im in items:
        at = f"images[{i}]"
        if not isinstance(im, dict):
            raise fail(path, at, "an image must be an object")
        if json_key(path, at, im.get("video_id"), "video_id") not in vids:
            raise fail(path, at, f"video_id {im.get('video_id')!r} is not in videos[] (ids {list(vids)[:10]})")
        vr = vids[im["video_id"]]
        tao = im.get("frame_index") is not None
        f = integer(path, at, im.get("frame_id", -1 if tao else None), "frame_id")
        check_frame_size(path, at, im, vr.meta)
        image_id = json_key(path, at, im.get("id"), "id")
        if image_id in images:
            raise fail(path, at, f"image id {image_id!r} repeats (images[{images[image_id][2]}] has it too)")
        if "frame_id" in im:
            ids, places = frames.setdefault(im["video_id"], (array("q"), array("q")))
            ids.append(f)
            places.append(i)
        if tao:  # TAO: the frame in the video, where frame_id counts the annotated images only
            f = _frame_index(path, i, im, f, vr, frame_index.setdefault(im["video_id"], {}), by_index)
        elif "mot_frame_id" in im:  # mmtracking's MOT frame (1-based): the sequence's frame, where frame_id is not
            f = _mot_frame(path, i, im, f, mot_frames.setdefault(im["video_id"], {}), moved)
        images[image_id] = (vr, f, i, "mot_frame_id" in im)
    _check_dense_frame_ids(path, frames)
    _frame_source_notes(vids, moved, by_index, parsed.notes)
    return images


def _check_dense_frame_ids(path: Path, frames: dict[Any, tuple[array[int], array[int]]]) -> None:
    """Each video's ``frame_id``s (with their positions in ``images[]``) must be 0, 1, 2, ..."""
    for v, (ids_in_file, places_in_file) in frames.items():
        places = np.frombuffer(places_in_file, dtype=np.int64)
        ids_all = np.frombuffer(ids_in_file, dtype=np.int64)
        order = np.lexsort((places, ids_all))
        ids, at = ids_all[order], places[order]
        if ids[0] != 0:
            raise fail(
                path,
                f"images[{at[0]}]",
                f"video {v!r}: the lowest frame_id is {ids[0]}; COCO-VID frame_id is 0-based (a 1-based file?)",
            )
        gaps = np.flatnonzero(np.diff(ids) != 1)
        if gaps.size:
            j = int(gaps[0])
            raise fail(
                path,
                f"images[{at[j + 1]}]",
                f"video {v!r}: frame_id {ids[j + 1]} follows {ids[j]}; frame_id must be dense (0, 1, 2, ...)",
            )


def _frame_source_notes(
    vids: dict[Any, VideoRows],
    moved: dict[Any, tuple[int, int]],
    by_index: dict[Any, tuple[int, int]],
    notes: list[str],
) -> None:
    """A note per video whose frames come from ``mot_frame_id`` or ``frame_index`` rather than ``frame_id``."""
    for v, (frame_id, mot) in moved.items():
        notes.append(
            f"video {v!r}: frames taken from the images' mot_frame_id - 1 (mmtracking's MOT frame, 1-based), not "
            f"frame_id: frame_id {frame_id} is mot_frame_id {mot}, video frame {mot - 1} (a half split of a sequence)"
        )
    for v, (frame_id, index) in by_index.items():
        notes.append(
            f"video {v!r}: frames taken from the images' frame_index (TAO's 0-based frame in the video, checked "
            f"against the video's {vids[v].meta.frame_count} frames), not frame_id: frame_id {frame_id} is "
            f"frame_index {index}"
        )


def _read_annotations(
    path: Path, items: Items, images: dict[Any, _Image], cats: dict[int, str], parsed: Parsed
) -> None:
    """The file's ``annotations[]`` as rows of their videos; crowd and ignored regions counted as skipped."""
    not_stored: Counter[str] = Counter()
    pending = _Pending()
    for i, a in items:
        where: Where = ("annotations", i)
        vr, frame, label = _annotation_target(path, where, a, images, cats)
        if a.get("iscrowd"):
            parsed.skipped["iscrowd annotation"] += 1
            continue
        if a.get("ignore"):  # mmtracking's CocoVideoDataset (and mmdet) take these as ignored regions, as iscrowd
            parsed.skipped["ignore annotation (an ignored region, as iscrowd)"] += 1
            continue
        for key in _NOT_STORED:
            if key in a:
                not_stored[key] += 1
        row = _annotation_row(path, where, a, label, frame, vr, parsed, pending)
        if row is not None:
            pending.add(path, vr, row, where)
    pending.flush(path)
    if not_stored:
        listed = ", ".join(f"{key} (on {n})" for key, n in sorted(not_stored.items()))
        parsed.notes.append(f"annotation fields not stored: {listed}")


@dataclass
class _Pending:
    """Rows read but not yet added, in the file's order; the boxes of box rows are converted in one NumPy pass
    per ``_BOX_BATCH`` rows before they are."""

    rows: list[tuple[VideoRows, dict[str, Any], Where]] = field(default_factory=list)
    #: for each box row: its position in ``rows``, its bbox as given
    boxes: list[tuple[int, Any]] = field(default_factory=list)

    def box(self, value: Any) -> None:
        """The row about to be added is a box row with ``value`` as its bbox."""
        self.boxes.append((len(self.rows), value))

    def add(self, path: Path, vr: VideoRows, row: dict[str, Any], where: Where) -> None:
        self.rows.append((vr, row, where))
        if len(self.rows) >= _BOX_BATCH:
            self.flush(path)

    def flush(self, path: Path) -> None:
        if self.boxes:
            values = [v for _, v in self.boxes]
            wheres = [self.rows[k][2] for k, _ in self.boxes]
            for (k, _), box in zip(self.boxes, xywh_boxes(path, values, wheres)):
                self.rows[k][1]["box"] = box
        for vr, row, where in self.rows:
            vr.add(row, where)
        self.rows.clear()
        self.boxes.clear()


def _annotation_target(
    path: Path, where: Where, a: Any, images: dict[Any, _Image], cats: dict[int, str]
) -> tuple[VideoRows, int, str]:
    """An annotation's video rows, video frame and label, checked against its image and the categories."""
    if type(a) is not dict:
        raise fail(path, where, "an annotation must be an object")
    try:
        found = images.get(a.get("image_id"))
        cat: Any = a.get("category_id")
        label = cats.get(cat)
    except TypeError:  # a list or an object as the id
        for key in ("image_id", "category_id"):
            json_key(path, where, a.get(key), key)
        raise
    if found is None:
        raise fail(path, where, f"image_id {a.get('image_id')!r} is not in images[]")
    vr, frame, im_at, mot = found
    n = vr.meta.frame_count
    if not 0 <= frame < n:  # said as the image gives it: frame_id 0-based, mot_frame_id 1-based
        given = (
            f"mot_frame_id {frame + 1} (1-based), outside video {vr.meta.video_id!r}: mot_frame_id 1..{n}"
            if mot
            else f"frame_id {frame}, outside video {vr.meta.video_id!r}: frame_id 0..{n - 1}"
        )
        raise fail(path, where, f"its image images[{im_at}] (id {a['image_id']!r}) has {given} ({n} frames)")
    if label is None:
        raise unknown_category(path, where, cat, cats)
    return vr, frame, label


def _annotation_row(
    path: Path,
    where: Where,
    a: dict[str, Any],
    label: str,
    frame: int,
    vr: VideoRows,
    parsed: Parsed,
    pending: _Pending,
) -> dict[str, Any] | None:
    """The row of an annotation (a box left for ``pending``, or a mask), or None for a segmentation skipped whole."""
    row: dict[str, Any] = {"kind": "box", "label": label, "start_frame": frame}
    attrs = annotation_attributes(path, where, a, label, parsed)
    if attrs:
        row["attributes"] = attrs
    seg = a.get("segmentation")
    rle = None
    if seg:
        has_box = a.get("bbox") is not None
        rle = coco_segmentation(path, where, seg, vr.meta.height, vr.meta.width, parsed.skipped, box_kept=has_box)
        if rle is None and not has_box:
            return None
    if rle is not None:
        row["kind"], row["mask"] = "mask", rle
    else:
        pending.box(a.get("bbox"))
    inst = a.get("instance_id")
    if inst is None:  # absent or null: untracked
        inst = -1
    if type(inst) is not int:
        integer(path, where, inst, "instance_id")
    if inst >= 0:
        row["track_id"] = inst
    if a.get("score") is not None:
        row["origin"], row["confidence"] = "model", number(path, where, a["score"], "score")
    return row


def _frame_index(
    path: Path, i: int, im: dict[str, Any], frame_id: int, vr: VideoRows, seen: dict[int, int],
    by_index: dict[Any, tuple[int, int]],
) -> int:  # fmt: skip
    """The video frame of a TAO image: its ``frame_index`` (0-based), within the registered video's frames and
    given once per video."""
    at = f"images[{i}]"
    index = integer(path, at, im["frame_index"], "frame_index")
    n = vr.meta.frame_count
    if not 0 <= index < n:
        raise fail(
            path,
            at,
            f"frame_index {index} is outside video {vr.meta.video_id!r}: frame_index 0..{n - 1} ({n} frames; "
            "TAO's frame_index is the 0-based frame in the video)",
        )
    if index in seen:
        raise fail(
            path, at, f"video {im['video_id']!r}: frame_index {index} repeats (images[{seen[index]}] has it too)"
        )
    seen[index] = i
    if index != frame_id:
        by_index.setdefault(im["video_id"], (frame_id, index))
    return index


#: TAO's per-video category lists: categories checked absent from the video, and categories not every
#: instance of which is labelled. No row holds them; the import names them in its notes.
_TAO_LISTS = {
    "neg_category_ids": "checked absent from the video",
    "not_exhaustive_category_ids": "not every instance labelled",
}


def _tao_category_lists(path: Path, i: int, video: dict[str, Any], cats: dict[int, str], notes: list[str]) -> None:
    """A note per TAO category list of a video (``neg_category_ids``, ``not_exhaustive_category_ids``): what it
    says of which categories, by name where the file names them."""
    for key, meaning in _TAO_LISTS.items():
        ids = video.get(key)
        if not ids:
            continue
        if not isinstance(ids, list):
            raise fail(path, f"videos[{i}]", f"{key} is {str(ids)[:40]!r}; expected a list of category ids")
        named = ", ".join(cats.get(c, str(c)) if isinstance(c, int) else repr(c) for c in ids[:20])
        more = f", ... ({len(ids)} in all)" if len(ids) > 20 else ""
        notes.append(f"videos[{i}] (id {video.get('id')!r}) {key} ({meaning}), not stored: {named}{more}")


def _mot_frame(
    path: Path, i: int, im: dict[str, Any], frame_id: int, seen: dict[int, int], moved: dict[Any, tuple[int, int]]
) -> int:
    """The video frame of an image with mmtracking's ``mot_frame_id``: ``mot_frame_id - 1``.

    mmtracking's ``mot2coco`` numbers ``frame_id`` from 0 within a half split of a sequence and keeps the
    sequence's own 1-based frame (its file name) as ``mot_frame_id``, which its ``MOTChallengeDataset`` writes
    results at: ``frame_id`` of a "half-val" file is not the video frame.
    """
    at = f"images[{i}]"
    mot = integer(path, at, im["mot_frame_id"], "mot_frame_id")
    if mot < 1:
        raise fail(path, at, f"mot_frame_id {mot} is not a MOT frame (1-based: 1, 2, ...)")
    if mot in seen:
        raise fail(path, at, f"video {im['video_id']!r}: mot_frame_id {mot} repeats (images[{seen[mot]}] has it too)")
    seen[mot] = i
    if mot - 1 != frame_id:
        moved.setdefault(im["video_id"], (frame_id, mot))
    return mot - 1


def _cat_doc(release: Release) -> list[dict[str, Any]]:
    return [{"id": i + 1, "name": name} for i, name in enumerate(release.labels)]


_NO_SCORE = "origin of model rows without a confidence (a COCO-VID annotation is a model's by its score)"


def export_cocovid(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """One COCO-VID JSON file: an image per frame of each video, an annotation per box or mask row."""
    t = release.table
    report = ExportLabelsReport("coco-vid", release.release_id)
    doc: dict[str, Any] = {"categories": _cat_doc(release), "videos": [], "images": [], "annotations": []}
    image_id = 0
    ann_id = 1
    anns = doc["annotations"]
    for vi, vt in enumerate(video_tables(release, videos), 1):
        meta = vt.meta
        doc["videos"].append({"id": vi, "name": meta.video_id, "width": meta.width, "height": meta.height})
        first = image_id + 1
        doc["images"].extend(
            {
                "id": first + f,
                "video_id": vi,
                "frame_id": f,
                "file_name": f"{meta.video_id}/{f:06d}.jpg",
                "width": meta.width,
                "height": meta.height,
            }
            for f in range(meta.frame_count)
        )
        image_id += meta.frame_count
        rows = vt.rows
        kind = t.kind[rows]
        n_markers = int((kind == MARKER).sum())
        if n_markers:
            report.not_written["marker (COCO-VID holds no markers)"] += n_markers
        sel = rows[kind != MARKER]
        written = _annotation_docs(release, sel, vi, first, ann_id, report)
        anns.extend(written)
        ann_id += len(written)
        report.counts["box"] += int((t.kind[sel] == BOX).sum())
        report.counts["mask"] += int((t.kind[sel] == MASK).sum())
    report.notes = sorted(set(report.notes))
    write_json(out, doc)
    report.paths.append(str(out))
    return report


def _annotation_docs(
    release: Release, sel: np.ndarray, vi: int, first: int, ann_id: int, report: ExportLabelsReport
) -> list[dict[str, Any]]:
    """The COCO-VID annotations of the table rows ``sel`` of video ``vi`` (its first image id ``first``), numbered
    from ``ann_id``; model rows without a confidence counted in ``report``."""
    t = release.table
    b = t.box[sel]
    xywh = np.column_stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]]).tolist()
    frames = t.start_frame[sel].tolist()
    cats = (t.label[sel] + 1).tolist()
    tracks = t.track_id[sel].tolist()
    is_mask = (t.kind[sel] == MASK).tolist()
    model = (t.origin[sel] == MODEL).tolist()
    conf = t.confidence[sel].tolist()
    anns = []
    for j, r in enumerate(sel.tolist()):
        w, h = xywh[j][2], xywh[j][3]
        a: dict[str, Any] = {
            "id": ann_id,
            "image_id": first + frames[j],
            "video_id": vi,
            "category_id": cats[j],
            "instance_id": tracks[j],
            "bbox": xywh[j],
            "area": w * h,
            "iscrowd": 0,
        }
        if is_mask[j]:
            a["segmentation"] = mask_of(t, r)
        a.update(attributes_doc(row_attributes(t, r)))
        if model[j]:
            a["score"] = None if conf[j] != conf[j] else float32_value(conf[j])
            if a["score"] is None:  # no score: the annotation reads back as human
                report.not_written[_NO_SCORE] += 1
                del a["score"]
        anns.append(a)
        ann_id += 1
    return anns
