"""VideoStream, VideoFrames, PlannedStream. (Owner: samples helper; stub.)"""

from __future__ import annotations

__all__ = ["PlannedStream", "VideoFrames", "VideoStream"]


class VideoStream:
    """Stub."""


class VideoFrames:
    """Stub."""


class PlannedStream:
    """Stub."""
