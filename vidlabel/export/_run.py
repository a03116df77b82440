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

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vidlabel.dataset._release import Release
from vidlabel.errors import OptionError, VideoChangedError, VideoDecodeError
from vidlabel.export._options import ExportOptions, check_options
from vidlabel.export._plan import ExportPlan, UnitWork, plan_export, plan_units, select_frames
from vidlabel.export._pool import progress_bar, run_units
from vidlabel.export._publish import Publisher, prepare_folder, refuse_file_target, write_root
from vidlabel.export._report import ExportReport, changed_failure, decode_failure, report_plan
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
    kinds: Sequence[str] = ("box", "mask"),
    stride: int = 1,
    output_size: tuple[int, int] | None = None,
    chunk_frames: int | None = None,
    workers: int = 1,
    progress: bool = True,
    roots: Sequence[str | os.PathLike[str]] = (),
    frames_only: bool = False,
) -> ExportReport:
    """Decode a release once into a chunked frame store (HDF5 or Zarr) that any sampler reads at random.

    Parameters
    ----------
    ds : Dataset or Release
        The dataset (or a release already in hand).
    out : path
        The store folder. An existing store there is updated: its frames are
        reused where they match, a killed export is resumed.
    release : str, None or Release
        A release id, ``"latest"``, or None for the live annotations.
    format : {"hdf5", "zarr"}
    codec : str, optional
        ``none`` (default: lossless, fastest to read), ``lz4``, ``zstd[:level]``,
        ``gzip[:level]``, ``png`` (lossless, one picture per frame) or
        ``jpeg[:quality]`` (lossy, opt-in).
    view_id : str, optional
        Store that view's crop (resized to its output size) with only that
        view's annotations, as ``FrameSamples(view_id=...)``.
    frames : {"annotated", "all"}
        Which frames to store, as FrameSamples: frames with an annotation of
        ``kinds``, or every frame.
    kinds : sequence of {"box", "mask", "marker"}
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
    roots : sequence of path
        Folders to search for videos whose recorded path is stale.
    frames_only : bool
        Write frames without regions and segments (what :func:`cache` does).

    Returns
    -------
    ExportReport

    Raises
    ------
    OptionError
        On a bad option (unknown view, frames mode, kind or codec, ``stride < 1``, ...), or if
        ``out`` is a URL: export to a local folder and :func:`vidlabel.store.upload` it.
    StoreError
        If ``out`` holds something other than a store of this format.
    StoreLockedError
        If another process is writing ``out``.
    ReleaseNotFoundError, VideoNotFoundError, VideoDecodeError
        From the dataset and the reader.
    VideoChangedError
        If a video's file no longer holds the registered bytes (its content
        hash differs from the release's): its frames are not decoded, and the
        store is left incomplete, saying why when opened.

    Warns
    -----
    VidlabelWarning
        When box or mask annotations lie on frames the store does not hold
        (the report counts them).
    """
    t0 = time.perf_counter()
    opts = check_options(
        out, release, format=format, codec=codec, view_id=view_id, frames=frames, kinds=kinds, stride=stride,
        output_size=output_size, chunk_frames=chunk_frames, workers=workers, progress=progress, roots=roots,
        frames_only=frames_only,
    )  # fmt: skip
    rel = _resolve_release(ds, release)
    selection = select_frames(rel, opts, str(getattr(ds, "path", "")) or rel.info.get("dataset"))
    folder = Path(out)
    refuse_file_target(folder)
    report = ExportReport(out=str(folder), format=opts.format, codec=opts.codec.spec, release_id=rel.release_id)
    with StoreLock(folder):
        backend = prepare_folder(folder, opts.format)
        plan = plan_export(selection, opts)
        report_plan(report, plan, opts, stacklevel=2)
        work = plan_units(backend, plan, opts)
        report.videos_up_to_date, report.frames_reused = work.videos_up_to_date, work.frames_reused
        _write_units(backend, plan, work, opts, report, ds)
        report.samples = write_root(backend, plan, opts)
        report.videos = len(plan.videos)
        report.seconds = time.perf_counter() - t0
        report.size_bytes = backend.size_on_disk()
    return report


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


def _write_units(
    backend: Backend, plan: ExportPlan, work: UnitWork, opts: ExportOptions, report: ExportReport, ds: Any
) -> None:
    """Run the unit jobs, publishing each video as soon as its frames are in place.

    A frame the reader refuses, or a video whose file changed, stops the export: the root records why (a
    rerun cannot succeed), and the error says what to do.
    """
    publisher = Publisher(backend, work.to_publish, {job.key for job in work.jobs})
    total = sum(job.frames for job in work.jobs)
    bar = progress_bar(opts.progress and total > 0, total, f"export {backend.folder.name}")  # none with nothing to do
    try:
        for result in run_units(work.jobs, opts, bar):
            report.frames_decoded += result.decoded
            report.frames_copied += result.copied
            publisher.unit_done(result.key)
    except VideoDecodeError as err:
        folder, dataset_path = backend.folder, plan.dataset_path
        failure = (
            changed_failure(err, folder, dataset_path, ds, plan.release)
            if isinstance(err, VideoChangedError)
            else decode_failure(err, plan.release, folder, dataset_path)
        )
        # a rerun cannot succeed: readers of the incomplete store say why instead of "rerun to resume"
        attrs, _ = backend.read_root()
        backend.mark_incomplete({**attrs, "failed": str(failure)})
        raise failure from err
    finally:
        if bar is not None:
            bar.close()


def cache(
    ds: Any,
    out: str | os.PathLike[str],
    *,
    release: str | Release | None = "latest",
    codec: str | Codec | None = "jpeg",
    format: str = "hdf5",
    workers: int = 1,
    progress: bool = True,
    roots: Sequence[str | os.PathLike[str]] = (),
) -> ExportReport:
    """Write the spec's frame cache: a frames-only store of the full frames a release's default run uses.

    The frames of ``FrameSamples(ds, release=release)`` (frames with a box or
    mask), full frames (one cache serves every view), as JPEG by default
    (``codec="png"`` or ``"none"`` for exact pixels). ``FrameSamples(ds,
    cache=out)`` then reads them from the store and falls back to the video
    for frames it lacks or for a video whose file changed (content hash).

    Parameters and errors are those of :func:`export`.
    """
    return export(
        ds, out, release=release, format=format, codec=codec, frames="annotated", kinds=("box", "mask"),
        workers=workers, progress=progress, roots=roots, frames_only=True,
    )  # fmt: skip
