"""Release to frame store: decode each frame once, write chunked per-video units, resumable and atomic.

:func:`export` plans the units of a release (one per video and view), runs them
(in this process, a local process pool, or any ``concurrent.futures`` executor),
publishes each unit and the store root last, and returns an :class:`ExportReport`
(``_report``: what was stored, what was left out and why). :func:`cache` writes the
JPEG/PNG frame cache. Imports :mod:`vidlabel.samples`, :mod:`vidlabel.video` and
:mod:`vidlabel.store`.
"""

from __future__ import annotations

from vidlabel.export._report import ExportReport
from vidlabel.export._run import cache, export

__all__ = ["ExportReport", "cache", "export"]
