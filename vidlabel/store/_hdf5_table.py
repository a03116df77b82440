"""The video table of an HDF5 store's root: every video's small arrays and attributes, and what reopening its
frames file takes, in ``store.h5`` (format version 3).

A store of many short videos read at random opened two HDF5 files for each video it touched first (the video
file for its 20 attributes and 17 small arrays, then the frames file for its chunk index): milliseconds a
read, where a frame of 64x48 takes microseconds (``scripts/bench_scale.py``). The table, written with the
root, holds the same attributes and arrays, concatenated over the videos, and each frames file's
:class:`~vidlabel.store._hdf5_frames._FramesIndex`; a process reads it once, in a few reads.

It is used for a video only while the files it describes are the files written with it: the video file's
identity (device, inode, size, modification and change times) is recorded, and a video whose file differs
(edited, restored, copied) is read from its file, as in a store without the table; a frames file that is
not the one indexed is opened in full, as before. Every check a video's first read makes (its labels key,
frames key, CSR offsets, the export it belongs to) runs on what the table gives, as on what a file gives.

Layout, under ``/table`` of ``store.h5`` (V videos, in the order of the root's ``video_ids``)::

    columns           attribute: the names of the concatenated columns, in the order of ``offsets``
    offsets           (V + 1, K) int64: where each video's entries of column k start, and the end
    <array name>      each small array (``frame_number``, ``regions/bbox_xyxy``, ...) of every video
    attrs_json        (B,) uint8: each video's attributes as JSON text
    chunk_offsets     (C,) int64: each frames chunk's byte offset in its frames file (-1: unknown)
    chunk_crc32c      (C,) uint32: each frames chunk's CRC-32C
    video_identity    (V, 5) int64: the video file's identity
    frames_identity   (V, 5) int64: the frames file's identity (-1: no index, opened in full)
    frames_shape      (V, 4) int64 and frames_chunk_frames (V,) int64
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.store._backend import node_name
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._hdf5_files import _get_attrs, _link_target, _open, _read_array, _set_attrs, _write_array
from vidlabel.store._hdf5_frames import HDF5FramesReader, _FramesIndex, _identity, _LinkedFramesOpener
from vidlabel.store._layout import REGION_ATTRIBUTE_FIELDS, REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS

__all__ = ["VideoTable", "write_table"]

#: Every small array a video may hold, in the table's column order.
ARRAY_NAMES = list(VIDEO_ARRAYS) + [f"regions/{n}" for n in REGION_FIELDS] + [f"segments/{n}" for n in SEGMENT_FIELDS]
_EXTRA = ("attrs_json", "chunk_offsets", "chunk_crc32c")
_NO_IDENTITY = (-1, -1, -1, -1, -1)


def _empty(name: str) -> np.ndarray:
    """A zero-length array of column ``name``'s dtype and trailing shape."""
    if name in VIDEO_ARRAYS:
        return np.zeros(0, VIDEO_ARRAYS[name])
    group, _, leaf = name.partition("/")
    if group == "regions":
        dtype, trailing = {**REGION_FIELDS, **REGION_ATTRIBUTE_FIELDS}[leaf]
        return np.zeros((0, *trailing), dtype)
    if group == "segments":
        return np.zeros(0, SEGMENT_FIELDS[leaf])
    return np.zeros(0, {"attrs_json": np.uint8, "chunk_offsets": np.int64, "chunk_crc32c": np.uint32}[name])


def _frames_index(path: Path, root: Path, frames_key: Any) -> _FramesIndex | None:
    """The index of frames file ``path`` as a full open learns it, or None (a compressed codec, another unit's
    file, a file that does not open: the reader opens it in full and says what is wrong)."""
    try:
        reader = HDF5FramesReader(path, root)
    except (StoreError, OSError):
        return None
    try:
        index = reader.frames_index()
    finally:
        reader.close()
    return index if index is not None and index.unit_key == frames_key else None


def write_table(
    group: h5py.Group,
    root: Path,
    entries: Sequence[tuple[dict[str, Any], Mapping[str, np.ndarray], Path, Path]],
) -> None:
    """Write the table of ``entries`` into ``group`` (an empty ``/table`` of the root file being written).

    Parameters
    ----------
    group : h5py.Group
    root : Path
        The store folder.
    entries : sequence of (attrs, arrays, video file, frames file)
        Per video, in the root's ``video_ids`` order: the attributes and small arrays its published video
        file holds, that file and its frames file (both published: their identities are recorded now).
    """
    columns = [n for n in ARRAY_NAMES if any(n in arrays for _, arrays, _, _ in entries)] + list(_EXTRA)
    parts: dict[str, list[np.ndarray]] = {name: [_empty(name)] for name in columns}
    offsets = np.zeros((len(entries) + 1, len(columns)), np.int64)
    video_identity = np.zeros((len(entries), 5), np.int64)
    frames_identity = np.full((len(entries), 5), -1, np.int64)
    frames_shape = np.zeros((len(entries), 4), np.int64)
    chunk_frames = np.zeros(len(entries), np.int64)
    for v, (attrs, arrays, video_path, frames_path) in enumerate(entries):
        found = dict(arrays)
        found["attrs_json"] = np.frombuffer(json.dumps(attrs).encode(), np.uint8)
        index = _frames_index(frames_path, root, attrs.get("frames_key"))
        if index is not None:
            found["chunk_offsets"], found["chunk_crc32c"] = index.offsets, index.crc32c
            frames_identity[v], frames_shape[v], chunk_frames[v] = index.identity, index.shape, index.chunk_frames
        video_identity[v] = _identity(os.stat(video_path))
        for k, name in enumerate(columns):
            arr = found.get(name)
            size = 0 if arr is None else len(arr)
            if arr is not None:
                parts[name].append(np.asarray(arr))
            offsets[v + 1, k] = offsets[v, k] + size
    _set_attrs(group, {"columns": columns})
    for name in columns:
        sub, _, leaf = name.rpartition("/")
        _write_array(group.require_group(sub) if sub else group, leaf, np.concatenate(parts[name]))
    for name, arr in (("offsets", offsets), ("video_identity", video_identity), ("frames_identity", frames_identity),
                      ("frames_shape", frames_shape), ("frames_chunk_frames", chunk_frames)):  # fmt: skip
        _write_array(group, name, arr)


class VideoTable:
    """The table of one HDF5 store's root, read whole (:meth:`read`); plain NumPy arrays, so it survives a fork.

    Parameters
    ----------
    root : Path
        The store folder.
    video_ids : sequence of str
        The root's ``video_ids``, the table's row order.
    columns : dict of str to ndarray
        Every array under ``/table``, by name.
    """

    def __init__(self, root: Path, video_ids: Sequence[str], columns: dict[str, np.ndarray]) -> None:
        self.root = root
        self._row = {video_id: v for v, video_id in enumerate(video_ids)}
        self._columns = columns
        self._names: list[str] = list(columns.pop("columns"))  # type: ignore[arg-type]
        self._frames: Path | None = None
        for arr in columns.values():
            arr.setflags(write=False)

    @classmethod
    def read(cls, path: Path, root: Path, video_ids: Sequence[str], identity: tuple[int, ...]) -> VideoTable | None:
        """The table of root file ``path``, or None where the root has none (a store of format version 1 or 2) or is
        not the file of identity ``identity`` any more (the store exported again since it was opened: its videos
        are read from their files, which say so).

        Raises
        ------
        StoreCorruptError
            If the table's arrays do not fit together (its offsets and columns), naming the store.
        """
        f = _open(path)
        with f:
            if _identity(os.fstat(f.id.get_vfd_handle())) != identity or "table" not in f:
                return None
            names = _get_attrs(f["table"], ("columns",)).get("columns")
            if not isinstance(names, list) or not all(n in ARRAY_NAMES or n in _EXTRA for n in names):
                raise StoreCorruptError(f"the video table of {str(path)!r} lists columns {names!r}: {STORE_CHANGED}")
            fixed = ("offsets", "video_identity", "frames_identity", "frames_shape", "frames_chunk_frames")
            try:
                columns: dict[str, Any] = {n: _read_array(f, path, root, f"table/{n}") for n in (*names, *fixed)}
            except KeyError as err:
                raise StoreCorruptError(
                    f"the video table of {str(path)!r} has no array {err}: {STORE_CHANGED}"
                ) from err
        columns["columns"] = names
        problem = _table_problem(columns, names, len(video_ids))
        if problem is not None:
            raise StoreCorruptError(f"the video table of {str(path)!r}: {problem}: {STORE_CHANGED}", path=str(path))
        return cls(root, video_ids, columns)

    def _frames_folder(self) -> Path:
        """``OUT/frames`` resolved, checked inside the store once: a frames file named by a plain key lies in it
        (a link put in its place is not followed: the reopen opens it without following links)."""
        if self._frames is None:
            self._frames = _link_target(self.root, self.root / "videos" / "_", "frames", "../frames")
        return self._frames

    def _slice(self, name: str, v: int) -> np.ndarray:
        k = self._names.index(name)
        start, end = self._columns["offsets"][v : v + 2, k].tolist()
        return self._columns[name][start:end]

    def video(
        self, video_id: str
    ) -> tuple[dict[str, Any], dict[str, np.ndarray], Callable[[], HDF5FramesReader]] | None:
        """The attributes, small arrays (by name, as in the video file) and frames opener of ``video_id``, or None
        where the table does not hold it or its video file (``OUT/videos/<id>.h5``) is not the file written
        with the table (the caller reads that file). The arrays are read-only views of the table's.

        Raises
        ------
        StoreCorruptError
            If its attributes are not JSON text of a mapping.
        """
        v = self._row.get(video_id)
        if v is None:
            return None
        video_path = self.root / "videos" / f"{node_name(video_id)}.h5"
        try:
            if _identity(os.stat(video_path)) != tuple(self._columns["video_identity"][v].tolist()):
                return None
        except OSError:
            return None
        try:
            attrs = json.loads(self._slice("attrs_json", v).tobytes())
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
            attrs = err
        if not isinstance(attrs, dict):
            raise StoreCorruptError(f"the video table's attributes of video {video_id!r} are no JSON mapping")
        arrays = {name: self._slice(name, v) for name in self._names if name not in _EXTRA}
        key = attrs.get("frames_key")
        opener = _LinkedFramesOpener(self.root, video_path, f"../frames/{key}.h5")
        identity = tuple(self._columns["frames_identity"][v].tolist())
        if identity != _NO_IDENTITY and isinstance(key, str):
            shape = tuple(self._columns["frames_shape"][v].tolist())
            cf = int(self._columns["frames_chunk_frames"][v])
            offsets, crc = self._slice("chunk_offsets", v), self._slice("chunk_crc32c", v)
            if cf > 0 and offsets.size == crc.size == math.ceil(shape[0] / cf) and _plain(key):
                path = self._frames_folder() / f"{key}.h5"
                opener.frames_index = _FramesIndex(path, self.root, identity, shape, cf, key, offsets, crc)  # type: ignore[arg-type]
        return attrs, arrays, opener


def _plain(key: str) -> bool:
    """Whether a frames key names a file in ``OUT/frames`` itself (no separator, not a dot name)."""
    return bool(key) and not key.startswith(".") and "/" not in key and os.sep not in key and "\0" not in key


def _table_problem(columns: dict[str, Any], names: list[str], videos: int) -> str | None:
    """A phrase when the table's offsets do not fit its columns or its ``videos`` rows, else None."""
    offsets = columns["offsets"]
    if offsets.ndim != 2 or offsets.shape != (videos + 1, len(names)) or offsets.dtype.kind != "i":
        return f"its offsets have shape {offsets.shape}, not ({videos + 1}, {len(names)})"
    if offsets.size and (offsets[0].any() or (np.diff(offsets, axis=0) < 0).any()):
        return "its offsets do not start at 0 and grow"
    for k, name in enumerate(names):
        if len(columns[name]) != offsets[-1, k]:
            return f"column {name!r} holds {len(columns[name])} entries, its offsets {offsets[-1, k]}"
    for name, width in (("video_identity", 5), ("frames_identity", 5), ("frames_shape", 4)):
        if columns[name].shape != (videos, width):
            return f"{name} has shape {columns[name].shape}, not ({videos}, {width})"
    if columns["frames_chunk_frames"].shape != (videos,):
        return f"frames_chunk_frames has shape {columns['frames_chunk_frames'].shape}, not ({videos},)"
    return None
