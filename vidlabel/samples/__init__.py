"""FrameSamples: which frames of a release to train on, and the targets of each (NumPy, no framework).

:class:`FrameSamples` selects (video, frame) samples from a release's annotation
table alone (``_select``), builds each sample dict (image, boxes, labels, track ids,
masks, frame_labels) and hands out readers: a :class:`~vidlabel.frames.FrameReader`,
or with ``cache=`` a :class:`StoreBackedReader` that reads frames from a frame store
(``_storereader``); ``plan_reads`` checks its requests in ``_requests``. :meth:`FrameSamples.clips` gives :class:`ClipSamples`: clips of
T frames with every frame's targets (``_clips``), chosen by a sampler
(``_clipsamplers``). Imports :mod:`vidlabel.dataset`, :mod:`vidlabel.video` and
:mod:`vidlabel.store`.
"""

from __future__ import annotations

from vidlabel.samples._clips import ClipIndex, ClipSamples
from vidlabel.samples._clipsamplers import (
    ClipSampler,
    MarkerClips,
    RandomClips,
    RegularClips,
    SampleClips,
    SlidingClips,
    VideoSlots,
)
from vidlabel.samples._samples import FrameSamples, SampleIndex
from vidlabel.samples._storereader import StoreBackedReader

__all__ = [
    "ClipIndex",
    "ClipSampler",
    "ClipSamples",
    "FrameSamples",
    "MarkerClips",
    "RandomClips",
    "RegularClips",
    "SampleClips",
    "SampleIndex",
    "SlidingClips",
    "StoreBackedReader",
    "VideoSlots",
]
