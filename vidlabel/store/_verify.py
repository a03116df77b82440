"""``vidlabel verify``: a frame store's structure, counts and per-chunk checksums."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import StoreError, VidlabelError
from vidlabel.store._backend import Backend, FramesReader, chunk_crc_problem, chunk_size_problem
from vidlabel.store._framestore import backend_for, find_stores, not_a_store_hint
from vidlabel.store._layout import (
    FORMAT,
    FORMAT_VERSION,
    SEGMENT_FIELDS,
    VIDEO_ARRAYS,
    class_names_problem,
    format_version_problem,
    region_names,
    root_videos_problem,
    summary_problem,
    summary_problems,
    video_ids_problem,
    video_problems,
)
from vidlabel.store._position import positions_by_code
from vidlabel.store._remote import is_url

__all__ = ["damaged_unit_chunks", "verify_store"]


def verify_store(
    path: str | os.PathLike[str], *, progress: bool = False, storage_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Check every store at ``path``: root, index, each video's arrays and every frame chunk's CRC-32C.

    Parameters
    ----------
    path : path or str
        A store folder or a folder of stores, or the fsspec URL of a Zarr store (or of a prefix of several).
    progress : bool
        Show a tqdm bar over the chunks.
    storage_options : mapping, optional
        fsspec filesystem options for a URL.

    Returns
    -------
    dict
        ``ok`` (bool), ``problems`` (list of str, each naming the store, video
        and chunk or array), ``stores``, ``videos``, ``frames``, ``chunks``
        (checked: read and compared with their CRC-32C), ``chunks_total`` (of
        every video, checked or not: a chunk file missing or a folder cannot
        be checked; a video whose file or frames array cannot be opened counts
        its stored frames over the export's ``chunk_frames``, from the root),
        ``bytes`` (of chunk data read).

    Raises
    ------
    StoreError
        If there is no store at ``path``.
    """
    folders = find_stores(path, storage_options=storage_options)
    if not folders:
        hint = "" if is_url(path) else not_a_store_hint(path)
        raise StoreError(f"no vidlabel frame store at {str(path)!r}{hint}", path=str(path))
    report: dict[str, Any] = {"ok": True, "problems": [], "stores": [str(f) for f in folders], "videos": 0,
                              "frames": 0, "chunks": 0, "chunks_total": 0, "bytes": 0}  # fmt: skip
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(desc="verify", unit="chunk", disable=None)
    try:
        roots = [(folder, _verify_one(folder, report, bar, storage_options)) for folder in folders]
        report["problems"].extend(_across_stores(path, roots))
    finally:
        if bar is not None:
            bar.close()
    report["ok"] = not report["problems"]
    return report


def _across_stores(path: Any, roots: list[tuple[Path | str, dict[str, Any]]]) -> list[str]:
    """What keeps a folder of stores from opening as one (as open_store refuses it): a video in two of its
    stores, or stores with different class names."""
    problems: list[str] = []
    seen: dict[str, Path | str] = {}
    for folder, attrs in roots:
        for v in attrs.get("video_ids", []) if isinstance(attrs.get("video_ids"), list) else []:
            if v in seen:
                problems.append(
                    f"video {v!r} is in two stores of {str(path)!r}: {str(seen[v])!r} and {str(folder)!r}; "
                    "open_store refuses the folder: move or delete one of them"
                )
            else:
                seen[v] = folder
    names = {tuple(attrs.get("class_names", [])) for _, attrs in roots if attrs}
    if len(names) > 1:
        problems.append(
            f"the stores under {str(path)!r} have different class names: "
            + "; ".join(f"{str(folder)!r}: {list(attrs.get('class_names', []))}" for folder, attrs in roots if attrs)
            + "; open_store refuses the folder: open each store on its own"
        )
    return problems


def _verify_one(
    folder: Path | str, report: dict[str, Any], bar: Any, storage_options: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Check one store into ``report``; returns its root's attributes ({} when it has none)."""
    problems: list[str] = report["problems"]
    backend = backend_for(folder, storage_options=storage_options)
    attrs, index = backend.read_root()
    where = str(folder)
    if not attrs:
        problems.append(f"{where}: no root (export not finished)")
        return {}
    video_ids, summary = _check_root_attrs(where, attrs, problems)
    lengths = _verify_videos(backend, where, attrs, video_ids, summary, report, bar)
    _check_index(where, index, video_ids, lengths, problems)
    expected = attrs.get("samples")
    if expected is not None and int(expected) != int(index.shape[0]):
        problems.append(f"{where}: /index has {index.shape[0]} samples, the root says {expected}")
    return attrs


def _check_root_attrs(where: str, attrs: dict[str, Any], problems: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Append to ``problems`` what is wrong with a store's root attributes; its video ids and ``videos``
    summary where they can be read (else empty)."""
    if attrs.get("format") != FORMAT:
        problems.append(f"{where}: root format is {attrs.get('format')!r}, expected {FORMAT!r}")
    version_problem = format_version_problem(attrs.get("format_version", 0))
    if version_problem is not None:
        problems.append(f"{where}: {version_problem}")
    elif attrs.get("format_version", 0) > FORMAT_VERSION:
        problems.append(f"{where}: format version {attrs.get('format_version')} is newer than {FORMAT_VERSION}")
    if attrs.get("complete") is not True and attrs.get("failed"):
        problems.append(f"{where}: root is not marked complete: its export failed: {attrs['failed']}")
    elif attrs.get("complete") is not True:
        problems.append(f"{where}: root is not marked complete (export interrupted or running)")
    videos_problem = root_videos_problem(attrs.get("videos", {}))
    ids_problem = video_ids_problem(attrs.get("video_ids", []))
    for problem in (class_names_problem(attrs.get("class_names", [])), ids_problem, videos_problem):
        if problem is not None:
            problems.append(f"{where}: {problem}")
    video_ids = list(attrs.get("video_ids", [])) if ids_problem is None else []
    summary = attrs.get("videos", {}) if videos_problem is None else {}
    if summary and ids_problem is None:
        problems.extend(f"{where}: {problem}" for problem in summary_problems(summary, video_ids))
    return video_ids, summary


def _verify_videos(
    backend: Any,
    where: str,
    attrs: dict[str, Any],
    video_ids: list[str],
    summary: dict[str, Any],
    report: dict[str, Any],
    bar: Any,
) -> dict[int, int]:
    """Check each video of the store at ``where`` into ``report``; the stored rows of each video that could be read, by its
    position in ``video_ids``."""
    problems: list[str] = report["problems"]
    on_disk = backend.video_ids()
    for stray in backend.stray_keys():
        problems.append(
            f"{where}: stray objects under {stray!r} (a key with a '', '.' or '..' part: no part of the store, "
            "not read): remove them"
        )
    for v in sorted(set(video_ids) - set(on_disk)):
        problems.append(f"{where}: {backend.missing_video_problem(v)}")
    frames_only = bool(attrs.get("frames_only"))
    lengths: dict[int, int] = {}
    for code, vid in enumerate(video_ids):
        if vid not in on_disk:
            report["chunks_total"] += _expected_chunks(attrs, summary.get(vid, {}))
            continue
        before = report["chunks_total"]
        try:
            t = _verify_video(
                backend, vid, frames_only, list(attrs.get("class_names", [])), report, bar, summary.get(vid, {})
            )
        except (VidlabelError, OSError, KeyError, ValueError) as err:
            problems.append(f"{where}: video {vid!r}: cannot be read: {err}")
            if report["chunks_total"] == before:  # its frames were not reached: count them from the root
                report["chunks_total"] += _expected_chunks(attrs, summary.get(vid, {}))
            continue
        lengths[code] = t
    return lengths


def _check_index(
    where: str, index: np.ndarray, video_ids: list[str], lengths: dict[int, int], problems: list[str]
) -> None:
    """Append to ``problems`` the rows of ``/index`` that name no video, lie outside their video's ``lengths``
    rows, or repeat."""
    if not index.size:
        return
    codes, rows = index[:, 0], index[:, 1]
    if codes.min() < 0 or codes.max() >= len(video_ids):
        problems.append(f"{where}: /index names videos outside [0, {len(video_ids)})")
        return
    of_video = dict(positions_by_code(codes))  # one sort, not a scan of every sample per video
    for code, t in lengths.items():
        r = rows[of_video.get(code, np.zeros(0, np.int64))]
        if r.size and (r.min() < 0 or r.max() >= t):
            problems.append(f"{where}: /index has rows of video {video_ids[code]!r} outside [0, {t})")
        if np.unique(r).size != r.size:
            problems.append(f"{where}: /index repeats rows of video {video_ids[code]!r}")


def _expected_chunks(attrs: dict[str, Any], summary: dict[str, Any]) -> int:
    """Chunks of a video that verify could not open, from the root: its stored frames (the ``videos`` summary)
    over the export's ``chunk_frames`` (a unit of fewer frames has one chunk of them all), rounded up; 0 where the
    root does not say. So that "N of M chunks checked" counts the chunks of a video whose file is gone."""
    frames, chunk_frames = summary.get("frames"), attrs.get("export", {}).get("chunk_frames")
    if not isinstance(frames, int) or not isinstance(chunk_frames, int) or frames <= 0 or chunk_frames <= 0:
        return 0
    return -(-frames // min(chunk_frames, frames))


def _verify_video(
    backend: Any,
    vid: str,
    frames_only: bool,
    class_names: list[str],
    report: dict[str, Any],
    bar: Any,
    summary: dict[str, Any],
) -> int:
    """Check one video's attributes, arrays and frame chunks into ``report``; its stored rows."""
    problems: list[str] = report["problems"]
    where = f"{backend.folder}: video {vid!r}"
    video = backend.open_video(vid)
    try:
        if video.attrs.get("complete") is not True:
            problems.append(f"{where}: not marked complete")
        arrays = {name: video.array(name) for name in VIDEO_ARRAYS}
        t = int(arrays["frame_number"].shape[0])
        regions = segments = None
        if not frames_only:
            regions = {name: video.array(f"regions/{name}") for name in region_names(video.attrs)}
            segments = {name: video.array(f"segments/{name}") for name in SEGMENT_FIELDS}
        problems.extend(
            f"{where}: {problem}"
            for problem in video_problems(vid, video.attrs, arrays, regions, segments, class_names)
        )
        frames = video.frames()
        report["chunks_total"] += frames.n_chunks  # "chunks" counts those that could be checked
        _check_frames(where, video.attrs, frames, t, problems)
        own = {
            "frames": t,
            "width": video.attrs.get("width"),
            "height": video.attrs.get("height"),
            "content_hash": video.attrs.get("content_hash"),
            "labels_key": video.attrs.get("labels_key"),
        }
        problem = summary_problem(vid, summary, own)
        if problem is not None:
            problems.append(f"{backend.folder}: {problem}")
        checks = video.array("frames_crc32c")
        if checks.shape != (frames.n_chunks,):
            problems.append(f"{where}: frames_crc32c has {checks.shape[0]} entries for {frames.n_chunks} chunks")
        else:
            _check_chunks(where, frames, checks, report, bar)
        frames.close()
        report["videos"] += 1
        report["frames"] += t
        return t
    finally:
        video.close()


def _check_frames(where: str, attrs: Mapping[str, Any], frames: FramesReader, t: int, problems: list[str]) -> None:
    """Append to ``problems`` where a video's frames array disagrees with its ``t`` rows and its attributes
    (frames unit, codec, width and height)."""
    if frames.shape[0] != t:
        problems.append(f"{where}: frames has {frames.shape[0]} rows, frame_number {t}")
    want_key = attrs.get("frames_key")
    if want_key is not None and frames.unit_key is not None and frames.unit_key != want_key:
        problems.append(f"{where}: its frames are frames unit {frames.unit_key!r}, not its own unit {want_key!r}")
    want_codec = attrs.get("codec")
    if isinstance(want_codec, str) and frames.codec.spec != want_codec:
        problems.append(f"{where}: its frames say codec {frames.codec.spec!r}, not the video's {want_codec!r}")
    height, width = attrs.get("height", -1), attrs.get("width", -1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (height, width)):
        problems.append(f"{where}: its width and height attributes are {width!r} and {height!r}, not whole numbers")
    elif (height, width) != (-1, -1) and tuple(frames.shape[1:3]) != (height, width):
        problems.append(f"{where}: frames are {frames.shape[2]}x{frames.shape[1]}, the video {width}x{height}")


def _check_chunks(where: str, frames: FramesReader, checks: np.ndarray, report: dict[str, Any], bar: Any) -> None:
    """Read every chunk of ``frames`` against its CRC-32C in ``checks``, counting them into ``report`` and
    appending one problem per chunk that fails or cannot be read."""
    problems: list[str] = report["problems"]

    def on_chunk(size: int) -> None:
        report["chunks"] += 1
        report["bytes"] += size
        if bar is not None:
            bar.update(1)

    import google_crc32c

    unreadable: list[tuple[int, str]] = []
    failing = _failing_chunks(frames, checks, on_chunk, unreadable)
    words = dict(unreadable)
    for c in sorted([*failing, *words]):
        rows = f"rows {c * frames.chunk_frames}..{c * frames.chunk_frames + frames.chunk_rows(c) - 1}"
        if c in words:
            problems.append(f"{where}: chunk {c} ({rows}): {words[c]}")
            continue
        data = frames.raw_chunk(c)  # read again, as a read of it would: the words are the read's
        problem = chunk_size_problem(frames, c, len(data)) or chunk_crc_problem(
            frames, c, int(checks[c]), google_crc32c.value(data)
        )
        problems.append(f"{where}: chunk {c} ({rows}): {problem}")


def _failing_chunks(
    frames: FramesReader,
    checks: np.ndarray,
    on_chunk: Callable[[int], None] | None = None,
    unreadable: list[tuple[int, str]] | None = None,
) -> list[int]:
    """Indices of the chunks of ``frames`` whose stored bytes fail their CRC-32C in ``checks`` ((n_chunks,)
    uint32); ``on_chunk`` hears the size of each chunk read. A chunk that cannot be read at all (a Zarr chunk
    file missing, or a directory) raises the reader's StoreError, or with ``unreadable`` is listed there with
    its words and the others are still checked (``vidlabel verify`` lists every damaged chunk)."""
    import google_crc32c

    failing = []
    for c in range(frames.n_chunks):
        if c % 64 == 0:  # a store at a URL fetches 64 chunks at a time (no-op for local files)
            frames.prefetch(range(c, min(c + 64, frames.n_chunks)))
        try:
            data = frames.raw_chunk(c)
        except StoreError as err:
            if unreadable is None:
                raise
            unreadable.append((c, str(err)))
            continue
        if on_chunk is not None:
            on_chunk(len(data))
        if google_crc32c.value(data) != int(checks[c]):
            failing.append(c)
    return failing


def damaged_unit_chunks(backend: Backend, key: str) -> list[int] | None:
    """The chunks of local frames unit ``key`` that fail their CRC-32C: ``[]`` when it is sound, None when the
    unit cannot be read at all (its checksums or frames are missing or unreadable).

    An export calls this on every stored unit it reuses or copies from, so that a damaged unit is written again
    instead of being kept as "up to date".
    """
    try:
        frames = backend.open_frames_unit(key)
    except (VidlabelError, OSError, KeyError, ValueError):
        return None
    try:
        checks = np.asarray(frames.stored_checksums(), dtype=np.uint32)  # as its writer recorded them
        if checks.shape != (frames.n_chunks,):
            return None
        if backend.name == "zarr" and not isinstance(backend.folder, Path):
            # a unit in an object store (complete only once every object was PUT whole): not read back on
            # every resume, which would fetch the whole store; `vidlabel verify URL` checks its chunks
            return []
        return _failing_chunks(frames, checks)
    except (VidlabelError, OSError, KeyError, ValueError):
        return None
    finally:
        frames.close()
