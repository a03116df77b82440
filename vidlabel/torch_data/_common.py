"""What every vidlabel PyTorch dataset shares: the rank x worker shard, tensor conversion, collate.

Sharding follows one rule everywhere (video and store datasets alike): the
shard of this process is ``rank * num_workers + worker`` out of
``world_size * num_workers``.

Where the rank and world size come from, first found wins:

1. ``RANK`` and ``WORLD_SIZE`` environment variables (as ``torchrun`` sets
   them; tests and launchers without a process group set them too);
   ``WORLD_SIZE`` > 1 without ``RANK`` takes the rank of 2. or 3. in a world
   of that size, else is refused;
2. ``torch.distributed.get_rank()`` / ``get_world_size()`` when a process
   group is initialised in this process (a rank, and the DataLoader workers
   it forks, which inherit it);
3. the rank the dataset was pickled in (:class:`RankAware`): a DataLoader
   worker started by ``spawn`` or ``forkserver`` has no process group, so
   the datasets carry their rank process's (rank, world size) along;
4. (0, 1); but ``RANK`` > 0 without ``WORLD_SIZE`` (and without 2. or 3.) is
   refused: every rank would read the whole epoch.

``VIDLABEL_WORKER`` and ``VIDLABEL_NUM_WORKERS`` override the DataLoader
worker number and count (``torch.utils.data.get_worker_info()``).

``VIDLABEL_MALLOC_TOP_PAD``: bytes of freed memory glibc keeps at the top of
the heap in a process that reads samples (default 64 MiB; 0 leaves malloc's
settings alone), see :func:`vidlabel.video._heap.keep_heap_top`.
"""

from __future__ import annotations

import ctypes
import multiprocessing.context
import os
from collections.abc import Mapping, Sequence
from multiprocessing.sharedctypes import RawValue
from typing import Any

import numpy as np
import torch

from vidlabel.errors import OptionError
from vidlabel.schema import SCHEMAS
from vidlabel.torch_data._shm import by_value, ragged_by_value, slab_of, take_slab
from vidlabel.video._heap import keep_heap_top
from vidlabel.video._readplan import check_nonneg_int

__all__ = [
    "RAGGED_KEYS",
    "MAX_EPOCH",
    "Epochs",
    "RankAware",
    "SharedEpoch",
    "check_rank_share",
    "collate_frames",
    "keep_heap_top",
    "process_group_rank",
    "rank_and_world",
    "to_torch_sample",
    "worker_and_count",
    "worker_info",
]

#: Per-sample keys whose first dimension differs between samples, collated as lists: the schemas' ragged keys
#: (:mod:`vidlabel.schema`), and ``confidences``, a per-region key transforms add.
RAGGED_KEYS: frozenset[str] = frozenset().union(*(schema.ragged for schema in SCHEMAS.values()), {"confidences"})

#: Keys holding images, channels last in NumPy and channels first in PyTorch.
IMAGE_KEYS: frozenset[str] = frozenset().union(*(schema.images for schema in SCHEMAS.values()))


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as err:
        raise OptionError(f"environment variable {name} must be an integer, got {value!r}") from err


def _pair(index: int, count: int, names: str) -> tuple[int, int]:
    if count < 1 or not 0 <= index < count:
        raise OptionError(f"{names}: {index} must lie in [0, {count}) with a count >= 1")
    return index, count


def process_group_rank() -> tuple[int, int] | None:
    """(rank, world_size) of this process's ``torch.distributed`` process group, or None if none is initialised."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return None


def rank_and_world(inherited: tuple[int, int] | None = None) -> tuple[int, int]:
    """(rank, world_size): from ``RANK``/``WORLD_SIZE`` if set, else ``torch.distributed`` if initialised, else
    ``inherited`` (the rank a dataset was pickled in, see :class:`RankAware`), else (0, 1).

    ``WORLD_SIZE`` > 1 without ``RANK`` takes the rank from the process group (or ``inherited``) when its world
    size is the same, as nothing else tells this process's rank. ``RANK`` > 0 without ``WORLD_SIZE``, a process
    group or ``inherited`` is refused: nothing tells the world size, and (0, 1) would read the whole epoch.

    Raises
    ------
    OptionError
        If the variables are not integers, the rank is outside ``[0, world_size)``, or ``WORLD_SIZE`` > 1 is set
        without ``RANK`` and nothing else gives a rank in that world (every rank would read rank 0's share), or
        ``RANK`` > 0 is set without ``WORLD_SIZE`` and nothing else gives the world size (every rank would read
        the whole epoch).
    """
    world = _env_int("WORLD_SIZE")
    if world is not None:
        rank = _env_int("RANK")
        if rank is None and world > 1:
            for known in (process_group_rank(), inherited):
                if known is not None and int(known[1]) == world:
                    return _pair(int(known[0]), world, "RANK/WORLD_SIZE")
            raise OptionError(
                f"environment variable WORLD_SIZE is {world} but RANK is not set: every process would read rank "
                f"0's share. Set RANK to this process's rank in [0, {world}) (torchrun sets both), or unset WORLD_SIZE"
            )
        return _pair(rank or 0, world, "RANK/WORLD_SIZE")
    group = process_group_rank()
    if group is not None:
        return group
    if inherited is not None:
        return _pair(int(inherited[0]), int(inherited[1]), "inherited rank/world_size")
    rank = _env_int("RANK")
    if rank is not None and rank > 0:  # the rank of a world > 1 whose size nothing here says
        raise OptionError(
            f"environment variable RANK is {rank} but WORLD_SIZE is not set: this process would read the whole "
            "epoch, as every other rank would (each sample once per rank). Set WORLD_SIZE to the number of ranks "
            f"(> {rank}; torchrun sets both), or unset RANK"
        )
    return 0, 1


def check_rank_share(total: int, rank: int, world: int, drop_last: bool, what: str) -> None:
    """Refuse an epoch that ``drop_last`` would drop whole: ``0 < total < world`` samples give every rank
    ``floor(total / world) = 0``, so every rank would yield nothing and the run would train on nothing.

    Raises
    ------
    OptionError
        Naming ``what``, the counts, the rank, and what to change.
    """
    if drop_last and 0 < total < world:
        raise OptionError(
            f"{what}: drop_last=True with {total} samples over {world} ranks gives every rank floor({total} / "
            f"{world}) = 0 samples, so the whole epoch would be dropped (rank {rank} yields nothing). Pass "
            f"drop_last=False (each rank then gets 1 sample, the start of the order repeated) or use at most "
            f"{total} ranks"
        )


class RankAware:
    """Mixin of the sharded datasets: pickled in a process with a process group (to a DataLoader worker
    started by ``spawn``, which has none), the dataset carries that (rank, world_size) along."""

    _inherited_rank: tuple[int, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        group = process_group_rank()
        if group is not None:
            state["_inherited_rank"] = group
        return state

    def _rank_and_world(self) -> tuple[int, int]:
        return rank_and_world(self._inherited_rank)


def worker_and_count() -> tuple[int, int]:
    """(worker, num_workers) of this DataLoader worker: from ``VIDLABEL_WORKER``/``VIDLABEL_NUM_WORKERS`` if set,
    else ``torch.utils.data.get_worker_info()``, else (0, 1) in the main process."""
    count = _env_int("VIDLABEL_NUM_WORKERS")
    if count is not None:
        return _pair(_env_int("VIDLABEL_WORKER") or 0, count, "VIDLABEL_WORKER/VIDLABEL_NUM_WORKERS")
    info = torch.utils.data.get_worker_info()
    if info is None:
        return 0, 1
    return int(info.id), int(info.num_workers)


def worker_info(inherited: tuple[int, int] | None = None) -> tuple[int, int]:
    """This process's shard over ranks x DataLoader workers.

    Parameters
    ----------
    inherited : (rank, world_size), optional
        Used when neither the environment nor a process group says (see :func:`rank_and_world`).

    Returns
    -------
    (shard, num_shards) : tuple of int
        ``shard = rank * num_workers + worker`` and
        ``num_shards = world_size * num_workers``; (0, 1) in a plain process.
        See the module docstring for where rank and world size come from.
    """
    rank, world = rank_and_world(inherited)
    worker, workers = worker_and_count()
    return rank * workers + worker, world * workers


#: The largest epoch :meth:`Epochs.set_epoch` takes: the shared value is a signed 64-bit integer.
MAX_EPOCH = 2**63 - 1


class SharedEpoch:
    """The epoch of an iterable dataset, in shared memory: DataLoader workers that are already running
    (``persistent_workers=True``) read what ``set_epoch`` wrote in the main process.

    A dataset creates it in its constructor, before any worker starts. Workers started by fork inherit
    the shared memory; workers started by spawn or forkserver receive it as they start (multiprocessing
    hands a shared value over only then). Pickled at any other time (``pickle.dumps(dataset)``), it
    travels as the plain number and the copy gets shared memory of its own. Only the main process writes;
    each worker reads the value when an iteration starts (an aligned 64-bit word: no lock needed).

    Parameters
    ----------
    epoch : int
        The starting epoch (>= 0).
    """

    def __init__(self, epoch: int = 0) -> None:
        self._shared = RawValue(ctypes.c_int64, int(epoch))

    @property
    def value(self) -> int:
        """The epoch."""
        return int(self._shared.value)

    @value.setter
    def value(self, epoch: int) -> None:
        self._shared.value = int(epoch)

    def __getstate__(self) -> dict[str, Any]:
        if multiprocessing.context.get_spawning_popen() is not None:  # a worker starting: share the memory
            return {"shared": self._shared}
        return {"epoch": self.value}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._shared = state["shared"] if "shared" in state else RawValue(ctypes.c_int64, int(state["epoch"]))

    def __repr__(self) -> str:
        return f"SharedEpoch({self.value})"


class Epochs:
    """Mixin of the iterable datasets: their epoch, in a :class:`SharedEpoch` (``_epoch``) the dataset creates
    in its constructor, shared with its DataLoader workers (persistent ones too)."""

    _epoch: SharedEpoch

    @property
    def epoch(self) -> int:
        """The epoch the next iteration uses (0 until :meth:`set_epoch`)."""
        return self._epoch.value

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s order and shuffle buffer from the next iteration on.

        Call it before iterating the DataLoader each epoch. The epoch lives in
        shared memory (:class:`SharedEpoch`), so workers kept with
        ``persistent_workers=True`` see it too: epoch k has the same order with
        and without persistent workers.

        Raises
        ------
        OptionError
            If ``epoch`` is not an integer in ``[0, 2**63 - 1]`` (bools refused): the shared value is a
            64-bit integer, which would wrap a larger one into another epoch's order.
        """
        epoch = check_nonneg_int(epoch, "epoch")
        if epoch > MAX_EPOCH:
            raise OptionError(
                f"epoch must be an integer in [0, {MAX_EPOCH}] (it is shared with the DataLoader workers as a "
                f"64-bit integer), got {epoch}"
            )
        self._epoch.value = epoch


def _tensor(arr: np.ndarray) -> torch.Tensor:
    # from_numpy shares memory; copy read-only or non-native arrays (torch warns on read-only ones).
    flags = arr.flags
    if not (flags.writeable and flags.c_contiguous and arr.dtype.isnative):
        arr = np.array(arr, order="C")
    return torch.from_numpy(arr)


def to_torch_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A NumPy sample dict as tensors.

    ``image`` (H, W, 3) uint8 becomes a (3, H, W) uint8 tensor that shares
    memory with the decoded frame: a channels-last view (strides ``(1, 3W,
    3)``), no copy. Call ``.contiguous()`` if an operation needs
    channels-first memory; :func:`collate_frames` batches such views into a
    ``torch.channels_last`` (B, 3, H, W) tensor with one copy. Every other
    array becomes a tensor of the same shape and dtype; strings, ints and
    None are kept as they are.
    """
    out: dict[str, Any] = {}
    for key, value in sample.items():
        # inlined _from_numpy: this runs for every sample a dataset hands out
        if not isinstance(value, np.ndarray):
            out[key] = value
        elif key in IMAGE_KEYS and value.ndim >= 3:
            out[key] = _tensor(value).movedim(-1, -3)
        else:
            out[key] = _tensor(value)
    return out


def _channels_last_view(t: torch.Tensor) -> bool:
    # A (C, H, W) CPU tensor whose memory is a C-contiguous (H, W, C) array (what to_torch_sample makes).
    return t.dim() == 3 and t.device.type == "cpu" and not t.requires_grad and t.permute(1, 2, 0).is_contiguous()


def _rows_of_one_buffer(values: list[torch.Tensor]) -> torch.Tensor | None:
    """The (B, H, W, C) tensor whose rows, in order, are exactly ``values`` (channels-last (C, H, W) views of
    one storage that it fills from its start), or None."""
    first = values[0]
    storage = first.untyped_storage()
    c, h, w = first.shape
    step = c * h * w
    if storage.nbytes() != len(values) * step * first.element_size():
        return None
    ptr = storage.data_ptr()
    for k, v in enumerate(values):
        if v.untyped_storage().data_ptr() != ptr or v.storage_offset() != k * step or v.shape != first.shape:
            return None
    return torch.empty(0, dtype=first.dtype).set_(storage, 0, (len(values), h, w, c), (h * w * c, w * c, c, 1))


def _stack(values: list[torch.Tensor]) -> torch.Tensor:
    """Stack same-shape tensors; channels-last image views are stacked in NumPy (one memcpy each)
    into a (B, C, H, W) ``torch.channels_last`` tensor, which torch.stack would copy slowly. In a
    DataLoader worker, images go into a reusable shared-memory slab (:mod:`vidlabel.torch_data._shm`)."""
    if values[0].dim() == 3 and values[0].shape[0] > 1 and all(_channels_last_view(v) for v in values):
        whole = _rows_of_one_buffer(values)
        if whole is not None:  # StoreFrames read the batch into one buffer: hand it over as it is
            slab = slab_of(whole)
            batch = whole.permute(0, 3, 1, 2)
            return batch if slab is None else slab.tensor(batch)
        arrays = [v.permute(1, 2, 0).numpy() for v in values]
        shape = (len(arrays), *arrays[0].shape)
        slab = take_slab(shape, arrays[0].dtype)  # in a DataLoader worker: a reusable shared-memory slab
        if slab is None:
            return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        try:
            np.stack(arrays, out=slab.array)
        except BaseException:
            slab.release()
            raise
        return slab.tensor(torch.from_numpy(slab.array).permute(0, 3, 1, 2))
    return torch.stack(values)


def _pooled_list(values: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """Tensors of several shapes that all lie in one pool slab of this worker (StoreFrames reads a batch of
    frames of several sizes back to back into one), as a list that travels by slab; else None."""
    ptr = values[0].untyped_storage().data_ptr()
    if any(v.untyped_storage().data_ptr() != ptr for v in values):
        return None
    slab = slab_of(values[0])
    return None if slab is None else slab.tensors(values)


def _ragged(values: list[torch.Tensor]) -> list[torch.Tensor]:
    """One tensor per sample, as views of one concatenated storage where dtypes and trailing shapes agree.

    A DataLoader worker hands every storage to the main process through its own
    shared-memory segment; one storage per key instead of one per sample made
    batches of small targets about 4x faster to hand over (measured with 2 workers).
    """
    first = values[0]
    if first.dim() == 0 or any(v.dtype != first.dtype or v.shape[1:] != first.shape[1:] for v in values):
        return values
    flat = torch.cat(values)
    return list(torch.split(flat, [int(v.shape[0]) for v in values]))


def _from_numpy(key: str, value: Any) -> Any:
    """A NumPy array as a tensor (anything else as it is); a NumPy ``image`` (H, W, C), as FrameSamples gives it,
    as a (C, H, W) view of it: what :func:`to_torch_sample` makes of each value, and :func:`collate_frames` of a
    NumPy sample's, so that a batch's images are (B, C, H, W) whichever kind of sample they came in."""
    if not isinstance(value, np.ndarray):
        return value
    if key in IMAGE_KEYS and value.ndim >= 3:
        return _tensor(value).movedim(-1, -3)
    return _tensor(value)


def _what(value: Any) -> str:
    """A short description of ``value`` for a message: its repr when short, else its type (and shape, or items)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"a {type(value).__name__} of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)) and value:
        shown = ", ".join(_what(v) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} ({shown})"
    text = repr(value)
    return f"{text} ({type(value).__name__})" if len(text) <= 60 else f"a {type(value).__name__}"


def collate_frames(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Collate samples (tensor dicts) into a batch dict.

    - ``image``, and any other tensor key outside :data:`RAGGED_KEYS`: stacked
      to (B, ...) when every sample's shape agrees, else a list. Images are
      (B, 3, H, W) uint8; from :func:`to_torch_sample`'s channels-last views
      they come in ``torch.channels_last`` memory format (one copy, no
      transpose);
    - ragged targets (``boxes``, ``labels``, ``track_ids``, ``annotation_ids``,
      ``masks``): a list of B tensors (views of one storage per key);
    - ints/floats (``frame_index``): a (B,) tensor;
    - strings, None and anything else (``video_id``, ``view_id``): a list.

    Keys are those of the first sample. NumPy arrays are converted to tensors first, a NumPy ``image``
    (H, W, 3) (a ``FrameSamples`` sample, or what a transform returned) to (3, H, W) as
    :func:`to_torch_sample` does, so images come out (B, 3, H, W) either way.

    In a DataLoader worker, images go into reusable shared-memory slabs and
    small tensors travel by value inside the message
    (:mod:`vidlabel.torch_data._shm`): the main process receives plain tensors.

    Parameters
    ----------
    batch : sequence of dict
        Samples as :func:`to_torch_sample` (or ``FrameSamples``) gives them, with the same keys.

    Raises
    ------
    OptionError
        On an empty batch, a batch that is not a sequence of sample dicts (None, one dict, a list of
        numbers), or a sample missing a key of the first or holding one the first lacks.
    """
    if isinstance(batch, (Mapping, str, bytes)) or not isinstance(batch, Sequence):
        hint = " (wrap one sample in a list: [sample])" if isinstance(batch, Mapping) else ""
        raise OptionError(f"collate_frames takes a sequence of sample dicts, got {type(batch).__name__}{hint}")
    if len(batch) == 0:
        raise OptionError("collate_frames got an empty batch")
    for i, sample in enumerate(batch):
        if not isinstance(sample, Mapping):
            raise OptionError(
                f"collate_frames takes a sequence of sample dicts; sample {i} is {_what(sample)} (a transform must "
                "return the sample dict it receives, changed: a torchvision-style (image, target) pair is not one)"
            )
    keys = list(batch[0])
    for i, sample in enumerate(batch[1:], 1):  # keys are the first sample's: another key would be dropped unsaid
        extra = [k for k in sample if k not in batch[0]]
        if extra:
            raise OptionError(
                f"collate_frames: sample {i} has key {extra[0]!r} that the first sample lacks (keys: {keys}); every "
                "sample of a batch must have the same keys (a transform that adds a key must add it to each sample)"
            )
    out: dict[str, Any] = {}
    for key in keys:
        try:
            values = [s[key] for s in batch]
        except KeyError as err:
            raise OptionError(f"collate_frames: a sample lacks key {key!r} that the first sample has") from err
        values = [_from_numpy(key, v) for v in values]
        first = values[0]
        if isinstance(first, torch.Tensor) and all(isinstance(v, torch.Tensor) for v in values):
            if key not in RAGGED_KEYS and all(v.shape == first.shape for v in values):
                out[key] = by_value(_stack(values))
            else:
                pooled = None if key in RAGGED_KEYS else _pooled_list(values)
                out[key] = pooled if pooled is not None else ragged_by_value(_ragged(values))
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            out[key] = by_value(torch.tensor([int(v) for v in values], dtype=torch.int64))
        elif all(isinstance(v, (float, np.floating)) for v in values):
            out[key] = by_value(torch.tensor([float(v) for v in values], dtype=torch.float32))
        else:
            out[key] = values
    return out
