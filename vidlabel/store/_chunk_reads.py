"""Reading a video's stored frames chunk by chunk: each chunk read once, chunks of several frames through the
chunk cache, chunks of compressed codecs decoded on a thread pool (:meth:`~vidlabel.store.FrameStore.read_rows`
and :meth:`~vidlabel.store.FrameStore.read_clip` check their arguments and read through it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from vidlabel.errors import StoreError
from vidlabel.store._backend import FramesReader
from vidlabel.store._process import _ProcessState, reader_path

__all__ = ["load_clip", "load_rows"]


def load_rows(
    state: _ProcessState,
    reader: FramesReader,
    rows: list[int],
    out: Sequence[np.ndarray] | None,
    on_error: Callable[[StoreError, int], StoreError],
) -> list[np.ndarray]:
    """Stored frames ``rows`` (checked in range) of a video's frames, in order (repeats allowed); ``out`` as
    :meth:`~vidlabel.store.FrameStore.read_rows` (checked); ``on_error`` makes the error of a chunk (its number)
    that fails to read."""
    cf = reader.chunk_frames
    by_chunk: dict[int, list[int]] = {}
    for k, r in enumerate(rows):
        by_chunk.setdefault(r // cf, []).append(k)
    got: list[np.ndarray | None] = [None] * len(rows)
    # one block for the whole call: glibc returns each frame-sized buffer of a batch to the system when the
    # batch is dropped, so that the next batch's frames land in fresh pages (a page fault per 4 KiB)
    block = np.empty((len(rows), *reader.shape[1:]), np.uint8) if out is None else None

    def dest(k: int) -> np.ndarray:
        return block[k] if block is not None else out[k]  # type: ignore[index]

    def load(c: int) -> None:
        try:
            load_chunk(c)
        except StoreError as err:  # a chunk that does not decode or fails its checksum: say which video and rows
            raise on_error(err, c) from err

    def load_chunk(c: int) -> None:
        ks = by_chunk[c]
        if cf == 1:
            first = dest(ks[0])
            reader.read_chunk(c, first[None])
            got[ks[0]] = first
            for k in ks[1:]:
                got[k] = copy = dest(k)
                np.copyto(copy, first)
            return
        key = (str(reader_path(reader)), c)
        chunk = state.cache.get(key)
        if chunk is None:
            chunk = state.cache.put(key, reader.read_chunk(c))
        for k in ks:
            got[k] = copy = dest(k)
            np.copyto(copy, chunk[rows[k] - c * cf])

    chunks = list(by_chunk)
    if len(chunks) > 1:  # a store at a URL fetches the chunks it needs concurrently (no-op for local files)
        cached = set() if cf == 1 else {c for c in chunks if (str(reader_path(reader)), c) in state.cache}
        if len(chunks) - len(cached) > 1:
            reader.prefetch(c for c in chunks if c not in cached)
    if len(chunks) > 1 and not reader.codec.raw:
        if state.pool is None:
            state.pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
        list(state.pool.map(load, chunks))
    else:
        for c in chunks:
            load(c)
    return got  # type: ignore[return-value]


def load_clip(
    state: _ProcessState,
    reader: FramesReader,
    rows: list[int],
    out: np.ndarray,
    on_error: Callable[[StoreError, int], StoreError],
) -> None:
    """Read stored frames ``rows`` (checked in range) of a video's frames into ``out`` (checked: C-contiguous
    (T, H, W, 3) uint8), a slice copy per run of consecutive rows in a chunk; ``on_error`` as :func:`load_rows`."""
    cf = reader.chunk_frames
    # (first position in the clip, end position, chunk, first row) of each run of consecutive rows in a chunk
    runs = []
    k = 0
    while k < len(rows):
        end, c = k + 1, rows[k] // cf
        while end < len(rows) and rows[end] == rows[end - 1] + 1 and rows[end] // cf == c:
            end += 1
        runs.append((k, end, c, rows[k]))
        k = end
    path = str(reader_path(reader))

    def load(run: tuple[int, int, int, int]) -> None:
        a, b, c, first = run
        try:
            if cf == 1:
                reader.read_chunk(c, out[a:b])
                return
            chunk = state.cache.get((path, c))
            # the whole chunk: straight into the clip, one copy
            if chunk is None and b - a == cf:
                reader.read_chunk(c, out[a:b])
                return
            if chunk is None:
                chunk = state.cache.put((path, c), reader.read_chunk(c))
            np.copyto(out[a:b], chunk[first - c * cf : first - c * cf + b - a])
        except StoreError as err:
            raise on_error(err, c) from err

    if len(runs) > 1 and reader.codec.name != "none":
        if state.pool is None:
            state.pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
        list(state.pool.map(load, runs))
    else:
        for run in runs:
            load(run)
