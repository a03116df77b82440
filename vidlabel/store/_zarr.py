"""The Zarr (v3) backend: the store folder is one Zarr group holding exactly the layout.

On disk::

    OUT/zarr.json                  root group attributes (``complete`` last)
    OUT/index/                     (N, 2) int64
    OUT/videos/<video_id>/         a group per video: attributes, small arrays, regions/, segments/,
                                   frames/ (one file per chunk: c.<i>.0.0.0), frames_crc32c/
    OUT/.partial/                  work in progress (frames units, unpublished groups); deleted at the end
    OUT/.vidlabel-lock             the single-writer lock

A worker process writes a video's frames into ``.partial/frames-<key>/``; the
parent adds the other arrays in ``.partial/video-<id>/``, moves the frames in,
and renames the group into ``videos/`` (the old group, if any, goes to
``.trash`` first). A new export whose frames key matches a published group
hard-links that group's chunk files (copies where links are unsupported), so
it decodes nothing. Small arrays use the ``bytes`` + ``crc32c`` codecs and are
read directly from their single chunk file (the Zarr API costs ~3 ms per
array); frame chunks are read directly from their files and decoded by
:mod:`vidlabel.store._codecs`. ``png`` and ``jpeg`` frames declare the codecs
``vidlabel.png`` / ``vidlabel.jpeg`` (:mod:`vidlabel.store._zarr_codecs`, found by Zarr through the
``zarr.codecs`` entry points of the installed package), so ``zarr.open_array`` reads them too. Nothing here
imports Zarr until a large array is read with it: an HDF5 export never pays Zarr's import (0.2 s).
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import OptionError, StoreCorruptError, StoreError, StoreLockedError
from vidlabel.store._backend import (
    Backend,
    FramesReader,
    FramesWriter,
    VideoReader,
    chunk_missing_problem,
    chunk_size_problem,
    folder_size,
    frames_shape_problem,
    node_name,
    node_video_id,
)
from vidlabel.store._codecs import Codec
from vidlabel.store._fs import (
    STORE_CHANGED,
    fsync_dir,
    inside_store,
    link_or_copy_tree,
    open_no_follow,
    plain_name,
    publish,
    refuse_overdeclared,
    remove,
)
from vidlabel.store._layout import index_rows
from vidlabel.store._remote import ObjectStore, StoreConflict, is_url, parse_json

__all__ = ["ZarrBackend", "ZarrURLBackend"]

PARTIAL = ".partial"
#: Where a store written straight into an object store keeps its frames units (``units/<frames_key>/``).
UNITS = "units"
TRASH = ".trash"


# -- zarr.json helpers ----------------------------------------------------------------------------------------


def damaged_group(store: str, video_id: str, where: str) -> StoreCorruptError:
    """The error of a video group whose ``zarr.json`` is there but is no JSON object of Zarr metadata."""
    return StoreCorruptError(
        f"frame store {store!r}: the group of video {video_id!r} is damaged: its metadata {where!r} is not a JSON "
        f"object of Zarr metadata: {STORE_CHANGED}",
        path=where,
        video_id=video_id,
    )


def _read_meta(path: Path, root: Path | None = None) -> dict[str, Any] | None:
    """The ``zarr.json`` of a group or array folder (None if missing or unreadable); with ``root``, a folder or
    file that leads outside store folder ``root`` (a symbolic link) is refused (StoreError)."""
    if root is not None:
        inside_store(root, path / "zarr.json", "Zarr metadata")
    try:
        data = (path / "zarr.json").read_bytes()
    except OSError:
        return None
    return parse_json(data, str(path / "zarr.json"))


def _read_file(path: Path, what: str) -> bytes:
    """The bytes of a chunk file, refusing a symbolic link in its place (its folder was checked)."""
    fd = open_no_follow(path, what)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _write_meta(path: Path, meta: dict[str, Any]) -> None:
    """Write ``zarr.json`` atomically (temporary file, then rename)."""
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".zarr.json.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path / "zarr.json")


def _set_attrs(path: Path, attrs: dict[str, Any]) -> None:
    meta = _read_meta(path)
    if meta is None:
        meta = {"zarr_format": 3, "node_type": "group", "attributes": {}}
    meta["attributes"] = {**meta.get("attributes", {}), **attrs}
    _write_meta(path, meta)


def _new_group(path: Path, attrs: dict[str, Any] | None = None) -> None:
    _write_meta(path, {"zarr_format": 3, "node_type": "group", "attributes": dict(attrs or {})})


def _array_objects(arr: np.ndarray) -> dict[str, bytes]:
    """A small array in one chunk, ``bytes`` (little-endian) + ``crc32c`` codecs: its objects by key suffix.

    ``{"zarr.json": ..., "c/0": ...}`` (no chunk object for an empty array); the bytes depend only on the array.
    """
    import google_crc32c

    arr = np.ascontiguousarray(arr)
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.itemsize > 1 else arr.dtype
    codecs: list[dict[str, Any]] = [
        {"name": "bytes", "configuration": {"endian": "little"}} if arr.dtype.itemsize > 1 else {"name": "bytes"},
        {"name": "crc32c"},
    ]
    chunk_shape = [max(1, n) for n in arr.shape]
    fill: Any = False if arr.dtype == np.bool_ else (0.0 if arr.dtype.kind == "f" else 0)
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(arr.shape), "data_type": arr.dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs, "attributes": {}, "storage_transformers": [],
    }  # fmt: skip
    out = {"zarr.json": _meta_bytes(meta)}
    if arr.size:
        data = arr.astype(dtype, copy=False).tobytes()
        out[_small_chunk_key(arr.shape)] = data + google_crc32c.value(data).to_bytes(4, "little")
    return out


def _meta_bytes(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, indent=2).encode("utf-8")


def _write_array(path: Path, arr: np.ndarray) -> None:
    """A small array in one chunk, ``bytes`` (little-endian) + ``crc32c`` codecs (see :func:`_array_objects`)."""
    objects = _array_objects(arr)
    _write_meta(path, parse_json(objects.pop("zarr.json"), str(path / "zarr.json")) or {})
    for name, data in objects.items():
        chunk = path / name
        chunk.parent.mkdir(parents=True, exist_ok=True)
        with open(chunk, "wb") as fh:
            fh.write(data)


def _small_chunk_key(shape: Sequence[int]) -> str:
    """Key of the single chunk of a small array, relative to the array (``c/0`` for 1-D, ``c/0/0`` for 2-D)."""
    return "c/" + "/".join("0" for _ in shape)


#: The data types of a store's arrays (vidlabel's small arrays and frames; NumPy names, as Zarr v3 writes them).
_DATA_TYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"}
)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _array_problem(meta: dict[str, Any]) -> str | None:
    """A phrase when an array's ``zarr.json`` is not one a store's arrays have (shape, chunk shape, data type and
    codecs of the right kinds), else None. Reading such metadata raised Python's own KeyError, TypeError or
    ZeroDivisionError, or allocated what a shape of 10**12 asked for."""
    shape = meta.get("shape")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        return f"its shape {_short(shape)} is not a list of whole numbers >= 0"
    grid = meta.get("chunk_grid")
    conf = grid.get("configuration") if isinstance(grid, dict) else None
    chunk = conf.get("chunk_shape") if isinstance(conf, dict) else None
    if (
        not isinstance(chunk, list)
        or len(chunk) != len(shape)
        or not all(type(c) is int and 1 <= c <= max(1, n) for c, n in zip(chunk, shape, strict=False))
    ):
        return f"its chunk shape {_short(chunk)} is not a whole number in [1, max(1, n)] per dimension of {shape}"
    if meta.get("data_type") not in _DATA_TYPES:
        return f"its data type {_short(meta.get('data_type'))} is not one of {', '.join(sorted(_DATA_TYPES))}"
    codecs = meta.get("codecs", [])
    if not isinstance(codecs, list) or not all(isinstance(c, dict) for c in codecs):
        return f"its codecs {_short(codecs)} are not a list of codec objects"
    return None


def _check_array(meta: dict[str, Any], where: str) -> None:
    """Refuse array metadata with :func:`_array_problem` (StoreCorruptError naming ``where``)."""
    problem = _array_problem(meta)
    if problem is not None:
        raise StoreCorruptError(f"Zarr array {where!r}: {problem}: {STORE_CHANGED}", path=where)


def _frames_layout(meta: dict[str, Any], where: str) -> tuple[tuple[int, ...], int, str, dict[str, Any]]:
    """(shape, chunk_frames, codec name, attributes) of a ``frames`` array's metadata.

    Raises
    ------
    StoreCorruptError
        If it is not that of frames: (T, H, W, 3) uint8 chunked along T alone, ``chunk_frames`` in
        ``[1, max(1, T)]`` (a chunk of 10**9 frames was allocated on the first read), sides and frame count
        within what a video may have (:func:`~vidlabel.store._backend.frames_shape_problem`), a codec named.
    """
    problem = _array_problem(meta)
    attrs = meta.get("attributes", {})
    if problem is None:
        shape, chunk = meta["shape"], meta["chunk_grid"]["configuration"]["chunk_shape"]
        if len(shape) != 4 or shape[3] != 3 or meta["data_type"] != "uint8" or chunk[1:] != shape[1:]:
            problem = (
                f"it is {meta['data_type']} of shape {shape} in chunks of {chunk}, not (T, H, W, 3) uint8 frames "
                "in chunks of whole frames"
            )
        elif (sides := frames_shape_problem(tuple(shape), chunk[0])) is not None:
            problem = sides
        elif not isinstance(attrs, dict) or not isinstance(attrs.get("codec"), str):
            problem = f"its attributes {_short(attrs)} name no codec"
    if problem is not None:
        raise StoreCorruptError(f"frames array {where!r}: {problem}: {STORE_CHANGED}", path=where)
    return tuple(meta["shape"]), int(meta["chunk_grid"]["configuration"]["chunk_shape"][0]), attrs["codec"], attrs


def _declared_bytes(meta: dict[str, Any]) -> int:
    """Bytes of the whole array its checked metadata declares (Python ints: no overflow)."""
    n = np.dtype(meta["data_type"]).itemsize
    for d in meta["shape"]:
        n *= d
    return int(n)


def _is_small(meta: dict[str, Any], where: str) -> bool:
    """True for an array written by :func:`_write_array` (one chunk, ``bytes`` + ``crc32c``).

    Raises
    ------
    StoreCorruptError
        If the metadata is not that of an array (:func:`_array_problem`), naming ``where``.
    """
    _check_array(meta, where)
    shape = tuple(meta["shape"])
    names = [c.get("name") for c in meta.get("codecs", [])]
    chunk_shape = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    return names == ["bytes", "crc32c"] and chunk_shape == tuple(max(1, n) for n in shape)


def _decode_small(meta: dict[str, Any], data: bytes | None, where: str) -> np.ndarray:
    """The array of a :func:`_is_small` array's chunk bytes (None: no chunk object).

    vidlabel writes the chunk of every non-empty small array (:func:`_array_objects`), so a missing one is
    damage, never Zarr's "all fill value": read as zeros, a store whose ``index`` chunk was deleted gave every
    sample as frame 0 of its first video.

    Raises
    ------
    StoreCorruptError
        If a non-empty array has no chunk (names the chunk).
    StoreError
        If the chunk fails its CRC-32C.
    """
    import google_crc32c

    _check_array(meta, where)
    shape = tuple(int(n) for n in meta["shape"])
    dtype = np.dtype(meta["data_type"])
    if dtype.itemsize > 1:
        dtype = dtype.newbyteorder("<")
    if data is None:
        if math.prod(shape):
            chunk = f"{where.rstrip('/')}/{_small_chunk_key(shape)}"
            raise StoreCorruptError(
                f"chunk {chunk!r} of Zarr array {where!r} ({'x'.join(map(str, shape))} {dtype.name}) is missing: "
                f"{STORE_CHANGED}",
                path=chunk,
            )
        return np.zeros(shape, dtype=dtype.newbyteorder("="))
    want = _declared_bytes(meta) + 4
    if len(data) != want:
        raise StoreCorruptError(
            f"chunk of Zarr array {where!r} ({'x'.join(map(str, shape))} {dtype.name}) holds {len(data)} bytes, not "
            f"the {want} its shape and type take with the checksum: {STORE_CHANGED}",
            path=where,
        )
    body, crc = data[:-4], int.from_bytes(data[-4:], "little")
    if google_crc32c.value(body) != crc:
        raise StoreError(f"checksum mismatch in Zarr array {where!r}: the chunk is corrupt", path=where)
    return np.frombuffer(body, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="), copy=True)


def _open_large_array(where: str, storage_options: dict[str, Any] | None = None) -> Any:
    """A Zarr array of more than one chunk, opened read-only with the Zarr API (imported here, on first use: an
    HDF5 path never pays its import), vidlabel's picture codecs registered even without entry points."""
    import zarr

    import vidlabel.store._zarr_codecs  # noqa: F401

    if storage_options is None:
        return zarr.open_array(where, mode="r")
    return zarr.open_array(where, mode="r", storage_options=storage_options)


def _read_array(path: Path, root: Path | None = None) -> np.ndarray:
    """Read a small array written by :func:`_write_array` (other encodings go through the Zarr API); with
    ``root``, an array folder or chunk file leading outside store folder ``root`` is refused (StoreError)."""
    if root is not None:
        inside_store(root, path, "Zarr array")
    meta = _read_meta(path, root)
    if meta is None or meta.get("node_type") != "array":
        raise StoreError(f"no Zarr array at {str(path)!r}", path=str(path))
    if not _is_small(meta, str(path)):
        # a multi-chunk array (one vidlabel did not write, e.g. rewritten with zarr-python): Zarr allocates its shape
        refuse_overdeclared(
            f"Zarr array {str(path)!r} declares shape {meta['shape']} {meta['data_type']}", _declared_bytes(meta),
            folder_size(path), "its folder holds", str(path),
        )  # fmt: skip
        return np.asarray(_open_large_array(str(path))[...])
    try:
        data: bytes | None = _read_file(path / _small_chunk_key(meta["shape"]), "chunk file")
    except FileNotFoundError:
        data = None
    return _decode_small(meta, data, str(path))


def _frames_meta(shape: tuple[int, ...], chunk_frames: int, codec: Codec, attrs: dict[str, Any]) -> dict[str, Any]:
    codecs: list[dict[str, Any]]
    if codec.name == "none":
        codecs = [{"name": "bytes"}]
    elif codec.name == "lz4":
        blosc = {"typesize": 1, "cname": "lz4", "clevel": 1, "shuffle": "noshuffle", "blocksize": 0}
        codecs = [{"name": "bytes"}, {"name": "blosc", "configuration": blosc}]
    elif codec.name == "zstd":
        codecs = [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": codec.level or 1, "checksum": False}}]
    elif codec.name == "gzip":
        codecs = [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": codec.level or 1}}]
    else:
        conf = {"quality": codec.level} if codec.name == "jpeg" else {}
        codecs = [{"name": f"vidlabel.{codec.name}", "configuration": conf}]
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [chunk_frames, *shape[1:]]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}},
        "fill_value": 0, "codecs": codecs, "attributes": attrs, "storage_transformers": [],
    }  # fmt: skip


def _recorded_id(meta: Any) -> Any:
    """The ``video_id`` a video group's metadata records (None if it records none)."""
    attrs = meta.get("attributes") if isinstance(meta, dict) else None
    return attrs.get("video_id") if isinstance(attrs, dict) else None


def _chunk_path(frames_dir: Path, index: int) -> Path:
    # chunk key encoding "default" with separator ".": one flat folder of chunk files, no folder per chunk
    return frames_dir / f"c.{index}.0.0.0"


# -- frames -------------------------------------------------------------------------------------------------------


class ZarrFramesReader(FramesReader):
    """Chunks of a ``frames`` array read from their files."""

    backend = "zarr"

    def __init__(self, frames_dir: Path, root: Path | None = None) -> None:
        self.root = frames_dir.parent.parent.parent if root is None else root  # OUT/videos/<id>/frames
        frames_dir = inside_store(self.root, frames_dir, "frames array")
        meta = _read_meta(frames_dir, self.root)
        if meta is None:
            raise StoreError(f"no Zarr frames array at {str(frames_dir)!r}", path=str(frames_dir))
        shape, chunk_frames, codec, attrs = _frames_layout(meta, str(frames_dir))
        super().__init__(shape, chunk_frames, codec)
        self.path = frames_dir
        self.attrs = attrs
        self.unit_key = attrs.get("key")

    def stored_checksums(self) -> np.ndarray:
        return _read_array(self.path.parent / "frames_crc32c", self.root)

    def chunk_file(self, index: int) -> str:
        return str(_chunk_path(self.path, index))

    def raw_chunk(self, index: int) -> bytes:
        try:
            return _read_file(_chunk_path(self.path, index), "chunk file")
        except FileNotFoundError as err:
            raise self._missing(index) from err

    def _missing(self, index: int) -> StoreError:
        """The error for chunk ``index`` whose file is not there: StoreCorruptError in a complete unit (every
        chunk of one is written before ``complete``, so the store was damaged), else StoreError."""
        problem = chunk_missing_problem(self, index)
        if self.attrs.get("complete") is True:
            return StoreCorruptError(problem, path=str(self.path))
        return StoreError(problem, path=str(self.path))

    def read_chunk(self, index: int, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty((self.chunk_frames, *self.shape[1:]), dtype=np.uint8)
        if self.codec.name == "none":
            try:
                fd = open_no_follow(_chunk_path(self.path, index), "chunk file")
                with os.fdopen(fd, "rb", buffering=0) as fh:
                    n = fh.readinto(memoryview(out.reshape(-1)))  # type: ignore[arg-type]
            except FileNotFoundError as err:
                raise self._missing(index) from err
            problem = chunk_size_problem(self, index, n)
            if problem is not None:
                raise StoreCorruptError(problem, path=str(self.path))
            self.check_chunk(index, out)  # the bytes returned are the stored bytes: check those
            return out
        return super().read_chunk(index, out)  # raw_chunk, check_chunk, decode


class ZarrFramesWriter(FramesWriter):
    """Writes ``.partial/frames-<key>.<attempt>/`` (a group with frames, frames_crc32c, frame_number), renamed
    to ``.partial/frames-<key>/`` when complete.

    Each attempt writes its own folder, so two attempts at one unit (an engine that runs a task twice) never
    write into each other's files; the first to finish publishes, a later one finds it there and drops its own.
    """

    backend = "zarr"

    def __init__(
        self, folder: Path, key: str, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec,
        attrs: dict[str, Any],
    ) -> None:  # fmt: skip
        self.final = folder / PARTIAL / f"frames-{key}"
        self.trash = folder / TRASH
        self.dir = folder / PARTIAL / f"frames-{key}.{uuid.uuid4().hex[:12]}"
        self.attrs = {**attrs, "key": key, "codec": codec.spec, "chunk_frames": chunk_frames}
        _new_group(self.dir, {k: v for k, v in self.attrs.items()})
        _write_meta(self.dir / "frames", _frames_meta(shape, chunk_frames, codec, self.attrs))
        self._made: set[int] = set()

    def write_chunk(self, index: int, data: bytes | np.ndarray) -> None:
        path = _chunk_path(self.dir / "frames", index)
        with open(path, "wb") as fh:
            fh.write(data)  # type: ignore[arg-type]

    def commit(self, *, frame_number: np.ndarray, crc32c: np.ndarray) -> None:
        _write_array(self.dir / "frame_number", np.asarray(frame_number, dtype=np.int64))
        _write_array(self.dir / "frames_crc32c", np.asarray(crc32c, dtype=np.uint32))
        meta = _read_meta(self.dir / "frames")
        assert meta is not None
        meta["attributes"]["complete"] = True
        _write_meta(self.dir / "frames", meta)
        _set_attrs(self.dir, {"complete": True})
        fsync_dir(self.dir)
        if (_read_meta(self.final) or {}).get("attributes", {}).get("complete") is True:
            remove(self.dir)  # another attempt published the same bytes first
            return
        try:
            publish(self.dir, self.final, trash=self.trash)  # an unfinished folder there is an old layout's
        except OSError:
            if (_read_meta(self.final) or {}).get("attributes", {}).get("complete") is not True:
                raise
            remove(self.dir)

    def abort(self) -> None:
        remove(self.dir)


# -- videos ------------------------------------------------------------------------------------------------------


class ZarrVideoReader(VideoReader):
    """A published video group."""

    def __init__(self, path: Path, root: Path | None = None) -> None:
        self.root = path.parent.parent if root is None else root  # OUT/videos/<id>
        self.path = inside_store(self.root, path, "video group")
        meta = _read_meta(self.path, self.root)
        if meta is None:
            raise StoreError(f"no Zarr group at {str(path)!r}", path=str(path))
        self.attrs = dict(meta.get("attributes", {}))

    def array(self, name: str) -> np.ndarray:
        return _read_array(self.path / name, self.root)

    def frames(self) -> ZarrFramesReader:
        return ZarrFramesReader(self.path / "frames", self.root)

    def frames_opener(self) -> Callable[[], ZarrFramesReader]:
        return functools.partial(ZarrFramesReader, self.path / "frames", self.root)


class ZarrBackend(Backend):
    """The Zarr layout described in this module's docstring."""

    name = "zarr"

    @classmethod
    def detect(cls, folder: Path) -> bool:
        meta = _read_meta(folder)
        return bool(meta and meta.get("node_type") == "group" and meta.get("attributes", {}).get("format"))

    def read_root(self) -> tuple[dict[str, Any], np.ndarray]:
        meta = _read_meta(self.folder, self.folder)
        if meta is None:
            return {}, np.zeros((0, 2), np.int64)
        attrs = dict(meta.get("attributes", {}))
        index = np.zeros((0, 2), np.int64)
        if (self.folder / "index" / "zarr.json").exists():
            index = index_rows(_read_array(self.folder / "index", self.folder), str(self.folder))
        return attrs, index

    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        remove(self.folder / "index")
        _new_group(self.folder, {**attrs, "complete": False})
        if _read_meta(self.folder / "videos") is None:
            _new_group(self.folder / "videos")

    def write_root(self, attrs: dict[str, Any], index: np.ndarray, video_ids: list[str]) -> None:
        remove(self.folder / "index")
        _write_array(self.folder / "index", np.asarray(index, dtype=np.int64).reshape(-1, 2))
        if _read_meta(self.folder / "videos") is None:
            _new_group(self.folder / "videos")
        _new_group(self.folder, {**attrs, "complete": False})
        fsync_dir(self.folder)
        _set_attrs(self.folder, {"complete": True})

    # -- frames units -----------------------------------------------------------------------------------------------

    def _unit_dirs(self) -> dict[str, Path]:
        """Where each complete frames unit is: a published group's frames, or a finished partial unit."""
        found: dict[str, Path] = {}
        videos = self.folder / "videos"
        if videos.is_dir():
            for group in sorted(videos.iterdir()):
                key = self._complete_unit_key(group / "frames")  # a group leading outside the store is refused
                if key:
                    found.setdefault(plain_name(key, "frames unit key", str(group / "frames" / "zarr.json")), group)
        partial = self.folder / PARTIAL
        if partial.is_dir():
            for unit in sorted(partial.glob("frames-*")):
                key = self._complete_unit_key(unit)
                if key and key == unit.name[len("frames-") :]:
                    found.setdefault(key, unit)
        return found

    def _complete_unit_key(self, where: Path) -> str | None:
        """The key of the complete frames unit whose group is ``where`` (its ``zarr.json`` attributes), else None."""
        attrs = (_read_meta(where, self.folder) or {}).get("attributes", {})
        return attrs["key"] if attrs.get("complete") is True and attrs.get("key") else None

    def unit_published(self, key: str, video_id: str | None = None) -> bool:
        # with the video: its finished partial unit, or its published group (issue 15: a scan of every group per
        # export task made a local Zarr export quadratic in the number of videos); without, every unit
        if self._complete_unit_key(self.folder / PARTIAL / f"frames-{key}") == key:
            return True
        if video_id is None:
            return key in self._unit_dirs()
        return self._complete_unit_key(self._video_path(video_id) / "frames") == key

    def frames_units(self) -> dict[str, dict[str, Any]]:
        out = {}
        for key, where in self._unit_dirs().items():
            meta = _read_meta(where / "frames", self.folder)
            if meta is not None:
                out[key] = dict(meta.get("attributes", {}))
        return out

    def open_frames_unit(self, key: str) -> ZarrFramesReader:
        where = self._unit_dirs().get(key)
        if where is None:
            raise StoreError(f"frame store {str(self.folder)!r} has no frames unit {key!r}")
        return ZarrFramesReader(where / "frames", self.folder)

    def unit_frame_number(self, key: str) -> np.ndarray:
        where = self._unit_dirs().get(key)
        if where is None:
            raise StoreError(f"frame store {str(self.folder)!r} has no frames unit {key!r}")
        return _read_array(where / "frame_number", self.folder)

    def frames_writer(
        self, key: str, *, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, attrs: dict[str, Any]
    ) -> ZarrFramesWriter:
        return ZarrFramesWriter(self.folder, key, shape, chunk_frames, codec, attrs)

    # -- videos ------------------------------------------------------------------------------------------------------

    def _video_path(self, video_id: str) -> Path:
        return self.folder / "videos" / node_name(video_id)

    def video_ids(self) -> list[str]:
        videos = self.folder / "videos"
        if not videos.is_dir():
            return []
        names = [p.name for p in videos.iterdir() if (p / "zarr.json").exists()]
        found = (node_video_id(n, functools.partial(self._recorded_id, n)) for n in names)
        return sorted(v for v in found if v is not None)

    def _recorded_id(self, name: str) -> Any:
        """The ``video_id`` the group of node ``name`` records (None if it cannot be read)."""
        return _recorded_id(_read_meta(self.folder / "videos" / name, self.folder))

    def video_attrs(self, video_id: str) -> dict[str, Any] | None:
        meta = _read_meta(self._video_path(video_id), self.folder)
        return None if meta is None else dict(meta.get("attributes", {}))

    def write_video(
        self, video_id: str, *, attrs: dict[str, Any], arrays: dict[str, np.ndarray], frames_key: str
    ) -> None:
        final = self._video_path(video_id)
        partial = self.folder / PARTIAL / f"video-{node_name(video_id)}"
        remove(partial)
        _new_group(partial, {k: v for k, v in attrs.items() if k != "complete"})
        for sub in {name.rpartition("/")[0] for name in arrays if "/" in name}:
            _new_group(partial / sub)
        for name, arr in arrays.items():
            _write_array(partial / name, arr)
        unit = self.folder / PARTIAL / f"frames-{frames_key}"
        if (unit / "zarr.json").exists() and (_read_meta(unit) or {}).get("attributes", {}).get("complete"):
            os.replace(unit / "frames", partial / "frames")
            os.replace(unit / "frames_crc32c", partial / "frames_crc32c")
            remove(unit)
        else:
            source = self._unit_dirs().get(frames_key)
            if source is None:
                raise StoreError(
                    f"frame store {str(self.folder)!r}: frames unit {frames_key!r} of video {video_id!r} is missing"
                )
            link_or_copy_tree(source / "frames", partial / "frames")
            link_or_copy_tree(source / "frames_crc32c", partial / "frames_crc32c")
        _set_attrs(partial, {"complete": True})
        fsync_dir(partial)
        publish(partial, final, trash=self.folder / TRASH)

    def open_video(self, video_id: str) -> ZarrVideoReader:
        path = self._video_path(video_id)
        if not (path / "zarr.json").exists():
            raise StoreError(
                f"frame store {str(self.folder)!r} has no group for video {video_id!r} ({path})", video_id=video_id
            )
        return ZarrVideoReader(path, self.folder)

    def remove_video(self, video_id: str) -> None:
        remove(self._video_path(video_id))

    def collect_garbage(self, keep_units: set[str]) -> None:
        remove(self.folder / PARTIAL)
        remove(self.folder / TRASH)

    def size_on_disk(self) -> int:
        return folder_size(self.folder)


# -- Zarr stores at a URL (object stores): read, and written by an export -----------------------------------------------------------------------------


def _url_array(store: ObjectStore, group: str, name: str, video_id: str) -> np.ndarray:
    """Array ``name`` of the video group at key ``group``, whole (small ones straight from their chunk,
    others through Zarr)."""
    key = f"{group}/{name}"
    meta = store.get_json(f"{key}/zarr.json")
    if meta is None or meta.get("node_type") != "array":
        raise StoreError(
            f"no Zarr array {name!r} in video {video_id!r} at {store.url_of(key)!r}",
            path=store.url_of(key),
            video_id=video_id,
        )
    if not _is_small(meta, store.url_of(key)):
        return _read_large_url_array(store, key, meta)
    size = math.prod(meta["shape"])
    data = store.get(f"{key}/{_small_chunk_key(meta['shape'])}") if size else None
    return _decode_small(meta, data, store.url_of(key))


def _read_large_url_array(store: ObjectStore, key: str, meta: dict[str, Any]) -> np.ndarray:
    """The multi-chunk array at ``key`` (checked ``meta``; one vidlabel did not write, e.g. rewritten with
    zarr-python), whole, through Zarr, which allocates its declared shape (chunks never written read as the fill
    value): refused first, as in a local store (:func:`_read_array`), when it declares more than 1024 times the
    bytes of its objects, which are listed, not read.

    Raises
    ------
    StoreCorruptError
        Naming the array's URL, its declared shape and both sizes.
    """
    where = store.url_of(key)
    refuse_overdeclared(
        f"Zarr array {where!r} declares shape {meta['shape']} {meta['data_type']}", _declared_bytes(meta),
        sum(store.sizes(key).values()), "its objects hold", where,
    )  # fmt: skip
    return np.asarray(_open_large_array(where, store.storage_options)[...])


class ZarrURLFramesReader(FramesReader):
    """Chunks of a ``frames`` array fetched from an object store (:class:`~vidlabel.store._remote.ObjectStore`)."""

    backend = "zarr"

    def __init__(self, store: ObjectStore, key: str, meta: dict[str, Any], video_id: str) -> None:
        shape, chunk_frames, codec, attrs = _frames_layout(meta, store.url_of(key))
        super().__init__(shape, chunk_frames, codec)
        self.store = store
        self.key = key
        self.attrs = attrs
        self.unit_key = attrs.get("key")
        self.video_id = video_id
        self.path = store.url_of(key)  # identity in cache keys, and messages
        self._pending: dict[int, bytes | None] = {}

    def stored_checksums(self) -> np.ndarray:
        return _url_array(self.store, self.key.rpartition("/")[0], "frames_crc32c", self.video_id)

    def _chunk_key(self, index: int) -> str:
        return f"{self.key}/c.{index}.0.0.0"

    def chunk_file(self, index: int) -> str:
        return self.store.url_of(self._chunk_key(index))

    def prefetch(self, indices: Iterable[int]) -> None:
        """Fetch chunks ``indices`` concurrently now; the next :meth:`raw_chunk` of each takes its bytes."""
        wanted = [int(i) for i in indices if 0 <= int(i) < self.n_chunks]
        got = self.store.get_many(self._chunk_key(i) for i in wanted)
        self._pending = {i: got[self._chunk_key(i)] for i in wanted}

    def raw_chunk(self, index: int) -> bytes:
        data = self._pending.pop(index, b"") if index in self._pending else self.store.get(self._chunk_key(index))
        if not data:
            first = index * self.chunk_frames
            rows = f"rows {first}..{first + max(1, self.chunk_rows(index)) - 1}"
            absent = self.store.absent_from_process()
            # a complete unit's every chunk was written before its ``complete``: one missing is damage, unless
            # this process cannot see the store at all (a memory:// store in another process)
            damaged = absent is None and self.attrs.get("complete") is True
            raise (StoreCorruptError if damaged else StoreError)(
                f"chunk {index} ({rows}) of video {self.video_id!r} is missing at {self.store.url_of(self._chunk_key(index))!r}"
                + ("" if absent is None else f": {absent}"),
                path=self.path,
                video_id=self.video_id,
            )
        return data


class ZarrURLVideoReader(VideoReader):
    """A video group read from an object store; :meth:`preload` fetches its small arrays in two round trips."""

    def __init__(self, store: ObjectStore, key: str, attrs: dict[str, Any], video_id: str) -> None:
        self.store = store
        self.key = key
        self.attrs = attrs
        self.video_id = video_id
        self._arrays: dict[str, np.ndarray] = {}

    def preload(self, names: Iterable[str]) -> None:
        names = [n for n in names if n not in self._arrays]
        keys = {n: self._array_key(n) for n in names}
        got = self.store.get_many_json(f"{keys[n]}/zarr.json" for n in names)
        metas = {n: got[f"{keys[n]}/zarr.json"] for n in names}
        small = {
            n: m
            for n, m in metas.items()
            if m and m.get("node_type") == "array" and _is_small(m, self.store.url_of(keys[n]))
        }
        chunk_keys = {n: f"{keys[n]}/{_small_chunk_key(m['shape'])}" for n, m in small.items()}
        chunks = self.store.get_many(k for n, k in chunk_keys.items() if math.prod(small[n]["shape"]) > 0)
        for n, m in small.items():
            self._arrays[n] = _decode_small(m, chunks.get(chunk_keys[n]), self.store.url_of(keys[n]))

    def array(self, name: str) -> np.ndarray:
        if name in self._arrays:
            return self._arrays.pop(name)
        key = self._array_key(name)
        group = key[: -len(name) - 1]  # the video group, or the frames unit that holds its frames
        return _url_array(self.store, group, name, self.video_id)

    def _array_key(self, name: str) -> str:
        unit = self.attrs.get("frames_unit")
        if isinstance(unit, str) and name in ("frames", "frames_crc32c") and _safe_unit_key(unit):
            return f"{unit}/{name}"  # exported straight into the object store: the frames unit's own arrays
        return f"{self.key}/{name}"

    def frames(self) -> ZarrURLFramesReader:
        key = self._array_key("frames")
        meta = self.store.get_json(f"{key}/zarr.json")
        if meta is None:
            raise StoreError(
                f"video {self.video_id!r} has no Zarr frames array at {self.store.url_of(key)!r}",
                path=self.store.url_of(key),
                video_id=self.video_id,
            )
        return ZarrURLFramesReader(self.store, key, meta, self.video_id)


def _safe_unit_key(unit: str) -> bool:
    """True for a group's ``frames_unit`` that names a unit of this store (``units/<key>``, nothing else)."""
    head, _, key = unit.partition("/")
    return head == UNITS and bool(key) and all(c in "0123456789abcdef" for c in key)


class ZarrURLFramesWriter(FramesWriter):
    """Writes a frames unit straight into an object store, at ``units/<key>/``: every object create-only.

    Each chunk is one PUT of its whole bytes (never a read-modify-write), under a key that depends only on
    what its pixels depend on, so two attempts at one unit (an engine that runs a task twice, a zombie
    worker) write the same bytes to the same keys and the second finds them there. The unit's group
    ``zarr.json`` with ``complete`` is written last: until then no reader or exporter takes the unit as
    done. Chunk PUTs run on a few threads, at most ``in_flight`` waiting.
    """

    backend = "zarr"

    def __init__(
        self, store: ObjectStore, key: str, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec,
        attrs: dict[str, Any], *, threads: int = 4, in_flight: int = 8,
    ) -> None:  # fmt: skip
        from concurrent.futures import ThreadPoolExecutor

        self.store = store
        self.prefix = f"{UNITS}/{key}"
        self.attrs = {**attrs, "key": key, "codec": codec.spec, "chunk_frames": chunk_frames}
        self.meta = _frames_meta(shape, chunk_frames, codec, dict(self.attrs))
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=f"vidlabel-put-{key[:8]}")
        self._slots = threading.BoundedSemaphore(in_flight)
        self._futures: list[Any] = []

    def _put(self, key: str, data: bytes) -> None:
        try:
            self.store.put_new(key, data)  # False: an earlier attempt wrote these very bytes
        finally:
            self._slots.release()

    def _submit(self, key: str, data: bytes) -> None:
        for fut in [f for f in self._futures if f.done()]:
            self._futures.remove(fut)
            fut.result()  # the first failed PUT stops the unit
        self._slots.acquire()
        self._futures.append(self._pool.submit(self._put, key, data))

    def _wait(self) -> None:
        futures, self._futures = self._futures, []
        for fut in futures:
            fut.result()

    def write_chunk(self, index: int, data: bytes | np.ndarray) -> None:
        payload = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
        self._submit(f"{self.prefix}/frames/c.{index}.0.0.0", payload)

    def commit(self, *, frame_number: np.ndarray, crc32c: np.ndarray) -> None:
        try:
            self._wait()
            for name, arr in (
                ("frame_number", np.asarray(frame_number, dtype=np.int64)),
                ("frames_crc32c", np.asarray(crc32c, dtype=np.uint32)),
            ):
                for sub, data in _array_objects(arr).items():
                    self._submit(f"{self.prefix}/{name}/{sub}", data)
            meta = {**self.meta, "attributes": {**self.meta["attributes"], "complete": True}}
            self._submit(f"{self.prefix}/frames/zarr.json", _meta_bytes(meta))
            self._wait()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        group = {"zarr_format": 3, "node_type": "group", "attributes": {**self.attrs, "complete": True}}
        self.store.put_new(f"{self.prefix}/zarr.json", _meta_bytes(group))  # published: complete last

    def abort(self) -> None:
        # what was written stays: the same bytes a rerun writes; the export's end deletes unused units
        self._pool.shutdown(wait=True, cancel_futures=True)


class ZarrURLBackend(Backend):
    """A Zarr store at an fsspec URL: read, and written straight into the object store by an export.

    Parameters
    ----------
    url : str
        The store's URL (``s3://bucket/store``, ``file:///data/store``, ``memory://store``, ...).
    storage_options : mapping, optional
        Keyword arguments of the fsspec filesystem.

    Notes
    -----
    Writing needs conditional writes (:meth:`ObjectStore.conditional_kind`: S3 and S3-compatible servers,
    ``memory://``, ``file://``). An export's objects:

    - ``units/<frames_key>/`` a frames unit (``frames``, ``frames_crc32c``, ``frame_number``), every object
      created only if absent, its group ``zarr.json`` (``complete``) last (:class:`ZarrURLFramesWriter`);
    - ``videos/<id>/`` the video group: its small arrays, then its ``zarr.json`` with ``complete`` and
      ``frames_unit: "units/<frames_key>"`` (readers take ``frames`` and ``frames_crc32c`` from there:
      an object store has no rename or link to put them under the group);
    - ``zarr.json`` the root: rewritten at the start with ``complete: false`` and a fresh ``export_token``,
      conditionally (If-Match on the tag of the root read, or create-only), so of two exports starting at
      once one fails; at the end, after ``index``, written with ``complete: true`` If-Match on the tag of
      that start root, so an export whose root was taken over by another cannot publish.
    """

    name = "zarr"

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.store = ObjectStore(url, storage_options)
        self.url = self.store.url
        self._strays: list[str] = []
        self.folder = self.url  # type: ignore[assignment]  # a URL, not a Path: used in messages only
        self._tag: str | None = None  # tag of the root this export wrote (None: it wrote none yet)
        self._token = ""

    @classmethod
    def detect(cls, folder: Path) -> bool:
        if not is_url(str(folder)):
            return False
        meta = ObjectStore(str(folder)).get_json("zarr.json")
        return bool(meta and meta.get("node_type") == "group" and meta.get("attributes", {}).get("format"))

    def read_root(self) -> tuple[dict[str, Any], np.ndarray]:
        got = self.store.get_many_json(["zarr.json", "index/zarr.json"])
        meta = got["zarr.json"]
        if meta is None:
            absent = self.store.absent_from_process()
            if absent is not None:
                raise StoreError(f"no vidlabel frame store at {self.url!r}: {absent}", path=self.url)
            return {}, np.zeros((0, 2), np.int64)
        index = np.zeros((0, 2), np.int64)
        index_meta = got["index/zarr.json"]
        if index_meta is not None:
            index = index_rows(self._index(index_meta), self.url)
        return dict(meta.get("attributes", {})), index

    def _index(self, meta: dict[str, Any]) -> np.ndarray:
        if not _is_small(meta, self.store.url_of("index")):
            return _read_large_url_array(self.store, "index", meta)
        data = self.store.get(f"index/{_small_chunk_key(meta['shape'])}") if math.prod(meta["shape"]) else None
        return _decode_small(meta, data, self.store.url_of("index"))

    # -- writing: the root ------------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise :class:`~vidlabel.errors.OptionError` if this URL has no conditional writes (an export needs them)."""
        if self.store.conditional_kind() is None:
            raise OptionError(
                f"cannot export to {self.url!r}: exporting straight into an object store needs conditional writes "
                "(create-only and If-Match), which vidlabel does on s3:// (and S3-compatible servers), file:// "
                f"and memory://; export to a local folder with format='zarr' and upload it: `vidlabel upload OUT {self.url}`"
            )

    def _conflict(self, what: str) -> StoreLockedError:
        return StoreLockedError(
            f"frame store {self.url!r}: {what}: another export is writing it (its root changed since this export "
            "read it); one export at a time: this one stops without publishing (the other's result stands; "
            "rerun once it has finished to resume)",
            path=self.url,
        )

    def _root_bytes(self, attrs: dict[str, Any], complete: bool) -> bytes:
        attrs = {**attrs, "complete": complete}
        if not complete:
            attrs["export_token"] = self._token  # two exports' roots never have the same bytes (or ETag)
        else:
            attrs.pop("export_token", None)
        return _meta_bytes({"zarr_format": 3, "node_type": "group", "attributes": attrs})

    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        if self._tag is None:  # the export starts: take the root over, conditionally
            self.check_writable()
            _data, tag = self.store.get_tagged("zarr.json")
            self._token = uuid.uuid4().hex
            try:
                self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, False), tag)
            except StoreConflict as err:
                raise self._conflict("starting an export") from err
            for group in ("videos", UNITS):
                self.store.put_new(f"{group}/zarr.json", _meta_bytes(_GROUP))
            return
        try:
            self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, False), self._tag)
        except StoreConflict as err:
            raise self._conflict("marking it incomplete") from err

    def check_owner(self, what: str) -> None:
        """Raise :class:`StoreLockedError` if another export took the root over since this one started."""
        if self._tag is not None and self.store.get_tagged("zarr.json")[1] != self._tag:
            raise self._conflict(what)

    def write_root(self, attrs: dict[str, Any], index: np.ndarray, video_ids: list[str]) -> None:
        if self._tag is None:
            raise StoreError(f"frame store {self.url!r}: the root is written by an export that marked it first")
        self.check_owner("publishing the root")
        missing = [v for v in video_ids if (self.video_attrs(v) or {}).get("complete") is not True]
        if missing:
            raise StoreError(f"frame store {self.url!r}: video groups {missing[:5]} are not published; not publishing")
        index_objects = _array_objects(np.asarray(index, dtype=np.int64).reshape(-1, 2))
        self.store.put_many({f"index/{k}": v for k, v in index_objects.items()})
        try:
            self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, True), self._tag)
        except StoreConflict as err:
            raise self._conflict("publishing the root") from err

    # -- writing: frames units ----------------------------------------------------------------------------------

    def discard_unit(self, key: str) -> None:
        self.store.delete([f"{UNITS}/{key}/zarr.json"])  # no longer complete, then gone
        self.store.delete_prefix(f"{UNITS}/{key}")

    def unit_published(self, key: str, video_id: str | None = None) -> bool:
        meta = self.store.get_json(f"{UNITS}/{key}/zarr.json")
        return bool(meta and meta.get("attributes", {}).get("complete") is True)

    def frames_units(self) -> dict[str, dict[str, Any]]:
        self.store.refresh()
        names = [n for n in self.store.list_dirs(UNITS) if _safe_unit_key(f"{UNITS}/{n}")]
        got = self.store.get_many_json(f"{UNITS}/{n}/zarr.json" for n in names)
        out = {}
        for n in names:
            attrs = (got[f"{UNITS}/{n}/zarr.json"] or {}).get("attributes", {})
            if attrs.get("complete") is True and attrs.get("key") == n:
                out[n] = dict(attrs)
        return out

    def open_frames_unit(self, key: str) -> FramesReader:
        prefix = f"{UNITS}/{key}/frames"
        meta = self.store.get_json(f"{prefix}/zarr.json")
        if meta is None or not self.unit_published(key):
            raise StoreError(f"frame store {self.url!r} has no frames unit {key!r}", path=self.url)
        return ZarrURLFramesReader(self.store, prefix, meta, str(meta.get("attributes", {}).get("video_id", key)))

    def unit_frame_number(self, key: str) -> np.ndarray:
        return self._unit_array(key, "frame_number").astype(np.int64)

    def _unit_array(self, key: str, name: str) -> np.ndarray:
        prefix = f"{UNITS}/{key}/{name}"
        meta = self.store.get_json(f"{prefix}/zarr.json")
        if meta is None:
            raise StoreError(f"frame store {self.url!r} has no frames unit {key!r}", path=self.url)
        size = math.prod(meta["shape"])
        data = self.store.get(f"{prefix}/{_small_chunk_key(meta['shape'])}") if size else None
        return _decode_small(meta, data, self.store.url_of(prefix))

    def frames_writer(
        self, key: str, *, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, attrs: dict[str, Any]
    ) -> FramesWriter:
        self.check_writable()
        return ZarrURLFramesWriter(self.store, key, shape, chunk_frames, codec, attrs)

    # -- videos ------------------------------------------------------------------------------------------------

    def _video_key(self, video_id: str) -> str:
        return f"videos/{node_name(video_id)}"

    def video_ids(self) -> list[str]:
        self.store.refresh()
        names = self.store.list_dirs("videos")
        # an object key with a '', '.' or '..' part is no part of a store (keys never leave it): listed, not read
        self._strays = [f"videos/{n}/" for n in names if n in ("", ".", "..")]
        names = [n for n in names if n not in ("", ".", "..")]
        keys = {n: f"videos/{n}/zarr.json" for n in names}
        got = self.store.get_many(keys.values())
        metas = {n: parse_json(got[key], self.store.url_of(key)) for n, key in keys.items() if got[key] is not None}
        found = (node_video_id(n, functools.partial(_recorded_id, meta)) for n, meta in metas.items())
        return sorted(v for v in found if v is not None)

    def video_attrs(self, video_id: str) -> dict[str, Any] | None:
        meta = self.store.get_json(f"{self._video_key(video_id)}/zarr.json")
        return None if meta is None else dict(meta.get("attributes", {}))

    def write_video(
        self, video_id: str, *, attrs: dict[str, Any], arrays: dict[str, np.ndarray], frames_key: str
    ) -> None:
        if not self.unit_published(frames_key):
            raise StoreError(
                f"frame store {self.url!r}: frames unit {frames_key!r} of video {video_id!r} is missing",
                path=self.url,
                video_id=video_id,
            )
        self.check_owner(f"publishing video {video_id!r}")
        key = self._video_key(video_id)
        self.store.delete([f"{key}/zarr.json"])  # no reader takes the old group for the new one meanwhile
        objects: dict[str, bytes] = {}
        for sub in {name.rpartition("/")[0] for name in arrays if "/" in name}:
            objects[f"{key}/{sub}/zarr.json"] = _meta_bytes(_GROUP)
        for name, arr in arrays.items():
            objects.update({f"{key}/{name}/{k}": v for k, v in _array_objects(arr).items()})
        self.store.put_many(objects)
        group_attrs = {k: v for k, v in attrs.items() if k != "complete"}
        group_attrs.update({"frames_unit": f"{UNITS}/{frames_key}", "complete": True})
        group = {"zarr_format": 3, "node_type": "group", "attributes": group_attrs}
        self.store.put(f"{key}/zarr.json", _meta_bytes(group))  # after its arrays

    def stray_keys(self) -> list[str]:
        return list(self._strays)

    def open_video(self, video_id: str) -> ZarrURLVideoReader:
        key = self._video_key(video_id)
        data = self.store.get(f"{key}/zarr.json")
        meta = parse_json(data, self.store.url_of(f"{key}/zarr.json"))
        if data is not None and meta is None:
            raise damaged_group(self.url, video_id, self.store.url_of(f"{key}/zarr.json"))
        if meta is None:
            absent = self.store.absent_from_process()
            raise StoreError(
                f"frame store {self.url!r} has no group for video {video_id!r} ({self.store.url_of(key)})"
                + ("" if absent is None else f": {absent}"),
                path=self.url,
                video_id=video_id,
            )
        return ZarrURLVideoReader(self.store, key, dict(meta.get("attributes", {})), video_id)

    def remove_video(self, video_id: str) -> None:
        self.store.delete_prefix(self._video_key(video_id))

    def collect_garbage(self, keep_units: set[str]) -> None:
        self.store.refresh()
        for name in self.store.list_dirs(UNITS):
            if name not in keep_units and _safe_unit_key(f"{UNITS}/{name}"):
                self.store.delete_prefix(f"{UNITS}/{name}")

    def size_on_disk(self) -> int:
        return self.store.total_size()


_GROUP: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": {}}
