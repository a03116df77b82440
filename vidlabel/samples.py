"""FrameSamples: which frames to train on, and the targets of each.

Spec: "What a sample contains", "Choosing what to train on", "Reading a list
of frames you chose: ReadPlan", "How big a dataset can be". The selection is
decided from a release's annotation table alone (columnar NumPy, no per-row
Python objects), so opening a million-row release is fast; pixels come from a
:class:`~vidlabel.frames.FrameReader` (or a frame store given as ``cache=``).

Internally the selected box/mask rows ("regions") are sorted by (video,
frame, annotation id) and indexed CSR-style by distinct (video, frame); time
markers are kept as intervals and, for the frames of ``index``, compressed
into a small table of distinct ``frame_labels`` vectors.
"""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import numpy as np

from vidlabel.errors import FrameOutOfRangeError, OptionError, UnknownVideoError, VidlabelWarning
from vidlabel.geometry import (
    boxes_from_xyxy,
    decode_rle,
    make_sample,
    resize_mask,
    view_boxes,
    view_image,
    view_mask,
)
from vidlabel.readplan import STREAM_SHUFFLE_BUFFER, ReadPlan, epoch_rng, shuffled
from vidlabel.release import Release
from vidlabel.spec import (
    BOX_FORMATS,
    KINDS,
    ORIGINS,
    STATUSES,
    BoxFormat,
    FrameIndex,
    Kind,
    Origin,
    VideoMetadata,
    View,
)
from vidlabel.storereader import StoreBackedReader

__all__ = ["FrameSamples", "SampleIndex", "StoreBackedReader"]

_SHIFT = 40  # key = video_code << 40 | frame
_FRAME_MASK = (1 << _SHIFT) - 1
_KIND_BOX, _KIND_MASK, _KIND_MARKER = (KINDS.index(k) for k in ("box", "mask", "marker"))
_REJECTED = STATUSES.index("rejected")
_BLOCK = 8192  # frames per block when iterating (bounds the temporary Python ints)


def _names(items: Iterable[str], limit: int = 20) -> str:
    items = list(items)
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


class SampleIndex(Sequence):  # type: ignore[type-arg]
    """The (video_id, frame) pairs of a :class:`FrameSamples`, in order, without a Python object per pair.

    Behaves like a read-only list of tuples (``len``, ``[i]``, slices,
    iteration, ``==`` with a list). The columns are also available as arrays.

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
        j = int(i)
        if j < -n or j >= n:
            raise IndexError(f"sample position {j} out of range [0, {n})")
        j %= n
        return (self.video_ids[int(self.video_codes[j])], int(self.frames[j]))

    def _pairs(self, codes: np.ndarray, frames: np.ndarray) -> Iterator[tuple[str, int]]:
        ids = self.video_ids
        for a in range(0, int(frames.shape[0]), _BLOCK):
            for v, f in zip(codes[a : a + _BLOCK].tolist(), frames[a : a + _BLOCK].tolist()):
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


class FrameSamples:
    """The frames to train on and the targets of each, chosen from a release's annotation table.

    Parameters
    ----------
    ds : Dataset
        The dataset (only its path is kept: a FrameSamples is picklable).
    release : str or None
        A release id, ``"latest"``, or None for the live unreviewed and
        approved rows (``ds.snapshot()``).
    view_id : str, optional
        Train on that view's crop (resized to its ``output_size``) with only
        the annotations made in that view (markers included); None = full
        frames and all annotations.
    videos : sequence of str, optional
        Restrict to these video ids.
    kinds : sequence of {"box", "mask", "marker"}
        Which kinds define the samples and the targets. A box row and a mask
        row of one object are two rows (two targets). Markers always fill
        ``frame_labels``; "marker" here also makes their frames samples.
    labels : sequence of str, optional
        Keep only these labels; ``class_names`` is this list, in this order.
    origins : sequence of {"human", "model"}, optional
    min_confidence : float, optional
        Drop rows whose confidence is below this; rows without a confidence
        are kept.
    frames : {"annotated", "all"}
        "annotated": frames with a selected annotation of a kind in ``kinds``;
        "all": every frame of the selected videos.
    stride : int
        Keep every ``stride``-th entry of that list (global positions 0,
        stride, 2 * stride, ... across videos in video-id order).
    with_masks : bool
        Decode masks into the samples (an all-zero mask for a box row).
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
        Boxes as fractions of the image width and height.
    label_offset : int
        Added to ``labels`` (not to ``frame_labels`` positions).
    roots : sequence of path
        Folders to search for videos whose recorded path is stale.
    cache : path, optional
        A frame store (``vidlabel.store.open_store``); frames it holds for a
        video with the same content hash are read from it, the rest from the
        video.

    Raises
    ------
    OptionError
        On an unknown label, view, kind, origin, frames mode or box format,
        ``stride < 1``, a non-integer ``label_offset`` or a bad
        ``min_confidence``.
    UnknownVideoError
        On a video id the release does not hold.
    ReleaseNotFoundError
        From the dataset, on an unknown release id.

    Notes
    -----
    Memory is about 100 bytes per selected box row plus 30 bytes per sample;
    with ``with_masks=True`` the RLE bytes of the selected mask rows too.
    """

    def __init__(
        self,
        ds: Any,
        *,
        release: str | None = "latest",
        view_id: str | None = None,
        videos: Sequence[str] | None = None,
        kinds: Sequence[Kind] = ("box", "mask"),
        labels: Sequence[str] | None = None,
        origins: Sequence[Origin] | None = None,
        min_confidence: float | None = None,
        frames: Literal["annotated", "all"] = "annotated",
        stride: int = 1,
        with_masks: bool = False,
        box_format: BoxFormat = "xyxy",
        normalized: bool = False,
        label_offset: int = 0,
        roots: Sequence[str | os.PathLike[str]] = (),
        cache: str | os.PathLike[str] | None = None,
    ) -> None:
        options = _check_options(
            view_id=view_id, videos=videos, kinds=kinds, labels=labels, origins=origins,
            min_confidence=min_confidence, frames=frames, stride=stride, with_masks=with_masks,
            box_format=box_format, normalized=normalized, label_offset=label_offset, roots=roots, cache=cache,
        )  # fmt: skip
        if release is not None and not isinstance(release, str):
            raise OptionError(f"release must be a release id, 'latest' or None, got {release!r}")
        rel = ds.snapshot() if release is None else ds.release(release)
        path = getattr(ds, "path", None)
        self._init(rel, options, dataset_path=None if path is None else str(path))

    @classmethod
    def from_release(
        cls, release: Release, *, dataset_path: str | os.PathLike[str] | None = None, **options: Any
    ) -> FrameSamples:
        """A FrameSamples over a :class:`~vidlabel.release.Release` object already in hand.

        Takes the same keyword options as the constructor (except ``release``).
        """
        self = cls.__new__(cls)
        self._init(release, _check_options(**options), dataset_path=None if dataset_path is None else str(dataset_path))
        return self

    # -- building ------------------------------------------------------------------------------

    def _init(self, rel: Release, opt: dict[str, Any], *, dataset_path: str | None) -> None:
        table = rel.table
        self._dataset_path = dataset_path
        self._release_id = rel.release_id
        self._release_created = rel.created
        self._options = opt
        self._box_format = opt["box_format"]
        self._normalized = opt["normalized"]
        self._label_offset = opt["label_offset"]
        self._with_masks = opt["with_masks"]
        self._roots = opt["roots"]
        self._cache_path = opt["cache"]
        self._store: Any = None
        self._store_pid = -1

        # Classes.
        vocabulary = tuple(rel.labels) if rel.labels else tuple(table.labels)
        if opt["labels"] is None:
            class_names = vocabulary
        else:
            unknown = [x for x in opt["labels"] if x not in vocabulary]
            if unknown:
                raise OptionError(
                    f"unknown label {unknown[0]!r} in labels=; the release's labels: {_names(vocabulary)}"
                )
            class_names = tuple(opt["labels"])
        self._class_names = class_names
        class_of = {name: i for i, name in enumerate(class_names)}
        lab_map = np.array([class_of.get(x, -1) for x in table.labels] + [-1], dtype=np.int64)

        # View.
        view_id = opt["view_id"]
        self._view: View | None = None
        if view_id is not None:
            if view_id not in rel.views:
                raise OptionError(
                    f"unknown view {view_id!r}; the release's views: {_names(sorted(rel.views)) or '(none)'}"
                )
            self._view = rel.views[view_id]
        self._view_id = view_id

        # Videos.
        if opt["videos"] is None:
            video_ids = tuple(sorted(rel.videos))
        else:
            for v in opt["videos"]:
                if v not in rel.videos:
                    raise UnknownVideoError(
                        f"unknown video {v!r} in videos=; release {rel.release_id} holds: {_names(sorted(rel.videos))}",
                        video_id=v,
                    )
            video_ids = tuple(sorted(set(opt["videos"])))
        self._video_ids = video_ids
        self._videos: dict[str, VideoMetadata] = {v: rel.videos[v] for v in video_ids}
        code_of = {v: i for i, v in enumerate(video_ids)}
        vid_map = np.array([code_of.get(v, -1) for v in table.video_ids] + [-1], dtype=np.int64)
        sizes = np.array([self._out_size(self._videos[v]) for v in video_ids], dtype=np.int64).reshape(-1, 2)
        self._image_sizes = _readonly(sizes)
        frame_counts = np.array([self._videos[v].frame_count for v in video_ids], dtype=np.int64)

        # Rows. Identity maps and all-rows selections avoid copying the table's columns (a fresh
        # process pays a page fault for every new page, so fewer temporaries is faster too).
        n_rows = len(table)
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
        if opt["min_confidence"] is not None:
            keep &= ~(table.confidence < np.float32(opt["min_confidence"]))
        region_kinds = [k for k in (_KIND_BOX, _KIND_MASK) if KINDS[k] in opt["kinds"]]
        is_marker = table.kind == _KIND_MARKER
        regions = keep & (np.isin(table.kind, region_kinds) if len(region_kinds) < 2 else ~is_marker)
        markers = keep & is_marker
        del keep, is_marker

        # Regions: sorted by (video, frame, annotation id), CSR over distinct (video, frame).
        rows: np.ndarray | None = None if bool(regions.all()) else np.flatnonzero(regions)
        del regions

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
        key = rv.astype(np.int64) if vid_identity else vid_map[rv]
        key <<= _SHIFT
        key |= rf
        del rv, rf
        if key.size > 1 and not np.all(key[1:] >= key[:-1]):
            order = np.argsort(key, kind="stable")  # stable: annotation ids stay ascending within a frame
            rows = order if rows is None else rows[order]
            key = key[order]
            del order
        # Rows beyond the end of their video (frame_count can shrink when a video is re-probed).
        edges = np.searchsorted(key, np.arange(len(video_ids) + 1, dtype=np.int64) << _SHIFT)
        last = key[np.maximum(edges[1:] - 1, 0)] & _FRAME_MASK if key.size else frame_counts
        if key.size and bool(((edges[1:] > edges[:-1]) & (last >= frame_counts)).any()):
            beyond = (key & _FRAME_MASK) >= frame_counts[key >> _SHIFT]
            bad_ids += take(table.annotation_id)[beyond].tolist()
            fine = np.flatnonzero(~beyond)
            rows = fine if rows is None else rows[fine]
            key = key[fine]
        self._dropped = len(bad_ids)
        if bad_ids:
            warnings.warn(
                f"{len(bad_ids)} annotation rows lie outside their video's frames (e.g. annotation "
                f"{min(bad_ids)}); they are left out",
                VidlabelWarning,
                stacklevel=3,
            )
        boundary = np.empty(key.size + 1, bool)
        boundary[0] = boundary[-1] = True
        np.not_equal(key[1:], key[:-1], out=boundary[1:-1])
        offsets = np.flatnonzero(boundary)  # starts of each distinct (video, frame), then the row count
        self._rk_key = _readonly(key[offsets[:-1]])
        self._rk_off = _readonly(offsets.astype(np.int64, copy=False))
        del key, boundary, offsets
        box = take(table.box)
        self._r_box = _readonly(box if self._view is None else view_boxes(box, self._view))
        labels_sel = take(table.label)
        r_label = labels_sel.astype(np.int64) if lab_identity else lab_map[labels_sel]
        if self._label_offset:
            r_label += self._label_offset
        self._r_label = _readonly(r_label)
        self._r_track = _readonly(take(table.track_id))
        self._r_ann = _readonly(take(table.annotation_id))
        self._r_boxes_out: np.ndarray | None = None
        if self._with_masks:
            mrows_ = np.arange(n_rows) if rows is None else rows
            lengths = table.mask_offsets[mrows_ + 1] - table.mask_offsets[mrows_]
            moff = np.zeros(mrows_.size + 1, np.int64)
            np.cumsum(lengths, out=moff[1:])
            gather = np.repeat(table.mask_offsets[mrows_] - moff[:-1], lengths) + np.arange(moff[-1])
            self._m_offsets = _readonly(moff)
            self._m_counts = _readonly(table.mask_counts[gather])
            self._m_size = _readonly(table.mask_size[mrows_])
        del box, labels_sel, r_label

        # Markers: intervals per video (inclusive end, clipped to the video).
        mrows = np.flatnonzero(markers)
        mv = vid_map[table.video[mrows]]
        ms = np.maximum(table.start_frame[mrows], 0)
        me = np.minimum(table.end_frame[mrows], frame_counts[mv] - 1) if mrows.size else mv
        ok = me >= ms
        mrows, mv, ms, me = mrows[ok], mv[ok], ms[ok], me[ok]
        order = np.lexsort((ms, mv))
        self._mk_video = _readonly(mv[order])
        self._mk_start = _readonly(ms[order])
        self._mk_end = _readonly(me[order])
        self._mk_class = _readonly(lab_map[table.label[mrows]][order])
        self._mk_off = _readonly(np.searchsorted(self._mk_video, np.arange(len(video_ids) + 1)).astype(np.int64))

        # The sample list.
        if opt["frames"] == "all":
            lengths = frame_counts
            total = int(lengths.sum())
            codes = np.repeat(np.arange(len(video_ids), dtype=np.int64), lengths)
            base = np.repeat(np.cumsum(lengths) - lengths, lengths)
            keys = (codes << _SHIFT) | (np.arange(total, dtype=np.int64) - base)
        else:
            keys = self._rk_key if region_kinds else np.zeros(0, np.int64)
            if "marker" in opt["kinds"] and self._mk_start.size:
                n = self._mk_end - self._mk_start + 1
                first = np.repeat(self._mk_start - (np.cumsum(n) - n), n)
                mframes = first + np.arange(int(n.sum()), dtype=np.int64)
                mkeys = (np.repeat(self._mk_video, n) << _SHIFT) | mframes
                keys = np.union1d(keys, mkeys)
        if opt["stride"] > 1:
            keys = keys[:: opt["stride"]]
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        self._index = SampleIndex(
            video_ids, _readonly((keys >> _SHIFT).astype(np.int32)), _readonly(keys & _FRAME_MASK)
        )
        # Region range of every sample.
        if keys is self._rk_key or np.array_equal(keys, self._rk_key):
            self._ix_lo, self._ix_hi = self._rk_off[:-1], self._rk_off[1:]
        else:
            pos = np.searchsorted(self._rk_key, keys)
            found = pos < self._rk_key.size
            found[found] = self._rk_key[pos[found]] == keys[found]
            lo = np.where(found, self._rk_off[np.minimum(pos, self._rk_key.size)], 0)
            hi = np.where(found, self._rk_off[np.minimum(pos + 1, self._rk_key.size)], 0)
            self._ix_lo, self._ix_hi = _readonly(lo.astype(np.int64)), _readonly(hi.astype(np.int64))
        self._ix_pattern, self._patterns = self._marker_patterns(keys)
        if self._cache_path is not None:
            self._frame_store()  # fail early on a missing or unreadable store

    def _out_size(self, meta: VideoMetadata) -> tuple[int, int]:
        return self._view.size if self._view is not None else (meta.width, meta.height)

    def _marker_patterns(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per sample, a row of a small table of distinct frame_labels vectors."""
        n_classes = len(self._class_names)
        if self._mk_start.size == 0 or keys.size == 0:
            return _readonly(np.zeros(keys.size, np.int32)), _readonly(np.zeros((1, n_classes), np.float32))
        a = np.searchsorted(keys, (self._mk_video << _SHIFT) | self._mk_start, side="left")
        b = np.searchsorted(keys, (self._mk_video << _SHIFT) | self._mk_end, side="right")
        cuts = np.unique(np.concatenate([[0, keys.size], a, b]))
        seg_a = np.searchsorted(cuts, a)
        seg_b = np.searchsorted(cuts, b)
        diff = np.zeros((cuts.size, n_classes), np.int32)
        np.add.at(diff, (seg_a, self._mk_class), 1)
        np.add.at(diff, (seg_b, self._mk_class), -1)
        active = np.cumsum(diff, axis=0)[:-1] > 0  # one row per segment [cuts[i], cuts[i + 1])
        patterns, seg_pattern = np.unique(active, axis=0, return_inverse=True)
        per_sample = np.repeat(seg_pattern.reshape(-1).astype(np.int32), np.diff(cuts))
        return _readonly(per_sample), _readonly(patterns.astype(np.float32))

    # -- what it holds ----------------------------------------------------------------------------

    @property
    def index(self) -> SampleIndex:
        """The (video_id, frame) pairs, in order (video id, then frame): a list-like :class:`SampleIndex`."""
        return self._index

    def __len__(self) -> int:
        return len(self._index)

    @property
    def class_names(self) -> list[str]:
        """Class names; ``labels`` in a sample are positions in this list plus ``label_offset``."""
        return list(self._class_names)

    @property
    def release_id(self) -> str | None:
        """The release these samples come from (None: live annotations)."""
        return self._release_id

    @property
    def view(self) -> View | None:
        """The view images are cropped/resized to, or None for full frames."""
        return self._view

    @property
    def view_id(self) -> str | None:
        """The view id, or None."""
        return self._view_id

    @property
    def video_ids(self) -> tuple[str, ...]:
        """The selected videos (sorted), whether or not they have samples."""
        return self._video_ids

    @property
    def box_format(self) -> str:
        """Format of ``boxes`` in the samples."""
        return self._box_format

    def video(self, video_id: str) -> VideoMetadata:
        """Metadata of a selected video.

        Raises
        ------
        UnknownVideoError
            If the video is not among the selected ones.
        """
        meta = self._videos.get(video_id)
        if meta is None:
            raise UnknownVideoError(
                f"video {video_id!r} is not in these samples; selected: {_names(self._video_ids)}",
                video_id=video_id,
            )
        return meta

    def image_size(self, video_id: str) -> tuple[int, int]:
        """(width, height) of the images of a video: the view's size, or the displayed frame's."""
        return self._out_size(self.video(video_id))

    def __repr__(self) -> str:
        return (
            f"FrameSamples(release={self._release_id!r}, view_id={self._view_id!r}, samples={len(self)}, "
            f"videos={len(self._video_ids)}, classes={len(self._class_names)})"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_store"] = None
        state["_store_pid"] = -1
        return state

    # -- targets --------------------------------------------------------------------------------

    def _region_range(self, video_code: int, frame: int) -> tuple[int, int]:
        key = (video_code << _SHIFT) | frame
        i = int(np.searchsorted(self._rk_key, key))
        if i < self._rk_key.size and int(self._rk_key[i]) == key:
            return int(self._rk_off[i]), int(self._rk_off[i + 1])
        return 0, 0

    def _frame_labels(self, video_code: int, frame: int) -> np.ndarray:
        out = np.zeros(len(self._class_names), np.float32)
        a, b = int(self._mk_off[video_code]), int(self._mk_off[video_code + 1])
        if b > a:
            active = (self._mk_start[a:b] <= frame) & (frame <= self._mk_end[a:b])
            out[self._mk_class[a:b][active]] = 1.0
        return out

    def _masks(self, lo: int, hi: int, video_id: str, height: int, width: int) -> np.ndarray:
        meta = self._videos[video_id]
        out = np.zeros((hi - lo, height, width), np.uint8)
        for j, r in enumerate(range(lo, hi)):
            a, b = int(self._m_offsets[r]), int(self._m_offsets[r + 1])
            if a == b:
                continue  # a box row: empty mask
            mh, mw = (int(v) for v in self._m_size[r])
            mask = decode_rle({"size": [mh, mw], "counts": self._m_counts[a:b].tobytes()})
            if self._view is not None and (mh, mw) == (meta.height, meta.width):
                mask = view_mask(mask, self._view)
            if mask.shape != (height, width):
                mask = resize_mask(mask, (width, height))
            out[j] = mask
        return out

    def _locate(self, video_id: str, frame: int) -> int:
        code = self._video_ids.index(video_id) if video_id in self._videos else -1
        if code < 0:
            self.video(video_id)  # raises
        meta = self._videos[video_id]
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
            raise OptionError(f"frame must be an integer, got {frame!r}")
        if not 0 <= frame < meta.frame_count:
            raise FrameOutOfRangeError(
                f"frame {frame} out of range [0, {meta.frame_count}) in video {video_id!r}", video_id=video_id
            )
        return code

    def sample(self, video_id: str, frame: int, image: np.ndarray) -> dict[str, Any]:
        """The full sample dict of one frame, given its pixels.

        Parameters
        ----------
        video_id : str
        frame : int
            Any frame of a selected video; one nobody annotated gets empty targets.
        image : (H, W, 3) uint8 RGB
            The frame as ``reader(video_id)`` returns it (already in the view).
            A full displayed frame is also accepted when a view is set: it is
            cropped and resized here.

        Returns
        -------
        dict
            The spec's sample: ``image`` (H, W, 3) uint8, ``boxes`` (N, 4)
            float32 in ``box_format`` (pixels of ``image``, or fractions with
            ``normalized``), ``labels``, ``track_ids``, ``annotation_ids`` (N,)
            int64 ordered by annotation id, ``masks`` (N, H, W) uint8 with
            ``with_masks``, ``frame_labels`` (C,) float32, ``video_id``,
            ``view_id``, ``frame_index``.

        Raises
        ------
        UnknownVideoError
            If the video is not selected.
        FrameOutOfRangeError
            If ``frame`` is outside ``[0, frame_count)``.
        """
        code = self._locate(video_id, frame)
        image = np.asarray(image)
        if image.ndim != 3 or image.shape[2] != 3:
            raise OptionError(
                f"image must be (H, W, 3) uint8 RGB, got shape {image.shape} for {video_id!r} frame {frame}"
            )
        if self._view is not None:
            meta = self._videos[video_id]
            vw, vh = self._view.size
            if image.shape[:2] == (meta.height, meta.width) and image.shape[:2] != (vh, vw):
                image = view_image(image, self._view)
        lo, hi = self._region_range(code, int(frame))
        masks = self._masks(lo, hi, video_id, image.shape[0], image.shape[1]) if self._with_masks else None
        return make_sample(
            image=image,
            boxes_xyxy=self._r_box[lo:hi],
            label_index=self._r_label[lo:hi] - self._label_offset,
            track_ids=self._r_track[lo:hi].copy(),
            annotation_ids=self._r_ann[lo:hi].copy(),
            frame_labels=self._frame_labels(code, int(frame)),
            video_id=video_id,
            view_id=self._view_id,
            frame_index=int(frame),
            masks=masks,
            box_format=self._box_format,
            normalized=self._normalized,
            label_offset=self._label_offset,
        )

    def _boxes_out(self) -> np.ndarray:
        """(R, 4) float32 boxes of every region in the output format (computed once)."""
        if self._r_boxes_out is None:
            out = boxes_from_xyxy(self._r_box, self._box_format)
            if self._normalized:
                per_frame = (self._rk_key >> _SHIFT).astype(np.intp)
                wh = np.repeat(self._image_sizes[per_frame], np.diff(self._rk_off), axis=0).astype(np.float64)
                out /= np.concatenate([wh, wh], axis=1)
            self._r_boxes_out = _readonly(out.astype(np.float32))
        return self._r_boxes_out

    def targets(self) -> Iterator[dict[str, Any]]:
        """The targets of every sample, in ``index`` order, without decoding any pixels.

        Yields
        ------
        dict
            The sample dict without the ``image`` key: ``boxes``, ``labels``,
            ``track_ids``, ``annotation_ids``, ``frame_labels``, ``video_id``,
            ``view_id``, ``frame_index`` (and ``masks`` with ``with_masks``).
            Arrays are read-only views shared with this object (copy before
            changing them); boxes equal those :meth:`sample` gives for an image
            of the video's (view's) size.
        """
        boxes, labels, tracks, anns = self._boxes_out(), self._r_label, self._r_track, self._r_ann
        rows = list(self._patterns)
        ids, view_id = self._video_ids, self._view_id
        codes, frames = self._index.video_codes, self._index.frames
        sizes = self._image_sizes.tolist()
        for a in range(0, len(self), _BLOCK):
            block = slice(a, a + _BLOCK)
            for v, f, lo, hi, p in zip(
                codes[block].tolist(),
                frames[block].tolist(),
                self._ix_lo[block].tolist(),
                self._ix_hi[block].tolist(),
                self._ix_pattern[block].tolist(),
            ):
                t = {
                    "boxes": boxes[lo:hi],
                    "labels": labels[lo:hi],
                    "track_ids": tracks[lo:hi],
                    "annotation_ids": anns[lo:hi],
                    "frame_labels": rows[p],
                    "video_id": ids[v],
                    "view_id": view_id,
                    "frame_index": f,
                }
                if self._with_masks:
                    w, h = sizes[v]
                    t["masks"] = self._masks(lo, hi, ids[v], h, w)
                yield t

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary to log next to a training run.

        Returns
        -------
        dict
            ``release``, ``release_created``, ``dataset``, ``options`` (every
            selection argument), ``class_names``, ``samples``, ``videos`` (samples
            per selected video), ``regions``, ``regions_per_class``,
            ``marker_frames_per_class`` (samples on which each marker label is
            active), ``samples_without_regions``, ``rows_outside_video``.
        """
        lengths = self._ix_hi - self._ix_lo
        total = int(lengths.sum())
        if total:
            starts = np.repeat(self._ix_lo - (np.cumsum(lengths) - lengths), lengths)
            covered = self._r_label[starts + np.arange(total)] - self._label_offset
        else:
            covered = np.zeros(0, np.int64)
        n_classes = len(self._class_names)
        per_class = np.bincount(covered, minlength=n_classes)
        pattern_counts = np.bincount(self._ix_pattern, minlength=self._patterns.shape[0])
        marker_frames = (pattern_counts[:, None] * self._patterns).sum(axis=0).astype(np.int64)
        per_video = np.bincount(self._index.video_codes, minlength=len(self._video_ids))
        opts = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._options.items()}
        return {
            "release": self._release_id,
            "release_created": self._release_created,
            "dataset": self._dataset_path,
            "options": opts,
            "class_names": list(self._class_names),
            "samples": len(self),
            "videos": {v: int(n) for v, n in zip(self._video_ids, per_video)},
            "regions": total,
            "regions_per_class": {c: int(n) for c, n in zip(self._class_names, per_class)},
            "marker_frames_per_class": {c: int(n) for c, n in zip(self._class_names, marker_frames)},
            "samples_without_regions": int((lengths == 0).sum()),
            "rows_outside_video": self._dropped,
        }

    # -- pixels --------------------------------------------------------------------------------

    def _frame_store(self) -> Any:
        if self._cache_path is None:
            return None
        if self._store is None or self._store_pid != os.getpid():
            from vidlabel.store import open_store

            self._store = open_store(self._cache_path)
            self._store_pid = os.getpid()
        return self._store

    def reader(self, video_id: str) -> Any:
        """A reader of a selected video's frames, cropped and resized to the view.

        Returns a :class:`~vidlabel.frames.FrameReader` (``read``,
        ``read_many``, ``iter_frames``, context manager), or with ``cache=`` a
        reader that takes frames from the store when it holds them for this
        exact file (same content hash) and from the video otherwise.

        Raises
        ------
        UnknownVideoError
            If the video is not selected.
        VideoNotFoundError
            If the file is neither at its recorded path nor under ``roots``.
        """
        meta = self.video(video_id)
        store = self._frame_store()
        if store is not None:
            stored_hash = store.video_content_hash(video_id)
            if stored_hash is not None and meta.content_hash is not None and stored_hash == meta.content_hash:
                return StoreBackedReader(store, meta, view=self._view, roots=self._roots)
        from vidlabel.frames import FrameReader

        return FrameReader.for_video(meta, view=self._view, roots=self._roots)

    def _frame_indexes(self) -> dict[str, FrameIndex | None]:
        out: dict[str, FrameIndex | None] = {}
        for v, meta in self._videos.items():
            fi = meta.frame_index
            usable = (
                fi is not None
                and fi.frame_count == meta.frame_count
                and (fi.content_hash is None or meta.content_hash is None or fi.content_hash == meta.content_hash)
            )
            out[v] = fi if usable else None
        return out

    def plan_reads(self, requests: Any, *, seed: int, block: int = 250) -> ReadPlan:
        """A :class:`~vidlabel.readplan.ReadPlan` for positions in ``index`` or (video_id, frame) pairs.

        Parameters
        ----------
        requests : (R,) int array-like, or sequence of (video_id, frame)
            Positions in :attr:`index` (e.g. ``rng.choice(len(samples), size, p=w)``)
            or pairs naming any frame of a selected video. Any order, repeats allowed.
        seed : int
        block : int
            Block length for videos without a usable frame index.

        Raises
        ------
        OptionError
            On a position outside ``[0, len(self))``.
        UnknownVideoError, FrameOutOfRangeError
            On a pair naming an unselected video or a frame outside it.
        """
        codes, frames = self._requests_to_arrays(requests)
        return ReadPlan.from_arrays(
            self._video_ids, codes, frames, indexes=self._frame_indexes(), seed=seed, block=block
        )

    def _requests_to_arrays(self, requests: Any) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(requests, np.ndarray) and requests.dtype.kind in "iu":
            positions = requests.reshape(-1).astype(np.int64)
        else:
            items = list(requests)
            if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in items):
                positions = np.asarray(items, dtype=np.int64)
            else:
                codes = np.empty(len(items), np.int64)
                frames = np.empty(len(items), np.int64)
                for i, item in enumerate(items):
                    try:
                        video_id, frame = item
                    except (TypeError, ValueError) as err:
                        raise OptionError(
                            f"request {i} must be a position or a (video_id, frame) pair, got {item!r}"
                        ) from err
                    codes[i] = self._locate(video_id, frame)
                    frames[i] = int(frame)
                return codes, frames
        n = len(self)
        bad = (positions < 0) | (positions >= n)
        if bad.any():
            raise OptionError(f"sample position {int(positions[bad][0])} out of range [0, {n})")
        return self._index.video_codes[positions].astype(np.int64), self._index.frames[positions]

    def iter_plan(
        self, plan: ReadPlan, *, epoch: int = 0, shuffle_buffer: int = 0, shard: int = 0, num_shards: int = 1
    ) -> Iterator[dict[str, Any]]:
        """Read a plan's samples (NumPy dicts), each keyframe interval decoded once.

        Parameters
        ----------
        plan : ReadPlan
        epoch : int
            Decides the chunk order (with the plan's seed).
        shuffle_buffer : int
            Mix the samples through a buffer of this many decoded frames.
        shard, num_shards : int
            Read only this shard's chunks (``vidlabel.torch_data`` passes rank x worker).

        Yields
        ------
        dict
            One sample per request: a frame requested k times yields k samples
            (its image decoded once, copied for the repeats).
        """
        if isinstance(shuffle_buffer, bool) or not isinstance(shuffle_buffer, (int, np.integer)) or shuffle_buffer < 0:
            raise OptionError(f"shuffle_buffer must be an integer >= 0, got {shuffle_buffer!r}")
        chunks = plan.shard(epoch, shard, num_shards)
        rng = epoch_rng(plan.seed, epoch, STREAM_SHUFFLE_BUFFER, shard)
        return shuffled(self._read_chunks(chunks), int(shuffle_buffer), rng)

    def _read_chunks(self, chunks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        readers: OrderedDict[str, Any] = OrderedDict()
        try:
            for chunk in chunks:
                reader = readers.pop(chunk.video_id, None) or self.reader(chunk.video_id)
                readers[chunk.video_id] = reader
                while len(readers) > 4:
                    readers.popitem(last=False)[1].close()
                repeats = dict(zip(chunk.frames.tolist(), chunk.repeats.tolist()))
                for n, image in reader.iter_frames(chunk.frames.tolist()):
                    for k in range(repeats[int(n)]):
                        yield self.sample(chunk.video_id, int(n), image if k == 0 else image.copy())
        finally:
            for reader in readers.values():
                reader.close()


def _check_options(
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
    roots: Sequence[str | os.PathLike[str]] = (),
    cache: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Validate the options that do not need the release; normalise them to tuples."""

    def as_tuple(value: Any, name: str) -> tuple[str, ...]:
        if isinstance(value, str):
            value = (value,)
        try:
            out = tuple(value)
        except TypeError as err:
            raise OptionError(f"{name} must be a list of strings, got {value!r}") from err
        bad = [x for x in out if not isinstance(x, str)]
        if bad:
            raise OptionError(f"{name} must hold strings, got {bad[0]!r}")
        return out

    kinds_t = as_tuple(kinds, "kinds")
    for k in kinds_t:
        if k not in KINDS:
            raise OptionError(f"unknown kind {k!r} in kinds=; allowed: {', '.join(KINDS)}")
    if not kinds_t:
        raise OptionError(f"kinds must name at least one of {', '.join(KINDS)}")
    labels_t = None if labels is None else as_tuple(labels, "labels")
    if labels_t is not None:
        if not labels_t:
            raise OptionError("labels=[] selects nothing; pass None for the whole vocabulary")
        dup = [x for i, x in enumerate(labels_t) if x in labels_t[:i]]
        if dup:
            raise OptionError(f"label {dup[0]!r} appears twice in labels=")
    origins_t = None if origins is None else as_tuple(origins, "origins")
    if origins_t is not None:
        for o in origins_t:
            if o not in ORIGINS:
                raise OptionError(f"unknown origin {o!r} in origins=; allowed: {', '.join(ORIGINS)}")
    videos_t = None if videos is None else as_tuple(videos, "videos")
    if view_id is not None and not isinstance(view_id, str):
        raise OptionError(f"view_id must be a string or None, got {view_id!r}")
    if min_confidence is not None:
        if isinstance(min_confidence, bool) or not isinstance(min_confidence, (int, float, np.number)):
            raise OptionError(f"min_confidence must be a number in [0, 1] or None, got {min_confidence!r}")
        if not 0.0 <= float(min_confidence) <= 1.0:
            raise OptionError(f"min_confidence must lie in [0, 1], got {min_confidence!r}")
        min_confidence = float(min_confidence)
    if frames not in ("annotated", "all"):
        raise OptionError(f"unknown frames mode {frames!r}; allowed: annotated, all")
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise OptionError(f"stride must be an integer >= 1, got {stride!r}")
    if box_format not in BOX_FORMATS:
        raise OptionError(f"unknown box_format {box_format!r}; allowed: {', '.join(BOX_FORMATS)}")
    if isinstance(label_offset, bool) or not isinstance(label_offset, (int, np.integer)):
        raise OptionError(f"label_offset must be an integer, got {label_offset!r}")
    if isinstance(roots, (str, os.PathLike)):
        roots = (roots,)
    return {
        "view_id": view_id,
        "videos": videos_t,
        "kinds": kinds_t,
        "labels": labels_t,
        "origins": origins_t,
        "min_confidence": min_confidence,
        "frames": frames,
        "stride": int(stride),
        "with_masks": bool(with_masks),
        "box_format": box_format,
        "normalized": bool(normalized),
        "label_offset": int(label_offset),
        "roots": tuple(str(r) for r in roots),
        "cache": None if cache is None else str(cache),
    }
