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
    work: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_chunks))
    failure: list[BaseException] = []

    def drain() -> None:
        while True:
            item = work.get()
            if item is _STOP:
                return
            if failure:
                continue
            index, chunk = item
            try:
                data = codec.encode(chunk, backend.name)
                crc[index] = google_crc32c.extend(0, data)
                writer.write_chunk(index, data)
            except BaseException as err:
                failure.append(err)

    thread = threading.Thread(target=drain, name=f"vidlabel-write-{key[:8]}", daemon=True)
    thread.start()
    done = False
    try:
        row = 0
        chunk = np.zeros((chunk_frames, height, width, 3), np.uint8)
        for image in frames:
            if failure:
                break
            if row >= t:
                raise StoreError(f"frames unit {key}: more than the {t} frames expected")
            image = np.asarray(image)
            if image.shape != (height, width, 3) or image.dtype != np.uint8:
                raise StoreError(
                    f"frames unit {key}: frame {int(frame_number[row])} has shape {image.shape} {image.dtype}, "
                    f"expected ({height}, {width}, 3) uint8"
                )
            if chunk_frames == 1:  # the frame is the chunk: no copy
                work.put((row, np.ascontiguousarray(image)[None]))
                row += 1
                if on_frame is not None:
                    on_frame(1)
                continue
            chunk[row % chunk_frames] = image
            row += 1
            if row % chunk_frames == 0:
                work.put(((row - 1) // chunk_frames, chunk))
                chunk = np.zeros((chunk_frames, height, width, 3), np.uint8)
            if on_frame is not None:
                on_frame(1)
        if not failure and chunk_frames > 1 and row % chunk_frames:
            work.put((row // chunk_frames, chunk))
        if not failure and row != t:
            raise StoreError(f"frames unit {key}: got {row} frames, expected {t}")
        work.put(_STOP)
        thread.join()
        if failure:
            raise failure[0]
        writer.commit(frame_number=frame_number, crc32c=crc)
        done = True
    finally:
        if not done:
            if thread.is_alive():
                work.put(_STOP)
                thread.join()
            writer.abort()
