"""Release to frame store: each video decoded once, written in chunks, published atomically, resumable.

:func:`export` turns a release into the store layout of ARCHITECTURE.md
(:mod:`vidlabel.store.layout`); :func:`cache` writes the frames-only store
the spec calls a frame cache. :func:`export` runs five named steps, each
its own module: options checked once into a frozen record
(``_options.check_options``), the frame selection and the per-video plan
(``_plan.select_frames``, ``plan_export``) and what is left to write against
the store (``_plan.plan_units``), the unit jobs run in this process, on a
local pool or on any executor (``_pool.run_units``, ``_units.run_unit``),
publishing (``_publish``: video groups as their units land, root ``complete``
last) and reporting (``_report``). How it works:

- **Selection** is :class:`~vidlabel.FrameSamples`'s (``frames``, ``kinds``,
  ``stride``, ``view_id``): the stored frames of a video are exactly the
  frames FrameSamples would sample. Regions (every box and mask row of the
  view) are stored per stored frame in the stored frame's pixels; markers
  become segments. Regions on frames that are not stored are counted in the
  report (and warned about), never dropped silently. Frames without a
  trustworthy picture (a video's ``untrusted_frames``: a truncated or
  corrupt file) are never stored, so the reader never has to decode them;
  the annotations on them are reported apart from stride/frames/kinds.
- **Frames are keyed by their pixels' inputs** (video content hash, view,
  output size, codec) plus chunking and the frame set, not by labels: a new
  release of the same videos reuses the stored frames (no decoding); a
  different frame set copies the frames it already has and decodes only the
  rest.
- **Parallelism** comes from processes over videos (``workers``): with HDF5
  each frames unit is its own file, so every worker writes its own; inside a
  worker, a writer thread encodes and writes chunks while the reader decodes
  (PyAV's conversion and h5py's writes hold the GIL, so one process alone
  cannot overlap them fully). The parent writes the small per-video groups
  and the root.
- **Safety**: a single-writer lock; every unit and video group is written
  under a temporary name and published by rename with ``complete`` set last;
  the root is marked incomplete first and complete last. A killed export
  leaves only temporary files: the same command resumes, skipping every
  video already published, and the result equals a clean export. Small
  metadata files are flushed to disk before they are renamed; frame data is
  not (that would stall the export at disk speed): after a power loss,
  ``vidlabel verify`` checks every chunk against its CRC-32C.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from vidlabel.clip import ClipSpec
from vidlabel.dataset._release import Release
from vidlabel.errors import (
    OptionError,
    StoreError,
    VideoChangedError,
    VideoDecodeError,
    VideoNotFoundError,
    VidlabelError,
)
from vidlabel.export._mediasequence import export_mediasequence
from vidlabel.export._options import MEDIASEQUENCE, ExportOptions, check_options
from vidlabel.export._plan import ExportPlan, UnitWork, check_video_files, plan_export, plan_units, select_frames
from vidlabel.export._pool import UnitsFailed, progress_bar, run_units
from vidlabel.export._publish import (
    Publisher,
    StoreSource,
    prepare_folder,
    prepare_url,
    refuse_file_target,
    resumable_when_disk_full,
    take_over,
    warn_if_narrower,
    write_root,
)
from vidlabel.export._report import ExportReport, changed_failure, decode_failure, report_damaged, report_plan
from vidlabel.store._backend import Backend
from vidlabel.store._codecs import Codec
from vidlabel.store._fs import StoreLock

__all__ = ["ExportReport", "cache", "export"]


def export(
    ds: Any,
    out: str | os.PathLike[str],
    *,
    release: str | Release | None = "latest",
    format: str = "hdf5",
    codec: str | Codec | None = None,
    view_id: str | None = None,
    frames: str = "annotated",
    kinds: str | Sequence[str] = ("box", "mask"),
    stride: int = 1,
    output_size: tuple[int, int] | None = None,
    chunk_frames: int | None = None,
    workers: int = 1,
    progress: bool = True,
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    frames_only: bool = False,
    overwrite: bool = False,
    clip_frames: int | None = None,
    shard_frames: int | None = None,
    executor: Executor | None = None,
    storage_options: Mapping[str, Any] | None = None,
    clip: ClipSpec | None = None,
) -> ExportReport:
    """Decode a release once into a chunked frame store (HDF5 or Zarr) that any sampler reads at random,
    or into MediaSequence SequenceExamples in TFRecord shards (``format="mediasequence"``).

    Parameters
    ----------
    ds : Dataset or Release
        The dataset (or a release already in hand).
    out : path or str
        The store folder, or (``format="zarr"``) an object store URL (``s3://bucket/store``, ``file://``,
        ``memory://``) written straight into, without a local copy. An existing store there is updated:
        its frames are reused where they match, a killed export is resumed. An update that selects frames
        with other options (``frames``, ``kinds``, ``stride``, ``view_id``) and so leaves out frames the
        store held warns (``VidlabelWarning``), naming the options and the counts.
    release : str, None or Release
        A release id, ``"latest"``, or None for the live annotations.
    format : {"hdf5", "zarr", "mediasequence"}
        ``mediasequence``: one ``tf.train.SequenceExample`` per video (or per clip of
        ``clip_frames`` stored frames) with MediaPipe's MediaSequence keys, in
        ``out/part-00000-of-000NN.tfrecord`` shards, ``out/_SUCCESS`` last (see
        :mod:`vidlabel.export._mediasequence`; needs the ``tfrecord`` package, extra ``tf``).
    codec : str, optional
        ``none`` (default: lossless, fastest to read), ``lz4``, ``zstd[:level]``,
        ``gzip[:level]``, ``png`` (lossless, one picture per frame) or
        ``jpeg[:quality]`` (lossy, opt-in). MediaSequence: ``jpeg[:quality]``
        (default ``jpeg:95``) or ``png``.
    view_id : str, optional
        Store that view's crop (resized to its output size) with only that
        view's annotations, as ``FrameSamples(view_id=...)``.
    frames : {"annotated", "all"}
        Which frames to store, as FrameSamples: frames with an annotation of
        ``kinds``, or every frame.
    kinds : {"box", "mask", "marker"} or sequence of them
        Which kinds make a frame "annotated" (all box and mask regions of a
        stored frame are stored whatever ``kinds`` says; markers always become
        segments).
    stride : int
        Keep every ``stride``-th frame of that list (FrameSamples' ``stride``).
    output_size : (width, height), optional
        Resize the stored frames (and their regions) to this size.
    chunk_frames : int, optional
        Frames per chunk (default 1: a random frame costs one chunk; png and
        jpeg require 1). Larger chunks suit sequential reading (StoreStream).
    workers : int
        Processes decoding and writing videos in parallel.
    progress : bool
        Show a tqdm progress bar.
    roots : path or sequence of path
        Folders to search for videos whose recorded path is stale; one folder
        may be given alone.
    frames_only : bool
        Write frames without regions and segments (what :func:`cache` does).
    overwrite : bool
        Replace a store at ``out`` that was exported from another dataset
        (by default that is refused; a store of this dataset, of any of its
        releases, is always updated in place).
    clip_frames : int, optional
        MediaSequence only: stored frames per SequenceExample (default: one per video).
    shard_frames : int, optional
        MediaSequence only: a shard is closed once it holds this many frames (default 1024).
    executor : concurrent.futures.Executor, optional
        Run one task per frames unit on it (e.g. ``distributed.Client(address).get_executor()``) instead of
        the local pool (``workers`` is then unused; HDF5 and Zarr only). A unit that fails does not stop the others: they are
        written, the store records which videos failed and why, and the first failure is raised. Tasks may
        run more than once (a killed worker's task is rerun): each writes the same bytes under the same keys
        and one finding its unit complete does nothing. A local ``out`` must be visible to every worker.
    storage_options : mapping, optional
        fsspec options of a URL ``out`` (for ``s3://``, s3fs's: ``key``, ``secret``,
        ``client_kwargs={"endpoint_url": ...}``); they travel with every task.
    clip : ClipSpec, optional
        HDF5 and Zarr: also store every frame of the clip of each selected frame (the clip context
        :class:`~vidlabel.torch_data.StoreClips` reads), placed as :meth:`ClipSpec.frames` places it. The
        store's samples stay the selected frames; its root records the spec (``vidlabel info`` shows it).
        Clips ``edge="skip"`` leaves out are counted in the report (``clips_skipped``).

    Returns
    -------
    ExportReport

    Raises
    ------
    OptionError
        If ``ds`` is not a Dataset or a Release (a path to a dataset folder is refused: open it first); a flag
        (``progress``, ``frames_only``, ``overwrite``) that is not True or False (``"no"`` is not False);
        on a bad option (unknown view, frames mode, kind or codec, ``stride < 1``, a ``release`` that is no
        release id, ...), a URL ``out`` with
        ``format="hdf5"`` or on a filesystem without conditional writes (not ``s3://``, ``file://``,
        ``memory://``), an ``executor`` that is not a ``concurrent.futures.Executor``, or a ``memory://``
        ``out`` with worker processes (memory stores live in one process).
    StoreError
        If ``out`` holds something other than a store of this format, or a
        store exported from another dataset or release (unless ``overwrite``).
    StoreLockedError
        If another process is writing ``out`` (for a URL: if another export took its root over, at the start
        or while this one ran; this one then does not publish).
    ReleaseNotFoundError, VideoDecodeError
        From the dataset and the reader.
    VideoNotFoundError
        If the file of a video whose frames are to be decoded cannot be found (nor under ``roots``): one error
        names every such video, refused before anything is written, so a folder that did not exist still does not, and an existing one (a
        store, or a folder with files of its own) is left as it was. With an ``executor``, whose workers may
        see other files than this process, the unit's task says so instead.
    VideoChangedError
        If a video's file no longer holds the registered bytes (its content
        hash differs from the release's): its frames are not decoded, and the
        store is left incomplete, saying why when opened.

    Warns
    -----
    VidlabelWarning
        When box or mask annotations lie on frames the store does not hold
        (the report counts them), and when an update of an existing store
        leaves out frames it held, with other selection options.
    """
    t0 = time.perf_counter()
    _check_dataset(ds)
    opts = check_options(
        out, release, format=format, codec=codec, view_id=view_id, frames=frames, kinds=kinds, stride=stride,
        output_size=output_size, chunk_frames=chunk_frames, workers=workers, progress=progress, roots=roots,
        frames_only=frames_only, overwrite=overwrite, clip_frames=clip_frames, shard_frames=shard_frames,
        storage_options=storage_options, clip=clip,
    )  # fmt: skip
    _check_executor(executor, opts)
    rel = _resolve_release(ds, release)
    selection = select_frames(rel, opts, str(getattr(ds, "path", "")) or rel.info.get("dataset"))
    source = StoreSource(selection.dataset_path, rel.release_id, frozenset(_releases_of(ds)))
    plan = plan_export(selection, opts)  # reads the release (and hashes a video registered without a hash) only
    lock: Any
    if opts.is_url:  # no lock on an object store: the root's conditional writes keep exports apart
        where, lock = opts.out.rstrip("/"), contextlib.nullcontext()
    else:
        folder = Path(out)
        refuse_file_target(folder)
        where, lock = str(folder), StoreLock(folder)
    report = ExportReport(out=where, format=opts.format, codec=opts.codec.spec, release_id=rel.release_id)
    report.clips_skipped = plan.clips_skipped
    report.context_frames = sum(
        int(v.frame_number.size - v.sample_rows.size) for v in plan.videos if v.sample_rows is not None
    )
    if opts.format == MEDIASEQUENCE:
        return _export_mediasequence(Path(out), plan, opts, report, t0)
    _export_store(out, lock, source, plan, opts, report, ds, executor, t0)
    return report


def _check_dataset(ds: Any) -> None:
    """Refuse a ``ds`` that is no Dataset nor Release (a path: open it first)."""
    if not isinstance(ds, Release) and not callable(getattr(ds, "release", None)):
        raise OptionError(
            f"export takes a Dataset or a Release, got {ds!r}"
            + (
                " (open a dataset folder with vidlabel.Dataset.open(path) first)"
                if isinstance(ds, (str, os.PathLike))
                else ""
            )
        )


def _export_mediasequence(
    folder: Path, plan: ExportPlan, opts: ExportOptions, report: ExportReport, t0: float
) -> ExportReport:
    """Write ``plan`` as MediaSequence shards into ``folder`` (locked meanwhile); the report, timed from ``t0``."""
    with StoreLock(folder):
        report_plan(report, plan, opts, stacklevel=3)
        total = sum(int(v.frame_number.size) for v in plan.videos)
        bar = progress_bar(opts.progress and total > 0, total, f"export {folder.name}")
        try:
            export_mediasequence(plan, opts, report, bar)
        finally:
            if bar is not None:
                bar.close()
    report.seconds = time.perf_counter() - t0
    report.size_bytes = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    return report


def _export_store(
    out: str | os.PathLike[str], lock: Any, source: StoreSource, plan: ExportPlan, opts: ExportOptions,
    report: ExportReport, ds: Any, executor: Executor | None, t0: float,
) -> None:  # fmt: skip
    """Write ``plan`` into the store at ``opts.out`` (``out``, a URL or a folder) under ``lock``: take the store over,
    write the units and the root, and fill in ``report`` (timed from ``t0``)."""
    with lock:
        if opts.is_url:
            backend, previous = prepare_url(
                opts.out, opts.storage_options, source, overwrite=opts.overwrite, frames_only=opts.frames_only
            )
        else:
            backend, previous = prepare_folder(
                Path(out), opts.format, source, overwrite=opts.overwrite, frames_only=opts.frames_only
            )
        report_plan(report, plan, opts, stacklevel=3)
        warn_if_narrower(report.out, backend, previous, plan, opts, stacklevel=3)
        work = plan_units(backend, plan, opts)
        if executor is None:  # an executor's workers may see files the driver does not: each unit says so there
            try:  # an update checks the files' bytes too: a changed file would leave the store incomplete
                check_video_files(
                    (job.meta for job in work.jobs if job.decode.size), opts.roots, check_hash=bool(previous)
                )
            except VideoChangedError as err:
                raise changed_failure(err, backend.folder, plan.dataset_path, ds, plan.release, written=False) from err
        if not opts.is_url:  # (a URL's root was taken over by prepare_url, with a conditional write)
            take_over(backend, previous, source)  # the first write: nothing was written before a refusal
        report.videos_up_to_date, report.frames_reused = work.videos_up_to_date, work.frames_reused
        report_damaged(report, work.damaged, stacklevel=3)
        with resumable_when_disk_full(backend):
            _write_units(backend, plan, work, opts, report, ds, executor)
            report.samples = write_root(backend, plan, opts)
        report.videos = len(plan.videos)
        report.seconds = time.perf_counter() - t0
        report.size_bytes = backend.size_on_disk()


def _check_executor(executor: Any, opts: ExportOptions) -> None:
    if executor is not None and opts.format == MEDIASEQUENCE:
        raise OptionError("executor applies to format='hdf5' and 'zarr' exports; a MediaSequence export runs here")
    if executor is not None and not isinstance(executor, Executor):
        raise OptionError(
            f"executor must be a concurrent.futures.Executor (e.g. distributed.Client(address).get_executor()), "
            f"got {executor!r}"
        )
    if opts.out.startswith("memory://") and (
        (executor is not None and not isinstance(executor, ThreadPoolExecutor))
        or (executor is None and opts.workers > 1)
    ):
        raise OptionError(
            f"cannot export to {opts.out!r} with worker processes: memory:// stores live in one process; "
            "use file:// or an object store (s3://...), or workers=1"
        )


def _resolve_release(ds: Any, release: str | Release | None) -> Release:
    if isinstance(release, Release):
        return release
    if isinstance(ds, Release):
        return ds
    if release is None:
        return ds.snapshot()
    if not isinstance(release, str):
        raise OptionError(f"release must be a release id, 'latest', None or a Release, got {release!r}")
    return ds.release(release)


def _releases_of(ds: Any) -> list[str]:
    """The release ids of dataset ``ds`` (none for a release given alone)."""
    releases = getattr(ds, "releases", None)
    return list(releases()) if callable(releases) else []


def _write_units(
    backend: Backend, plan: ExportPlan, work: UnitWork, opts: ExportOptions, report: ExportReport, ds: Any,
    executor: Executor | None = None,
) -> None:  # fmt: skip
    """Run the unit jobs, publishing each video as soon as its frames are in place.

    A frame the reader refuses, or a video whose file changed, stops the export: the root records why (a
    rerun cannot succeed), and the error says what to do. On an executor the other units keep going first,
    and the root also records which videos failed and why (``failed_videos``).
    """
    publisher = Publisher(backend, work.to_publish, {job.key for job in work.jobs})
    total = sum(job.frames for job in work.jobs)
    name = str(backend.folder).rstrip("/").rsplit("/", 1)[-1]
    bar = progress_bar(opts.progress and total > 0, total, f"export {name}")  # none with nothing to do
    try:
        for units_done, result in enumerate(run_units(work.jobs, opts, bar, executor), 1):
            report.frames_decoded += result.decoded
            report.frames_copied += result.copied
            publisher.unit_done(result.key)
            if bar is not None and executor is not None:  # frames on the bar, units beside it
                bar.set_postfix_str(f"units {units_done}/{len(work.jobs)}")
    except UnitsFailed as failed:
        _record_failures(backend, plan, work, failed, ds)
    except VideoDecodeError as err:
        failure = _failure(err, backend, plan, ds)
        # a rerun cannot succeed: readers of the incomplete store say why instead of "rerun to resume"
        attrs, _ = backend.read_root()
        backend.mark_incomplete({**attrs, "failed": str(failure)})
        raise failure from err
    finally:
        if bar is not None:
            bar.close()


def _failure(err: VideoDecodeError, backend: Backend, plan: ExportPlan, ds: Any) -> VideoDecodeError:
    folder, dataset_path = backend.folder, plan.dataset_path
    if isinstance(err, VideoChangedError):
        return changed_failure(err, folder, dataset_path, ds, plan.release)
    return decode_failure(err, plan.release, folder, dataset_path)


def _record_failures(backend: Backend, plan: ExportPlan, work: UnitWork, failed: UnitsFailed, ds: Any) -> None:
    """Units failed on an executor (the others are published): record which videos and why, raise the first."""
    videos_of: dict[str, list[str]] = {}
    for video in work.to_publish:
        videos_of.setdefault(video.frames_key, []).append(video.video_id)
    reasons: dict[str, str] = {}
    for job, exc in failed.failures:
        for vid in videos_of.get(job.key, [str(job.attrs.get("video_id"))]):
            reasons[vid] = f"{type(exc).__name__}: {exc}"
    job, first = failed.failures[0]
    names = ", ".join(repr(v) for v in list(reasons)[:5]) + (" ..." if len(reasons) > 5 else "")
    left = len(work.jobs) - len(failed.failures)
    written = "none was written" if left <= 0 else "the other is written" if left == 1 else "the others are written"
    others = f"{len(failed.failures)} of {len(work.jobs)} frames units failed (videos {names}); {written}"
    # a file is read where the worker runs: on a cluster that may not be the file this machine sees
    where = (
        " The file was read on an executor's worker: if the file on this machine is the registered one, the workers "
        "see another file (or none) at that path: another machine or mount"
        if isinstance(first, (VideoChangedError, VideoNotFoundError))
        else ""
    )
    failure: BaseException
    if isinstance(first, VideoDecodeError):  # as without an executor, plus what happened to the others
        failure = _failure(first, backend, plan, ds)
        message = f"{failure} {others}.{where}"
        failure.args, failure.message = (message,), message
    else:
        message = (
            f"export to {str(backend.folder)!r} stopped: {others}. Video {job.attrs.get('video_id')!r}: "
            f"{type(first).__name__}: {str(first).removesuffix('; rerun the export to resume')}. "
            "Rerun the export to resume (the videos written are kept)" + (f".{where}" if where else "")
        )
        failure = StoreError(message, path=str(backend.folder), video_id=job.attrs.get("video_id"))
        if isinstance(first, VidlabelError):  # keep the class (VideoNotFoundError, StoreError, ...)
            try:
                failure = type(first)(message)
                failure.path, failure.video_id = first.path, first.video_id or job.attrs.get("video_id")
            except Exception:  # a class that does not take one message: the StoreError
                pass
    attrs, _ = backend.read_root()
    backend.mark_incomplete({**attrs, "failed": message, "failed_videos": reasons})
    raise failure from first


def cache(
    ds: Any,
    out: str | os.PathLike[str],
    *,
    release: str | Release | None = "latest",
    codec: str | Codec | None = "jpeg",
    format: str = "hdf5",
    workers: int = 1,
    progress: bool = True,
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    overwrite: bool = False,
) -> ExportReport:
    """Write the spec's frame cache: a frames-only store of the full frames a release's default run uses.

    The frames of ``FrameSamples(ds, release=release)`` (frames with a box or
    mask), full frames (one cache serves every view), as JPEG by default
    (``codec="png"`` or ``"none"`` for exact pixels). ``FrameSamples(ds,
    cache=out)`` then reads them from the store and falls back to the video
    for frames it lacks or for a video whose file changed (content hash).

    Errors are those of :func:`export`.

    Parameters
    ----------
    ds : Dataset or path-like
        The dataset.
    out : path-like
        Folder of the cache store.
    release : str, Release or None
        As :func:`export` (default the latest release).
    codec : str, Codec or None
        ``"jpeg"`` by default; ``"png"`` or ``"none"`` keep exact pixels.
    format : {"hdf5", "zarr"}
        The store's backend.
    workers : int
        Videos exported in parallel (processes).
    progress : bool
        Show a progress bar.
    roots : path-like or sequence of path-like
        Folders to search for video files whose recorded path is stale; one
        folder may be given alone.
    overwrite : bool
        Replace a store written from another dataset (as :func:`export`), or a
        store that holds labels (an export): without it a cache is never
        written over a store's boxes, labels and markers.

    Raises
    ------
    StoreError
        As :func:`export`; also if ``out`` holds a complete frame store with
        labels and ``overwrite`` is false.
    """
    return export(
        ds, out, release=release, format=format, codec=codec, frames="annotated", kinds=("box", "mask"),
        workers=workers, progress=progress, roots=roots, frames_only=True, overwrite=overwrite,
    )  # fmt: skip
