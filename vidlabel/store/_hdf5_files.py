"""Opening a store's HDF5 files safely, and reading their small arrays and JSON attributes.

A file outside the store folder, an external link that leads outside it, and a dataset whose data lies in other
files are refused; a damaged or cut file is said so in a few words naming the file.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.spec import chunk_problem
from vidlabel.store._fs import (
    STORE_CHANGED,
    inside_store,
    load_store_json,
    refuse_overdeclared,
)


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

    Read with h5py's low-level calls (link info, ``H5Oopen``, ``H5Dread`` into a new array), several times
    faster than ``File.get`` / ``File[name]`` / ``Dataset[()]`` (``scripts/bench_scale.py``:
    ``StoreFrames(frames="annotated")`` reads every video's arrays).

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
