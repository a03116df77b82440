"""PyTorch datasets that read frames from the videos: VideoStream, VideoFrames, PlannedStream.

Spec: "A minimal PyTorch loop", "Reading video quickly: stream, do not
shuffle", "Reading a list of frames you chose: ReadPlan". All three are
picklable (they hold a :class:`~vidlabel.samples.FrameSamples`, which holds
arrays and paths; readers are opened lazily in each process), so they work
with DataLoader workers started by fork or spawn.

Epochs: the iterable datasets read their epoch when iteration starts in a
worker. Call ``set_epoch(n)`` before iterating the DataLoader. The epoch lives
in shared memory created with the dataset
(:class:`~vidlabel.torch_data._common.SharedEpoch`), so workers kept with
``persistent_workers=True`` see it too: epoch k has the same order with and
without persistent workers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch.utils.data

from vidlabel._lru import OpenLRU
from vidlabel.errors import OptionError, VidlabelWarning, check_flag
from vidlabel.samples._samples import FrameSamples
from vidlabel.store._position import sample_position
from vidlabel.torch_data._common import (
    Epochs,
    RankAware,
    SharedEpoch,
    check_rank_share,
    keep_heap_top,
    rank_and_world,
    to_torch_sample,
    worker_and_count,
)
from vidlabel.torch_data._transforms import bind_transform
from vidlabel.video._readplan import (
    STREAM_SHUFFLE_BUFFER,
    STREAM_VIDEO_ORDER,
    ReadPlan,
    check_nonneg_int,
    epoch_rng,
    samples_per_rank,
    shuffled,
)

__all__ = ["PlannedStream", "VideoFrames", "VideoStream"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def _check_samples(samples: Any) -> FrameSamples:
    if not isinstance(samples, FrameSamples):
        raise OptionError(f"expected a vidlabel.FrameSamples, got {type(samples).__name__}")
    return samples


def _check_transform(transform: Any) -> Transform | None:
    if transform is not None and not callable(transform):
        raise OptionError(f"transform must be callable or None, got {transform!r}")
    return transform  # type: ignore[no-any-return]


class _Output:
    """Turns NumPy samples into tensor samples and applies the user's transform."""

    transform: Transform | None

    def _output(self, sample: dict[str, Any]) -> dict[str, Any]:
        out = to_torch_sample(sample)
        return self.transform(out) if self.transform is not None else out


class VideoStream(RankAware, Epochs, _Output, torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """Every sample of a FrameSamples, each video decoded once front to back per epoch.

    Whole videos are split between the DataLoader workers and distributed
    ranks (:func:`~vidlabel.torch_data.worker_info`): in the epoch's video
    order each video goes to the shard with the fewest samples so far, so
    shard sizes differ by at most one video's samples. Use at least as many
    videos as shards; a shard without videos yields nothing.

    Parameters
    ----------
    samples : FrameSamples
    shuffle_videos : bool
        Visit the videos in an order drawn from ``(seed, epoch)``; False: by video id.
    shuffle_buffer : int
        Mix samples through a buffer of this many decoded frames (0: in order).
    seed : int
        Non-negative; with the epoch it decides video order and buffer draws.
    transform : callable, optional
        Receives the tensor sample dict and returns one.

    Yields
    ------
    dict
        The sample as tensors: ``image`` (3, H, W) uint8 (a channels-last view of the
        decoded frame, see :func:`~vidlabel.torch_data._common.to_torch_sample`), ``boxes`` (N, 4)
        float32, ``labels``/``track_ids``/``annotation_ids`` (N,) int64,
        ``frame_labels`` (C,) float32, ``masks`` (N, H, W) uint8 with
        ``with_masks``; ``video_id``, ``view_id`` (str), ``frame_index`` (int).
    """

    def __init__(
        self,
        samples: FrameSamples,
        *,
        shuffle_videos: bool = True,
        shuffle_buffer: int = 0,
        seed: int = 0,
        transform: Transform | None = None,
    ) -> None:
        self.samples = _check_samples(samples)
        self.shuffle_videos = check_flag("shuffle_videos", shuffle_videos)
        self.shuffle_buffer = check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        self.seed = check_nonneg_int(seed, "seed")
        self.transform = bind_transform(
            _check_transform(transform), samples.options.box_format, samples.options.normalized
        )
        self._epoch = SharedEpoch(0)  # before any DataLoader worker starts
        codes = samples.index.video_codes
        self._edges = np.searchsorted(codes, np.arange(len(samples.video_ids) + 1))

    def __len__(self) -> int:
        """Samples per epoch over all shards together."""
        return len(self.samples)

    def assignment(self, epoch: int, num_shards: int) -> list[list[str]]:
        """The videos each shard reads in an epoch, in reading order.

        Returns
        -------
        list of list of str
            ``num_shards`` lists of video ids; every video with samples is in exactly one.

        Raises
        ------
        OptionError
            If ``epoch`` is not an integer >= 0 or ``num_shards`` not an integer >= 1 (bools refused).
        """
        epoch = check_nonneg_int(epoch, "epoch")  # with shuffle_videos=False too: the same epochs either way
        if isinstance(num_shards, bool) or not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
            raise OptionError(f"num_shards must be an integer >= 1, got {num_shards!r}")
        num_shards = int(num_shards)
        ids = self.samples.video_ids
        sizes = np.diff(self._edges).tolist()  # Python ints, converted once
        videos = [v for v in range(len(ids)) if sizes[v] > 0]
        if self.shuffle_videos:
            rng = epoch_rng(self.seed, epoch, STREAM_VIDEO_ORDER)
            videos = [videos[i] for i in rng.permutation(len(videos)).tolist()]
        shards: list[list[str]] = [[] for _ in range(num_shards)]
        loads = [0] * num_shards
        for v in videos:
            s = loads.index(min(loads))  # O(shards): the ranks x workers, not the videos
            shards[s].append(ids[v])
            loads[s] += sizes[v]
        return shards

    def _numpy_samples(self, videos: Sequence[str]) -> Iterator[dict[str, Any]]:
        samples = self.samples
        for video_id in videos:
            code = samples._codes[video_id]
            # The video's samples as Python ints, converted once per video (not per sample).
            targets = samples._targets_at(slice(int(self._edges[code]), int(self._edges[code + 1])))
            by_frame = {t[0]: t for t in targets}
            with samples.reader(video_id) as reader:
                for n, image in reader.iter_frames(list(by_frame)):
                    f, lo, hi, pattern = by_frame[n]
                    yield samples._sample_of(code, f, lo, hi, pattern, image)

    def _warn_uneven_ranks(self, epoch: int, shards: list[list[str]], rank: int, world: int) -> None:
        """Warn when this epoch gives the ranks different numbers of samples (whole videos per shard): under
        DDP the ranks with more batches wait forever at their next collective."""
        sizes = np.diff(self._edges)
        workers = len(shards) // world
        per_rank = [
            sum(int(sizes[self.samples._codes[v]]) for s in shards[r * workers : (r + 1) * workers] for v in s)
            for r in range(world)
        ]
        if len(set(per_rank)) > 1:
            warnings.warn(
                f"VideoStream under {world} ranks: epoch {epoch} gives rank {rank} {per_rank[rank]} samples, and the "
                f"ranks {min(per_rank)} to {max(per_rank)} (it shares out whole videos): with a collective per "
                "batch (DistributedDataParallel) the ranks with more batches wait forever. Use PlannedStream("
                "samples, samples.plan_reads(range(len(samples)), seed=...)), which gives every rank "
                "ceil(len / world) samples",
                VidlabelWarning,
                stacklevel=2,
            )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keep_heap_top()
        rank, world = rank_and_world(self._inherited_rank)
        worker, workers = worker_and_count()
        shard, num_shards = rank * workers + worker, world * workers  # as worker_info
        epoch = self.epoch
        shards = self.assignment(epoch, num_shards)
        if world > 1 and worker == 0:  # once per rank
            self._warn_uneven_ranks(epoch, shards, rank, world)
        videos = shards[shard]
        rng = epoch_rng(self.seed, epoch, STREAM_SHUFFLE_BUFFER, shard)
        for sample in shuffled(self._numpy_samples(videos), self.shuffle_buffer, rng):
            yield self._output(sample)


class VideoFrames(_Output, torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Map-style access to the samples of a FrameSamples: ``dataset[i]`` is ``samples.index[i]``.

    Any sampler works, but every random frame pays its keyframe interval's
    decoding. A DataLoader with ``batch_size > 1`` calls
    :meth:`__getitems__`, which groups the batch by video and reads each
    video's frames in one ``read_many`` (each keyframe interval decoded once).
    Up to ``max_open_readers`` video files stay open per process.

    Parameters
    ----------
    samples : FrameSamples
    transform : callable, optional
        Receives the tensor sample dict and returns one.
    max_open_readers : int
        Readers kept open per process (least recently used closed first).
    """

    def __init__(self, samples: FrameSamples, *, transform: Transform | None = None, max_open_readers: int = 4) -> None:
        self.samples = _check_samples(samples)
        self.transform = bind_transform(
            _check_transform(transform), samples.options.box_format, samples.options.normalized
        )
        if check_nonneg_int(max_open_readers, "max_open_readers") < 1:
            raise OptionError(f"max_open_readers must be >= 1, got {max_open_readers}")
        self.max_open_readers = int(max_open_readers)
        self._readers: OpenLRU[str, Any] = OpenLRU(self.max_open_readers)

    def __len__(self) -> int:
        return len(self.samples)

    def _reader(self, video_id: str) -> Any:
        return self._readers.get(video_id, self.samples.reader)

    def close(self) -> None:
        """Close the readers this process holds."""
        self._readers.close()

    def _position(self, i: Any) -> int:
        return sample_position(i, len(self), "VideoFrames")

    def _samples_at(self, positions: list[int]) -> list[dict[str, Any]]:
        keep_heap_top()
        samples = self.samples
        codes = samples.index.video_codes[positions].tolist()
        targets = samples._targets_at(positions)
        by_video: dict[int, list[int]] = {}
        for j, code in enumerate(codes):
            by_video.setdefault(code, []).append(j)
        out: list[dict[str, Any] | None] = [None] * len(positions)
        for code, js in by_video.items():
            images = self._reader(samples.video_ids[code]).read_many([targets[j][0] for j in js])
            for j, image in zip(js, images):
                out[j] = self._output(samples._sample_of(code, *targets[j], image))
        return out  # type: ignore[return-value]

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self._samples_at([self._position(i)])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """Samples ``indices`` in the order given, frames of one video read together with ``read_many``."""
        return self._samples_at([self._position(i) for i in indices])


class PlannedStream(RankAware, Epochs, _Output, torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """The samples of a :class:`~vidlabel.readplan.ReadPlan`, each keyframe interval decoded once.

    Each epoch's chunk order comes from the plan's seed and the epoch; chunks
    are split between workers and ranks by ``plan.shard``.

    - One process (``world_size`` 1): whole chunks go to the DataLoader
      workers (sizes differ by at most one chunk); every request is produced
      exactly once per epoch.
    - Distributed ranks (``torch.distributed`` initialised, or
      ``WORLD_SIZE`` > 1): every rank yields exactly ``ceil(len(plan) /
      world_size)`` samples, the last rank's part wrapping to the start of
      the epoch's order (``DistributedSampler`` pads by repeating too), or
      ``floor`` with ``drop_last``; and worker ``w`` yields as many samples on
      every rank. So with the same ``batch_size`` and ``num_workers`` on every
      rank, every rank runs the same number of batches (no hang at the last
      collective). When ``len(plan)`` is a multiple of ``world_size`` every
      request is produced exactly once per epoch across the ranks.

    Parameters
    ----------
    samples : FrameSamples
    plan : ReadPlan
        Built by ``samples.plan_reads`` (or over the same videos).
    shuffle_buffer : int
        Mix samples through a buffer of this many decoded frames.
    transform : callable, optional
        Receives the tensor sample dict and returns one.
    drop_last : bool
        With several ranks: drop the epoch's tail instead of repeating its start, so no request repeats.

    Raises
    ------
    OptionError
        When iterated with several ranks, if ``drop_last`` would drop the whole epoch (fewer requests than
        ranks).
    """

    def __init__(
        self,
        samples: FrameSamples,
        plan: ReadPlan,
        *,
        shuffle_buffer: int = 0,
        transform: Transform | None = None,
        drop_last: bool = False,
    ) -> None:
        self.samples = _check_samples(samples)
        if not isinstance(plan, ReadPlan):
            raise OptionError(f"plan must be a vidlabel.ReadPlan, got {type(plan).__name__}")
        self.plan = plan
        self.shuffle_buffer = check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        self.transform = bind_transform(
            _check_transform(transform), samples.options.box_format, samples.options.normalized
        )
        self.drop_last = check_flag("drop_last", drop_last)
        self._epoch = SharedEpoch(0)  # before any DataLoader worker starts

    def __len__(self) -> int:
        """Samples this rank yields per epoch, all its DataLoader workers together (as ``DistributedSampler``'s
        length): the plan's requests in one process; ``ceil`` (``floor`` with ``drop_last``) of
        ``len(plan) / world_size`` under distributed ranks."""
        world = self._rank_and_world()[1]
        if world == 1:
            return len(self.plan)
        return samples_per_rank(len(self.plan), world, self.drop_last)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keep_heap_top()
        rank, world = self._rank_and_world()
        if world > 1:
            check_rank_share(len(self.plan), rank, world, self.drop_last, "PlannedStream")
        worker, workers = worker_and_count()
        it = self.samples.iter_plan(
            self.plan, epoch=self.epoch, shuffle_buffer=self.shuffle_buffer, shard=rank * workers + worker,
            num_shards=world * workers, world_size=world, drop_last=self.drop_last,
        )  # fmt: skip
        for sample in it:
            yield self._output(sample)
