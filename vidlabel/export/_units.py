"""Writing one frames unit: the task an export runs per unit, in this process or any worker process.

:func:`run_unit` is a top-level function of a picklable :class:`UnitJob` and
the :class:`~vidlabel.export._options.ExportOptions`, returning a
:class:`UnitResult`, so that any ``concurrent.futures.Executor`` can run it.
The unit's frames are copied from stored units where they hold them and
decoded (one sequential pass) for the rest; :func:`~vidlabel.store._writer.write_frames`
encodes and writes them on a thread and publishes the unit ``complete`` last.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.errors import StoreError
from vidlabel.export._options import ExportOptions
from vidlabel.geometry import resize_image
from vidlabel.spec import VideoMetadata, View
from vidlabel.store._backend import Backend
from vidlabel.store._framestore import backend_for
from vidlabel.store._writer import write_frames
from vidlabel.video._heap import keep_heap_top

__all__ = ["DiskFull", "UnitJob", "UnitResult", "is_disk_full", "run_unit", "set_progress_queue", "unit_frames"]

_PROGRESS_EVERY = 16  # frames a worker counts before it reports progress


@dataclass
class UnitJob:
    """Everything a worker needs to write one frames unit (picklable)."""

    folder: str
    key: str
    meta: VideoMetadata
    view: View | None
    size: tuple[int, int]
    chunk_frames: int
    frame_number: np.ndarray
    decode: np.ndarray
    sources: list[tuple[str, np.ndarray, np.ndarray]]  # (unit key, its frame numbers, which of ours it holds)
    attrs: dict[str, Any]
    rewrite: bool = False  # the store holds this unit damaged: write it again, even over a complete one

    @property
    def frames(self) -> int:
        """Frames the unit holds."""
        return int(self.frame_number.size)


@dataclass(frozen=True)
class UnitResult:
    """What writing one unit did: its key, frames decoded and copied; ``published_before`` when the task found
    the unit already complete (an earlier attempt of an engine that runs tasks at least once) and wrote nothing."""

    key: str
    decoded: int
    copied: int
    published_before: bool = False


def unit_backend(job: UnitJob, opts: ExportOptions) -> Backend:
    """The store's backend in the process writing ``job`` (a URL's with the export's storage options)."""
    if opts.storage_options:
        return backend_for(job.folder, opts.format, storage_options=opts.storage_options)
    return backend_for(job.folder, opts.format)


# A worker process's progress queue (set by the pool's initializer): it receives (unit key, frames written).
_PROGRESS: Any = None


def set_progress_queue(progress_queue: Any) -> None:
    """Report each unit's progress of this process to ``progress_queue`` (a worker initializer calls this)."""
    global _PROGRESS
    _PROGRESS = progress_queue


def run_unit(job: UnitJob, opts: ExportOptions, on_frame: Callable[[int], None] | None = None) -> UnitResult:
    """Write and publish frames unit ``job.key``; ``on_frame`` (or this worker's progress queue) hears of each frame.

    A unit already complete in the store is left as it is (engines run a task at least once: a second
    attempt, or a rerun after the driver was killed, decodes nothing).

    Raises
    ------
    VideoDecodeError, VideoChangedError, VideoNotFoundError
        From the reader.
    StoreError
        If the reader returns another frame than asked, or the frames do not fit the unit.
    """
    # decoded frames reuse the heap top instead of faulting in fresh pages
    keep_heap_top()
    counts = {"decoded": 0, "copied": 0}
    if on_frame is None and _PROGRESS is not None:
        on_frame = _queue_reporter(job.key, _PROGRESS)
    backend = unit_backend(job, opts)
    if job.rewrite:
        backend.discard_unit(job.key)
    elif backend.unit_published(job.key, job.meta.video_id):  # an earlier attempt published it: nothing to do
        return UnitResult(job.key, 0, 0, published_before=True)
    try:
        write_frames(
            backend, job.key, unit_frames(job, opts, counts), frame_number=job.frame_number, frame_size=job.size,
            chunk_frames=job.chunk_frames, codec=opts.codec, attrs=job.attrs, on_frame=on_frame,
        )  # fmt: skip
    except OSError as err:
        if is_disk_full(err) and not isinstance(err, DiskFull):
            raise DiskFull(
                f"writing frames of video {job.meta.video_id!r} ({job.frames} frames, frames unit {job.key[:12]})",
                path=job.folder,
            ) from err
        raise
    return UnitResult(job.key, counts["decoded"], counts["copied"])


class DiskFull(StoreError):
    """A unit could not be written for lack of disk space; the message says what was being written.

    :func:`vidlabel.export` turns it into the export's error (what is kept, how to resume).
    """


def is_disk_full(err: BaseException) -> bool:
    """True for an error from a full disk or quota: ``ENOSPC``/``EDQUOT``, also as HDF5 words it in its message."""
    if isinstance(err, DiskFull):
        return True
    if not isinstance(err, OSError):
        return False
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(err)
    return f"errno = {errno.ENOSPC}," in text or "No space left on device" in text or "Disk quota exceeded" in text


def _queue_reporter(key: str, progress_queue: Any) -> Callable[[int], None]:
    pending = [0]

    def on_frame(k: int) -> None:
        pending[0] += k
        if pending[0] >= _PROGRESS_EVERY:
            progress_queue.put((key, pending[0]))
            pending[0] = 0

    return on_frame


def unit_frames(job: UnitJob, opts: ExportOptions, counts: dict[str, int]) -> Generator[np.ndarray, None, None]:
    """The unit's frames in row order: copies from stored units merged with a sequential decode of the rest."""
    per_row: dict[int, tuple[int, int]] = {}  # our row -> (source, source row)
    for s, (_key, src_numbers, ours) in enumerate(job.sources):
        src_rows = np.searchsorted(src_numbers, job.frame_number[ours])
        for r, sr in zip(ours.tolist(), src_rows.tolist()):
            per_row.setdefault(r, (s, sr))
    decode_rows = set(np.searchsorted(job.frame_number, job.decode).tolist())
    backend = unit_backend(job, opts) if job.sources else None  # a MediaSequence job copies nothing
    readers: dict[int, Any] = {}
    reader = decoded = None
    if job.decode.size:
        from vidlabel.video._reader import FrameReader

        reader = FrameReader.for_video(job.meta, view=job.view, roots=opts.roots)
        decoded = reader.iter_frames(job.decode.tolist())
    chunk_cache: dict[tuple[int, int], np.ndarray] = {}
    try:
        for r in range(job.frames):
            if r in decode_rows:
                assert decoded is not None
                image = _decoded_frame(job, opts, r, next(decoded))
                counts["decoded"] += 1
                yield image
                continue
            s, sr = per_row[r]
            src = readers.get(s)
            if src is None:
                assert backend is not None
                src = readers[s] = backend.open_frames_unit(job.sources[s][0])
            c = sr // src.chunk_frames
            chunk = chunk_cache.get((s, c))
            if chunk is None:
                chunk_cache.clear()
                chunk = chunk_cache[(s, c)] = src.read_chunk(c)
            counts["copied"] += 1
            yield chunk[sr - c * src.chunk_frames]
    finally:
        if reader is not None:
            reader.close()
        for src in readers.values():
            src.close()


def _decoded_frame(job: UnitJob, opts: ExportOptions, row: int, item: tuple[int, np.ndarray]) -> np.ndarray:
    """A frame from the reader, checked to be the one of ``row`` and resized to the output size."""
    n, image = item
    if n != int(job.frame_number[row]):
        raise StoreError(f"video {job.meta.video_id!r}: the reader returned frame {n} for {job.frame_number[row]}")
    return image if opts.output_size is None else resize_image(image, opts.output_size)
