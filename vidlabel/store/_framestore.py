"""FrameStore: one exported store, or a folder of stores read as one; frames and targets by sample or by frame.

A store is a local folder, or (Zarr only) an fsspec URL read through :mod:`vidlabel.store._remote`.
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._lru import OpenLRU
from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    SampleIndexTypeError,
    SchemaVersionError,
    StoreCorruptError,
    StoreError,
    StoreIncompleteError,
    UnknownVideoError,
    VidlabelError,
    check_flag,
    check_path,
)
from vidlabel.spec import DB_NAME
from vidlabel.store._backend import Backend, FramesHeader, FramesReader, VideoReader
from vidlabel.store._cache import DEFAULT_CACHE_BYTES, ChunkCache, check_cache_bytes
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._layout import (
    FORMAT,
    FORMAT_VERSION,
    REGION_FIELDS,
    SEGMENT_FIELDS,
    VIDEO_ARRAYS,
    class_names_problem,
    format_version_problem,
    root_videos_problem,
    summary_problem,
    summary_problems,
    video_ids_problem,
    video_problems,
)
from vidlabel.store._position import frame_number as frame_number_of
from vidlabel.store._position import row_in_range, row_number, sample_position
from vidlabel.store._remote import find_url_stores, is_url

__all__ = ["BACKENDS", "FrameStore", "VideoData", "backend_for", "find_stores", "open_store"]


def _backends() -> dict[str, type[Backend]]:
    from vidlabel.store._hdf5 import HDF5Backend
    from vidlabel.store._zarr import ZarrBackend

    return {"hdf5": HDF5Backend, "zarr": ZarrBackend}


BACKENDS: tuple[str, ...] = ("hdf5", "zarr")


def _local_only(path: Any, storage_options: Mapping[str, Any] | None) -> None:
    if storage_options:
        raise OptionError(f"storage_options apply to URLs only; {str(path)!r} is a local path")


def backend_for(
    folder: str | os.PathLike[str],
    name: str | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> Backend:
    """The backend of a store folder (detected, or ``name``'s for a new one), or of a Zarr store at a URL.

    Parameters
    ----------
    folder : path or str
        A store folder, or an fsspec URL (``s3://bucket/store``, ``file:///...``): a URL is always read
        as Zarr, through :class:`~vidlabel.store._zarr.ZarrURLBackend` (read-only).
    name : {"hdf5", "zarr"}, optional
    storage_options : mapping, optional
        fsspec filesystem options, for URLs only.

    Raises
    ------
    StoreError
        If ``folder`` holds no store and no backend name is given, or ``folder`` is a URL and
        ``name`` is ``"hdf5"`` (HDF5 stores are local only).
    OptionError
        If ``storage_options`` are given with a local path.
    """
    if is_url(folder):
        url = str(folder)
        if name == "hdf5":
            raise StoreError(
                f"HDF5 frame stores are local only, and {url!r} is a URL: use format='zarr' for object stores "
                "(export to a local folder, then upload it)",
                path=url,
            )
        if name not in (None, "zarr"):
            raise StoreError(f"unknown store format {name!r}; allowed: {', '.join(BACKENDS)}")
        from vidlabel.store._zarr import ZarrURLBackend

        return ZarrURLBackend(url, dict(storage_options or {}))
    _local_only(folder, storage_options)
    folder = Path(folder)
    classes = _backends()
    if name is not None:
        if name not in classes:
            raise StoreError(f"unknown store format {name!r}; allowed: {', '.join(BACKENDS)}")
        return classes[name](folder)
    for cls in classes.values():
        if cls.detect(folder):
            return cls(folder)
    raise StoreError(
        f"no vidlabel frame store at {str(folder)!r} (no store.h5 and no Zarr root){not_a_store_hint(folder)}",
        path=str(folder),
    )


def not_a_store_hint(path: str | os.PathLike[str]) -> str:
    """What to do with a local folder that holds no frame store but a vidlabel dataset (its database), which is
    exported into a store first, or a MediaSequence export (``vidlabel export --format mediasequence``), which
    stores' readers, info and verify do not read; "" for any other path."""
    folder = Path(path)
    try:
        if (folder / DB_NAME).is_file():
            return (
                f"; {str(folder)!r} is a vidlabel dataset folder (it holds {DB_NAME}), not an exported frame store: "
                "export it first with `vidlabel export DATASET OUT` (or vidlabel.export(Dataset.open(DATASET), OUT)) "
                "and read OUT; open the dataset itself with Dataset.open"
            )
        shards = (folder / "_plan.json").is_file() or any(folder.glob("*.tfrecord"))
    except OSError:
        return ""
    if not shards:
        return ""
    return (
        f"; {str(folder)!r} holds a MediaSequence export (TFRecord shards of tf.train.SequenceExample), which "
        "frame store readers, info and verify do not read: read it with tf.data, or import its labels with "
        "`vidlabel import DATASET mediasequence FOLDER`; export with --format hdf5 or zarr for a frame store"
    )


def find_stores(path: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None) -> list[Path | str]:
    """The store folders at ``path``: itself if it is a store, else the stores directly inside it (sorted).

    For a URL, the store URLs found there the same way (see :func:`vidlabel.store._remote.find_url_stores`).

    Parameters
    ----------
    path : path-like or URL
        A store folder, or a folder (or URL) holding stores.
    storage_options : mapping, optional
        Passed to fsspec for a URL (credentials, endpoint).

    Raises
    ------
    OptionError
        If ``path`` is no path nor URL (None, a number, an open store).
    """
    check_path(path, "find_stores", "store folder")
    if is_url(path):
        return list(find_url_stores(str(path), storage_options))
    _local_only(path, storage_options)
    path = Path(path)
    classes = _backends().values()
    if path.is_file() and path.name == "store.h5":
        path = path.parent
    if any(cls.detect(path) for cls in classes):
        return [path]
    if path.is_dir():
        return [p for p in sorted(path.iterdir()) if p.is_dir() and any(cls.detect(p) for cls in classes)]
    return []


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


@dataclass
class _Part:
    folder: Path | str  # a folder, or a URL
    backend: str
    attrs: dict[str, Any]
    video_ids: list[str]


class _ProcessState:
    """What a FrameStore opens in one process: backends, frames readers (at most ``MAX_OPEN`` open, least
    recently used closed first), each video's small arrays, the chunk cache, a thread pool."""

    MAX_OPEN = 64

    def __init__(self, cache_bytes: int) -> None:
        self.pid = os.getpid()
        self.backends: dict[int, Backend] = {}
        self.frames: OpenLRU[str, FramesReader] = OpenLRU(self.MAX_OPEN)
        self.data: dict[str, VideoData] = {}
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
        as pixels. On by default; it costs one CRC-32C pass per chunk read
        (``scripts/bench_store.py`` prints reads/s with and without it): turn
        it off only where that was measured to matter.

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
        folders = find_stores(self.path, storage_options=self.storage_options)
        if not folders:
            hint = "" if is_url(self.path) else not_a_store_hint(self.path)
            raise StoreError(f"no vidlabel frame store at {str(self.path)!r}{hint}", path=str(self.path))
        parts: list[_Part] = []
        video_part: dict[str, int] = {}
        index_parts: list[np.ndarray] = []
        video_ids: list[str] = []
        for p, folder in enumerate(folders):
            backend = backend_for(folder, storage_options=self.storage_options)
            attrs, index = backend.read_root()
            _check_root(folder, attrs)
            ids = list(attrs.get("video_ids", []))
            for v in ids:
                if v in video_part:
                    other = parts[video_part[v]].folder
                    raise StoreError(
                        f"video {v!r} is in two stores of {str(self.path)!r}: {str(other)!r} and {str(folder)!r}"
                    )
                video_part[v] = p
            parts.append(_Part(folder, backend.name, attrs, ids))
            offset = len(video_ids)
            video_ids.extend(ids)
            if index.size and (index[:, 0].min() < 0 or index[:, 0].max() >= len(ids)):
                raise StoreError(f"/index of {str(folder)!r} names videos outside [0, {len(ids)})")
            index_parts.append(np.column_stack([index[:, 0] + offset, index[:, 1]]) if index.size else index)
        names = [tuple(part.attrs.get("class_names", [])) for part in parts]
        if len(set(names)) > 1:
            raise StoreError(
                f"the stores under {str(self.path)!r} have different class names: "
                + "; ".join(f"{_name(part.folder)}: {list(n)}" for part, n in zip(parts, names))
            )
        self._parts = parts
        self._video_part = video_part
        self._video_ids = tuple(video_ids)
        self._video_code = {v: i for i, v in enumerate(video_ids)}
        self._index = np.concatenate(index_parts).astype(np.int64) if index_parts else np.zeros((0, 2), np.int64)
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
                # every video's arrays and attributes again (a video file's open took 13 ms in a fresh fork)
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
        and opened every frames file with HDF5 again, every epoch (3 ms a video's arrays and 3-4 ms a frames
        file in a fresh fork; over a store of 1,000 tiny videos, 2 workers ran at a tenth of the rate of
        none). Adopted by the main process, the workers of later epochs inherit it through the fork.

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
        # one gather from the videos' frame numbers end to end: no NumPy call per video (issue 15)
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
        (``vidlabel info``), and check the frames as a read does (:meth:`_check_frames`).

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
                self._check_frames(video_id, header)
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
            again = self._exported_again(video_id)  # a file of the export before gone: not damage
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
                    names += [f"regions/{n}" for n in REGION_FIELDS] + [f"segments/{n}" for n in SEGMENT_FIELDS]
                reader.preload(names)  # one round trip for a store at a URL
                arrays = {name: reader.array(name) for name in VIDEO_ARRAYS}
                regions: dict[str, np.ndarray] = {}
                segments: dict[str, np.ndarray] = {}
                if not frames_only:
                    regions = {name: reader.array(f"regions/{name}") for name in REGION_FIELDS}
                    segments = {name: reader.array(f"segments/{name}") for name in SEGMENT_FIELDS}
                attrs = dict(reader.attrs)
                try:
                    opener = reader.frames_opener()
                except StoreError:  # a bad frames link: reading the frames says so, as before
                    opener = None
            finally:
                reader.close()
            self._check_same_export(video_id, int(arrays["frame_number"].size))
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
            self._check_same_labels(video_id, attrs.get("labels_key"))
            data = VideoData(video_id, attrs, regions=regions, segments=segments, **arrays).read_only()
            state.data[video_id] = data
            if opener is not None:
                state.openers[video_id] = opener
            if state.pid != self._creator_pid:
                state.learnt.setdefault(video_id, [None, None])[0] = data
        return data

    def _check_frames(self, video_id: str, reader: FramesReader | FramesHeader) -> None:
        """Refuse frames that are not the video's own: another unit's (its recorded key differs from the video's
        ``frames_key``), or of another size or row count than the video's arrays say. A frames link edited or
        a file swapped after export would otherwise give another video's pictures without a word (each chunk's
        CRC is the frames file's own, so it matches). ``reader`` is the frames' reader (a read), or only their
        header (:meth:`check_files`).

        Raises
        ------
        StoreCorruptError
            Naming the video, the store and the frames file.
        """
        data = self.video_data(video_id)
        where = f"video {video_id!r} of store {str(self.path)!r}: its frames {str(reader_path(reader))!r}"
        want_key, key = data.attrs.get("frames_key"), reader.unit_key
        problem = None
        want_codec = data.attrs.get("codec")
        if want_key is not None and key is not None and key != want_key:
            problem = f"are frames unit {key!r}, not the video's own unit {want_key!r}"
        elif isinstance(reader, FramesReader) and isinstance(want_codec, str) and reader.codec.spec != want_codec:
            # the codec is part of the unit (its pixel key), but the file's codec attribute is what a read decodes by
            problem = f"say codec {reader.codec.spec!r}, not the video's codec {want_codec!r}"
        else:
            width, height = data.size
            want = (int(data.frame_number.size), height, width, 3)
            if tuple(reader.shape) != want:
                problem = f"have shape {tuple(reader.shape)}, not the video's {want} (T, H, W, 3)"
        if problem is not None:
            raise StoreCorruptError(
                f"{where} {problem}: {self._exported_again(video_id) or STORE_CHANGED}",
                path=str(self.path),
                video_id=video_id,
            )

    def _check_same_export(self, video_id: str, rows: int) -> None:
        """Refuse a video's small arrays, just read, of another export than the one this FrameStore opened: the
        store exported again into the same folder since (its stored rows differ from the number the root read at
        open records, and so does the root now). The index read at open would otherwise name rows of the new
        export: another frame each, its targets with it, without a word (a DataLoader worker started by spawn,
        or a video first read after the export).

        Raises
        ------
        StoreError
            Saying when the store was exported again, and to open it again.
        """
        part = self._video_part.get(video_id)
        recorded = self._parts[part].attrs.get("videos", {}).get(video_id) if part is not None else None
        if not isinstance(recorded, dict) or recorded.get("frames") in (None, rows):
            return
        again = self._exported_again(video_id)
        if again is not None:
            raise StoreError(
                f"video {video_id!r} of store {str(self.path)!r} holds {rows} stored frames, not the "
                f"{recorded['frames']} its index was read with: {again}",
                path=str(self.path),
                video_id=video_id,
            )

    def _check_same_labels(self, video_id: str, key: Any) -> None:
        """Refuse a video file whose ``labels_key`` is not the one the store's root records for it: the file of
        another export of the video (another release, other options) copied into its place, whose boxes and
        labels would be read under this store's release without a word (the file is sound in itself). A root
        written before roots recorded the key (2026-12) is not checked.

        Raises
        ------
        StoreCorruptError
            Naming the video, the store and both keys (a StoreError if the store was exported again since it
            was opened).
        """
        part = self._video_part.get(video_id)
        recorded = self._parts[part].attrs.get("videos", {}).get(video_id) if part is not None else None
        if not isinstance(recorded, dict) or "labels_key" not in recorded or recorded["labels_key"] == key:
            return
        problem = (
            f"video {video_id!r} of store {str(self.path)!r}: its file holds labels {key!r}, not the "
            f"{recorded['labels_key']!r} the store's root records for it (a file of another export of the video, "
            "such as another release's)"
        )
        again = self._exported_again(video_id)
        if again is not None:
            raise StoreError(f"{problem}: {again}", path=str(self.path), video_id=video_id)
        raise StoreCorruptError(f"{problem}: {STORE_CHANGED}", path=str(self.path), video_id=video_id)

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
                    self._check_frames(video_id, reader)
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
        cf = reader.chunk_frames
        by_chunk: dict[int, list[int]] = {}
        for k, r in enumerate(rows):
            by_chunk.setdefault(r // cf, []).append(k)
        if out is not None and (
            len(out) != len(rows) or any(o.shape != tuple(reader.shape[1:]) or o.dtype != np.uint8 for o in out)
        ):
            raise OptionError(f"read_rows: out must hold {len(rows)} arrays of shape {reader.shape[1:]} uint8")
        got: list[np.ndarray | None] = [None] * len(rows)

        def dest(k: int) -> np.ndarray:
            return np.empty(reader.shape[1:], np.uint8) if out is None else out[k]

        def load(c: int) -> None:
            try:
                load_chunk(c)
            except StoreError as err:  # a chunk that does not decode or fails its checksum: say which video and rows
                raise self._chunk_error(err, video_id, reader, c) from err

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
        if len(chunks) > 1 and reader.codec.name != "none":
            if state.pool is None:
                state.pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
            list(state.pool.map(load, chunks))
        else:
            for c in chunks:
                load(c)
        return got  # type: ignore[return-value]

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
            raise self._chunk_error(err, video_id, reader, row) from err

    def _chunk_error(self, err: StoreError, video_id: str, reader: FramesReader, c: int) -> StoreError:
        """``err`` of reading chunk ``c`` of a video, as the same error class naming the video, chunk, rows, store."""
        cf = reader.chunk_frames
        rows_of = f"rows {c * cf}..{c * cf + reader.chunk_rows(c) - 1}"
        remedy = "`vidlabel verify` checks every chunk"
        if isinstance(err, StoreCorruptError):
            remedy = "`vidlabel verify` lists every damaged chunk; export again into an empty folder to rewrite it"
        said = "`vidlabel verify`" in str(err)  # the error gives its own remedy: one is enough
        again = self._exported_again(video_id)
        if again is not None:  # not damage: this process holds the export before it
            remedy, said = again, False
        return type(err)(
            f"video {video_id!r}, chunk {c} ({rows_of}) of store {str(self.path)!r}: {err}"
            + ("" if said else f" ({remedy})"),
            path=str(self.path),
            video_id=video_id,
        )

    def _exported_again(self, video_id: str) -> str | None:
        """Where a read failed: what to do if the store part holding ``video_id`` was exported again (or is being
        exported) since this FrameStore was opened, judged by its root's attributes (``created`` has whole seconds:
        two exports in one second differ in their options or videos, or store the same chunks); else None."""
        part = self._parts[self._video_part[video_id]] if video_id in self._video_part else None
        if part is None:
            return None
        try:
            attrs, _ = backend_for(part.folder, storage_options=self.storage_options).read_root()
        except (VidlabelError, OSError):
            return None
        created, opened = attrs.get("created"), part.attrs.get("created")
        if attrs == part.attrs:
            return None
        if not attrs:
            now = "removed, or is being exported again,"
        elif not attrs.get("complete", True):
            now = "is being exported again"
        else:
            now = f"was exported again at {created}"
        return f"the store {now} after this process opened it (the export of {opened}): open it again"

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


def reader_path(reader: FramesReader | FramesHeader) -> Any:
    """Identity of a frames reader for cache keys and messages (its path, file or URL)."""
    return getattr(reader, "path", id(reader))


def _name(folder: Path | str) -> str:
    """Last part of a folder or URL."""
    return folder.name if isinstance(folder, Path) else folder.rstrip("/").rsplit("/", 1)[-1]


def _root_changed(folder: Path | str, problem: str) -> StoreCorruptError:
    """The error for a store root edited after export (``problem``: what is wrong with it, in a phrase)."""
    return StoreCorruptError(
        f"frame store {str(folder)!r}: {problem}: {STORE_CHANGED}",
        path=str(folder),
    )


def _check_root(folder: Path | str, attrs: dict[str, Any]) -> None:
    # a URL's store comes from an upload, or from an export straight into it (whose root holds its token)
    job = "upload (vidlabel upload)" if is_url(folder) and "export_token" not in attrs else "export"
    if not attrs:
        raise StoreIncompleteError(
            f"frame store {str(folder)!r} has no root yet: its {job} did not finish; rerun it to resume",
            path=str(folder),
        )
    if attrs.get("format") != FORMAT:
        raise StoreError(f"{str(folder)!r} is not a vidlabel frame store (format {attrs.get('format')!r})")
    version = attrs.get("format_version", 0)
    problem = format_version_problem(version)
    if problem is not None:
        raise _root_changed(folder, problem)
    if version > FORMAT_VERSION:
        raise SchemaVersionError(
            f"frame store {str(folder)!r} has format version {version}; this vidlabel reads up to {FORMAT_VERSION}"
        )
    problem = (
        class_names_problem(attrs.get("class_names", []))
        or video_ids_problem(attrs.get("video_ids", []))
        or root_videos_problem(attrs.get("videos", {}))
    )
    if problem is not None:
        raise _root_changed(folder, problem)
    if attrs.get("complete") is not True and attrs.get("failed"):
        raise StoreIncompleteError(
            f"frame store {str(folder)!r} is incomplete: its {job} failed: {attrs['failed']}", path=str(folder)
        )
    if attrs.get("complete") is not True:
        raise StoreIncompleteError(
            f"frame store {str(folder)!r} is incomplete: its {job} was interrupted or is still running; "
            f"rerun the same {job.split()[0]} command to resume it",
            path=str(folder),
        )


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
