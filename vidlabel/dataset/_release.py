"""Frozen releases: the record, its content-derived id, and its columnar HDF5 file.

A release file is written once to a temporary name and linked into place, so
a reader never sees half a file and an existing release is never overwritten.
Layout (``<dataset>/releases/<release_id>.h5``)::

    /                 attrs: format="vidlabel-release", format_version, release_id, created,
                             labels, video_ids, view_ids, views, info (JSON strings)
    /table/<column>   one dataset per AnnotationTable column (Blosc zstd, bit-shuffled)
    /videos           attrs: metadata (JSON list, one [metadata without the frame index, index
                             timebase/method/content_hash or null] per video, sorted by id)
        pts, keyframes                all videos' frame indexes concatenated, int64
        pts_offsets, keyframes_offsets  (V + 1,) int64: video i's are [offsets[i]:offsets[i + 1]]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidlabel._words import plural
from vidlabel.errors import ReleaseCorruptError, ReleaseNotFoundError, SchemaVersionError
from vidlabel.spec import KINDS, AnnotationTable, FrameIndex, VideoMetadata, View, chunk_problem

if TYPE_CHECKING:
    from vidlabel.dataset._validate import Problem

__all__ = [
    "FORMAT_VERSION",
    "BuildReport",
    "Release",
    "copy_release",
    "index_dict",
    "index_from_dict",
    "read_release",
    "release_created",
    "release_id_of",
    "video_dict",
    "write_release",
]

#: Version of the release file layout this vidlabel reads up to: 2 adds ``/table/attr_offsets`` and
#: ``/table/attr_bytes`` (the rows' attributes), written only by a release with attributes, so a release
#: without any stays version 1, readable by older vidlabels.
FORMAT_VERSION = 2
_ATTRS = ("attr_offsets", "attr_bytes")
_FORMAT = "vidlabel-release"
_NO_INTS = np.zeros(0, np.int64)


@dataclass(frozen=True)
class Release:
    """An immutable snapshot of a dataset: labels, views, videos and the non-rejected annotations.

    Parameters
    ----------
    release_id : str or None
        ``"r"`` + 12 hex digits derived from the content (same content, same
        id), or None for a live snapshot (``Dataset.snapshot``, ``release=None``).
    created : str
        UTC ISO 8601 time the release was first built (or the snapshot taken).
    labels : tuple of str
        The label vocabulary in order (``class_names``).
    views : dict view_id -> View
    videos : dict video_id -> VideoMetadata
        Every registered video, each with its content hash and frame index.
    table : AnnotationTable
        The rows, sorted by annotation id; boxes are xyxy full-frame pixels,
        markers have NaN boxes and an inclusive ``end_frame``.
    info : dict
        Provenance: dataset path, statuses included, row counts, vidlabel version.
    """

    release_id: str | None
    created: str
    labels: tuple[str, ...]
    views: dict[str, View]
    videos: dict[str, VideoMetadata]
    table: AnnotationTable
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"Release({self.release_id!r}, created={self.created!r}, rows={len(self.table)}, "
            f"videos={len(self.videos)}, labels={len(self.labels)}, views={len(self.views)})"
        )

    def counts(self) -> dict[str, int]:
        """Number of rows of each kind, ``{"box": n, "mask": n, "marker": n}``."""
        per_kind = np.bincount(self.table.kind, minlength=len(KINDS))
        return {k: int(per_kind[i]) for i, k in enumerate(KINDS)}

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary to log next to a training run."""
        return {
            "release_id": self.release_id,
            "created": self.created,
            "rows": len(self.table),
            "counts": self.counts(),
            "labels": list(self.labels),
            "videos": sorted(self.videos),
            "views": sorted(self.views),
            "info": dict(self.info),
        }


@dataclass(frozen=True)
class BuildReport:
    """What ``Dataset.build`` did.

    Parameters
    ----------
    release_id : str
    new : bool
        False when a release with the same content already existed (nothing was written).
    rows : int
        Annotation rows in the release.
    counts : dict kind -> int
    warnings : tuple of Problem
        Problems of severity "warning" found by validation (errors refuse the build).
    path : str
        The release file.
    seconds : float
        Wall time of the build.
    """

    release_id: str
    new: bool
    rows: int
    counts: dict[str, int]
    warnings: tuple[Problem, ...]
    path: str
    seconds: float

    def __str__(self) -> str:
        state = "new release" if self.new else "unchanged content, existing release"
        kinds = ", ".join(plural(v, k) for k, v in self.counts.items() if v)
        return (
            f"{self.release_id}: {state}; {plural(self.rows, 'row')} ({kinds or 'none'}); "
            f"{plural(len(self.warnings), 'warning')}; {self.seconds:.2f} s"
        )


# --------------------------------------------------------------------------------------------------
# Canonical content and the id
# --------------------------------------------------------------------------------------------------


def _json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _view_dict(view: View) -> dict[str, Any]:
    return {
        "view_id": view.view_id,
        "crop": list(view.crop),
        "output_size": view.output_size and list(view.output_size),
    }


def video_dict(meta: VideoMetadata) -> dict[str, Any]:
    """Metadata as a JSON-ready dict without the frame index (which can hold 100k+ frames).

    ``untrusted_frames`` is written as a list of ``[first, last]`` pairs, and
    left out when it is None (not known), so metadata registered before
    vidlabel recorded it serialises, and gives the same release id, as before.
    """
    skip = ("frame_index", "untrusted_frames")
    d = {f.name: getattr(meta, f.name) for f in dataclasses.fields(meta) if f.name not in skip}
    d["fps"] = dict(meta.fps)
    d["sources"] = [dict(s) for s in meta.sources]
    if meta.untrusted_frames is not None:
        d["untrusted_frames"] = [list(r) for r in meta.untrusted_frames]
    return d


def index_dict(fi: FrameIndex | None) -> dict[str, Any] | None:
    """A frame index without its pts and keyframes, JSON-ready (timebase, method, content hash), or None."""
    if fi is None:
        return None
    out: dict[str, Any] = {"timebase": dict(fi.timebase), "method": fi.method, "content_hash": fi.content_hash}
    if fi.decoder_pts is not None:  # only for files whose decoder permutes the labels (see FrameIndex)
        out["decoder_pts"] = fi.decoder_pts.tolist()
    return out


def index_from_dict(index: Mapping[str, Any], pts: np.ndarray, keyframes: np.ndarray) -> FrameIndex:
    """The inverse of :func:`index_dict`, given the index's pts and keyframes."""
    return FrameIndex(
        timebase=index["timebase"],
        pts=pts,
        keyframes=keyframes,
        method=index["method"],
        content_hash=index["content_hash"],
        decoder_pts=index.get("decoder_pts"),
    )


def release_id_of(
    labels: tuple[str, ...], views: Mapping[str, View], videos: Mapping[str, VideoMetadata], table: AnnotationTable
) -> str:
    """The content-derived id ``"r"`` + 12 hex digits of a release.

    sha256 over a canonical serialisation of the labels, the views, each
    video's metadata (content hash and frame index included) and every column
    of the annotation table (little-endian bytes in annotation-id order). The
    creation time and the dataset's path do not enter it.
    """
    h = hashlib.sha256()
    head = {
        "format": _FORMAT,
        "labels": list(labels),
        "views": [_view_dict(views[v]) for v in sorted(views)],
        "video_ids": list(table.video_ids),
        "view_ids": list(table.view_ids),
        "table_labels": list(table.labels),
    }
    h.update(_json(head).encode())
    for vid in sorted(videos):
        meta = videos[vid]
        h.update(b"\x00video\x00" + _json([video_dict(meta), index_dict(meta.frame_index)]).encode())
        if meta.frame_index is not None:
            h.update(meta.frame_index.pts.astype("<i8").tobytes())
            h.update(b"\x00keyframes\x00")
            h.update(meta.frame_index.keyframes.astype("<i8").tobytes())
    for name in (*AnnotationTable.COLUMNS, "mask_offsets", "mask_counts"):
        arr = getattr(table, name)
        dt = np.dtype(AnnotationTable.DTYPES[name]).newbyteorder("<")
        h.update(f"\x00{name}:{dt.str}:{arr.shape}\x00".encode())
        h.update(np.ascontiguousarray(arr, dtype=dt).data)
    if table.has_attributes:  # a release without attributes keeps the id it had before attributes existed
        for name in _ATTRS:
            arr = np.ascontiguousarray(getattr(table, name), dtype="<i8" if name == "attr_offsets" else "u1")
            h.update(f"\x00{name}:{arr.dtype.str}:{arr.shape}\x00".encode())
            h.update(arr.data)
    return "r" + h.hexdigest()[:12]


# --------------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------------


def _compression(arr: np.ndarray) -> dict[str, Any]:
    if arr.shape[0] == 0:
        return {}
    import hdf5plugin

    rows = max(1, min(arr.shape[0], (1 << 20) // max(1, arr.dtype.itemsize * int(np.prod(arr.shape[1:])))))
    return {
        "chunks": (rows, *arr.shape[1:]),
        **hdf5plugin.Blosc(cname="zstd", clevel=1, shuffle=hdf5plugin.Blosc.BITSHUFFLE),
    }


def write_release(release: Release, path: str | os.PathLike[str], *, replace: bool = False) -> bool:
    """Write a release file atomically; never overwrite one that exists (unless ``replace``).

    The file is written under a temporary name in the same folder and then
    hard-linked (or, where links are not supported, renamed) to ``path``.

    Parameters
    ----------
    release : Release
        Must have a ``release_id``.
    path : path
        The final file, e.g. ``<dataset>/releases/<release_id>.h5``.
    replace : bool
        Rename the new file over an existing one (atomically): only for a
        damaged file at this content-derived id, whose content ``release``
        is (``Dataset.build``).

    Returns
    -------
    bool
        True if this call wrote the file, False if it existed already.
    """
    import h5py

    if release.release_id is None:
        raise ValueError("a live snapshot (release_id None) is not written to a file")
    final = Path(path)
    if final.exists() and not replace:
        return False
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial")
    t = release.table
    try:
        with h5py.File(tmp, "w", libver="latest") as f:
            f.attrs["format"] = _FORMAT
            f.attrs["format_version"] = 2 if t.has_attributes else 1
            f.attrs["release_id"] = release.release_id
            f.attrs["created"] = release.created
            f.attrs["labels"] = _json(list(release.labels))
            f.attrs["video_ids"] = _json(list(t.video_ids))
            f.attrs["view_ids"] = _json(list(t.view_ids))
            f.attrs["views"] = _json({k: _view_dict(v) for k, v in release.views.items()})
            f.attrs["info"] = _json(release.info)
            g = f.create_group("table")
            for name in (*AnnotationTable.COLUMNS, "mask_offsets", "mask_counts"):
                arr = np.ascontiguousarray(getattr(t, name))
                g.create_dataset(name, data=arr, **_compression(arr))
            if t.has_attributes:
                for name in _ATTRS:
                    arr = np.ascontiguousarray(getattr(t, name))
                    g.create_dataset(name, data=arr, **_compression(arr))
            vg = f.create_group("videos")
            metas = [release.videos[vid] for vid in sorted(release.videos)]
            vg.attrs["metadata"] = _json([[video_dict(m), index_dict(m.frame_index)] for m in metas])
            for name in ("pts", "keyframes"):
                parts = [getattr(m.frame_index, name) if m.frame_index is not None else _NO_INTS for m in metas]
                offsets = np.zeros(len(parts) + 1, np.int64)
                np.cumsum([p.size for p in parts], out=offsets[1:])
                flat = np.concatenate(parts) if parts else _NO_INTS
                vg.create_dataset(name, data=flat, **_compression(flat))
                vg.create_dataset(f"{name}_offsets", data=offsets)
        if replace:
            os.replace(tmp, final)
            return True
        try:
            os.link(tmp, final)
        except FileExistsError:
            return False
        except OSError:
            if final.exists():
                return False
            os.replace(tmp, final)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def read_release(path: str | os.PathLike[str], *, verify: bool = True) -> Release:
    """Load a release file written by :func:`write_release`, checking its content against its id.

    Parameters
    ----------
    path : path-like
    verify : bool
        Recompute the content-derived id (:func:`release_id_of`: sha256 over
        labels, views, videos and every table column) and refuse a file whose
        content does not give the id it records.

    Raises
    ------
    ReleaseNotFoundError
        If the file does not exist or is not a release file.
    ReleaseCorruptError
        If the file cannot be read as HDF5 or lacks part of the layout (damaged),
        or, with ``verify``, its content does not give its recorded id (edited
        on disk after the build).
    SchemaVersionError
        If it was written by a newer vidlabel with a layout this one cannot read.
    """
    p = Path(path)
    if not p.is_file():
        raise ReleaseNotFoundError(f"release file {p} does not exist", path=str(p))
    try:
        release = _read_release_file(p)
    except (OSError, KeyError, ValueError, TypeError, AttributeError, IndexError, RecursionError) as err:
        # AttributeError, IndexError: JSON attributes of other shapes; RecursionError: JSON nested thousands deep
        if isinstance(err, (ReleaseNotFoundError, SchemaVersionError)):
            raise
        raise ReleaseCorruptError(
            f"release file {p} is damaged and cannot be read ({type(err).__name__}: {err}); "
            "build the release again from its dataset (`vidlabel build`) or restore the file",
            path=str(p),
        ) from err
    if verify:
        actual = release_id_of(release.labels, release.views, release.videos, release.table)
        if actual != release.release_id:
            raise ReleaseCorruptError(
                f"release file {p} was changed after it was built: it records id {release.release_id!r} but its "
                f"content (labels, views, videos, rows) gives {actual!r}; a release is never edited. Restore the "
                "file, or delete it and build a new release from the dataset (`vidlabel build`)",
                path=str(p),
            )
    return release


def _whole(ds: Any) -> np.ndarray:
    """The whole of h5py dataset ``ds``, refused (ValueError) if the file does not hold every chunk its shape
    declares: chunks never written read as the fill value, so a shape of 10**12 in a small file was allocated."""
    problem = chunk_problem(ds.chunks, ds.shape, ds.dtype.itemsize)
    if problem is not None:
        raise ValueError(f"array {ds.name!r}: {problem}")
    if ds.chunks is not None and ds.size:
        declared = math.prod(-(-n // c) for n, c in zip(ds.shape, ds.chunks, strict=True))
        held = ds.id.get_num_chunks()
        if held != declared:
            raise ValueError(f"array {ds.name!r} of shape {ds.shape} declares {declared} chunks, the file holds {held}")
    elif ds.size and ds.id.get_storage_size() < ds.size * ds.dtype.itemsize:
        raise ValueError(f"array {ds.name!r} of shape {ds.shape} is not all stored in the file")
    return np.asarray(ds[()])


def _read_release_file(p: Path) -> Release:
    import h5py
    import hdf5plugin  # noqa: F401  (registers the Blosc filter)

    with h5py.File(p, "r") as f:
        if f.attrs.get("format") != _FORMAT:
            raise ReleaseNotFoundError(f"{p} is not a vidlabel release file", path=str(p))
        version = int(f.attrs["format_version"])
        if version > FORMAT_VERSION:
            raise SchemaVersionError(
                f"release file {p} has format version {version}; this vidlabel reads up to {FORMAT_VERSION}. "
                "Upgrade vidlabel.",
                path=str(p),
            )
        labels = tuple(json.loads(f.attrs["labels"]))
        names = (*AnnotationTable.COLUMNS, "mask_offsets", "mask_counts", *(a for a in _ATTRS if a in f["table"]))
        cols = {name: _whole(f["table"][name]) for name in names}
        table = AnnotationTable(
            labels=labels,
            video_ids=tuple(json.loads(f.attrs["video_ids"])),
            view_ids=tuple(json.loads(f.attrs["view_ids"])),
            **cols,
        )
        views = {
            k: View(v["view_id"], tuple(v["crop"]), tuple(v["output_size"]) if v["output_size"] else None)
            for k, v in json.loads(f.attrs["views"]).items()
        }
        videos: dict[str, VideoMetadata] = {}
        vg = f["videos"]
        arrays = {name: _whole(vg[name]) for name in ("pts", "keyframes", "pts_offsets", "keyframes_offsets")}
        for i, (meta, index) in enumerate(json.loads(vg.attrs["metadata"])):
            fi = None
            if index is not None:
                po, ko = arrays["pts_offsets"], arrays["keyframes_offsets"]
                fi = index_from_dict(index, arrays["pts"][po[i] : po[i + 1]], arrays["keyframes"][ko[i] : ko[i + 1]])
            one = VideoMetadata.from_dict(meta)
            videos[one.video_id] = one.replace(frame_index=fi) if fi is not None else one
        return Release(
            release_id=str(f.attrs["release_id"]),
            created=str(f.attrs["created"]),
            labels=labels,
            views=views,
            videos=videos,
            table=table,
            info=json.loads(f.attrs["info"]),
        )


def release_created(path: str | os.PathLike[str]) -> str:
    """The ``created`` time recorded in a release file (reads one attribute)."""
    import h5py

    with h5py.File(path, "r") as f:
        return str(f.attrs["created"])


def copy_release(release: Release) -> Release:
    """A copy whose dicts are fresh, down to each video's ``fps`` and ``sources`` (a caller changing them must not
    change the release that ``Dataset.release`` keeps); the table's and frame indexes' arrays are read-only and
    shared."""
    videos = {vid: meta.replace() for vid, meta in release.videos.items()}  # its __post_init__ copies fps, sources
    return dataclasses.replace(release, views=dict(release.views), videos=videos, info=json.loads(_json(release.info)))
