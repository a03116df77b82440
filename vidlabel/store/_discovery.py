"""Store discovery and opening: which backend reads a folder or URL, the stores at a path, each store root's
checks, and the parts of a folder of stores read as one (:class:`~vidlabel.store.FrameStore` opens through it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import (
    OptionError,
    SchemaVersionError,
    StoreCorruptError,
    StoreError,
    StoreIncompleteError,
    check_path,
)
from vidlabel.spec import DB_NAME
from vidlabel.store._backend import Backend
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._layout import (
    FORMAT,
    FORMAT_VERSION,
    class_names_problem,
    format_version_problem,
    root_videos_problem,
    video_ids_problem,
)
from vidlabel.store._remote import find_url_stores, is_url

__all__ = ["BACKENDS", "backend_for", "find_stores", "not_a_store_hint", "read_parts"]


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
        as Zarr, through :class:`~vidlabel.store._zarr_url.ZarrURLBackend` (read-only).
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
        from vidlabel.store._zarr_url import ZarrURLBackend

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
class _Part:
    folder: Path | str  # a folder, or a URL
    backend: str
    attrs: dict[str, Any]
    video_ids: list[str]
    #: The root file read (:meth:`~vidlabel.store._backend.Backend.video_table`), None where not known.
    root_identity: Any = None


def read_parts(
    path: Path | str, storage_options: dict[str, Any]
) -> tuple[list[_Part], dict[str, int], list[str], np.ndarray]:
    """The stores at ``path`` read as one: each store's part, the part of each video id, the video ids in order,
    and the global ``(N, 2)`` int64 index (position in the video ids, stored row).

    Raises
    ------
    StoreError
        If there is no store at ``path``, two stores share a video id, a store's ``/index`` names videos outside
        its own, or the stores disagree on their class names; and as :func:`_check_root`.
    """
    folders = find_stores(path, storage_options=storage_options)
    if not folders:
        hint = "" if is_url(path) else not_a_store_hint(path)
        raise StoreError(f"no vidlabel frame store at {str(path)!r}{hint}", path=str(path))
    parts: list[_Part] = []
    video_part: dict[str, int] = {}
    index_parts: list[np.ndarray] = []
    video_ids: list[str] = []
    for p, folder in enumerate(folders):
        backend = backend_for(folder, storage_options=storage_options)
        attrs, index = backend.read_root()
        _check_root(folder, attrs)
        ids = list(attrs.get("video_ids", []))
        for v in ids:
            if v in video_part:
                other = parts[video_part[v]].folder
                raise StoreError(f"video {v!r} is in two stores of {str(path)!r}: {str(other)!r} and {str(folder)!r}")
            video_part[v] = p
        parts.append(_Part(folder, backend.name, attrs, ids, getattr(backend, "root_identity", None)))
        offset = len(video_ids)
        video_ids.extend(ids)
        if index.size and (index[:, 0].min() < 0 or index[:, 0].max() >= len(ids)):
            raise StoreError(f"/index of {str(folder)!r} names videos outside [0, {len(ids)})")
        index_parts.append(np.column_stack([index[:, 0] + offset, index[:, 1]]) if index.size else index)
    names = [tuple(part.attrs.get("class_names", [])) for part in parts]
    if len(set(names)) > 1:
        raise StoreError(
            f"the stores under {str(path)!r} have different class names: "
            + "; ".join(f"{_name(part.folder)}: {list(n)}" for part, n in zip(parts, names))
        )
    index_all = np.concatenate(index_parts).astype(np.int64) if index_parts else np.zeros((0, 2), np.int64)
    return parts, video_part, video_ids, index_all


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
