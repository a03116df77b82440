"""vidlabel: annotated videos to training data.

A dataset (SQLite) holds videos, labels and annotations; ``build()`` pins an
immutable release; ``FrameSamples`` chooses frames and builds targets;
``FrameReader`` returns the exact displayed frame; ``ReadPlan`` reads any list
of frames decoding each keyframe interval once; ``export`` writes a chunked
frame store that ``StoreFrames``/``StoreStream`` (``vidlabel.torch_data``) read
at random. ``import vidlabel`` needs NumPy, h5py and PyAV, never torch (only
``vidlabel.torch_data`` imports it).
"""

from __future__ import annotations

from vidlabel._version import __version__
from vidlabel.dataset import Dataset
from vidlabel.export import export
from vidlabel.frames import CachedReader, FrameReader
from vidlabel.probe import probe, read_frame_index
from vidlabel.readplan import ReadPlan
from vidlabel.release import Release
from vidlabel.samples import FrameSamples
from vidlabel.spec import AnnotationTable, FrameIndex, VideoMetadata, View
from vidlabel.store import FrameStore, open_store

__all__ = [
    "AnnotationTable",
    "CachedReader",
    "Dataset",
    "FrameIndex",
    "FrameReader",
    "FrameSamples",
    "FrameStore",
    "ReadPlan",
    "Release",
    "VideoMetadata",
    "View",
    "__version__",
    "export",
    "open_store",
    "probe",
    "read_frame_index",
]
