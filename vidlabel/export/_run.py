"""Release to frame store: each video decoded once, written in chunks, published atomically, resumable.

:func:`export` turns a release into the store layout of ARCHITECTURE.md
(:mod:`vidlabel.store.layout`); :func:`cache` writes the frames-only store
the spec calls a frame cache. How it works:

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

import datetime as _dt
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.dataset._release import Release
from vidlabel.errors import (
    OptionError,
    StoreError,
    VideoChangedError,
    VideoDecodeError,
    VidlabelWarning,
)
from vidlabel.export._report import ExportReport, changed_failure, decode_failure, lost_reasons
from vidlabel.geometry import clip_boxes, decode_rle, encode_rle, resize_image, resize_mask, view_boxes, view_mask
from vidlabel.spec import KINDS, MAX_SIDE, VideoMetadata, View
from vidlabel.store._codecs import Codec, get_codec
from vidlabel.store._framestore import BACKENDS, backend_for
from vidlabel.store._fs import StoreLock
from vidlabel.store._layout import FORMAT, FORMAT_VERSION, digest, frames_key, pixel_key
from vidlabel.store._remote import refuse_url_output
from vidlabel.store._writer import write_frames

__all__ = ["ExportReport", "cache", "export"]

_KIND_BOX, _KIND_MASK, _KIND_MARKER = (KINDS.index(k) for k in ("box", "mask", "marker"))
# FrameSamples' warning about frames without a trustworthy picture (export warns about them itself).
_UNTRUSTED_LEFT_OUT = r".* without a trustworthy picture are left out of the samples"


# -- planning ------------------------------------------------------------------------------------------------


@dataclass
class _VideoPlan:
    video_id: str
    meta: VideoMetadata
    frame_number: np.ndarray
    size: tuple[int, int]
    pixel_key: str
    frames_key: str
    attrs: dict[str, Any]
    arrays: dict[str, np.ndarray]


@dataclass
class _UnitJob:
    """Everything a worker needs to write one frames unit (picklable)."""

    folder: str
    backend: str
    key: str
    meta: VideoMetadata
    view: View | None
    output_size: tuple[int, int] | None
    size: tuple[int, int]
    codec: str
    chunk_frames: int
    frame_number: np.ndarray
    decode: np.ndarray
    sources: list[tuple[str, np.ndarray, np.ndarray]]  # (unit key, its frame numbers, which of ours it holds)
    roots: tuple[str, ...]
    attrs: dict[str, Any]


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


def _timestamps_us(meta: VideoMetadata, frames: np.ndarray) -> np.ndarray:
    """Presentation time of frames in microseconds: from the frame index when it covers the video, else frame / fps."""
    fi = meta.frame_index
    frames = np.asarray(frames, dtype=np.int64)
    if fi is not None and fi.frame_count == meta.frame_count and frames.size:
        return fi.timestamp_us()[frames]
    num, den = meta.fps["num"], meta.fps["den"]
    return (frames.astype(object) * 1_000_000 * den // num).astype(np.int64) if frames.size else frames.copy()


def _check_size(value: Any, name: str) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        w, h = (int(v) for v in value)
    except (TypeError, ValueError) as err:
        raise OptionError(f"{name} must be (width, height), got {value!r}") from err
    if w <= 0 or h <= 0:
        raise OptionError(f"{name} must be positive, got {value!r}")
    if w > MAX_SIDE or h > MAX_SIDE:
        raise OptionError(
            f"{name} {w}x{h} is larger than {MAX_SIDE} pixels a side (one such RGB frame would take "
            f"{w * h * 3 / 2**30:.1f} GiB); choose a size up to {MAX_SIDE}"
        )
    return (w, h)


def _regions(
    rel: Release, video_code: int, meta: VideoMetadata, view: View | None, view_code: int | None,
    size: tuple[int, int], output_size: tuple[int, int] | None, stored: np.ndarray,
) -> tuple[dict[str, np.ndarray], dict[str, Any], int]:  # fmt: skip
    """CSR regions over the stored frames, in stored pixels; plus what is not stored and rows outside the video.

    The not-stored dict counts ``box`` and ``mask`` rows, ``untrusted`` (those of them on frames without a
    trustworthy picture) and lists their ``annotation_ids``.
    """
    table = rel.table
    sel = (table.video == video_code) & (table.kind != _KIND_MARKER)
    if view_code is not None:
        sel &= table.view == view_code
    rows = np.flatnonzero(sel)
    frames = table.start_frame[rows]
    inside = (frames >= 0) & (frames < meta.frame_count)
    outside = int((~inside).sum())
    rows, frames = rows[inside], frames[inside]
    order = np.argsort(frames, kind="stable")  # annotation ids stay ascending within a frame
    rows, frames = rows[order], frames[order]
    pos = np.searchsorted(stored, frames)
    found = pos < stored.size
    found[found] = stored[pos[found]] == frames[found]
    lost_rows = rows[~found]
    not_stored = {
        "box": int((table.kind[lost_rows] == _KIND_BOX).sum()),
        "mask": int((table.kind[lost_rows] == _KIND_MASK).sum()),
        "untrusted": int(meta.untrusted_mask()[frames[~found]].sum()) if meta.untrusted_count else 0,
        "annotation_ids": table.annotation_id[lost_rows].tolist(),
    }
    rows, pos = rows[found], pos[found]
    t = stored.size
    counts = np.bincount(pos, minlength=t) if t else np.zeros(0, np.int64)
    row_offsets = np.zeros(t + 1, np.int64)
    np.cumsum(counts, out=row_offsets[1:])

    boxes = view_boxes(table.box[rows], view)
    vw, vh = view.size if view is not None else (meta.width, meta.height)
    if output_size is not None:
        ow, oh = output_size
        boxes = clip_boxes(boxes * np.array([ow / vw, oh / vh, ow / vw, oh / vh]), ow, oh)

    width, height = size
    lengths = table.mask_offsets[rows + 1] - table.mask_offsets[rows]
    as_is = (lengths > 0) & (view is None) & (output_size is None)
    as_is &= np.all(table.mask_size[rows] == (height, width), axis=1)
    redo = np.flatnonzero((lengths > 0) & ~as_is)
    new_counts: dict[int, bytes] = {}
    for j in redo.tolist():  # masks that need the view's crop or a resize: decode, transform, encode again
        rle = table.mask_rle(int(rows[j]))
        assert rle is not None
        mh, mw = rle["size"]
        mask = decode_rle(rle)
        if view is not None and (mh, mw) == (meta.height, meta.width):
            mask = view_mask(mask, view)
        if mask.shape != (vh, vw):
            mask = resize_mask(mask, (vw, vh))
        if mask.shape != (height, width):
            mask = resize_mask(mask, (width, height))
        new_counts[j] = encode_rle(mask)["counts"]
    out_lengths = np.where(as_is, lengths, 0)
    for j, data in new_counts.items():
        out_lengths[j] = len(data)
    mask_offsets = np.zeros(rows.size + 1, np.int64)
    np.cumsum(out_lengths, out=mask_offsets[1:])
    mask_counts = np.zeros(int(mask_offsets[-1]), np.uint8)
    keep = np.flatnonzero(as_is)
    if keep.size:  # copied as they are, without a Python loop
        n = lengths[keep]
        before = np.cumsum(n) - n
        step = np.arange(int(n.sum()), dtype=np.int64)
        dst = np.repeat(mask_offsets[keep] - before, n) + step
        src = np.repeat(table.mask_offsets[rows[keep]] - before, n) + step
        mask_counts[dst] = table.mask_counts[src]
    for j, data in new_counts.items():
        mask_counts[mask_offsets[j] : mask_offsets[j + 1]] = np.frombuffer(data, np.uint8)
    arrays: dict[str, np.ndarray] = {
        "row_offsets": row_offsets,
        "bbox_xyxy": boxes.astype(np.float32).reshape(-1, 4),
        "label_index": table.label[rows].astype(np.int64),
        "track_id": table.track_id[rows].astype(np.int64),
        "annotation_id": table.annotation_id[rows].astype(np.int64),
        "confidence": table.confidence[rows].astype(np.float32),
        "origin": table.origin[rows].astype(np.uint8),
        "mask_offsets": mask_offsets,
        "mask_counts": mask_counts,
    }
    return arrays, not_stored, outside


def _segments(
    rel: Release, video_code: int, meta: VideoMetadata, view_code: int | None, stored: np.ndarray
) -> dict[str, np.ndarray]:
    """Markers of a video as MediaSequence-style segments (end inclusive, clipped to the video like FrameSamples)."""
    table = rel.table
    sel = (table.video == video_code) & (table.kind == _KIND_MARKER)
    if view_code is not None:
        sel &= table.view == view_code
    rows = np.flatnonzero(sel)
    start = np.maximum(table.start_frame[rows], 0)
    end = np.minimum(table.end_frame[rows], meta.frame_count - 1)
    ok = end >= start
    rows, start, end = rows[ok], start[ok], end[ok]
    first = np.searchsorted(stored, start, side="left")
    last = np.searchsorted(stored, end, side="right") - 1
    empty = first > last
    first[empty] = -1
    last[empty] = -1
    return {
        "start_frame": start.astype(np.int64),
        "end_frame": end.astype(np.int64),
        "start_index": first.astype(np.int64),
        "end_index": last.astype(np.int64),
        "start_timestamp_us": _timestamps_us(meta, start),
        "end_timestamp_us": _timestamps_us(meta, end),
        "label_index": table.label[rows].astype(np.int64),
        "annotation_id": table.annotation_id[rows].astype(np.int64),
    }


def _content_hash(meta: VideoMetadata, roots: Sequence[str]) -> str:
    if meta.content_hash:
        return meta.content_hash
    from vidlabel.video._probe import content_hash
    from vidlabel.video._reader import resolve_video_path

    return content_hash(resolve_video_path(meta, roots))


# -- writing a frames unit (in a worker process or inline) -----------------------------------------------------


def _unit_frames(job: _UnitJob, counts: dict[str, int]) -> Iterator[np.ndarray]:
    """The unit's frames in row order: copies from stored units merged with a sequential decode of the rest."""
    per_row: dict[int, tuple[int, int]] = {}  # our row -> (source, source row)
    for s, (_key, src_numbers, ours) in enumerate(job.sources):
        src_rows = np.searchsorted(src_numbers, job.frame_number[ours])
        for r, sr in zip(ours.tolist(), src_rows.tolist()):
            per_row.setdefault(r, (s, sr))
    decode_rows = np.searchsorted(job.frame_number, job.decode).tolist()
    backend = backend_for(job.folder, job.backend)
    readers: dict[int, Any] = {}
    decoded: Iterator[tuple[int, np.ndarray]] = iter(())
    reader = None
    if job.decode.size:
        from vidlabel.video._reader import FrameReader

        reader = FrameReader.for_video(job.meta, view=job.view, roots=job.roots)
        decoded = reader.iter_frames(job.decode.tolist())
    chunk_cache: dict[tuple[int, int], np.ndarray] = {}
    try:
        next_decode = 0
        for r in range(job.frame_number.size):
            if next_decode < len(decode_rows) and decode_rows[next_decode] == r:
                n, image = next(decoded)
                if n != int(job.frame_number[r]):
                    raise StoreError(
                        f"video {job.meta.video_id!r}: the reader returned frame {n} for {job.frame_number[r]}"
                    )
                next_decode += 1
                if job.output_size is not None:
                    image = resize_image(image, job.output_size)
                counts["decoded"] += 1
                yield image
                continue
            s, sr = per_row[r]
            src = readers.get(s)
            if src is None:
                src = readers[s] = backend.open_frames_unit(job.sources[s][0])
            c = sr // src.chunk_frames
            chunk = chunk_cache.get((s, c))
            if chunk is None:
                chunk_cache.clear()
                chunk = chunk_cache[(s, c)] = src.read_chunk(c)
            counts["copied"] += 1
            yield chunk[sr - c * src.chunk_frames]
    finally:
        if reader is not None:
            reader.close()
        for src in readers.values():
            src.close()


_PROGRESS: Any = None


def _init_worker(progress_queue: Any) -> None:
    global _PROGRESS
    _PROGRESS = progress_queue


def _run_unit(job: _UnitJob, on_frame: Callable[[int], None] | None = None) -> dict[str, int]:
    """Write one frames unit; returns ``{"decoded": n, "copied": n}``."""
    counts = {"decoded": 0, "copied": 0}
    if on_frame is None and _PROGRESS is not None:
        pending = [0]

        def on_frame(k: int) -> None:
            pending[0] += k
            if pending[0] >= 16:
                _PROGRESS.put(pending[0])
                pending[0] = 0

    backend = backend_for(job.folder, job.backend)
    write_frames(
        backend, job.key, _unit_frames(job, counts), frame_number=job.frame_number, frame_size=job.size,
        chunk_frames=job.chunk_frames, codec=get_codec(job.codec), attrs=job.attrs, on_frame=on_frame,
    )  # fmt: skip
    return counts


# -- the export ---------------------------------------------------------------------------------------------------


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
    from vidlabel.samples._samples import FrameSamples

    t0 = time.perf_counter()
    if format not in BACKENDS:
        raise OptionError(f"unknown store format {format!r}; allowed: {', '.join(BACKENDS)}")
    refuse_url_output(out, format=format)  # object stores: export locally, then vidlabel.store.upload
    the_codec = get_codec(codec)
    if chunk_frames is None:
        chunk_frames = 1
    if isinstance(chunk_frames, bool) or not isinstance(chunk_frames, (int, np.integer)) or chunk_frames < 1:
        raise OptionError(f"chunk_frames must be an integer >= 1, got {chunk_frames!r}")
    if the_codec.per_frame and chunk_frames != 1:
        raise OptionError(
            f"codec {the_codec.name!r} stores one picture per chunk: chunk_frames must be 1, got {chunk_frames}"
        )
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise OptionError(f"workers must be an integer >= 1, got {workers!r}")
    out_size = _check_size(output_size, "output_size")
    roots_t = tuple(str(r) for r in ([roots] if isinstance(roots, (str, os.PathLike)) else roots))
    rel = _resolve_release(ds, release)
    dataset_path = str(getattr(ds, "path", "")) or rel.info.get("dataset")
    options = {"view_id": view_id, "kinds": tuple(kinds), "frames": frames, "stride": stride}
    with warnings.catch_warnings():  # the export's own warning below says it, with the stride/kinds losses
        warnings.filterwarnings("ignore", _UNTRUSTED_LEFT_OUT, VidlabelWarning)
        selection = FrameSamples.from_release(rel, dataset_path=dataset_path, **options)
        if frames == "all":
            annotated = FrameSamples.from_release(rel, view_id=view_id, kinds=tuple(kinds)).index
    view = selection.view
    table = rel.table
    view_code = None
    if view_id is not None:
        view_code = table.view_ids.index(view_id) if view_id in table.view_ids else -2
    class_names = list(rel.labels) if rel.labels else list(table.labels)

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"export target {str(folder)!r} is a file; give a folder for the store", path=str(folder))
    report = ExportReport(out=str(folder), format=format, codec=the_codec.spec, release_id=rel.release_id)
    with StoreLock(folder):
        backend = _prepare_folder(folder, format)

        # Plan every video.
        codes, frame_col = selection.index.video_codes, selection.index.frames
        plans: list[_VideoPlan] = []
        for code, video_id in enumerate(selection.video_ids):
            meta = rel.videos[video_id]
            stored = np.ascontiguousarray(frame_col[codes == code], dtype=np.int64)
            view_size = view.size if view is not None else (meta.width, meta.height)
            size = out_size if out_size is not None else view_size
            chash = _content_hash(meta, roots_t)
            pkey = pixel_key(
                content_hash=chash, crop=None if view is None else view.crop,
                view_size=None if view is None else view.output_size, output_size=out_size, codec=the_codec.spec,
            )  # fmt: skip
            fkey = frames_key(pkey, chunk_frames, stored)
            arrays: dict[str, np.ndarray] = {
                "frame_number": stored,
                "timestamp_us": _timestamps_us(meta, stored),
            }
            if frames == "all":
                arrays["is_annotated"] = np.isin(stored, annotated.frames[annotated.video_codes == code])
            else:
                arrays["is_annotated"] = np.ones(stored.size, bool)
            tcode = table.video_ids.index(video_id) if video_id in table.video_ids else -1
            if not frames_only:
                regions, lost, outside = _regions(rel, tcode, meta, view, view_code, size, out_size, stored)
                segments = _segments(rel, tcode, meta, view_code, stored)
                arrays.update({f"regions/{k}": v for k, v in regions.items()})
                arrays.update({f"segments/{k}": v for k, v in segments.items()})
                n_lost = lost["box"] + lost["mask"]
                report.not_stored["box"] += lost["box"]
                report.not_stored["mask"] += lost["mask"]
                report.not_stored["untrusted"] += lost["untrusted"]
                if lost["untrusted"]:
                    report.not_stored["untrusted_by_video"][video_id] = lost["untrusted"]
                if n_lost:
                    report.not_stored["by_video"][video_id] = n_lost
                    ids = report.not_stored.setdefault("annotation_ids", [])
                    ids.extend(lost["annotation_ids"][: max(0, 1000 - len(ids))])
                report.markers_without_stored_frames += int((segments["start_index"] < 0).sum())
                report.rows_outside_video += outside
            attrs = {
                "video_id": video_id, "content_hash": chash, "source_uri": meta.uri, "fps": dict(meta.fps),
                "frame_count": meta.frame_count, "source_width": meta.width, "source_height": meta.height,
                "rotation": meta.rotation, "width": size[0], "height": size[1], "view_id": view_id,
                "crop": None if view is None else list(view.crop),
                "view_output_size": None if view is None or view.output_size is None else list(view.output_size),
                "output_size": None if out_size is None else list(out_size), "codec": the_codec.spec,
                "chunk_frames": int(chunk_frames), "frames_key": fkey, "pixel_key": pkey,
            }  # fmt: skip
            attrs["labels_key"] = digest("labels", attrs, *[arrays[k] for k in sorted(arrays)])
            plans.append(_VideoPlan(video_id, meta, stored, size, pkey, fkey, attrs, arrays))

        report.untrusted_frames = selection.describe()["untrusted_frames_left_out"]
        lost_total = report.not_stored["box"] + report.not_stored["mask"]
        if lost_total or report.untrusted_frames:
            parts = []
            if lost_total:
                why = lost_reasons(report.not_stored, f"stride={stride}, frames={frames!r}, kinds={list(kinds)}")
                parts.append(
                    f"{report.not_stored['box']} box and {report.not_stored['mask']} mask annotations lie on frames "
                    f"this export does not store ({why}); they are not in the store (ExportReport.not_stored lists "
                    "them; the command line's summary names the first ids)"
                )
            if report.untrusted_frames:
                parts.append(f"{report.untrusted_frames} frames without a trustworthy picture are not stored")
            warnings.warn(f"export to {str(folder)!r}: {'; '.join(parts)}", VidlabelWarning, stacklevel=2)

        # What to do per video.
        units = backend.frames_units()
        by_pixels: dict[str, list[str]] = {}
        for key, uattrs in units.items():
            by_pixels.setdefault(str(uattrs.get("pixel_key")), []).append(key)
        jobs: list[_UnitJob] = []
        to_publish: list[_VideoPlan] = []
        planned_units: set[str] = set()
        for plan in plans:
            existing = backend.video_attrs(plan.video_id)
            if (
                existing is not None
                and existing.get("complete") is True
                and existing.get("labels_key") == plan.attrs["labels_key"]
                and plan.frames_key in units
            ):
                report.videos_up_to_date += 1
                continue
            to_publish.append(plan)
            if plan.frames_key in units:
                report.frames_reused += int(plan.frame_number.size)
                continue
            if plan.frames_key in planned_units:
                continue
            planned_units.add(plan.frames_key)
            have = np.zeros(plan.frame_number.size, bool)
            sources = []
            for key in by_pixels.get(plan.pixel_key, []):
                numbers = backend.unit_frame_number(key)
                pos = np.searchsorted(numbers, plan.frame_number)
                hit = pos < numbers.size
                hit[hit] = numbers[pos[hit]] == plan.frame_number[hit]
                hit &= ~have
                if hit.any():
                    sources.append((key, numbers, np.flatnonzero(hit)))
                    have |= hit
            jobs.append(
                _UnitJob(
                    folder=str(folder),
                    backend=format,
                    key=plan.frames_key,
                    meta=plan.meta,
                    view=view,
                    output_size=out_size,
                    size=plan.size,
                    codec=the_codec.spec,
                    chunk_frames=int(chunk_frames),
                    frame_number=plan.frame_number,
                    decode=plan.frame_number[~have],
                    sources=sources,
                    roots=roots_t,
                    attrs={
                        "pixel_key": plan.pixel_key,
                        "content_hash": plan.attrs["content_hash"],
                        "video_id": plan.video_id,
                    },
                )
            )

        # Run the frames jobs, publishing each video as soon as its frames are in place.
        waiting: dict[str, list[_VideoPlan]] = {}
        for plan in to_publish:
            waiting.setdefault(plan.frames_key, []).append(plan)

        def publish_videos(key: str) -> None:
            for plan in waiting.pop(key, []):
                backend.write_video(plan.video_id, attrs=plan.attrs, arrays=plan.arrays, frames_key=key)

        for key in list(waiting):
            if key not in planned_units:
                publish_videos(key)
        total = sum(int(j.frame_number.size) for j in jobs)
        bar = _progress_bar(progress and total > 0, total, f"export {folder.name}")  # no bar with nothing to do
        try:
            for key, counts in _run_jobs(jobs, workers, bar):
                report.frames_decoded += counts["decoded"]
                report.frames_copied += counts["copied"]
                publish_videos(key)
        except VideoDecodeError as err:
            failure = (
                changed_failure(err, folder, dataset_path, ds, rel)
                if isinstance(err, VideoChangedError)
                else decode_failure(err, rel, folder, dataset_path)
            )
            # a rerun cannot succeed: readers of the incomplete store say why instead of "rerun to resume"
            attrs, _ = backend.read_root()
            backend.mark_incomplete({**attrs, "failed": str(failure)})
            raise failure from err
        finally:
            if bar is not None:
                bar.close()

        # Videos of an earlier export that this release does not have.
        keep = {p.video_id for p in plans}
        for old in backend.video_ids():
            if old not in keep:
                backend.remove_video(old)

        # The root, complete last.
        video_ids = [p.video_id for p in plans]
        index = np.concatenate(
            [np.column_stack([np.full(p.frame_number.size, i, np.int64), np.arange(p.frame_number.size)])
             for i, p in enumerate(plans)] or [np.zeros((0, 2), np.int64)]
        )  # fmt: skip
        root_attrs = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "release_id": rel.release_id,
            "release_created": rel.created, "class_names": class_names, "dataset": dataset_path,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "vidlabel_version": __version__, "frames_only": bool(frames_only),
            "export": {"release": release if isinstance(release, str) or release is None else rel.release_id,
                       "format": format, "codec": the_codec.spec, "view_id": view_id, "frames": frames,
                       "kinds": list(kinds), "stride": int(stride),
                       "output_size": None if out_size is None else list(out_size),
                       "chunk_frames": int(chunk_frames)},
            "video_ids": video_ids, "samples": int(index.shape[0]),
            "videos": {p.video_id: {"frames": int(p.frame_number.size), "width": p.size[0], "height": p.size[1],
                                    "content_hash": p.attrs["content_hash"], "view_id": view_id,
                                    "source_uri": p.meta.uri} for p in plans},
        }  # fmt: skip
        backend.write_root(root_attrs, index, video_ids)
        backend.collect_garbage({p.frames_key for p in plans})
        report.videos = len(plans)
        report.samples = int(index.shape[0])
        report.seconds = time.perf_counter() - t0
        report.size_bytes = backend.size_on_disk()
    return report


def _prepare_folder(folder: Path, format: str) -> Any:
    """The backend for ``folder``: refuses a folder holding anything but a store of this format; marks it incomplete."""
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


def _progress_bar(progress: bool, total: int, desc: str) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="frame", smoothing=0.1)


def _run_jobs(jobs: list[_UnitJob], workers: int, bar: Any) -> Iterable[tuple[str, dict[str, int]]]:
    """Run frames jobs inline (workers=1) or on a pool of spawned processes; yield (key, counts) as each finishes."""
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield job.key, _run_unit(job, on_frame=None if bar is None else bar.update)
        return
    import multiprocessing as mp
    import queue as _queue
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = mp.get_context("spawn")  # never fork a process holding HDF5 handles and threads
    progress_queue = ctx.Queue() if bar is not None else None
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_init_worker, initargs=(progress_queue,)
    )
    error: BaseException | None = None
    try:
        futures = {pool.submit(_run_unit, job): job for job in jobs}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            if progress_queue is not None:
                try:
                    while True:
                        bar.update(progress_queue.get_nowait())
                except _queue.Empty:
                    pass
            for fut in done:
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:  # stop starting videos; publish those that finish; raise at the end
                    if error is None:
                        error = exc
                        for other in pending:
                            other.cancel()
                    continue
                yield futures[fut].key, fut.result()
    finally:
        # running videos finish before returning, so no worker still writes once the lock is released
        pool.shutdown(wait=True, cancel_futures=True)
    if error is not None:
        raise error
    if bar is not None:
        bar.n = bar.total
        bar.refresh()


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
