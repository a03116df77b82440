"""What every vidlabel PyTorch dataset shares: the rank x worker shard and the epoch (tensor conversion and
collate, re-exported here, live in :mod:`vidlabel.torch_data._collate`).

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
from multiprocessing.sharedctypes import RawValue
from typing import Any

import torch

from vidlabel.errors import OptionError
from vidlabel.torch_data._collate import collate_frames, to_torch_sample
from vidlabel.video._heap import keep_heap_top
from vidlabel.video._readplan import check_nonneg_int

__all__ = [
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
