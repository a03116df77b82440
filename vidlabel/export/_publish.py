"""Publishing an export: the store folder prepared (root marked incomplete), video groups as their units land,
videos the release no longer has removed, and the root written ``complete`` last."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.errors import StoreError
from vidlabel.export._options import ExportOptions
from vidlabel.export._plan import ExportPlan, VideoPlan
from vidlabel.store._backend import Backend
from vidlabel.store._framestore import BACKENDS, backend_for
from vidlabel.store._layout import FORMAT, FORMAT_VERSION
from vidlabel.store._remote import parse_json

__all__ = ["Publisher", "prepare_folder", "prepare_url", "refuse_file_target", "write_root"]


def refuse_file_target(folder: Path) -> None:
    """Raise :class:`StoreError` if the export target is a file."""
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"export target {str(folder)!r} is a file; give a folder for the store", path=str(folder))


def prepare_folder(folder: Path, format: str) -> Backend:
    """The backend for ``folder``: refuses a folder holding anything but a store of this format; marks it incomplete.

    Raises
    ------
    StoreError
        If ``folder`` holds a store of another format, or files that are not a store.
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
    backend.mark_incomplete({k: v for k, v in attrs.items() if k in ("format", "format_version")} or {"format": FORMAT})
    return backend


def prepare_url(url: str, storage_options: dict[str, Any] | None) -> Any:
    """The backend of a Zarr store written straight into an object store at ``url``; takes its root over.

    Raises
    ------
    OptionError
        If the URL's filesystem has no conditional writes (see :meth:`ZarrURLBackend.check_writable`).
    StoreError
        If ``url`` holds objects that are not a vidlabel store (or an HDF5 store).
    StoreLockedError
        If another export took the root over at the same moment.
    """
    from vidlabel.store._zarr import ZarrURLBackend

    backend = backend_for(url, "zarr", storage_options=storage_options)
    assert isinstance(backend, ZarrURLBackend)
    backend.check_writable()
    store = backend.store
    root = parse_json(store.get("zarr.json"))
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
    backend.mark_incomplete({k: v for k, v in attrs.items() if k in ("format", "format_version")} or {"format": FORMAT})
    return backend


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
    index = np.concatenate(
        [np.column_stack([np.full(v.frame_number.size, i, np.int64), np.arange(v.frame_number.size)])
         for i, v in enumerate(plan.videos)] or [np.zeros((0, 2), np.int64)]
    )  # fmt: skip
    backend.write_root(_root_attrs(plan, opts, video_ids, int(index.shape[0])), index, video_ids)
    backend.collect_garbage({v.frames_key for v in plan.videos})
    return int(index.shape[0])


def _root_attrs(plan: ExportPlan, opts: ExportOptions, video_ids: list[str], samples: int) -> dict[str, Any]:
    rel = plan.release
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "release_id": rel.release_id,
        "release_created": rel.created, "class_names": plan.class_names, "dataset": plan.dataset_path,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "vidlabel_version": __version__, "frames_only": opts.frames_only,
        "export": {"release": opts.release, "format": opts.format, "codec": opts.codec.spec,
                   "view_id": opts.view_id, "frames": opts.frames, "kinds": list(opts.kinds),
                   "stride": int(opts.stride), "output_size": None if opts.output_size is None else list(opts.output_size),
                   "chunk_frames": opts.chunk_frames},
        "video_ids": video_ids, "samples": samples,
        "videos": {v.video_id: {"frames": int(v.frame_number.size), "width": v.size[0], "height": v.size[1],
                                "content_hash": v.attrs["content_hash"], "view_id": opts.view_id,
                                "source_uri": v.meta.uri} for v in plan.videos},
    }  # fmt: skip
