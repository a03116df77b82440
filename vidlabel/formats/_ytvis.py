"""YouTube-VIS 2019 / 2021 JSON (and its results files).

``videos[]`` (id, width, height, length, file_names), ``annotations[]`` (video_id, category_id,
bboxes, segmentations, one entry per frame of the video, ``null`` where the object is absent;
optional ``score``), ``categories[]`` (id, name; mapped **by name**: the ids differ between 2019
and 2021; ``label_map``, ``--label-map``, names category ids over them, or for a file without
``categories``). An annotation is one instance over the video: one track (our track ids in
annotation order per video). frame = position in ``file_names``, unless ``frames="digits"``,
or ``frames="auto"`` (the default) and the file names' digits show a stride (e.g. ``00000.jpg,
00005.jpg``): then the digits, with a note. Consecutive names that count from another number than 0
(``00001.jpg``, as ffmpeg numbers extracted frames) are positions too, with a note. ``bboxes`` are xywh; ``segmentations`` are polygons
(rasterised by pycocotools), list-count or string-count RLE; a frame with a segmentation is a
mask row (its box the mask's bbox), else a box row. OVIS's per-frame ``occlusion`` levels are the rows'
attribute ``occlusion`` (written back so). File names are only read as text: nothing
is opened.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from vidlabel._words import plural, shown
from vidlabel.dataset import Release

from ._cocovid import _cat_doc, _categories, needs_list, unknown_category
from ._common import (
    MARKER,
    MASK,
    MODEL,
    ImportContext,
    Parsed,
    VideoRows,
    check_frame_size,
    coco_segmentation,
    fail,
    float32_value,
    human_rows_of_model_track,
    json_key,
    mask_of,
    mixed_origin_reason,
    number,
    row_attributes,
    tracks_of,
    video_tables,
    whole_number,
    write_json,
    xywh_box,
)
from ._jsonstream import JsonSource, Section, read_json_file
from ._report import ExportLabelsReport

__all__ = ["export_ytvis", "import_ytvis"]

# ASCII digits only: a file name's digits of other scripts (U+0665) are no frame number
_DIGITS = re.compile(r"([0-9]+)(?!.*[0-9])")
#: Digits of a frame number a file name may hold (more would be past any video's frames).
_MAX_DIGITS = 18


def _frame_numbers(path: Path, at: str, names: list[Any], mode: str, notes: list[str]) -> list[int]:
    """Video frame of each file name: its position, or the digits of its base name."""
    position = list(range(len(names)))
    if mode == "position":
        return position
    digits: list[int | None] = []
    for k, name in enumerate(names):
        m = _DIGITS.search(PurePosixPath(str(name)).name)
        if m and len(m.group(1).lstrip("0")) > _MAX_DIGITS:
            raise fail(
                path,
                f"{at}.file_names[{k}]",
                f"{shown(name)} ends in a number of {len(m.group(1))} digits: no frame number has more than "
                f"{_MAX_DIGITS}",
            )
        digits.append(int(m.group(1)) if m else None)
    usable = None not in digits and all(b > a for a, b in itertools.pairwise(digits))  # type: ignore[operator]
    if mode == "digits":
        if not usable:
            raise fail(path, at, "frames='digits' but the file names' digits are missing or not increasing")
        return digits  # type: ignore[return-value]
    if not usable or len(names) < 2:
        return position
    steps = set(np.diff(digits).tolist())  # type: ignore[arg-type]
    if steps == {1}:  # no stride: the positions (00001.jpg first, as ffmpeg numbers, is frame 0)
        if digits[0] != 0:
            notes.append(
                f"{at}: the file names count from {digits[0]} ({names[0]!s:.40}, ...): frames taken as their "
                "positions (the first file is frame 0); frames='digits' takes the digits"
            )
        return position
    notes.append(
        f"{at}: frames taken from the file names' digits ({digits[0]}, {digits[1]}, ...; steps {sorted(steps)}), "
        "not their positions; frames='position' picks the positions"
    )
    return digits  # type: ignore[return-value]


#: The sections of a YouTube-VIS file, read in the file's order where what each needs is read.
_SECTIONS = ("categories", "videos", "annotations")


def import_ytvis(ctx: ImportContext) -> Parsed:
    """Read a YouTube-VIS file (see the module docstring)."""
    mode = ctx.option("frames", "auto", ("auto", "position", "digits"))
    return read_json_file(ctx, dict, lambda source, parsed: _Reader(ctx, mode, parsed).read(source), _SECTIONS)


class _Reader:
    """What reading one YouTube-VIS file carries from section to section."""

    def __init__(self, ctx: ImportContext, mode: str, parsed: Parsed) -> None:
        self.ctx, self.path, self.mode, self.parsed = ctx, ctx.path, mode, parsed
        self.cats: dict[int, str] = {}
        self.vids: dict[Any, tuple[VideoRows, list[int]]] = {}

    def read(self, source: JsonSource) -> None:
        source.sections([
            Section("categories", self._categories, items=False),
            Section("videos", self._videos, items=False),
            Section("annotations", self._annotations, ("videos", "categories")),
        ])  # fmt: skip

    def _categories(self, value: Any) -> None:
        self.cats = _categories(self.path, value, self.ctx, self.parsed.notes)

    def _videos(self, value: Any) -> None:
        needs_list(self.path, "YouTube-VIS", "videos", value)
        self.vids = _read_videos(self.path, value, self.ctx, self.mode, self.parsed)

    def _annotations(self, value: Any) -> None:
        needs_list(self.path, "YouTube-VIS", "annotations", value)
        next_track: dict[str, int] = {}
        not_stored: Counter[str] = Counter()
        for i, a in value:
            self._annotation(f"annotations[{i}]", a, next_track, not_stored)
            # an instance's per-frame lists are let go before the next instance is parsed, not beside it
            del a
        if not_stored:
            listed = ", ".join(f"{key} (on {plural(n, 'instance')})" for key, n in sorted(not_stored.items()))
            self.parsed.notes.append(f"per-instance fields not stored: {listed}")

    def _annotation(self, at: str, a: Any, next_track: dict[str, int], not_stored: Counter[str]) -> None:
        """The rows of one instance (``annotations[i]``), its track numbered after the video's earlier ones."""
        path, vids, cats, parsed = self.path, self.vids, self.cats, self.parsed
        if not isinstance(a, dict) or json_key(path, at, a.get("video_id"), "video_id") not in vids:
            raise fail(path, at, f"video_id {a.get('video_id') if isinstance(a, dict) else a!r} is not in videos[]")
        vr, frames = vids[a["video_id"]]
        cat = json_key(path, at, a.get("category_id"), "category_id")
        if cat not in cats:
            raise unknown_category(path, at, cat, cats)
        bboxes, segs = _per_frame_lists(path, at, a, len(frames))
        vid = vr.meta.video_id
        track = next_track.get(vid, 0)
        next_track[vid] = track + 1
        origin: dict[str, Any] = {}
        if a.get("score") is not None:
            origin = {"origin": "model", "confidence": number(path, at, a["score"], "score")}
        if a.get("iscrowd"):
            parsed.skipped["iscrowd annotation"] += 1
            return
        for key in _NOT_STORED:
            if a.get(key) is not None:
                not_stored[key] += 1
        occlusion = _occlusion(path, at, a.get("occlusion"), len(frames))
        if occlusion is not None:
            parsed.declare(cats[cat], "occlusion", "number")
        _instance_rows(
            path, at, (bboxes, segs, occlusion), frames, vr, cats[cat], {"track_id": track, **origin}, parsed
        )


def _read_videos(
    path: Path, videos: list[Any], ctx: ImportContext, mode: str, parsed: Parsed
) -> dict[Any, tuple[VideoRows, list[int]]]:
    """The file's ``videos[]``: video key -> (rows of the dataset video it resolves to, frame of each file name)."""
    vids: dict[Any, tuple[VideoRows, list[int]]] = {}
    for i, v in enumerate(videos):
        at = f"videos[{i}]"
        if not isinstance(v, dict) or "id" not in v or not isinstance(v.get("file_names"), list):
            raise fail(path, at, "a video needs an id and a list file_names")
        names = v["file_names"]
        folder = (
            PurePosixPath(str(names[0])).parts[0] if names and len(PurePosixPath(str(names[0])).parts) > 1 else None
        )
        vkey = json_key(path, at, v["id"], "id")
        if vkey in vids:
            raise fail(path, at, f"video id {vkey!r} repeats")
        m = ctx.resolve([vkey, folder], len(videos), at)
        check_frame_size(path, at, v, m)
        if v.get("length") is not None and whole_number(path, at, v["length"], "length") != len(names):
            # the frames of a video are its file_names (each annotation's lists follow them): a length that
            # says otherwise is a file cut or edited by hand
            raise fail(path, at, f"length {v['length']!r} disagrees with its {len(names)} file_names")
        vids[vkey] = (
            parsed.videos.setdefault(m.video_id, VideoRows(m)),
            _frame_numbers(path, at, names, mode, parsed.notes),
        )
    return vids


def _per_frame_lists(path: Path, at: str, a: dict[str, Any], n: int) -> tuple[list[Any], list[Any]]:
    """An instance's ``bboxes`` and ``segmentations``, each one entry per file name of its video's ``n``."""
    # absent (or an empty list): none; {}, "" or 0 are no lists and are refused below, not read as absent
    bboxes, segs = (
        [None] * n if a.get(key) is None or a.get(key) == [] else a[key] for key in ("bboxes", "segmentations")
    )
    for key, seq in (("bboxes", bboxes), ("segmentations", segs)):
        if not isinstance(seq, list) or len(seq) != n:
            raise fail(
                path,
                at,
                f"{key} has {len(seq) if isinstance(seq, list) else seq!r} entries; the video has {n} file_names",
            )
    return bboxes, segs


def _instance_rows(
    path: Path,
    at: str,
    lists: tuple[list[Any], list[Any], list[float | None] | None],
    frames: list[int],
    vr: VideoRows,
    label: str,
    shared: dict[str, Any],
    parsed: Parsed,
) -> None:
    """A row per file name where an instance has a box or a mask; ``lists`` are its bboxes, segmentations and
    occlusion levels, ``shared`` the track and origin fields its rows share."""
    bboxes, segs, occlusion = lists
    for k, (box, seg) in enumerate(zip(bboxes, segs)):
        if box is None and seg is None:
            continue
        where = f"{at} frame index {k}"
        row: dict[str, Any] = {"kind": "box", "label": label, "start_frame": frames[k], **shared}
        rle = None
        if seg is not None:
            rle = coco_segmentation(
                path, where, seg, vr.meta.height, vr.meta.width, parsed.skipped, box_kept=box is not None
            )
            if rle is None and box is None:
                continue
        if rle is not None:
            row["kind"], row["mask"] = "mask", rle
        else:
            row["box"] = xywh_box(path, where, box, "bboxes entry")
        if occlusion is not None and occlusion[k] is not None:
            row["attributes"] = {"occlusion": occlusion[k]}
        vr.add(row, where)


#: Per-instance fields of YouTube-VIS-shaped files that no row holds: the import names them in its notes.
_NOT_STORED = ("occluded", "attributes")


def _occlusion(path: Path, at: str, value: Any, n: int) -> list[float | None] | None:
    """OVIS's per-frame ``occlusion`` levels of an instance (0 none, 1 slight, 2 severe; null where absent),
    one per file name, kept as the rows' attribute ``occlusion``."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n:
        raise fail(path, at, f"occlusion is {str(value)[:40]!r}; expected a list of {n} levels (one a file name)")
    return [None if v is None else number(path, f"{at} frame index {k}", v, "occlusion") for k, v in enumerate(value)]


def export_ytvis(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """One YouTube-VIS JSON file: a file name per frame, an instance per track, ``null`` where absent."""
    t = release.table
    report = ExportLabelsReport("ytvis", release.release_id)
    doc: dict[str, Any] = {"categories": _cat_doc(release), "videos": [], "annotations": []}
    ann_id = 1
    for vi, vt in enumerate(video_tables(release, videos), 1):
        meta = vt.meta
        n = meta.frame_count
        doc["videos"].append({
            "id": vi, "width": meta.width, "height": meta.height, "length": n,
            "file_names": [f"{meta.video_id}/{f:05d}.jpg" for f in range(n)],
        })  # fmt: skip
        rows = vt.rows
        kind = t.kind[rows]
        if (kind == MARKER).any():
            report.not_written["marker (YouTube-VIS holds no markers)"] += int((kind == MARKER).sum())
        untracked = 0
        for track, trows in tracks_of(t, rows[kind != MARKER]).items():
            bboxes, segs, occlusion = _track_frames(release, trows, n, report)
            first = int(trows[0])
            a: dict[str, Any] = {
                "id": ann_id, "video_id": vi, "category_id": int(t.label[first]) + 1, "iscrowd": 0,
                "bboxes": bboxes, "segmentations": segs,
                "areas": [None if b is None else b[2] * b[3] for b in bboxes],
            }  # fmt: skip
            if any(v is not None for v in occlusion):  # OVIS's per-frame occlusion levels
                a["occlusion"] = occlusion
            if (t.origin[trows] == MODEL).any():
                a["score"] = _instance_score(release, trows, report)
            if track < 0:
                untracked += 1
            doc["annotations"].append(a)
            ann_id += 1
        if untracked:
            report.notes.append(f"video {meta.video_id!r}: {untracked} untracked rows written as one-frame instances")
    report.notes = sorted(set(report.notes))
    write_json(out, doc)
    report.paths.append(str(out))
    return report


def _track_frames(
    release: Release, trows: np.ndarray, n: int, report: ExportLabelsReport
) -> tuple[list[Any], list[Any] | None, list[Any]]:
    """A track's per-frame ``bboxes``, ``segmentations`` (None without masks) and ``occlusion`` over ``n`` frames,
    a mask winning over a box on the same frame."""
    t = release.table
    bboxes: list[Any] = [None] * n
    segs: list[Any] = [None] * n
    occlusion: list[Any] = [None] * n
    has_mask = False
    order = sorted(trows.tolist(), key=lambda r: (int(t.start_frame[r]), int(t.kind[r]) != MASK))
    for r in order:
        f = int(t.start_frame[r])
        if bboxes[f] is not None:
            report.not_written["row on a frame its track already holds (YouTube-VIS holds one per frame)"] += 1
            continue
        x0, y0, x1, y1 = t.box[r].tolist()
        bboxes[f] = [x0, y0, x1 - x0, y1 - y0]
        attrs = row_attributes(t, r)
        occlusion[f] = attrs.get("occlusion")
        others = sorted(k for k in attrs if k != "occlusion")
        if others:
            report.not_written[f"attributes other than occlusion ({', '.join(others)}: YouTube-VIS holds none)"] += 1
        if t.kind[r] == MASK:
            segs[f] = mask_of(t, r)
            has_mask = True
        report.counts["mask" if t.kind[r] == MASK else "box"] += 1
    return bboxes, segs if has_mask else None, occlusion


def _instance_score(release: Release, trows: np.ndarray, report: ExportLabelsReport) -> float | None:
    """A model track's score: the mean of its confidences, None without any (the instance reads back as human)."""
    t = release.table
    model = t.origin[trows] == MODEL
    conf = t.confidence[trows].astype(np.float64)
    score = float32_value(np.nanmean(conf)) if np.isfinite(conf).any() else None
    mixed = human_rows_of_model_track(t, trows)
    if mixed and score is not None:  # the score makes every row of the instance a model row
        report.not_written[mixed_origin_reason("YouTube-VIS")] += mixed
    if score is None:  # no score: the instance reads back as human
        why = "origin of model rows without a confidence (a YouTube-VIS instance is a model's by its score)"
        report.not_written[why] += int(model.sum())
    if len(set(conf[np.isfinite(conf)].tolist())) > 1:
        report.notes.append("a model track's confidences differ per frame: its score is their mean")
    return score
