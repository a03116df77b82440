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
read directly from their single chunk file (the Zarr API costs milliseconds
per array); frame chunks are read directly from their files and decoded by
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
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import StoreCorruptError, StoreError
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
from vidlabel.store._remote import parse_json

__all__ = ["ZarrBackend"]

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
    codecs = codec.zarr_codecs()
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
        if self.codec.raw:
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

    def write_root(self, attrs: dict[str, Any], index: np.ndarray, video_ids: list[str], videos: Any = None) -> None:
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
        # with the video: its finished partial unit, or its published group (a scan of every group per export
        # task made a local Zarr export quadratic in the number of videos); without, every unit
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
