"""Batches held at a fork, for the slab pool of :mod:`vidlabel.torch_data._shm`.

A process forked while this one holds a batch (a preview or checkpoint writer, forked by hand or by
multiprocessing's default start method) maps the same slab: were the slab given back when this process drops
its batch, a worker would refill it under the child's copy. So every batch alive at a fork is *pinned*: its
slab is given back only once its last view here is gone and every process forked meanwhile has exited (the
write end of a pipe each such fork inherits, closed on exit or exec, tells). A child never gives a slab back.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np

__all__ = ["_after_fork_in_child", "_after_fork_in_parent", "_before_fork", "_give_back", "_unpin_exited_forks"]


_LIVE: dict[int, tuple[np.ndarray, int, Any]] = {}  # key -> (in_use, index, keep-alive) of each batch alive here
_KEYS = itertools.count()
_PINS: dict[int, int] = {}  # key -> how many forks that may hold its batch are still running
_RELEASED: dict[int, tuple[np.ndarray, int, Any]] = {}  # pinned batches whose last view here is gone
_FORKS: list[tuple[int, list[int]]] = []  # (read end of the fork's pipe, keys alive at the fork)
_FORK_WRITE = -1  # the write end of the pipe of the fork under way (closed in the parent after it)
_OWNER_PID = os.getpid()  # the process whose batches _LIVE tracks (a child tracks none of its parent's)


def _give_back(key: int, pid: int) -> None:
    """The last view of batch ``key`` is gone in this process: its slab goes back, unless a fork may hold it."""
    if pid != os.getpid():
        return
    entry = _LIVE.pop(key, None)
    if entry is None:
        return
    if _PINS.get(key):
        _RELEASED[key] = entry
    else:
        entry[0][entry[1]] = 0


def _before_fork() -> None:
    global _FORK_WRITE
    if _OWNER_PID != os.getpid() or not _LIVE:
        return
    try:
        read, _FORK_WRITE = os.pipe()
    except OSError:  # no file descriptor left: pinned for the process's lifetime
        read = -1
    keys = list(_LIVE)
    for key in keys:
        _PINS[key] = _PINS.get(key, 0) + 1
    if read >= 0:
        os.set_blocking(read, False)
        _FORKS.append((read, keys))


def _after_fork_in_parent() -> None:
    global _FORK_WRITE
    if _FORK_WRITE >= 0:
        os.close(_FORK_WRITE)
        _FORK_WRITE = -1


def _after_fork_in_child() -> None:
    global _FORK_WRITE, _OWNER_PID
    # the child keeps the pipe's write end open until it exits (or execs): the parent reads that as "done"
    _FORK_WRITE = -1
    for read, _ in _FORKS:
        os.close(read)
    _FORKS.clear()
    _LIVE.clear()
    _PINS.clear()
    _RELEASED.clear()
    _OWNER_PID = os.getpid()


def _unpin_exited_forks() -> None:
    """Give back the slabs of pinned batches dropped here whose forks have all exited."""
    for fork in list(_FORKS):
        read, keys = fork
        try:
            running = os.read(read, 1) != b""
        except BlockingIOError:
            running = True
        if running:
            continue
        os.close(read)
        _FORKS.remove(fork)
        for key in keys:
            _PINS[key] -= 1
            if not _PINS[key]:
                del _PINS[key]
    for key in [k for k in list(_RELEASED) if not _PINS.get(k)]:
        entry = _RELEASED.pop(key, None)
        if entry is not None:
            entry[0][entry[1]] = 0
