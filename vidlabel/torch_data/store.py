"""StoreFrames, StoreStream. (Owner: store helper; stub.)"""

from __future__ import annotations

__all__ = ["StoreFrames", "StoreStream"]


class StoreFrames:
    """Stub."""


class StoreStream:
    """Stub."""
