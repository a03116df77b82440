"""Reading the chunks of one HDF5 frames file: compressed ones through HDF5, uncompressed ones copied straight
out of a read-only memory map of the (immutable) file."""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import sys
from pathlib import Path
from typing import Any, Literal

import google_crc32c  # here, not at the first read: DataLoader workers forked later inherit it
import h5py
import numpy as np

from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.store._backend import (
    FramesReader,
    frames_shape_problem,
)
from vidlabel.store._fs import (
    MADV_POPULATE_READ,
    PAGE,
    STORE_CHANGED,
    refuse_overdeclared,
)
from vidlabel.store._hdf5_files import (
    _check_dataset,
    _get_attrs,
    _link_target,
    _open_inside,
    _read_array,
)

__all__ = ["FIRST_TOUCH", "WORKER_FIRST_TOUCH", "HDF5FramesReader"]

#: How the first read of an uncompressed chunk in a process meets the read-only memory map of the frames file:
#: one ``madvise(MADV_POPULATE_READ)`` call maps the chunk's pages just before its first copy, in the reading
#: thread, instead of a page fault every few pages during the copy (where the call is missing, the copy faults
#: them in). ``scripts/bench_storeframes.py`` row 1 measures a first pass against a warm one.
FIRST_TOUCH = "populate"
#: How the first read of a chunk meets the file in a PyTorch DataLoader worker process: with torch's default
#: ``persistent_workers=False`` every epoch starts new workers, and a fork copies none of the parent's page
#: tables of a file map, so a worker copies a chunk's first read straight from the page cache with ``pread``,
#: mapping nothing (later reads of the chunk in that worker use the map). ``scripts/bench_storeframes.py`` row 3.
WORKER_FIRST_TOUCH = "pread"
# bytes of a mapped chunk copied, then checksummed while in the core's cache (HDF5FramesReader)
_COPY_BLOCK = 512 << 10


def _in_dataloader_worker() -> bool:
    """True in a PyTorch DataLoader worker process (torch is never imported here for it)."""
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


def _open_linked_frames(root: Path, path: Path, filename: str) -> HDF5FramesReader:
    """The frames file that file ``path``'s ``frames`` link names (``filename``), checked inside ``root``."""
    return HDF5FramesReader(_link_target(root, path, "frames", filename), root)


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """Which file, and which version of it: device, inode, size in bytes, modification and change times in ns
    (the change time moves with every write and with any setting of the modification time, which a program
    can put back: an edit in place is never taken for the file indexed)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclasses.dataclass(frozen=True)
class _FramesIndex:
    """What reading an uncompressed frames file takes besides the file's bytes, learnt by one full open (HDF5's
    header, attributes, chunk index and ``frames_crc32c``): a reader rebuilt from it opens the file and maps it,
    nothing more (:meth:`HDF5FramesReader.reopen`). Plain data, so it survives a fork."""

    path: Path  # resolved, checked inside ``root`` by the full open
    root: Path
    identity: tuple[int, int, int, int, int]  # of the file the full open mapped (:func:`_identity`)
    shape: tuple[int, ...]
    chunk_frames: int
    unit_key: str | None
    offsets: np.ndarray  # (n_chunks,) int64 byte offset of each chunk in the file, -1 where unknown
    crc32c: np.ndarray  # (n_chunks,) uint32, checked against the chunk count


class _LinkedFramesOpener:
    """Opens the frames file a video file's ``frames`` link names, as :func:`_open_linked_frames`; after its first
    open of an uncompressed file it keeps that file's :class:`_FramesIndex`, so that opening it again (a reader
    closed by :class:`~vidlabel.store.FrameStore`'s LRU of open readers, or a DataLoader worker forked after
    the file was read) maps the file without HDF5, in tens of microseconds instead of milliseconds
    (``scripts/bench_scale.py``, random reads over many videos).
    The file is opened in full again, and the index learnt anew, when it is no longer the file indexed
    (device, inode, size, modification or change time differ), so its unit key and shape are checked again
    even with ``verify_checksums=False``."""

    def __init__(self, root: Path, path: Path, filename: str) -> None:
        self.root, self.path, self.filename = root, path, filename
        self.frames_index: _FramesIndex | None = None

    def __call__(self) -> HDF5FramesReader:
        index = self.frames_index
        if index is not None:
            reader = HDF5FramesReader.reopen(index)
            if reader is not None:
                return reader
            self.frames_index = None
        reader = _open_linked_frames(self.root, self.path, self.filename)
        self.frames_index = reader.frames_index()
        return reader


class HDF5FramesReader(FramesReader):
    """Chunks of ``/frames`` in one frames file.

    Compressed chunks are read with ``read_direct_chunk`` and decoded by the
    codec. Uncompressed chunks are copied straight out of a read-only memory
    map of the file at the byte offsets HDF5 reports (``chunk_iter``, once
    per open): a frames file is immutable once published, and a copy from
    the mapped page cache runs at memcpy speed, where ``read_direct_chunk``
    reached about 0.85 of it (``scripts/bench_store.py``). A file whose
    offsets cannot be listed falls back to ``read_direct_chunk``.
    """

    backend = "hdf5"

    def __init__(self, path: Path, root: Path | None = None) -> None:
        root = path.parent.parent if root is None else root  # OUT/frames/<key>.h5
        file, self.path = _open_inside(root, path, "frames file")
        self._file: h5py.File | None = file  # None in a reader rebuilt from an index until a read needs it
        self.root = root
        try:
            ds, attrs = self._frames_array()
        except BaseException:
            file.close()
            raise
        super().__init__(ds.shape, int(attrs["chunk_frames"]), attrs["codec"])
        self.unit_key = attrs.get("key")
        self._ds: h5py.Dataset | None = ds
        self._dsid: Any = ds.id
        self._no_map()
        if self.codec.raw:
            self._map_chunks()

    def _no_map(self) -> None:
        """The reader's state before (or without) a map of the file: every read through HDF5."""
        self._mmap: mmap.mmap | None = None
        self._mapped: np.ndarray | None = None  # the whole file as uint8, a view of the map
        self._offsets: np.ndarray | None = None
        # for "pread" first touches
        self._fd = -1
        # per chunk: read through the map in this process already
        self._touched = bytearray()
        self._first_touch = WORKER_FIRST_TOUCH if _in_dataloader_worker() else FIRST_TOUCH

    def _use_map(self, mapped: mmap.mmap, fd: int, offsets: np.ndarray) -> None:
        """Read uncompressed chunks from ``mapped``, the file's read-only map (``fd``: the file, for ``pread`` and
        its size), at the byte ``offsets`` of each chunk (-1: unknown, read through HDF5)."""
        self._mmap, self._fd = mapped, fd
        self._mapped = np.frombuffer(mapped, dtype=np.uint8)
        self._offsets = offsets
        self._chunk_bytes = int(np.prod((self.chunk_frames, *self.shape[1:])))
        self._touched = bytearray(self.n_chunks)
        # the file as mapped; a chunk verified against its CRC-32C is copied unchecked only while the file is this
        self._identity = _identity(os.fstat(fd)) if fd >= 0 else None
        # per chunk: its mapped bytes matched their CRC-32C in this process
        self._verified = bytearray(self.n_chunks)

    @classmethod
    def reopen(cls, index: _FramesIndex) -> HDF5FramesReader | None:
        """A reader of the file ``index`` describes, opened and mapped without HDF5 (whose handles are opened
        only if a read needs them: a chunk without a known offset, :meth:`raw_chunk`); None where the file at
        ``index.path`` is not the file indexed any more, or cannot be mapped (the caller opens it in full)."""
        try:
            # the path was resolved inside the store by the full open: a symlink put there since is not followed
            # (the full open then checks where it leads)
            fd = os.open(index.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            if _identity(os.fstat(fd)) != index.identity:
                os.close(fd)
                return None
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            os.close(fd)
            return None
        self = cls.__new__(cls)
        FramesReader.__init__(self, index.shape, index.chunk_frames, "none")
        self.path, self.root, self.unit_key = index.path, index.root, index.unit_key
        self._file = self._ds = self._dsid = None
        self._no_map()
        self._use_map(mapped, fd, index.offsets)
        self._crc32c = index.crc32c
        return self

    def frames_index(self) -> _FramesIndex | None:
        """This open file's :class:`_FramesIndex`, or None where a reopen could not use one (a compressed codec,
        no chunk offsets or no map, stored checksums that do not cover the chunks)."""
        if not self.codec.raw or self._offsets is None or self._fd < 0:
            return None
        try:
            crc = self.stored_crc32c()
        except (StoreError, OSError, KeyError):  # reading says so, as before
            return None
        return _FramesIndex(
            self.path, self.root, _identity(os.fstat(self._fd)), self.shape, self.chunk_frames, self.unit_key,
            self._offsets, crc,
        )  # fmt: skip

    def _h5(self) -> h5py.h5d.DatasetID:
        """The HDF5 handle of ``/frames``, opened now where this reader was rebuilt from an index."""
        if self._dsid is None:
            self._file, _ = _open_inside(self.root, self.path, "frames file")
            try:
                ds, _ = self._frames_array()
            except BaseException:
                self._file.close()
                self._file = None
                raise
            self._ds, self._dsid = ds, ds.id
        return self._dsid

    def _frames_array(self) -> tuple[h5py.Dataset, dict[str, Any]]:
        """``/frames`` (checked: (T, H, W, 3) uint8, its data in this file) and the attributes a reader needs.

        Raises
        ------
        StoreError
            If ``frames`` is missing, not an array of frames, or its data lies in other files.
        StoreCorruptError
            If the file's metadata is damaged (h5py cannot follow it), or declares frames no export writes
            (:func:`~vidlabel.store._backend.frames_shape_problem`: sides, frame count, ``chunk_frames``) or chunks
            other than ``chunk_frames`` whole frames; the message names the file and the valid range.
        """
        where = f"frames file {str(self.path)!r}"
        assert self._file is not None
        try:
            ds = self._file.get("frames")
            attrs = _get_attrs(self._file, ("chunk_frames", "codec", "key"))
        except StoreError:  # a key given twice in an attribute: said as it is
            raise
        except (RuntimeError, KeyError, ValueError, OSError) as err:  # damaged metadata, a link loop
            raise StoreCorruptError(f"{where} is damaged: {err}", path=str(self.path)) from err
        if not isinstance(ds, h5py.Dataset):
            raise StoreError(
                f"{where}: 'frames' is not an array (missing, or a link that leads nowhere or back to itself)",
                path=str(self.path),
            )
        if ds.ndim != 4 or ds.shape[3] != 3 or ds.dtype != np.uint8:
            raise StoreError(
                f"{where}: 'frames' is {ds.dtype} of shape {ds.shape}, not (T, H, W, 3) uint8 frames",
                path=str(self.path),
            )
        if "chunk_frames" not in attrs or "codec" not in attrs:
            raise StoreError(f"{where} has no 'chunk_frames' or 'codec' attribute", path=str(self.path))
        _check_dataset(ds, "frames", self.path)
        chunk_frames = attrs["chunk_frames"]
        if type(chunk_frames) is not int:
            problem: str | None = f"its chunk_frames attribute {chunk_frames!r} is not a whole number"
        else:
            problem = frames_shape_problem(ds.shape, chunk_frames)
            if problem is None and ds.chunks != (chunk_frames, *ds.shape[1:]):
                problem = (
                    f"its chunks are {ds.chunks}, not the ({chunk_frames}, H, W, 3) of whole frames its chunk_frames "
                    f"attribute ({chunk_frames}) says"
                )
        if problem is not None:  # a read allocates (chunk_frames, H, W, 3) bytes a chunk: refused before any read
            raise StoreCorruptError(f"{where}: 'frames' {ds.shape}: {problem}: {STORE_CHANGED}", path=str(self.path))
        return ds, attrs

    def _map_chunks(self) -> None:
        # an uncompressed file holds every chunk whole, and what follows allocates a few bytes per chunk declared:
        # a 160 KB file declaring 10**8 frames took 860 MB here (2**31 frames, 19 GB) before anything was read
        try:
            refuse_overdeclared(
                f"frames file {str(self.path)!r} declares uncompressed frames {self.shape}", math.prod(self.shape),
                os.path.getsize(self.path), "the file holds", str(self.path),
            )  # fmt: skip
        except StoreCorruptError:
            self.close()
            raise
        chunk_bytes = int(np.prod((self.chunk_frames, *self.shape[1:])))
        offsets = np.full(self.n_chunks, -1, np.int64)

        def visit(info: Any) -> None:
            if info.filter_mask == 0 and info.size == chunk_bytes:
                offsets[int(info.chunk_offset[0]) // self.chunk_frames] = int(info.byte_offset)

        try:
            self._dsid.chunk_iter(visit)
        except RuntimeError as err:  # h5py: the chunk index is damaged
            self.close()
            raise StoreCorruptError(
                f"frames file {str(self.path)!r} is damaged: its chunk index cannot be read ({err})",
                path=str(self.path),
            ) from err
        except (AttributeError, OSError, ValueError):  # old HDF5 without chunk_iter
            return
        try:
            with open(self.path, "rb") as fh:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                fd = os.dup(fh.fileno())  # its size is checked before each copy out of the map
        except (OSError, ValueError):  # no mmap here
            return
        self._use_map(mapped, fd, offsets)

    def _copy_mapped(self, index: int, offset: int, out: np.ndarray, crc: bool) -> int | None:
        """Copy chunk ``index`` (at byte ``offset`` of the file) out of the map into the flat ``out``; with
        ``crc``, return the CRC-32C of the bytes copied, unless the chunk matched its checksum in this process
        already and the file is still the one mapped (:func:`_identity`): then None, and nothing is hashed.

        The map is read-only and the file immutable: ``out`` never shares memory with it. The first read of
        a chunk in this process takes its pages in as :data:`FIRST_TOUCH` says, instead of one page fault
        per few pages during the copy. The checksum is computed block by block (:data:`_COPY_BLOCK` bytes)
        right after each block is copied, while it is in the core's cache (a CRC pass over the whole chunk
        after the copy would read it back from memory).
        """
        assert self._mapped is not None
        end = offset + self._chunk_bytes
        if self._fd >= 0:
            st = os.fstat(self._fd)
            if st.st_size < end:  # a copy past the end: SIGBUS
                raise self._changed(f"it now has {st.st_size} bytes, chunk {index} ends at byte {end}")
            # any write to the file since it was mapped moves its change time: every chunk is checked again
            if crc and self._verified[index] and _identity(st) == self._identity:
                crc = False
        if not self._touched[index]:
            self._touched[index] = 1
            if self._first_touch == "populate" and MADV_POPULATE_READ is not None and self._mmap is not None:
                start = offset - offset % PAGE
                try:
                    self._mmap.madvise(MADV_POPULATE_READ, start, end - start)
                except (OSError, ValueError):
                    # an older kernel: the copies fault the pages in from now on
                    self._first_touch = "fault"
            elif self._first_touch == "pread" and self._fd >= 0:
                value = self._pread_chunk(offset, out, crc)
                if value is not False:
                    return value
        src = self._mapped[offset:end]
        if not crc:
            np.copyto(out, src)
            return None
        value = 0
        for start in range(0, self._chunk_bytes, _COPY_BLOCK):
            block = out[start : start + _COPY_BLOCK]
            np.copyto(block, src[start : start + _COPY_BLOCK])
            value = google_crc32c.extend(value, block)
        return value

    def _pread_chunk(self, offset: int, out: np.ndarray, crc: bool) -> int | Literal[False] | None:
        """Copy the chunk at byte ``offset`` into the flat ``out`` with ``os.preadv``, :data:`_COPY_BLOCK` bytes
        at a time, each block checksummed right after it is read while it is in the core's cache (a pass over
        the whole chunk after the read would take it back from memory; ``scripts/bench_storeframes.py`` row 4).
        Returns the CRC-32C (with ``crc``, else None), or False where the file ended first (the caller copies
        from the map, which checks the size)."""
        view, value = memoryview(out.data), 0
        for start in range(0, self._chunk_bytes, _COPY_BLOCK):
            end, done = min(start + _COPY_BLOCK, self._chunk_bytes), start
            while done < end:
                got = os.preadv(self._fd, [view[done:end]], offset + done)
                if got <= 0:
                    return False
                done += got
            if crc:
                value = google_crc32c.extend(value, out[start:end])
        return value if crc else None

    def raw_chunk(self, index: int) -> bytes:
        _, data = self._h5().read_direct_chunk((index * self.chunk_frames, 0, 0, 0))
        return bytes(data)

    def stored_checksums(self) -> np.ndarray:
        self._h5()
        assert self._file is not None
        return _read_array(self._file, self.path, self.root, "frames_crc32c")

    def check_crc(self, index: int, read: int) -> None:
        """As :meth:`FramesReader.check_crc`; a mismatch in a file that is shorter than HDF5 knows it (cut
        since it was opened: HDF5 shares a file opened twice in a process and reads past the cut as zeros, the
        stored checksums too) is reported as that, not as a damaged chunk."""
        try:
            super().check_crc(index, read)
        except StoreCorruptError:
            self._h5()
            assert self._file is not None
            size, known = os.path.getsize(self.path), int(self._file.id.get_filesize())
            if size < known:
                raise self._changed(f"it has {size} bytes of the {known} written") from None
            raise

    def _changed(self, how: str) -> StoreCorruptError:
        """The error for a frames file that changed since this process opened it (``how``: what changed); the
        caller's wrapper (:meth:`FrameStore.read_rows`) adds what to do."""
        return StoreCorruptError(
            f"frames file {str(self.path)!r} changed since it was opened: {how}; a store's files never change after "
            "export",
            path=str(self.path),
        )

    def read_chunk(self, index: int, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty((self.chunk_frames, *self.shape[1:]), dtype=np.uint8)
        if self.codec.raw:
            offset = -1 if self._offsets is None or not 0 <= index < self._offsets.size else int(self._offsets[index])
            if offset >= 0 and self._mapped is not None:
                read = self._copy_mapped(index, offset, out.reshape(-1), self.verify_checksums)
                if read is not None:
                    self.check_crc(index, read)  # the bytes returned are the stored bytes: check those
                    self._verified[index] = 1
            else:
                self._h5().read_direct_chunk((index * self.chunk_frames, 0, 0, 0), out=out.reshape(-1))
                self.check_chunk(index, out)
            return out
        _, data = self._h5().read_direct_chunk((index * self.chunk_frames, 0, 0, 0))
        self.check_chunk(index, data)
        return self.codec.decode(data, out, self.backend)

    def close(self) -> None:
        self._mapped = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        if self._file is not None and self._file.id.valid:
            self._file.close()
