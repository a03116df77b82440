"""PyTorch datasets of clips over a frame store: StoreClips (map-style, any sampler) and StoreClipStream (iterable).

Both serve one clip per selected (anchor) frame of the store, made by the
:class:`~vidlabel.ClipSpec` the store was exported with (or one given whose
frames the store holds: every clip is checked on construction, and a missing
frame is a :class:`~vidlabel.errors.ClipNotStoredError`). A clip's frames are
read as contiguous slices of the store's chunks
(:meth:`~vidlabel.store.FrameStore.read_clip`); a batch of clips is read into
one (B, T, H, W, 3) buffer, a reusable shared-memory slab in a DataLoader
worker (:mod:`vidlabel.torch_data._shm`), so that the batch travels to the
main process without a copy (:func:`~vidlabel.torch_data.collate_clips`).

A clip sample has the keys of a clip read from video (:mod:`vidlabel.samples._clips`), as tensors
(:func:`~vidlabel.torch_data.to_torch_clip`): ``image`` (T, 3, H, W) uint8 (a view of the frames read
channels-last); ``boxes``, ``labels``, ``track_ids``, ``annotation_ids`` (and ``masks``, ``attributes``):
lists of T tensors, frame by frame; ``frame_labels`` (T, C) float32; ``clip_labels`` (C,) float32 (a class is
on if it is on in any frame of the clip); ``frame_indices`` and ``timestamps_us`` (T,) int64; ``video_id``,
``view_id``; ``clip_index``, the clip's position in the dataset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from vidlabel.clip import ClipSpec
from vidlabel.errors import OptionError, check_flag
from vidlabel.schema import SampleOptions
from vidlabel.store import FrameStore
from vidlabel.store._clips import StoreClipSamples
from vidlabel.torch_data._clips import to_torch_clip
from vidlabel.torch_data._common import Epochs, RankAware, SharedEpoch, check_rank_share, worker_and_count
from vidlabel.torch_data._shm import take_buffer, take_slab
from vidlabel.torch_data._store import Transform, _StoreDataset
from vidlabel.video._readplan import (
    STREAM_CHUNK_ORDER,
    STREAM_SHUFFLE_BUFFER,
    check_nonneg_int,
    epoch_rng,
    samples_per_rank,
    shuffled,
    worker_span,
)

__all__ = ["StoreClipStream", "StoreClips"]

#: Clips of one video, consecutive in store order, that StoreClipStream keeps together (they share chunks).
CLIP_GROUP = 8


class _ClipDataset(_StoreDataset):
    """What StoreClips and StoreClipStream share: the store, the anchor selection, the clips."""

    def _setup_clips(self, store: Any, clip: ClipSpec | None, options: dict[str, Any]) -> None:
        self._setup(store, **options)
        self.clips = StoreClipSamples(self.samples, clip)
        self.clip = self.clips.clip

    @property
    def frame_indices(self) -> np.ndarray:
        """(N, T) int64: the frame numbers of every clip, in order."""
        return self.clips.frame_indices

    @property
    def index(self) -> list[tuple[str, int]]:
        """(video_id, first frame) of each clip, in order."""
        return self.clips.index

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary: the store's, plus the clip and the clip count."""
        out = self.samples.describe()
        out.update(
            {"clips": len(self.clips), "clips_skipped": self.clips.skipped,
             "clip": {"frames_per_clip": self.clip.frames_per_clip, "step": self.clip.step,
                      "anchor": self.clip.anchor, "edge": self.clip.edge}}
        )  # fmt: skip
        return out

    def _read(self, js: Sequence[int], *, slab: bool = True) -> list[dict[str, Any]]:
        """Clips ``js`` read into one (B, T, H, W, 3) buffer: with ``slab`` (a batch handed over as it is), in a
        DataLoader worker a reusable shared-memory slab; else a reusable buffer of this process."""
        buffers: list[np.ndarray] = []

        def allocate(shape: tuple[int, ...]) -> np.ndarray:
            pooled = take_slab(shape) if slab else None
            buffers.append(take_buffer(shape) if pooled is None else pooled.array)
            return buffers[0]

        samples = self.clips.clip_samples(list(js), allocate=allocate)
        if buffers:
            batch = torch.from_numpy(buffers[0])
            # each image a (T, 3, H, W) view of the batch
            for k, sample in enumerate(samples):
                sample["image"] = batch[k].permute(0, 3, 1, 2)
        self._hand_over_learnt()
        return [self._finish_clip(s) for s in samples]

    def _finish_clip(self, sample: dict[str, Any]) -> dict[str, Any]:
        out = to_torch_clip(sample)
        return self.transform(out) if self.transform is not None else out


class StoreClips(_ClipDataset, Dataset):  # type: ignore[type-arg]
    """Map-style dataset of clips over a frame store: ``dataset[i]`` is clip ``i``, so any sampler works
    (``DistributedSampler`` included).

    Clip ``i`` is the clip of the ``i``-th selected frame of the store (the
    samples :class:`StoreFrames` would give with the same options), made by
    ``clip``. Export the store with the same ``clip=`` so that it holds
    every frame of every clip.

    Parameters
    ----------
    store : FrameStore or path
    clip : ClipSpec, optional
        Default: the spec the store was exported with (``vidlabel info`` shows it). Another spec is served
        when the store holds all its frames (a shorter clip, say).
    kinds, labels, box_format, normalized, label_offset, with_masks, transform, cache_bytes, frames, verify_checksums, options
        As :class:`StoreFrames`; ``transform`` receives the clip sample (tensors).
    with_attributes : sequence of str, optional
        Deliver these bool or number attributes of each target: the clip's ``attributes``, a list of T
        (N_t, A) float32 tensors, frame t's as :class:`StoreFrames` gives it.
    attributes : mapping name -> value or (op, value), optional
        Keep only the targets whose attributes pass every condition (as :class:`StoreFrames`); the clips are
        those of the frames left with a selected target.

    Raises
    ------
    ClipNotStoredError
        (a LookupError) If the store lacks a frame of any clip: names the video, the anchor frame, the missing
        frames and the export option that stores them.
    OptionError
        If ``clip`` is not a ClipSpec, or is None for a store exported without a clip; options
        :class:`StoreFrames` refuses.
    ClipError
        From ``clip`` (``edge="error"`` at a video's edge, a clip longer than its video).

    Notes
    -----
    With a DataLoader ``batch_size``, :meth:`__getitems__` reads the batch's
    clips into one (B, T, H, W, 3) buffer (a shared-memory slab in a worker)
    and each ``image`` is a view of it; :func:`~vidlabel.torch_data.collate_clips`
    returns that buffer as the (B, T, 3, H, W) batch without a copy. As with
    StoreFrames, ``clone()`` an image you keep and change in place.
    """

    def __init__(
        self,
        store: FrameStore | str | os.PathLike[str],
        *,
        clip: ClipSpec | None = None,
        kinds: Sequence[str] = ("box", "mask"),
        labels: Sequence[str] | None = None,
        box_format: str = "xyxy",
        normalized: bool = False,
        label_offset: int = 0,
        with_masks: bool = False,
        transform: Transform | None = None,
        cache_bytes: int | None = None,
        frames: str | None = None,
        verify_checksums: bool | None = None,
        options: SampleOptions | None = None,
        with_attributes: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        self._setup_clips(
            store, clip,
            {"kinds": kinds, "labels": labels, "box_format": box_format, "normalized": normalized,
             "label_offset": label_offset, "with_masks": with_masks, "transform": transform,
             "cache_bytes": cache_bytes, "frames": frames, "verify_checksums": verify_checksums, "options": options,
             "with_attributes": with_attributes, "attributes": attributes},
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int) -> dict[str, Any]:
        """Clip ``i`` (an integer in ``[-len, len)``).

        Raises
        ------
        SampleIndexTypeError
            If ``i`` is not an integer.
        SampleOutOfRangeError
            If ``i`` is outside ``[-len(self), len(self))``.
        """
        # read into a reusable buffer (a fresh one per clip costs a page fault per 4 KiB of its frames)
        return self._read([i], slab=False)[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        return self._read(indices)

    def __repr__(self) -> str:
        return f"StoreClips({str(self.store.path)!r}, clips={len(self)}, clip={self.clip})"


class StoreClipStream(RankAware, Epochs, _ClipDataset, IterableDataset):  # type: ignore[type-arg]
    """Iterable dataset of clips over a frame store, split between ranks and DataLoader workers.

    Every epoch, groups of up to :data:`CLIP_GROUP` consecutive clips of one
    video (which share chunks) are shuffled with ``seed`` and the epoch,
    laid end to end and cut as :class:`StoreStream` cuts samples: each rank
    yields ``ceil(N / world_size)`` clips (the last part wrapping to the
    start, or ``floor`` with ``drop_last``), each worker a contiguous piece
    sized from that alone. With one rank, or N a multiple of
    ``world_size``, every clip comes out exactly once per epoch.

    Parameters
    ----------
    store : FrameStore or path
    clip : ClipSpec, optional
        As :class:`StoreClips`.
    shuffle : bool
    shuffle_buffer : int
        Mix clips through a buffer of this many clips.
    seed : int
    drop_last : bool
    batch_clips : int
        Clips read together (into one buffer) by a worker.
    kinds, labels, box_format, normalized, label_offset, with_masks, transform, cache_bytes, frames, verify_checksums, options, with_attributes, attributes
        As :class:`StoreClips`.

    Raises
    ------
    OptionError, ClipNotStoredError, ClipError
        As :class:`StoreClips`; on a negative ``shuffle_buffer`` or ``seed``, a ``batch_clips`` below 1; when
        iterated, if ``drop_last`` would drop the whole epoch.
    """

    def __init__(
        self,
        store: FrameStore | str | os.PathLike[str],
        *,
        clip: ClipSpec | None = None,
        shuffle: bool = True,
        shuffle_buffer: int = 0,
        seed: int = 0,
        drop_last: bool = False,
        batch_clips: int = 4,
        kinds: Sequence[str] = ("box", "mask"),
        labels: Sequence[str] | None = None,
        box_format: str = "xyxy",
        normalized: bool = False,
        label_offset: int = 0,
        with_masks: bool = False,
        transform: Transform | None = None,
        cache_bytes: int | None = None,
        frames: str | None = None,
        verify_checksums: bool | None = None,
        options: SampleOptions | None = None,
        with_attributes: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        check_nonneg_int(seed, "seed")
        if isinstance(batch_clips, bool) or not isinstance(batch_clips, int) or batch_clips < 1:
            raise OptionError(f"batch_clips must be an integer >= 1, got {batch_clips!r}")
        self._setup_clips(
            store, clip,
            {"kinds": kinds, "labels": labels, "box_format": box_format, "normalized": normalized,
             "label_offset": label_offset, "with_masks": with_masks, "transform": transform,
             "cache_bytes": cache_bytes, "frames": frames, "verify_checksums": verify_checksums, "options": options,
             "with_attributes": with_attributes, "attributes": attributes},
        )  # fmt: skip
        self.shuffle = check_flag("shuffle", shuffle)
        self.shuffle_buffer = int(shuffle_buffer)
        self.seed = int(seed)
        self.drop_last = check_flag("drop_last", drop_last)
        self.batch_clips = batch_clips
        self._epoch = SharedEpoch(0)

    def _groups(self) -> list[np.ndarray]:
        """Clip positions in groups of consecutive clips of one video, in store order."""
        n = len(self.clips)
        if n == 0:
            return []
        codes = self.clips._codes
        new = np.ones(n, bool)
        new[1:] = codes[1:] != codes[:-1]
        run_start = np.maximum.accumulate(np.where(new, np.arange(n), 0))
        new |= (np.arange(n) - run_start) % CLIP_GROUP == 0
        return np.split(np.arange(n, dtype=np.int64), np.flatnonzero(new)[1:])

    def __len__(self) -> int:
        """Clips this rank yields per epoch (all its workers together)."""
        return samples_per_rank(len(self.clips), self._rank_and_world()[1], self.drop_last)

    def shard_clips(self, epoch: int, rank: int, world: int, worker: int, workers: int) -> np.ndarray:
        """The clip positions one worker of one rank reads in an epoch, in order."""
        groups = self._groups()
        if not groups:
            return np.zeros(0, np.int64)
        order = np.arange(len(groups))
        if self.shuffle:
            order = epoch_rng(self.seed, epoch, STREAM_CHUNK_ORDER).permutation(len(groups))
        sequence = np.concatenate([groups[i] for i in order.tolist()])
        per_rank = samples_per_rank(sequence.size, world, self.drop_last)
        take = (np.arange(per_rank, dtype=np.int64) + rank * per_rank) % sequence.size
        lo, hi = worker_span(per_rank, worker, workers)
        return sequence[take[lo:hi]]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        rank, world = self._rank_and_world()
        check_rank_share(len(self.clips), rank, world, self.drop_last, f"StoreClipStream over {str(self.store.path)!r}")
        worker, workers = worker_and_count()
        epoch = self.epoch
        mine = self.shard_clips(epoch, rank, world, worker, workers)
        rng = epoch_rng(self.seed, epoch, STREAM_SHUFFLE_BUFFER, rank * workers + worker)
        return shuffled(self._stream(mine), self.shuffle_buffer, rng)

    def _stream(self, mine: np.ndarray) -> Iterator[dict[str, Any]]:
        for lo in range(0, mine.size, self.batch_clips):
            # the collate stacks the yielded clips into the batch's slab: read them into a plain reusable buffer
            yield from self._read(mine[lo : lo + self.batch_clips].tolist(), slab=False)

    def __repr__(self) -> str:
        return f"StoreClipStream({str(self.store.path)!r}, clips={len(self.clips)}, clip={self.clip})"
