"""Upload a local Zarr store to an object store so that no reader ever sees a partial store as complete.

:func:`upload` (``vidlabel upload STORE URL``) is for stores already on disk; the
access layer is :mod:`vidlabel.store._remote` (:class:`ObjectStore`). The upload:

1. holds the local store's writer lock (no export can change it meanwhile;
   a read-only folder needs none) and refuses an incomplete or HDF5 store;
2. puts a root ``zarr.json`` with ``complete: false`` first, so readers refuse
   the store while it changes;
3. puts each video's arrays and chunks, then that video's group ``zarr.json``
   (whose ``complete`` a reader checks), one video after the other;
4. puts the real root ``zarr.json`` (``complete: true``) last.

Rerunning an interrupted upload resumes it: objects already there with the
size of the local file are skipped. Sizes alone cannot tell two exports apart
(uncompressed chunks all have one size), so they are trusted only when the
objects come from this same store: the upload started on an empty prefix, or
over this store's own root; otherwise only inside videos whose group
``zarr.json`` there equals the local one (same frames key and labels key).
Objects of an older store that the new one does not name stay behind, unread.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vidlabel._words import plural
from vidlabel.errors import OptionError, StoreCorruptError, StoreError, StoreIncompleteError
from vidlabel.store._framestore import _check_root, backend_for, find_stores, not_a_store_hint
from vidlabel.store._fs import StoreLock
from vidlabel.store._remote import ObjectStore, is_url, parse_json

__all__ = ["UploadReport", "upload"]

#: Root attribute of the ``complete: false`` root an upload puts first (the final root has none).
UPLOAD_ATTR = "upload"


@dataclass
class UploadReport:
    """What :func:`upload` did.

    Attributes
    ----------
    url : str
    stores : list of str
        The URL of each store uploaded (one, or one per store of a folder of stores).
    objects : int
        Objects the uploaded stores consist of.
    uploaded, skipped : int
        Objects put, and objects already there (resume).
    bytes_uploaded : int
    """

    url: str
    stores: list[str] = field(default_factory=list)
    objects: int = 0
    uploaded: int = 0
    skipped: int = 0
    bytes_uploaded: int = 0

    def summary(self) -> str:
        """One line for the command line."""
        return (
            f"uploaded {plural(len(self.stores), 'store')} to {self.url}: {self.uploaded} of {self.objects} objects put "
            f"({self.bytes_uploaded / 2**20:.1f} MiB), {self.skipped} already there"
        )


def upload(
    store: str | os.PathLike[str],
    url: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> UploadReport:
    """Upload a complete local Zarr frame store to an object store, so that readers never see a partial one.

    Data objects go first, each video's group ``zarr.json`` after its arrays,
    the root ``zarr.json`` (with ``complete``) last; until then the root there
    says ``complete: false``. Rerunning an interrupted upload skips the
    objects already there (see the module docstring for when sizes are
    trusted). A folder of stores uploads each store to ``url/<name>``.

    Parameters
    ----------
    store : path
        A local Zarr store folder (``vidlabel export ... --format zarr``) or a folder of them.
    url : str
        Where to put it: an fsspec URL (``s3://bucket/prefix``, ``gs://...``, ``file:///...``, ``memory://...``).
    storage_options : mapping, optional
        Keyword arguments of the fsspec filesystem.
    progress : bool
        Show a tqdm bar over the bytes.

    Returns
    -------
    UploadReport

    Raises
    ------
    OptionError
        If ``url`` is not a URL.
    StoreError
        If there is no store at ``store``, it is an HDF5 store, or an object cannot be written.
    StoreIncompleteError
        If the local store (or a video in it) is not complete.
    StoreLockedError
        If an export is writing the local store.
    """

    if not is_url(url):
        raise OptionError(
            f"upload needs a URL such as 's3://bucket/store' or 'file:///data/store', got {url!r} "
            "(to copy a store between local folders, copy the folder)"
        )
    if is_url(store):
        raise OptionError(f"upload reads a local store folder, got the URL {store!r}")
    folder = Path(store)
    folders = [Path(f) for f in find_stores(folder)]
    if not folders:
        raise StoreError(f"no vidlabel frame store at {str(folder)!r}{not_a_store_hint(folder)}", path=str(folder))
    target = ObjectStore(url, storage_options)
    report = UploadReport(url=target.url)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(desc="upload", unit="B", unit_scale=True, disable=None)
    try:
        for one in folders:
            dest = target if one == folder else ObjectStore(target.url_of(one.name), storage_options)
            _upload_one(one, dest, report, bar)
            report.stores.append(dest.url)
    finally:
        if bar is not None:
            bar.close()
    return report


def _local_files(folder: Path) -> dict[str, Path]:
    """Files of a store folder by key, without the writer's own (``.partial``, ``.trash``, lock, temporaries).

    Raises
    ------
    StoreError
        If a file or folder in it is a symbolic link: an upload would send what it points at (a chunk file
        linked to ``~/.ssh/id_rsa`` put that file in the bucket), and a linked folder was skipped without a word.
    """
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel = Path(dirpath).relative_to(folder)
        for name in [*dirnames, *sorted(n for n in filenames if not n.startswith("."))]:
            path = Path(dirpath) / name
            if path.is_symlink():
                raise StoreError(
                    f"store {str(folder)!r}: {(rel / name).as_posix()!r} is a symbolic link (to "
                    f"{os.readlink(path)!r}): refused, a store's files must be its own and an upload would send "
                    "what it points at; export the store again into an empty folder",
                    path=str(folder),
                )
            if name not in dirnames:
                out[(rel / name).as_posix()] = path
    return out


def _video_of(key: str) -> str | None:
    """The video node a key belongs to (``videos/<node>/...``), or None."""
    parts = key.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "videos" else None


def _upload_one(folder: Path, dest: ObjectStore, report: UploadReport, bar: Any) -> None:
    lock: Any = StoreLock(folder)
    if not os.access(folder, os.W_OK):
        lock = contextlib.nullcontext()  # a read-only folder: no export can change it either
    with lock:
        _check_uploadable(folder)
        files = _local_files(folder)
        root_bytes = files.pop("zarr.json").read_bytes()
        local_root = json.loads(root_bytes)
        report.objects += len(files) + 1

        resume = _resume(dest, files, local_root, root_bytes)
        order = _upload_order(files, resume.group_keys)
        todo = [[k for k in step if not resume.skip(k)] for step in order]
        report.skipped += sum(len(step) for step in order) - sum(len(step) for step in todo)
        if not any(todo) and resume.root_equal:
            report.skipped += 1
            return
        marker = {
            **local_root,
            "attributes": {**local_root["attributes"], "complete": False, UPLOAD_ATTR: {
                "clean": resume.clean, "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}},
        }  # fmt: skip
        dest.put("zarr.json", json.dumps(marker, indent=2).encode(), rerun="upload")
        for step in todo:
            for start in range(0, len(step), 64):
                batch = step[start : start + 64]
                _put_files(dest, [(files[k], k) for k in batch])
                size = sum(files[k].stat().st_size for k in batch)
                report.uploaded += len(batch)
                report.bytes_uploaded += size
                if bar is not None:
                    bar.update(size)
        dest.put("zarr.json", root_bytes, rerun="upload")
        report.uploaded += 1
        report.bytes_uploaded += len(root_bytes)


def _check_uploadable(folder: Path) -> None:
    """Refuse an HDF5 store, a store whose root is not complete, and one with a video that is not.

    Raises
    ------
    StoreError
        If the store is not a Zarr store.
    StoreIncompleteError
        If a video of the store is not marked complete (or its root is not, as ``_check_root`` says).
    """
    backend = backend_for(folder)
    if backend.name != "zarr":
        raise StoreError(
            f"{str(folder)!r} is an {backend.name.upper()} store: only Zarr stores go to object stores; "
            "export it again with format='zarr' (vidlabel export ... --format zarr)",
            path=str(folder),
        )
    attrs, _ = backend.read_root()
    _check_root(folder, attrs)
    for vid in attrs.get("video_ids", []):
        if (backend.video_attrs(vid) or {}).get("complete") is not True:
            raise StoreIncompleteError(
                f"video {vid!r} of store {str(folder)!r} is not complete; rerun the export before uploading",
                path=str(folder),
                video_id=vid,
            )


@dataclass
class _Resume:
    """What an earlier upload left at the destination, and which objects need not be put again."""

    files: dict[str, Path]
    #: Size of every object there, by key.
    there: dict[str, int]
    #: The root there is this store's, byte for byte.
    root_equal: bool
    #: Every object there comes from this store (an empty prefix, or this store's own root).
    clean: bool
    #: The keys of the videos' group ``zarr.json``.
    group_keys: set[str]
    #: Videos whose group ``zarr.json`` there equals the local one.
    equal_videos: set[str]

    def skip(self, key: str) -> bool:
        """Whether object ``key`` is there already, with the local file's size, from this same store."""
        if self.there.get(key) != self.files[key].stat().st_size:
            return False
        if key in self.group_keys:
            return self.root_equal
        return self.clean or _video_of(key) in self.equal_videos


def _resume(dest: ObjectStore, files: dict[str, Path], local_root: dict[str, Any], root_bytes: bytes) -> _Resume:
    """Read what is at ``dest`` (sizes, the root, and where needed the videos' group ``zarr.json``)."""
    there = dest.sizes()
    old_root = dest.get("zarr.json") if "zarr.json" in there else None
    try:
        old_meta = parse_json(old_root, dest.url_of("zarr.json")) or {}
    except StoreCorruptError:  # a key given twice: not this store's root, whatever it says; replaced below
        old_meta = {}
    old_attrs = dict(old_meta.get("attributes", {}))
    mine = {k: v for k, v in local_root["attributes"].items() if k != "complete"}
    same_store = {k: v for k, v in old_attrs.items() if k not in ("complete", UPLOAD_ATTR)} == mine
    root_equal = old_root == root_bytes
    clean = not there or (same_store and bool(old_attrs.get(UPLOAD_ATTR, {}).get("clean", True)))

    group_keys = {k for k in files if _video_of(k) is not None and k.count("/") == 2 and k.endswith("/zarr.json")}
    equal_videos: set[str] = set()
    if not clean:  # sizes are trusted only inside videos whose group there is this store's
        remote = dest.get_many(k for k in group_keys if k in there)
        equal_videos = {_video_of(k) or "" for k, data in remote.items() if data == files[k].read_bytes()}
    return _Resume(files, there, root_equal, clean, group_keys, equal_videos)


def _upload_order(files: dict[str, Path], group_keys: set[str]) -> list[list[str]]:
    """The keys in the order they are put: the store's own (index/, videos/zarr.json), then each video's
    arrays followed by its group ``zarr.json``."""
    order: list[list[str]] = [[k for k in files if _video_of(k) is None]]  # index/, videos/zarr.json
    by_video: dict[str, list[str]] = {}
    for k in files:
        v = _video_of(k)
        if v is not None:
            by_video.setdefault(v, []).append(k)
    for keys in by_video.values():
        order.append([k for k in keys if k not in group_keys])
        order.append([k for k in keys if k in group_keys])  # the group's zarr.json after its arrays
    return order


def _put_files(dest: ObjectStore, pairs: Sequence[tuple[Path, str]]) -> None:
    """One batch of the upload (a seam for tests that interrupt it)."""
    dest.put_files(pairs)
