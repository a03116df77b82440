"""Publishing an export: the store folder prepared (root marked incomplete), video groups as their units land,
videos the release no longer has removed, and the root written ``complete`` last."""

from __future__ import annotations

import datetime as _dt
import errno
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.errors import StoreError, VidlabelWarning
from vidlabel.export._options import ExportOptions
from vidlabel.export._plan import ExportPlan, VideoPlan
from vidlabel.export._units import DiskFull, is_disk_full
from vidlabel.store._backend import Backend
from vidlabel.store._clips import spec_to_attrs
from vidlabel.store._framestore import BACKENDS, backend_for
from vidlabel.store._layout import FORMAT, FORMAT_VERSION, FORMAT_VERSION_PLAIN

__all__ = [
    "Publisher",
    "StoreSource",
    "prepare_folder",
    "prepare_url",
    "warn_if_narrower",
    "refuse_file_target",
    "resumable_when_disk_full",
    "take_over",
    "write_root",
]


def refuse_file_target(folder: Path) -> None:
    """Raise :class:`StoreError` if the export target is a file."""
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"export target {str(folder)!r} is a file; give a folder for the store", path=str(folder))


@dataclass(frozen=True)
class StoreSource:
    """What an export writes from: the dataset folder, the release, and every release id that dataset holds
    (so that a store exported from the same dataset before it moved is still recognised as its own)."""

    dataset: str | None
    release_id: str | None
    dataset_releases: frozenset[str] = frozenset()

    def wrote(self, attrs: dict[str, Any]) -> bool:
        """True if a store root with ``attrs`` was written from this dataset (or this release), or records none."""
        old_dataset, old_release = attrs.get("dataset"), attrs.get("release_id")
        if not old_dataset and not old_release:
            return True
        if old_dataset and self.dataset and _same_path(str(old_dataset), self.dataset):
            return True
        return bool(old_release) and (old_release == self.release_id or old_release in self.dataset_releases)

    def root_attrs(self) -> dict[str, Any]:
        """What an incomplete root records of its writer (so a killed export is still known as this one's)."""
        return {"dataset": self.dataset, "release_id": self.release_id}


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def prepare_folder(
    folder: Path, format: str, source: StoreSource, *, overwrite: bool = False, frames_only: bool = False
) -> tuple[Backend, dict[str, Any]]:
    """The backend for ``folder``: refuses a folder holding anything but a store of this format, or a store
    written from another dataset (unless ``overwrite``). Writes nothing: :func:`take_over` marks the root
    incomplete once the export knows it can start. Also returns the root attributes the folder's store had
    before (empty for a new folder), for :func:`warn_if_narrower`.

    Raises
    ------
    StoreError
        If ``folder`` holds a store of another format, files that are not a store, or a store exported from
        another dataset or release and ``overwrite`` is false; or, for a ``frames_only`` export (a frame
        cache), a complete store that holds labels and ``overwrite`` is false.
    """
    from vidlabel.store._fs import LOCK_NAME

    for name in BACKENDS:
        if name != format and backend_for(folder, name).detect(folder):
            raise StoreError(
                f"{str(folder)!r} holds a {name} frame store; export with format={name!r} or to another folder",
                path=str(folder),
            )
    backend = backend_for(folder, format)
    others = [p.name for p in folder.iterdir() if p.name != LOCK_NAME]
    if others and not type(backend).detect(folder):
        raise StoreError(
            f"{str(folder)!r} is not empty and holds no vidlabel frame store (found {', '.join(sorted(others)[:5])}); "
            "export to a new or empty folder",
            path=str(folder),
        )
    attrs, _ = backend.read_root()
    _refuse_another(str(folder), attrs, source, overwrite, frames_only)
    _refuse_dropping_labels(str(folder), attrs, frames_only, overwrite)
    return backend, dict(attrs)


def _refuse_another(
    where: str, attrs: dict[str, Any], source: StoreSource, overwrite: bool, frames_only: bool = False
) -> None:
    """Refuse a store of another dataset (unless ``overwrite``); ``frames_only``: the export is a frame cache
    (``vidlabel cache``), and the message says so."""
    if not overwrite and not source.wrote(attrs):
        what, command, elsewhere = ("export", "export", "Export to another folder")
        if frames_only:
            what, command, elsewhere = ("frame cache", "cache", "Write the cache to another folder")
        raise StoreError(
            f"{where!r} holds a frame store exported from dataset {attrs.get('dataset')!r} "
            f"(release {attrs.get('release_id')}), not from this {what}'s dataset {source.dataset!r} "
            f"(release {source.release_id}): not replacing it. {elsewhere}, or pass overwrite=True "
            f"(`vidlabel {command} ... --overwrite`) to replace that store",
            path=where,
        )


def _refuse_dropping_labels(where: str, attrs: dict[str, Any], frames_only: bool, overwrite: bool) -> None:
    """Refuse a frames-only export (a frame cache) into a complete store that holds labels (unless
    ``overwrite``): it would replace that store's boxes, labels and markers with nothing."""
    if overwrite or not frames_only or attrs.get("complete") is not True or attrs.get("frames_only"):
        return
    videos = attrs.get("video_ids") or []
    raise StoreError(
        f"{where!r} holds a frame store with labels (release {attrs.get('release_id')}, {len(videos)} videos, "
        f"exported {attrs.get('created')}): a frame cache written there would replace it with frames only, and "
        "the boxes, labels and markers it holds would be lost. Write the cache to another folder, or pass "
        "overwrite=True (`vidlabel cache ... --overwrite`) to replace that store",
        path=where,
    )


def take_over(backend: Backend, attrs: dict[str, Any], source: StoreSource) -> None:
    """Mark the root of the store an export writes incomplete, recording the writer: an export's first write.

    Parameters
    ----------
    backend : Backend
    attrs : dict
        The root's attributes before this export (``{}`` for a new store).
    source : StoreSource
    """
    kept = {k: v for k, v in attrs.items() if k in ("format", "format_version")} or {"format": FORMAT}
    backend.mark_incomplete({**kept, **source.root_attrs()})


def prepare_url(
    url: str,
    storage_options: dict[str, Any] | None,
    source: StoreSource,
    *,
    overwrite: bool = False,
    frames_only: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """The backend of a Zarr store written straight into an object store at ``url``; takes its root over.
    Also returns the root attributes the store had before (empty for a new one).

    Raises
    ------
    OptionError
        If the URL's filesystem has no conditional writes (see :meth:`ZarrURLBackend.check_writable`).
    StoreError
        If ``url`` holds objects that are not a vidlabel store (or an HDF5 store).
        Also, as :func:`prepare_folder`, if it holds a store exported from another dataset or release and
        ``overwrite`` is false, or a frames-only export would replace a store that holds labels.
    StoreLockedError
        If another export took the root over at the same moment.
    """
    from vidlabel.store._zarr_url import ZarrURLBackend

    backend = backend_for(url, "zarr", storage_options=storage_options)
    assert isinstance(backend, ZarrURLBackend)
    backend.check_writable()
    store = backend.store
    root = store.get_json("zarr.json")
    if store.exists("store.h5"):
        raise StoreError(f"{url!r} holds an HDF5 frame store (store.h5); export to another URL", path=url)
    if root is not None and not (root.get("node_type") == "group" and root.get("attributes", {}).get("format")):
        raise StoreError(
            f"{url!r} holds a Zarr group that is not a vidlabel frame store; export to another URL", path=url
        )
    if root is None:
        others = [name for name in store.list_dirs() if name not in ("videos", "units", "index")]
        if others:
            raise StoreError(
                f"{url!r} is not empty and holds no vidlabel frame store (found {', '.join(others[:5])}); "
                "export to a new or empty URL",
                path=url,
            )
    attrs = dict((root or {}).get("attributes", {}))
    _refuse_another(url, attrs, source, overwrite, frames_only)
    _refuse_dropping_labels(url, attrs, frames_only, overwrite)
    take_over(backend, attrs, source)
    return backend, attrs


class Publisher:
    """Publishes each video group once its frames unit is in place (units already stored: at once)."""

    def __init__(self, backend: Backend, to_publish: list[VideoPlan], units_to_write: set[str]) -> None:
        self.backend = backend
        self.waiting: dict[str, list[VideoPlan]] = {}
        for video in to_publish:
            self.waiting.setdefault(video.frames_key, []).append(video)
        for key in list(self.waiting):
            if key not in units_to_write:
                self.unit_done(key)

    def unit_done(self, key: str) -> None:
        """Frames unit ``key`` is complete: publish the video groups that use it."""
        for video in self.waiting.pop(key, []):
            self.backend.write_video(video.video_id, attrs=video.attrs, arrays=video.arrays, frames_key=key)


def write_root(backend: Backend, plan: ExportPlan, opts: ExportOptions) -> int:
    """Remove the videos the release no longer has, write the root (``complete`` last), drop unused units.

    Returns the number of samples (rows of ``/index``).
    """
    keep = {v.video_id for v in plan.videos}
    for old in backend.video_ids():
        if old not in keep:
            backend.remove_video(old)
    video_ids = [v.video_id for v in plan.videos]
    # with a clip context, the samples are the selected frames only, not the frames stored for their clips
    rows_of = [np.arange(v.frame_number.size) if v.sample_rows is None else v.sample_rows for v in plan.videos]
    index = np.concatenate(
        [np.column_stack([np.full(rows.size, i, np.int64), rows]) for i, rows in enumerate(rows_of)]
        or [np.zeros((0, 2), np.int64)]
    )
    backend.write_root(_root_attrs(plan, opts, video_ids, int(index.shape[0])), index, video_ids)
    backend.collect_garbage({v.frames_key for v in plan.videos})
    return int(index.shape[0])


def _export_attrs(opts: ExportOptions) -> dict[str, Any]:
    """The export options as the root's ``export`` attribute records them (JSON values)."""
    return {"release": opts.release, "format": opts.format, "codec": opts.codec.spec, "view_id": opts.view_id,
            "frames": opts.frames, "kinds": list(opts.kinds), "stride": int(opts.stride),
            "output_size": None if opts.output_size is None else list(opts.output_size),
            "chunk_frames": opts.chunk_frames,
            **({} if opts.clip is None else {"clip": spec_to_attrs(opts.clip)})}  # fmt: skip


def _root_attrs(plan: ExportPlan, opts: ExportOptions, video_ids: list[str], samples: int) -> dict[str, Any]:
    rel = plan.release
    # a store without region attributes stays readable by a vidlabel that reads version 1
    version = FORMAT_VERSION if any(v.attrs.get("region_attributes") for v in plan.videos) else FORMAT_VERSION_PLAIN
    # the release's attribute schema decides which labels a store's attribute filter concerns
    schema = rel.info.get("attribute_schema") if version == FORMAT_VERSION else None
    return {
        "format": FORMAT, "format_version": version, "release_id": rel.release_id,
        "release_created": rel.created, "class_names": plan.class_names, "dataset": plan.dataset_path,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "vidlabel_version": __version__, "frames_only": opts.frames_only,
        "export": _export_attrs(opts),
        "video_ids": video_ids, "samples": samples,
        **({"attribute_schema": schema} if schema else {}),
        "videos": {v.video_id: {"frames": int(v.frame_number.size), "width": v.size[0], "height": v.size[1],
                                "content_hash": v.attrs["content_hash"], "view_id": opts.view_id,
                                "source_uri": v.meta.uri, "labels_key": v.attrs["labels_key"]}
                   for v in plan.videos},
    }  # fmt: skip


@contextmanager
def resumable_when_disk_full(backend: Backend) -> Iterator[None]:
    """Turn a full disk during the export into one error saying what failed, what is kept and how to resume.

    Raises
    ------
    StoreError
        When the disk (or quota) is full, or a file reached the largest size allowed (``EFBIG``): the videos
        published so far are kept, the store is left incomplete, and the same command resumes once there is
        space (or no such limit).
    """
    try:
        yield
    except OSError as err:
        too_large = err.errno == errno.EFBIG or f"errno = {errno.EFBIG}," in str(err) or "File too large" in str(err)
        if not is_disk_full(err) and not too_large:
            raise
        doing = str(err) if isinstance(err, DiskFull) else "writing the store's files"
        published = [v for v in backend.video_ids() if (backend.video_attrs(v) or {}).get("complete") is True]
        if too_large and not is_disk_full(err):
            raise StoreError(
                f"export to {str(backend.folder)!r} stopped: a file of the store reached the largest size allowed "
                f"while {doing} (EFBIG: the process's file size limit, `ulimit -f`, or the file system's, e.g. "
                f"FAT32's 4 GiB). Nothing already published was lost: the {len(published)} videos published so far "
                "are kept and the store is left incomplete. Lift the limit, or export to another file system (or "
                "with --format zarr: a file a chunk), and rerun the same command to resume",
                path=str(backend.folder),
            ) from err
        raise StoreError(
            f"export to {str(backend.folder)!r} stopped: no space left on the device while {doing}. Nothing "
            f"already published was lost: the {len(published)} videos published so far are kept and the store is "
            "left incomplete. Free some space (or export to a disk with room) and rerun the same command to resume",
            path=str(backend.folder),
        ) from err


#: The export options that decide which frames a store holds (the root's ``export`` attributes).
_SELECTION_OPTIONS = ("frames", "kinds", "stride", "view_id", "clip")


def _can_drop_frames(name: str, old: Any, new: Any) -> bool:
    """Whether changing export option ``name`` from ``old`` to ``new`` can leave out frames the old one stored."""
    if name == "frames":
        return new != "all"
    if name == "kinds":
        return not set(old) <= set(new)
    return True  # another stride or view selects other frames


def _cli_flag(name: str, value: Any) -> str | None:
    """The ``vidlabel export`` flag that gives option ``name`` the value ``value`` (None: no such flag)."""
    if name == "frames":
        return f"--frames {value}"
    if name == "stride":
        return f"--stride {value}"
    if name == "view_id":
        return None if value is None else f"--view {value}"
    return None


def _frames_leaving(backend: Backend, plan: ExportPlan) -> tuple[int, int]:
    """(frames the store holds of the plan's videos, how many of those the plan does not store again), from
    each video's published frames unit (read before the export writes anything)."""
    held = leaving = 0
    units = backend.frames_units()
    for video in plan.videos:
        attrs = backend.video_attrs(video.video_id)
        key = None if attrs is None or attrs.get("complete") is not True else attrs.get("frames_key")
        if key is None or key not in units:
            continue
        old = backend.unit_frame_number(str(key))
        held += int(old.size)
        leaving += int(np.count_nonzero(~np.isin(old, video.frame_number)))
    return held, leaving


def warn_if_narrower(
    where: str, backend: Backend, previous: dict[str, Any], plan: ExportPlan, opts: ExportOptions, *,
    stacklevel: int = 2,
) -> None:  # fmt: skip
    """Warn when an export into an existing complete store selects its frames with other options and so
    leaves out frames the store held (a rerun without ``--frames all`` shrinks a store exported with it).

    ``previous``: the store's root attributes before this export (:func:`prepare_folder`); the frames held
    are read from the store's video groups before anything is written. The export goes on (an update
    replaces the store, as documented); the warning names the changed options that can leave frames out
    (``output_size`` and a wider ``kinds`` or ``frames="all"`` cannot), the frames held, stored and left out
    (of the videos this export keeps), and the command-line flags that restore them.

    Warns
    -----
    VidlabelWarning
        If such an option differs from the store's recorded one and frames it held are not stored again.
    """
    old = previous.get("export")
    if previous.get("complete") is not True or not isinstance(old, dict):
        return
    new = _export_attrs(opts)  # compared as the store recorded its own
    changed = [
        k for k in _SELECTION_OPTIONS if k in old and old[k] != new.get(k) and _can_drop_frames(k, old[k], new.get(k))
    ]
    if not changed:
        return
    held, leaving = _frames_leaving(backend, plan)
    if not leaving:
        return
    stores = sum(int(v.frame_number.size) for v in plan.videos)
    was = ", ".join(f"{k}={old[k]!r}" for k in changed)
    now = ", ".join(f"{k}={new.get(k)!r}" for k in changed)
    flags = [f for f in (_cli_flag(k, old[k]) for k in changed) if f is not None]
    cli = f" (`vidlabel export ... {' '.join(flags)}`)" if len(flags) == len(changed) else ""
    warnings.warn(
        f"export to {where!r}: the store there held {held} frames exported with {was}; this export ({now}) "
        f"stores {stores}, and {leaving} of the frames it held leave the store. Export with {was}{cli} to keep "
        "them, or to another folder.",
        VidlabelWarning,
        stacklevel=stacklevel + 1,
    )
