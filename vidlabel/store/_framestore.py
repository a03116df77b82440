"""FrameStore: one exported store, or a folder of stores read as one; frames and targets by sample or by frame.

A store is a local folder, or (Zarr only) an fsspec URL read through :mod:`vidlabel.store._remote`.
"""

from __future__ import annotations

import os
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    SampleIndexTypeError,
    StoreCorruptError,
    StoreError,
    StoreIncompleteError,
    UnknownVideoError,
    check_flag,
)
from vidlabel.store._backend import Backend, FramesReader, VideoReader
from vidlabel.store._cache import DEFAULT_CACHE_BYTES, ChunkCache, check_cache_bytes
from vidlabel.store._chunk_reads import load_clip, load_rows
from vidlabel.store._discovery import (
    BACKENDS,
    _check_root,
    _root_changed,
    backend_for,
    find_stores,
    not_a_store_hint,
    read_parts,
)
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._layout import (
    SEGMENT_FIELDS,
    VIDEO_ARRAYS,
    region_names,
    summary_problem,
    summary_problems,
    video_problems,
)
from vidlabel.store._position import frame_number as frame_number_of
from vidlabel.store._position import row_in_range, row_number, sample_position
from vidlabel.store._process import VideoData, _frames_index, _ProcessState, reader_path
from vidlabel.store._remote import is_url
from vidlabel.store._store_checks import (
    check_frames,
    check_same_export,
    check_same_labels,
    chunk_error,
    exported_again,
)

# Discovery, the store root's checks and the per-process state are re-exported here, where they were defined.
__all__ = [
    "BACKENDS",
    "FrameStore",
    "VideoData",
    "_ProcessState",
    "_check_root",
    "adopt_learnt",
    "backend_for",
    "find_stores",
    "not_a_store_hint",
    "open_store",
    "reader_path",
]


#: The stores created in this process, by token (:meth:`FrameStore.learnt`).
_LIVE: weakref.WeakValueDictionary[str, FrameStore] = weakref.WeakValueDictionary()


def adopt_learnt(token: str, news: Mapping[str, tuple[VideoData | None, Callable[[], FramesReader] | None]]) -> None:
    """In the process that created the store named ``token``: keep what one of its DataLoader workers learnt
    (:meth:`FrameStore.learnt`), unless this process knows it already; the workers it forks later start with it.
    A token of no store of this process (another process's, or a store gone) is ignored."""
    store = _LIVE.get(token)
    if store is None or store._creator_pid != os.getpid():
        return
    state = store._process()
    with state.lock:
        for video_id, (data, opener) in news.items():
            if data is not None and video_id not in state.data:
                state.data[video_id] = data.read_only()
            if opener is not None and _frames_index(state.openers.get(video_id)) is None:
                state.openers[video_id] = opener


class FrameStore:
    """An exported frame store (HDF5 or Zarr), or a folder of stores read as one.

    Holds only paths and the root metadata: files are opened lazily, once per
    process (a FrameStore is picklable and works in DataLoader workers under
    fork and spawn). Frames are read chunk by chunk through an LRU
    :class:`~vidlabel.store.ChunkCache` of ``cache_bytes`` per process.

    Parameters
    ----------
    path : path or str
        A store folder (``OUT`` of ``vidlabel.export``; for HDF5 its ``store.h5``
        is accepted too) or a folder whose sub-folders are stores; or the
        fsspec URL of a Zarr store (or of a prefix holding several), e.g.
        ``s3://bucket/store``, ``gs://...``, ``file:///data/store``,
        ``memory://store``: local folders are read with direct file reads,
        URLs through fsspec (the filesystem opens lazily in each process).
    cache_bytes : int
        Bound of the decoded-chunk cache per process (default 256 MiB). Chunks
        of one frame are decoded straight into the returned array and not
        cached (a copy would cost as much as the read).
    storage_options : mapping, optional
        fsspec filesystem options for a URL (credentials, endpoint, ...).
    verify_checksums : bool
        Check every frame chunk read against the CRC-32C stored with it
        (``frames_crc32c``), so that a damaged frames file raises
        :class:`~vidlabel.errors.StoreCorruptError` instead of being returned
        as pixels. On by default. A chunk of an uncompressed HDF5 frames file
        is checked once per process, at its first read; later reads copy
        the verified bytes without hashing them again for as long as the
        file is the one mapped (its size, inode, modification and change
        times: any write to it since makes every chunk checked again).
        Other chunks are checked as they enter the chunk cache, or at every
        read where they bypass it. ``scripts/bench_storeread.py`` prints
        reads/s with and without it.

    Raises
    ------
    StoreCorruptError
        If a store's root was changed after export: its class names are not a list of names, or its per-video
        summary (``videos``, which ``vidlabel info`` reads) holds a count that is not a whole number >= 0
        (the message names the store, the video and the field). On reading frames (not here), if a chunk
        fails its checksum or its file is missing.
    StoreError
        If there is no store at ``path``, or the stores of a folder disagree
        on their class names or share a video id, or a URL holds an HDF5 store.
    StoreIncompleteError
        If a store's export (or upload) did not finish (no ``complete``
        marker): rerun it to resume it.
    OptionError
        If ``storage_options`` are given with a local path, ``path`` is not a path or a URL (a Dataset is
        exported first), or ``verify_checksums`` is not True or False.
    SchemaVersionError
        If a store was written by a newer vidlabel.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        storage_options: Mapping[str, Any] | None = None,
        verify_checksums: bool = True,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            hint = ""
            kind = type(path).__name__
            # told apart by name: the store sits below the dataset package and does not import it
            if kind in ("Dataset", "Release") and type(path).__module__.startswith("vidlabel.dataset"):
                hint = f" (a {kind} is read through a store: export it with vidlabel.export(ds, out), then open out)"
            raise OptionError(f"a frame store is opened from a folder path or a URL, got {path!r}{hint}")
        self.verify_checksums = check_flag("verify_checksums", verify_checksums)
        self.path: Path | str = str(path).rstrip("/") if is_url(path) else Path(path)
        self.cache_bytes = check_cache_bytes(cache_bytes)
        self.storage_options = dict(storage_options or {})
        parts, video_part, video_ids, index = read_parts(self.path, self.storage_options)
        self._parts = parts
        self._video_part = video_part
        self._video_ids = tuple(video_ids)
        self._video_code = {v: i for i, v in enumerate(video_ids)}
        self._index = index
        self._index.setflags(write=False)
        self._state: _ProcessState | None = None
        # Names this store to the process that created it, which takes what its DataLoader workers learnt
        # (:meth:`learnt`, :func:`adopt_learnt`) so that the workers of later epochs start with it.
        self._token, self._creator_pid = uuid.uuid4().hex, os.getpid()
        _LIVE[self._token] = self

    # -- pickling and per-process state --------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_state"] = None
        return state

    def _process(self) -> _ProcessState:
        state = self._state
        if state is None or state.pid != os.getpid():
            old = state
            state = _ProcessState(self.cache_bytes)  # never reuse handles inherited through fork
            if old is not None:
                # but keep the small arrays read before a fork (read-only NumPy arrays, no handles) and how to
                # open each video's frames (paths): DataLoader workers started anew every epoch need not read
                # every video's arrays and attributes again (a video file's open is slow in a fresh fork)
                state.data.update(old.data)
                state.openers.update(old.openers)
            self._state = state
        return state

    def learnt(self) -> tuple[str, dict[str, tuple[VideoData | None, Callable[[], FramesReader] | None]]] | None:
        """In a process other than the one that created this store (a DataLoader worker): what it has learnt since
        it started that the creator had not when it forked, each video once: ``(token, {video_id: (VideoData or
        None, opener or None)})`` for :func:`adopt_learnt` in the creator (``vidlabel.torch_data`` hands it
        over with a batch). None where there is nothing new, and always in the creating process.

        With torch's default ``persistent_workers=False`` every epoch starts new workers, forked from the
        main process, which never reads when ``num_workers > 0``: each worker read every video's small arrays
        and opened every frames file with HDF5 again, every epoch (milliseconds each in a fresh fork: over a
        store of many tiny videos, 2 workers ran far slower than none; ``scripts/bench_scale.py``). Adopted by the main process, the workers of later epochs inherit it through the fork.

        Returns
        -------
        tuple of (str, dict) or None
            The store's token and, by video id, its :class:`VideoData` (None where the creator had it) and the
            opener of its frames file that knows the file's chunk index (None where not learnt here).
        """
        state = self._state
        if state is None or state.pid != os.getpid() or not state.learnt:
            return None
        with state.lock:
            news = {v: (data, opener) for v, (data, opener) in state.learnt.items()}
            state.learnt.clear()
        return self._token, news

    def close(self) -> None:
        """Close the files this process opened (they reopen on the next read)."""
        if self._state is not None and self._state.pid == os.getpid():
            self._state.close()
        self._state = None

    def __enter__(self) -> FrameStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cache(self) -> ChunkCache:
        """This process's chunk cache."""
        return self._process().cache

    # -- metadata --------------------------------------------------------------------------------------------

    @property
    def attrs(self) -> dict[str, Any]:
        """Root attributes of the (first) store."""
        return dict(self._parts[0].attrs)

    @property
    def stores(self) -> list[Path | str]:
        """The store folders (or URLs) read (one, or several for a folder of stores)."""
        return [p.folder for p in self._parts]

    @property
    def class_names(self) -> list[str]:
        """Label vocabulary of the release: ``label_index`` of regions and segments are positions in it."""
        return list(self._parts[0].attrs.get("class_names", []))

    @property
    def release_id(self) -> str | None:
        """The release exported (None for a live snapshot, or when the stores of a folder differ)."""
        ids = {p.attrs.get("release_id") for p in self._parts}
        return ids.pop() if len(ids) == 1 else None

    @property
    def frames_only(self) -> bool:
        """True for a frame cache (``vidlabel cache``): frames without regions or segments."""
        return all(bool(p.attrs.get("frames_only")) for p in self._parts)

    @property
    def video_ids(self) -> tuple[str, ...]:
        """Ids of the stored videos (each store's sorted, stores in folder order)."""
        return self._video_ids

    @property
    def index(self) -> list[tuple[str, int]]:
        """The global sample list: (video_id, frame_number) of every stored row, in store order."""
        return self._index_at(None)

    def _index_row_error(self, sample: int, row: int, video_id: str, t: int) -> FrameOutOfRangeError:
        """The error for an ``/index`` entry (sample ``sample``) naming row ``row`` of a video of ``t`` rows."""
        return FrameOutOfRangeError(
            f"/index of store {str(self.path)!r}: sample {sample} names row {row} of video {video_id!r}, out of "
            f"range [0, {t})",
            video_id=video_id,
        )

    def _index_at(self, positions: np.ndarray | None) -> list[tuple[str, int]]:
        """(video_id, frame_number) of the samples at ``positions`` (int array; None: every sample), in order.

        Reads the small arrays of the videos those samples come from (once per process).

        Raises
        ------
        FrameOutOfRangeError
            If ``/index`` names a row outside a video's stored rows (a damaged store), naming the sample, row,
            video and range.
        """
        index = self._index if positions is None else self._index[np.asarray(positions, dtype=np.int64)]
        codes, rows = index[:, 0], index[:, 1]
        # one gather from the videos' frame numbers end to end: no NumPy call per video
        uniq, inverse = np.unique(codes, return_inverse=True)
        numbers = [self.video_data(self._video_ids[c]).frame_number for c in uniq.tolist()]
        sizes = np.array([a.size for a in numbers], np.int64)
        bad = np.flatnonzero((rows < 0) | (rows >= sizes[inverse]))
        if bad.size:
            k = int(bad[0])
            sample = k if positions is None else int(positions[k])
            raise self._index_row_error(sample, int(rows[k]), self._video_ids[int(codes[k])], int(sizes[inverse[k]]))
        starts = np.cumsum(sizes) - sizes
        flat = np.concatenate(numbers).astype(np.int64) if numbers else np.zeros(0, np.int64)
        frames = flat[starts[inverse] + rows]
        ids = self._video_ids
        return [(ids[c], f) for c, f in zip(codes.tolist(), frames.tolist())]

    @property
    def rows(self) -> np.ndarray:
        """(N, 2) int64 read-only: (position in :attr:`video_ids`, stored row) of every sample."""
        return self._index

    def __len__(self) -> int:
        return int(self._index.shape[0])

    def __repr__(self) -> str:
        return (
            f"FrameStore({str(self.path)!r}, release={self.release_id!r}, videos={len(self._video_ids)}, "
            f"samples={len(self)}, stores={len(self._parts)})"
        )

    def locate(self, i: int) -> tuple[str, int]:
        """(video_id, stored row) of sample ``i``.

        Raises
        ------
        SampleIndexTypeError
            If ``i`` is not an integer (a float, a string, a bool).
        SampleOutOfRangeError
            If ``i`` is outside ``[-len(store), len(store))``.
        """
        code, row = self._index[sample_position(i, len(self), f"store {str(self.path)!r}")]
        return self._video_ids[int(code)], int(row)

    def video_attrs(self, video_id: str) -> dict[str, Any]:
        """Attributes of a stored video group (content_hash, fps, size, view, codec, chunking, ...)."""
        return dict(self.video_data(video_id).attrs)

    def video_content_hash(self, video_id: str) -> str | None:
        """Content hash of the file a stored video was decoded from, or None if the store lacks the video."""
        part = self._video_part.get(video_id)
        if part is None:
            return None
        info = self._parts[part].attrs.get("videos", {}).get(video_id)
        if info is not None and "content_hash" in info:
            return info["content_hash"]
        return self.video_data(video_id).attrs.get("content_hash")

    def check_files(self) -> int:
        """Open every stored video's file, its small arrays and its frames array's header, reading no pixels
        (``vidlabel info``), and check the frames as a read does (:func:`~vidlabel.store._store_checks.check_frames`).

        Cheaper than :func:`~vidlabel.store.verify_store`, which reads and checks every chunk; this
        finds a truncated or missing file, a video not completely written, a frames link out of the store,
        small arrays that do not fit together, and frames that are not the video's own (another unit's file
        copied over its frames file, frames of another size).

        Returns
        -------
        int
            The number of videos checked.

        Raises
        ------
        StoreIncompleteError
            If a video was not completely written.
        StoreCorruptError
            If a video's small arrays were changed after export, or its frames are not its own; the message
            is the one a read of its frames gives.
        StoreError
            If a video's file or its frames file cannot be opened (truncated, missing, not HDF5/Zarr);
            the message names the file.
        """
        state = self._process()
        for part in self._parts:
            problems = summary_problems(part.attrs.get("videos", {}), part.video_ids)
            if problems:
                raise _root_changed(part.folder, problems[0])
        with state.lock:
            for video_id in self._video_ids:
                with self._about(video_id):
                    reader = self._open_video(state, video_id)
                    try:
                        header = reader.frames_header()
                    finally:
                        reader.close()
                check_frames(self, video_id, header)
                part = self._parts[self._video_part[video_id]]
                data = self.video_data(video_id)
                own = {
                    "frames": int(data.frame_number.size),
                    "width": data.size[0],
                    "height": data.size[1],
                    "content_hash": data.attrs.get("content_hash"),
                    "labels_key": data.attrs.get("labels_key"),
                }
                problem = summary_problem(video_id, part.attrs.get("videos", {}).get(video_id, {}), own)
                if problem is not None:
                    raise _root_changed(part.folder, problem)
        return len(self._video_ids)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary: release, stores, videos, frames, classes, codec, chunking, export parameters."""
        videos: dict[str, Any] = {}
        for part in self._parts:
            videos.update(part.attrs.get("videos", {}))
        first = self._parts[0].attrs
        return {
            "path": str(self.path),
            "stores": [str(p.folder) for p in self._parts],
            "format": sorted({p.backend for p in self._parts}),
            "release": self.release_id,
            "dataset": first.get("dataset"),
            "created": first.get("created"),
            "vidlabel_version": first.get("vidlabel_version"),
            "frames_only": self.frames_only,
            "class_names": self.class_names,
            "samples": len(self),
            "videos": videos,
            "export": first.get("export", {}),
        }

    # -- per-video data ---------------------------------------------------------------------------------------

    def _backend(self, state: _ProcessState, video_id: str) -> Backend:
        part = self._video_part.get(video_id)
        if part is None:
            raise UnknownVideoError(
                f"video {video_id!r} is not in store {str(self.path)!r}; it holds: "
                + ", ".join(self._video_ids[:20])
                + (" ..." if len(self._video_ids) > 20 else ""),
                video_id=video_id,
            )
        backend = state.backends.get(part)
        if backend is None:
            folder = self._parts[part].folder
            backend = backend_for(folder, self._parts[part].backend, storage_options=self.storage_options)
            state.backends[part] = backend
        return backend

    @contextmanager
    def _about(self, video_id: str) -> Iterator[None]:
        """A :class:`~vidlabel.errors.StoreError` raised inside, opening or reading a file of video ``video_id``
        (a missing or truncated file, a link out of the store), names the video and the store first, as
        ``vidlabel verify`` does; one that names a video already passes as it is. Same class, the error chained."""
        try:
            yield
        except StoreError as err:
            if err.video_id is not None:
                raise
            again = exported_again(self, video_id)  # a file of the export before gone: not damage
            raise type(err)(
                f"video {video_id!r} of store {str(self.path)!r}: {err}" + ("" if again is None else f" ({again})"),
                path=err.path,
                video_id=video_id,
            ) from err

    def _open_video(self, state: _ProcessState, video_id: str) -> VideoReader:
        with self._about(video_id):
            reader = self._backend(state, video_id).open_video(video_id)
        if not reader.complete():
            reader.close()
            raise StoreIncompleteError(
                f"video {video_id!r} of store {str(self.path)!r} was not completely written; "
                f"rerun the {'upload' if is_url(self.path) else 'export'} to finish it",
                path=str(self.path),
                video_id=video_id,
            )
        return reader

    def video_data(self, video_id: str) -> VideoData:
        """The small arrays of a stored video (loaded on first use in each process).

        Raises
        ------
        UnknownVideoError
            If the store does not hold the video.
        StoreIncompleteError
            If the video's group was not completely written.
        StoreCorruptError
            If the arrays do not fit together (:func:`~vidlabel.store._layout.array_problems`: lengths, CSR
            offsets, ``frame_number`` order, label indices in the vocabulary, segment ranges) or differ from
            those exported (:func:`~vidlabel.store._layout.export_problems`: the video's recorded frames key
            and labels key): the store was changed after export.
        """
        state = self._process()
        data = state.data.get(video_id)
        if data is not None:
            return data
        with state.lock, self._about(video_id):
            reader = self._open_video(state, video_id)
            try:
                frames_only = bool(self._parts[self._video_part[video_id]].attrs.get("frames_only"))
                names = list(VIDEO_ARRAYS)
                if not frames_only:
                    region_fields = region_names(reader.attrs)
                    names += [f"regions/{n}" for n in region_fields] + [f"segments/{n}" for n in SEGMENT_FIELDS]
                reader.preload(names)  # one round trip for a store at a URL
                arrays = {name: reader.array(name) for name in VIDEO_ARRAYS}
                regions: dict[str, np.ndarray] = {}
                segments: dict[str, np.ndarray] = {}
                if not frames_only:
                    regions = {name: reader.array(f"regions/{name}") for name in region_fields}
                    segments = {name: reader.array(f"segments/{name}") for name in SEGMENT_FIELDS}
                attrs = dict(reader.attrs)
                try:
                    opener = reader.frames_opener()
                except StoreError:  # a bad frames link: reading the frames says so, as before
                    opener = None
            finally:
                reader.close()
            check_same_export(self, video_id, int(arrays["frame_number"].size))
            problems = video_problems(
                video_id,
                attrs,
                arrays,
                None if frames_only else regions,
                None if frames_only else segments,
                self.class_names,
            )
            if problems:
                raise StoreCorruptError(
                    f"video {video_id!r} of store {str(self.path)!r}: {'; '.join(problems)}: {STORE_CHANGED} "
                    "(`vidlabel verify` lists the damage)",
                    path=str(self.path),
                    video_id=video_id,
                )
            check_same_labels(self, video_id, attrs.get("labels_key"))
            data = VideoData(video_id, attrs, regions=regions, segments=segments, **arrays).read_only()
            state.data[video_id] = data
            if opener is not None:
                state.openers[video_id] = opener
            if state.pid != self._creator_pid:
                state.learnt.setdefault(video_id, [None, None])[0] = data
        return data

    def _frames_reader(self, state: _ProcessState, video_id: str) -> FramesReader:
        def open_frames(video_id: str) -> FramesReader:
            with state.lock, self._about(video_id):
                opener = state.openers.get(video_id)
                if opener is not None:  # the video file was read in this process (or before the fork)
                    known = _frames_index(opener) is not None
                    reader = opener()
                    if not known and _frames_index(opener) is not None and state.pid != self._creator_pid:
                        state.learnt.setdefault(video_id, [None, None])[1] = opener
                else:
                    video = self._open_video(state, video_id)
                    try:
                        reader = video.frames()
                    finally:
                        video.close()
                try:
                    check_frames(self, video_id, reader)
                except BaseException:
                    reader.close()
                    raise
                reader.verify_checksums = self.verify_checksums
                return reader

        return state.frames.get(video_id, open_frames)

    # -- frames ------------------------------------------------------------------------------------------------

    def read_rows(
        self, video_id: str, rows: Sequence[int], out: Sequence[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Stored frames of one video by row, in the order asked (repeats allowed).

        Each chunk is read once; chunks of several frames go through the chunk
        cache; chunks of lossy/compressed codecs are decoded on a thread pool.

        Parameters
        ----------
        video_id : str
        rows : sequence of int
        out : sequence of (H, W, 3) uint8 arrays, optional
            Where to put each frame (C-contiguous, one per row; a batch
            buffer's rows): one-frame chunks are decoded straight into them.

        Returns
        -------
        list of (H, W, 3) uint8
            Fresh, writable arrays (``out``'s when given).

        Raises
        ------
        FrameOutOfRangeError
            If a row is outside ``[0, T)``.
        SampleIndexTypeError
            (a TypeError) If ``rows`` is not a sequence of integers (None, 1.5 and True are refused, never
            converted).
        StoreCorruptError
            If a chunk's stored bytes fail their CRC-32C (with ``verify_checksums``), or a Zarr chunk file of
            the published store is missing, truncated or a directory; names the video, chunk, rows and store.
        StoreError
            If a chunk does not decode, or the video's file or its frames file cannot be opened (missing,
            truncated, not HDF5, a directory); names the video, the store, the file and why.
        """
        if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
            raise SampleIndexTypeError(
                f"read_rows takes a sequence of row numbers, got {rows!r} for video {video_id!r}", video_id=video_id
            )
        rows = [row_number(r, video_id) for r in rows]
        state = self._process()
        reader = self._frames_reader(state, video_id)
        t = reader.shape[0]
        for r in rows:
            row_in_range(r, t, video_id, self.path)
        if out is not None and (
            len(out) != len(rows) or any(o.shape != tuple(reader.shape[1:]) or o.dtype != np.uint8 for o in out)
        ):
            raise OptionError(f"read_rows: out must hold {len(rows)} arrays of shape {reader.shape[1:]} uint8")
        return load_rows(state, reader, rows, out, lambda err, c: chunk_error(self, err, video_id, reader, c))

    def read_clip(self, video_id: str, rows: Sequence[int] | np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The stored frames of one clip, by row, as one (T, H, W, 3) array: each run of consecutive rows inside
        a chunk is one slice copy (a whole chunk is read straight into ``out`` unless the chunk cache holds it;
        part of a chunk goes through the cache, where the next clip finds it).

        Parameters
        ----------
        video_id : str
        rows : (T,) int
            Stored rows, in clip order (repeats allowed).
        out : (T, H, W, 3) uint8, optional
            C-contiguous; receives the frames.

        Returns
        -------
        (T, H, W, 3) uint8
            ``out`` when given, else a fresh array.

        Raises
        ------
        FrameOutOfRangeError, SampleIndexTypeError, StoreCorruptError, StoreError
            As :meth:`read_rows`.
        OptionError
            If ``out`` has another shape or dtype, or is not C-contiguous.
        """
        if isinstance(rows, (str, bytes)) or not isinstance(rows, (Iterable, np.ndarray)):
            raise SampleIndexTypeError(f"read_clip takes row numbers, got {rows!r} for video {video_id!r}")
        rows = [row_number(r, video_id) for r in (rows.tolist() if isinstance(rows, np.ndarray) else rows)]
        state = self._process()
        reader = self._frames_reader(state, video_id)
        t = reader.shape[0]
        for r in rows:
            row_in_range(r, t, video_id, self.path)
        shape = (len(rows), *reader.shape[1:])
        if out is None:
            out = np.empty(shape, np.uint8)
        elif out.shape != shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
            raise OptionError(f"read_clip: out must be a C-contiguous {shape} uint8 array, got {out.shape} {out.dtype}")
        load_clip(state, reader, rows, out, lambda err, c: chunk_error(self, err, video_id, reader, c))
        return out

    def read_row(self, video_id: str, row: int) -> np.ndarray:
        """One stored frame by row: (H, W, 3) uint8.

        Raises
        ------
        FrameOutOfRangeError, SampleIndexTypeError, StoreCorruptError, StoreError
            As :meth:`read_rows` (a row that is not an integer, True among them, is a SampleIndexTypeError).
        """
        row = row_number(row, video_id)
        state = self._process()
        reader = state.frames.peek(video_id)
        if reader is None or reader.chunk_frames != 1 or not 0 <= row < reader.shape[0]:
            return self.read_rows(video_id, [row])[0]
        buf = np.empty((1, *reader.shape[1:]), np.uint8)  # one-frame chunk: decoded straight into the result
        try:
            return reader.read_chunk(row, buf)[0]
        except StoreError as err:
            raise chunk_error(self, err, video_id, reader, row) from err

    def frame(self, i: int) -> np.ndarray:
        """The stored frame of sample ``i``: (H, W, 3) uint8."""
        video_id, row = self.locate(i)
        return self.read_row(video_id, row)

    def get_frame(self, video_id: str, frame_number: int) -> np.ndarray | None:
        """The full displayed frame ``frame_number`` of a video if this store holds it, else None.

        None also when the video is not in the store, or its frames are not
        full frames (exported with a view or an output size). This is what
        ``FrameSamples(cache=...)`` reads.

        Returns
        -------
        (H, W, 3) uint8 or None

        Raises
        ------
        SampleIndexTypeError
            If ``frame_number`` is not an integer (5.5, '5' and True are refused, never taken for a frame).
        """
        number = frame_number_of(frame_number, video_id)
        if video_id not in self._video_part:
            return None
        data = self.video_data(video_id)
        if data.attrs.get("view_id") is not None or data.attrs.get("output_size") is not None:
            return None
        row = data.row_of(number)
        return None if row is None else self.read_row(video_id, row)

    def row_of(self, video_id: str, frame_number: int) -> int | None:
        """The stored row of a video's frame, or None if it is not stored.

        Raises
        ------
        SampleIndexTypeError
            If ``frame_number`` is not an integer (5.5, '5' and True are refused, never taken for a frame).
        """
        number = frame_number_of(frame_number, video_id)
        if video_id not in self._video_part:
            return None
        return self.video_data(video_id).row_of(number)

    # -- samples ------------------------------------------------------------------------------------------------

    def select(self, **options: Any) -> Any:
        """A :class:`~vidlabel.store.StoreSamples` over this store (kinds, labels, box format, ...).

        Warns
        -----
        VidlabelWarning
            If ``kinds`` names a kind the store's ``frames="annotated"`` export did not select: frames whose
            only annotation is of that kind are not in the store.
        """
        from vidlabel.store._selection import StoreSamples, warn_unexported_kinds

        samples = StoreSamples(self, **options)
        warn_unexported_kinds(self, samples.kinds)
        return samples

    def sample(self, i: int, **options: Any) -> dict[str, Any]:
        """The sample dict of stored sample ``i`` (every region; options as :meth:`select`, without its frame filter).

        Returns
        -------
        dict
            The spec's sample (``image``, ``boxes``, ``labels``, ``track_ids``,
            ``annotation_ids``, ``frame_labels``, ``video_id``, ``view_id``,
            ``frame_index``; ``masks`` with ``with_masks=True``).
        """
        from vidlabel.store._selection import StoreSamples

        video_id, row = self.locate(i)
        return StoreSamples(self, all_rows=True, **options).sample_row(video_id, row)


def open_store(
    path: str | os.PathLike[str],
    *,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    storage_options: Mapping[str, Any] | None = None,
    verify_checksums: bool = True,
) -> FrameStore:
    """Open an exported frame store, or a folder of stores read as one, locally or at a URL.

    Parameters
    ----------
    path : path or str
        The ``OUT`` folder of :func:`vidlabel.export` / ``vidlabel cache``, or a
        folder of such folders; or the fsspec URL of a Zarr store put there by
        :func:`vidlabel.store.upload` (``s3://bucket/store``, ``file:///...``).
    cache_bytes : int
        Bound of the per-process chunk cache in bytes.
    storage_options : mapping, optional
        fsspec filesystem options for a URL (credentials, endpoint, ...).
    verify_checksums : bool
        Check every frame chunk read against its stored CRC-32C (default; see :class:`FrameStore`).

    Returns
    -------
    FrameStore

    Raises
    ------
    StoreError, StoreIncompleteError, SchemaVersionError, OptionError
        See :class:`FrameStore` (reads raise :class:`~vidlabel.errors.StoreCorruptError` on a damaged chunk).
    """
    return FrameStore(path, cache_bytes=cache_bytes, storage_options=storage_options, verify_checksums=verify_checksums)
