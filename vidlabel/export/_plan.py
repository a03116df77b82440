"""Planning an export: what each video of the release stores (:class:`ExportPlan`), then what is left to write.

:func:`plan_export` decides per video (one view per export) the stored
frames (FrameSamples' selection), their regions and segments in stored
pixels, the unit keys and the video group's attributes, and counts what is
not stored and why. It reads only the release. :func:`plan_units` then
compares the plan with the store: videos already published identically are
up to date, units already stored are reused, and every other unit becomes a
:class:`~vidlabel.export._units.UnitJob` (copying what stored units hold,
decoding the rest).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidlabel.dataset._release import Release
from vidlabel.errors import VidlabelWarning
from vidlabel.export._options import ExportOptions
from vidlabel.export._units import UnitJob
from vidlabel.geometry import clip_boxes, decode_rle, encode_rle, resize_mask, view_boxes, view_mask
from vidlabel.spec import KINDS, VideoMetadata, View, take_csr
from vidlabel.store._backend import Backend
from vidlabel.store._clips import clip_frames_many
from vidlabel.store._layout import frames_key, labels_key, pixel_key
from vidlabel.store._position import positions_by_code
from vidlabel.store._verify import damaged_unit_chunks

__all__ = [
    "ExportPlan", "Selection", "UnitWork", "VideoPlan", "check_video_files", "plan_export", "plan_units",
    "select_frames", "timestamps_us",
]  # fmt: skip

_KIND_BOX, _KIND_MASK, _KIND_MARKER = (KINDS.index(k) for k in ("box", "mask", "marker"))
# FrameSamples' warning about frames without a trustworthy picture (export warns about them itself).
_UNTRUSTED_LEFT_OUT = r".* without a trustworthy picture are left out of the samples"
_IDS_KEPT = 1000  # annotation ids of those not stored that the report lists


@dataclass
class VideoPlan:
    """One video of the export: its stored frames, unit keys, group attributes and small arrays."""

    video_id: str
    meta: VideoMetadata
    frame_number: np.ndarray
    size: tuple[int, int]
    pixel_key: str
    frames_key: str
    attrs: dict[str, Any]
    arrays: dict[str, np.ndarray]
    #: Rows of the selected frames among the stored ones (the store's samples); None: every stored row.
    sample_rows: np.ndarray | None = None


@dataclass
class ExportPlan:
    """What an export of a release stores, before looking at the store.

    ``not_stored``, ``markers_without_stored_frames``, ``rows_outside_video``
    and ``untrusted_frames`` are :class:`ExportReport`'s fields of those names.
    """

    release: Release
    dataset_path: str | None
    view: View | None
    class_names: list[str]
    videos: list[VideoPlan] = field(default_factory=list)
    not_stored: dict[str, Any] = field(
        default_factory=lambda: {"box": 0, "mask": 0, "untrusted": 0, "untrusted_by_video": {}, "by_video": {}}
    )
    markers_without_stored_frames: int = 0
    rows_outside_video: int = 0
    untrusted_frames: int = 0
    #: Selected frames whose clip ``edge="skip"`` left out (no context stored for them).
    clips_skipped: int = 0


@dataclass
class UnitWork:
    """What is left to do against the store: units to write, videos to publish, and what is already there."""

    jobs: list[UnitJob]
    to_publish: list[VideoPlan]
    videos_up_to_date: int
    frames_reused: int
    damaged: dict[str, str] = field(default_factory=dict)  # stored units found damaged (written again), in words


# -- the plan of each video --------------------------------------------------------------------------------------


@dataclass
class Selection:
    """The stored frames: FrameSamples' selection under the export's options, and for ``frames="all"`` the
    annotated frames (for ``is_annotated``)."""

    release: Release
    dataset_path: str | None
    samples: Any  # FrameSamples
    annotated: Any  # SampleIndex or None


def select_frames(rel: Release, opts: ExportOptions, dataset_path: str | None) -> Selection:
    """The frames an export of ``rel`` stores: exactly those :class:`~vidlabel.FrameSamples` samples.

    Raises
    ------
    OptionError
        From :class:`~vidlabel.FrameSamples` on a bad ``frames``, ``kinds``, ``stride`` or ``view_id``.
    """
    from vidlabel.samples._samples import FrameSamples

    with warnings.catch_warnings():  # the export's own warning says it, with the stride/kinds losses
        warnings.filterwarnings("ignore", _UNTRUSTED_LEFT_OUT, VidlabelWarning)
        samples = FrameSamples.from_release(rel, dataset_path=dataset_path, **opts.selection())
        annotated = None
        if opts.frames == "all":
            annotated = FrameSamples.from_release(rel, view_id=opts.view_id, kinds=opts.kinds).index
    return Selection(rel, dataset_path, samples, annotated)


def plan_export(selection: Selection, opts: ExportOptions) -> ExportPlan:
    """Plan every selected video: stored frames, unit keys, regions and segments, group attributes.

    With ``opts.clip``, each video also stores the frames of every selected frame's clip
    (:func:`_with_clip_context`).

    Raises
    ------
    VideoNotFoundError
        If a video registered without a content hash has no file to hash.
    ClipError
        From ``opts.clip`` (a clip longer than a video, ``edge="error"`` at a video's edge or next to frames
        without a trustworthy picture), before anything is written.
    """
    rel, samples, annotated = selection.release, selection.samples, selection.annotated
    labels = list(rel.labels) if rel.labels else list(rel.table.labels)
    plan = ExportPlan(rel, selection.dataset_path, samples.view, labels)
    frame_col, none = samples.index.frames, np.zeros(0, np.int64)
    # each video's samples from one sort, not a scan of every sample per video (quadratic in the videos)
    of_video = dict(positions_by_code(samples.index.video_codes))
    annotated_of = {} if annotated is None else dict(positions_by_code(annotated.video_codes))
    for code, video_id in enumerate(samples.video_ids):
        stored = np.ascontiguousarray(frame_col[of_video.get(code, none)], dtype=np.int64)
        selected, sample_rows = stored, None
        if opts.clip is not None:
            stored, sample_rows = _with_clip_context(plan, opts, rel.videos[video_id], selected)
        is_annotated = (
            np.isin(stored, selected)
            if annotated is None
            else np.isin(stored, annotated.frames[annotated_of.get(code, none)])
        )
        video = _plan_video(plan, opts, video_id, stored, is_annotated)
        video.sample_rows = sample_rows
        plan.videos.append(video)
    plan.untrusted_frames = samples.describe()["untrusted_frames_left_out"]
    return plan


def _with_clip_context(
    plan: ExportPlan, opts: ExportOptions, meta: VideoMetadata, selected: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The frames a video stores with ``opts.clip``: the selected frames and every frame of their clips (placed
    as :meth:`ClipSpec.frames` places them, never on a frame without a trustworthy picture), ascending; and the
    rows of the selected frames among them. Clips ``edge="skip"`` leaves out are counted in the plan."""
    assert opts.clip is not None
    usable = ~meta.untrusted_mask() if meta.untrusted_count else None
    clips, kept = clip_frames_many(opts.clip, selected, meta.frame_count, usable, video_id=meta.video_id)
    plan.clips_skipped += int((~kept).sum())
    stored = np.union1d(selected, clips[kept].reshape(-1)).astype(np.int64)
    return stored, np.searchsorted(stored, selected).astype(np.int64)


def _plan_video(
    plan: ExportPlan, opts: ExportOptions, video_id: str, stored: np.ndarray, is_annotated: np.ndarray
) -> VideoPlan:
    rel, view = plan.release, plan.view
    meta = rel.videos[video_id]
    size = opts.output_size or (view.size if view is not None else (meta.width, meta.height))
    chash = _content_hash(meta, opts.roots)
    pkey = pixel_key(
        content_hash=chash, crop=None if view is None else view.crop,
        view_size=None if view is None else view.output_size, output_size=opts.output_size, codec=opts.codec.spec,
    )  # fmt: skip
    chunk_frames = opts.unit_chunk_frames(stored.size)  # a chunk never holds more rows than the unit's frames
    fkey = frames_key(pkey, chunk_frames, stored)
    arrays = {"frame_number": stored, "timestamp_us": timestamps_us(meta, stored), "is_annotated": is_annotated}
    if not opts.frames_only:
        table = rel.table
        tcode = _table_index(table).codes.get(video_id, -1)
        view_code = None if opts.view_id is None else _view_code(rel, opts.view_id)
        regions, lost, outside = _regions(rel, tcode, meta, view, view_code, size, opts.output_size, stored)
        segments = _segments(rel, tcode, meta, view_code, stored)
        arrays.update({f"regions/{k}": v for k, v in regions.items()})
        arrays.update({f"segments/{k}": v for k, v in segments.items()})
        _count_losses(plan, video_id, lost, int((segments["start_index"] < 0).sum()), outside)
    attrs = {
        "video_id": video_id, "content_hash": chash, "source_uri": meta.uri, "fps": dict(meta.fps),
        "frame_count": meta.frame_count, "source_width": meta.width, "source_height": meta.height,
        "rotation": meta.rotation, "width": size[0], "height": size[1], "view_id": opts.view_id,
        "crop": None if view is None else list(view.crop),
        "view_output_size": None if view is None or view.output_size is None else list(view.output_size),
        "output_size": None if opts.output_size is None else list(opts.output_size), "codec": opts.codec.spec,
        "chunk_frames": chunk_frames, "frames_key": fkey, "pixel_key": pkey,
    }  # fmt: skip
    # a reader knows from this attribute that the regions' attributes are stored
    if not opts.frames_only and rel.table.has_attributes:
        attrs["region_attributes"] = True
    # where a clip read from the store is placed, as the export placed it
    if opts.clip is not None:
        attrs["untrusted_frames"] = np.flatnonzero(meta.untrusted_mask()).tolist() if meta.untrusted_count else []
    attrs["labels_key"] = labels_key(attrs, arrays, plan.class_names)  # what a reader checks the video against
    return VideoPlan(video_id, meta, stored, size, pkey, fkey, attrs, arrays)


class _TableIndex:
    """A release table's rows grouped by video once (each video's rows ascending), so that planning a video
    costs its own rows, not a scan of the whole table (which made planning quadratic in the number of videos)."""

    def __init__(self, table: Any) -> None:
        self.codes = {v: i for i, v in enumerate(table.video_ids)}
        video = np.asarray(table.video)
        self.order = np.argsort(video, kind="stable")
        self.offsets = np.searchsorted(video[self.order], np.arange(len(table.video_ids) + 1))

    def rows_of(self, video_code: int) -> np.ndarray:
        if not 0 <= video_code < self.offsets.size - 1:
            return np.zeros(0, np.intp)
        return self.order[int(self.offsets[video_code]) : int(self.offsets[video_code + 1])]


_TABLE_INDEX: weakref.WeakKeyDictionary[Any, _TableIndex] = weakref.WeakKeyDictionary()


def _table_index(table: Any) -> _TableIndex:
    """The :class:`_TableIndex` of a release table (built on first use, kept while the table lives)."""
    index = _TABLE_INDEX.get(table)
    if index is None:
        index = _TABLE_INDEX[table] = _TableIndex(table)
    return index


def _view_code(rel: Release, view_id: str) -> int:
    """The table's code of ``view_id`` (-2, matching no row, when no row has that view)."""
    view_ids = rel.table.view_ids
    return view_ids.index(view_id) if view_id in view_ids else -2


def _count_losses(plan: ExportPlan, video_id: str, lost: dict[str, Any], markers_unstored: int, outside: int) -> None:
    """Add one video's annotations that are not stored to the plan's counts."""
    not_stored = plan.not_stored
    for kind in ("box", "mask", "untrusted"):
        not_stored[kind] += lost[kind]
    if lost["untrusted"]:
        not_stored["untrusted_by_video"][video_id] = lost["untrusted"]
    n_lost = lost["box"] + lost["mask"]
    if n_lost:
        not_stored["by_video"][video_id] = n_lost
        ids = not_stored.setdefault("annotation_ids", [])
        ids.extend(lost["annotation_ids"][: max(0, _IDS_KEPT - len(ids))])
    plan.markers_without_stored_frames += markers_unstored
    plan.rows_outside_video += outside


def timestamps_us(meta: VideoMetadata, frames: np.ndarray) -> np.ndarray:
    """Presentation time of frames in microseconds: from the frame index when it covers the video, else frame / fps."""
    fi = meta.frame_index
    frames = np.asarray(frames, dtype=np.int64)
    if fi is not None and fi.frame_count == meta.frame_count and frames.size:
        return fi.timestamp_us()[frames]
    num, den = meta.fps["num"], meta.fps["den"]
    return (frames.astype(object) * 1_000_000 * den // num).astype(np.int64) if frames.size else frames.copy()


def _content_hash(meta: VideoMetadata, roots: Sequence[str]) -> str:
    if meta.content_hash:
        return meta.content_hash
    from vidlabel.video._probe import content_hash
    from vidlabel.video._reader import resolve_video_path

    return content_hash(resolve_video_path(meta, roots))


# -- regions and segments ------------------------------------------------------------------------------------------


def _regions(
    rel: Release, video_code: int, meta: VideoMetadata, view: View | None, view_code: int | None,
    size: tuple[int, int], output_size: tuple[int, int] | None, stored: np.ndarray,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:  # fmt: skip
    """CSR regions over the stored frames, in stored pixels; plus what is not stored and rows outside the video.

    The not-stored dict counts ``box`` and ``mask`` rows, ``untrusted`` (those of them on frames without a
    trustworthy picture) and lists their ``annotation_ids``.
    """
    table = rel.table
    rows, pos, not_stored, outside = _region_rows(rel, video_code, meta, view_code, stored)
    t = stored.size
    counts = np.bincount(pos, minlength=t) if t else np.zeros(0, np.int64)
    row_offsets = np.zeros(t + 1, np.int64)
    np.cumsum(counts, out=row_offsets[1:])
    boxes = view_boxes(table.box[rows], view)
    if output_size is not None:
        vw, vh = view.size if view is not None else (meta.width, meta.height)
        ow, oh = output_size
        boxes = clip_boxes(boxes * np.array([ow / vw, oh / vh, ow / vw, oh / vh]), ow, oh)
    mask_offsets, mask_counts = _region_masks(rel, rows, meta, view, size, output_size)
    arrays: dict[str, np.ndarray] = {
        "row_offsets": row_offsets,
        "bbox_xyxy": boxes.astype(np.float32).reshape(-1, 4),
        "label_index": table.label[rows].astype(np.int64),
        "track_id": table.track_id[rows].astype(np.int64),
        "annotation_id": table.annotation_id[rows].astype(np.int64),
        "confidence": table.confidence[rows].astype(np.float32),
        "origin": table.origin[rows].astype(np.uint8),
        "mask_offsets": mask_offsets,
        "mask_counts": mask_counts,
    }
    if table.has_attributes:
        arrays["attr_offsets"], arrays["attr_bytes"] = take_csr(table.attr_offsets, table.attr_bytes, rows)  # type: ignore[arg-type]
    return arrays, not_stored, outside


def _region_rows(
    rel: Release, video_code: int, meta: VideoMetadata, view_code: int | None, stored: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[str, Any], int]:
    """Table rows of the video's boxes and masks on stored frames (by frame, then annotation id), each one's
    stored row; what lies on frames not stored; how many rows lie outside the video."""
    table = rel.table
    rows = _table_index(table).rows_of(video_code)
    sel = table.kind[rows] != _KIND_MARKER
    if view_code is not None:
        sel &= table.view[rows] == view_code
    rows = rows[sel]
    frames = table.start_frame[rows]
    inside = (frames >= 0) & (frames < meta.frame_count)
    outside = int((~inside).sum())
    rows, frames = rows[inside], frames[inside]
    order = np.argsort(frames, kind="stable")  # annotation ids stay ascending within a frame
    rows, frames = rows[order], frames[order]
    pos = np.searchsorted(stored, frames)
    found = pos < stored.size
    found[found] = stored[pos[found]] == frames[found]
    lost_rows = rows[~found]
    not_stored = {
        "box": int((table.kind[lost_rows] == _KIND_BOX).sum()),
        "mask": int((table.kind[lost_rows] == _KIND_MASK).sum()),
        "untrusted": int(meta.untrusted_mask()[frames[~found]].sum()) if meta.untrusted_count else 0,
        "annotation_ids": table.annotation_id[lost_rows].tolist(),
    }
    return rows[found], pos[found], not_stored, outside


def _region_masks(
    rel: Release, rows: np.ndarray, meta: VideoMetadata, view: View | None,
    size: tuple[int, int], output_size: tuple[int, int] | None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``mask_offsets`` and ``mask_counts`` of ``rows``: RLE counts copied as they are where the stored pixels
    are the source's, re-encoded after the view's crop or a resize otherwise."""
    table = rel.table
    width, height = size
    lengths = table.mask_offsets[rows + 1] - table.mask_offsets[rows]
    as_is = (lengths > 0) & (view is None) & (output_size is None)
    as_is &= np.all(table.mask_size[rows] == (height, width), axis=1)
    new_counts = {
        j: _recode_mask(rel, int(rows[j]), meta, view, size) for j in np.flatnonzero((lengths > 0) & ~as_is).tolist()
    }
    out_lengths = np.where(as_is, lengths, 0)
    for j, data in new_counts.items():
        out_lengths[j] = len(data)
    mask_offsets = np.zeros(rows.size + 1, np.int64)
    np.cumsum(out_lengths, out=mask_offsets[1:])
    mask_counts = np.zeros(int(mask_offsets[-1]), np.uint8)
    keep = np.flatnonzero(as_is)
    if keep.size:  # copied as they are, without a Python loop
        n = lengths[keep]
        before = np.cumsum(n) - n
        step = np.arange(int(n.sum()), dtype=np.int64)
        dst = np.repeat(mask_offsets[keep] - before, n) + step
        src = np.repeat(table.mask_offsets[rows[keep]] - before, n) + step
        mask_counts[dst] = table.mask_counts[src]
    for j, data in new_counts.items():
        mask_counts[mask_offsets[j] : mask_offsets[j + 1]] = np.frombuffer(data, np.uint8)
    return mask_offsets, mask_counts


def _recode_mask(rel: Release, row: int, meta: VideoMetadata, view: View | None, size: tuple[int, int]) -> bytes:
    """A mask that needs the view's crop or a resize: decoded, transformed and encoded again (RLE counts)."""
    rle = rel.table.mask_rle(row)
    assert rle is not None
    mh, mw = rle["size"]
    vw, vh = view.size if view is not None else (meta.width, meta.height)
    mask = decode_rle(rle)
    if view is not None and (mh, mw) == (meta.height, meta.width):
        mask = view_mask(mask, view)
    if mask.shape != (vh, vw):
        mask = resize_mask(mask, (vw, vh))
    if mask.shape != (size[1], size[0]):
        mask = resize_mask(mask, size)
    return bytes(encode_rle(mask)["counts"])


def _segments(
    rel: Release, video_code: int, meta: VideoMetadata, view_code: int | None, stored: np.ndarray
) -> dict[str, np.ndarray]:
    """Markers of a video as MediaSequence-style segments (end inclusive, clipped to the video like FrameSamples)."""
    table = rel.table
    rows = _table_index(table).rows_of(video_code)
    sel = table.kind[rows] == _KIND_MARKER
    if view_code is not None:
        sel &= table.view[rows] == view_code
    rows = rows[sel]
    start = np.maximum(table.start_frame[rows], 0)
    end = np.minimum(table.end_frame[rows], meta.frame_count - 1)
    ok = end >= start
    rows, start, end = rows[ok], start[ok], end[ok]
    first = np.searchsorted(stored, start, side="left")
    last = np.searchsorted(stored, end, side="right") - 1
    empty = first > last
    first[empty] = -1
    last[empty] = -1
    return {
        "start_frame": start.astype(np.int64),
        "end_frame": end.astype(np.int64),
        "start_index": first.astype(np.int64),
        "end_index": last.astype(np.int64),
        "start_timestamp_us": timestamps_us(meta, start),
        "end_timestamp_us": timestamps_us(meta, end),
        "label_index": table.label[rows].astype(np.int64),
        "annotation_id": table.annotation_id[rows].astype(np.int64),
    }


def check_video_files(videos: Iterable[VideoMetadata], roots: Sequence[str], *, check_hash: bool = False) -> None:
    """Find the file of every video an export is about to decode, so that one that cannot be found refuses the
    export before it writes anything (a unit job would find it missing only after others were written).

    Parameters
    ----------
    videos : iterable of VideoMetadata
        The videos whose frames are to be decoded.
    roots : sequence of str
        The export's ``roots``.
    check_hash : bool
        Also check that each file holds the registered bytes (its content hash; the unit job checks it again):
        an update of an existing store does, so that a file changed on disk refuses it before it marks the
        store incomplete (a store of an earlier release was otherwise unreadable until a rerun).

    Raises
    ------
    VideoNotFoundError
        Naming every video whose file is found nowhere (the first ten, and how many more) and the paths tried;
        every file is looked for before any is hashed.
    VideoChangedError
        With ``check_hash``: naming the first video whose file is not the registered file.
    """
    from vidlabel.video._locate import resolve_video_paths
    from vidlabel.video._reader import registered_file

    videos = list(videos)
    paths = resolve_video_paths(videos, roots)
    if check_hash:
        for meta, path in zip(videos, paths, strict=True):
            if meta.content_hash is not None:
                registered_file(meta, path, roots)


# -- what is left to write ---------------------------------------------------------------------------------------


def plan_units(backend: Backend, plan: ExportPlan, opts: ExportOptions) -> UnitWork:
    """Compare the plan with the store: videos up to date, units reused whole, and one job per unit to write.

    Every stored unit reused or copied from is first checked against its CRC-32C: a damaged one is written
    again (and named in :attr:`UnitWork.damaged`), never reused.
    """
    stored = _StoredUnits(backend)
    work = UnitWork(jobs=[], to_publish=[], videos_up_to_date=0, frames_reused=0)
    planned: set[str] = set()
    for video in plan.videos:
        existing = backend.video_attrs(video.video_id)
        if (
            existing is not None
            and existing.get("complete") is True
            and existing.get("labels_key") == video.attrs["labels_key"]
            and stored.sound(video.frames_key)
        ):
            work.videos_up_to_date += 1
            continue
        work.to_publish.append(video)
        if stored.sound(video.frames_key):
            work.frames_reused += int(video.frame_number.size)
        elif video.frames_key not in planned:
            planned.add(video.frames_key)
            have, sources = _copy_sources(backend, stored.sound_units_of(video.pixel_key), video.frame_number)
            job = _unit_job(backend, plan, opts, video, video.frame_number[~have], sources)
            job.rewrite = video.frames_key in stored.attrs  # stored, but damaged
            work.jobs.append(job)
    work.damaged = stored.damaged
    return work


class _StoredUnits:
    """The store's complete frames units, each checked against its chunks' CRC-32C the first time it is used."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.attrs = backend.frames_units()
        self.by_pixels: dict[str, list[str]] = {}
        for key, uattrs in self.attrs.items():
            self.by_pixels.setdefault(str(uattrs.get("pixel_key")), []).append(key)
        self.checked: dict[str, bool] = {}
        self.damaged: dict[str, str] = {}  # unit key -> what is wrong with it, in words

    def sound(self, key: str) -> bool:
        """True if unit ``key`` is stored and every chunk of it passes its CRC-32C."""
        if key not in self.attrs:
            return False
        if key not in self.checked:
            failing = damaged_unit_chunks(self.backend, key)
            self.checked[key] = failing == []
            if failing != []:
                what = "cannot be read" if failing is None else f"chunks {', '.join(map(str, failing[:10]))} fail"
                vid = self.attrs[key].get("video_id")
                self.damaged[key] = f"frames unit {key[:12]} of video {vid!r}: {what}" + (
                    "" if failing is None else " their CRC-32C"
                )
        return self.checked[key]

    def sound_units_of(self, pixel_key: str) -> list[str]:
        """The sound units holding frames of these pixels (copy sources)."""
        return [key for key in self.by_pixels.get(pixel_key, []) if self.sound(key)]


def _copy_sources(
    backend: Backend, keys: Sequence[str], frame_number: np.ndarray
) -> tuple[np.ndarray, list[tuple[str, np.ndarray, np.ndarray]]]:
    """Which of ``frame_number`` stored units of the same pixels hold, and from which: ``(unit key, its frame
    numbers, the rows of ours it gives)`` per unit, each row from the first unit holding it."""
    have = np.zeros(frame_number.size, bool)
    sources = []
    for key in keys:
        numbers = backend.unit_frame_number(key)
        pos = np.searchsorted(numbers, frame_number)
        hit = pos < numbers.size
        hit[hit] = numbers[pos[hit]] == frame_number[hit]
        hit &= ~have
        if hit.any():
            sources.append((key, numbers, np.flatnonzero(hit)))
            have |= hit
    return have, sources


def _unit_job(
    backend: Backend, plan: ExportPlan, opts: ExportOptions, video: VideoPlan, decode: np.ndarray,
    sources: list[tuple[str, np.ndarray, np.ndarray]],
) -> UnitJob:  # fmt: skip
    return UnitJob(
        folder=str(backend.folder),
        key=video.frames_key,
        meta=video.meta,
        view=plan.view,
        size=video.size,
        chunk_frames=int(video.attrs["chunk_frames"]),
        frame_number=video.frame_number,
        decode=decode,
        sources=sources,
        attrs={"pixel_key": video.pixel_key, "content_hash": video.attrs["content_hash"], "video_id": video.video_id},
    )
