"""The spec's record module: ``from vidlabel_spec import FrameIndex`` (the spec's ReadPlan example).

The spec was written with its records in a separate ``vidlabel_spec`` package; vidlabel
folds them into :mod:`vidlabel.spec`. This top-level module re-exports them so the spec's
examples run verbatim.
"""

from __future__ import annotations

from vidlabel.spec import AnnotationTable, FrameIndex, VideoMetadata, View

__all__ = ["AnnotationTable", "FrameIndex", "VideoMetadata", "View"]
