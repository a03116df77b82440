"""Writing frames units: frames assembled into chunks, encoded and written on a thread, checksummed."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from vidlabel.errors import StoreError
from vidlabel.store._backend import Backend
from vidlabel.store._codecs import Codec

__all__ = ["write_frames"]

_STOP = object()


def write_frames(
    backend: Backend,
    key: str,
    frames: Iterable[np.ndarray],
    *,
    frame_number: np.ndarray,
    frame_size: tuple[int, int],
    chunk_frames: int,
    codec: Codec,
    attrs: dict[str, Any],
    on_frame: Callable[[int], None] | None = None,
    queue_chunks: int = 4,
) -> None:
    """Write one frames unit from an iterable of frames and publish it (``complete`` last).

    The caller's thread assembles chunks; a writer thread encodes each chunk
    (the codecs release the GIL), computes its CRC-32C and writes it, so
    decoding and writing overlap. At most ``queue_chunks`` chunks wait.

    Parameters
    ----------
    backend : Backend
    key : str
        The unit's frames key.
    frames : iterable of (H, W, 3) uint8
        Exactly ``len(frame_number)`` frames, in row order.
    frame_number : (T,) int64
        Source frame number of each row.
    frame_size : (width, height)
    chunk_frames : int
    codec : Codec
    attrs : dict
        Attributes of the unit (pixel key, content hash, ...).
    on_frame : callable, optional
        Called with 1 after each frame is handed over (progress).

    Raises
    ------
    StoreError
        If a frame has the wrong shape or the iterable yields too few or too many frames.
    """
    import google_crc32c

    frame_number = np.asarray(frame_number, dtype=np.int64)
    t = int(frame_number.shape[0])
    width, height = frame_size
    shape = (t, height, width, 3)
    n_chunks = -(-t // chunk_frames)
    crc = np.zeros(n_chunks, np.uint32)
    writer = backend.frames_writer(key, shape=shape, chunk_frames=chunk_frames, codec=codec, attrs=attrs)

    def write(index: int, chunk: np.ndarray) -> None:
        data = codec.encode(chunk, backend.name)
        crc[index] = google_crc32c.extend(0, data)
        writer.write_chunk(index, data)

    chunks = _ChunkThread(write, name=f"vidlabel-write-{key[:8]}", queue_chunks=queue_chunks)
    done = False
    try:
        row = _hand_over(
            frames, chunks, key, frame_number, size=frame_size, chunk_frames=chunk_frames, on_frame=on_frame
        )
        if not chunks.failure and row != t:
            raise StoreError(f"frames unit {key}: got {row} frames, expected {t}")
        chunks.finish()
        writer.commit(frame_number=frame_number, crc32c=crc)
        done = True
    finally:
        if not done:
            chunks.stop()
            writer.abort()


class _ChunkThread:
    """A thread that writes the chunks put to it, in order, at most ``queue_chunks`` waiting.

    After the first failure it drops the chunks still queued; :meth:`finish` raises that failure.
    """

    def __init__(self, write: Callable[[int, np.ndarray], None], *, name: str, queue_chunks: int) -> None:
        self._write = write
        self._work: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_chunks))
        self.failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._drain, name=name, daemon=True)
        self._thread.start()

    def put(self, index: int, chunk: np.ndarray) -> None:
        """Queue chunk ``index`` (blocks while ``queue_chunks`` wait)."""
        self._work.put((index, chunk))

    def finish(self) -> None:
        """Wait until every queued chunk is written; raise the first failure."""
        self._work.put(_STOP)
        self._thread.join()
        if self.failure:
            raise self.failure[0]

    def stop(self) -> None:
        """End the thread, if it still runs, after the chunks already queued."""
        if self._thread.is_alive():
            self._work.put(_STOP)
            self._thread.join()

    def _drain(self) -> None:
        while True:
            item = self._work.get()
            if item is _STOP:
                return
            if self.failure:
                continue
            try:
                self._write(*item)
            except BaseException as err:
                self.failure.append(err)


def _hand_over(
    frames: Iterable[np.ndarray],
    chunks: _ChunkThread,
    key: str,
    frame_number: np.ndarray,
    *,
    size: tuple[int, int],
    chunk_frames: int,
    on_frame: Callable[[int], None] | None,
) -> int:
    """Assemble ``frames`` of ``size`` (width, height) into chunks and queue each full one and the last,
    partial one; the rows handed over. Stops early once the writer thread failed.

    Raises
    ------
    StoreError
        If a frame has the wrong shape or dtype, or there are more frames than ``frame_number`` has rows.
    """
    t = int(frame_number.shape[0])
    width, height = size
    row = 0
    chunk = np.zeros((chunk_frames, height, width, 3), np.uint8)
    for image in frames:
        if chunks.failure:
            break
        if row >= t:
            raise StoreError(f"frames unit {key}: more than the {t} frames expected")
        image = np.asarray(image)
        if image.shape != (height, width, 3) or image.dtype != np.uint8:
            raise StoreError(
                f"frames unit {key}: frame {int(frame_number[row])} has shape {image.shape} {image.dtype}, "
                f"expected ({height}, {width}, 3) uint8"
            )
        # The frame is the chunk: no copy.
        if chunk_frames == 1:
            chunks.put(row, np.ascontiguousarray(image)[None])
            row += 1
            if on_frame is not None:
                on_frame(1)
            continue
        chunk[row % chunk_frames] = image
        row += 1
        if row % chunk_frames == 0:
            chunks.put((row - 1) // chunk_frames, chunk)
            chunk = np.zeros((chunk_frames, height, width, 3), np.uint8)
        if on_frame is not None:
            on_frame(1)
    if not chunks.failure and chunk_frames > 1 and row % chunk_frames:
        chunks.put(row // chunk_frames, chunk)
    return row
