"""FrameReader (exact frame N) and CachedReader. (Owner: reader helper; stub.)"""

from __future__ import annotations

__all__ = ["CachedReader", "FrameReader"]


class FrameReader:
    """Stub: exact displayed frame N of a video file."""


class CachedReader:
    """Stub: a FrameReader keeping the last K decoded frames."""
