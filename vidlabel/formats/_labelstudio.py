"""Label Studio video JSON export (``videorectangle``, ``timelinelabels``).

A list of tasks, each one video; its ``annotations[].result`` (human) and ``predictions[].result``
(origin ``model``, ``score`` of the result, else of the prediction, as confidence). A
``videorectangle`` region's ``value.sequence`` holds keyframes: ``frame`` is 1-based; ``x, y,
width, height`` are percent of the displayed frame (pixels from the registered video's size; a negative width or height, a box
drawn leftward or upward, is taken from its other corner, as Label Studio shows it, and noted);
boxes are linear between keyframes; after the last keyframe the box holds to the end of the
video; a keyframe with ``enabled: false`` ends the span **after** that frame (the object is on
that frame; ``enabled`` must be true or false). Region string ids become integer tracks in order of first
appearance (per video), each annotation's and each prediction's apart (an annotation made from a prediction
keeps the prediction's region ids). Two keyframes of a region on one frame are refused.
Per-region ``choices``, ``textarea`` and ``number`` results (sharing a videorectangle's id) are the attributes of
its rows, named by their ``from_name``; the export writes a track's text and number attributes that keep one
value over the track so, and the others (bools, values that change along the track) as an ``attributes``
object of each keyframe (vidlabel's own key, read back by the import; a keyframe's attributes hold to the
next keyframe). ``timelinelabels`` ranges (1-based, inclusive) become markers. ``framesCount`` (legacy
``frameCount``) that disagrees with the registered frame count is an error naming both
(``frames_count_mismatch="warn"``: a warning and a note instead). Rotated rectangles are not
imported (counted), nor are regions without keyframes (an empty ``value.sequence``). Which task is
which video: ``video_id=`` for a file of one task, else
``data.video_id`` (vidlabel's exporter writes it; Label Studio keeps a task's ``data`` keys as
they are on import and export), else ``videos=`` keyed by task id or the stem of ``data.video``
(never opened).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.dataset import Release
from vidlabel.errors import FormatError, VidlabelWarning
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
    fail,
    float32_value,
    human_rows_of_model_track,
    interpolate_keyframes,
    mixed_origin_reason,
    number,
    track_keyframes,
    tracks_of,
    video_tables,
    whole_number,
    write_json,
)
from ._jsonstream import LAZY, JsonSource, LazyList, read_json_file
from ._report import ExportLabelsReport

__all__ = ["export_labelstudio", "import_labelstudio"]


def _video_id(task: dict[str, Any]) -> str | None:
    """``data.video_id``: the dataset video id vidlabel's exporter wrote into the task."""
    data = task.get("data")
    value = data.get("video_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def _video_key(task: dict[str, Any]) -> str | None:
    data = task.get("data")
    for key, value in data.items() if isinstance(data, dict) else ():
        if key != "video_id" and isinstance(value, str) and value:
            return PurePosixPath(value.split("?")[0]).stem or None
    return None


def import_labelstudio(ctx: ImportContext) -> Parsed:
    """Read a Label Studio video export (see the module docstring)."""
    mismatch = ctx.option("frames_count_mismatch", "error", ("error", "warn"))
    return read_json_file(ctx, (list, dict), lambda source, parsed: _read_tasks(ctx, source, parsed, mismatch))


#: A region's keyframes (``value.sequence``, one a frame in a file exported from a release) are read from the
#: file when the region is, not held with their task.
_GROUPS = {"*": {"result": {"*": {"value": {"sequence": LAZY}}}}}
_LAZY = {"annotations": _GROUPS, "predictions": _GROUPS}


def _read_tasks(ctx: ImportContext, source: JsonSource, parsed: Parsed, mismatch: str) -> None:
    """Each task of the file (a list of tasks, or one task), into the rows of its dataset video."""
    path = ctx.path
    reader = _Reader(path, parsed, mismatch)
    tasks = source.items(_LAZY)
    for ti, task in tasks:
        at = f"[{ti}]"
        if not isinstance(task, dict):
            raise fail(path, at, "a task must be an object")
        keys = [_video_id(task), task.get("id"), _video_key(task)]
        try:
            # a file of one task is one whose first task has no other after it
            meta = ctx.resolve(keys, 1 if ti == 0 and not tasks.more() else 2, at)
        except FormatError:  # said with the file's number of tasks
            ctx.resolve(keys, tasks.count(), at)
            raise
        _read_task(reader, at, task, meta)
    if reader.flipped:
        parsed.notes.append(
            f"{reader.flipped} keyframe(s) with a negative width or height (a box drawn leftward or upward) taken with "
            "the corner moved and the size positive, as Label Studio shows them"
        )


@dataclass
class _Reader:
    """What reading one Label Studio file carries from task to task: where rows go, the option, the flips seen."""

    path: Path
    parsed: Parsed
    mismatch: str
    flipped: int = 0


def _read_task(reader: _Reader, at: str, task: dict[str, Any], meta: VideoMetadata) -> None:
    """The rows of one task's annotations and predictions, into the rows of its dataset video ``meta``."""
    path, parsed = reader.path, reader.parsed
    vr = parsed.videos.setdefault(meta.video_id, VideoRows(meta))
    tracks: dict[tuple[int, str], int] = {}
    annotations = _list(path, f"{at}.annotations", task.get("annotations"))
    groups: list[tuple[str, Any, dict[str, Any]]] = [("annotations", a, {}) for a in annotations]
    groups += [
        ("predictions", p, {"origin": "model"}) for p in _list(path, f"{at}.predictions", task.get("predictions"))
    ]
    finished = [a for a in annotations if not (isinstance(a, dict) and a.get("was_cancelled") is True)]
    if len(finished) > 1:
        parsed.notes.append(f"task {task.get('id')!r}: {len(finished)} annotations, all imported")
    for gi, (name, group, base) in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("result", []), list):
            raise fail(path, f"{at}.{name}", "expected an object with a result list")
        gat = f"{at}.{name}[{[g for g in groups if g[0] == name].index(groups[gi])}]"
        if name == "annotations" and group.get("was_cancelled") is True:
            # the annotator skipped the task (Label Studio's "Skip"): what it holds is no finished labelling
            if group.get("result"):
                parsed.skipped["result of a skipped annotation (was_cancelled: true)"] += len(group["result"])
            continue
        region_attrs = _region_attributes(path, gat, group.get("result") or [])
        for ri, res in enumerate(group.get("result") or []):
            rat = f"{gat}.result[{ri}]"
            if not isinstance(res, dict) or not isinstance(res.get("value"), dict):
                raise fail(path, rat, "a result needs a value object")
            if res.get("type") in _PER_REGION and str(res.get("id")) in region_attrs:
                continue  # a per-region choice of a videorectangle: its rows' attribute
            value = res["value"]
            kind = res.get("type")
            origin = dict(base)
            if base:
                score = res.get("score", group.get("score"))
                if score is not None:
                    origin["confidence"] = number(path, rat, score, "score")
            _check_frames_count(reader, rat, value, meta)
            if kind == "timelinelabels":
                _read_timeline(reader, rat, value, vr, origin)
                continue
            if kind != "videorectangle":
                parsed.skipped[f"unsupported result type: {kind}"] += 1
                continue
            # a region id names a track within one annotation (or prediction): an annotation made from
            # a prediction keeps the prediction's ids, and two annotators may both have region "abc"
            rid = str(res.get("id", f"{gat}.{ri}"))
            _read_rectangle(reader, rat, value, vr, origin, (tracks, (gi, rid)), region_attrs.get(rid))


def _check_frames_count(reader: _Reader, rat: str, value: dict[str, Any], meta: VideoMetadata) -> None:
    """A result's ``framesCount`` against the video's frame count: an error, or with 'warn' a warning and a note."""
    path = reader.path
    count = value.get("framesCount", value.get("frameCount"))
    if count is not None:
        count = whole_number(path, rat, count, "framesCount")
    if count is not None and count != meta.frame_count:
        msg = f"framesCount {count} disagrees with video {meta.video_id!r}, whose frame count is {meta.frame_count}"
        if reader.mismatch == "error":
            raise fail(path, rat, msg + " (frames_count_mismatch='warn' imports it anyway)")
        # the caller of import_labels: this helper, _read_task, import_labelstudio and import_labels lie between
        warnings.warn(f"{path} {rat}: {msg}", VidlabelWarning, stacklevel=5)
        reader.parsed.notes.append(f"{rat}: {msg}")


def _read_timeline(reader: _Reader, rat: str, value: dict[str, Any], vr: VideoRows, origin: dict[str, Any]) -> None:
    """A ``timelinelabels`` result: a marker row per label and range (1-based, inclusive in the file)."""
    path = reader.path
    labels = _labels(path, rat, value, "timelinelabels")
    if not labels:
        reader.parsed.skipped["timelinelabels region without a label"] += 1
        return
    for k, rng in enumerate(_list(path, f"{rat}.ranges", value.get("ranges"))):
        if not isinstance(rng, dict):
            raise fail(path, f"{rat}.ranges[{k}]", "a range must be an object with start and end")
        a = whole_number(path, f"{rat}.ranges[{k}]", rng.get("start"), "start")
        b = whole_number(path, f"{rat}.ranges[{k}]", rng.get("end"), "end")
        n = vr.meta.frame_count
        for which, f in (("start", a), ("end", b)):  # said as the file writes it: 1-based
            if not 1 <= f <= n:
                raise fail(
                    path,
                    f"{rat}.ranges[{k}]",
                    f"{which} {f} (1-based, inclusive) is outside video {vr.meta.video_id!r}: frames 1..{n}",
                )
        for lab in labels:
            row = {"kind": "marker", "label": lab, "start_frame": a - 1, "end_frame": b - 1, **origin}
            vr.add(row, f"{rat}.ranges[{k}]")


def _read_rectangle(
    reader: _Reader,
    rat: str,
    value: dict[str, Any],
    vr: VideoRows,
    origin: dict[str, Any],
    track_of: tuple[dict[tuple[int, str], int], tuple[int, str]],
    attrs: dict[str, Any] | None,
) -> None:
    """A ``videorectangle`` result: its keyframes interpolated to a box row per frame of one track.

    ``track_of`` is the task's (annotation or prediction index, region id) -> track table and this region's key.
    """
    path, parsed = reader.path, reader.parsed
    labels = _labels(path, rat, value, "labels")
    if not labels:
        parsed.skipped["videorectangle without a label"] += 1
        return
    if len(labels) > 1:
        parsed.notes.append(f"{rat}: labels {labels}: the first, {labels[0]!r}, is used")
    seq = _list(path, f"{rat}.sequence", value.get("sequence"))
    if not seq:
        parsed.skipped["videorectangle region without keyframes (empty value.sequence)"] += 1
        return
    rotations = [
        number(path, f"{rat}.sequence[{k}]", item.get("rotation") or 0, "rotation")
        for k, item in enumerate(seq)
        if isinstance(item, dict)
    ]
    if any(r != 0 for r in rotations):
        parsed.skipped["rotated rectangle"] += 1
        return
    keys = _keyframes(reader, rat, seq, vr.meta)
    tracks, track_key = track_of
    track = tracks.setdefault(track_key, len(tracks))
    for name, attr in [*(attrs or {}).items(), *(kv for k in keys for kv in (k.payload or {}).items())]:
        kind = _TYPE_OF[type(attr)]
        known = parsed.declare(labels[0], name, kind)
        # name this region: the first region's type is the attribute's, so a later one of another type is odd
        if known != kind:
            raise fail(
                path, rat, f"attribute {name!r} is {shown(attr)} ({kind}); earlier {labels[0]!r} rows give {known}"
            )
    all_frames = np.arange(vr.meta.frame_count, dtype=np.int64)
    for f, at_box, key in interpolate_keyframes(path, keys, all_frames):
        row = {"kind": "box", "label": labels[0], "start_frame": f, "box": at_box, "track_id": track, **origin}
        # a keyframe's own attributes (vidlabel's export writes those that change along the track) hold to
        # the next keyframe, beside the region's
        both = {**(attrs or {}), **(key.payload or {})}
        if both:
            row["attributes"] = both
        vr.add(row, key.where)


#: The attribute type of a value read from a file.
_TYPE_OF = {bool: "bool", float: "number", str: "text"}


def _keyframe_attributes(path: Path, kat: str, value: Any) -> dict[str, Any] | None:
    """A keyframe's ``attributes`` object (vidlabel's own key): name -> true/false, a number or a string."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(path, kat, f"attributes is {str(value)[:40]!r}; expected an object of name -> value")
    out: dict[str, Any] = {}
    for name, v in value.items():
        if isinstance(v, bool | str):
            out[name] = v
        elif isinstance(v, int | float):
            out[name] = number(path, kat, v, f"attributes.{name}")
        elif v is not None:
            raise fail(path, kat, f"attribute {name!r} is {str(v)[:40]!r}; expected true/false, a number or a string")
    return out or None


def _keyframes(reader: _Reader, rat: str, seq: Iterable[Any], meta: VideoMetadata) -> list[Keyframe]:
    """A rectangle's ``value.sequence`` as keyframes in pixels (0-based frames), checked against the video."""
    path = reader.path
    keys = []
    for k, item in enumerate(seq):
        kat = f"{rat}.sequence[{k}]"
        if not isinstance(item, dict):
            raise fail(path, kat, "a keyframe must be an object")
        f = whole_number(path, kat, item.get("frame"), "frame") - 1
        x, y, w, h = (number(path, kat, item.get(c), c) for c in ("x", "y", "width", "height"))
        if w < 0 or h < 0:  # drawn leftward or upward: the editor keeps the corner it started from
            x, y, w, h = min(x, x + w), min(y, y + h), abs(w), abs(h)
            reader.flipped += 1
        px = (x / 100 * meta.width, y / 100 * meta.height)
        box = _snap(
            (px[0], px[1], px[0] + w / 100 * meta.width, px[1] + h / 100 * meta.height),
            meta.width,
            meta.height,
        )
        enabled = item.get("enabled", True)
        if not isinstance(enabled, bool):  # "false" or 0 would be taken for enabled, or the reverse
            raise fail(path, kat, f"enabled is {enabled!r}; expected true or false")
        payload = _keyframe_attributes(path, kat, item.get("attributes"))
        keys.append(Keyframe(f, box, True, ends_after=not enabled, payload=payload, where=kat))
        if not 0 <= f < meta.frame_count:
            raise fail(
                path,
                kat,
                f"frame {f + 1} (1-based) is outside video {meta.video_id!r}: frames 1..{meta.frame_count}",
            )
    return keys


#: Per-region results (a classification of one region, sharing its id) and their value key.
_PER_REGION = {"choices": "choices", "number": "number", "textarea": "text"}


def _region_attributes(path: Path, gat: str, results: list[Any]) -> dict[str, dict[str, Any]]:
    """Region id -> attributes from the per-region ``choices``, ``number`` and ``textarea`` results of a
    videorectangle (named by their ``from_name``): a choice or a text is text (several joined by ", "), a
    number a number."""
    regions = {str(r.get("id")) for r in results if isinstance(r, dict) and r.get("type") == "videorectangle"}
    out: dict[str, dict[str, Any]] = {}
    for ri, res in enumerate(results):
        if not isinstance(res, dict) or res.get("type") not in _PER_REGION or str(res.get("id")) not in regions:
            continue
        rat = f"{gat}.result[{ri}]"
        value = res.get("value")
        name = res.get("from_name")
        if not isinstance(value, dict) or not isinstance(name, str) or not name:
            raise fail(path, rat, "a per-region result needs a from_name and a value object")
        got = value.get(_PER_REGION[res["type"]])
        if res["type"] == "number":
            parsed_value: Any = number(path, rat, got, "number")
        elif isinstance(got, list) and got and all(isinstance(v, str) for v in got):
            parsed_value = ", ".join(got)
        else:
            raise fail(path, rat, f"{res['type']} value {str(got)[:40]!r}; expected a list of strings")
        out.setdefault(str(res["id"]), {})[name] = parsed_value
    return out


def _list(path: Path, where: str, value: Any) -> list[Any] | LazyList:
    """A JSON list of the file (absent, null or empty: none); anything else is a FormatError naming where."""
    if not value:
        return []
    if isinstance(value, LazyList):
        return value
    if not isinstance(value, list):
        raise fail(path, where, f"is {str(value)[:40]!r}; expected a list")
    return value


def _labels(path: Path, where: str, value: dict[str, Any], key: str) -> list[str]:
    """The label names of a result: a list of strings (a bare string would be read letter by letter)."""
    labels = value.get(key) or []
    if not isinstance(labels, list) or not all(isinstance(lab, str) for lab in labels):
        raise fail(path, where, f"{key} is {labels!r}; expected a list of label names")
    return labels


#: Percent coordinates turned back into pixels land a rounding error past the frame's edge
#: (``(83.33... + 16.66...) / 100 * 240 = 240.00000000000003``): such edges are the edge.
_EDGE_EPS = 1e-6


def _snap(box: tuple[float, float, float, float], width: int, height: int) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = box
    x0 = 0.0 if -_EDGE_EPS < x0 < 0 else x0
    y0 = 0.0 if -_EDGE_EPS < y0 < 0 else y0
    x1 = float(width) if width < x1 < width + _EDGE_EPS else x1
    y1 = float(height) if height < y1 < height + _EDGE_EPS else y1
    return (x0, y0, x1, y1)


def _pct(v: float, size: int) -> float:
    return v / size * 100.0


def _track_attributes(t: Any, trows: np.ndarray) -> tuple[dict[str, Any], set[str]]:
    """A track's attributes split by where Label Studio can hold them: the text and number values all its rows
    share (per-region ``choices`` and ``number`` results, which the editor shows), and the names of the others
    (a bool, a value that changes along the track or that some rows lack), written per keyframe."""
    values = [t.attributes(int(r)) for r in trows.tolist()]
    names = {k for v in values for k in v}
    region: dict[str, Any] = {}
    keyed: set[str] = set()
    for name in sorted(names):
        seen = [v.get(name) for v in values]
        first = seen[0]
        if first is not None and not isinstance(first, bool) and all(x == first for x in seen):
            region[name] = first
        else:
            keyed.add(name)
    return region, keyed


def export_labelstudio(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """One Label Studio JSON file: a task per video (``data.video`` its file, ``data.video_id`` its dataset id,
    which the importer matches first), a ``videorectangle`` per track (a keyframe per box,
    ``enabled: false`` closing each run), markers as ``timelinelabels``, model rows as predictions."""
    t = release.table
    report = ExportLabelsReport("label-studio", release.release_id)
    tasks = []
    for ti, vt in enumerate(video_tables(release, videos), 1):
        meta, n = vt.meta, vt.meta.frame_count
        human: list[dict[str, Any]] = []
        model: list[dict[str, Any]] = []
        rows = vt.rows
        kind = t.kind[rows]
        if (kind == MASK).any():
            report.not_written["mask (Label Studio video holds no masks)"] += int((kind == MASK).sum())
        untracked = 0
        for track, trows in tracks_of(t, rows[kind == BOX]).items():
            untracked += track < 0
            _write_track(release, track, trows, meta, report, human, model)
        for r in rows[kind == MARKER].tolist():
            (model if t.origin[r] == MODEL else human).append(_marker_result(release, r, n))
            report.counts["marker"] += 1
        if untracked:
            report.notes.append(f"video {meta.video_id!r}: {untracked} untracked boxes written as one-keyframe regions")
        task: dict[str, Any] = {
            "id": ti,
            "data": {"video": meta.uri or f"{meta.video_id}.mp4", "video_id": meta.video_id},
            "annotations": [{"id": ti, "result": human}],
        }
        if model:
            task["predictions"] = [{"id": ti, "model_version": "vidlabel", "result": model}]
        tasks.append(task)
    report.notes = sorted(set(report.notes))
    write_json(out, tasks)
    report.paths.append(str(out))
    return report


def _keyframe_sequence(
    release: Release, trows: np.ndarray, meta: VideoMetadata, fps: float, report: ExportLabelsReport,
    keyed: set[str],
) -> list[dict[str, Any]]:  # fmt: skip
    """A track's ``value.sequence``: a keyframe per frame holding a box, ``enabled: false`` closing each run,
    with the row's attributes named in ``keyed`` as the keyframe's ``attributes``."""
    t, n = release.table, meta.frame_count
    seq: list[dict[str, Any]] = []
    for r, f, ends in track_keyframes(t, trows, n, report, "Label Studio"):
        x0, y0, x1, y1 = t.box[r].tolist()
        # enabled: false ends the span after f
        seq.append({
            "frame": f + 1, "enabled": not ends, "rotation": 0, "time": f / fps,
            "x": _pct(x0, meta.width), "y": _pct(y0, meta.height),
            "width": _pct(x1 - x0, meta.width), "height": _pct(y1 - y0, meta.height),
        })  # fmt: skip
        own = {k: v for k, v in t.attributes(r).items() if k in keyed} if keyed else None
        if own:
            seq[-1]["attributes"] = own
        report.counts["box"] += 1
    return seq


def _write_track(
    release: Release,
    track: int,
    trows: np.ndarray,
    meta: VideoMetadata,
    report: ExportLabelsReport,
    human: list[dict[str, Any]],
    model: list[dict[str, Any]],
) -> None:
    """A track's ``videorectangle`` and its per-region attribute results, appended to ``human`` or ``model``."""
    t, n = release.table, meta.frame_count
    fps = meta.fps["num"] / meta.fps["den"]
    per_region, keyed = _track_attributes(t, trows)
    seq = _keyframe_sequence(release, trows, meta, fps, report, keyed)
    first = int(trows[0])
    res: dict[str, Any] = {
        "id": f"t{track}" if track >= 0 else f"u{-track}", "type": "videorectangle", "from_name": "box",
        "to_name": "video", "origin": "manual",
        "value": {"framesCount": n, "duration": n / fps, "sequence": seq, "labels": [release.labels[int(t.label[first])]]},
    }  # fmt: skip
    mixed = human_rows_of_model_track(t, trows)
    if mixed:
        report.not_written[mixed_origin_reason("Label Studio")] += mixed
    if (t.origin[trows] == MODEL).any():
        conf = t.confidence[trows].astype(np.float64)
        if np.isfinite(conf).any():
            res["score"] = float32_value(np.nanmean(conf))
        if len(set(conf.tolist())) > 1:
            report.notes.append("a model track's confidences differ per frame: its score is their mean")
        model.append(res)
    else:
        human.append(res)
    for name, value in sorted(per_region.items()):  # beside the region, in the same result list
        kind_of = "number" if isinstance(value, float) else "choices"
        extra = {"number": value} if kind_of == "number" else {"choices": [value]}
        (model if res in model else human).append({
            "id": res["id"], "type": kind_of, "from_name": name, "to_name": "video", "value": extra,
        })  # fmt: skip


def _marker_result(release: Release, r: int, n: int) -> dict[str, Any]:
    """The ``timelinelabels`` result of marker row ``r`` of a video of ``n`` frames (1-based, inclusive range)."""
    t = release.table
    res: dict[str, Any] = {
        "id": f"m{int(t.annotation_id[r])}", "type": "timelinelabels", "from_name": "timeline", "to_name": "video",
        "value": {"ranges": [{"start": int(t.start_frame[r]) + 1, "end": int(t.end_frame[r]) + 1}],
                  "timelinelabels": [release.labels[int(t.label[r])]], "framesCount": n},
    }  # fmt: skip
    if t.origin[r] == MODEL and np.isfinite(t.confidence[r]):
        res["score"] = float32_value(t.confidence[r])
    return res
