"""At most N open handles (readers, files) by key, least recently used closed first, per process.

One helper for every such set (``VideoFrames``' readers, ``FrameSamples.iter_plan``'s
readers): a handle opened in one process is never used in another (after a fork the
inherited handles are dropped, not closed: they belong to the parent), and pickling
keeps only the capacity.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar


class _Closable(Protocol):
    def close(self) -> None: ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=_Closable)


class OpenLRU(Generic[K, V]):
    """Up to ``capacity`` open handles by key; :meth:`get` opens on a miss and closes the least recently used.

    Parameters
    ----------
    capacity : int
        Handles kept open (>= 1).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._items: OrderedDict[K, V] = OrderedDict()
        self._pid = os.getpid()

    def get(self, key: K, open_: Callable[[K], V]) -> V:
        """The handle of ``key``, opened with ``open_(key)`` if this process holds none; now the most recent."""
        if self._pid != os.getpid():  # a forked child: the parent's handles are not ours to use or close
            self._items = OrderedDict()
            self._pid = os.getpid()
        handle = self._items.pop(key, None)
        if handle is None:
            handle = open_(key)
        self._items[key] = handle
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)[1].close()
        return handle

    def peek(self, key: K) -> V | None:
        """The handle of ``key`` if this process holds one (its place in the order unchanged), else None."""
        return self._items.get(key) if self._pid == os.getpid() else None

    def close(self) -> None:
        """Close every handle this process holds."""
        items, self._items = self._items, OrderedDict()
        if self._pid == os.getpid():
            for handle in items.values():
                handle.close()

    def __len__(self) -> int:
        return len(self._items) if self._pid == os.getpid() else 0

    def __getstate__(self) -> dict[str, Any]:
        return {"capacity": self.capacity}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["capacity"])  # type: ignore[misc]
