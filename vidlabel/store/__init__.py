"""The chunked frame store (HDF5 or Zarr): layout, backends, LRU chunk cache, FrameStore. (Owner: store helper; stub.)"""

from __future__ import annotations

__all__ = ["FrameStore", "open_store"]


class FrameStore:
    """Stub."""


def open_store(path, **kwargs):  # type: ignore[no-untyped-def]
    """Stub."""
    raise NotImplementedError
