"""Reusable shared-memory slabs for the image batches DataLoader workers hand to the main process.

torch hands a worker's batch over by moving each tensor into a fresh
shared-memory segment, which the main process maps and unmaps again. For
720p frames the fresh pages are what costs: filling a new segment takes
several times as long as a copy into memory already touched
(``scripts/bench_store.py`` prints torch's own hand-over as a control), so
2 workers could deliver full frames slower than 0 workers.

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
(a loop that keeps many batches, or batches so large that the pool's bytes
hold fewer of them than the worker has in flight), the worker reads the batch
into a *one-off* segment instead: fresh shared memory that travels the way
torch shares any storage (a file descriptor, no copy) and is freed when the
last view of it is gone on both sides, kept by nobody. So nothing blocks, and
a worker never holds more than its pool plus the batch it is making (a
private buffer handed over the plain way would be copied into a second
segment by torch first).

Slabs outlive their workers. With ``persistent_workers=False`` (torch's
default) every epoch starts new workers; a fresh slab costs a page fault and
a zeroed page per 4 KiB in the worker, and a new mapping in the main process
(hundreds of minor faults per 720p sample, the first batch of an epoch
late). So the main process keeps the pools of exited workers mapped,
and a worker forked later *adopts* one of them (same token, same slabs,
``madvise(MADV_POPULATE_WRITE)`` once instead of a fault per page): the slabs
are created once per main process, not once per epoch. Who owns a pool is a
POSIX record lock on one byte (the pool's *slot*) of a file the main process
opens when a vidlabel dataset is made (:func:`install`) and its forked workers inherit: a worker holds its pool's
lock for its lifetime and the kernel drops it when the worker exits, so a
pool is adopted only once its last writer is gone (a worker of another
loader still running keeps its pool). A slab still held in the main process
(a batch kept from an earlier epoch) stays in use for the adopter too.
Workers started with ``spawn``/``forkserver`` inherit nothing and make fresh
pools. The main process drops a retained pool when a new pool arrives and the
old one has no owner; it retains at most what its workers held (at most
:data:`MAX_SLAB_BYTES` per worker): a container with a small ``/dev/shm``
should lower those bounds or turn the pool off.

Batches also carry *mail* (:func:`post`): what a worker learnt about a store's
videos (their small arrays, their frames files' chunk index) rides on the
first of this module's tensors pickled after it (a slab's images, or a small
tensor sent by value) and is kept by the main process when the batch arrives,
so that the workers it forks for later epochs start with it
(:meth:`vidlabel.store.FrameStore.learnt`).

Set ``VIDLABEL_SHM_POOL=0`` to turn the pool off (and the mail with it).

Nothing here happens at import: :func:`install`, called by each vidlabel dataset's constructor, opens the
claims file and registers the at-fork hook; the background thread that maps fresh batch buffers
(:func:`in_background`) starts at the first such buffer (``docs/reference/environment.md`` lists every
process-wide effect of vidlabel).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import queue
import tempfile
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vidlabel._env import env_switch
from vidlabel.store._fs import PAGE, populate
from vidlabel.torch_data._handover import (
    _OUTBOX,
    _ByValueTensor,
    _deliver,
    _HandOverTensor,
    _OneOffList,
    _OneOffTensor,
    _RaggedByValue,
    _take_mail,
    _view,
)

# _PINS and _RELEASED, unused here, stay importable from this module, where they were defined.
from vidlabel.torch_data._shm_forks import (  # noqa: F401
    _KEYS,
    _LIVE,
    _PINS,
    _RELEASED,
    _after_fork_in_child,
    _after_fork_in_parent,
    _before_fork,
    _give_back,
    _unpin_exited_forks,
)

try:
    import fcntl
except ImportError:  # not POSIX: no claims file, pools are never adopted
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "in_background",
    "install",
    "MAX_SLAB_BYTES",
    "MAX_SLABS",
    "MIN_POOLED_BYTES",
    "Slab",
    "SlabPool",
    "by_value",
    "post",
    "ragged_by_value",
    "slab_of",
    "take_buffer",
    "take_slab",
]

#: Slabs per worker process.
MAX_SLABS = 8
#: Bytes of all slabs of one worker process together.
MAX_SLAB_BYTES = 512 * 2**20
#: Batch tensors from this size up go into slabs; tensors below it travel by value inside the message (a
#: fresh segment per tensor costs more than their bytes).
MIN_POOLED_BYTES = 2**20


def _enabled() -> bool:
    return env_switch("VIDLABEL_SHM_POOL", True)


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


def _new_shared(nbytes: int) -> torch.UntypedStorage:
    """A CPU storage of ``nbytes`` in shared memory (torch's sharing strategy), made there directly with
    ``UntypedStorage._new_shared``, as torch's own ``default_collate`` makes a worker's batch (the public
    ``share_memory_`` first allocates private memory and copies it over, so a forked worker pays page faults
    twice). Its zeroed pages are mapped as they are first written (a slab's first :meth:`SlabPool._ready`
    maps them all in one call).

    Raises
    ------
    RuntimeError
        If there is no room for it in ``/dev/shm``.
    """
    make = getattr(torch.UntypedStorage, "_new_shared", None)
    # a torch without it: the public way
    if make is None:
        return torch.UntypedStorage(nbytes).share_memory_()
    return make(nbytes)


def _bytes_view(storage: torch.UntypedStorage) -> np.ndarray:
    """A writable uint8 NumPy view of a CPU storage's memory (no copy)."""
    return torch.empty(0, dtype=torch.uint8).set_(storage).numpy()


class SlabPool:
    """The slabs of one DataLoader worker process (created lazily, one per process, or adopted).

    Attributes
    ----------
    token : str
        Names this pool in the main process (random, so a later worker with the same pid is another pool;
        an adopted pool keeps its token).
    slot : int
        The byte of the claims file whose POSIX record lock this process holds while it owns the pool
        (-1: no claims file, never adopted).
    slabs : list of torch.UntypedStorage
        Shared-memory slabs; ``in_use[i]`` is 1 from the moment slab ``i`` is filled until the main process
        has dropped the last view of the batch it carried, and ``held`` lists the slabs a view of which
        still lives in this worker. Slab ``i`` is free when both say so.
    """

    def __init__(self, adopt: tuple[str, int, dict[str, Any]] | None = None) -> None:
        self.pid = os.getpid()
        self.slabs: list[torch.UntypedStorage] = []
        if adopt is None:
            self.token = uuid.uuid4().hex
            self.slot = _claim_free_slot()
            # one byte per slab (in use), then one the main process sets while it keeps the pool mapped
            self.flags = _new_shared(MAX_SLABS + 1)
            self.in_use = _bytes_view(self.flags)[:MAX_SLABS]
            _bytes_view(self.flags)[:] = 0
        else:  # a pool of workers that have exited, mapped in the main process this one was forked from
            self.token, self.slot, entry = adopt
            self.flags, self.in_use = entry["flags"], entry["in_use"]
            known = entry["slabs"]
            for i in range(max(known) + 1 if known else 0):
                # an index the main process never received stays out of use (a zero-byte placeholder)
                self.slabs.append(known.get(i, torch.UntypedStorage(0)))
        # The main process still has an adopted pool mapped if its byte says so: it drops a pool only while it
        # holds the pool's slot lock, which this process holds now. Else its slabs travel again.
        retained = adopt is not None and bool(_bytes_view(self.flags)[MAX_SLABS])
        self.sent: list[bool] = [retained] * len(self.slabs)
        self.flags_sent = retained
        self.populated: set[int] = set()  # slabs whose pages this process has mapped in one call
        # slabs whose pages exist already (filled by the workers of earlier epochs): mapped by read faults, which
        # map 16 pages each (fault-around), where write faults map one (see _ready)
        self.filled: set[int] = set(range(len(self.slabs))) if adopt is not None else set()
        self.taken: dict[int, tuple[weakref.ref[np.ndarray], list[bool]]] = {}  # the array of each slab's last take
        self.held: set[int] = set()  # slabs whose array (or a view of it) still lives in this worker
        # one-off segments (see take_slab) whose array lives here, by address: their array, state and segment
        self.one_offs: dict[int, tuple[weakref.ref[np.ndarray], list[bool], torch.UntypedStorage]] = {}

    def _ready(self, index: int) -> int:
        """Mark slab ``index`` in use, its pages mapped in this process first (once per process and slab).

        A fork maps none of a shared memory's pages in the child. A slab of an adopted pool has its pages
        already, and ``MADV_POPULATE_READ`` maps them writable (shared memory needs no write tracking) 16 at a
        time, faster than ``MADV_POPULATE_WRITE``, which takes one fault a page in a forked child
        (``scripts/bench_storeframes.py`` row 4). A new slab's pages are made by write faults, which cost less
        than read faults followed by writes."""
        if index not in self.populated:
            self.populated.add(index)
            slab = self.slabs[index]
            populate(slab.data_ptr(), slab.nbytes(), write=index not in self.filled)
        self.in_use[index] = 1
        return index

    def take(self, nbytes: int) -> int | None:
        """A free slab of at least ``nbytes`` (marked in use), or None when none is free and no new one fits.

        A new slab is made as large as the largest of the pool (batches of mixed frame sizes then fit the
        slabs they free); when the pool is full, a free slab too small for ``nbytes`` is replaced.
        """
        best = None
        for i, slab in enumerate(self.slabs):
            free = self.in_use[i] == 0 and i not in self.held
            if free and slab.nbytes() >= nbytes and (best is None or slab.nbytes() < best[1]):
                best = (i, slab.nbytes())
        if best is not None:
            return self._ready(best[0])
        sizes = [s.nbytes() for s in self.slabs]
        size = max([nbytes, *sizes])
        replace = None
        if len(self.slabs) >= MAX_SLABS or sum(sizes) + size > MAX_SLAB_BYTES:
            free = [i for i in range(len(self.slabs)) if self.in_use[i] == 0 and i not in self.held]
            if not free:
                return None
            replace = min(free, key=lambda i: sizes[i])
            size = nbytes if sum(sizes) - sizes[replace] + size > MAX_SLAB_BYTES else size
            if sum(sizes) - sizes[replace] + size > MAX_SLAB_BYTES:
                return None
        try:
            slab = _new_shared(size)
        except RuntimeError:  # no room in /dev/shm: the plain hand-over will tell
            return None
        if replace is None:
            self.slabs.append(slab)
            self.sent.append(False)
            index = len(self.slabs) - 1
        else:  # the main process maps the new slab when it arrives; views it keeps of the old one keep theirs
            index = replace
            self.slabs[index], self.sent[index] = slab, False
            self.populated.discard(index)
            self.filled.discard(index)
            self.taken.pop(index, None)
        return self._ready(index)


# -- who owns a pool: POSIX record locks on a file the main process opens in install() ------------------------

MAX_SLOTS = 4096


def _open_claims() -> int:
    if fcntl is None:
        return -1
    try:
        with tempfile.TemporaryFile(prefix="vidlabel-slab-claims-") as fh:  # unlinked at once (O_TMPFILE)
            return os.dup(fh.fileno())
    except OSError:
        return -1


# inherited by forked workers: their locks on it exclude one another (opened by install())
_CLAIMS_FD = -1


def _lock_slot(slot: int) -> bool:
    """Take slot ``slot``'s lock for this process (held until it exits or unlocks); False if another holds it."""
    if _CLAIMS_FD < 0 or slot < 0:
        return False
    try:
        fcntl.lockf(_CLAIMS_FD, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
    except OSError:
        return False
    return True


def _claim_free_slot() -> int:
    for slot in range(MAX_SLOTS):
        if _lock_slot(slot):
            return slot
    return -1


def _drop_unowned(entry: dict[str, Any]) -> bool:
    """In the main process: forget a retained pool no live process owns (tested by taking its slot lock, given
    up again after clearing the pool's retained byte: an adopter that locks the slot later resends its slabs).
    Pools of workers not forked from this process (spawn) have their locks elsewhere: their pid tells."""
    if _alive(entry["pid"]):
        return False
    held = _lock_slot(entry["slot"])
    if not held and _CLAIMS_FD >= 0 and entry["slot"] >= 0:
        return False  # adopted by a worker that has not sent a batch yet
    if entry["flags"] is not None:
        _bytes_view(entry["flags"])[MAX_SLABS] = 0
    if held:
        fcntl.lockf(_CLAIMS_FD, fcntl.LOCK_UN, 1, entry["slot"])
    return True


def _adopt() -> SlabPool | None:
    """In a worker forked from a main process that has pools of exited workers mapped: the first of them
    whose slot this process can lock (its last owner is gone), or None."""
    if _MAPPED_PID == os.getpid():  # the pools this process maps itself are not its own to fill
        return None
    for token, entry in sorted(_MAPPED.items()):
        if entry.get("flags") is not None and entry.get("slot", -1) >= 0 and _lock_slot(entry["slot"]):
            return SlabPool((token, entry["slot"], entry))
    return None


_POOL: SlabPool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> SlabPool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():
            _POOL = _adopt() or SlabPool()
        return _POOL


def _reset_locks_in_child() -> None:
    # a lock held by another thread of the parent at fork (the pin-memory thread unpickling a batch) stays held
    global _POOL_LOCK, _MAPPED_LOCK, _BACKGROUND_LOCK
    _POOL_LOCK, _MAPPED_LOCK, _BACKGROUND_LOCK = threading.Lock(), threading.Lock(), threading.Lock()


_FORK_HOOKED = False


def _hook_fork() -> None:
    """Register the at-fork hook once (a forked child inherits the registration)."""
    global _FORK_HOOKED
    if not _FORK_HOOKED and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_locks_in_child)
        # slabs alive at a fork stay pinned until every child forked meanwhile has exited
        os.register_at_fork(
            before=lambda: _before_fork(), after_in_parent=lambda: _after_fork_in_parent(),
            after_in_child=lambda: _after_fork_in_child(),
        )  # fmt: skip
    _FORK_HOOKED = True


def install() -> None:
    """Prepare this process for DataLoader workers that hand batches over in slabs: register the at-fork hook
    and, outside a DataLoader worker, open the claims file (an unlinked temporary file) that forked workers
    inherit. Called by the constructor of every vidlabel PyTorch dataset; nothing happens at import. Calling
    it again does nothing. In a worker the file is never opened: a forked worker uses its parent's (so that
    its locks exclude its siblings'), a spawned one none (its pools are never adopted)."""
    global _CLAIMS_FD
    _hook_fork()
    if _CLAIMS_FD < 0 and torch.utils.data.get_worker_info() is None:
        _CLAIMS_FD = _open_claims()


# -- this process's background thread, for advisory page mapping ------------------------------------------------


class _Background:
    """This process's background thread (started on first use, again in a forked child): runs the jobs it is
    given one after another. The jobs only map pages ahead of use (:func:`populate`), so one that fails is
    dropped: the pages then fault in as they would have."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="vidlabel-background", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            job = self.queue.get()
            try:
                job()
            except Exception:
                pass


_BACKGROUND: _Background | None = None
_BACKGROUND_LOCK = threading.Lock()


def in_background(job: Callable[[], None]) -> None:
    """Run ``job`` on this process's background thread, after the jobs given before it (a fresh batch
    buffer's pages in :func:`take_buffer`). ``populate`` runs there without the GIL."""
    global _BACKGROUND
    _hook_fork()
    with _BACKGROUND_LOCK:
        if _BACKGROUND is None or _BACKGROUND.pid != os.getpid():
            _BACKGROUND = _Background()
        worker = _BACKGROUND
    worker.queue.put(job)


# -- mail to the main process, carried by pooled batches --------------------------------------------------------


def post(deliver: Callable[..., None], *args: Any) -> None:
    """In a DataLoader worker: call ``deliver(*args)`` in the main process when it receives the next batch this
    worker hands over with a tensor of this module's own (a slab's images, or the small tensors
    :func:`~vidlabel.torch_data.collate_frames` sends by value; ``deliver``: a module-level function, ``args``:
    picklable). What a worker learnt for the workers of later epochs travels so
    (:meth:`vidlabel.store.FrameStore.learnt`); mail that no such batch carries (the pool off, another
    collate function) is dropped with the worker: it is never needed, it only saves work. Nothing is posted
    where the pool is off or outside a worker (no tensor would carry it)."""
    if _applies():
        _OUTBOX.append((deliver, args))


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
        return (_rebuild, ((pool.token, pool.pid, pool.slot), index, slab, flags, layout, _take_mail()))


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
        return (_rebuild_list, ((pool.token, pool.pid, pool.slot), index, slab, flags, layouts, _take_mail()))


def by_value(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` (CPU, smaller than :data:`MIN_POOLED_BYTES`, a dtype NumPy has) made to pickle by value.

    In a DataLoader worker, torch hands every tensor over through its own shared-memory segment and file
    descriptor, which costs the main process more per tensor than the bytes of a small one; a batch's small targets (boxes,
    labels, ids per sample) travel faster inside the message. Other tensors, and any tensor outside a
    worker or with the pool off, are returned as they are.
    """
    if (
        isinstance(tensor, (_PooledTensor, _OneOffTensor))
        or not _plain_cpu(tensor)
        or tensor.untyped_storage().nbytes() >= MIN_POOLED_BYTES
        or not _applies()
    ):
        return tensor
    return tensor.as_subclass(_ByValueTensor)


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
    goes back to the pool by itself. A one-off slab (``segment`` given, ``pool`` None) is a fresh shared
    segment outside the pool, used when no pool slab is free: it travels by torch's own sharing and is
    never reused.
    """

    def __init__(
        self, pool: SlabPool | None, index: int, state: list[bool], array: np.ndarray,
        segment: torch.UntypedStorage | None = None,
    ) -> None:  # fmt: skip
        self.pool, self.index, self.array, self.segment = pool, index, array, segment
        self.state = state  # [handed over (pickled) or released, wrapped as a batch tensor]

    def tensor(self, view: torch.Tensor) -> torch.Tensor:
        """``view`` (a tensor over :attr:`array`) as a tensor that pickles by slab."""
        self.state[1] = True  # on its way to the main process: never wrapped again (see slab_of)
        if self.segment is not None:
            one_off = view.as_subclass(_OneOffTensor)
            one_off._vidlabel_segment = self.segment
            return one_off
        assert self.pool is not None
        out = view.as_subclass(_PooledTensor)
        out._vidlabel_slab = (self.pool, self.index, self.state)
        return out

    def tensors(self, views: list[torch.Tensor]) -> list[torch.Tensor]:
        """``views`` (tensors over :attr:`array`, e.g. images of several sizes back to back) as one list that
        pickles by slab: the main process gets them as views of one mapping, and the slab goes back only
        when the last of them is gone."""
        self.state[1] = True
        if self.segment is not None:
            return _OneOffList(views, self.segment)
        assert self.pool is not None
        return _PooledList(views, (self.pool, self.index, self.state))

    def release(self) -> None:
        """Give the slab back unused (the batch is not handed over after all); it is taken again only once
        its array is gone from this worker too (a one-off segment is freed with its array)."""
        self.state[0] = True  # the array's finalizer must not give it back again once it is taken anew
        if self.pool is not None:
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
    one_off = pool.one_offs.get(ptr)
    if one_off is not None:
        array, state, segment = one_off[0](), one_off[1], one_off[2]
        if array is not None and not state[1]:
            return Slab(None, -1, state, array, segment)
    for index, (ref, state) in pool.taken.items():
        array = ref()
        if array is not None and array.ctypes.data == ptr and pool.in_use[index] and not state[1]:
            return Slab(pool, index, state, array)
    return None


def take_slab(shape: tuple[int, ...], dtype: Any = np.uint8) -> Slab | None:
    """A slab for an array of ``shape`` in this DataLoader worker's pool, else a one-off slab (a fresh shared
    segment outside the pool, when no slab is free and no new one fits the pool's bounds), or None (pool off,
    not in a worker, smaller than :data:`MIN_POOLED_BYTES`, or no room in ``/dev/shm``).

    The pool is off with ``VIDLABEL_SHM_POOL=0`` (read from the environment at each call, so DataLoader workers
    see it, fork or spawn)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dt.itemsize
    if nbytes < MIN_POOLED_BYTES or not _applies():
        return None
    pool = _pool()
    index = pool.take(nbytes)
    if index is None:
        return _take_one_off(pool, shape, dt, nbytes)
    array = _bytes_view(pool.slabs[index])[:nbytes].view(dt).reshape(shape)
    state = [False, False]
    pool.held.add(index)
    weakref.finalize(array, _worker_done, pool.held, pool.in_use, index, state)
    pool.taken[index] = (weakref.ref(array), state)
    return Slab(pool, index, state, array)


def _take_one_off(pool: SlabPool, shape: tuple[int, ...], dt: np.dtype[Any], nbytes: int) -> Slab | None:
    """A one-off slab: a fresh shared segment for one batch when no pool slab is free, or None when
    ``/dev/shm`` has no room for it (the plain hand-over will tell)."""
    try:
        segment = _new_shared(nbytes)
    except RuntimeError:
        return None
    # its pages made in one call, not one fault each while the batch is read in
    populate(segment.data_ptr(), segment.nbytes(), write=True)
    array = _bytes_view(segment)[:nbytes].view(dt).reshape(shape)
    state = [False, False]
    ptr = int(array.ctypes.data)
    pool.one_offs[ptr] = (weakref.ref(array), state, segment)
    weakref.finalize(array, pool.one_offs.pop, ptr, None)
    return Slab(None, -1, state, array, segment)


# -- batch buffers outside DataLoader workers ------------------------------------------------------------------

#: Bytes of free batch buffers a process outside DataLoader workers keeps for the next batches.
MAX_FREE_BUFFER_BYTES = 512 * 2**20
_FREE_BUFFERS: list[mmap.mmap] = []  # anonymous maps whose arrays are all gone, pages mapped already
_BUFFERS_LOCK = threading.Lock()
_BUFFERS_PID = os.getpid()


def _buffer_back(buffer: mmap.mmap) -> None:
    with _BUFFERS_LOCK:
        if _BUFFERS_PID != os.getpid():
            return
        _FREE_BUFFERS.append(buffer)
        while sum(len(b) for b in _FREE_BUFFERS) > MAX_FREE_BUFFER_BYTES:
            _FREE_BUFFERS.remove(min(_FREE_BUFFERS, key=len))


_POPULATE_PIECE = 2 << 20  # bytes of a fresh buffer mapped in one call on the background thread


def _populate_behind(buffer: mmap.mmap, size: int) -> None:
    """Map the pages of a fresh buffer on this process's background thread, its last piece first, while the
    reader fills it from the front (pages it reaches first it faults in itself: both only map zeroed pages,
    whichever comes first). The job holds the map until it is done."""
    whole = (ctypes.c_uint8 * size).from_buffer(buffer)
    base = ctypes.addressof(whole)
    del whole  # the map keeps no export: a later from_buffer may take it
    pieces = [(a, min(_POPULATE_PIECE, size - a)) for a in range(0, size, _POPULATE_PIECE)][::-1]

    def job(keep: mmap.mmap = buffer) -> None:
        for a, n in pieces:
            populate(base + a, n, write=True)

    in_background(job)


def take_buffer(shape: tuple[int, ...]) -> np.ndarray:
    """A C-contiguous uint8 array of ``shape`` for a batch read outside DataLoader workers (in the main process
    with ``num_workers=0``, or any plain loop): memory of an earlier batch whose arrays (and every view of
    them: a tensor, a sample's image) are all gone, else a fresh anonymous map whose pages the background
    thread maps (``madvise(MADV_POPULATE_WRITE)``, from the back, while the batch is read in from the front,
    so that the reader's opening of the frames file and its first copies overlap it). A buffer is never handed
    out again while any view of it lives.

    The first batches of a fresh process otherwise land in fresh memory (a page fault and a zeroed page per
    4 KiB, 5,400 for a batch of eight 720p frames), and glibc hands large buffers back to the system on free.
    Batches below :data:`MIN_POOLED_BYTES` (or with ``VIDLABEL_SHM_POOL=0``) are plain ``numpy.empty``."""
    global _BUFFERS_PID
    nbytes = int(np.prod(shape))
    if nbytes < MIN_POOLED_BYTES or not _enabled():
        return np.empty(shape, np.uint8)
    with _BUFFERS_LOCK:
        if _BUFFERS_PID != os.getpid():  # a forked child: the parent's free buffers are its own copies
            _FREE_BUFFERS.clear()
            _BUFFERS_PID = os.getpid()
        fits = [b for b in _FREE_BUFFERS if len(b) >= nbytes]
        buffer = min(fits, key=len) if fits else None
        if buffer is not None:
            _FREE_BUFFERS.remove(buffer)
    if buffer is None:
        size = -(-nbytes // PAGE) * PAGE
        # private: a shared anonymous map is shmem, whose first touches cost more
        buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        _populate_behind(buffer, size)
    # the array below owns the lifetime: when it and every view of it are gone, the buffer goes back
    memory: Any = (ctypes.c_uint8 * nbytes).from_buffer(buffer)
    array = np.frombuffer(memory, dtype=np.uint8)
    weakref.finalize(array, _buffer_back, buffer)
    return array.reshape(shape)


# -- the main process's side -----------------------------------------------------------------------------------

_MAPPED: dict[str, dict[str, Any]] = {}  # token -> {"pid", "slot", "flags", "in_use", "slabs": {index: storage}}
_MAPPED_LOCK = threading.Lock()
_MAPPED_PID = -1  # the process that mapped the pools of _MAPPED (a forked worker holds a copy)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mapped_base(
    pool: tuple[str, int, int], index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None
) -> torch.Tensor:
    """In the receiving process: the mapped slab as a flat uint8 tensor whose lifetime is tracked; when it and
    every view of it are gone, the slab goes back to the worker."""
    global _MAPPED_PID
    token, pid, slot = pool
    with _MAPPED_LOCK:
        _MAPPED_PID = os.getpid()
        _unpin_exited_forks()
        entry = _MAPPED.get(token)
        if entry is None:
            # pools nobody owns any more (their workers are gone, none adopted them): a new pool replaces them
            for old in [t for t, e in _MAPPED.items() if _drop_unowned(e)]:
                del _MAPPED[old]
            entry = _MAPPED[token] = {"pid": pid, "slot": slot, "flags": None, "in_use": None, "slabs": {}}
        entry["pid"] = pid  # an adopted pool: its owner now
        if flags is not None and flags is not entry["flags"]:
            entry["flags"], entry["in_use"] = flags, _bytes_view(flags)[:MAX_SLABS]
            _bytes_view(flags)[MAX_SLABS] = 1  # retained here: an adopter need not send the slabs again
        known = entry["slabs"].get(index)
        if slab is not None and (known is None or known.data_ptr() != slab.data_ptr()):
            entry["slabs"][index] = slab  # new (or, adopted, a mapping this process had given up)
            populate(slab.data_ptr(), slab.nbytes())
        storage = entry["slabs"][index]
        in_use = entry["in_use"]
    nbytes = storage.nbytes()
    # A NumPy array over the slab owns the lifetime: torch.from_numpy keeps it alive for as long as any view of
    # the batch lives; when it goes, the slab goes back to the worker.
    memory = (ctypes.c_uint8 * nbytes).from_address(storage.data_ptr())
    base = np.frombuffer(memory, dtype=np.uint8)
    key = next(_KEYS)
    _LIVE[key] = (in_use, index, (storage, memory))
    weakref.finalize(base, _give_back, key, os.getpid())
    return torch.from_numpy(base)


def _rebuild(
    pool: tuple[str, int, int], index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None,
    layout: tuple[tuple[int, ...], tuple[int, ...], int, str],
    mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None = None,
) -> torch.Tensor:  # fmt: skip
    """Unpickle a pooled batch tensor in the receiving process: a view of the mapped slab, tracked for its lifetime
    (and deliver the mail it carries, :func:`post`)."""
    _deliver(mail)
    return _view(_mapped_base(pool, index, slab, flags), layout)


def _rebuild_list(
    pool: tuple[str, int, int], index: int, slab: torch.UntypedStorage | None, flags: torch.UntypedStorage | None,
    layouts: list[tuple[tuple[int, ...], tuple[int, ...], int, str]],
    mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None = None,
) -> list[torch.Tensor]:  # fmt: skip
    """Unpickle a pooled list: views of one mapping of the slab, given back when the last of them is gone (and
    deliver the mail it carries, :func:`post`)."""
    _deliver(mail)
    flat = _mapped_base(pool, index, slab, flags)
    return [_view(flat, layout) for layout in layouts]
