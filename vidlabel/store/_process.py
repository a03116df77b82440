"""What a :class:`~vidlabel.store.FrameStore` holds in each process: a video's small arrays
(:class:`VideoData`), and the backends, open frames readers, chunk cache and thread pool of one process.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel._lru import OpenLRU
from vidlabel.store._backend import Backend, FramesHeader, FramesReader
from vidlabel.store._cache import ChunkCache

__all__ = ["VideoData", "reader_path"]


@dataclass
class VideoData:
    """The small arrays of one stored video, loaded once per process.

    Attributes
    ----------
    video_id : str
    attrs : dict
        The video group's attributes.
    frame_number, timestamp_us : (T,) int64
    is_annotated : (T,) bool
    regions : dict of arrays
        CSR as in :data:`vidlabel.store._layout.REGION_FIELDS` (empty for a frames-only store).
    segments : dict of (M,) int64 arrays
    """

    video_id: str
    attrs: dict[str, Any]
    frame_number: np.ndarray
    timestamp_us: np.ndarray
    is_annotated: np.ndarray
    regions: dict[str, np.ndarray]
    segments: dict[str, np.ndarray]

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the stored frames."""
        return int(self.attrs["width"]), int(self.attrs["height"])

    def read_only(self) -> VideoData:
        """Make every array read-only (a process's VideoData is shared by all its readers); returns self."""
        for arr in (self.frame_number, self.timestamp_us, self.is_annotated, *self.regions.values(),
                    *self.segments.values()):  # fmt: skip
            arr.setflags(write=False)
        return self

    def row_of(self, frame_number: int) -> int | None:
        """The stored row of a source frame number, or None if that frame is not stored."""
        i = int(np.searchsorted(self.frame_number, frame_number))
        if i < self.frame_number.size and int(self.frame_number[i]) == frame_number:
            return i
        return None


class _ProcessState:
    """What a FrameStore opens in one process: backends, frames readers (at most ``MAX_OPEN`` open, least
    recently used closed first), each video's small arrays, the chunk cache, a thread pool."""

    MAX_OPEN = 64

    def __init__(self, cache_bytes: int) -> None:
        self.pid = os.getpid()
        self.backends: dict[int, Backend] = {}
        self.frames: OpenLRU[str, FramesReader] = OpenLRU(self.MAX_OPEN)
        self.data: dict[str, VideoData] = {}
        # per part of the store: its root's video table (read-only arrays, kept across a fork), None where none
        self.tables: dict[int, Any] = {}
        self.openers: dict[str, Callable[[], FramesReader]] = {}  # video id -> opens its frames (no handles)
        # in a process other than the store's creator (a DataLoader worker): what it learnt that the creator had
        # not when it forked (a video's small arrays, its indexed opener), until handed over (FrameStore.learnt)
        self.learnt: dict[str, list[Any]] = {}
        self.cache = ChunkCache(cache_bytes)
        self.lock = threading.RLock()
        self.pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        self.frames.close()
        if self.pool is not None:
            self.pool.shutdown(wait=False)
            self.pool = None


def _frames_index(opener: Any) -> Any:
    """What an opener of a video's frames knows of the frames file (an HDF5 opener's chunk index, once it has
    opened the file), or None."""
    return getattr(opener, "frames_index", None)


def reader_path(reader: FramesReader | FramesHeader) -> Any:
    """Identity of a frames reader for cache keys and messages (its path, file or URL)."""
    return getattr(reader, "path", id(reader))
