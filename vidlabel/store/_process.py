"""What a :class:`~vidlabel.store.FrameStore` holds in each process: a video's small arrays
(:class:`VideoData`), and the backends, open frames readers, chunk cache and thread pool of one process; and
where a video's first read takes its arrays from (the root's video table, else the video's file).
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
from vidlabel.errors import StoreError
from vidlabel.store._backend import Backend, FramesHeader, FramesReader
from vidlabel.store._cache import ChunkCache
from vidlabel.store._layout import SEGMENT_FIELDS, VIDEO_ARRAYS, region_names

__all__ = ["VideoData", "reader_path", "video_from_file", "video_from_table"]


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


def video_from_table(
    store: Any, state: _ProcessState, video_id: str
) -> tuple[dict[str, Any], dict[str, np.ndarray], Callable[[], FramesReader] | None] | None:
    """A video's attributes, small arrays and frames opener from its part's root table (read once in a
    process), or None where the part has no table or the video's file is not the one it describes."""
    part = store._video_part[video_id]
    if part not in state.tables:
        state.tables[part] = store._backend(state, video_id).video_table(
            store._parts[part].video_ids, store._parts[part].root_identity
        )
    table = state.tables[part]
    if table is None:
        return None
    found = table.video(video_id)
    if found is None:
        return None
    needed = list(VIDEO_ARRAYS)
    if not store._parts[part].attrs.get("frames_only"):
        needed += [f"regions/{n}" for n in region_names(found[0])] + [f"segments/{n}" for n in SEGMENT_FIELDS]
    return None if any(name not in found[1] for name in needed) else found


def video_from_file(
    store: Any, state: _ProcessState, video_id: str, frames_only: bool
) -> tuple[dict[str, Any], dict[str, np.ndarray], Callable[[], FramesReader] | None]:
    """A video's attributes, small arrays (by name in its file) and frames opener, read from its file."""
    reader = store._open_video(state, video_id)
    try:
        names = list(VIDEO_ARRAYS)
        if not frames_only:
            names += [f"regions/{n}" for n in region_names(reader.attrs)] + [f"segments/{n}" for n in SEGMENT_FIELDS]
        reader.preload(names)  # one round trip for a store at a URL
        stored = {name: reader.array(name) for name in names}
        attrs = dict(reader.attrs)
        try:
            opener: Callable[[], FramesReader] | None = reader.frames_opener()
        except StoreError:  # a bad frames link: reading the frames says so, as before
            opener = None
    finally:
        reader.close()
    return attrs, stored, opener
