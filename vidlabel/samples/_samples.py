"""FrameSamples: which frames to train on, and the targets of each.

Spec: "What a sample contains", "Choosing what to train on", "Reading a list
of frames you chose: ReadPlan", "How big a dataset can be". The selection is
decided from a release's annotation table alone (columnar NumPy, no per-row
Python objects), so opening a million-row release is fast; pixels come from a
:class:`~vidlabel.frames.FrameReader` (or a frame store given as ``cache=``).

The selection itself (regions indexed by (video, frame), marker intervals,
the sample index) is built by :mod:`vidlabel.samples._select`; this module
assembles each sample's targets and reads the pixels.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Literal

import numpy as np

from vidlabel._lru import OpenLRU
from vidlabel.dataset._release import Release
from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    StoreError,
    UnknownVideoError,
    VideoChangedError,
    VidlabelError,
)
from vidlabel.geometry import (
    boxes_from_xyxy,
    decode_rle,
    resize_mask,
    view_image,
    view_mask,
)
from vidlabel.samples._attributes import attribute_columns
from vidlabel.samples._requests import request_arrays
from vidlabel.samples._select import (
    BLOCK_FRAMES,
    KEY_SHIFT,
    SampleIndex,
    check_options,
    names_shown,
    out_size,
    readonly,
    select_samples,
)
from vidlabel.samples._storereader import FrameCache, StoreBackedReader
from vidlabel.schema import SampleOptions, frame_sample
from vidlabel.spec import (
    BoxFormat,
    FrameIndex,
    Kind,
    Origin,
    VideoMetadata,
    View,
)
from vidlabel.video._reader import usable_index
from vidlabel.video._readplan import STREAM_SHUFFLE_BUFFER, ReadPlan, check_nonneg_int, epoch_rng, shuffled

__all__ = ["FrameSamples", "SampleIndex", "StoreBackedReader"]


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
    kinds : {"box", "mask", "marker"} or sequence of them
        Which kinds define the samples and the targets. A box row and a mask
        row of one object are two rows (two targets). Markers always fill
        ``frame_labels``; "marker" here also makes their frames samples.
    labels : sequence of str, optional
        Keep only these labels; ``class_names`` is this list, in this order.
    origins : sequence of {"human", "model"}, optional
    min_confidence : float, optional
        Drop model rows (``origin="model"``, markers included) whose
        confidence is below this; rows without a confidence, and human rows
        whatever their confidence, are kept.
    frames : {"annotated", "all"}
        "annotated": frames with a selected annotation of a kind in ``kinds``;
        "all": every frame of the selected videos.
        Either way frames without a trustworthy picture (the videos'
        ``untrusted_frames``: a truncated or corrupt file) are left out, with
        one warning; :meth:`describe` counts them.
    stride : int
        Keep every ``stride``-th frame of that list, per video: positions
        0, stride, 2 * stride, ... of each video's own frames, starting from
        that video's first selected frame (other videos never shift it).
    with_masks : bool
        Decode masks into the samples (an all-zero mask for a box row).
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
        Boxes as fractions of the image width and height.
    label_offset : int
        Added to ``labels`` (not to ``frame_labels`` positions); an integer >= 0.
    roots : path or sequence of path
        Folders to search for videos whose recorded path is stale; one folder
        may be given alone.
    cache : path, optional
        A frame store (``vidlabel.store.open_store``); frames it holds for a
        video with the same content hash are read from it, the rest from the
        video.
    options : SampleOptions, optional
        ``kinds``, ``labels``, ``origins``, ``min_confidence``,
        ``with_masks``, ``box_format``, ``normalized`` and ``label_offset``
        in one object (:class:`vidlabel.schema.SampleOptions`), e.g. shared
        with a :class:`~vidlabel.torch_data.StoreFrames`; those keywords are
        then left at their defaults.
    attributes : mapping name -> value or (op, value), optional
        Keep only rows whose attributes pass every condition, e.g.
        ``{"occluded": False, "visibility": (">=", 0.5)}`` (op one of
        ``== != < <= > >=``). A condition concerns the labels whose schema
        declares the attribute: rows of other labels pass it, rows of such a
        label without a value fail it.
    with_attributes : sequence of str, optional
        Deliver these bool or number attributes per target: the sample's
        ``attributes`` (N, A) float32 in this order (true 1, false 0, NaN
        where a row has none).

    Raises
    ------
    OptionError
        On an unknown label, view, kind, origin, frames mode or box format,
        ``stride < 1``, a non-integer ``label_offset``, a bad
        ``min_confidence``, or a view whose crop does not fit inside a
        selected video's frame; ``options`` that is not a SampleOptions, or
        is given with one of its keywords set; if ``ds`` is not a Dataset (a path is
        opened first, a Release goes through :meth:`from_release`), or a
        True/False option is given anything else, or ``roots`` that is
        neither a path nor a sequence of paths, or a ``cache``
        that is not a non-empty path or URL; ``attributes`` naming an
        attribute no label declares or giving a value of another type than
        the declared one (bool, number, text); ``with_attributes`` naming an
        attribute no label declares (where some are).
    UnknownVideoError
        On a video id the release does not hold.
    ReleaseNotFoundError
        From the dataset, on an unknown release id.
    StoreError
        If ``cache`` is not a frame store (the message gives the ``vidlabel
        cache`` command that builds it), or is one that cannot be read.

    Warns
    -----
    VidlabelWarning
        Once, when rows lie outside their video's frames, and once when
        annotations or frames lie on frames without a trustworthy picture
        (naming the videos, the counts and the frames); both are left out.

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
        kinds: Kind | Sequence[Kind] = ("box", "mask"),
        labels: Sequence[str] | None = None,
        origins: Sequence[Origin] | None = None,
        min_confidence: float | None = None,
        frames: Literal["annotated", "all"] = "annotated",
        stride: int = 1,
        with_masks: bool = False,
        box_format: BoxFormat = "xyxy",
        normalized: bool = False,
        label_offset: int = 0,
        roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
        cache: str | os.PathLike[str] | None = None,
        options: SampleOptions | None = None,
        attributes: Mapping[str, Any] | None = None,
        with_attributes: Sequence[str] | None = None,
    ) -> None:
        targets, options_by_name = check_options(
            view_id=view_id, videos=videos, kinds=kinds, labels=labels, origins=origins,
            min_confidence=min_confidence, frames=frames, stride=stride, with_masks=with_masks,
            box_format=box_format, normalized=normalized, label_offset=label_offset, roots=roots, cache=cache,
            options=options, attributes=attributes, with_attributes=with_attributes,
        )  # fmt: skip
        if not callable(getattr(ds, "release", None)) or not callable(getattr(ds, "snapshot", None)):
            hint = ""
            if isinstance(ds, (str, os.PathLike)):
                hint = " (open a dataset folder with vidlabel.Dataset.open(path) first)"
            elif isinstance(ds, Release):
                hint = " (for a Release in hand: FrameSamples.from_release(release))"
            raise OptionError(f"FrameSamples takes a Dataset, got {ds!r}{hint}")
        if release is not None and not isinstance(release, str):
            raise OptionError(f"release must be a release id, 'latest' or None, got {release!r}")
        rel = ds.snapshot() if release is None else ds.release(release)
        path = getattr(ds, "path", None)
        self._init(rel, targets, options_by_name, dataset_path=None if path is None else str(path))

    @classmethod
    def from_release(
        cls, release: Release, *, dataset_path: str | os.PathLike[str] | None = None, **options: Any
    ) -> FrameSamples:
        """A FrameSamples over a :class:`~vidlabel.dataset.Release` object already in hand.

        Takes the same keyword options as the constructor (except ``release``).
        """
        self = cls.__new__(cls)
        targets, checked = check_options(**options)
        self._init(release, targets, checked, dataset_path=None if dataset_path is None else str(dataset_path))
        return self

    # -- building ------------------------------------------------------------------------------

    def _init(self, rel: Release, targets: SampleOptions, opt: dict[str, Any], *, dataset_path: str | None) -> None:
        self._dataset_path = dataset_path
        self._release_id = rel.release_id
        self._release_created = rel.created
        self._options = opt
        self._targets_options = targets
        self._box_format = targets.box_format
        self._normalized = targets.normalized
        self._label_offset = targets.label_offset
        self._with_masks = targets.with_masks
        self._roots = opt["roots"]
        self._cache = None if opt["cache"] is None else FrameCache(opt["cache"])

        self._sel = select_samples(rel, opt)
        self._r_boxes_out: np.ndarray | None = None
        # each target's attributes, computed once: (R, A) float32 over the regions
        self._r_attrs = (
            attribute_columns(rel.table, self._sel.r_ann, opt["with_attributes"], rel.info.get("attribute_schema"))
            if opt["with_attributes"]
            else None
        )
        self._codes: dict[str, int] = {v: i for i, v in enumerate(self._sel.video_ids)}
        self._sizes: list[list[int]] = self._sel.image_sizes.tolist()  # (width, height) per video code
        if self._cache is not None:
            try:
                self._cache.store(strict=True)  # fail early on a missing or unreadable store
            except StoreError as err:
                raise self._cache.unusable(err, dataset_path, rel.release_id) from err

    # -- what it holds ----------------------------------------------------------------------------

    @property
    def index(self) -> SampleIndex:
        """The (video_id, frame) pairs, in order (video id, then frame): a list-like :class:`SampleIndex`."""
        return self._sel.index

    def __len__(self) -> int:
        return len(self._sel.index)

    @property
    def class_names(self) -> list[str]:
        """Class names; ``labels`` in a sample are positions in this list plus ``label_offset``."""
        return list(self._sel.class_names)

    @property
    def release_id(self) -> str | None:
        """The release these samples come from (None: live annotations)."""
        return self._release_id

    @property
    def view(self) -> View | None:
        """The view images are cropped/resized to, or None for full frames."""
        return self._sel.view

    @property
    def view_id(self) -> str | None:
        """The view id, or None."""
        return self._sel.view_id

    @property
    def video_ids(self) -> tuple[str, ...]:
        """The selected videos (sorted), whether or not they have samples."""
        return self._sel.video_ids

    @property
    def box_format(self) -> str:
        """Format of ``boxes`` in the samples."""
        return self._box_format

    @property
    def options(self) -> SampleOptions:
        """The target options (kinds, labels, origins, min_confidence, with_masks, box_format, normalized,
        label_offset) as one :class:`~vidlabel.schema.SampleOptions`: pass it as ``options=`` to a
        StoreFrames or StoreStream to read the same targets from a store."""
        return self._targets_options

    def video(self, video_id: str) -> VideoMetadata:
        """Metadata of a selected video.

        Raises
        ------
        UnknownVideoError
            If the video is not among the selected ones.
        """
        meta = self._sel.videos.get(video_id)
        if meta is None:
            raise UnknownVideoError(
                f"video {video_id!r} is not in these samples; selected: {names_shown(self._sel.video_ids)}",
                video_id=video_id,
            )
        return meta

    def image_size(self, video_id: str) -> tuple[int, int]:
        """(width, height) of the images of a video: the view's size, or the displayed frame's."""
        return out_size(self._sel.view, self.video(video_id))

    def __repr__(self) -> str:
        return (
            f"FrameSamples(release={self._release_id!r}, view_id={self._sel.view_id!r}, samples={len(self)}, "
            f"videos={len(self._sel.video_ids)}, classes={len(self._sel.class_names)})"
        )

    # -- targets --------------------------------------------------------------------------------

    def _region_range(self, video_code: int, frame: int) -> tuple[int, int]:
        key = (video_code << KEY_SHIFT) | frame
        i = int(np.searchsorted(self._sel.rk_key, key))
        if i < self._sel.rk_key.size and int(self._sel.rk_key[i]) == key:
            return int(self._sel.rk_off[i]), int(self._sel.rk_off[i + 1])
        return 0, 0

    def _frame_labels(self, video_code: int, frame: int) -> np.ndarray:
        out = np.zeros(len(self._sel.class_names), np.float32)
        a, b = int(self._sel.mk_off[video_code]), int(self._sel.mk_off[video_code + 1])
        if b > a:
            active = (self._sel.mk_start[a:b] <= frame) & (frame <= self._sel.mk_end[a:b])
            out[self._sel.mk_class[a:b][active]] = 1.0
        return out

    def _masks(self, lo: int, hi: int, video_id: str, height: int, width: int) -> np.ndarray:
        meta = self._sel.videos[video_id]
        out = np.zeros((hi - lo, height, width), np.uint8)
        for j, r in enumerate(range(lo, hi)):
            a, b = int(self._sel.m_offsets[r]), int(self._sel.m_offsets[r + 1])
            if a == b:
                continue  # a box row: empty mask
            mh, mw = (int(v) for v in self._sel.m_size[r])
            mask = decode_rle({"size": [mh, mw], "counts": self._sel.m_counts[a:b].tobytes()})
            if self._sel.view is not None and (mh, mw) == (meta.height, meta.width):
                mask = view_mask(mask, self._sel.view)
            if mask.shape != (height, width):
                mask = resize_mask(mask, (width, height))
            out[j] = mask
        return out

    def _locate(self, video_id: str, frame: int) -> int:
        meta = self.video(video_id)  # raises UnknownVideoError
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
            raise OptionError(f"frame must be an integer, got {frame!r}")
        if not 0 <= frame < meta.frame_count:
            raise FrameOutOfRangeError(
                f"frame {frame} out of range [0, {meta.frame_count}) in video {video_id!r}", video_id=video_id
            )
        return self._codes[video_id]

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
        OptionError
            If ``frame`` is not an integer, or ``image`` is not uint8 of shape
            (H, W, 3) with the size of the video's images (:meth:`image_size`),
            or with a view, of the full displayed frame.
        """
        code = self._locate(video_id, frame)
        image = np.asarray(image)
        width, height = self._sizes[code]
        meta = self._sel.videos[video_id]
        full = (meta.height, meta.width, 3)
        allowed = [(height, width, 3)] + ([full] if self._sel.view is not None and full != (height, width, 3) else [])
        if image.shape not in allowed or image.dtype != np.uint8:
            shown = " or ".join(f"{h}x{w}" for h, w, _ in allowed)
            what = "the view's size" if self._sel.view is not None else "the video's displayed frame size"
            if len(allowed) > 1:
                what += ", or the full displayed frame to crop"
            raise OptionError(
                f"image must be (H, W, 3) uint8 RGB, got shape {image.shape} {image.dtype} for video {video_id!r} "
                f"frame {frame}; allowed: {shown} uint8 (H x W: {what}); boxes would not match its pixels"
            )
        if self._sel.view is not None and image.shape != (height, width, 3):
            image = view_image(image, self._sel.view)
        lo, hi = self._region_range(code, int(frame))
        return self._build(code, int(frame), lo, hi, self._frame_labels(code, int(frame)), image)

    def _targets_at(self, at: slice | list[int]) -> list[tuple[int, int, int, int]]:
        """(frame, region lo, region hi, pattern) of the samples at positions ``at`` of ``index`` (a slice or
        a list of non-negative positions), as Python ints: one array conversion for all of them."""
        sel = self._sel
        return list(
            zip(
                sel.index.frames[at].tolist(),
                sel.ix_lo[at].tolist(),
                sel.ix_hi[at].tolist(),
                sel.ix_pattern[at].tolist(),
            )
        )

    def _sample_of(
        self, video_code: int, frame: int, lo: int, hi: int, pattern: int, image: np.ndarray
    ) -> dict[str, Any]:
        """The dict :meth:`sample` returns for a sample of ``index`` (its regions ``[lo, hi)`` and marker
        pattern known), without :meth:`sample`'s checks.

        ``image`` must be the reader's frame of that video (the image size of the video); anything else
        goes through :meth:`sample`. Every array is an own copy (the caller may change it).
        """
        width, height = self._sizes[video_code]
        if not (isinstance(image, np.ndarray) and image.shape == (height, width, 3)):
            return self.sample(self._sel.video_ids[video_code], frame, image)
        return self._build(video_code, frame, lo, hi, self._sel.patterns[pattern].copy(), image)

    def _build(
        self,
        video_code: int,
        frame: int,
        lo: int,
        hi: int,
        frame_labels: np.ndarray,
        image: np.ndarray | None,
        *,
        copy: bool = True,
    ) -> dict[str, Any]:
        """Where FrameSamples' samples are built (:func:`~vidlabel.schema.frame_sample`): the targets of regions
        ``[lo, hi)`` from the per-region arrays computed once (:meth:`_boxes_out`), each an own copy unless
        ``copy`` is False (then read-only views)."""
        sel = self._sel
        video_id = sel.video_ids[video_code]
        width, height = self._sizes[video_code]
        regions = slice(lo, hi)
        boxes, labels, tracks, anns = (a[regions] for a in (self._boxes_out(), sel.r_label, sel.r_track, sel.r_ann))
        if copy:
            boxes, labels, tracks, anns = boxes.copy(), labels.copy(), tracks.copy(), anns.copy()
        return frame_sample(
            image=image,
            boxes=boxes,
            labels=labels,
            track_ids=tracks,
            annotation_ids=anns,
            frame_labels=frame_labels,
            video_id=video_id,
            view_id=sel.view_id,
            frame_index=frame,
            masks=self._masks(lo, hi, video_id, height, width) if self._with_masks else None,
            attributes=None
            if self._r_attrs is None
            else self._r_attrs[regions].copy()
            if copy
            else self._r_attrs[regions],
        )

    def _boxes_out(self) -> np.ndarray:
        """(R, 4) float32 boxes of every region in the output format (computed once)."""
        if self._r_boxes_out is None:
            out = boxes_from_xyxy(self._sel.r_box, self._box_format)
            if self._normalized:
                per_frame = (self._sel.rk_key >> KEY_SHIFT).astype(np.intp)
                wh = np.repeat(self._sel.image_sizes[per_frame], np.diff(self._sel.rk_off), axis=0).astype(np.float64)
                out /= np.concatenate([wh, wh], axis=1)
            self._r_boxes_out = readonly(out.astype(np.float32))
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
        rows = list(self._sel.patterns)
        codes, frames = self._sel.index.video_codes, self._sel.index.frames
        for a in range(0, len(self), BLOCK_FRAMES):
            block = slice(a, a + BLOCK_FRAMES)
            for v, f, lo, hi, p in zip(
                codes[block].tolist(),
                frames[block].tolist(),
                self._sel.ix_lo[block].tolist(),
                self._sel.ix_hi[block].tolist(),
                self._sel.ix_pattern[block].tolist(),
            ):
                yield self._build(v, f, lo, hi, rows[p], None, copy=False)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary to log next to a training run.

        Returns
        -------
        dict
            ``release``, ``release_created``, ``dataset``, ``options`` (every
            selection argument), ``class_names``, ``samples``, ``videos`` (samples
            per selected video), ``regions``, ``regions_per_class``,
            ``marker_frames_per_class`` (samples on which each marker label is
            active), ``samples_without_regions``, ``rows_outside_video``,
            ``rows_on_untrusted_frames`` (selected box/mask annotations whose
            frame has no trustworthy picture) and ``untrusted_frames_left_out``
            (frames of the list, before ``stride``, left out for that reason).
        """
        lengths = self._sel.ix_hi - self._sel.ix_lo
        total = int(lengths.sum())
        if total:
            starts = np.repeat(self._sel.ix_lo - (np.cumsum(lengths) - lengths), lengths)
            covered = self._sel.r_label[starts + np.arange(total)] - self._label_offset
        else:
            covered = np.zeros(0, np.int64)
        n_classes = len(self._sel.class_names)
        per_class = np.bincount(covered, minlength=n_classes)
        pattern_counts = np.bincount(self._sel.ix_pattern, minlength=self._sel.patterns.shape[0])
        marker_frames = (pattern_counts[:, None] * self._sel.patterns).sum(axis=0).astype(np.int64)
        per_video = np.bincount(self._sel.index.video_codes, minlength=len(self._sel.video_ids))
        opts = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._options.items()}
        return {
            "release": self._release_id,
            "release_created": self._release_created,
            "dataset": self._dataset_path,
            "options": opts,
            "class_names": list(self._sel.class_names),
            "samples": len(self),
            "videos": {v: int(n) for v, n in zip(self._sel.video_ids, per_video)},
            "regions": total,
            "regions_per_class": {c: int(n) for c, n in zip(self._sel.class_names, per_class)},
            "marker_frames_per_class": {c: int(n) for c, n in zip(self._sel.class_names, marker_frames)},
            "samples_without_regions": int((lengths == 0).sum()),
            "rows_outside_video": self._sel.dropped,
            "rows_on_untrusted_frames": self._sel.untrusted_rows,
            "untrusted_frames_left_out": self._sel.untrusted_frames,
        }

    def clips(self, spec: Any, sampler: Any = None) -> Any:
        """The clips of these samples: T frames of one video each, with every frame's targets.

        Parameters
        ----------
        spec : ClipSpec
            What a clip is (frames per clip, step, anchor, edge rule).
        sampler : ClipSampler, optional
            Which clips: :class:`~vidlabel.samples.SampleClips` (default: one per frame of
            :attr:`index`), ``SlidingClips``, ``RandomClips``, ``RegularClips`` or ``MarkerClips``.

        Returns
        -------
        ClipSamples
            Iterate it for every clip (each keyframe interval decoded once), or ``read(i)`` one.

        Raises
        ------
        OptionError
            If ``spec`` is not a ClipSpec or ``sampler`` not a ClipSampler.
        """
        from vidlabel.samples._clips import ClipSamples

        return ClipSamples(self, spec, sampler)

    # -- pixels --------------------------------------------------------------------------------

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
        if self._cache is not None:
            cached = self._cache.reader(
                meta, view=self._sel.view, roots=self._roots, open_video=partial(self._video_reader, meta)
            )
            if cached is not None:
                return cached
        return self._video_reader(meta)

    def _video_reader(self, meta: VideoMetadata) -> Any:
        """A FrameReader of the video's file in the view; a re-registered video's error says what to do."""
        from vidlabel.video._reader import FrameReader

        try:
            return FrameReader.for_video(meta, view=self._sel.view, roots=self._roots)
        except VideoChangedError as err:
            raise self._reregistered(err) from err

    def _reregistered(self, err: VideoChangedError) -> VideoChangedError:
        """``err`` reworded where the dataset now registers the very file found (re-registered after this
        release was built): the remedy is a new release, not a re-registration (as export says)."""
        if self._dataset_path is None or err.video_id is None or not err.actual_hash or not err.expected_hash:
            return err
        try:
            from vidlabel.dataset._dataset import Dataset

            now = Dataset.open(self._dataset_path).video(err.video_id).content_hash
        except VidlabelError:
            return err
        if now != err.actual_hash:
            return err
        return VideoChangedError(
            f"release {self._release_id} pins video {err.video_id!r} at content hash {err.expected_hash[:19]}..., but "
            f"the video was re-registered since with the file now at {str(err.path)!r} ({err.actual_hash[:19]}...): "
            f"build a new release (`vidlabel build {self._dataset_path}`) and read that (FrameSamples(ds) reads the "
            "latest)",
            path=err.path,
            video_id=err.video_id,
            expected_hash=err.expected_hash,
            actual_hash=err.actual_hash,
        )

    def _frame_indexes(self) -> dict[str, FrameIndex | None]:
        return {v: usable_index(meta)[0] for v, meta in self._sel.videos.items()}

    def plan_reads(self, requests: Any, *, seed: int, block: int = 250) -> ReadPlan:
        """A :class:`~vidlabel.readplan.ReadPlan` for positions in ``index`` or (video_id, frame) pairs.

        Parameters
        ----------
        requests : (R,) int array-like, or sequence of (video_id, frame)
            Positions in :attr:`index` (e.g. ``rng.choice(len(samples), size, p=w)``, or a 1-D integer
            tensor such as ``torch.multinomial(w, size, replacement=True)``)
            or pairs naming any frame of a selected video. Any order, repeats allowed.
        seed : int
        block : int
            Block length for videos without a usable frame index.

        Raises
        ------
        OptionError
            On a position outside ``[0, len(self))``, an array of positions that is not 1-D, or
            ``requests`` that is not a sequence (a single position or pair).
        UnknownVideoError, FrameOutOfRangeError
            On a pair naming an unselected video or a frame outside it.
        VideoDecodeError
            On a pair naming a frame without a trustworthy picture (the video's
            ``untrusted_frames``), which the reader would refuse mid-epoch.
        """
        codes, frames = request_arrays(self, requests)
        return ReadPlan.from_arrays(
            self._sel.video_ids, codes, frames, indexes=self._frame_indexes(), seed=seed, block=block
        )

    def iter_plan(
        self,
        plan: ReadPlan,
        *,
        epoch: int = 0,
        shuffle_buffer: int = 0,
        shard: int = 0,
        num_shards: int = 1,
        world_size: int = 1,
        drop_last: bool = False,
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
        world_size, drop_last
            Distributed ranks among the shards: each rank gets the same number of samples
            (see :meth:`vidlabel.readplan.ReadPlan.shard`).

        Yields
        ------
        dict
            One sample per request: a frame requested k times yields k samples
            (its image decoded once, copied for the repeats).

        Raises
        ------
        UnknownVideoError
            If the plan reads a video these samples do not select (a plan of other samples).
        OptionError
            If ``plan`` is not a ReadPlan; on a negative ``shuffle_buffer``, a shard outside ``[0, num_shards)``,
            a bad ``world_size``, or a ``drop_last`` that is not True or False
            (see :meth:`vidlabel.readplan.ReadPlan.shard`).
        """
        if not isinstance(plan, ReadPlan):
            hint = ""
            if isinstance(plan, (list, tuple, np.ndarray, range)):
                hint = " (positions or (video_id, frame) pairs become one with samples.plan_reads(requests, seed=...))"
            raise OptionError(f"iter_plan takes a ReadPlan, got {type(plan).__name__}{hint}")
        unknown = [v for v in plan.video_ids if v not in self._codes]
        if unknown:  # before any decoding, not when the epoch reaches that video's first chunk
            shown = names_shown(self._sel.video_ids)
            raise UnknownVideoError(
                f"the plan reads video {unknown[0]!r} ({len(unknown)} of its {len(plan.video_ids)} videos), which "
                f"these samples do not select (selected: {shown}): build the plan with these samples' plan_reads",
                video_id=unknown[0],
            )
        buffer_size = check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        chunks = plan.shard(epoch, shard, num_shards, world_size=world_size, drop_last=drop_last)
        rng = epoch_rng(plan.seed, epoch, STREAM_SHUFFLE_BUFFER, shard)
        return shuffled(self._read_chunks(chunks), buffer_size, rng)

    def _read_chunks(self, chunks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        readers: OpenLRU[str, Any] = OpenLRU(4)
        try:
            for chunk in chunks:
                reader = readers.get(chunk.video_id, self.reader)
                frames = chunk.frames.tolist()
                repeats = dict(zip(frames, chunk.repeats.tolist()))
                for n, image in reader.iter_frames(frames):
                    sample = self.sample(chunk.video_id, n, image)  # the targets built once per frame
                    for _ in range(repeats[n] - 1):  # a repeat: an own copy of every array
                        yield {key: v.copy() if isinstance(v, np.ndarray) else v for key, v in sample.items()}
                    yield sample
        finally:
            readers.close()
