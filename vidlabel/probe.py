"""Video metadata, content hash and frame index from the container. (Owner: reader helper; stub.)"""

from __future__ import annotations

__all__ = ["probe", "read_frame_index"]


def probe(path, **kwargs):  # type: ignore[no-untyped-def]
    """Stub: VideoMetadata from a file."""
    raise NotImplementedError


def read_frame_index(path, **kwargs):  # type: ignore[no-untyped-def]
    """Stub: FrameIndex from a file."""
    raise NotImplementedError
