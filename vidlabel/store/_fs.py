"""File-system helpers of the store: the single-writer lock, atomic publishing by rename, and the rule that
nothing a store names (a link, a file, a key) is read from outside the store folder."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import mmap
import os
import reprlib
import shutil
import socket
import stat
import sys
from pathlib import Path
from typing import IO, Any

from vidlabel._json import RepeatedKeyError, no_repeated_keys
from vidlabel.errors import StoreCorruptError, StoreError, StoreLockedError

__all__ = [
    "DECLARED_PER_STORED",
    "LOCK_NAME",
    "MADV_POPULATE_READ",
    "PAGE",
    "STORE_CHANGED",
    "StoreLock",
    "fsync_dir",
    "inside_store",
    "link_or_copy_tree",
    "load_store_json",
    "open_no_follow",
    "plain_name",
    "populate",
    "populate_available",
    "publish",
    "refuse_overdeclared",
    "remove",
]

#: Bytes of a memory page.
PAGE = mmap.PAGESIZE
#: ``madvise`` advice that maps a range's pages in one call (Linux 5.14+); None elsewhere.
MADV_POPULATE_READ = 22 if sys.platform.startswith("linux") else None
_MADV_POPULATE_WRITE = 23


def _libc_madvise() -> Any:
    if MADV_POPULATE_READ is None:
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int), ctypes.c_int
    return fn


_MADVISE = _libc_madvise()


def populate_available() -> bool:
    """True where :func:`populate` maps pages (Linux, libc's ``madvise`` found)."""
    return _MADVISE is not None


def populate(address: int, nbytes: int, *, write: bool = False) -> None:
    """Map the pages of ``[address, address + nbytes)`` (page aligned) in one ``madvise`` call
    (``MADV_POPULATE_READ`` / ``_WRITE``), not one page fault per 4 KiB on first touch; a kernel without
    them, another OS or an unaligned address: nothing (the faults happen as before). ctypes drops the GIL
    around the call, so a background thread may populate beside a reader."""
    if _MADVISE is not None and nbytes > 0 and address % PAGE == 0:
        _MADVISE(address, nbytes, _MADV_POPULATE_WRITE if write else MADV_POPULATE_READ)


#: What every refusal of a store changed after export says, after what it found.
STORE_CHANGED = "the store was changed after export; restore it, or export again into an empty folder"

#: An array read whole may declare at most this many times the bytes its file or folder stores for it (and at least
#: 1 MiB): its shape is what the read allocates (chunks never written read as the fill value).
DECLARED_PER_STORED = 1024


def refuse_overdeclared(array: str, declared: int, stored: int, holder: str, path: str) -> None:
    """Refuse an array that declares (``declared`` bytes) far more than is stored for it (``stored`` bytes, in
    ``holder``: "the file stores for it", "its folder holds"), before anything is allocated.

    Raises
    ------
    StoreCorruptError
        Naming ``array`` (what it is and its declared shape), both sizes and ``path``.
    """
    if declared > max(2**20, DECLARED_PER_STORED * stored):
        raise StoreCorruptError(
            f"{array} ({declared} bytes), more than {DECLARED_PER_STORED} times the {stored} bytes {holder}: refused "
            f"before reading: {STORE_CHANGED}",
            path=path,
        )


def load_store_json(text: str | bytes, where: str, path: str) -> Any:
    """``json.loads`` of metadata a store holds (a ``zarr.json``, an HDF5 attribute), refusing an object that gives
    one key twice: ``json`` keeps the last of them without a word, so ``{"shape": [10, ...], "shape": [10**9,
    ...]}`` read as one shape in vidlabel and as another in a reader that keeps the first.

    Parameters
    ----------
    text : str or bytes
    where : str
        What holds the text, for the message (``"Zarr metadata '.../zarr.json'"``).
    path : str
        The file or URL, for the error's ``path``.

    Raises
    ------
    StoreCorruptError
        On a key given twice in one object, naming ``where``, the key and both values.
    ValueError, UnicodeDecodeError, RecursionError
        As ``json.loads``, for text that is not JSON (callers decide what that means).
    """
    try:
        return json.loads(text, object_pairs_hook=no_repeated_keys)
    except RepeatedKeyError as err:
        raise StoreCorruptError(
            f"{where} gives key {err.key!r} twice in one object ({reprlib.repr(err.first)}, then "
            f"{reprlib.repr(err.second)}): each key must be given once: {STORE_CHANGED}",
            path=path,
        ) from None


#: Lock file kept in the store folder while a writer works on it.
LOCK_NAME = ".vidlabel-lock"


class StoreLock:
    """The single-writer lock of a store folder: an exclusive, non-blocking OS lock on ``OUT/.vidlabel-lock``.

    The OS releases it when the process ends, even by SIGKILL, so a killed
    export never leaves a stale lock behind. When the ``with`` block raises,
    a lock file this lock created is removed: a folder the writer refused (not
    empty, another format, another export's shards) keeps nothing of ours; and
    the folders this lock created (the folder, and parents that did not exist)
    are removed again if they are left empty (an export refused before it
    wrote anything leaves no folder behind; one that wrote keeps its files).

    Raises
    ------
    StoreLockedError
        On entering, if another process holds the lock (the message names it).
    StoreError
        On entering, if the folder or its lock file cannot be created (a parent that is a file, a read-only
        file system, no permission): the message names the folder and the OS's reason.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fh: IO[str] | None = None
        self._created = False  # this lock made the lock file: a block that fails takes it away again
        self._made: list[Path] = []  # the folders this lock made, deepest first: removed if a block fails on them empty

    def __enter__(self) -> StoreLock:
        made, missing = [], self.folder
        while not os.path.lexists(missing) and missing.parent != missing:
            made.append(missing)
            missing = missing.parent
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._made = made
            self._created = not self.path.exists()
            fh = open(self.path, "a+", encoding="utf-8")
        except OSError as err:  # a parent that is a file, a read-only or missing file system, no permission
            raise StoreError(
                f"cannot write the frame store folder {str(self.folder)!r}: {err.strerror or err} "
                f"({type(err).__name__}); give a folder that can be created and written",
                path=str(self.folder),
            ) from err
        try:
            _lock(fh)
        except OSError as err:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise StoreLockedError(
                f"frame store {str(self.folder)!r} is being written by {holder}; one writer at a time "
                f"(wait for it to finish, or stop it: a killed export resumes with the same command)",
                path=str(self.folder),
            ) from err
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self._fh is not None and exc_type is not None and self._created:
            # the block failed (a folder the writer refused, a write that failed): no lock file of ours stays in a
            # folder that had none; removed while still locked, so no other writer takes it meanwhile
            with contextlib.suppress(OSError):
                self.path.unlink()
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.seek(0)
                self._fh.truncate()
            _unlock(self._fh)
            self._fh.close()
            self._fh = None
            if exc_type is not None:
                for folder in self._made:  # rmdir: only an empty folder goes, never a file put there
                    try:
                        folder.rmdir()
                    except OSError:
                        break


def _lock(fh: IO[str]) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock(fh: IO[str]) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        with contextlib.suppress(OSError):
            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def fsync_dir(path: Path) -> None:
    """Flush a directory entry to disk (no-op where directories cannot be opened, e.g. Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush a file's bytes to disk."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def remove(path: Path) -> None:
    """Delete a file or a folder tree if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def publish(src: Path, dst: Path, *, trash: Path | None = None) -> None:
    """Move a finished file or folder into place atomically (``os.replace``), then flush the directory.

    A folder cannot replace a non-empty folder in one step: the old one is first
    moved to ``trash`` and deleted after the new one is in place.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and dst.exists():
        if trash is None:
            raise ValueError(f"publishing folder {src} over existing {dst} needs a trash folder")
        trash.mkdir(parents=True, exist_ok=True)
        old = trash / f"{dst.name}.{os.getpid()}.{id(src)}"
        remove(old)
        os.replace(dst, old)
        os.replace(src, dst)
        fsync_dir(dst.parent)
        remove(old)
        return
    os.replace(src, dst)
    fsync_dir(dst.parent)


def link_or_copy_tree(src: Path, dst: Path) -> None:
    """Recreate folder ``src`` at ``dst`` with hard links to its files (copies where links are not supported)."""
    for dirpath, _dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in filenames:
            s, d = Path(dirpath) / name, dst / rel / name
            try:
                os.link(s, d)
            except OSError:
                shutil.copy2(s, d)


def inside_store(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str) -> Path:
    """``path`` resolved (every symbolic link followed, ``..`` removed), refused if it leaves store folder ``root``.

    Called on every file and folder a store reader opens by a name the store
    holds (an HDF5 external link's file name, a listed unit or video, a Zarr
    group or array folder), so that a tampered store cannot make vidlabel read
    a file beside or above it.

    Parameters
    ----------
    root : path
        The store folder (itself resolved first, so a store reached through a symbolic link works).
    path : path
        What the store names, relative to the current directory or absolute.
    what : str
        What it is, for the message (``"external link 'frames' of '.../videos/a.h5'"``).

    Returns
    -------
    Path
        The resolved path.

    Raises
    ------
    StoreError
        If the resolved path is not ``root`` or inside it; names ``what`` and where it leads.
    """
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if real != real_root and not real.is_relative_to(real_root):
        raise StoreError(
            f"frame store {str(root)!r}: {what} leads to {str(real)!r}, outside the store folder: refused "
            "(a store's links and names must stay inside it)",
            path=str(root),
        )
    return real


def plain_name(name: str, what: str, where: str) -> str:
    """``name`` if it is one plain path component (no ``/``, ``\\``, NUL, and not ``""``, ``.`` or ``..``).

    Raises
    ------
    StoreError
        Otherwise; names ``what``, the name and ``where`` it was read.
    """
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise StoreError(
            f"{where}: {what} {name!r} is not a plain name (a path component without '/', '\\\\' or '..'): refused",
            path=where,
        )
    return name


def open_no_follow(path: Path, what: str) -> int:
    """A read-only file descriptor of ``path``, refusing a symbolic link as its last component.

    Chunk files are opened this way: their folder was checked with
    :func:`inside_store` once, and a symbolic link put in place of a chunk
    file would otherwise lead anywhere. (``O_NOFOLLOW`` costs nothing.)

    Raises
    ------
    StoreError
        If ``path`` is a symbolic link.
    StoreCorruptError
        If ``path`` is a directory or another thing that is not a plain file (the store was changed).
    FileNotFoundError
        If there is no such file.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StoreError(
                f"{what} {str(path)!r} is a symbolic link: refused (a store's files must be its own)", path=str(path)
            ) from err
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):  # a directory opens read-only too; reading it then failed with Python's own words
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a plain file"
        raise StoreCorruptError(
            f"{what} {str(path)!r} is {kind}, not a file: {STORE_CHANGED}",
            path=str(path),
        )
    return fd
