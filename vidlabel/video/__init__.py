"""Video files to exact frames: probe, frame index, decode engine, FrameReader, ReadPlan.

- :func:`probe` reads a file's metadata, content hash and frame index
  (:func:`read_frame_index`: every frame's pts and keyframes, from the container);
- :class:`FrameReader` returns the exact displayed frame N (index-aware seeking,
  ``read_many``), :class:`CachedReader` the same from a JPEG/PNG frame cache;
- :class:`ReadPlan` groups any list of (video, frame) requests by keyframe interval
  so each interval is decoded once, and shards the chunks over workers and ranks;
  :class:`ClipPlan` does the same for clips (rows of frames), by their first frame.

Imports only :mod:`vidlabel.errors`, :mod:`vidlabel.spec` and :mod:`vidlabel.geometry`.
The spec's paths :mod:`vidlabel.frames`, :mod:`vidlabel.readplan` and :mod:`vidlabel.probe`
re-export these names.
"""

from __future__ import annotations

from vidlabel.video._clipplan import ClipChunk, ClipPlan
from vidlabel.video._probe import content_hash, probe, read_frame_index, resolve_video_path, video_path_candidates
from vidlabel.video._reader import CachedReader, FrameReader
from vidlabel.video._readplan import Chunk, ReadPlan

__all__ = [
    "CachedReader",
    "Chunk",
    "ClipChunk",
    "ClipPlan",
    "FrameReader",
    "ReadPlan",
    "content_hash",
    "probe",
    "read_frame_index",
    "resolve_video_path",
    "video_path_candidates",
]
