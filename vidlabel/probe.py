"""The import path ``from vidlabel.probe import probe, read_frame_index`` used by the docs and the spec.

:func:`probe` (a video file's metadata, content hash and frame index) and
:func:`read_frame_index` live in :mod:`vidlabel.video`; ``vidlabel.probe`` is also
the function itself (``vidlabel.probe(path)``).
"""

from __future__ import annotations

from vidlabel.video import content_hash, probe, read_frame_index

__all__ = ["content_hash", "probe", "read_frame_index"]
