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

import dataclasses
import errno
import functools
import json
import math
import mmap
import os
import re
import stat
import sys
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import google_crc32c  # here, not at the first read: DataLoader workers forked later inherit it
import h5py
import numpy as np

from vidlabel._env import env_choice, env_switch
from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.spec import chunk_problem
from vidlabel.store._backend import (
    Backend,
    FramesHeader,
    FramesReader,
    FramesWriter,
    VideoReader,
    folder_size,
    frames_shape_problem,
    node_name,
    node_video_id,
)
from vidlabel.store._codecs import Codec
from vidlabel.store._fs import (
    MADV_POPULATE_READ,
    PAGE,
    STORE_CHANGED,
    fsync_file,
    in_background,
    inside_store,
    load_store_json,
    populate,
    populate_available,
    publish,
    refuse_overdeclared,
    remove,
)
from vidlabel.store._layout import index_rows

__all__ = ["HDF5Backend"]

ROOT_FILE = "store.h5"
PARTIAL = ".partial"

#: How the first read of an uncompressed chunk in a process meets the read-only memory map of the frames file:
#: "populate" (the default) maps a chunk's pages with one ``madvise(MADV_POPULATE_READ)`` call just before its
#: first copy, in the reading thread; "readahead" hands the chunks of a batch (several chunks read at once, as
#: StoreFrames' ``__getitems__`` does) to a background thread of this process that maps their pages so from the
#: batch's last chunk backwards while the reading thread copies from the first forwards (each chunk's pages are
#: mapped by whichever gets there first; the thread runs without the GIL); "pread" copies a chunk's first read
#: with ``os.preadv`` (later reads use the map); "fault" lets the copy fault the pages in (15-45 minor faults
#: per 480p/720p frame on issue 15's machines). Where ``MADV_POPULATE_READ`` is missing (before Linux 5.14, not
#: Linux) the pages are faulted in as by "fault". ``scripts/bench_storeframes.py`` row 1 measures all four in
#: one run. "readahead" was the default until 2026-12-03. On issue 15's Xeon VM, row 1's first pass against warm
#: over a 1.5 GB store (medians of 3 runs): 640x480 0.87x against 0.73x for "readahead", 1280x720 0.88x
#: against 0.87x; the goal is 0.8x. Handing each batch to the thread costs more than it saves when the chunks
#: are small.
FIRST_TOUCH = "populate"
#: The ways a first read may meet the map; ``VIDLABEL_FIRST_TOUCH`` picks one for this process (the best one depends
#: on the machine: on issue 15's EPYC VM "readahead" gave 0.77-0.91x where "populate" gave 0.66-0.76x, the
#: reverse of the Xeon VM; ``scripts/bench_storeframes.py --only 1`` measures each on yours).
FIRST_TOUCHES = ("populate", "readahead", "pread", "fault")
#: How the first read of a chunk meets the file in a PyTorch DataLoader worker process. With torch's default
#: ``persistent_workers=False`` every epoch starts new workers, so every epoch is a worker's first pass: the
#: pages of the frames file are mapped again in each (a fork does not copy the parent's page tables of a file
#: map). "pread" copies a chunk's first read in the worker straight from the page cache, mapping nothing
#: (later reads of the chunk in that worker use the map). ``scripts/bench_storeframes.py`` row 3 on issue 15's
#: EPYC VM, 2 workers at 720p: 2.04 / 3.26 ms of worker CPU a sample at batch 8 / 32 against 2.21 / 4.81 with
#: "readahead" (median of 3); epochs of 1,500 samples drawn from 150, where a worker reads each chunk 5 times,
#: 0.80 against 0.69 ms.
WORKER_FIRST_TOUCH = "pread"
#: Uncompressed frames units larger than a quarter of the free memory (:func:`_direct_write_wanted`), or every
#: one with ``VIDLABEL_HDF5_DIRECT_WRITE=1``, are written with ``O_DIRECT`` (Linux) into chunks HDF5 allocates
#: up front as blocks of consecutive chunks (see :class:`_ChunkRegion`); smaller ones, all with False or
#: ``VIDLABEL_HDF5_DIRECT_WRITE=0``, and any on a file system that refuses ``O_DIRECT``, write each chunk
#: through the page cache with ``write_direct_chunk`` (or, with :data:`BUFFERED_REGION_WRITE`, in whole 2 MiB
#: blocks).
DIRECT_WRITE = True
#: True (the default since 2026-12-06): an uncompressed unit that goes through the page cache is streamed into
#: its early-allocated chunks by :class:`_ChunkRegion` in writes of whole 2 MiB blocks of the file (the chunks'
#: own bytes, gathered with ``pwritev``: no copy), so that a kernel with large page-cache folios keeps 2 MiB
#: folios that a reader maps with one page-table entry. HDF5's write of each chunk at its own offset
#: (``write_direct_chunk``, False) leaves smaller folios, and a file stays in the page cache as it was written:
#: on issue 15's EPYC VM (Linux 6.18, ext4, proactive reclaim off) 0% / 24% of a 640x480 / 1280x720 frames file
#: in 2 MiB folios against 95-98%, and a fresh process's first pass over the store 0.69 / 0.71x of its warm
#: pass against 0.82 / 0.80x (``scripts/bench_storeframes.py`` row 1; ``--only folios`` measures the same with
#: a plain map copy and no vidlabel code: 0.72 / 0.82x against 0.90-0.94x). Until 2026-12-06 the blocks were
#: copied into staging buffers first, which cost export CPU, and it was off; with DAMON reclaim on, pages paged
#: out and read again came back in large folios anyway and hid the difference.
BUFFERED_REGION_WRITE = True
_COPY_BLOCK = 512 << 10  # bytes of a mapped chunk copied, then checksummed while in cache (HDF5FramesReader)
_STAGE_BYTES = 4 << 20  # bytes gathered before one write of a chunk region (two such buffers per unit written)
_FOLIO_BYTES = 2 << 20  # buffered region writes start on these boundaries of the file (a PMD-sized folio)
_IOV_MAX = 1024  # views one pwritev takes (Linux's IOV_MAX)


def _in_dataloader_worker() -> bool:
    """True in a PyTorch DataLoader worker process (torch is never imported here for it)."""
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


def _open(path: Path, mode: str = "r") -> h5py.File:
    """Open an HDF5 file of a store with h5py.

    Raises
    ------
    StoreError
        If h5py cannot open it; for a read, the message says why in a few words (:func:`_unreadable`) and what
        to do, on one line (h5py's own words span lines and repeat the path), h5py's error chained.
    """
    try:
        if mode == "r":
            return h5py.File(path, "r", rdcc_nbytes=0)
        return h5py.File(path, mode)
    except OSError as err:
        why = f"{_unreadable(path, err)}; restore it, or export again into an empty folder" if mode == "r" else err
        raise StoreError(f"cannot open HDF5 file {str(path)!r} of a frame store: {why}", path=str(path)) from err


def _unreadable(path: Path, err: OSError) -> str:
    """Why h5py could not open ``path`` for reading, in a few words: missing, a directory, empty, truncated (its
    size and the size its header records), not an HDF5 file, or not readable; else h5py's words on one line."""
    words = " ".join(str(err).split())
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "it is missing"
    except OSError as stat_err:
        return f"it cannot be examined ({stat_err.strerror or stat_err})"
    if stat.S_ISDIR(st.st_mode):
        return "it is a directory, not a file"
    if st.st_size == 0:
        return "it is empty (0 bytes)"
    if "truncated file" in words:
        sizes = re.search(r"\beof = (\d+).*\bstored_eof = (\d+)", words)
        if sizes is None:
            return "it is truncated"
        return f"it is truncated ({sizes[1]} bytes of the {sizes[2]} its header records)"
    if "file signature not found" in words:
        return f"it is not an HDF5 file (no HDF5 signature in its {st.st_size} bytes)"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "it cannot be read (permission denied)"
    return f"h5py cannot read it ({words})"


def _open_inside(root: Path, path: Path, what: str) -> tuple[h5py.File, Path]:
    """Open a store file for reading, refusing one outside the store folder and one whose links leave it.

    Returns the open file and its resolved path.
    """
    real = inside_store(root, path, what)
    f = _open(real)
    try:
        _check_links(f, real, root)
    except (RuntimeError, KeyError, ValueError) as err:  # h5py's words for damaged metadata
        f.close()
        raise StoreCorruptError(f"{what} {str(real)!r} is damaged: {err}", path=str(real)) from err
    except BaseException:
        f.close()
        raise
    return f, real


def _link_target(root: Path, path: Path, name: str, filename: str) -> Path:
    """The file an external link ``name`` of file ``path`` names, resolved; refused outside the store folder."""
    return inside_store(root, path.parent / filename, f"external link {name!r} of {str(path)!r} (to {filename!r})")


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
    the file was read) maps the file without HDF5: 1.2-1.3 ms a frames file in a warm process, 3-4 ms in a
    fresh fork, against tens of microseconds (``scripts/bench_scale.py``, random reads over 1,000 videos).
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


def _check_links(f: h5py.File, path: Path, root: Path) -> None:
    """Refuse an open store file with an external link that leads outside the store folder.

    ``H5Lvisit`` lists every link of the file without traversing external
    links; each one's file name is resolved relative to the file's folder
    (as vidlabel writes them) and must stay inside ``root``.
    """
    found: list[tuple[str, str]] = []

    def visit(name: bytes, info: Any) -> None:
        if info.type == h5py.h5l.TYPE_EXTERNAL:
            filename, _obj = f.id.links.get_val(name)
            found.append((name.decode(errors="replace"), filename.decode(errors="replace")))

    f.id.links.visit(visit, info=True)
    for name, filename in found:
        _link_target(root, path, name, filename)


def _check_dataset(ds: h5py.Dataset | h5py.h5d.DatasetID, name: str, path: Path) -> None:
    """Refuse a dataset whose data lies in other files (HDF5 external storage, or a virtual dataset)."""
    dcpl = (ds.id if isinstance(ds, h5py.Dataset) else ds).get_create_plist()
    if dcpl.get_external_count() > 0:
        files = [dcpl.get_external(i)[0].decode(errors="replace") for i in range(dcpl.get_external_count())]
        raise StoreError(
            f"{str(path)!r}: dataset {name!r} keeps its data in external files {files}: refused "
            "(a store's arrays are stored in its own files)",
            path=str(path),
        )
    if dcpl.get_layout() == h5py.h5d.VIRTUAL:
        raise StoreError(
            f"{str(path)!r}: dataset {name!r} is a virtual dataset (its data maps to other files): refused",
            path=str(path),
        )


def _read_array(f: h5py.File, path: Path, root: Path, name: str) -> np.ndarray:
    """Array ``name`` of an open store file, whole; an external link on the way is followed by vidlabel
    (resolved and checked with :func:`_link_target`), never by HDF5.

    Read with h5py's low-level calls (link info, ``H5Oopen``, ``H5Dread`` into a new array): a video's 20
    small arrays took 6.3 ms a video through ``File.get`` / ``File[name]`` / ``Dataset[()]``, 1.2 ms so
    (``scripts/bench_scale.py``: ``StoreFrames(frames="annotated")`` reads every video's arrays).

    Raises
    ------
    KeyError
        If there is no ``name``.
    StoreError
        If ``name`` is not an array, or keeps its data in other files.
    StoreCorruptError
        If its bytes fail their checksum or the file is cut.
    """
    parts = name.strip("/").split("/")
    links = f.id.links
    for k in range(1, len(parts) + 1):  # the groups on the way, then the array's own link
        sub = "/".join(parts[:k])
        try:
            kind = links.get_info(sub.encode()).type if links.exists(sub.encode()) else None
        except (KeyError, RuntimeError):  # a component on the way that is no group
            kind = None
        if kind is None:
            raise KeyError(name)
        if kind == h5py.h5l.TYPE_EXTERNAL:
            link = f.get(sub, getlink=True)
            return _read_linked(root, path, sub, link, "/".join(parts[k:]))
    try:
        obj = h5py.h5o.open(f.id, "/".join(parts).encode())
    except (KeyError, RuntimeError):  # a soft link that leads nowhere
        raise KeyError(name) from None
    if not isinstance(obj, h5py.h5d.DatasetID):
        raise StoreError(f"{str(path)!r}: {name!r} is not an array", path=str(path))
    _check_dataset(obj, name, path)
    dtype = obj.dtype
    # chunks never written read as the fill value, so a shape of 10**12 in a small file was allocated (vidlabel writes
    # its small arrays uncompressed; an edit with h5py may compress them)
    refuse_overdeclared(
        f"array {name!r} of {str(path)!r} declares shape {obj.shape} {dtype}", dtype.itemsize * math.prod(obj.shape),
        obj.get_storage_size(), "the file stores for it", str(path),
    )  # fmt: skip
    plist = obj.get_create_plist()
    chunks = plist.get_chunk() if plist.get_layout() == h5py.h5d.CHUNKED else None
    problem = chunk_problem(chunks, obj.shape, dtype.itemsize)
    if problem is not None:
        raise StoreCorruptError(f"array {name!r} of {str(path)!r}: {problem}: {STORE_CHANGED}", path=str(path))
    if dtype.kind == "O" or dtype.subdtype is not None:  # strings, array types: h5py's own conversions
        return np.asarray(h5py.Dataset(obj)[()])
    out = np.empty(obj.shape, dtype)
    try:
        if out.size:
            obj.read(h5py.h5s.ALL, h5py.h5s.ALL, out)
    except OSError as err:  # a checksummed (fletcher32) array whose bytes were damaged, a cut file
        raise StoreCorruptError(
            f"array {name!r} of {str(path)!r} cannot be read ({err}): the file is damaged (rerun the export, which "
            "rewrites it; `vidlabel verify` lists the damage)",
            path=str(path),
        ) from err
    return out


def _read_linked(root: Path, path: Path, name: str, link: h5py.ExternalLink, rest: str) -> np.ndarray:
    target = _link_target(root, path, name, link.filename)
    g, real = _open_inside(root, target, f"external link {name!r} of {str(path)!r}")
    with g:
        inner = link.path.strip("/") + (f"/{rest}" if rest else "")
        return _read_array(g, real, root, inner)


def _set_attrs(obj: h5py.HLObject, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        obj.attrs[key] = json.dumps(value)


def _get_attrs(obj: h5py.HLObject, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The JSON attributes of ``obj`` (all, or those of ``keys`` it has). h5py reads an attribute in about
    0.1 ms: opening a video's frames needs 1 of a video file's 20 and 2 of a frames file's 7.

    Raises
    ------
    StoreCorruptError
        If an attribute's JSON gives one key of an object twice (:func:`~vidlabel.store._fs.load_store_json`),
        naming the file, the attribute and the key.
    """
    out = {}
    items = obj.attrs.items() if keys is None else [(k, obj.attrs[k]) for k in keys if k in obj.attrs]
    for key, value in items:
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            out[key] = load_store_json(
                text, f"attribute {key!r} of {obj.name!r} in HDF5 file {obj.file.filename!r}", obj.file.filename
            )
        except (json.JSONDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
            out[key] = text
    return out


def _write_array(group: h5py.Group, name: str, arr: np.ndarray) -> None:
    arr = np.ascontiguousarray(arr)
    if arr.size:
        group.create_dataset(name, data=arr, chunks=True, fletcher32=True, maxshape=(None, *arr.shape[1:]))
    else:
        group.create_dataset(name, data=arr)


def _create_frames(
    f: h5py.File, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, *, early: bool = False
) -> h5py.Dataset:
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((chunk_frames, *shape[1:]))
    if early:  # every chunk's space allocated now (one block), nothing filled: the direct writer fills it
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


#: With ``VIDLABEL_HDF5_DIRECT_WRITE`` unset, a unit is written past the page cache when its bytes exceed this
#: fraction of the memory the kernel reports free (``MemFree``; where that cannot be read, always).
DIRECT_WRITE_FREE_FRACTION = 0.25


def _mem_free_bytes() -> int | None:
    """``MemFree`` of ``/proc/meminfo`` in bytes (free pages, not the reclaimable page cache), or None."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemFree:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _size_limit_allows(nbytes: int) -> bool:
    """True unless this process's file size limit (``ulimit -f``, ``RLIMIT_FSIZE``) is below ``nbytes`` plus
    1 MiB (HDF5's own structures in a frames file)."""
    try:
        import resource
    except ImportError:  # not on this OS
        return True
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return soft == resource.RLIM_INFINITY or soft >= nbytes + (1 << 20)


def _direct_write_wanted(nbytes: int) -> bool:
    """Write an uncompressed unit of ``nbytes`` with ``O_DIRECT`` (:class:`_ChunkRegion`)?

    ``VIDLABEL_HDF5_DIRECT_WRITE=1`` always, ``=0`` never; unset, only when the unit would not fit in a
    quarter of the free memory. Measured on issue 15's EPYC VM (fresh processes, alternating): a 300-frame
    640x480 export took 0.40-0.50 s buffered against 0.77-1.01 s direct with 23 GB free (1280x720:
    1.36-1.88 s against 1.95-2.46 s): buffered writes land in free pages and the export does not wait for
    the disk. With the page cache full (1.7 GB free) buffered writes must reclaim first: 0.81-1.34 s against
    0.88-1.27 s direct at 640x480, 1.84-3.05 s against 2.40-2.61 s at 1280x720; the direct path then also
    keeps the page cache of the user's other files (an earlier Intel VM measured 1-7 ms of system time per
    buffered 720p frame in that state, 0.1 ms direct).
    """
    if not DIRECT_WRITE or not hasattr(os, "O_DIRECT"):
        return False
    switch = env_switch("VIDLABEL_HDF5_DIRECT_WRITE", None)
    if switch is not None:
        return switch
    free = _mem_free_bytes()
    return free is None or nbytes > free * DIRECT_WRITE_FREE_FRACTION


class _ChunkRegion:
    """The chunks of an uncompressed frames file, written in order as one byte stream per block of chunks.

    HDF5 allocated the chunks up front (early allocation, no fill) in ``runs``: blocks of consecutive chunks
    lying back to back, between which it keeps pieces of its chunk index (at 1280x720, a few KB after every
    ~57 chunks). Each run's bytes are written on the region's flush thread in stretches of about
    :data:`_STAGE_BYTES` while the next stretch fills (with one 8 MB buffer, the writer thread stood still for
    each write and the decoder waited on its queue: a 300-frame 640x480 export 0.30 s, 0.25 s with two 4 MB
    buffers, in one process, one run of each); a failed write is raised by the next flush or :meth:`finish`.
    With ``direct`` a stretch is copied into one of two page-aligned staging buffers (``O_DIRECT`` wants
    aligned memory); buffered, it is the chunks' own bytes, gathered as views (which keep the chunks alive)
    and written with one ``os.pwritev``: no copy (the copy cost 0.1-0.3 ms of export CPU a 720p frame).

    With ``direct`` the staged writes go past the page cache (``O_DIRECT``), starting on a page boundary; a
    run's unaligned first and last bytes go through the page cache, so no page HDF5's own (buffered) metadata
    writes share is ever written directly. Issue 15: on the VMs measured, a buffered write of a 720p frame
    cost 1-7 ms of system time copying into fresh page cache pages (the same for ``numpy.tofile``; the most
    while the page cache fills up), an ``O_DIRECT`` write 0.1 ms (``scripts/bench_exportwrite.py``).

    Without ``direct`` (with :data:`BUFFERED_REGION_WRITE`, the default) the writes go through the page cache
    and start on a :data:`_FOLIO_BYTES` (2 MiB) boundary of the file, each covering whole 2 MiB blocks: where the kernel's page cache holds large
    folios for the file system (ext4 from Linux 6.16, XFS from 5.18), a write of a whole aligned block lands
    in one 2 MiB folio, which a read-only map of the file later maps with one page-table entry. HDF5's write
    of each chunk at its own offset (``write_direct_chunk``) left smaller folios, mapped a few pages a fault:
    on issue 15's EPYC VM (Linux 6.18, ext4) 22% of a 720p frames file and none of a 480p one in 2 MiB
    folios against 95-97% so, and 9.5 against 3.5 map faults a 720p sample in a first pass
    (``scripts/bench_storeframes.py`` row 1, "chunkwise").

    Parameters
    ----------
    path : Path
        The frames file.
    runs : list of (int, int)
        ``(byte offset, bytes)`` of each block, in chunk order.
    direct : bool
        Write past the page cache.

    Raises
    ------
    OSError
        If the file cannot be opened (``EINVAL`` with ``direct``: the file system refuses ``O_DIRECT``).
    """

    def __init__(self, path: Path, runs: list[tuple[int, int]], *, direct: bool) -> None:
        if not runs:
            raise ValueError("no chunks to write")
        self._runs = runs
        self.direct = direct
        self._align = PAGE if direct else _FOLIO_BYTES
        self._plain = os.open(path, os.O_WRONLY)
        self._direct = -1
        if direct:
            try:
                self._direct = os.open(path, os.O_WRONLY | os.O_DIRECT)
            except OSError:
                os.close(self._plain)
                raise
        self._staged_fd = self._direct if direct else self._plain
        # Buffered: the chunks' own bytes are gathered (views, no copy) and written with one ``pwritev`` a
        # stretch of whole 2 MiB blocks; direct: copied into two page-aligned staging buffers, since O_DIRECT
        # wants aligned memory. One stretch fills while the other's write runs on the flush thread (an O_DIRECT
        # write waits on the device; one buffer made the caller wait too, and its queue of chunks with it).
        # numpy copies into the buffers run without the GIL (an mmap slice assignment holds it).
        self._gather = not direct and hasattr(os, "pwritev")
        self._views: list[memoryview] = []  # gathered, not yet handed to the flush thread (their chunks stay alive)
        self._stages = [] if self._gather else [_aligned_buffer(_STAGE_BYTES) for _ in range(2)]
        self._in_flight: list[Future[None] | None] = [None, None]
        self._current = 0
        self._stage = self._stages[0] if self._stages else np.empty(0, np.uint8)
        self._flusher: ThreadPoolExecutor | None = None  # started at the first staged write (a small unit has none)
        self._start_run(0)

    def _start_run(self, k: int) -> None:
        self._run = k
        base, nbytes = self._runs[k]
        self.pos, self.end = base, base + nbytes
        self._aligned = -(-base // self._align) * self._align  # first byte of the run that is staged
        self._filled = 0  # staged bytes, starting at file offset self._stage_at
        self._stage_at = self._aligned

    def write(self, data: memoryview) -> None:
        """Append ``data`` (the next chunk's bytes) to the stream."""
        while data.nbytes:
            if self.pos == self.end:
                if self._run + 1 == len(self._runs):
                    raise StoreError(
                        f"frames file: {data.nbytes} bytes at {self.pos} run past the chunks' end {self.end}"
                    )
                self._flush_stage(self._staged_part())  # the run's end
                self._start_run(self._run + 1)
            k = min(data.nbytes, self.end - self.pos)
            self._write_in_run(data[:k])
            data = data[k:]

    def _staged_part(self) -> int:
        """Of the bytes staged at a run's end, those the flush thread writes (direct: the page-aligned part;
        its unaligned tail is written buffered)."""
        return self._filled // PAGE * PAGE if self.direct else self._filled

    def _write_in_run(self, data: memoryview) -> None:
        if self.pos < self._aligned:  # the run's unaligned head, buffered
            k = min(self._aligned - self.pos, data.nbytes)
            _pwrite_all(self._plain, data[:k], self.pos)
            self.pos += k
            data = data[k:]
        if self._gather and data.nbytes:
            self._views.append(data)
            self._filled += data.nbytes
            self.pos += data.nbytes
            if self._filled >= _STAGE_BYTES:  # hand over the whole 2 MiB blocks gathered; the rest waits
                self._flush_stage((self._stage_at + self._filled) // _FOLIO_BYTES * _FOLIO_BYTES - self._stage_at)
            return
        while data.nbytes:
            k = min(_STAGE_BYTES - self._filled, data.nbytes)
            self._stage[self._filled : self._filled + k] = np.frombuffer(data[:k], np.uint8)
            self._filled += k
            self.pos += k
            data = data[k:]
            if self._filled == _STAGE_BYTES:
                self._flush_stage(_STAGE_BYTES)

    def _flush_stage(self, n_thread: int) -> None:
        """Hand the staged bytes' first ``n_thread`` to the flush thread, write the rest through the page cache
        here, and go on in the other buffer once its earlier write is done (gathered: the views of the rest
        wait for the next stretch)."""
        if self._gather:
            views, self._views = _split_views(self._views, n_thread)
            self._hand_over(_pwritev_all, self._plain, views, self._stage_at)
            self._stage_at += n_thread
            self._filled -= n_thread
            self._next_slot()
            return
        stage = self._stages[self._current]
        if n_thread:
            self._hand_over(_pwrite_all, self._staged_fd, stage[:n_thread].data, self._stage_at)
        rest = self._filled - n_thread
        if rest:  # the unaligned tail of the run, buffered
            _pwrite_all(self._plain, stage[n_thread : self._filled].data, self._stage_at + n_thread)
        self._stage_at += self._filled
        self._filled = 0
        self._next_slot()
        self._stage = self._stages[self._current]

    def _hand_over(self, write: Callable[..., None], *args: Any) -> None:
        """Run ``write(*args)`` on the flush thread (started by the first call) as the current slot's write."""
        if self._flusher is None:
            self._flusher = ThreadPoolExecutor(1, thread_name_prefix="vidlabel-region")
        self._in_flight[self._current] = self._flusher.submit(write, *args)

    def _next_slot(self) -> None:
        """Go on in the other slot once its earlier write is done."""
        self._current ^= 1
        self._wait(self._current)

    def _wait(self, k: int) -> None:
        pending, self._in_flight[k] = self._in_flight[k], None
        if pending is not None:
            pending.result()  # a failed write raises its OSError here

    def finish(self) -> None:
        """Write what is staged, wait for every write, and close the descriptors."""
        try:
            if self._filled:
                self._flush_stage(self._staged_part())
            self._wait(0)
            self._wait(1)
        finally:
            self.close()

    def close(self) -> None:
        """Close the descriptors once no write is in flight (a failed write is not raised here: :meth:`finish`
        raises it; ``close`` alone is the abort path)."""
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)
        self._in_flight = [None, None]
        self._views = []
        for fd in (self._direct, self._plain):
            if fd >= 0:
                os.close(fd)
        self._direct = self._plain = self._staged_fd = -1


def _aligned_buffer(nbytes: int) -> np.ndarray:
    """A (nbytes,) uint8 array starting on a page boundary (``O_DIRECT`` wants aligned memory)."""
    raw = np.empty(nbytes + PAGE, np.uint8)
    start = -raw.ctypes.data % PAGE
    return raw[start : start + nbytes]


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
        if self.codec.name == "none":
            self._map_chunks()

    def _no_map(self) -> None:
        """The reader's state before (or without) a map of the file: every read through HDF5."""
        self._mmap: mmap.mmap | None = None
        self._mapped: np.ndarray | None = None  # the whole file as uint8, a view of the map
        self._offsets: np.ndarray | None = None
        self._fd = -1  # for "pread" first touches
        self._touched = bytearray()  # per chunk: read through the map in this process already
        self._first_touch = (
            WORKER_FIRST_TOUCH
            if _in_dataloader_worker()
            else env_choice("VIDLABEL_FIRST_TOUCH", FIRST_TOUCHES, FIRST_TOUCH)
        )
        self._map_lock = threading.Lock()  # the readahead thread advises the map under it; close unmaps under it

    def _use_map(self, mapped: mmap.mmap, fd: int, offsets: np.ndarray) -> None:
        """Read uncompressed chunks from ``mapped``, the file's read-only map (``fd``: the file, for ``pread`` and
        its size), at the byte ``offsets`` of each chunk (-1: unknown, read through HDF5)."""
        self._mmap, self._fd = mapped, fd
        self._mapped = np.frombuffer(mapped, dtype=np.uint8)
        self._offsets = offsets
        self._chunk_bytes = int(np.prod((self.chunk_frames, *self.shape[1:])))
        self._touched = bytearray(self.n_chunks)

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
        if self.codec.name != "none" or self._offsets is None or self._fd < 0:
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
        ``crc``, return the CRC-32C of the bytes copied.

        The map is read-only and the file immutable: ``out`` never shares memory with it. The first read of
        a chunk in this process takes its pages in as :data:`FIRST_TOUCH` says, instead of one page fault
        per few pages during the copy. The checksum is computed block by block (:data:`_COPY_BLOCK` bytes)
        right after each block is copied, while it is in the core's cache: a CRC pass over the whole chunk
        after the copy read it back from memory (at 1280x720, copy + CRC 0.54-0.61 ms a chunk against
        0.43-0.46 ms blocked, one run each on issue 15's VM).
        """
        assert self._mapped is not None
        end = offset + self._chunk_bytes
        if self._fd >= 0 and (size := os.fstat(self._fd).st_size) < end:  # a copy past the end: SIGBUS
            raise self._changed(f"it now has {size} bytes, chunk {index} ends at byte {end}")
        if not self._touched[index] and self._first_touch != "readahead":
            self._touched[index] = 1
            if self._first_touch == "populate" and MADV_POPULATE_READ is not None and self._mmap is not None:
                start = offset - offset % PAGE
                try:
                    self._mmap.madvise(MADV_POPULATE_READ, start, end - start)
                except (OSError, ValueError):  # an older kernel: plain faults from now on
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
        the whole chunk after the read took it back from memory: ``scripts/bench_storeframes.py`` row 4, three
        runs on issue 15's Xeon VM, 0.59-0.70 ms of a fresh process's CPU a 1280x720 chunk against 0.64-0.69).
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

    def prefetch(self, indices: Iterable[int]) -> None:
        """With :data:`FIRST_TOUCH` "readahead": the background thread maps the pages of the chunks of
        ``indices`` not read in this process yet, last chunk first (the reader copies them in order)."""
        if self._first_touch != "readahead" or not populate_available() or self._offsets is None:
            return
        ranges = []
        for index in indices:
            if 0 <= index < self._offsets.size and self._offsets[index] >= 0 and not self._touched[index]:
                self._touched[index] = 1
                offset = int(self._offsets[index])
                start = offset - offset % PAGE
                ranges.append((start, offset + self._chunk_bytes - start))
        if len(ranges) > 1:
            in_background(functools.partial(self._populate_ranges, ranges[:0:-1]))  # the first: the reader's own

    def _populate_ranges(self, ranges: list[tuple[int, int]]) -> None:
        """(On the background thread.) Map the pages of ``ranges`` of the file map, unless it was closed."""
        for start, length in ranges:
            with self._map_lock:  # close() unmaps under the same lock: never advise an unmapped range
                if self._mapped is None:
                    return
                populate(self._mapped.ctypes.data + start, length)

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
        if self.codec.name == "none":
            offset = -1 if self._offsets is None or not 0 <= index < self._offsets.size else int(self._offsets[index])
            if offset >= 0 and self._mapped is not None:
                read = self._copy_mapped(index, offset, out.reshape(-1), self.verify_checksums)
                if read is not None:
                    self.check_crc(index, read)  # the bytes returned are the stored bytes: check those
            else:
                self._h5().read_direct_chunk((index * self.chunk_frames, 0, 0, 0), out=out.reshape(-1))
                self.check_chunk(index, out)
            return out
        _, data = self._h5().read_direct_chunk((index * self.chunk_frames, 0, 0, 0))
        self.check_chunk(index, data)
        return self.codec.decode(data, out, self.backend)

    def close(self) -> None:
        with self._map_lock:
            self._mapped = None
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
        if self._file is not None and self._file.id.valid:
            self._file.close()


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
        nbytes = int(np.prod(shape))
        # early allocation reserves whole chunks: a last chunk of fewer frames takes a full chunk's room too
        allocated = -(-shape[0] // chunk_frames) * chunk_frames * int(np.prod(shape[1:]))
        direct = codec.name == "none" and shape[0] > 0 and _direct_write_wanted(nbytes)
        early = direct or (codec.name == "none" and shape[0] > 0 and BUFFERED_REGION_WRITE)
        if early and not _size_limit_allows(allocated):
            # HDF5 extends a file to its early-allocated size at a flush: past the file size limit that fails
            # inside HDF5 (and h5py crashes at exit); chunk by chunk, the chunk write past it says EFBIG
            direct = early = False
        self._ds = _create_frames(self._file, shape, chunk_frames, codec, early=early)
        self._chunk_frames = chunk_frames
        self._region: _ChunkRegion | None = self._chunk_region(shape, chunk_frames, direct) if early else None
        self._next = 0  # the chunk the region expects next

    def _chunk_region(self, shape: tuple[int, int, int, int], chunk_frames: int, direct: bool) -> _ChunkRegion | None:
        """The region writer over the chunks' blocks (``O_DIRECT`` with ``direct`` where the file system allows
        it, else buffered in 2 MiB blocks with :data:`BUFFERED_REGION_WRITE`), or None where HDF5 did not
        allocate every chunk or neither applies (then every chunk goes through ``write_direct_chunk``)."""
        chunk_bytes = int(np.prod((chunk_frames, *shape[1:])))
        offsets: list[int] = []
        try:
            self._ds.id.chunk_iter(lambda info: offsets.append(int(info.byte_offset)))
        except (AttributeError, OSError, ValueError):
            return None
        n = -(-shape[0] // chunk_frames)
        if len(offsets) != n or min(offsets, default=-1) < 0:
            return None
        runs: list[list[int]] = []  # [offset, bytes] of each block of chunks back to back, in chunk order
        for offset in offsets:
            if runs and runs[-1][0] + runs[-1][1] == offset:
                runs[-1][1] += chunk_bytes
            else:
                runs.append([offset, chunk_bytes])
        self._file.flush()
        blocks = [(a, b) for a, b in runs]
        if direct:
            try:
                return _ChunkRegion(self.partial, blocks, direct=True)
            except OSError:  # EINVAL: no O_DIRECT on this file system (tmpfs, some network file systems)
                pass
        return _ChunkRegion(self.partial, blocks, direct=False) if BUFFERED_REGION_WRITE else None

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
            attrs = _get_attrs(f)
            has_index = f.get("index", getlink=True) is not None
            index = index_rows(_read_array(f, real, self.folder, "index"), str(self.folder)) if has_index else None
        return attrs, index if index is not None else np.zeros((0, 2), np.int64)

    def _write_root_file(self, attrs: dict[str, Any], index: np.ndarray | None, video_ids: list[str]) -> None:
        partial = self.folder / (ROOT_FILE + PARTIAL)
        remove(partial)
        self.folder.mkdir(parents=True, exist_ok=True)
        with _open(partial, "w") as f:
            _set_attrs(f, {k: v for k, v in attrs.items() if k != "complete"})
            if index is not None:
                _write_array(f, "index", np.asarray(index, dtype=np.int64).reshape(-1, 2))
            videos = f.create_group("videos")
            for vid in video_ids:
                videos[vid] = h5py.ExternalLink(f"videos/{node_name(vid)}.h5", "/")
            f.attrs["complete"] = json.dumps(bool(attrs.get("complete", False)))
        fsync_file(partial)
        publish(partial, self.root_path)

    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        self._write_root_file({**attrs, "complete": False}, None, [])

    def write_root(self, attrs: dict[str, Any], index: np.ndarray, video_ids: list[str]) -> None:
        self._write_root_file({**attrs, "complete": True}, index, video_ids)

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
        # the one file of the key, not every unit (each export task asks: a scan of all was quadratic, issue 15)
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
