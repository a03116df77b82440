"""Writing an uncompressed frames unit into its early-allocated chunks in whole 2 MiB blocks of the file."""

from __future__ import annotations

import errno
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from vidlabel.errors import StoreError

# bytes of chunks gathered before one write of a chunk region
_STAGE_BYTES = 4 << 20
# region writes start on these boundaries of the file (a PMD-sized folio)
_FOLIO_BYTES = 2 << 20
# views one pwritev takes (Linux's IOV_MAX)
_IOV_MAX = 1024


def _size_limit_allows(nbytes: int) -> bool:
    """True unless this process's file size limit (``ulimit -f``, ``RLIMIT_FSIZE``) is below ``nbytes`` plus
    1 MiB (HDF5's own structures in a frames file)."""
    try:
        import resource
    except ImportError:  # not on this OS
        return True
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return soft == resource.RLIM_INFINITY or soft >= nbytes + (1 << 20)


class _ChunkRegion:
    """The chunks of an uncompressed frames file, written in order as one byte stream per block of chunks.

    HDF5 allocated the chunks up front (early allocation, no fill) in ``runs``: blocks of consecutive chunks
    lying back to back, between which it keeps pieces of its chunk index. The chunks' own bytes are gathered
    as views (no copy; the views keep the chunks alive) and handed to the region's flush thread in stretches
    of about :data:`_STAGE_BYTES`, each written with one ``os.pwritev`` while the next stretch gathers; a
    failed write is raised by the next hand-over or :meth:`finish`.

    Each stretch starts on a :data:`_FOLIO_BYTES` (2 MiB) boundary of the file and covers whole 2 MiB blocks,
    so that a kernel whose page cache holds large folios (ext4 from Linux 6.16, XFS from 5.18) keeps the file
    in 2 MiB folios, which a read-only map of it then maps with one page-table entry; HDF5's write of each
    chunk at its own offset (``write_direct_chunk``) leaves smaller ones. A run's bytes before its first
    boundary are written at once, in the caller's thread.

    Parameters
    ----------
    path : Path
        The frames file.
    runs : list of (int, int)
        ``(byte offset, bytes)`` of each block, in chunk order.

    Raises
    ------
    OSError
        If the file cannot be opened.
    """

    def __init__(self, path: Path, runs: list[tuple[int, int]]) -> None:
        if not runs:
            raise ValueError("no chunks to write")
        self._runs = runs
        self._fd = os.open(path, os.O_WRONLY)
        # gathered, not yet handed to the flush thread (their chunks stay alive)
        self._views: list[memoryview] = []
        self._in_flight: list[Future[None] | None] = [None, None]
        self._current = 0
        # started at the first hand-over (a small unit has none)
        self._flusher: ThreadPoolExecutor | None = None
        self._start_run(0)

    def _start_run(self, k: int) -> None:
        self._run = k
        base, nbytes = self._runs[k]
        self.pos, self.end = base, base + nbytes
        # the first byte of the run that is gathered
        self._aligned = -(-base // _FOLIO_BYTES) * _FOLIO_BYTES
        # gathered bytes, starting at file offset self._stage_at
        self._filled = 0
        self._stage_at = self._aligned

    def write(self, data: memoryview) -> None:
        """Append ``data`` (the next chunk's bytes) to the stream."""
        while data.nbytes:
            if self.pos == self.end:
                if self._run + 1 == len(self._runs):
                    raise StoreError(
                        f"frames file: {data.nbytes} bytes at {self.pos} run past the chunks' end {self.end}"
                    )
                self._hand_over(self._filled)
                self._start_run(self._run + 1)
            k = min(data.nbytes, self.end - self.pos)
            self._write_in_run(data[:k])
            data = data[k:]

    def _write_in_run(self, data: memoryview) -> None:
        if self.pos < self._aligned:
            k = min(self._aligned - self.pos, data.nbytes)
            _pwrite_all(self._fd, data[:k], self.pos)
            self.pos += k
            data = data[k:]
        if data.nbytes:
            self._views.append(data)
            self._filled += data.nbytes
            self.pos += data.nbytes
            if self._filled >= _STAGE_BYTES:
                # the whole 2 MiB blocks gathered go; the rest waits for the next stretch
                self._hand_over((self._stage_at + self._filled) // _FOLIO_BYTES * _FOLIO_BYTES - self._stage_at)

    def _hand_over(self, nbytes: int) -> None:
        """Hand the first ``nbytes`` gathered to the flush thread, and go on once the write before is done."""
        views, self._views = _split_views(self._views, nbytes)
        if self._flusher is None:
            self._flusher = ThreadPoolExecutor(1, thread_name_prefix="vidlabel-region")
        self._in_flight[self._current] = self._flusher.submit(_pwritev_all, self._fd, views, self._stage_at)
        self._stage_at += nbytes
        self._filled -= nbytes
        self._current ^= 1
        self._wait(self._current)

    def _wait(self, k: int) -> None:
        pending, self._in_flight[k] = self._in_flight[k], None
        if pending is not None:
            # a failed write raises its OSError here
            pending.result()

    def finish(self) -> None:
        """Write what is gathered, wait for every write, and close the file."""
        try:
            if self._filled:
                self._hand_over(self._filled)
            self._wait(0)
            self._wait(1)
        finally:
            self.close()

    def close(self) -> None:
        """Close the file once no write is in flight (a failed write is not raised here: :meth:`finish` raises
        it; ``close`` alone is the abort path)."""
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)
        self._in_flight = [None, None]
        self._views = []
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data.nbytes:
        done = os.pwrite(fd, data, offset)
        if done <= 0:
            raise OSError(errno.EIO, f"short write at byte {offset}")
        data, offset = data[done:], offset + done


def _split_views(views: list[memoryview], nbytes: int) -> tuple[list[memoryview], list[memoryview]]:
    """``views`` cut after their first ``nbytes`` bytes: (the views of those bytes, the views of the rest)."""
    head: list[memoryview] = []
    for k, view in enumerate(views):
        if nbytes <= 0:
            return head, views[k:]
        if view.nbytes > nbytes:
            return [*head, view[:nbytes]], [view[nbytes:], *views[k + 1 :]]
        head.append(view)
        nbytes -= view.nbytes
    return head, []


def _pwritev_all(fd: int, views: list[memoryview], offset: int) -> None:
    """Write ``views`` back to back from byte ``offset`` with ``os.pwritev`` (at most ``_IOV_MAX`` views a
    call), until every byte is written."""
    while views:
        done = os.pwritev(fd, views[:_IOV_MAX], offset)
        if done <= 0:
            raise OSError(errno.EIO, f"short write at byte {offset}")
        offset += done
        _, views = _split_views(views, done)
