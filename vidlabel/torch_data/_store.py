"""PyTorch datasets over a frame store: StoreFrames (map-style, any sampler) and StoreStream (iterable, sharded).

Both build the same sample dict as the video datasets (:func:`vidlabel.schema.frame_sample`), as
tensors (``to_torch_sample``: ``image`` (3, H, W) uint8), then apply
``transform``. They hold only the store's paths and metadata: files open
lazily in each DataLoader worker (fork or spawn), and each process has its
own byte-bounded chunk cache (``cache_bytes``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from vidlabel.errors import OptionError, VidlabelError, check_flag
from vidlabel.schema import SampleOptions, sample_options
from vidlabel.store import FrameStore, StoreSamples, open_store
from vidlabel.store._cache import check_cache_bytes
from vidlabel.store._framestore import adopt_learnt
from vidlabel.store._selection import warn_unexported_kinds
from vidlabel.torch_data._common import (
    Epochs,
    RankAware,
    SharedEpoch,
    check_rank_share,
    to_torch_sample,
    worker_and_count,
)
from vidlabel.torch_data._shm import install, post, take_buffer, take_slab
from vidlabel.torch_data._transforms import bind_transform
from vidlabel.video._readplan import (
    STREAM_CHUNK_ORDER,
    STREAM_SHUFFLE_BUFFER,
    check_nonneg_int,
    epoch_rng,
    samples_per_rank,
    shuffled,
    worker_span,
)

__all__ = ["StoreFrames", "StoreStream"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def _open(
    store: FrameStore | str | os.PathLike[str], cache_bytes: int | None, verify_checksums: bool | None
) -> FrameStore:
    if cache_bytes is not None:
        cache_bytes = check_cache_bytes(cache_bytes)  # as open_store checks it: True is no size
    if isinstance(store, FrameStore):
        same_cache = cache_bytes is None or cache_bytes == store.cache_bytes
        if same_cache and (verify_checksums is None or verify_checksums is store.verify_checksums):
            return store
        return FrameStore(
            store.path,
            cache_bytes=store.cache_bytes if cache_bytes is None else cache_bytes,
            storage_options=store.storage_options,
            verify_checksums=store.verify_checksums if verify_checksums is None else verify_checksums,
        )
    options: dict[str, Any] = {}
    if cache_bytes is not None:
        options["cache_bytes"] = cache_bytes
    return open_store(store, verify_checksums=True if verify_checksums is None else verify_checksums, **options)


#: StoreFrames over a store of at most this many videos builds every video's targets on construction (a few ms
#: a video), so that DataLoader workers forked later inherit them; larger stores build them where first read.
PRELOAD_VIDEOS = 64


class _StoreDataset:
    """What StoreFrames and StoreStream share: the store, the selection, the conversion to tensors."""

    def _setup(
        self,
        store: FrameStore | str | os.PathLike[str],
        *,
        kinds: Sequence[str],
        labels: Sequence[str] | None,
        box_format: str,
        normalized: bool,
        label_offset: int,
        with_masks: bool,
        transform: Transform | None,
        cache_bytes: int | None,
        frames: str | None,
        verify_checksums: bool | None,
        options: SampleOptions | None,
        with_attributes: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        owner = type(self).__name__
        targets = sample_options(
            options, owner, kinds=kinds, labels=labels, box_format=box_format, normalized=normalized,
            label_offset=label_offset, with_masks=with_masks,
        )  # fmt: skip
        if transform is not None and not callable(transform):
            raise OptionError(f"transform must be callable or None, got {transform!r}")
        install()
        self.store = _open(store, cache_bytes, verify_checksums)
        self.samples = StoreSamples(
            self.store, frames=frames, options=targets, with_attributes=with_attributes, attributes=attributes
        )
        warn_unexported_kinds(self.store, self.samples.kinds)
        self.transform = bind_transform(transform, targets.box_format, targets.normalized)

    @property
    def class_names(self) -> list[str]:
        """Class names; ``labels`` are positions in this list plus ``label_offset``."""
        return self.samples.class_names

    @property
    def index(self) -> list[tuple[str, int]]:
        """(video_id, frame_number) of each sample, in order."""
        return self.samples.index

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (store, release, options, counts) to log next to a run."""
        return self.samples.describe()

    def _hand_over_learnt(self) -> None:
        """In a DataLoader worker: send what this process learnt about the store's videos to the main process
        with the next batch (:meth:`FrameStore.learnt <vidlabel.store.FrameStore.learnt>`), for the workers of
        later epochs; nothing elsewhere."""
        learnt = self.store.learnt()
        if learnt is not None:
            post(adopt_learnt, *learnt)

    def _finish(self, sample: dict[str, Any]) -> dict[str, Any]:
        # to_torch_sample makes the image a zero-copy (3, H, W) view of the freshly read frame;
        # collate_frames stacks such views into a channels_last batch with one copy.
        out = to_torch_sample(sample)
        return self.transform(out) if self.transform is not None else out


class StoreFrames(_StoreDataset, Dataset):  # type: ignore[type-arg]
    """Map-style dataset over a frame store: ``dataset[i]``, so any sampler works, at store speed.

    Parameters
    ----------
    store : FrameStore or path
        An exported store (or folder of stores).
    kinds : sequence of {"box", "mask", "marker"}
        Region kinds that become targets; for stores exported with
        ``frames="annotated"`` also which kinds make a stored frame a sample
        (as FrameSamples' ``kinds``). Markers always fill ``frame_labels``.
    labels : sequence of str, optional
        Keep only these labels, numbered in this order.
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
    label_offset : int
        Added to ``labels``; an integer >= 0.
    with_masks : bool
    transform : callable, optional
        Receives the sample dict (tensors) and returns one.
    cache_bytes : int, optional
        Bound of the per-process chunk cache, an integer >= 0 as for
        :func:`~vidlabel.store.open_store` (default: the store's, 256 MiB).
    frames : {None, "annotated", "stored"}
        None follows the export (see :class:`~vidlabel.store.StoreSamples`).
    verify_checksums : bool, optional
        Check every frame chunk read against its stored CRC-32C and raise
        :class:`~vidlabel.errors.StoreCorruptError` on a damaged one (see
        :class:`~vidlabel.store.FrameStore`). None (default): True for a path,
        the given FrameStore's own setting for a FrameStore.
    options : SampleOptions, optional
        ``kinds``, ``labels``, ``with_masks``, ``box_format``, ``normalized``
        and ``label_offset`` in one :class:`vidlabel.schema.SampleOptions`
        (e.g. ``samples.options`` of the FrameSamples the store was exported
        from); those keywords are then left at their defaults.
    with_attributes : sequence of str, optional
        Deliver these bool or number attributes of each target as the
        sample's ``attributes`` (N, A) float32, as
        :class:`vidlabel.FrameSamples` does (NaN where a region has none).
    attributes : mapping name -> value or (op, value), optional
        Keep only the targets whose attributes pass every condition, as
        :class:`vidlabel.FrameSamples` does (see
        :class:`~vidlabel.store.StoreSamples`).

    Raises
    ------
    OptionError
        On a ``cache_bytes`` that is not an integer >= 0 (True, 1.5), a
        ``transform`` that is not callable, or options
        :class:`~vidlabel.store.StoreSamples` refuses.

    Warns
    -----
    VidlabelWarning
        If ``kinds`` names a kind the store's ``frames="annotated"`` export
        did not select (``vidlabel info`` shows its ``kinds``): frames whose
        only annotation is of that kind are not in the store, so not among
        the samples.

    Notes
    -----
    A DataLoader with ``batch_size`` calls :meth:`__getitems__`, which reads
    the batch grouped by video and chunk (each chunk once; compressed and
    JPEG chunks decoded on a thread pool) straight into one (B, H, W, 3)
    buffer when its frames share a size: each sample's ``image`` is a view
    of it (keeping one sample keeps the batch's buffer), and
    :func:`~vidlabel.torch_data.collate_frames` then returns that buffer as
    the batch without a copy. In a DataLoader worker the buffer is a
    reusable shared-memory slab (:mod:`vidlabel.torch_data._shm`), kept for
    the workers of later epochs; elsewhere a buffer of an earlier batch
    whose views are all gone (:func:`~vidlabel.torch_data._shm.take_buffer`).
    A buffer is never refilled while any view of its batch lives. So a
    transform that keeps a sample's image and later changes it in place
    changes the batch it was handed over in: ``clone()`` images you keep to
    modify (torch's ``default_collate`` copies, so it hides this).
    """

    def __init__(
        self,
        store: FrameStore | str | os.PathLike[str],
        *,
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
        self._setup(
            store, kinds=kinds, labels=labels, box_format=box_format, normalized=normalized,
            label_offset=label_offset, with_masks=with_masks, transform=transform, cache_bytes=cache_bytes,
            frames=frames, verify_checksums=verify_checksums, options=options, with_attributes=with_attributes,
            attributes=attributes,
        )  # fmt: skip
        if len(self.store.video_ids) <= PRELOAD_VIDEOS:
            # built here, in the main process, the targets are inherited by every DataLoader worker forked later
            # (with persistent_workers=False, new workers every epoch) instead of read by each of them
            try:
                for code in np.unique(self.store.rows[self.samples.positions, 0]).tolist():
                    self.samples._targets(self.store.video_ids[code])
            except VidlabelError:  # a video that cannot be read raises where its samples are read, as before
                pass

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        """Sample ``i`` (an integer in ``[-len, len)``).

        Raises
        ------
        SampleIndexTypeError
            If ``i`` is not an integer: ``1.5``, ``'3'`` and ``True`` are refused, never rounded or parsed.
        SampleOutOfRangeError
            If ``i`` is outside ``[-len(self), len(self))``.
        """
        return self._finish(self.samples.sample(i))

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        buffers: list[np.ndarray] = []

        def allocate(shape: tuple[int, ...]) -> np.ndarray:
            # one (B, H, W, 3) buffer for a batch whose frames share a size, else one flat buffer of all their
            # bytes; in a DataLoader worker, a reusable shared-memory slab
            slab = take_slab(shape)
            buffers.append(take_buffer(shape) if slab is None else slab.array)
            return buffers[0]

        samples = self.samples.samples(list(indices), allocate=allocate)
        if buffers and buffers[0].ndim == 4:
            batch = torch.from_numpy(buffers[0])
            for k, sample in enumerate(samples):  # each image a (3, H, W) view of the batch: collate copies nothing
                sample["image"] = batch[k].permute(2, 0, 1)
        elif buffers:  # frames of several sizes, back to back in one buffer (one slab in a worker)
            flat, offset = torch.from_numpy(buffers[0]), 0
            for sample in samples:
                h, w, c = sample["image"].shape
                sample["image"] = flat[offset : offset + h * w * c].view(h, w, c).permute(2, 0, 1)
                offset += h * w * c
        self._hand_over_learnt()
        return [self._finish(s) for s in samples]

    def __repr__(self) -> str:
        return f"StoreFrames({str(self.store.path)!r}, samples={len(self)}, kinds={self.samples.kinds})"


def _batches(pieces: list[np.ndarray], size: int) -> Iterator[list[int]]:
    """The sample indices of ``pieces`` in order, in batches of whole pieces holding at least ``size`` (the last
    batch what is left)."""
    batch: list[int] = []
    for piece in pieces:
        batch.extend(piece.tolist())
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class StoreStream(RankAware, Epochs, _StoreDataset, IterableDataset):  # type: ignore[type-arg]
    """Iterable dataset over a frame store: chunks in a seeded order, split between ranks and workers.

    Every epoch, the chunks of the selected samples (a chunk = ``chunk_frames``
    stored frames of one video) are shuffled with ``seed`` and the epoch, laid
    end to end and cut into equal parts for the ``world_size`` ranks (each
    rank yields exactly ``ceil(N / world_size)`` samples, the last parts
    wrapping to the start of the order as ``DistributedSampler`` pads by
    repeating, or ``floor`` with ``drop_last``); within a rank, the part is
    cut into one contiguous piece per DataLoader worker, sized from the
    part's length alone, so worker ``w`` yields as many samples on every
    rank: with the same ``batch_size`` and ``num_workers`` every rank runs
    the same number of batches (no hang at the last collective). With one
    rank, or ``N`` a multiple of ``world_size``, every sample comes out
    exactly once per epoch.

    Parameters
    ----------
    store : FrameStore or path
    shuffle : bool
        Shuffle the chunk order each epoch (else store order).
    shuffle_buffer : int
        Mix samples through a buffer of this many decoded samples.
    seed : int
    drop_last : bool
        Drop the tail instead of wrapping, so that no sample repeats across ranks.
    kinds, labels, box_format, normalized, label_offset, with_masks, transform, cache_bytes, frames, verify_checksums
        As :class:`StoreFrames`.
    options, with_attributes, attributes
        As :class:`StoreFrames`.

    Raises
    ------
    OptionError
        On a negative ``shuffle_buffer`` or ``seed``, or options StoreFrames refuses; when iterated, if
        ``drop_last`` would drop the whole epoch (fewer samples than ranks).
    """

    def __init__(
        self,
        store: FrameStore | str | os.PathLike[str],
        *,
        shuffle: bool = True,
        shuffle_buffer: int = 0,
        seed: int = 0,
        drop_last: bool = False,
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
        self._setup(
            store, kinds=kinds, labels=labels, box_format=box_format, normalized=normalized,
            label_offset=label_offset, with_masks=with_masks, transform=transform, cache_bytes=cache_bytes,
            frames=frames, verify_checksums=verify_checksums, options=options, with_attributes=with_attributes,
            attributes=attributes,
        )  # fmt: skip
        self.shuffle = check_flag("shuffle", shuffle)
        self.shuffle_buffer = int(shuffle_buffer)
        self.seed = int(seed)
        self.drop_last = check_flag("drop_last", drop_last)
        self._epoch = SharedEpoch(0)  # before any DataLoader worker starts: set_epoch reaches persistent workers
        self._units = self._chunk_units()

    def _chunk_units(self) -> list[np.ndarray]:
        """Positions (into the selection) of each chunk's samples, in store order."""
        rows = self.store.rows[self.samples.positions]
        if rows.shape[0] == 0:
            return []
        per_video = {}
        for code in np.unique(rows[:, 0]).tolist():
            per_video[code] = int(self.store.video_attrs(self.store.video_ids[code]).get("chunk_frames", 1))
        cf = np.array([per_video[c] for c in rows[:, 0].tolist()], np.int64)
        chunk = rows[:, 1] // cf
        new = np.ones(rows.shape[0], bool)
        new[1:] = (rows[1:, 0] != rows[:-1, 0]) | (chunk[1:] != chunk[:-1])
        starts = np.flatnonzero(new)
        return np.split(np.arange(rows.shape[0], dtype=np.int64), starts[1:])

    def _per_rank(self, world: int) -> int:
        return samples_per_rank(len(self.samples), world, self.drop_last)

    def __len__(self) -> int:
        """Samples this rank yields per epoch (all its workers together)."""
        return self._per_rank(self._rank_and_world()[1])

    def shard_pieces(self, epoch: int, rank: int, world: int, worker: int, workers: int) -> list[np.ndarray]:
        """The chunk pieces (positions into the selection) one worker of one rank reads in an epoch."""
        units = self._units
        if not units:
            return []
        order = np.arange(len(units))
        if self.shuffle:
            order = epoch_rng(self.seed, epoch, STREAM_CHUNK_ORDER).permutation(len(units))
        sequence = np.concatenate([units[i] for i in order.tolist()])
        unit_of = np.concatenate([np.full(units[i].size, k) for k, i in enumerate(order.tolist())])
        per_rank = self._per_rank(world)
        take = (np.arange(per_rank, dtype=np.int64) + rank * per_rank) % sequence.size
        mine, mine_unit = sequence[take], unit_of[take]
        if mine.size == 0:
            return []
        # Each worker gets a contiguous part of the rank's sequence, sized from per_rank alone: worker w yields
        # as many samples on every rank, so every rank runs the same number of batches.
        lo, hi = worker_span(per_rank, worker, workers)
        mine, mine_unit = mine[lo:hi], mine_unit[lo:hi]
        if mine.size == 0:
            return []
        cuts = np.flatnonzero(np.diff(mine_unit) != 0) + 1
        return np.split(mine, cuts)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        rank, world = self._rank_and_world()
        check_rank_share(len(self.samples), rank, world, self.drop_last, f"StoreStream over {str(self.store.path)!r}")
        worker, workers = worker_and_count()
        epoch = self.epoch  # read once: the main process may set the next epoch while this one runs
        pieces = self.shard_pieces(epoch, rank, world, worker, workers)
        rng = epoch_rng(self.seed, epoch, STREAM_SHUFFLE_BUFFER, rank * workers + worker)
        return shuffled(self._read(pieces), self.shuffle_buffer, rng)

    def _read(self, pieces: list[np.ndarray]) -> Iterator[dict[str, Any]]:
        for batch in _batches(pieces, 32):
            samples = self.samples.samples(batch)
            self._hand_over_learnt()
            for sample in samples:
                yield self._finish(sample)

    def __repr__(self) -> str:
        return (
            f"StoreStream({str(self.store.path)!r}, samples={len(self.samples)}, shuffle_buffer={self.shuffle_buffer})"
        )
