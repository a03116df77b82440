"""The spec's import path for the frame readers: ``from vidlabel.frames import FrameReader``.

:class:`FrameReader` (exact displayed frame N from a video file) and
:class:`CachedReader` (a FrameReader keeping its last frames in memory, LRU) live in
:mod:`vidlabel.video`; this module re-exports them under the path the spec
("Reading pixels", "FrameReader itself is from vidlabel.frames import FrameReader") uses.
"""

from __future__ import annotations

from vidlabel.video import CachedReader, FrameReader, resolve_video_path

__all__ = ["CachedReader", "FrameReader", "resolve_video_path"]
