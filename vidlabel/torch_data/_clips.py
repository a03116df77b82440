"""PyTorch datasets of clips read from the videos: ClipStream (streaming) and VideoClips (map-style).

Both hold a :class:`~vidlabel.samples.ClipSamples` (which clips, their
targets), which pickles as arrays and paths, so they work in DataLoader
workers started by fork or spawn. A clip sample in PyTorch is the NumPy clip
sample (:mod:`vidlabel.samples._clips`) with ``image`` a (T, 3, H, W) uint8
tensor (a channels-last view of the decoded frames) and every array a tensor;
the ragged per-frame targets stay lists of T tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.utils.data

from vidlabel.errors import OptionError, check_flag
from vidlabel.samples._clips import ClipSamples
from vidlabel.store._position import sample_position
from vidlabel.torch_data._collate import to_torch_sample
from vidlabel.torch_data._common import (
    Epochs,
    RankAware,
    SharedEpoch,
    check_rank_share,
    keep_heap_top,
    worker_and_count,
)
from vidlabel.torch_data._shm import install
from vidlabel.torch_data._transforms import bind_transform
from vidlabel.video._readplan import check_nonneg_int, samples_per_rank

__all__ = ["ClipStream", "VideoClips"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def _check(clips: Any, transform: Any) -> tuple[ClipSamples, Transform | None]:
    if not isinstance(clips, ClipSamples):
        hint = " (make one with samples.clips(ClipSpec(...), sampler))" if hasattr(clips, "clips") else ""
        raise OptionError(f"expected a vidlabel ClipSamples, got {type(clips).__name__}{hint}")
    if transform is not None and not callable(transform):
        raise OptionError(f"transform must be callable or None, got {transform!r}")
    options = clips.samples.options
    return clips, bind_transform(transform, options.box_format, options.normalized)


class _ClipOutput:
    transform: Transform | None

    def _output(self, sample: dict[str, Any]) -> dict[str, Any]:
        out = to_torch_sample(sample)
        return self.transform(out) if self.transform is not None else out


class ClipStream(RankAware, Epochs, _ClipOutput, torch.utils.data.IterableDataset):  # type: ignore[type-arg]
    """The clips of a ClipSamples, streamed: each chunk of clips (one keyframe interval) decoded once per epoch.

    Each epoch (``set_epoch``) takes that epoch's clips (new ones for a
    :class:`~vidlabel.samples.RandomClips` sampler) and a chunk order drawn
    from ``(seed, epoch)``; chunks are split between DataLoader workers and
    ranks as :meth:`~vidlabel.video.ClipPlan.shard` says. In one process every
    clip comes out exactly once per epoch across the workers. Under several
    ranks every rank yields exactly ``ceil(len(clips) / world_size)`` clips
    (``floor`` with ``drop_last``), worker ``w`` as many on every rank, so
    every rank runs the same number of batches; when ``len(clips)`` is a
    multiple of ``world_size`` every clip comes out exactly once across ranks
    x workers (else the last rank's part wraps to the start of the order).

    Parameters
    ----------
    clips : ClipSamples
        ``samples.clips(ClipSpec(...), sampler)``.
    seed : int
        With the epoch, decides the chunk order and the shuffle buffer's draws.
    shuffle_buffer : int
        Mix clips through a buffer of this many decoded clips (0: in reading order).
    transform : callable, optional
        Receives the tensor clip sample and returns one.
    drop_last : bool
        With several ranks: drop the epoch's tail instead of repeating its start.

    Yields
    ------
    dict
        The clip sample as tensors (:func:`~vidlabel.torch_data._collate.to_torch_sample`); batch them with
        :func:`~vidlabel.torch_data.collate_frames` (or its alias ``collate_clips``).

    Raises
    ------
    OptionError
        On a bad argument; when iterated with several ranks, if ``drop_last`` would drop the whole epoch.
    ClipError
        When iterated, as :meth:`ClipSamples.index` (before any decoding).
    """

    def __init__(
        self,
        clips: ClipSamples,
        *,
        seed: int = 0,
        shuffle_buffer: int = 0,
        transform: Transform | None = None,
        drop_last: bool = False,
    ) -> None:
        self.clips, self.transform = _check(clips, transform)
        install()
        self.seed = check_nonneg_int(seed, "seed")
        self.shuffle_buffer = check_nonneg_int(shuffle_buffer, "shuffle_buffer")
        self.drop_last = check_flag("drop_last", drop_last)
        self._epoch = SharedEpoch(0)  # before any DataLoader worker starts

    def __len__(self) -> int:
        """Clips this rank yields per epoch, all its DataLoader workers together."""
        world = self._rank_and_world()[1]
        total = len(self.clips.index(self.epoch))
        return total if world == 1 else samples_per_rank(total, world, self.drop_last)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keep_heap_top()
        rank, world = self._rank_and_world()
        epoch = self.epoch
        if world > 1:
            check_rank_share(len(self.clips.index(epoch)), rank, world, self.drop_last, "ClipStream")
        worker, workers = worker_and_count()
        it = self.clips.iter_clips(
            epoch=epoch, seed=self.seed, shuffle_buffer=self.shuffle_buffer, shard=rank * workers + worker,
            num_shards=world * workers, world_size=world, drop_last=self.drop_last,
        )  # fmt: skip
        for sample in it:
            yield self._output(sample)


class VideoClips(Epochs, _ClipOutput, torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Map-style clips: ``dataset[i]`` is clip ``i`` of the epoch's :meth:`ClipSamples.index`.

    Any sampler works (``DistributedSampler`` included); a DataLoader batch
    calls :meth:`__getitems__`, which reads the batch's clips of one video with
    one ``read_many`` (each keyframe interval decoded once per batch). For a per-epoch clip sampler (RandomClips) call ``set_epoch`` each
    epoch, as with ``DistributedSampler``; the epoch is shared with the
    DataLoader workers. The number of clips is the same every epoch.

    Parameters
    ----------
    clips : ClipSamples
    transform : callable, optional
        Receives the tensor clip sample and returns one.

    Raises
    ------
    OptionError
        On a bad argument.
    SampleIndexTypeError, SampleOutOfRangeError
        On an index that is not an integer, or outside ``[-len, len)``.
    """

    def __init__(self, clips: ClipSamples, *, transform: Transform | None = None) -> None:
        self.clips, self.transform = _check(clips, transform)
        install()
        self._epoch = SharedEpoch(0)

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int) -> dict[str, Any]:
        keep_heap_top()
        position = sample_position(i, len(self), "VideoClips")
        return self._output(self.clips.read(position, epoch=self.epoch))

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """Clips ``indices`` in the order given, the clips of one video read together with ``read_many``."""
        keep_heap_top()
        positions = [sample_position(i, len(self), "VideoClips") for i in indices]
        return [self._output(s) for s in self.clips.read_many(positions, epoch=self.epoch)]

    def close(self) -> None:
        """Close the readers this process holds."""
        self.clips.close()
