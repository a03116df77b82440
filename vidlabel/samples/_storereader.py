"""StoreBackedReader: one video's frames from a frame store when it holds them, else from the video file.

What ``FrameSamples(cache=...)`` hands out as ``samples.reader(video_id)``
when the store holds frames of the same file (content hash); :class:`FrameCache`
is that store, opened once per process and again when it was rebuilt.
"""

from __future__ import annotations

import os
import shlex
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from vidlabel.errors import (
    FrameOutOfRangeError,
    SampleIndexTypeError,
    StoreError,
    StoreIncompleteError,
    StoreLockedError,
    VidlabelWarning,
)
from vidlabel.geometry import view_image
from vidlabel.spec import VideoMetadata, View
from vidlabel.video._reader import frame_list

__all__ = ["StoreBackedReader"]


class StoreBackedReader:
    """Frames of one video from a frame store when it holds them, else from the video file.

    Same interface as :class:`~vidlabel.frames.FrameReader` (``read``,
    ``read_many``, ``iter_frames``, ``close``, context manager). The store
    holds full frames; the view is applied here. The file is opened only if a
    frame is missing from the store: with ``open_video`` (a callable returning
    a reader of the video in the view) when given, else with
    :meth:`FrameReader.for_video <vidlabel.frames.FrameReader.for_video>`.

    ``refresh``, when given, is called with the store and the
    :class:`~vidlabel.errors.StoreError` of a failed read from it, and returns the
    store to read this video from now, or None to read it from the video file; it
    re-raises the error when the store did not change (damage is refused, never
    read around).
    """

    def __init__(
        self,
        store: Any,
        meta: VideoMetadata,
        *,
        view: View | None,
        roots: Sequence[str] = (),
        open_video: Callable[[], Any] | None = None,
        refresh: Callable[[Any, StoreError], Any] | None = None,
    ) -> None:
        self._store = store
        self._refresh = refresh
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
        if self._store is None:  # the store no longer holds this video's file: every frame from the video
            return None
        try:
            image = self._store.get_frame(self.video_id, n)
        except StoreError as err:
            if self._refresh is None:
                raise
            self._store = self._refresh(self._store, err)  # the store rebuilt or removed since it was opened
            if self._store is None:
                return None
            image = self._store.get_frame(self.video_id, n)
        return None if image is None else view_image(np.asarray(image), self._view)

    def read(self, n: int) -> np.ndarray:
        """(H, W, 3) uint8 RGB frame ``n`` in the view."""
        image = self._stored(self._check(n))
        return image if image is not None else self._video().read(n)

    def read_many(self, frames: Iterable[int]) -> list[np.ndarray]:
        """Frames in the order asked (repeats allowed); missing ones decoded together."""
        wanted = [self._check(n) for n in frame_list(frames, "read_many", self.video_id)]
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
        todo = (
            range(self.frame_count)
            if frames is None
            else sorted({self._check(n) for n in frame_list(frames, "iter_frames", self.video_id)})
        )
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


class FrameCache:
    """The frame store given as ``FrameSamples(cache=path)``: opened lazily once per process (a pickled copy
    opens it again), and opened again where a read finds it rebuilt or removed since.

    The cache is derived data that may be deleted and rebuilt any time, and the videos give the same frames:
    once the first open succeeded (:meth:`store` with ``strict``), a cache that cannot be opened is read
    around, from the videos, with one warning per process; a cache damaged while it is the one opened is
    refused as any store is.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._store: Any = None
        self._pid = -1
        self._warned = False

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_store": None, "_pid": -1, "_warned": False}  # each process opens it, warns once

    def store(self, *, strict: bool = False) -> Any:
        """The cache's FrameStore in this process, or None if it cannot be opened now (``strict``: raise)."""
        if self._store is None or self._pid != os.getpid():
            from vidlabel.store import open_store

            try:
                self._store = open_store(self.path)
            except StoreError as err:
                if strict:
                    raise
                self._store = None
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"frame cache {self.path!r} cannot be read now ({err}): it was removed or is being rebuilt "
                        "since this FrameSamples opened it; frames come from the videos until it can be read again",
                        VidlabelWarning,
                        stacklevel=4,
                    )
                return None
            self._pid = os.getpid()
        return self._store

    def unusable(self, err: StoreError, dataset: str | None, release_id: str | None) -> StoreError:
        """``err`` of opening the cache for a new FrameSamples, as the same class saying it is the ``cache=`` and
        how to build or finish it (``vidlabel cache`` of the dataset and release, when they are known)."""
        if isinstance(err, (StoreIncompleteError, StoreLockedError)):
            return err  # its own words say to wait for, or rerun, the command writing it
        command = shlex.join(["vidlabel", "cache", dataset or "DATASET", self.path])
        if release_id is not None:
            command += f" --release {release_id}"
        if not str(err).startswith("no vidlabel frame store"):
            return err  # a damaged or foreign store: its own words say what is wrong and what to do
        return type(err)(
            f"cache={self.path!r} is not a frame cache: {err}. Build one with `{command}` (vidlabel.export.cache), "
            "or leave out cache= to read every frame from the videos",
            path=self.path,
        )

    def reader(
        self, meta: VideoMetadata, *, view: View | None, roots: Sequence[str], open_video: Callable[[], Any]
    ) -> StoreBackedReader | None:
        """A reader of the video from the cache if it holds frames of this very file (content hash), else None."""
        store = self.store()
        if store is None or meta.content_hash is None or store.video_content_hash(meta.video_id) != meta.content_hash:
            return None
        return StoreBackedReader(
            store, meta, view=view, roots=roots, open_video=open_video, refresh=partial(self.changed, meta)
        )

    def changed(self, meta: VideoMetadata, used: Any, err: StoreError) -> Any:
        """Where reading a video's frames from the cache's store ``used`` failed with ``err``: if the cache was
        rebuilt or removed since ``used`` was opened, the store to read the video from now (the cache opened
        again, if it still holds this file's frames) or None (from the video); else (damage) ``err`` again."""
        if self._store is used:  # not opened again since (another reader may have done it): open it now
            self._store = None
        fresh = self.store()
        if fresh is not None and used is not None:
            if fresh.stores == used.stores and fresh.attrs == used.attrs and fresh.video_ids == used.video_ids:
                raise err  # the cache is the one ``used`` read: damaged since, refused as ever
        if fresh is None or meta.content_hash is None or fresh.video_content_hash(meta.video_id) != meta.content_hash:
            return None
        return fresh
