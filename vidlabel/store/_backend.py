"""The small backend interface a frame store is written and read through (HDF5 and Zarr implement it).

A store is a folder. Each backend maps the logical layout of
:mod:`vidlabel.store._layout` onto files its own way, but both follow the same
rules:

- a ``frames`` array is written once as a *frames unit* keyed by
  :func:`vidlabel.store._layout.frames_key` (video content, view, size, codec,
  chunking, which frames), under a temporary name, and published by rename
  with ``complete`` set last; a later export with the same key reuses it;
- a video group (its attributes, per-row arrays, regions and segments, and the
  link to its frames unit) is written under a temporary name and published
  atomically by rename, ``complete`` set last;
- the root (attributes and ``/index``) is written last of all, ``complete``
  last; an export starts by marking the root incomplete.

:class:`FramesReader` reads chunks directly (``read_direct_chunk`` for HDF5, the
chunk file for Zarr) and decodes them with :mod:`vidlabel.store._codecs`.
A Zarr store at a URL is read (only) through
:class:`vidlabel.store._zarr_url.ZarrURLBackend`, whose folder is the URL string.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, unquote

import numpy as np

from vidlabel.errors import StoreCorruptError
from vidlabel.spec import MAX_FRAME_COUNT, MAX_VIDEO_SIDE
from vidlabel.store._codecs import Codec, get_codec

__all__ = [
    "Backend",
    "FramesHeader",
    "FramesReader",
    "FramesWriter",
    "VideoReader",
    "chunk_crc_problem",
    "chunk_missing_problem",
    "chunk_size_problem",
    "frames_shape_problem",
    "node_name",
    "node_video_id",
]


#: Longest node name of a video group (ASCII, so bytes): a file name holds 255 bytes, and the backends add
#: a prefix or suffix to it (``video-``, ``.h5.partial``).
MAX_NODE_NAME = 200
#: What a shortened node name holds before its digest: never in a percent-encoded name, where '%' is always
#: followed by two hex digits.
_SHORTENED = "%-"


def node_name(video_id: str) -> str:
    """The file or node name of a video group: the id itself when it is a plain name, else percent-encoded.

    A name longer than :data:`MAX_NODE_NAME` (a video id of 200 bytes percent-encodes to up to 600, e.g. 67
    Japanese characters) is shortened to its start, ``%-`` and a digest of the id, so that it fits in a file
    name; :func:`node_video_id` reads the id of such a node from its group.
    """
    name = quote(video_id, safe="-_.~+=,@")
    if name.startswith(".") or name.startswith("__"):
        name = "%" + f"{ord(name[0]):02X}" + name[1:]
    if len(name) > MAX_NODE_NAME:
        digest = hashlib.sha256(video_id.encode("utf-8")).hexdigest()[:32]
        name = name[: MAX_NODE_NAME - len(_SHORTENED) - len(digest)] + _SHORTENED + digest
    return name


def node_video_id(name: str, recorded: Callable[[], Any]) -> str | None:
    """The video id whose group is node ``name``: the name decoded, or for a shortened name the id its group
    records (``recorded()``, its ``video_id`` attribute) when that id gives this name; None when it does not
    (not a video's node)."""
    if _SHORTENED not in name:
        return unquote(name)
    video_id = recorded()
    return video_id if isinstance(video_id, str) and node_name(video_id) == name else None


@dataclass(frozen=True)
class FramesHeader:
    """What a ``frames`` array's header says, read without its chunk index or any chunk
    (:meth:`VideoReader.frames_header`): enough for :class:`~vidlabel.store.FrameStore` to check that the frames
    are the video's own, as it checks a :class:`FramesReader` before reading.

    Attributes
    ----------
    path : path, str or None
        The frames file or array (for messages).
    shape : tuple of int
        ``(T, H, W, 3)`` as stored.
    unit_key : str or None
        The frames unit's key as the array records it (None where it records none).
    """

    path: Any
    shape: tuple[int, ...]
    unit_key: str | None


def frames_shape_problem(shape: tuple[int, ...], chunk_frames: int) -> str | None:
    """A phrase when a ``frames`` array's declared ``shape`` and ``chunk_frames`` lie outside what any export
    writes, else None: (T, H, W, 3) with T in [0, :data:`~vidlabel.spec.MAX_FRAME_COUNT`] (the most frames a
    video may have), H and W in [1, :data:`~vidlabel.spec.MAX_VIDEO_SIDE`] (the largest frame a video may have)
    and ``chunk_frames`` in [1, max(1, T)].

    A read allocates ``(chunk_frames, H, W, 3)`` bytes for a chunk before decoding it, so a store's metadata
    edited to declare frames of 2**20 x 2**20 pixels (a few bytes) allocated terabytes on its first read; each
    backend refuses such frames when it opens them, before anything is allocated.
    """
    if len(shape) != 4 or shape[3] != 3:
        return f"its shape {tuple(shape)} is not (T, H, W, 3)"
    t, h, w = shape[:3]
    if not (1 <= h <= MAX_VIDEO_SIDE and 1 <= w <= MAX_VIDEO_SIDE):
        return (
            f"its frames are {h} pixels high and {w} wide: each side must be in [1, {MAX_VIDEO_SIDE}] (the largest "
            "frame a video may have)"
        )
    if not 0 <= t <= MAX_FRAME_COUNT:
        return f"it holds {t} frames: at most {MAX_FRAME_COUNT} (the most a video may have)"
    if not 1 <= chunk_frames <= max(1, t):
        return f"its chunks of {chunk_frames} frames are not in [1, {max(1, t)}] (1 to its {t} frames)"
    return None


class FramesReader(ABC):
    """Reads the chunks of one stored ``frames`` array.

    Attributes
    ----------
    shape : (T, H, W, 3)
    chunk_frames : int
        Frames per chunk along T.
    codec : Codec
    backend : {"hdf5", "zarr"}
    verify_checksums : bool
        Check each chunk read by :meth:`read_chunk` against its stored CRC-32C
        (:meth:`check_chunk`; default True, :class:`~vidlabel.store.FrameStore` sets it).
    """

    backend: ClassVar[str]
    #: The frames unit's key as its file records it (None where it records none); FrameStore compares it with
    #: the video's ``frames_key``.
    unit_key: str | None = None

    def __init__(self, shape: tuple[int, ...], chunk_frames: int, codec: Codec | str) -> None:
        self.shape = tuple(int(v) for v in shape)
        self.chunk_frames = int(chunk_frames)
        self.codec = get_codec(codec)
        self.verify_checksums = True
        self._crc32c: np.ndarray | None = None  # the stored checksums, loaded on the first check

    @property
    def n_chunks(self) -> int:
        """Number of chunks along T."""
        return -(-self.shape[0] // self.chunk_frames)

    def chunk_rows(self, index: int) -> int:
        """Rows of chunk ``index`` that hold frames (the last chunk may be padded)."""
        return min(self.chunk_frames, self.shape[0] - index * self.chunk_frames)

    @abstractmethod
    def raw_chunk(self, index: int) -> bytes:
        """The stored bytes of chunk ``index`` (what its checksum covers), unchecked (``vidlabel verify`` reads these)."""

    @abstractmethod
    def stored_checksums(self) -> np.ndarray:
        """``frames_crc32c``: (n_chunks,) uint32, the CRC-32C of each chunk's stored bytes as written."""

    def check_chunk(self, index: int, data: Any) -> None:
        """Check the stored bytes of chunk ``index`` against their CRC-32C: the one place a read checks them.

        Every reader calls it where it obtains a chunk's stored bytes (before
        decoding them; for uncompressed chunks on the bytes it returns), so
        a damaged frames file is never returned as pixels. Costs one CRC-32C
        pass over the chunk (hardware-accelerated ``google_crc32c``;
        ``scripts/bench_store.py`` prints reads/s with and without it).
        Nothing is checked when :attr:`verify_checksums` is False.

        Parameters
        ----------
        index : int
        data : bytes-like
            The chunk's stored bytes (C-contiguous).

        Raises
        ------
        StoreCorruptError
            If the bytes' CRC-32C differs from the stored one, or the stored checksums do not cover the chunks.
        """
        if not self.verify_checksums:
            return
        import google_crc32c

        self.check_crc(index, google_crc32c.value(data))

    def stored_crc32c(self) -> np.ndarray:
        """:meth:`stored_checksums` as (n_chunks,) uint32, read on the first call and kept.

        Raises
        ------
        StoreCorruptError
            If the stored checksums do not cover the chunks (another count).
        """
        if self._crc32c is None:
            crc = np.asarray(self.stored_checksums()).reshape(-1)
            if crc.shape != (self.n_chunks,):
                raise StoreCorruptError(
                    f"frames {str(getattr(self, 'path', ''))!r}: frames_crc32c holds {crc.shape[0]} checksums "
                    f"for {self.n_chunks} chunks",
                    path=str(getattr(self, "path", "")),
                )
            self._crc32c = crc.astype(np.uint32)
        return self._crc32c

    def check_crc(self, index: int, read: int) -> None:
        """Compare ``read``, the CRC-32C of chunk ``index``'s stored bytes as a reader computed it (one that
        checksums the bytes block by block while it copies them), with the stored checksum.

        Raises
        ------
        StoreCorruptError
            As :meth:`check_chunk`.
        """
        stored = int(self.stored_crc32c()[index])
        if read != stored:
            raise StoreCorruptError(chunk_crc_problem(self, index, stored, read), path=str(getattr(self, "path", "")))

    def chunk_file(self, index: int) -> str:
        """The file (or object) holding chunk ``index``, for messages: the frames file, unless a backend keeps
        each chunk in its own file."""
        return str(getattr(self, "path", ""))

    def prefetch(self, indices: Iterable[int]) -> None:  # noqa: B027 - optional hook
        """Chunks ``indices`` are about to be read: a reader of an object store fetches them concurrently now
        (nothing to do for local files)."""

    def read_chunk(self, index: int, out: np.ndarray | None = None) -> np.ndarray:
        """Decode chunk ``index`` into ``out`` ((chunk_frames, H, W, 3) uint8, C-contiguous) and return it.

        The last chunk is returned padded to ``chunk_frames`` rows; use
        :meth:`chunk_rows` for how many hold frames.
        """
        if out is None:
            out = np.empty((self.chunk_frames, *self.shape[1:]), dtype=np.uint8)
        data = self.raw_chunk(index)
        problem = chunk_size_problem(self, index, len(data))
        if problem is not None:
            raise StoreCorruptError(problem, path=str(getattr(self, "path", "")))
        self.check_chunk(index, data)
        return self.codec.decode(data, out, self.backend)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release file handles."""


def chunk_size_problem(reader: FramesReader, index: int, size: int) -> str | None:
    """The words for chunk ``index`` of ``reader`` when its stored bytes, ``size`` of them, cannot be the whole
    chunk, else None: an uncompressed chunk holds exactly ``chunk_frames * H * W * 3`` bytes (the last one
    padded); a compressed chunk's size is not recorded (one cut short fails its CRC-32C,
    :func:`chunk_crc_problem`). Reads and ``vidlabel verify`` say it in these words.
    """
    if not reader.codec.raw:
        return None
    expected = reader.chunk_frames * int(np.prod(reader.shape[1:]))
    if size == expected:
        return None
    where = f"chunk file {reader.chunk_file(index)!r}"
    if size < expected:
        return f"{where} is truncated: {size} of its {expected} bytes"
    return f"{where} holds {size} bytes, not its {expected}"


def chunk_missing_problem(reader: FramesReader, index: int) -> str:
    """The words for chunk ``index`` of ``reader`` when its file (a backend that keeps each chunk in its own file)
    is not there. Reads and ``vidlabel verify`` say it in these words."""
    return f"chunk file {reader.chunk_file(index)!r} is missing"


def chunk_crc_problem(reader: FramesReader, index: int, stored: int, read: int) -> str:
    """The words for chunk ``index`` of ``reader`` whose stored bytes' CRC-32C is ``read``, not the ``stored``
    checksum: they name the chunk's own file where a backend keeps each chunk in one (Zarr), else the frames file
    (HDF5). Reads and ``vidlabel verify`` say it in these words."""
    where = reader.chunk_file(index)
    what = "frames" if where == str(getattr(reader, "path", "")) else "chunk file"
    return (
        f"the stored bytes of {what} {where!r} fail their CRC-32C checksum "
        f"(stored {stored:08x}, read {read:08x}): the file is damaged"
    )


class FramesWriter(ABC):
    """Writes one frames unit chunk by chunk; :meth:`commit` publishes it (``complete`` last)."""

    backend: ClassVar[str]

    @abstractmethod
    def write_chunk(self, index: int, data: bytes | np.ndarray) -> None:
        """Store chunk ``index``'s encoded bytes (from :meth:`Codec.encode` for this backend)."""

    @abstractmethod
    def commit(self, *, frame_number: np.ndarray, crc32c: np.ndarray) -> None:
        """Write the frame numbers and chunk checksums, set ``complete`` and publish the unit."""

    @abstractmethod
    def abort(self) -> None:
        """Drop the unfinished unit."""


class VideoReader(ABC):
    """One published video group: its attributes, small arrays and frames."""

    attrs: dict[str, Any]

    @abstractmethod
    def array(self, name: str) -> np.ndarray:
        """A small array of the group by path (``"frame_number"``, ``"regions/bbox_xyxy"``, ...), whole."""

    @abstractmethod
    def frames(self) -> FramesReader:
        """A new reader of the group's ``frames`` (the caller closes it; it may outlive this reader)."""

    def frames_opener(self) -> Callable[[], FramesReader] | None:
        """A callable that opens :meth:`frames` later without this reader (it holds paths, no handles, so it
        survives a fork), or None where the frames are opened through the group only."""
        return None

    def complete(self) -> bool:
        """True when the group was completely written (its ``complete`` attribute is true)."""
        return self.attrs.get("complete") is True

    def frames_header(self) -> FramesHeader:
        """What the header of the group's ``frames`` says (file, shape, unit key); no chunk is read.

        A backend whose :meth:`frames` reads more than the header overrides this.
        """
        reader = self.frames()
        try:
            return FramesHeader(getattr(reader, "path", None), reader.shape, reader.unit_key)
        finally:
            reader.close()

    def preload(self, names: Iterable[str]) -> None:  # noqa: B027 - optional hook
        """The arrays ``names`` are about to be read: a reader of an object store fetches them all at once now."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release file handles."""


class Backend(ABC):
    """One store folder seen through one on-disk format.

    Parameters
    ----------
    folder : path
        The store folder ``OUT``.
    """

    name: ClassVar[str]

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        #: Which root file :meth:`read_root` read, where the backend can tell (:meth:`video_table`), else None.
        self.root_identity: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.folder)!r})"

    # -- detection -----------------------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def detect(cls, folder: Path) -> bool:
        """True if ``folder`` holds a store of this backend (complete or not)."""

    # -- root ------------------------------------------------------------------------------------------------

    @abstractmethod
    def read_root(self) -> tuple[dict[str, Any], np.ndarray]:
        """Root attributes and the ``(N, 2)`` int64 index; ``({}, empty)`` when there is no root yet."""

    @abstractmethod
    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        """Create or rewrite the root with ``complete=False`` (an export starts here)."""

    @abstractmethod
    def write_root(
        self,
        attrs: dict[str, Any],
        index: np.ndarray,
        video_ids: list[str],
        videos: Mapping[str, tuple[dict[str, Any], Mapping[str, np.ndarray]]] | None = None,
    ) -> None:
        """Write the root attributes, ``/index`` and the ``/videos`` entries; ``complete=True`` last. ``videos``
        (by id: the attributes and small arrays of each published video) lets a backend keep a table of them in
        its root (HDF5: :mod:`vidlabel.store._hdf5_table`)."""

    #: Whether :meth:`write_root` keeps a table of the videos in the root (its store's format version says so).
    keeps_video_table: ClassVar[bool] = False

    def video_table(self, video_ids: list[str], root_identity: Any) -> Any | None:
        """The root's table of every video's attributes and small arrays, where this backend keeps one, read
        from the root of identity ``root_identity`` (set by :meth:`read_root`); else None."""
        return None

    # -- frames units ------------------------------------------------------------------------------------------

    @abstractmethod
    def frames_units(self) -> dict[str, dict[str, Any]]:
        """Attributes of every complete frames unit, by key."""

    def discard_unit(self, key: str) -> None:  # noqa: B027 - optional hook
        """Unit ``key`` is damaged and about to be written again: drop what cannot be replaced in place (a local
        unit is replaced by its new one's rename; an object store's create-only objects must go first)."""

    def unit_published(self, key: str, video_id: str | None = None) -> bool:
        """True if frames unit ``key`` is complete here (a task that finds it so has nothing to write).

        ``video_id``, the video the unit is written for, lets a backend that files units under their video
        (local Zarr) look in one place instead of scanning every video (an export task asks once per unit).
        """
        return key in self.frames_units()

    @abstractmethod
    def open_frames_unit(self, key: str) -> FramesReader:
        """A reader of a complete frames unit."""

    @abstractmethod
    def unit_frame_number(self, key: str) -> np.ndarray:
        """(T,) int64 frame numbers held by a complete frames unit."""

    @abstractmethod
    def frames_writer(
        self, key: str, *, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, attrs: dict[str, Any]
    ) -> FramesWriter:
        """A writer for a new frames unit (any unfinished one of that key is discarded)."""

    # -- videos -----------------------------------------------------------------------------------------------

    @abstractmethod
    def video_ids(self) -> list[str]:
        """Ids of the published video groups (complete or not), sorted."""

    @abstractmethod
    def video_attrs(self, video_id: str) -> dict[str, Any] | None:
        """Attributes of a published video group, or None if there is none."""

    @abstractmethod
    def write_video(
        self, video_id: str, *, attrs: dict[str, Any], arrays: dict[str, np.ndarray], frames_key: str
    ) -> None:
        """Write a video group under a temporary name with ``frames`` from unit ``frames_key`` and publish it."""

    @abstractmethod
    def open_video(self, video_id: str) -> VideoReader:
        """A reader of a published video group."""

    def stray_keys(self) -> list[str]:
        """Key prefixes of objects no store may hold (a ``..`` part), found by the last :meth:`video_ids`; an
        object store can hold them, a folder cannot."""
        return []

    def missing_video_problem(self, video_id: str) -> str:
        """The words for video ``video_id``, listed in the root, when :meth:`video_ids` does not hold it
        (``vidlabel verify``); a backend that keeps each video in its own file names that file."""
        return f"video {video_id!r} is listed in the root but has no group"

    @abstractmethod
    def remove_video(self, video_id: str) -> None:
        """Delete a published video group."""

    @abstractmethod
    def collect_garbage(self, keep_units: set[str]) -> None:
        """Delete unfinished files and frames units not in ``keep_units``."""

    @abstractmethod
    def size_on_disk(self) -> int:
        """Bytes used by the store folder (hard-linked files counted once)."""


def folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder``, each inode counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            ident = (st.st_dev, st.st_ino)
            if ident in seen:
                continue
            seen.add(ident)
            total += st.st_size
    return total
