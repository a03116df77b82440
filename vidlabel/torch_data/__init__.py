"""PyTorch datasets over video (VideoStream, VideoFrames, PlannedStream) and over a frame store (StoreFrames, StoreStream).

The only part of vidlabel that imports torch. Private modules: ``_common``
(``collate_frames``, ``worker_info``: rank x worker sharding, tensor samples),
``_clips`` (clips of T frames over a ClipSamples: ``ClipStream``, ``VideoClips``, ``collate_clips``),
``_video`` (over a FrameSamples), ``_store`` (over a FrameStore), ``_shm``
(shared-memory image slabs for DataLoader workers). Imports
:mod:`vidlabel.samples`, :mod:`vidlabel.store` and :mod:`vidlabel.video`.
"""

from __future__ import annotations

from vidlabel.torch_data._clips import ClipStream, VideoClips, collate_clips, to_torch_clip
from vidlabel.torch_data._common import collate_frames, worker_info
from vidlabel.torch_data._store import StoreFrames, StoreStream
from vidlabel.torch_data._video import PlannedStream, VideoFrames, VideoStream

__all__ = [
    "ClipStream",
    "PlannedStream",
    "StoreFrames",
    "StoreStream",
    "VideoClips",
    "VideoFrames",
    "VideoStream",
    "collate_clips",
    "collate_frames",
    "to_torch_clip",
    "worker_info",
]
