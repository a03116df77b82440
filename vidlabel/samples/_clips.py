"""ClipSamples: the clips of a FrameSamples, their targets, and reading them exactly (NumPy).

A clip sample is T frames of one video (:class:`vidlabel.clip.ClipSpec`) with
the targets of every frame, built from the same per-frame targets as
:meth:`FrameSamples.sample`, so a clip's frame t carries exactly the boxes,
labels, track ids and marker labels a frame sample of that frame carries.

The clip sample's keys, shapes and dtypes are :data:`vidlabel.schema.CLIP`
(built by :func:`vidlabel.schema.clip_sample`): ``image`` (T, H, W, 3) uint8,
``boxes``/``labels``/``track_ids``/``annotation_ids`` (and ``masks``) as lists
of T arrays, ``frame_labels`` (T, C), ``clip_labels`` (C,), ``frame_indices``
and ``timestamps_us`` (T,), ``video_id``, ``view_id``, ``clip_index``.

Ragged targets are lists of T arrays (not CSR offsets): frame t's targets
are ``sample["boxes"][t]`` etc., the same arrays a frame sample holds, and
:func:`vidlabel.torch_data.collate_clips` keeps them as a list of B lists.

``clip_labels`` rule: a clip made from a marker (:class:`MarkerClips`) has
exactly that marker's label; any other clip has every class active on any of
its frames (the maximum of ``frame_labels`` over T).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidlabel._lru import OpenLRU
from vidlabel.clip import ClipSpec
from vidlabel.errors import ClipError, OptionError
from vidlabel.samples._clipsamplers import Anchors, ClipSampler, SampleClips, VideoSlots
from vidlabel.schema import clip_sample
from vidlabel.store._position import sample_position
from vidlabel.video._clipplan import ClipChunk, ClipPlan
from vidlabel.video._readplan import STREAM_SHUFFLE_BUFFER, check_nonneg_int, epoch_rng, shuffled

__all__ = ["ClipIndex", "ClipSamples"]


@dataclass(frozen=True)
class ClipIndex:
    """The clips of one epoch, by video (in ``video_ids`` order) and, within a video, in the sampler's order.

    Attributes
    ----------
    video_ids : tuple of str
        The selected videos; a code is a position here.
    video_codes : (K,) int64
    frames : (K, T) int64
        Each clip's frame numbers.
    anchors : (K,) int64
        The frame that selected each clip.
    classes : (K,) int64
        The class position of the marker that made each clip (-1: none).
    left_out : dict of str to int
        Clips each video's sampler asked for that ``edge="skip"`` left out.
    too_short : tuple of str
        Videos shorter than a clip's span, left out with ``edge="skip"``.
    """

    video_ids: tuple[str, ...]
    video_codes: np.ndarray
    frames: np.ndarray
    anchors: np.ndarray
    classes: np.ndarray
    left_out: dict[str, int] = field(default_factory=dict)
    too_short: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.video_codes.size)

    def __getitem__(self, i: int) -> tuple[str, np.ndarray]:
        """``(video_id, frames)`` of clip ``i``."""
        return self.video_ids[int(self.video_codes[i])], self.frames[i]


class ClipSamples:
    """The clips of a :class:`~vidlabel.FrameSamples`: which, their targets, and their exact frames.

    Made by :meth:`FrameSamples.clips`. Iterating reads every clip of epoch 0
    (each keyframe interval decoded once; :meth:`iter_clips` for other epochs,
    shards and shuffling); :meth:`read` reads one clip.

    Parameters
    ----------
    samples : FrameSamples
        The selection, the targets and the readers.
    spec : ClipSpec
        What a clip is.
    sampler : ClipSampler, optional
        Which clips; default :class:`SampleClips` (one per frame of ``samples.index``).

    Raises
    ------
    OptionError
        If ``spec`` is not a ClipSpec or ``sampler`` not a ClipSampler.
    ClipError
        When the clips are chosen (:meth:`index`, or anything that reads): a video shorter than a clip's
        span (unless ``edge="skip"``), or a clip over frames without a trustworthy picture with
        ``edge="error"``; names the video and the frames. Nothing is read before.
    """

    def __init__(self, samples: Any, spec: ClipSpec, sampler: ClipSampler | None = None) -> None:
        if not isinstance(spec, ClipSpec):
            raise OptionError(f"clips need a vidlabel.ClipSpec, got {spec!r}")
        sampler = SampleClips() if sampler is None else sampler
        if not isinstance(sampler, ClipSampler):
            raise OptionError(
                f"sampler must be a vidlabel ClipSampler (SampleClips, SlidingClips, RandomClips, RegularClips, "
                f"MarkerClips), got {sampler!r}"
            )
        self.samples = samples
        self.spec = spec
        self.sampler = sampler
        self._cache: dict[int, ClipIndex] = {}
        self._times: dict[int, np.ndarray] = {}
        self._readers: OpenLRU[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"], state["_times"], state["_readers"] = {}, {}, None
        return state

    def __repr__(self) -> str:
        return f"ClipSamples({self.spec!r}, {self.sampler!r}, videos={len(self.samples.video_ids)})"

    # -- which clips ------------------------------------------------------------------------------

    def _slots(self, code: int) -> VideoSlots:
        s = self.samples
        sel = s._sel
        video_id = sel.video_ids[code]
        meta = sel.videos[video_id]
        codes = sel.index.video_codes
        lo, hi = int(np.searchsorted(codes, code)), int(np.searchsorted(codes, code, side="right"))
        a, b = int(sel.mk_off[code]), int(sel.mk_off[code + 1])
        return VideoSlots(
            video_id=video_id,
            frame_count=meta.frame_count,
            usable=~meta.untrusted_mask(),
            selected=np.asarray(sel.index.frames[lo:hi], np.int64),
            marker_start=np.asarray(sel.mk_start[a:b], np.int64),
            marker_end=np.asarray(sel.mk_end[a:b], np.int64),
            marker_class=np.asarray(sel.mk_class[a:b], np.int64),
        )

    def index(self, epoch: int = 0) -> ClipIndex:
        """The clips of epoch ``epoch`` (the same every epoch unless the sampler draws anew, as RandomClips).

        Raises
        ------
        ClipError
            As the class says; OptionError on a negative epoch.
        """
        epoch = check_nonneg_int(epoch, "epoch")
        key = epoch if self.sampler.per_epoch else 0
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        spec, span = self.spec, self.spec.span()
        codes, frames, anchors, classes = [], [], [], []
        left_out: dict[str, int] = {}
        too_short: list[str] = []
        for code, video_id in enumerate(self.samples.video_ids):
            slots = self._slots(code)
            if span > slots.frame_count:
                if spec.edge != "skip":
                    spec.frames(0, slots.frame_count, video_id=video_id)  # raises: longer than the video
                too_short.append(video_id)
                continue
            chosen: Anchors = self.sampler.anchors(slots, spec, key)
            clips, kept = spec.frames_many(chosen.frames, slots.frame_count, slots.usable, video_id=video_id)
            if chosen.left_out or not kept.all():
                left_out[video_id] = chosen.left_out + int((~kept).sum())
            codes.append(np.full(clips.shape[0], code, np.int64))
            frames.append(clips)
            anchors.append(chosen.frames[kept])
            classes.append(chosen.classes[kept])
        t = spec.frames_per_clip
        out = ClipIndex(
            video_ids=tuple(self.samples.video_ids),
            video_codes=_cat(codes, (0,)),
            frames=_cat(frames, (0, t)),
            anchors=_cat(anchors, (0,)),
            classes=_cat(classes, (0,)),
            left_out=left_out,
            too_short=tuple(too_short),
        )
        for arr in (out.video_codes, out.frames, out.anchors, out.classes):
            arr.setflags(write=False)
        if len(self._cache) > 4:
            self._cache.clear()
        self._cache[key] = out
        return out

    def __len__(self) -> int:
        """Clips per epoch (every sampler gives the same number each epoch)."""
        return len(self.index(0))

    def plan(self, epoch: int = 0, *, seed: int = 0) -> ClipPlan:
        """The epoch's clips grouped by keyframe interval (:class:`~vidlabel.video._clipplan.ClipPlan`),
        whose chunk order is drawn from ``(seed, epoch)``."""
        ix = self.index(epoch)
        return ClipPlan(ix.video_ids, ix.video_codes, ix.frames, indexes=self.samples._frame_indexes(), seed=seed)

    def describe(self, epoch: int = 0) -> dict[str, Any]:
        """``clips`` (per epoch), ``frames_per_clip``, ``step``, ``anchor``, ``edge``, ``sampler`` (its repr),
        ``clips_per_video``, ``clips_left_out`` (per video, by ``edge="skip"`` or a marker shorter than a
        clip) and ``videos_too_short`` (shorter than a clip's span, left out with ``edge="skip"``)."""
        ix = self.index(epoch)
        per_video = np.bincount(ix.video_codes, minlength=len(ix.video_ids))
        return {
            "clips": len(ix),
            "frames_per_clip": self.spec.frames_per_clip,
            "step": self.spec.step,
            "anchor": self.spec.anchor,
            "edge": self.spec.edge,
            "sampler": repr(self.sampler),
            "clips_per_video": {v: int(n) for v, n in zip(ix.video_ids, per_video)},
            "clips_left_out": dict(ix.left_out),
            "videos_too_short": list(ix.too_short),
        }

    # -- the clip sample --------------------------------------------------------------------------

    def _timestamps(self, code: int, frames: np.ndarray) -> np.ndarray:
        times = self._times.get(code)
        if times is None:
            meta = self.samples._sel.videos[self.samples.video_ids[code]]
            times = self._times[code] = meta.timestamps_us(np.arange(meta.frame_count))
        return times[frames]

    def clip_sample(
        self,
        video_id: str,
        frames: Sequence[int] | np.ndarray,
        images: Sequence[np.ndarray],
        *,
        marker_class: int = -1,
        clip_index: int = -1,
    ) -> dict[str, Any]:
        """The clip sample dict of a clip's frames, given their pixels (see the module docstring for the keys).

        Parameters
        ----------
        video_id : str
        frames : (T,) int
            The clip's frame numbers.
        images : sequence of T (H, W, 3) uint8
            The reader's frames at those numbers.
        marker_class : int
            Class position of the marker that made the clip (-1: none); decides ``clip_labels``.
        clip_index : int
            Stored as ``clip_index``.

        Raises
        ------
        OptionError
            If ``images`` and ``frames`` differ in length, or an image is not the video's (view's) size.
        UnknownVideoError, FrameOutOfRangeError
            As :meth:`FrameSamples.sample`.
        """
        frames = np.asarray(frames, dtype=np.int64).reshape(-1)
        if len(images) != frames.size:
            raise OptionError(f"a clip of {frames.size} frames needs {frames.size} images, got {len(images)}")
        per_frame = [self.samples.sample(video_id, int(f), image) for f, image in zip(frames.tolist(), images)]
        # A clip made from a marker has exactly that label; any other the schema's default (clip_labels).
        clip_labels = None
        if marker_class >= 0:
            clip_labels = np.zeros(len(per_frame[0]["frame_labels"]), np.float32)
            clip_labels[marker_class] = 1.0
        return clip_sample(
            image=np.stack([s["image"] for s in per_frame]),
            frames=per_frame,
            clip_labels=clip_labels,
            frame_indices=frames.copy(),
            timestamps_us=self._timestamps(self.samples._codes[video_id], frames).copy(),
            clip_index=clip_index,
        )

    # -- reading --------------------------------------------------------------------------------

    def _reader(self, video_id: str) -> Any:
        if self._readers is None:
            self._readers = OpenLRU(4)
        return self._readers.get(video_id, self.samples.reader)

    def close(self) -> None:
        """Close the readers :meth:`read` keeps open in this process."""
        if self._readers is not None:
            self._readers.close()

    def read(self, i: int, *, epoch: int = 0) -> dict[str, Any]:
        """Clip ``i`` of epoch ``epoch``, its frames read with ``read_many`` (each interval decoded once).

        Raises
        ------
        SampleIndexTypeError
            (a TypeError) If ``i`` is not an integer.
        SampleOutOfRangeError
            (an IndexError) If ``i`` lies outside ``[-len, len)``.
        """
        ix = self.index(epoch)
        i = sample_position(i, len(ix), "ClipSamples")
        video_id, frames = ix[i]
        images = self._reader(video_id).read_many(frames.tolist())
        return self.clip_sample(video_id, frames, images, marker_class=int(ix.classes[i]), clip_index=i)

    def read_many(self, positions: Sequence[int], *, epoch: int = 0) -> list[dict[str, Any]]:
        """Clips ``positions`` of epoch ``epoch`` in the order given; the clips of one video are read with one
        ``read_many`` (each keyframe interval decoded once for all of them).

        Raises
        ------
        SampleIndexTypeError, SampleOutOfRangeError
            As :meth:`read`, for any position, before anything is read.
        """
        ix = self.index(epoch)
        wanted = [sample_position(i, len(ix), "ClipSamples") for i in positions]
        by_video: dict[int, list[int]] = {}
        for j, i in enumerate(wanted):
            by_video.setdefault(int(ix.video_codes[i]), []).append(j)
        out: list[dict[str, Any] | None] = [None] * len(wanted)
        for code, js in by_video.items():
            video_id = ix.video_ids[code]
            frames = [ix.frames[wanted[j]] for j in js]
            images = self._reader(video_id).read_many(np.concatenate(frames).tolist())
            t = self.spec.frames_per_clip
            for k, j in enumerate(js):
                i = wanted[j]
                out[j] = self.clip_sample(
                    video_id, frames[k], images[k * t : (k + 1) * t], marker_class=int(ix.classes[i]), clip_index=i
                )
        return out  # type: ignore[return-value]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_clips()

    def iter_clips(
        self,
        *,
        epoch: int = 0,
        seed: int = 0,
        shuffle_buffer: int = 0,
        shard: int = 0,
        num_shards: int = 1,
        world_size: int = 1,
        drop_last: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Read the epoch's clips through a :class:`ClipPlan`: each chunk's frames decoded once, in order.

        Parameters
        ----------
        epoch : int
            Which clips (a per-epoch sampler) and the chunk order (with ``seed``).
        seed : int
            Decides the chunk order and the shuffle buffer's draws.
        shuffle_buffer : int
            Mix the clips through a buffer of this many clips (0: in reading order).
        shard, num_shards, world_size, drop_last
            This worker's part, as :meth:`ClipPlan.shard` (``vidlabel.torch_data`` passes rank x worker).

        Yields
        ------
        dict
            Clip samples; with ``num_shards`` 1, every clip of the epoch exactly once.

        Raises
        ------
        ClipError
            As :meth:`index`, before any decoding.
        OptionError
            On a bad shard, ``shuffle_buffer`` or ``drop_last``, before any decoding.
        """
        buffer_size = check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        ix = self.index(epoch)
        chunks = self.plan(epoch, seed=seed).shard(epoch, shard, num_shards, world_size=world_size, drop_last=drop_last)
        rng = epoch_rng(seed, epoch, STREAM_SHUFFLE_BUFFER, shard)
        return shuffled(self._read_chunks(ix, chunks), buffer_size, rng)

    def _read_chunks(self, ix: ClipIndex, chunks: Sequence[ClipChunk]) -> Iterator[dict[str, Any]]:
        readers: OpenLRU[str, Any] = OpenLRU(4)
        try:
            for chunk in chunks:
                yield from self._read_chunk(ix, chunk, readers.get(chunk.video_id, self.samples.reader))
        finally:
            readers.close()

    def _read_chunk(self, ix: ClipIndex, chunk: ClipChunk, reader: Any) -> Iterator[dict[str, Any]]:
        """The chunk's clips as their last frame is decoded, holding only the frames pending clips need."""
        last = chunk.frames.max(axis=1)
        order = np.lexsort((chunk.clips, last))
        pending = 0
        held: dict[int, np.ndarray] = {}
        for n, image in reader.iter_frames(np.unique(chunk.frames).tolist()):
            held[n] = image
            while pending < order.size and last[order[pending]] <= n:
                k = int(order[pending])
                frames = chunk.frames[k]
                images = [held[f] for f in frames.tolist()]  # stacked into the clip's own array
                pos = int(chunk.clips[k])
                yield self.clip_sample(
                    chunk.video_id, frames, images, marker_class=int(ix.classes[pos]), clip_index=pos
                )
                pending += 1
            if pending < order.size:
                low = int(chunk.frames[order[pending:]].min())
                for f in [f for f in held if f < low]:
                    del held[f]
        if pending < order.size:  # pragma: no cover - iter_frames yields every asked frame or raises
            raise ClipError(f"frames of video {chunk.video_id!r} were not decoded for {order.size - pending} clips")


def _cat(parts: list[np.ndarray], empty_shape: tuple[int, ...]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(empty_shape, np.int64)
