"""StoreBackedReader: one video's frames from a frame store when it holds them, else from the video file.

What ``FrameSamples(cache=...)`` hands out as ``samples.reader(video_id)``
when the store holds frames of the same file (content hash).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from vidlabel.errors import FrameOutOfRangeError, SampleIndexTypeError
from vidlabel.geometry import view_image
from vidlabel.spec import VideoMetadata, View

__all__ = ["StoreBackedReader"]


class StoreBackedReader:
    """Frames of one video from a frame store when it holds them, else from the video file.

    Same interface as :class:`~vidlabel.frames.FrameReader` (``read``,
    ``read_many``, ``iter_frames``, ``close``, context manager). The store
    holds full frames; the view is applied here. The file is opened only if a
    frame is missing from the store: with ``open_video`` (a callable returning
    a reader of the video in the view) when given, else with
    :meth:`FrameReader.for_video <vidlabel.frames.FrameReader.for_video>`.
    """

    def __init__(
        self,
        store: Any,
        meta: VideoMetadata,
        *,
        view: View | None,
        roots: Sequence[str] = (),
        open_video: Callable[[], Any] | None = None,
    ) -> None:
        self._store = store
        self._meta = meta
        self._view = view
        self._roots = tuple(roots)
        self._open_video = open_video
        self._fallback: Any = None
        self.video_id = meta.video_id
        self.frame_count = meta.frame_count
        self.width, self.height = view.size if view is not None else (meta.width, meta.height)
        self.path = None

    def _video(self) -> Any:
        if self._fallback is None:
            if self._open_video is not None:
                self._fallback = self._open_video()
            else:
                from vidlabel.video._reader import FrameReader

                self._fallback = FrameReader.for_video(self._meta, view=self._view, roots=self._roots)
        return self._fallback

    def _check(self, n: Any) -> int:
        """``n`` as an int in ``[0, frame_count)``, refused as FrameReader refuses it (never rounded or parsed)."""
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise SampleIndexTypeError(
                f"frame numbers must be integers, got {n!r} ({type(n).__name__}) for video {self.video_id!r}; "
                f"frames are [0, {self.frame_count})",
                video_id=self.video_id,
            )
        if not 0 <= int(n) < self.frame_count:
            raise FrameOutOfRangeError(
                f"frame {n} out of range [0, {self.frame_count}) in video {self.video_id!r}", video_id=self.video_id
            )
        return int(n)

    def _stored(self, n: int) -> np.ndarray | None:
        image = self._store.get_frame(self.video_id, n)
        return None if image is None else view_image(np.asarray(image), self._view)

    def read(self, n: int) -> np.ndarray:
        """(H, W, 3) uint8 RGB frame ``n`` in the view."""
        image = self._stored(self._check(n))
        return image if image is not None else self._video().read(n)

    def read_many(self, frames: Iterable[int]) -> list[np.ndarray]:
        """Frames in the order asked (repeats allowed); missing ones decoded together."""
        wanted = [self._check(n) for n in frames]
        got: dict[int, np.ndarray | None] = {n: self._stored(n) for n in dict.fromkeys(wanted)}
        missing = [n for n, img in got.items() if img is None]
        if missing:
            got.update(zip(missing, self._video().read_many(missing)))
        return [got[n] for n in wanted]  # type: ignore[misc]

    def iter_frames(self, frames: Iterable[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(frame, image) in increasing order, each distinct frame once.

        A run of frames missing from the store is decoded from the video in one
        sequential pass; at most one stored frame is held meanwhile.
        """
        todo = range(self.frame_count) if frames is None else sorted({self._check(n) for n in frames})
        run: list[int] = []
        for n in todo:
            image = self._stored(n)
            if image is None:
                run.append(n)
                continue
            if run:
                yield from self._video().iter_frames(run)
                run = []
            yield n, image
        if run:
            yield from self._video().iter_frames(run)

    def close(self) -> None:
        """Close the video file if it was opened (the store stays open for the process)."""
        if self._fallback is not None:
            self._fallback.close()
            self._fallback = None

    def __enter__(self) -> StoreBackedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
