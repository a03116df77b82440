"""PyTorch datasets over video (VideoStream, VideoFrames, PlannedStream) and over a frame store (StoreFrames, StoreStream).

The only part of vidlabel that imports torch. Private modules: ``_common``
(``worker_info``: rank x worker sharding, the shared epoch), ``_collate`` (tensor samples and
``collate_frames``, one converter and one collate for frame and clip samples, read from the sample
schema; ``collate_clips`` and ``to_torch_clip`` are its aliases),
``_clips`` (clips of T frames over a ClipSamples: ``ClipStream``, ``VideoClips``),
``_video`` (over a FrameSamples), ``_store`` (over a FrameStore), ``_storeclips`` (clips over a
FrameStore: ``StoreClips``, ``StoreClipStream``), ``_shm``
(shared-memory image slabs for DataLoader workers; ``_shm_forks``, batches held at a fork). Imports
:mod:`vidlabel.samples`, :mod:`vidlabel.store` and :mod:`vidlabel.video`.
"""

from __future__ import annotations

from vidlabel.errors import MissingExtraError

try:
    import torch  # noqa: F401
except ModuleNotFoundError as err:
    # Only a missing torch itself gets the one-line answer; anything torch fails to import inside stays as it is.
    if err.name != "torch":
        raise
    raise MissingExtraError(
        'vidlabel.torch_data needs PyTorch, which is not installed: pip install "vidlabel[torch]"'
    ) from None

from vidlabel.torch_data._clips import ClipStream, VideoClips
from vidlabel.torch_data._collate import collate_clips, collate_frames, to_torch_clip
from vidlabel.torch_data._common import worker_info
from vidlabel.torch_data._store import StoreFrames, StoreStream
from vidlabel.torch_data._storeclips import StoreClips, StoreClipStream
from vidlabel.torch_data._transforms import V2Transform
from vidlabel.torch_data._video import PlannedStream, VideoFrames, VideoStream

__all__ = [
    "ClipStream",
    "PlannedStream",
    "StoreClipStream",
    "StoreClips",
    "StoreFrames",
    "StoreStream",
    "V2Transform",
    "VideoClips",
    "VideoFrames",
    "VideoStream",
    "collate_clips",
    "collate_frames",
    "to_torch_clip",
    "worker_info",
]
