"""The HDF5 backend: one file per frames unit and per video, joined by external links under ``store.h5``.

On disk::

    OUT/store.h5               root attributes, /index, /videos/<video_id> -> external link to videos/<id>.h5:/
    OUT/videos/<id>.h5         the video group at the file's root; frames and frames_crc32c are external
                               links to ../frames/<key>.h5
    OUT/frames/<key>.h5        /frames (T, H, W, 3) uint8, /frames_crc32c, /frame_number
    OUT/.vidlabel-lock         the single-writer lock

Opening ``OUT/store.h5`` with plain h5py shows exactly the layout of
ARCHITECTURE.md (the links resolve relative to each file's folder). One file
per video lets worker processes write videos in parallel (HDF5 allows one
writer per file) and makes each video's publication one atomic rename; a
killed writer can leave only ``*.partial`` files, which are deleted. Every
attribute value is JSON text. Small arrays carry HDF5's fletcher32 checksum;
frame chunks a CRC-32C each in ``frames_crc32c``. Compressed chunks are
read with ``read_direct_chunk``, uncompressed ones copied out of a read-only
memory map of the (immutable) frames file (HDF5's own chunk cache is set to
0: vidlabel's :class:`~vidlabel.store.ChunkCache` does the caching).
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from vidlabel.errors import StoreError
from vidlabel.store._backend import (
    Backend,
    FramesHeader,
    FramesWriter,
    VideoReader,
    folder_size,
    node_name,
    node_video_id,
)
from vidlabel.store._codecs import Codec
from vidlabel.store._fs import (
    STORE_CHANGED,
    fsync_file,
    inside_store,
    publish,
    remove,
)
from vidlabel.store._hdf5_files import (
    _check_links,
    _get_attrs,
    _link_target,
    _open,
    _open_inside,
    _read_array,
    _set_attrs,
    _write_array,
)
from vidlabel.store._hdf5_frames import (
    HDF5FramesReader,
    _identity,
    _LinkedFramesOpener,
)
from vidlabel.store._hdf5_region import _ChunkRegion, _size_limit_allows
from vidlabel.store._hdf5_table import VideoTable, write_table
from vidlabel.store._layout import index_rows

__all__ = ["HDF5Backend"]


ROOT_FILE = "store.h5"


PARTIAL = ".partial"


#: Uncompressed frames units are streamed into their early-allocated chunks in whole 2 MiB blocks of the file
#: (:class:`_ChunkRegion`); False writes each chunk with HDF5's ``write_direct_chunk``, as compressed units and
#: units past the file size limit always are (``scripts/bench_storeframes.py`` compares the two).
REGION_WRITE = True


def _create_frames(
    f: h5py.File, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, *, early: bool = False
) -> h5py.Dataset:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((chunk_frames, *shape[1:]))
    # every chunk's space allocated now, nothing filled: the region writer fills it
    if early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    filt = codec.hdf5_filter()
    if filt is not None:
        fid, cd_values, optional = filt
        if fid == 1:
            dcpl.set_deflate(cd_values[0])
        else:
            if not optional:
                import hdf5plugin  # noqa: F401 - registers the LZ4 and Zstd filters with HDF5

            flags = h5py.h5z.FLAG_OPTIONAL if optional else h5py.h5z.FLAG_MANDATORY
            dcpl.set_filter(fid, flags, cd_values)
    space = h5py.h5s.create_simple(shape, (h5py.h5s.UNLIMITED, *shape[1:]))
    dsid = h5py.h5d.create(f.id, b"frames", h5py.h5t.NATIVE_UINT8, space, dcpl=dcpl)
    return h5py.Dataset(dsid)


class HDF5FramesWriter(FramesWriter):
    """Writes ``frames/<key>.<attempt>.h5.partial`` chunk by chunk, then renames it to ``frames/<key>.h5``."""

    backend = "hdf5"

    def __init__(
        self, folder: Path, key: str, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec,
        attrs: dict[str, Any],
    ) -> None:  # fmt: skip
        self.final = folder / "frames" / f"{key}.h5"
        # each attempt its own file: two attempts at one unit (an engine running a task twice) never share one
        self.partial = folder / "frames" / f"{key}.{uuid.uuid4().hex[:12]}.h5{PARTIAL}"
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self._file = _open(self.partial, "w")
        _set_attrs(self._file, {**attrs, "key": key, "codec": codec.spec, "chunk_frames": chunk_frames})
        # early allocation reserves whole chunks: a last chunk of fewer frames takes a full chunk's room too
        allocated = -(-shape[0] // chunk_frames) * chunk_frames * int(np.prod(shape[1:]))
        early = codec.raw and shape[0] > 0 and REGION_WRITE and hasattr(os, "pwritev")
        if early and not _size_limit_allows(allocated):
            # HDF5 extends a file to its early-allocated size at a flush: past the file size limit that fails
            # inside HDF5 (and h5py crashes at exit); chunk by chunk, the chunk write past it says EFBIG
            early = False
        self._ds = _create_frames(self._file, shape, chunk_frames, codec, early=early)
        self._chunk_frames = chunk_frames
        self._region: _ChunkRegion | None = self._chunk_region(shape, chunk_frames) if early else None
        # the chunk the region expects next
        self._next = 0

    def _chunk_region(self, shape: tuple[int, int, int, int], chunk_frames: int) -> _ChunkRegion | None:
        """The region writer over the chunks' blocks, or None where HDF5 did not allocate every chunk (then every
        chunk goes through ``write_direct_chunk``)."""
        chunk_bytes = int(np.prod((chunk_frames, *shape[1:])))
        offsets: list[int] = []
        try:
            self._ds.id.chunk_iter(lambda info: offsets.append(int(info.byte_offset)))
        except (AttributeError, OSError, ValueError):
            return None
        n = -(-shape[0] // chunk_frames)
        if len(offsets) != n or min(offsets, default=-1) < 0:
            return None
        # [offset, bytes] of each block of chunks back to back, in chunk order
        runs: list[list[int]] = []
        for offset in offsets:
            if runs and runs[-1][0] + runs[-1][1] == offset:
                runs[-1][1] += chunk_bytes
            else:
                runs.append([offset, chunk_bytes])
        self._file.flush()
        return _ChunkRegion(self.partial, [(a, b) for a, b in runs])

    def write_chunk(self, index: int, data: bytes | np.ndarray) -> None:
        if self._region is not None:
            if index == self._next:
                self._region.write(memoryview(data).cast("B"))  # type: ignore[arg-type]
                self._next += 1
                return
            # Out of order (never from write_frames): what was staged goes out, then write_direct_chunk.
            self._region.finish()
            self._region = None
        self._ds.id.write_direct_chunk((index * self._chunk_frames, 0, 0, 0), data)

    def commit(self, *, frame_number: np.ndarray, crc32c: np.ndarray) -> None:
        if self._region is not None:
            self._region.finish()
            self._region = None
        _write_array(self._file, "frame_number", np.asarray(frame_number, dtype=np.int64))
        _write_array(self._file, "frames_crc32c", np.asarray(crc32c, dtype=np.uint32))
        self._file.attrs["complete"] = json.dumps(True)
        self._file.close()
        # No fsync of the frame data: a killed process loses nothing the OS already has, and forcing
        # gigabytes to disk here would stall the export at disk speed. Against power loss, the chunks'
        # CRC-32C checksums (``vidlabel verify``) tell a damaged unit.
        publish(self.partial, self.final)

    def abort(self) -> None:
        """Drop the unfinished unit: its partial file is removed even when closing it fails.

        A write that failed for a full disk (or a file size limit) leaves HDF5 unable to flush, so its close
        raises too; that error would hide the write's own and leave the partial file behind, taking the
        space a rerun needs (a new attempt writes under another name)."""
        try:
            if self._region is not None:
                self._region.close()
                self._region = None
            if self._file.id.valid:
                self._file.close()
        except (OSError, RuntimeError):  # the failure being reported is the write's, not this close's
            pass
        finally:
            remove(self.partial)


class HDF5VideoReader(VideoReader):
    """A video file ``videos/<id>.h5`` (its frames through the external link)."""

    def __init__(self, path: Path, root: Path | None = None) -> None:
        self.root = path.parent.parent if root is None else root  # OUT/videos/<id>.h5
        self._file, self.path = _open_inside(self.root, path, "video file")
        self._attrs: dict[str, Any] | None = None

    @property
    def attrs(self) -> dict[str, Any]:  # type: ignore[override]
        """The group's attributes (read on first use: opening the frames needs only ``complete``)."""
        if self._attrs is None:
            self._attrs = _get_attrs(self._file)
        return self._attrs

    def complete(self) -> bool:
        if self._attrs is not None:
            return self._attrs.get("complete") is True
        return _get_attrs(self._file, ("complete",)).get("complete") is True

    def array(self, name: str) -> np.ndarray:
        try:
            return _read_array(self._file, self.path, self.root, name)
        except KeyError as err:
            raise StoreError(f"video file {str(self.path)!r} has no array {name!r}", path=str(self.path)) from err

    def frames(self) -> HDF5FramesReader:
        """A new reader of the linked frames file (the caller closes it; it outlives this reader).

        Raises
        ------
        StoreError
            If ``frames`` is not an external link, or its file lies outside the store folder.
        """
        return self.frames_opener()()

    def frames_opener(self) -> Callable[[], HDF5FramesReader]:
        """Opens the linked frames file when called: the link's target is resolved and checked inside the store
        then (opening this file checked it too, :func:`_check_links`; a store read on construction does not
        resolve every video's link a second time).

        Raises
        ------
        StoreError
            If ``frames`` is not an external link; when called, also if its file lies outside the store folder.
        """
        link = self._file.get("frames", getlink=True)
        if not isinstance(link, h5py.ExternalLink):
            raise StoreError(f"video file {str(self.path)!r}: 'frames' is not a link to a frames file")
        return _LinkedFramesOpener(self.root, self.path, link.filename)

    def frames_header(self) -> FramesHeader:
        """The linked frames file's path, its frames array's shape and its unit key, from the file's header (no
        chunk index, no map).

        Raises
        ------
        StoreError
            If ``frames`` is not a link to a frames file inside the store, or that file cannot be opened
            (truncated, not HDF5) or holds no ``frames`` array; the message names the file.
        """
        link = self._file.get("frames", getlink=True)
        if not isinstance(link, h5py.ExternalLink):
            raise StoreError(f"video file {str(self.path)!r}: 'frames' is not a link to a frames file")
        target = _link_target(self.root, self.path, "frames", link.filename)
        f, real = _open_inside(self.root, target, "frames file")
        try:
            ds = f.get("frames")
            if not isinstance(ds, h5py.Dataset):
                raise StoreError(f"frames file {str(real)!r}: 'frames' is not an array", path=str(real))
            key = _get_attrs(f, ("key",)).get("key")
            return FramesHeader(real, tuple(int(v) for v in ds.shape), key)
        finally:
            f.close()

    def close(self) -> None:
        if self._file.id.valid:
            self._file.close()


class HDF5Backend(Backend):
    """The HDF5 layout described in this module's docstring."""

    name = "hdf5"
    keeps_video_table = True

    @classmethod
    def detect(cls, folder: Path) -> bool:
        return (folder / ROOT_FILE).exists() or (folder / ROOT_FILE).with_suffix(".h5" + PARTIAL).exists()

    # -- root --------------------------------------------------------------------------------------------------

    @property
    def root_path(self) -> Path:
        """``OUT/store.h5``."""
        return self.folder / ROOT_FILE

    def read_root(self) -> tuple[dict[str, Any], np.ndarray]:
        if not self.root_path.exists():
            return {}, np.zeros((0, 2), np.int64)
        f, real = _open_inside(self.folder, self.root_path, "root file")  # also checks every /videos link
        with f:
            self.root_identity = _identity(os.fstat(f.id.get_vfd_handle()))
            attrs = _get_attrs(f)
            has_index = f.get("index", getlink=True) is not None
            index = index_rows(_read_array(f, real, self.folder, "index"), str(self.folder)) if has_index else None
        return attrs, index if index is not None else np.zeros((0, 2), np.int64)

    def _write_root_file(
        self,
        attrs: dict[str, Any],
        index: np.ndarray | None,
        video_ids: list[str],
        videos: Mapping[str, tuple[dict[str, Any], Mapping[str, np.ndarray]]] | None = None,
    ) -> None:
        partial = self.folder / (ROOT_FILE + PARTIAL)
        remove(partial)
        self.folder.mkdir(parents=True, exist_ok=True)
        with _open(partial, "w") as f:
            _set_attrs(f, {k: v for k, v in attrs.items() if k != "complete"})
            if index is not None:
                _write_array(f, "index", np.asarray(index, dtype=np.int64).reshape(-1, 2))
            links = f.create_group("videos")
            for vid in video_ids:
                links[vid] = h5py.ExternalLink(f"videos/{node_name(vid)}.h5", "/")
            if videos is not None:
                entries = [
                    (*videos[v], self._video_path(v), self._unit_path(videos[v][0]["frames_key"])) for v in video_ids
                ]
                write_table(f.create_group("table"), self.folder, entries)
            f.attrs["complete"] = json.dumps(bool(attrs.get("complete", False)))
        fsync_file(partial)
        publish(partial, self.root_path)

    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        self._write_root_file({**attrs, "complete": False}, None, [])

    def write_root(
        self,
        attrs: dict[str, Any],
        index: np.ndarray,
        video_ids: list[str],
        videos: Mapping[str, tuple[dict[str, Any], Mapping[str, np.ndarray]]] | None = None,
    ) -> None:
        self._write_root_file({**attrs, "complete": True}, index, video_ids, videos)

    def video_table(self, video_ids: list[str], root_identity: Any) -> VideoTable | None:
        """The root's :class:`~vidlabel.store._hdf5_table.VideoTable`, or None (none, or the root is not the file
        of ``root_identity``, the one the store was opened with)."""
        if root_identity is None:
            return None
        return VideoTable.read(self.root_path, self.folder, video_ids, root_identity)

    # -- frames units --------------------------------------------------------------------------------------------

    def _unit_path(self, key: str) -> Path:
        return self.folder / "frames" / f"{key}.h5"

    def _complete_unit_attrs(self, path: Path) -> dict[str, Any] | None:
        """Attributes of the frames file ``path`` if it is a complete unit of the key it is named by, else None."""
        real = inside_store(self.folder, path, "frames file")  # refused, not skipped, outside the store
        try:
            f = _open(real)
        except StoreError:  # unreadable (cut short): not a unit; the export rewrites it
            return None
        with f:
            _check_links(f, real, self.folder)
            attrs = _get_attrs(f)
        return attrs if attrs.get("complete") is True and attrs.get("key") == path.stem else None

    def frames_units(self) -> dict[str, dict[str, Any]]:
        units: dict[str, dict[str, Any]] = {}
        frames_dir = self.folder / "frames"
        if not frames_dir.is_dir():
            return units
        for path in sorted(frames_dir.glob("*.h5")):
            attrs = self._complete_unit_attrs(path)
            if attrs is not None:
                units[path.stem] = attrs
        return units

    def unit_published(self, key: str, video_id: str | None = None) -> bool:
        # the one file of the key, not every unit: each export task asks, and a scan of all was quadratic
        path = self._unit_path(key)
        return path.is_file() and self._complete_unit_attrs(path) is not None

    def open_frames_unit(self, key: str) -> HDF5FramesReader:
        return HDF5FramesReader(self._unit_path(key), self.folder)

    def unit_frame_number(self, key: str) -> np.ndarray:
        f, real = _open_inside(self.folder, self._unit_path(key), "frames file")
        with f:
            return _read_array(f, real, self.folder, "frame_number").astype(np.int64)

    def frames_writer(
        self, key: str, *, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, attrs: dict[str, Any]
    ) -> HDF5FramesWriter:
        return HDF5FramesWriter(self.folder, key, shape, chunk_frames, codec, attrs)

    # -- videos -------------------------------------------------------------------------------------------------

    def _video_path(self, video_id: str) -> Path:
        return self.folder / "videos" / f"{node_name(video_id)}.h5"

    def video_ids(self) -> list[str]:
        videos = self.folder / "videos"
        if not videos.is_dir():
            return []
        found = (
            node_video_id(p.name[: -len(".h5")], functools.partial(self._recorded_id, p)) for p in videos.glob("*.h5")
        )
        return sorted(v for v in found if v is not None)

    def _recorded_id(self, path: Path) -> Any:
        """The ``video_id`` a video file records (None if it cannot be read)."""
        inside_store(self.folder, path, "video file")
        try:
            with _open(path) as f:
                return _get_attrs(f).get("video_id")
        except StoreError:
            return None

    def video_attrs(self, video_id: str) -> dict[str, Any] | None:
        path = self._video_path(video_id)
        if not path.exists():
            return None
        inside_store(self.folder, path, "video file")  # refused, not taken for a missing video
        try:
            with _open(path) as f:
                return _get_attrs(f)
        except StoreError:
            return None

    def write_video(
        self, video_id: str, *, attrs: dict[str, Any], arrays: dict[str, np.ndarray], frames_key: str
    ) -> None:
        final = self._video_path(video_id)
        partial = final.with_name(final.name + PARTIAL)
        final.parent.mkdir(parents=True, exist_ok=True)
        remove(partial)
        with _open(partial, "w") as f:
            _set_attrs(f, {k: v for k, v in attrs.items() if k != "complete"})
            for name, arr in arrays.items():
                group_name, _, leaf = name.rpartition("/")
                group = f.require_group(group_name) if group_name else f
                _write_array(group, leaf, arr)
            f["frames"] = h5py.ExternalLink(f"../frames/{frames_key}.h5", "/frames")
            f["frames_crc32c"] = h5py.ExternalLink(f"../frames/{frames_key}.h5", "/frames_crc32c")
            f.attrs["complete"] = json.dumps(True)
        fsync_file(partial)
        publish(partial, final)

    def open_video(self, video_id: str) -> HDF5VideoReader:
        path = self._video_path(video_id)
        if not path.exists():
            raise StoreError(
                f"frame store {str(self.folder)!r} has no file for video {video_id!r} ({path}): {STORE_CHANGED} "
                "(the same export command into this folder writes the missing file again)",
                video_id=video_id,
            )
        return HDF5VideoReader(path, self.folder)

    def missing_video_problem(self, video_id: str) -> str:
        return f"video {video_id!r} is listed in the root but its file {str(self._video_path(video_id))!r} is missing"

    def remove_video(self, video_id: str) -> None:
        remove(self._video_path(video_id))

    def collect_garbage(self, keep_units: set[str]) -> None:
        for sub in ("frames", "videos"):
            for path in (self.folder / sub).glob(f"*{PARTIAL}"):
                remove(path)
        for path in (self.folder / "frames").glob("*.h5"):
            if path.stem not in keep_units:
                remove(path)
        remove(self.folder / (ROOT_FILE + PARTIAL))

    def size_on_disk(self) -> int:
        return folder_size(self.folder)
