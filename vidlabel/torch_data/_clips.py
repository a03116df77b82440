"""PyTorch datasets of clips read from the videos: ClipStream (streaming) and VideoClips (map-style), and
collate_clips.

Both hold a :class:`~vidlabel.samples.ClipSamples` (which clips, their
targets), which pickles as arrays and paths, so they work in DataLoader
workers started by fork or spawn. A clip sample in PyTorch is the NumPy clip
sample (:mod:`vidlabel.samples._clips`) with ``image`` a (T, 3, H, W) uint8
tensor (a channels-last view of the decoded frames) and every array a tensor;
the ragged per-frame targets stay lists of T tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.utils.data

from vidlabel.errors import OptionError, check_flag
from vidlabel.samples._clips import CLIP_RAGGED_KEYS, ClipSamples
from vidlabel.schema import CLIP
from vidlabel.store._position import sample_position
from vidlabel.torch_data._common import (
    Epochs,
    RankAware,
    SharedEpoch,
    check_rank_share,
    keep_heap_top,
    worker_and_count,
)
from vidlabel.torch_data._shm import by_value, ragged_by_value, take_slab
from vidlabel.torch_data._transforms import bind_transform
from vidlabel.video._readplan import check_nonneg_int, samples_per_rank

__all__ = ["ClipStream", "VideoClips", "collate_clips", "to_torch_clip"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def _check(clips: Any, transform: Any) -> tuple[ClipSamples, Transform | None]:
    if not isinstance(clips, ClipSamples):
        hint = " (make one with samples.clips(ClipSpec(...), sampler))" if hasattr(clips, "clips") else ""
        raise OptionError(f"expected a vidlabel ClipSamples, got {type(clips).__name__}{hint}")
    if transform is not None and not callable(transform):
        raise OptionError(f"transform must be callable or None, got {transform!r}")
    options = clips.samples.options
    return clips, bind_transform(transform, options.box_format, options.normalized)


def _tensor(arr: np.ndarray) -> torch.Tensor:
    if not arr.flags.writeable or not arr.flags.c_contiguous or not arr.dtype.isnative:
        arr = np.array(arr, order="C")
    return torch.from_numpy(arr)


def to_torch_clip(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A NumPy clip sample as tensors.

    ``image`` (T, H, W, 3) uint8 becomes a (T, 3, H, W) uint8 tensor that
    shares memory with the frames (a channels-last view; ``.contiguous()``
    when an operation needs channels-first memory); the ragged per-frame
    targets become lists of T tensors; every other array a tensor of the same
    shape and dtype; strings, ints and None stay as they are.

    Parameters
    ----------
    sample : dict
        A clip sample as :class:`~vidlabel.samples.ClipSamples` gives it.

    Returns
    -------
    dict
        The same keys, arrays as tensors.
    """
    out: dict[str, Any] = {}
    for key, value in sample.items():
        if key in CLIP.images and isinstance(value, np.ndarray) and value.ndim == 4:
            out[key] = _tensor(value).permute(0, 3, 1, 2)
        elif key in CLIP_RAGGED_KEYS and isinstance(value, list):
            out[key] = [_tensor(v) if isinstance(v, np.ndarray) else v for v in value]
        elif isinstance(value, np.ndarray):
            out[key] = _tensor(value)
        else:
            out[key] = value
    return out


def _stack_clips(images: list[torch.Tensor]) -> torch.Tensor:
    """(B, T, 3, H, W) from (T, 3, H, W) clip images: channels-last views are stacked in NumPy into one
    (B, T, H, W, 3) array (a shared-memory slab in a DataLoader worker) and handed over permuted."""
    if all(im.dim() == 4 and im.device.type == "cpu" and im.permute(0, 2, 3, 1).is_contiguous() for im in images):
        arrays = [im.permute(0, 2, 3, 1).numpy() for im in images]
        shape = (len(arrays), *arrays[0].shape)
        slab = take_slab(shape, arrays[0].dtype)
        if slab is None:
            return torch.from_numpy(np.stack(arrays)).permute(0, 1, 4, 2, 3)
        try:
            np.stack(arrays, out=slab.array)
        except BaseException:
            slab.release()
            raise
        return slab.tensor(torch.from_numpy(slab.array).permute(0, 1, 4, 2, 3))
    return torch.stack(images)


def collate_clips(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Collate clip samples into a batch dict.

    - ``image``: (B, T, 3, H, W) uint8 (in ``channels_last``-like memory: one copy, no transpose);
    - ``frame_labels`` (B, T, C) float32, ``clip_labels`` (B, C) float32, ``frame_indices`` and
      ``timestamps_us`` (B, T) int64, and any other same-shape tensor key: stacked;
    - the ragged per-frame targets (``boxes``, ``labels``, ``track_ids``, ``annotation_ids``, ``masks``):
      a list of B lists of T tensors (``batch["boxes"][b][t]``);
    - ints (``clip_index``): a (B,) int64 tensor; strings and None (``video_id``, ``view_id``): lists.

    NumPy clip samples (as :class:`~vidlabel.samples.ClipSamples` gives them) are converted first.

    Parameters
    ----------
    batch : sequence of dict
        Clip samples with the same keys, frames per clip and image size.

    Returns
    -------
    dict
        The batch, as above.

    Raises
    ------
    OptionError
        On an empty batch, a batch that is not a sequence of dicts, clips of different shapes (frames
        per clip or image size), or samples whose keys differ.
    """
    if isinstance(batch, (Mapping, str, bytes)) or not isinstance(batch, Sequence):
        hint = " (wrap one clip in a list: [clip])" if isinstance(batch, Mapping) else ""
        raise OptionError(f"collate_clips takes a sequence of clip sample dicts, got {type(batch).__name__}{hint}")
    if len(batch) == 0:
        raise OptionError("collate_clips got an empty batch")
    if not all(isinstance(s, Mapping) for s in batch):
        raise OptionError("collate_clips takes a sequence of clip sample dicts; a transform must return the dict")
    keys = list(batch[0])
    for i, sample in enumerate(batch):
        if set(sample) != set(keys):
            raise OptionError(f"collate_clips: clip {i} has keys {sorted(sample)}, the first {sorted(keys)}")
    samples = [to_torch_clip(s) for s in batch]
    out: dict[str, Any] = {}
    for key in keys:
        values = [s[key] for s in samples]
        first = values[0]
        if key in CLIP_RAGGED_KEYS and isinstance(first, list):
            out[key] = [ragged_by_value(list(v)) for v in values]
        elif isinstance(first, torch.Tensor) and all(isinstance(v, torch.Tensor) for v in values):
            if any(v.shape != first.shape for v in values):
                shapes = sorted({tuple(v.shape) for v in values})
                raise OptionError(
                    f"collate_clips: {key!r} differs in shape across the batch ({shapes}); clips of one batch need "
                    "the same frames per clip and image size"
                )
            out[key] = _stack_clips(values) if key == "image" else by_value(torch.stack(values))
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            out[key] = by_value(torch.tensor([int(v) for v in values], dtype=torch.int64))
        else:
            out[key] = values
    return out


class _ClipOutput:
    transform: Transform | None

    def _output(self, sample: dict[str, Any]) -> dict[str, Any]:
        out = to_torch_clip(sample)
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
        The clip sample as tensors (:func:`to_torch_clip`); batch them with :func:`collate_clips`.

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
