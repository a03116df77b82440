"""CachedReader: a :class:`~vidlabel.video._reader.FrameReader` that keeps its last K frames in memory (LRU)."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import OptionError, check_path
from vidlabel.video._reader import FrameReader, frame_list

__all__ = ["CachedReader"]


class CachedReader:
    """A :class:`FrameReader` that keeps the last ``capacity`` returned frames in memory (LRU).

    Parameters
    ----------
    reader_or_path : FrameReader or path-like
        A reader to wrap, or a file to open one on.
    capacity : int
        Frames kept (each ``H * W * 3`` bytes).
    **reader_options
        Passed to :class:`FrameReader` when a path is given.

    Attributes
    ----------
    reader : FrameReader
    hits, misses : int

    Raises
    ------
    OptionError
        (a ValueError) If ``capacity`` is not an integer >= 1, or ``reader_or_path`` is neither a
        FrameReader nor a path.

    Notes
    -----
    Returned arrays are copies: changing one does not change the cache.
    """

    def __init__(
        self, reader_or_path: FrameReader | str | os.PathLike[str], *, capacity: int = 64, **reader_options: Any
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise OptionError(f"capacity must be >= 1 (an integer), got {capacity!r}")
        if not isinstance(reader_or_path, FrameReader):
            check_path(reader_or_path, "CachedReader", "video file (or a FrameReader)")
        self.reader = (
            reader_or_path if isinstance(reader_or_path, FrameReader) else FrameReader(reader_or_path, **reader_options)
        )
        self.capacity = int(capacity)
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def frame_count(self) -> int:
        """Number of displayed frames."""
        return self.reader.frame_count

    @property
    def width(self) -> int:
        """Width of returned images."""
        return self.reader.width

    @property
    def height(self) -> int:
        """Height of returned images."""
        return self.reader.height

    @property
    def path(self) -> Path:
        """The video file."""
        return self.reader.path

    @property
    def video_id(self) -> str:
        """The video id."""
        return self.reader.video_id

    def _get(self, t: int) -> np.ndarray | None:
        image = self._cache.get(t)
        if image is None:
            return None
        self._cache.move_to_end(t)
        self.hits += 1
        return image.copy()

    def _put(self, t: int, image: np.ndarray) -> None:
        self._cache[t] = image.copy()
        self._cache.move_to_end(t)
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)

    def read(self, frame: int) -> np.ndarray:
        """As :meth:`FrameReader.read`, from the cache when the frame is there."""
        t = self.reader._check(frame)
        hit = self._get(t)
        if hit is not None:
            return hit
        self.misses += 1
        image = self.reader.read(t)
        self._put(t, image)
        return image

    def read_many(self, frames: Sequence[int]) -> list[np.ndarray]:
        """As :meth:`FrameReader.read_many`; cached frames are not decoded again."""
        wanted = [self.reader._check(f) for f in frame_list(frames, "read_many", self.video_id)]
        got: dict[int, np.ndarray] = {}
        for t in set(wanted):
            hit = self._get(t)
            if hit is not None:
                got[t] = hit
        missing = sorted(set(wanted) - set(got))
        self.misses += len(missing)
        for t, image in zip(missing, self.reader.read_many(missing)):
            got[t] = image
            self._put(t, image)
        out, used = [], set()
        for t in wanted:
            out.append(got[t] if t not in used else got[t].copy())
            used.add(t)
        return out

    def iter_frames(self, frames: Iterable[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """As :meth:`FrameReader.iter_frames`; cached frames come from the cache."""
        targets = (
            list(range(self.frame_count))
            if frames is None
            else sorted({self.reader._check(f) for f in frame_list(frames, "iter_frames", self.video_id)})
        )
        cached = {t: self._get(t) for t in targets if t in self._cache}
        decoded = self.reader.iter_frames([t for t in targets if t not in cached])
        pending = next(decoded, None)
        for t in targets:
            if t in cached:
                yield t, cached[t]  # type: ignore[misc]
                continue
            while pending is not None and pending[0] < t:
                pending = next(decoded, None)
            if pending is not None and pending[0] == t:
                self.misses += 1
                self._put(t, pending[1])
                yield pending
                pending = next(decoded, None)

    def __iter__(self) -> Iterator[np.ndarray]:
        for _, image in self.iter_frames():
            yield image

    def __len__(self) -> int:
        return self.frame_count

    def close(self) -> None:
        """Close the wrapped reader and drop the cache."""
        self._cache.clear()
        self.reader.close()

    def __enter__(self) -> CachedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
