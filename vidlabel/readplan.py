"""The spec's import path for ReadPlan: ``from vidlabel.readplan import ReadPlan``.

:class:`ReadPlan` (requests grouped by keyframe interval, epoch order, shards) lives
in :mod:`vidlabel.video`; this module re-exports it under the path of the spec's
"Reading a list of frames you chose: ReadPlan" example.
"""

from __future__ import annotations

from vidlabel.video import Chunk, ReadPlan

__all__ = ["Chunk", "ReadPlan"]
