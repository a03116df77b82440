"""Reusable shared-memory slabs for the image batches DataLoader workers hand to the main process.

torch hands a worker's batch over by moving each tensor into a fresh
shared-memory segment, which the main process maps and unmaps again. For
720p frames the fresh pages are what costs: filling a new segment took about
4.8 ms per frame on our 2-core VMs against 0.5 ms for a copy into memory
already touched (``scripts/bench_store.py`` prints torch's own hand-over as a
control), so 2 workers delivered full frames slower than 0 workers.

:func:`collate_frames <vidlabel.torch_data.collate_frames>` therefore stacks
a worker's images into a slab of this process's :class:`SlabPool`. The slab
travels to the main process once (torch's own storage sharing, a file
descriptor); afterwards a batch names its slab only. In the main process the
batch tensor is a view of the mapped slab whose lifetime is tracked: when the
last view of the batch is gone, a flag in a shared byte array gives the slab
back to the worker. The worker fills a slab again only when the main process
has given it back *and* no view of it lives in the worker any more (a
transform that keeps images across batches, as mosaic or mixup do, keeps its
slab). A slab is therefore never refilled while any tensor of its batch is
alive on either side, however long they are kept. When every slab is in use
(a loop that keeps many batches), the worker falls back to torch's plain
hand-over, so nothing blocks.

The main process keeps the slabs of workers that have exited mapped until the
next loader's first batch arrives (at most :data:`MAX_SLAB_BYTES` per worker),
and each worker keeps its slabs for its lifetime: a container with a small
``/dev/shm`` should lower those bounds or turn the pool off.

Set ``VIDLABEL_SHM_POOL=0`` to turn the pool off.
"""

from __future__ import annotations

import ctypes
import os
import threading
import uuid
import weakref
from typing import Any

import numpy as np
import torch

__all__ = [
    "MAX_SLAB_BYTES",
    "MAX_SLABS",
    "MIN_POOLED_BYTES",
    "Slab",
    "SlabPool",
    "by_value",
    "ragged_by_value",
    "slab_of",
    "take_slab",
]

#: Slabs per worker process.
MAX_SLABS = 8
#: Bytes of all slabs of one worker process together.
MAX_SLAB_BYTES = 512 * 2**20
#: Batch tensors from this size up go into slabs (``VIDLABEL_SHM_POOL_MIN_BYTES`` overrides it); tensors
#: below it travel by value inside the message (a fresh segment per tensor costs more than their bytes).
MIN_POOLED_BYTES = 2**20


def _min_pooled_bytes() -> int:
    value = os.environ.get("VIDLABEL_SHM_POOL_MIN_BYTES", "").strip()
    return int(value) if value.isdigit() else MIN_POOLED_BYTES


def _enabled() -> bool:
    return os.environ.get("VIDLABEL_SHM_POOL", "1").strip().lower() not in ("0", "false", "no", "off")


def _applies() -> bool:
    """The pool is on and this is a DataLoader worker process (the only place batches are handed over from)."""
    return _enabled() and torch.utils.data.get_worker_info() is not None


def _plain_cpu(tensor: torch.Tensor) -> bool:
    """A CPU tensor without autograd whose dtype NumPy has (so that its bytes can travel in a message)."""
    return (
        tensor.device.type == "cpu"
        and not tensor.requires_grad
        and tensor.dtype not in (torch.bfloat16, torch.complex32)
    )


def _bytes_view(storage: torch.UntypedStorage) -> np.ndarray:
    """A writable uint8 NumPy view of a CPU storage's memory (no copy)."""
    return torch.empty(0, dtype=torch.uint8).set_(storage).numpy()


class SlabPool:
    """The slabs of one DataLoader worker process (created lazily, one per process).

    Attributes
    ----------
    token : str
        Names this pool in the main process (random, so a later worker with the same pid is another pool).
    slabs : list of torch.UntypedStorage
        Shared-memory slabs; ``in_use[i]`` is 1 from the moment slab ``i`` is filled until the main process
        has dropped the last view of the batch it carried, and ``held`` lists the slabs a view of which
        still lives in this worker. Slab ``i`` is free when both say so.
    """

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        self.pid = os.getpid()
        self.flags = torch.UntypedStorage._new_shared(MAX_SLABS)
        self.in_use = _bytes_view(self.flags)
        self.in_use[:] = 0
        self.slabs: list[torch.UntypedStorage] = []
        self.sent: list[bool] = []
        self.flags_sent = False
        self.taken: dict[int, tuple[weakref.ref[np.ndarray], list[bool]]] = {}  # the array of each slab's last take
        self.held: set[int] = set()  # slabs whose array (or a view of it) still lives in this worker

    def take(self, nbytes: int) -> int | None:
        """A free slab of at least ``nbytes`` (marked in use), or None when none is free and no new one fits."""
        best = None
        for i, slab in enumerate(self.slabs):
            free = self.in_use[i] == 0 and i not in self.held
            if free and slab.nbytes() >= nbytes and (best is None or slab.nbytes() < best[1]):
                best = (i, slab.nbytes())
        if best is not None:
            self.in_use[best[0]] = 1
            return best[0]
        if len(self.slabs) >= MAX_SLABS or sum(s.nbytes() for s in self.slabs) + nbytes > MAX_SLAB_BYTES:
            return None
        try:
            slab = torch.UntypedStorage._new_shared(nbytes)
        except RuntimeError:  # no room in /dev/shm: the plain hand-over will tell
            return None
        self.slabs.append(slab)
        self.sent.append(False)
        self.in_use[len(self.slabs) - 1] = 1
        return len(self.slabs) - 1


_POOL: SlabPool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> SlabPool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():
            _POOL = SlabPool()
        return _POOL


class _HandOverTensor(torch.Tensor):
    """A tensor that pickles its own way when a worker hands it over; anything done to it gives plain tensors."""

    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]  # ops give plain tensors

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        return self.as_subclass(torch.Tensor).clone()


class _PooledTensor(_HandOverTensor):
    """A worker's batch tensor living in a pool slab; pickles as (pool, slab, layout), the slab itself only once."""

    _vidlabel_slab: tuple[SlabPool, int, list[bool]]

    def __reduce_ex__(self, protocol: Any) -> Any:
        pool, index, state = self._vidlabel_slab
        state[0] = True  # handed over: from now on only the receiving process gives the slab back
        slab = None if pool.sent[index] else pool.slabs[index]
        flags = None if pool.flags_sent else pool.flags
        pool.sent[index] = True
        pool.flags_sent = True
        layout = (tuple(self.shape), tuple(self.stride()), int(self.storage_offset()), str(self.dtype))
        return (_rebuild, (pool.token, pool.pid, index, slab, flags, layout))


class _PooledList(list):  # type: ignore[type-arg]
    """A worker's list of tensors over one pool slab (a batch of images of several sizes): pickles as
    (pool, slab, layouts), the slab itself only once, and unpickles as views of one tracked mapping."""

    def __init__(self, views: list[torch.Tensor], slab: tuple[SlabPool, int, list[bool]]) -> None:
        super().__init__(views)
        self._vidlabel_slab = slab

    def __reduce_ex__(self, protocol: Any) -> Any:
        pool, index, state = self._vidlabel_slab
        state[0] = True
        slab = None if pool.sent[index] else pool.slabs[index]
        flags = None if pool.flags_sent else pool.flags
        pool.sent[index] = True
        pool.flags_sent = True
        layouts = [(tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), str(t.dtype)) for t in self]
        return (_rebuild_list, (pool.token, pool.pid, index, slab, flags, layouts))


class _ByValueTensor(_HandOverTensor):
    """A small tensor that pickles by value (its bytes in the message) instead of through a shared-memory segment."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (torch.from_numpy, (self.as_subclass(torch.Tensor).numpy(),))


def by_value(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` (CPU, smaller than :data:`MIN_POOLED_BYTES`, a dtype NumPy has) made to pickle by value.

    In a DataLoader worker, torch hands every tensor over through its own shared-memory segment and file
    descriptor, which costs the main process about 0.1 ms per tensor; a batch's small targets (boxes,
    labels, ids per sample) travel faster inside the message. Other tensors, and any tensor outside a
    worker or with the pool off, are returned as they are.
    """
    if (
        isinstance(tensor, _PooledTensor)
        or not _plain_cpu(tensor)
        or tensor.untyped_storage().nbytes() >= MIN_POOLED_BYTES
        or not _applies()
    ):
        return tensor
    return tensor.as_subclass(_ByValueTensor)


class _RaggedByValue(list):  # type: ignore[type-arg]
    """A ragged target's per-sample tensors (views of one storage) that pickle as one array and the sizes."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        flat = torch.cat(list(self)) if len(self) else torch.empty(0)
        return (_rebuild_ragged, (flat.numpy(), [int(t.shape[0]) for t in self]))


def _rebuild_ragged(flat: np.ndarray, sizes: list[int]) -> list[torch.Tensor]:
    return list(torch.split(torch.from_numpy(flat), sizes))


def ragged_by_value(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Per-sample tensors of one dtype and trailing shape, smaller than :data:`MIN_POOLED_BYTES` together,
    made to pickle as one array (see :func:`by_value`); anything else is returned as it is."""
    if (
        len(tensors) < 2
        or not _applies()
        or any(not _plain_cpu(t) or t.dim() == 0 for t in tensors)
        or len({(t.dtype, tuple(t.shape[1:])) for t in tensors}) != 1
        or sum(t.nbytes for t in tensors) >= MIN_POOLED_BYTES
    ):
        return [by_value(t) for t in tensors]
    return _RaggedByValue(tensors)


class Slab:
    """A C-contiguous NumPy array in a slab of this worker's pool: fill :attr:`array`, then :meth:`tensor`.

    If the array dies in the worker without a :meth:`tensor` of it being handed over (pickled), the slab
    goes back to the pool by itself.
    """

    def __init__(self, pool: SlabPool, index: int, state: list[bool], array: np.ndarray) -> None:
        self.pool, self.index, self.array = pool, index, array
        self.state = state  # [handed over (pickled) or released, wrapped as a batch tensor]

    def tensor(self, view: torch.Tensor) -> torch.Tensor:
        """``view`` (a tensor over :attr:`array`) as a tensor that pickles by slab."""
        out = view.as_subclass(_PooledTensor)
        self.state[1] = True  # on its way to the main process: never wrapped again (see slab_of)
        out._vidlabel_slab = (self.pool, self.index, self.state)
        return out

    def tensors(self, views: list[torch.Tensor]) -> list[torch.Tensor]:
        """``views`` (tensors over :attr:`array`, e.g. images of several sizes back to back) as one list that
        pickles by slab: the main process gets them as views of one mapping, and the slab goes back only
        when the last of them is gone."""
        self.state[1] = True
        return _PooledList(views, (self.pool, self.index, self.state))

    def release(self) -> None:
        """Give the slab back unused (the batch is not handed over after all); it is taken again only once
        its array is gone from this worker too."""
        self.state[0] = True  # the array's finalizer must not give it back again once it is taken anew
        self.pool.in_use[self.index] = 0


def _worker_done(held: set[int], in_use: np.ndarray, index: int, state: list[bool]) -> None:
    """The worker's last view of a slab is gone: free for this worker; and for good if never handed over."""
    held.discard(index)
    if not state[0]:
        in_use[index] = 0


def slab_of(tensor: torch.Tensor) -> Slab | None:
    """The slab (taken, its array alive, not yet wrapped as a batch tensor) whose memory ``tensor``'s storage
    starts at, in this worker; or None. A slab is wrapped once: the main process would otherwise hold two
    batches over it and give it back when the first one dies (a transform that returns the images of an
    earlier batch has them handed over the plain way, a copy). Wrapping, not pickling, marks it: the queue
    pickles on its own thread, after the next batch may be collated."""
    pool = _POOL
    if pool is None or pool.pid != os.getpid():
        return None
    ptr = tensor.untyped_storage().data_ptr()
    for index, (ref, state) in pool.taken.items():
        array = ref()
        if array is not None and array.ctypes.data == ptr and pool.in_use[index] and not state[1]:
            return Slab(pool, index, state, array)
    return None


def take_slab(shape: tuple[int, ...], dtype: Any = np.uint8) -> Slab | None:
    """A slab for an array of ``shape`` in this DataLoader worker's pool, or None (pool off, not in a worker,
    smaller than :data:`MIN_POOLED_BYTES`, or no slab free and no room for a new one).

    The pool is off with ``VIDLABEL_SHM_POOL=0``; ``VIDLABEL_SHM_POOL_MIN_BYTES`` sets the smallest array
    that takes a slab (both read from the environment, so DataLoader workers see them, fork or spawn)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dt.itemsize
    if nbytes < _min_pooled_bytes() or not _applies():
        return None
    pool = _pool()
    index = pool.take(nbytes)
    if index is None:
        return None
    array = _bytes_view(pool.slabs[index])[:nbytes].view(dt).reshape(shape)
    state = [False, False]
    pool.held.add(index)
    weakref.finalize(array, _worker_done, pool.held, pool.in_use, index, state)
    pool.taken[index] = (weakref.ref(array), state)
    return Slab(pool, index, state, array)


# -- the main process's side -----------------------------------------------------------------------------------

_MAPPED: dict[str, dict[str, Any]] = {}  # pool token -> {"pid", "flags", "in_use", "slabs": {index: storage}}
_MAPPED_LOCK = threading.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _give_back(in_use: np.ndarray, index: int, _keep: Any) -> None:
    in_use[index] = 0


def _mapped_base(
    token: str, pid: int, index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None
) -> torch.Tensor:
    """In the receiving process: the mapped slab as a flat uint8 tensor whose lifetime is tracked; when it and
    every view of it are gone, the slab goes back to the worker."""
    with _MAPPED_LOCK:
        entry = _MAPPED.get(token)
        if entry is None:
            for old in [t for t, e in _MAPPED.items() if not _alive(e["pid"])]:  # pools of workers that are gone
                del _MAPPED[old]
            entry = _MAPPED[token] = {"pid": pid, "flags": None, "in_use": None, "slabs": {}}
        if flags is not None:
            entry["flags"], entry["in_use"] = flags, _bytes_view(flags)
        if slab is not None:
            entry["slabs"][index] = slab
        storage = entry["slabs"][index]
        in_use = entry["in_use"]
    nbytes = storage.nbytes()
    # A NumPy array over the slab owns the lifetime: torch.from_numpy keeps it alive for as long as any view of
    # the batch lives; when it goes, the slab goes back to the worker.
    memory = (ctypes.c_uint8 * nbytes).from_address(storage.data_ptr())
    base = np.frombuffer(memory, dtype=np.uint8)
    weakref.finalize(base, _give_back, in_use, index, (storage, memory))
    return torch.from_numpy(base)


def _view(flat: torch.Tensor, layout: tuple[tuple[int, ...], tuple[int, ...], int, str]) -> torch.Tensor:
    shape, stride, offset, dtype_name = layout
    return flat.view(getattr(torch, dtype_name.removeprefix("torch."))).as_strided(shape, stride, offset)


def _rebuild(
    token: str, pid: int, index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None,
    layout: tuple[tuple[int, ...], tuple[int, ...], int, str],
) -> torch.Tensor:  # fmt: skip
    """Unpickle a pooled batch tensor in the receiving process: a view of the mapped slab, tracked for its lifetime."""
    return _view(_mapped_base(token, pid, index, slab, flags), layout)


def _rebuild_list(
    token: str, pid: int, index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None,
    layouts: list[tuple[tuple[int, ...], tuple[int, ...], int, str]],
) -> list[torch.Tensor]:  # fmt: skip
    """Unpickle a pooled list: views of one mapping of the slab, given back when the last of them is gone."""
    flat = _mapped_base(token, pid, index, slab, flags)
    return [_view(flat, layout) for layout in layouts]
