"""An LRU cache of decoded chunks, bounded in bytes (one per process)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from vidlabel.errors import OptionError

__all__ = ["DEFAULT_CACHE_BYTES", "ChunkCache"]

#: Default bound of a store's chunk cache: 256 MiB per process.
DEFAULT_CACHE_BYTES = 256 * 2**20


def check_cache_bytes(value: object) -> int:
    """The ``cache_bytes`` option as an int: an integer >= 0 (NumPy's too); what every function taking it
    (``open_store``, ``FrameStore``, ``StoreFrames``, ``StoreStream``) accepts.

    Raises
    ------
    OptionError
        If ``value`` is not an integer >= 0 (True, 1.5 and "100" are refused, never converted); names the value.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise OptionError(f"cache_bytes must be an integer >= 0, got {value!r}")
    return int(value)


class ChunkCache:
    """Least-recently-used decoded chunks, holding at most ``max_bytes`` (plus the one chunk being added).

    A chunk larger than the whole bound is kept alone until the next one
    arrives, so the cache never holds more than ``max_bytes`` plus one chunk.
    Cached arrays are read-only: callers copy the rows they hand out.
    Thread-safe.

    Parameters
    ----------
    max_bytes : int
        Bound in bytes (>= 0; 0 disables caching).

    Raises
    ------
    OptionError
        If ``max_bytes`` is negative or not an integer.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = check_cache_bytes(max_bytes)
        self._items: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable) -> np.ndarray | None:
        """The cached chunk (read-only) or None; a hit makes it the most recently used."""
        with self._lock:
            arr = self._items.get(key)
            if arr is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return arr

    def put(self, key: Hashable, chunk: np.ndarray) -> np.ndarray:
        """Add a decoded chunk (made read-only), evicting the least recently used first; returns it."""
        chunk.setflags(write=False)
        if self.max_bytes == 0:
            return chunk
        size = int(chunk.nbytes)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._nbytes -= int(old.nbytes)
            while self._items and self._nbytes + size > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._nbytes -= int(evicted.nbytes)
            self._items[key] = chunk
            self._nbytes += size
        return chunk

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self._items.clear()
            self._nbytes = 0

    def __repr__(self) -> str:
        return f"ChunkCache(chunks={len(self._items)}, nbytes={self._nbytes}, max_bytes={self.max_bytes})"
