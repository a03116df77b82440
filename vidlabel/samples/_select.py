"""The columnar selection behind :class:`~vidlabel.samples.FrameSamples`: which frames, which rows.

Decided from a release's annotation table alone (NumPy columns, no per-row
Python objects), so a million-row release opens fast. The selected box/mask
rows ("regions") are sorted by (video, frame, annotation id) and indexed
CSR-style by distinct (video, frame) key (``video_code << KEY_SHIFT | frame``);
time markers are kept as intervals and, for the frames of the sample index,
compressed into a small table of distinct ``frame_labels`` vectors.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel._words import plural
from vidlabel.dataset._release import Release
from vidlabel.errors import (
    OptionError,
    SampleIndexTypeError,
    SampleOutOfRangeError,
    UnknownVideoError,
    VidlabelWarning,
)
from vidlabel.geometry import view_boxes
from vidlabel.samples._attributes import attribute_keep, check_attribute_filter, check_with_attributes
from vidlabel.schema import SampleOptions, as_names, option_shown, sample_options
from vidlabel.spec import (
    KINDS,
    ORIGINS,
    STATUSES,
    AnnotationTable,
    VideoMetadata,
    View,
    frame_ranges,
    ranges_text,
)
from vidlabel.video._locate import roots_of

__all__ = [
    "BLOCK_FRAMES",
    "KEY_SHIFT",
    "SampleIndex",
    "Selection",
    "check_options",
    "marker_patterns",
    "names_shown",
    "out_size",
    "readonly",
    "select_samples",
]

KEY_SHIFT = 40  # key = video_code << 40 | frame
_FRAME_MASK = (1 << KEY_SHIFT) - 1
_KIND_BOX, _KIND_MASK, _KIND_MARKER = (KINDS.index(k) for k in ("box", "mask", "marker"))
_REJECTED = STATUSES.index("rejected")
BLOCK_FRAMES = 8192  # frames per block when iterating (bounds the temporary Python ints)


def names_shown(items: Iterable[str], limit: int = 20) -> str:
    """Up to ``limit`` names, comma-separated, with the total when there are more."""
    items = list(items)
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def readonly(arr: np.ndarray) -> np.ndarray:
    """``arr``, made read-only in place."""
    arr.setflags(write=False)
    return arr


class SampleIndex(Sequence):  # type: ignore[type-arg]
    """The (video_id, frame) pairs of a :class:`FrameSamples`, in order, without a Python object per pair.

    Behaves like a read-only list of tuples (``len``, ``[i]``, slices,
    iteration, ``==`` with a list). The columns are also available as arrays.
    ``[i]`` takes an integer, as a list does: a float, a string or a bool
    raises :class:`~vidlabel.errors.SampleIndexTypeError` (never rounded or
    parsed), a position outside ``[-n, n)``
    :class:`~vidlabel.errors.SampleOutOfRangeError` (an IndexError).

    Attributes
    ----------
    video_ids : tuple of str
        The videos the codes refer to (sorted).
    video_codes : (F,) int32
        Index into ``video_ids`` of each sample.
    frames : (F,) int64
        Frame number of each sample.
    """

    def __init__(self, video_ids: tuple[str, ...], video_codes: np.ndarray, frames: np.ndarray) -> None:
        self.video_ids = video_ids
        self.video_codes = video_codes
        self.frames = frames

    def __len__(self) -> int:
        return int(self.frames.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return list(self._pairs(self.video_codes[i], self.frames[i]))
        n = len(self)
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise SampleIndexTypeError(
                f"sample position must be an integer in [0, {n}) or a slice, got {i!r} ({type(i).__name__})"
            )
        j = int(i)
        if j < -n or j >= n:
            raise SampleOutOfRangeError(f"sample position {j} out of range [0, {n})")
        j %= n
        return (self.video_ids[int(self.video_codes[j])], int(self.frames[j]))

    def _pairs(self, codes: np.ndarray, frames: np.ndarray) -> Iterator[tuple[str, int]]:
        ids = self.video_ids
        for a in range(0, int(frames.shape[0]), BLOCK_FRAMES):
            for v, f in zip(codes[a : a + BLOCK_FRAMES].tolist(), frames[a : a + BLOCK_FRAMES].tolist()):
                yield (ids[v], f)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return self._pairs(self.video_codes, self.frames)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SampleIndex):
            return (
                self.video_ids == other.video_ids
                and np.array_equal(self.video_codes, other.video_codes)
                and np.array_equal(self.frames, other.frames)
            )
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(tuple(a) == b for a, b in zip(other, self))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = len(self)
        if n <= 40:
            return repr(list(self))
        head = ", ".join(repr(p) for p in self[:3])
        tail = ", ".join(repr(p) for p in self[n - 3 :])
        return f"[{head}, ..., {tail}]  # {n} pairs"


@dataclass(frozen=True)
class Selection:
    """What :func:`select_samples` chose: classes, view, videos, the regions, the markers and the samples.

    Every array is read-only. Regions (R rows) are in (video, frame,
    annotation id) order; keys are ``video_code << KEY_SHIFT | frame``.

    Attributes
    ----------
    class_names : tuple of str
    view : View or None
    view_id : str or None
    video_ids : tuple of str
        The selected videos, sorted; a video code is a position here.
    videos : dict of str to VideoMetadata
    image_sizes : (V, 2) int64
        (width, height) of the images of each video (the view's size, or the displayed frame's).
    dropped : int
        Rows left out because they lie outside their video's frames.
    untrusted_rows : int
        Selected box/mask rows on frames without a trustworthy picture (the
        videos' ``untrusted_frames``); they stay in the regions (``sample``
        gives them for an image supplied otherwise) but their frames are no
        samples.
    untrusted_frames : int
        Frames of the sample list (before ``stride``) left out because they
        have no trustworthy picture.
    rk_key : (K,) int64
        The distinct (video, frame) keys of the regions, ascending.
    rk_off : (K + 1,) int64
        CSR offsets of each key's regions.
    r_box : (R, 4) float64, xyxy pixels of the image (the view's when one is set)
    r_label : (R,) int64, class index plus ``label_offset``
    r_track : (R,) int64, -1 for none
    r_ann : (R,) int64, annotation ids
    m_offsets : (R + 1,) int64; m_counts : (M,) uint8; m_size : (R, 2) int32
        COCO RLE of each region's mask in CSR form (empty without ``with_masks``).
    mk_video, mk_start, mk_end, mk_class : (Mk,) int64
        Marker intervals (inclusive end, clipped to the video), sorted by (video, start).
    mk_off : (V + 1,) int64
        CSR offsets of each video's markers.
    index : SampleIndex
        The samples.
    ix_lo, ix_hi : (F,) int64
        Region range ``[lo, hi)`` of each sample.
    ix_pattern : (F,) int32
        Row of ``patterns`` of each sample.
    patterns : (P, C) float32
        The distinct ``frame_labels`` vectors.
    """

    class_names: tuple[str, ...]
    view: View | None
    view_id: str | None
    video_ids: tuple[str, ...]
    videos: dict[str, VideoMetadata]
    image_sizes: np.ndarray
    dropped: int
    untrusted_rows: int
    untrusted_frames: int
    rk_key: np.ndarray
    rk_off: np.ndarray
    r_box: np.ndarray
    r_label: np.ndarray
    r_track: np.ndarray
    r_ann: np.ndarray
    m_offsets: np.ndarray
    m_counts: np.ndarray
    m_size: np.ndarray
    mk_video: np.ndarray
    mk_start: np.ndarray
    mk_end: np.ndarray
    mk_class: np.ndarray
    mk_off: np.ndarray
    index: SampleIndex
    ix_lo: np.ndarray
    ix_hi: np.ndarray
    ix_pattern: np.ndarray
    patterns: np.ndarray


def out_size(view: View | None, meta: VideoMetadata) -> tuple[int, int]:
    """(width, height) of the images of a video: the view's size, or the displayed frame's."""
    return view.size if view is not None else (meta.width, meta.height)


def select_samples(rel: Release, opt: dict[str, Any]) -> Selection:
    """Choose the samples and their targets from a release, given options checked by :func:`check_options`.

    The steps: classes, view and videos from the options (:func:`_select_classes`,
    :func:`_select_view`, :func:`_select_videos`); the rows they keep
    (:func:`_keep_rows`); the regions sorted and indexed by (video, frame)
    (:func:`_sort_regions`, :func:`_region_columns`); the markers
    (:func:`_marker_intervals`); the sample list (:func:`_sample_keys`) and each
    sample's region range and marker pattern.

    Raises
    ------
    OptionError
        On a label or view the release does not have, or a view whose crop
        does not fit inside a selected video's frame.
    UnknownVideoError
        On a video id the release does not hold.
    """
    table = rel.table
    class_names, lab_map = _select_classes(rel, opt)
    view_id, view = _select_view(rel, opt)
    video_ids, videos, vid_map = _select_videos(rel, opt, view_id, view)
    image_sizes = readonly(np.array([out_size(view, videos[v]) for v in video_ids], dtype=np.int64).reshape(-1, 2))
    frame_counts = np.array([videos[v].frame_count for v in video_ids], dtype=np.int64)
    keep = _keep_rows(table, opt, vid_map, lab_map, view_id, rel.info.get("attribute_schema"))
    rows, key, dropped = _sort_regions(table, keep, vid_map, frame_counts)
    # Rows on frames without a trustworthy picture (the reader refuses those frames).
    bad_masks = {c: videos[v].untrusted_mask() for c, v in enumerate(video_ids) if videos[v].untrusted_count}
    untrusted_row_keys = key[_on_untrusted(key, bad_masks, len(video_ids))]
    regions = _region_columns(table, rows, key, opt, view, lab_map, keep.lab_identity)
    del key
    markers = _marker_intervals(table, keep.markers, vid_map, lab_map, frame_counts)
    keys = _sample_keys(opt, frame_counts, regions["rk_key"], bool(keep.region_kinds), markers)
    frames_untrusted = _on_untrusted(keys, bad_masks, len(video_ids))
    _warn_untrusted(video_ids, untrusted_row_keys, keys[frames_untrusted])
    if frames_untrusted.any():
        keys = keys[~frames_untrusted]
    keys = np.ascontiguousarray(_every_nth(keys, opt["stride"]), dtype=np.int64)
    index = SampleIndex(video_ids, readonly((keys >> KEY_SHIFT).astype(np.int32)), readonly(keys & _FRAME_MASK))
    ix_lo, ix_hi = _region_ranges(keys, regions["rk_key"], regions["rk_off"])
    ix_pattern, patterns = marker_patterns(
        keys, markers["mk_video"], markers["mk_start"], markers["mk_end"], markers["mk_class"], len(class_names)
    )
    return Selection(
        class_names=class_names,
        view=view,
        view_id=view_id,
        video_ids=video_ids,
        videos=videos,
        image_sizes=image_sizes,
        dropped=dropped,
        untrusted_rows=int(untrusted_row_keys.size),
        untrusted_frames=int(frames_untrusted.sum()),
        **regions,
        **markers,
        index=index,
        ix_lo=ix_lo,
        ix_hi=ix_hi,
        ix_pattern=ix_pattern,
        patterns=patterns,
    )


def _select_classes(rel: Release, opt: dict[str, Any]) -> tuple[tuple[str, ...], np.ndarray]:
    """(class names, (L + 1,) int64 class of each table label code, -1 for left out; the last entry is -1)."""
    table = rel.table
    vocabulary = tuple(rel.labels) if rel.labels else tuple(table.labels)
    if opt["labels"] is None:
        class_names = vocabulary
    else:
        unknown = [x for x in opt["labels"] if x not in vocabulary]
        if unknown:
            raise OptionError(
                f"unknown label {unknown[0]!r} in {option_shown('labels', opt['labels'])}; "
                f"the release's labels: {names_shown(vocabulary)}"
            )
        class_names = tuple(opt["labels"])
    class_of = {name: i for i, name in enumerate(class_names)}
    return class_names, np.array([class_of.get(x, -1) for x in table.labels] + [-1], dtype=np.int64)


def _select_view(rel: Release, opt: dict[str, Any]) -> tuple[str | None, View | None]:
    """(view_id, View) of the ``view_id`` option, or (None, None); refuses a view the release lacks."""
    view_id = opt["view_id"]
    if view_id is None:
        return None, None
    if view_id not in rel.views:
        raise OptionError(
            f"unknown view {view_id!r}; the release's views: {names_shown(sorted(rel.views)) or '(none)'}"
        )
    return view_id, rel.views[view_id]


def _select_videos(
    rel: Release, opt: dict[str, Any], view_id: str | None, view: View | None
) -> tuple[tuple[str, ...], dict[str, VideoMetadata], np.ndarray]:
    """(sorted video ids, their metadata, (V + 1,) int64 code of each table video code, -1 for left out).

    Refuses a video the release lacks and a view whose crop leaves a selected video's frame.
    """
    if opt["videos"] is None:
        video_ids = tuple(sorted(rel.videos))
    else:
        for v in opt["videos"]:
            if v not in rel.videos:
                raise UnknownVideoError(
                    f"unknown video {v!r} in {option_shown('videos', opt['videos'])}; release {rel.release_id} holds: "
                    f"{names_shown(sorted(rel.videos))}",
                    video_id=v,
                )
        video_ids = tuple(sorted(set(opt["videos"])))
    videos: dict[str, VideoMetadata] = {v: rel.videos[v] for v in video_ids}
    code_of = {v: i for i, v in enumerate(video_ids)}
    vid_map = np.array([code_of.get(v, -1) for v in rel.table.video_ids] + [-1], dtype=np.int64)
    if view is not None:
        for v in video_ids:
            m = videos[v]
            if view.crop[2] > m.width or view.crop[3] > m.height:
                raise OptionError(
                    f"view {view_id!r}: crop {view.crop} does not fit inside video {v!r} ({m.width}x{m.height}); "
                    "leave that video out with videos=, or use a view that fits (validate reports "
                    "view_outside_frame)"
                )
    return video_ids, videos, vid_map


@dataclass(frozen=True)
class _Kept:
    """The table rows the options keep: (N,) bool ``regions`` (box/mask) and ``markers``."""

    regions: np.ndarray
    markers: np.ndarray
    region_kinds: list[int]  # the kind codes selected as regions
    vid_identity: bool  # video codes of the table are the selection's (no mapping needed)
    lab_identity: bool  # label codes of the table are the class indexes


def _keep_rows(
    table: AnnotationTable, opt: dict[str, Any], vid_map: np.ndarray, lab_map: np.ndarray, view_id: str | None,
    schema: Mapping[str, Mapping[str, str]] | None = None,
) -> _Kept:  # fmt: skip
    """The rows of the selected videos, classes, view, origins and kinds, model rows with confidence >= the
    minimum, rejected rows left out.

    Identity maps skip a gather over the table's columns (a fresh process pays a
    page fault for every new page, so fewer temporaries is faster too).
    """
    vid_identity = np.array_equal(vid_map[:-1], np.arange(len(table.video_ids)))
    lab_identity = np.array_equal(lab_map[:-1], np.arange(len(table.labels)))
    keep = table.status != _REJECTED
    if not vid_identity:
        keep &= (vid_map >= 0)[table.video]
    if not lab_identity:
        keep &= (lab_map >= 0)[table.label]
    if view_id is not None:
        vix = table.view_ids.index(view_id) if view_id in table.view_ids else -2
        keep &= table.view == vix
    if opt["origins"] is not None:
        keep &= np.isin(table.origin, [ORIGINS.index(o) for o in opt["origins"]])
    if opt["min_confidence"] is not None:  # model rows only (the spec): a human row's confidence never drops it
        keep &= ~((table.origin == ORIGINS.index("model")) & (table.confidence < np.float32(opt["min_confidence"])))
    if opt.get("attributes"):
        keep &= attribute_keep(table, opt["attributes"], schema)
    region_kinds = [k for k in (_KIND_BOX, _KIND_MASK) if KINDS[k] in opt["kinds"]]
    is_marker = table.kind == _KIND_MARKER
    regions = keep & (np.isin(table.kind, region_kinds) if len(region_kinds) < 2 else ~is_marker)
    return _Kept(regions, keep & is_marker, region_kinds, vid_identity, lab_identity)


def _sort_regions(
    table: AnnotationTable, keep: _Kept, vid_map: np.ndarray, frame_counts: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, int]:
    """(table rows of the regions, None for all; their (R,) int64 keys ascending; rows dropped).

    Sorted by (video, frame, annotation id). Rows before frame 0 or beyond the end
    of their video (frame_count can shrink when a video is re-probed) are dropped,
    with one warning.
    """
    rows: np.ndarray | None = None if bool(keep.regions.all()) else np.flatnonzero(keep.regions)

    def take(col: np.ndarray) -> np.ndarray:
        return col if rows is None else col[rows]

    bad_ids: list[int] = []
    rf = take(table.start_frame)
    if rf.size and int(rf.min()) < 0:
        negative = rf < 0
        bad_ids += take(table.annotation_id)[negative].tolist()
        rows = np.flatnonzero(~negative) if rows is None else rows[~negative]
        rf = take(table.start_frame)
    rv = take(table.video)
    key = rv.astype(np.int64) if keep.vid_identity else vid_map[rv]
    key <<= KEY_SHIFT
    key |= rf
    del rv, rf
    if key.size > 1 and not np.all(key[1:] >= key[:-1]):
        order = np.argsort(key, kind="stable")  # stable: annotation ids stay ascending within a frame
        rows = order if rows is None else rows[order]
        key = key[order]
        del order
    edges = np.searchsorted(key, np.arange(frame_counts.size + 1, dtype=np.int64) << KEY_SHIFT)
    last = key[np.maximum(edges[1:] - 1, 0)] & _FRAME_MASK if key.size else frame_counts
    if key.size and bool(((edges[1:] > edges[:-1]) & (last >= frame_counts)).any()):
        beyond = (key & _FRAME_MASK) >= frame_counts[key >> KEY_SHIFT]
        bad_ids += take(table.annotation_id)[beyond].tolist()
        fine = np.flatnonzero(~beyond)
        rows = fine if rows is None else rows[fine]
        key = key[fine]
    if bad_ids:
        first = int(np.flatnonzero(table.annotation_id == min(bad_ids))[0])
        vcode = int(table.video[first])
        count = int(frame_counts[vcode if keep.vid_identity else vid_map[vcode]])
        warnings.warn(
            f"left out {plural(len(bad_ids), 'annotation row')} lying outside the frames of their video (e.g. "
            f"annotation {min(bad_ids)} of video {table.video_ids[vcode]!r} on frame {int(table.start_frame[first])}, "
            f"outside its frames 0..{count - 1})",
            VidlabelWarning,
            stacklevel=5,
        )
    return rows, key, len(bad_ids)


def _region_columns(
    table: AnnotationTable,
    rows: np.ndarray | None,
    key: np.ndarray,
    opt: dict[str, Any],
    view: View | None,
    lab_map: np.ndarray,
    lab_identity: bool,
) -> dict[str, np.ndarray]:
    """The region fields of :class:`Selection` (``rk_*``, ``r_*``, ``m_*``), read-only: CSR over their distinct keys, boxes in the view's pixels,
    class labels plus ``label_offset``, and (``with_masks``) their masks' RLE."""

    def take(col: np.ndarray) -> np.ndarray:
        return col if rows is None else col[rows]

    boundary = np.empty(key.size + 1, bool)
    boundary[0] = boundary[-1] = True
    np.not_equal(key[1:], key[:-1], out=boundary[1:-1])
    offsets = np.flatnonzero(boundary)  # starts of each distinct (video, frame), then the row count
    box = take(table.box)
    labels_sel = take(table.label)
    r_label = labels_sel.astype(np.int64) if lab_identity else lab_map[labels_sel]
    if opt["label_offset"]:
        r_label += opt["label_offset"]
    if opt["with_masks"]:
        m_offsets, m_counts, m_size = _region_masks(table, np.arange(len(table)) if rows is None else rows)
    else:
        m_offsets = m_counts = readonly(np.zeros(0, np.int64))
        m_size = readonly(np.zeros((0, 2), np.int32))
    return {
        "rk_key": readonly(key[offsets[:-1]]),
        "rk_off": readonly(offsets.astype(np.int64, copy=False)),
        "r_box": readonly(box if view is None else view_boxes(box, view)),
        "r_label": readonly(r_label),
        "r_track": readonly(take(table.track_id)),
        "r_ann": readonly(take(table.annotation_id)),
        "m_offsets": m_offsets,
        "m_counts": m_counts,
        "m_size": m_size,
    }


def _region_masks(table: AnnotationTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, counts, size) of the masks of table ``rows`` in CSR form, read-only (one gather, no loop)."""
    lengths = table.mask_offsets[rows + 1] - table.mask_offsets[rows]
    moff = np.zeros(rows.size + 1, np.int64)
    np.cumsum(lengths, out=moff[1:])
    gather = np.repeat(table.mask_offsets[rows] - moff[:-1], lengths) + np.arange(moff[-1])
    return readonly(moff), readonly(table.mask_counts[gather]), readonly(table.mask_size[rows])


def _marker_intervals(
    table: AnnotationTable, markers: np.ndarray, vid_map: np.ndarray, lab_map: np.ndarray, frame_counts: np.ndarray
) -> dict[str, np.ndarray]:
    """The marker fields of :class:`Selection` (``mk_*``): the kept marker rows as intervals per video (inclusive end, clipped to the video), sorted by
    (video, start), read-only."""
    mrows = np.flatnonzero(markers)
    mv = vid_map[table.video[mrows]]
    ms = np.maximum(table.start_frame[mrows], 0)
    me = np.minimum(table.end_frame[mrows], frame_counts[mv] - 1) if mrows.size else mv
    ok = me >= ms
    mrows, mv, ms, me = mrows[ok], mv[ok], ms[ok], me[ok]
    order = np.lexsort((ms, mv))
    mk_video = readonly(mv[order])
    return {
        "mk_video": mk_video,
        "mk_start": readonly(ms[order]),
        "mk_end": readonly(me[order]),
        "mk_class": readonly(lab_map[table.label[mrows]][order]),
        "mk_off": readonly(np.searchsorted(mk_video, np.arange(frame_counts.size + 1)).astype(np.int64)),
    }


def _sample_keys(
    opt: dict[str, Any],
    frame_counts: np.ndarray,
    rk_key: np.ndarray,
    with_regions: bool,
    markers: dict[str, np.ndarray],
) -> np.ndarray:
    """(F,) int64 keys of the sample list, ascending, before untrusted frames and ``stride`` are applied:
    every frame (``frames="all"``), or the frames with a selected region or inside a selected marker."""
    if opt["frames"] == "all":
        lengths = frame_counts
        total = int(lengths.sum())
        codes = np.repeat(np.arange(frame_counts.size, dtype=np.int64), lengths)
        base = np.repeat(np.cumsum(lengths) - lengths, lengths)
        return (codes << KEY_SHIFT) | (np.arange(total, dtype=np.int64) - base)
    keys = rk_key if with_regions else np.zeros(0, np.int64)
    mk_start, mk_end = markers["mk_start"], markers["mk_end"]
    if "marker" in opt["kinds"] and mk_start.size:
        n = mk_end - mk_start + 1
        first = np.repeat(mk_start - (np.cumsum(n) - n), n)
        mframes = first + np.arange(int(n.sum()), dtype=np.int64)
        mkeys = (np.repeat(markers["mk_video"], n) << KEY_SHIFT) | mframes
        keys = np.union1d(keys, mkeys)
    return keys


def _every_nth(keys: np.ndarray, stride: int) -> np.ndarray:
    """Every ``stride``-th of the sorted ``keys`` of each video, from that video's first key."""
    if stride <= 1 or not keys.size:
        return keys
    kv = keys >> KEY_SHIFT
    first = np.flatnonzero(np.r_[True, kv[1:] != kv[:-1]])
    starts = np.repeat(first, np.diff(np.r_[first, kv.size]))
    return keys[(np.arange(kv.size) - starts) % stride == 0]


def _region_ranges(keys: np.ndarray, rk_key: np.ndarray, rk_off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (F,) int64: the range ``[lo, hi)`` of regions of each sample key (empty where it has none)."""
    if np.array_equal(keys, rk_key):
        return rk_off[:-1], rk_off[1:]
    pos = np.searchsorted(rk_key, keys)
    found = pos < rk_key.size
    found[found] = rk_key[pos[found]] == keys[found]
    lo = np.where(found, rk_off[np.minimum(pos, rk_key.size)], 0)
    hi = np.where(found, rk_off[np.minimum(pos + 1, rk_key.size)], 0)
    return readonly(lo.astype(np.int64)), readonly(hi.astype(np.int64))


def _on_untrusted(keys: np.ndarray, masks: dict[int, np.ndarray], n_videos: int) -> np.ndarray:
    """(K,) bool: which of the sorted ``keys`` lie on an untrusted frame (``masks``: video code -> (T,) bool)."""
    out = np.zeros(keys.size, bool)
    if not masks or not keys.size:
        return out
    edges = np.searchsorted(keys, np.arange(n_videos + 1, dtype=np.int64) << KEY_SHIFT)
    for code, mask in masks.items():
        a, b = int(edges[code]), int(edges[code + 1])
        out[a:b] = mask[keys[a:b] & _FRAME_MASK]
    return out


def _warn_untrusted(video_ids: tuple[str, ...], row_keys: np.ndarray, frame_keys: np.ndarray) -> None:
    """One warning for the rows and sample frames left out because their frame has no trustworthy picture."""
    if not row_keys.size and not frame_keys.size:
        return
    parts = []
    for code in np.union1d(row_keys >> KEY_SHIFT, frame_keys >> KEY_SHIFT).tolist():
        frames = frame_keys[(frame_keys >> KEY_SHIFT) == code] & _FRAME_MASK
        rows = int(((row_keys >> KEY_SHIFT) == code).sum())
        where = f": {ranges_text(frame_ranges(frames))}" if frames.size else ""
        parts.append(f"video {video_ids[code]!r}: {rows} annotations, {frames.size} frames{where}")
    warnings.warn(
        f"{row_keys.size} annotations and {frame_keys.size} frames without a trustworthy picture are left out of "
        f"the samples ({'; '.join(parts)}): the reader refuses those frames (they follow a decode error before "
        "the next keyframe; the file may be truncated or corrupt); validate reports them (untrusted_frame)",
        VidlabelWarning,
        stacklevel=5,
    )


def marker_patterns(
    keys: np.ndarray,
    mk_video: np.ndarray,
    mk_start: np.ndarray,
    mk_end: np.ndarray,
    mk_class: np.ndarray,
    n_classes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, a row of a small table of distinct frame_labels vectors."""
    if mk_start.size == 0 or keys.size == 0:
        return readonly(np.zeros(keys.size, np.int32)), readonly(np.zeros((1, n_classes), np.float32))
    a = np.searchsorted(keys, (mk_video << KEY_SHIFT) | mk_start, side="left")
    b = np.searchsorted(keys, (mk_video << KEY_SHIFT) | mk_end, side="right")
    cuts = np.unique(np.concatenate([[0, keys.size], a, b]))
    seg_a = np.searchsorted(cuts, a)
    seg_b = np.searchsorted(cuts, b)
    diff = np.zeros((cuts.size, n_classes), np.int32)
    np.add.at(diff, (seg_a, mk_class), 1)
    np.add.at(diff, (seg_b, mk_class), -1)
    active = np.cumsum(diff, axis=0)[:-1] > 0  # one row per segment [cuts[i], cuts[i + 1])
    patterns, seg_pattern = np.unique(active, axis=0, return_inverse=True)
    per_sample = np.repeat(seg_pattern.reshape(-1).astype(np.int32), np.diff(cuts))
    return readonly(per_sample), readonly(patterns.astype(np.float32))


def check_options(
    *,
    view_id: str | None = None,
    videos: Sequence[str] | None = None,
    kinds: Sequence[str] = ("box", "mask"),
    labels: Sequence[str] | None = None,
    origins: Sequence[str] | None = None,
    min_confidence: float | None = None,
    frames: str = "annotated",
    stride: int = 1,
    with_masks: bool = False,
    box_format: str = "xyxy",
    normalized: bool = False,
    label_offset: int = 0,
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    cache: str | os.PathLike[str] | None = None,
    options: SampleOptions | None = None,
    attributes: Mapping[str, Any] | None = None,
    with_attributes: Sequence[str] | None = None,
) -> tuple[SampleOptions, dict[str, Any]]:
    """Validate the options that do not need the release; normalise them to tuples.

    Returns the target options, checked once as a :class:`~vidlabel.schema.SampleOptions`, and every
    option by name (the target options' normalised values among them).
    """
    targets = sample_options(
        options, "FrameSamples", kinds=kinds, labels=labels, origins=origins, min_confidence=min_confidence,
        with_masks=with_masks, box_format=box_format, normalized=normalized, label_offset=label_offset,
    )  # fmt: skip
    videos_t = None if videos is None else as_names(videos, "videos")
    if view_id is not None and not isinstance(view_id, str):
        raise OptionError(f"view_id must be a string or None, got {view_id!r}")
    if frames not in ("annotated", "all"):
        raise OptionError(f"unknown frames mode {frames!r}; allowed: annotated, all")
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or not 1 <= stride < 2**63:
        raise OptionError(f"stride must be an integer in [1, 2**63), got {stride!r}")
    roots_t = roots_of(roots)
    if cache is not None:
        where = os.fspath(cache) if isinstance(cache, (str, os.PathLike)) else None
        if not isinstance(where, str) or not where:
            raise OptionError(
                f"cache must be the folder or URL of a frame cache (`vidlabel cache DATASET OUT`), or None, "
                f"got {cache!r}"
            )
        cache = where
    return targets, {
        "view_id": view_id,
        "videos": videos_t,
        "kinds": targets.kinds,
        "labels": targets.labels,
        "origins": targets.origins,
        "min_confidence": targets.min_confidence,
        "frames": frames,
        "stride": int(stride),
        "with_masks": targets.with_masks,
        "box_format": targets.box_format,
        "normalized": targets.normalized,
        "label_offset": targets.label_offset,
        "roots": roots_t,
        "cache": cache,
        "attributes": check_attribute_filter(attributes),
        "with_attributes": check_with_attributes(with_attributes),
    }
