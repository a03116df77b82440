"""vidlabel: annotated videos to training data.

A dataset (SQLite) holds videos, labels and annotations; ``build()`` pins an
immutable release; ``FrameSamples`` chooses frames and builds targets;
``FrameReader`` returns the exact displayed frame; ``ReadPlan`` reads any list
of frames decoding each keyframe interval once; ``export`` writes a chunked
frame store that ``StoreFrames``/``StoreStream`` (``vidlabel.torch_data``) read
at random; ``view`` serves a local web page that draws the labels on the frames. ``import vidlabel`` needs NumPy, h5py and PyAV, never torch (only
``vidlabel.torch_data`` imports it).
"""

from __future__ import annotations

from vidlabel._version import __version__
from vidlabel.clip import ClipSpec
from vidlabel.dataset._dataset import Dataset
from vidlabel.dataset._release import Release
from vidlabel.export._run import export
from vidlabel.samples._clips import ClipSamples
from vidlabel.samples._clipsamplers import MarkerClips, RandomClips, RegularClips, SampleClips, SlidingClips
from vidlabel.samples._samples import FrameSamples
from vidlabel.spec import AnnotationTable, FrameIndex, VideoMetadata, View
from vidlabel.store import FrameStore, open_store
from vidlabel.video._probe import probe, read_frame_index
from vidlabel.video._reader import CachedReader, FrameReader
from vidlabel.video._readplan import ReadPlan
from vidlabel.viewer import view

__all__ = [
    "AnnotationTable",
    "CachedReader",
    "ClipSamples",
    "ClipSpec",
    "Dataset",
    "FrameIndex",
    "FrameReader",
    "FrameSamples",
    "FrameStore",
    "MarkerClips",
    "RandomClips",
    "ReadPlan",
    "RegularClips",
    "Release",
    "SampleClips",
    "SlidingClips",
    "VideoMetadata",
    "View",
    "__version__",
    "export",
    "open_store",
    "probe",
    "read_frame_index",
    "view",
]
