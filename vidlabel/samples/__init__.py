"""FrameSamples: which frames of a release to train on, and the targets of each (NumPy, no framework).

:class:`FrameSamples` selects (video, frame) samples from a release's annotation
table alone (``_select``), builds each sample dict (image, boxes, labels, track ids,
masks, frame_labels) and hands out readers: a :class:`~vidlabel.frames.FrameReader`,
or with ``cache=`` a :class:`StoreBackedReader` that reads frames from a frame store
(``_storereader``). Imports :mod:`vidlabel.dataset`, :mod:`vidlabel.video` and
:mod:`vidlabel.store`.
"""

from __future__ import annotations

from vidlabel.samples._samples import FrameSamples, SampleIndex
from vidlabel.samples._storereader import StoreBackedReader

__all__ = ["FrameSamples", "SampleIndex", "StoreBackedReader"]
