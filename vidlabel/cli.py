"""The ``vidlabel`` command: thin argument parsing over the library.

Each sub-command is one ``_cmd_*`` function taking the parsed arguments and
returning an exit status. Bad input prints one line ``vidlabel: error: ...``
to stderr and exits with status 2 (argument errors) or 1 (everything else).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from vidlabel._json import RepeatedKeyError, json_error_text, no_repeated_keys
from vidlabel._version import __version__
from vidlabel._words import plural
from vidlabel.errors import OptionError, VidlabelError, VidlabelWarning, replace_command

__all__ = ["build_parser", "main"]


def _cmd_create(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    ds = Dataset.create(args.dataset)
    print(f"created dataset {ds.path}")
    return 0


def _cmd_add_video(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from vidlabel.dataset._dataset import Dataset, already_registered
    from vidlabel.errors import OptionError
    from vidlabel.spec import FrameIndex, VideoMetadata

    ds = Dataset.open(args.dataset)
    if args.metadata is not None and not isinstance(args.metadata, dict):
        raise OptionError("--metadata must be a JSON object of VideoMetadata fields")
    overrides = dict(args.metadata or {})
    if args.video_id is not None:
        video_id, source = args.video_id, "--video-id"
    elif "video_id" in overrides:
        video_id, source = overrides["video_id"], "--metadata's video_id"
    else:
        video_id, source = Path(args.file).stem, f"the file name of {args.file!r} (the default id)"
    from vidlabel.spec import video_id_problem

    if not isinstance(video_id, str) or not video_id.strip() or "/" in video_id or video_id_problem(video_id):
        what = "is not a string" if not isinstance(video_id, str) else "contains '/'" if "/" in video_id else "is empty"
        if isinstance(video_id, str) and video_id.strip() and "/" not in video_id:
            what = str(video_id_problem(video_id))
        raise OptionError(
            f"video id {video_id!r} from {source} {what}; a video id is a non-empty name without '/', e.g. 'cam1'"
            + ("" if source == "--video-id" else " (give one with --video-id)")
        )
    overrides["video_id"] = video_id
    if not args.replace and _registered(ds, video_id):  # say so before probing (which decodes the whole file)
        raise already_registered(ds.path, video_id)
    names = set(VideoMetadata.__dataclass_fields__)
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise OptionError(f"--metadata has unknown field(s) {unknown}; allowed: {', '.join(sorted(names))}")
    if isinstance(overrides.get("frame_index"), dict):
        overrides["frame_index"] = FrameIndex.from_dict(overrides["frame_index"])
    if os.path.exists(args.file) or args.metadata is None:
        # The file is there (or nothing else describes it): probe it; --metadata fields override what it finds.
        from vidlabel.video._probe import probe

        meta = probe(args.file, video_id=video_id, with_index=not args.no_index, progress=not args.no_progress)
        # The file decides its size and rotation: the reader gives the pictures it decodes, whatever metadata says.
        claimed = {k: overrides[k] for k in ("width", "height", "rotation") if k in overrides}
        found = {"width": meta.width, "height": meta.height, "rotation": meta.rotation}
        wrong = [f"{k} {v!r} (the file has {found[k]})" for k, v in claimed.items() if v != found[k]]
        if wrong:
            raise OptionError(
                f"--metadata claims {', '.join(wrong)} for {args.file!r}: the size and rotation of a video whose "
                f"file is given are what the file decodes to ({meta.width}x{meta.height}, rotation "
                f"{meta.rotation}); drop those fields"
            )
        if "frame_count" in overrides and "untrusted_frames" not in overrides and meta.untrusted_frames:
            count = int(overrides["frame_count"])  # keep the probed untrusted frames that the new count keeps
            overrides["untrusted_frames"] = [(a, min(b, count - 1)) for a, b in meta.untrusted_frames if a < count]
        try:
            meta = meta.replace(**overrides)
        except ValueError as err:
            raise OptionError(f"--metadata: {err}") from err
    else:
        # No file here: register the video from --metadata alone (e.g. labelled elsewhere, read from a store).
        overrides.setdefault("sources", [{"uri": os.path.abspath(args.file)}])
        try:
            meta = VideoMetadata(**overrides)
        except TypeError as err:
            raise OptionError(f"--metadata needs frame_count, fps, width and height ({err})") from err
        except ValueError as err:
            raise OptionError(f"--metadata: {err}") from err
    replace = args.replace and _registered(ds, meta.video_id)
    if replace:
        ds.update_video(meta)  # annotations are kept; validate reports rows the new metadata no longer fits
    else:
        ds.add_video(meta)
    fps = meta.fps
    index = f", frame index of {plural(meta.frame_index.frame_count, 'frame')}" if meta.frame_index is not None else ""
    untrusted = f", {meta.untrusted_count} without a trustworthy picture" if meta.untrusted_count else ""
    print(
        f"{'replaced' if replace else 'added'} video {meta.video_id!r}: {plural(meta.frame_count, 'frame')}{untrusted}, "
        f"{meta.width}x{meta.height}, {fps['num']}/{fps['den']} fps{index}"
    )
    return 0


def _registered(ds: Any, video_id: str) -> bool:
    from vidlabel.errors import DatasetError, UnknownVideoError

    try:
        ds.video(video_id)
    except UnknownVideoError:
        return False
    except DatasetError as err:
        if err.video_id != video_id:
            raise
        return True  # registered, its record damaged: --replace writes it anew, as the error says
    return True


def _cmd_add_labels(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    labels = Dataset.open(args.dataset).add_labels(args.labels)
    print(f"labels ({len(labels)}): {', '.join(labels)}")
    return 0


def _cmd_add_view(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    view = Dataset.open(args.dataset).add_view(args.view_id, tuple(args.crop), args.output_size)
    size = f", resized to {view.output_size[0]}x{view.output_size[1]}" if view.output_size else ""
    print(f"view {view.view_id!r}: crop {view.crop}{size}")
    return 0


def _cmd_add_annotations(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vidlabel.dataset._dataset import Dataset
    from vidlabel.errors import AnnotationError

    ds = Dataset.open(args.dataset)
    path = Path(args.file)
    rows: list[Any] = []
    lines: list[int] = []
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "not found"
        if path.exists() and not path.is_dir():  # /dev/stdin, a pipe, a device: there, but no file to read twice
            what = "is not a regular file (a pipe or a device); write the rows to a .jsonl file and give its path"
        raise AnnotationError(f"annotation file {str(path)!r} {what}", path=str(path))
    offset = 0  # byte offset of the current line in the file
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            start, offset = offset, offset + len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw, start = raw[3:], start + 3  # a UTF-8 byte-order mark: UTF-8 all the same
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise AnnotationError(_not_utf8(path, number, start, raw, err), path=str(path)) from err
            if not text.strip():
                continue
            try:
                row = json.loads(text, object_pairs_hook=no_repeated_keys)
            except RepeatedKeyError as err:  # {"label": "person", ..., "label": "car"}: json keeps the last, silently
                raise AnnotationError(
                    f"{path} line {number}: field {err.key!r} is given twice; give each field once", path=str(path)
                ) from None
            except json.JSONDecodeError as err:
                raise AnnotationError(
                    f"{path} line {number}: not valid JSON ({json_error_text(err)}); "
                    "expected one annotation object per line"
                ) from err
            except RecursionError:
                raise AnnotationError(
                    f"{path} line {number}: JSON nested too deeply to read; expected one flat annotation object "
                    "per line"
                ) from None
            except ValueError as err:  # an integer of more than 4300 digits, which Python refuses to convert
                raise AnnotationError(
                    f"{path} line {number}: a number is too long to read ({str(err).split(';')[0]})", path=str(path)
                ) from None
            if not isinstance(row, dict):
                raise AnnotationError(
                    f"{path} line {number}: expected a JSON object (one annotation row), got {type(row).__name__}"
                )
            rows.append(row)
            lines.append(number)
    try:
        ids = ds.add_annotations(rows, args.video_id, clip=args.clip, source=(str(path), lambda i: f"line {lines[i]}"))
    except AnnotationError as err:
        row_index = getattr(err, "row", None)
        detail = getattr(err, "detail", None)
        if row_index is None or detail is None or row_index >= len(lines):
            raise
        raise AnnotationError(f"{path} line {lines[row_index]}, {detail}", video_id=args.video_id) from err
    if not rows:
        what = "is empty" if offset == 0 else "holds only blank lines"
        warnings.warn(
            f"{path} {what}: no annotation rows to add (expected one JSON object per line)",
            VidlabelWarning,
            stacklevel=2,
        )
    if len(ids) == 1:
        span = f" (id {ids[0]})"
    else:
        span = f" (ids {ids[0]}..{ids[-1]})" if ids else ""
    print(f"added {plural(len(ids), 'annotation')} to video {args.video_id!r}{span}")
    return 0


def _not_utf8(path: Any, number: int, start: int, raw: bytes, err: UnicodeDecodeError) -> str:
    """The message for a JSON Lines file line that is not UTF-8: file, line, byte offset and the bad byte."""
    bad = raw[err.start : err.start + 1]
    hint = ""
    if number == 1 and err.start < 2 and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        hint = "; this file starts with a UTF-16 byte-order mark: save it as UTF-8"
    return (
        f"{path} line {number}, byte offset {start + err.start}: not UTF-8 (byte 0x{bad.hex()}: {err.reason}); "
        f"JSON Lines files must be UTF-8{hint}"
    )


def _cmd_build(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    release, report = Dataset.open(args.dataset).build()
    print(release.release_id)
    print(str(report), file=sys.stderr)
    for problem in report.warnings[:20]:
        print(f"  {problem}", file=sys.stderr)
    if len(report.warnings) > 20:
        print(f"  ... {plural(len(report.warnings) - 20, 'more warning')} (vidlabel validate)", file=sys.stderr)
    return 0


def _cmd_releases(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    records = Dataset.open(args.dataset).release_records()
    if not records:
        print("no releases yet (vidlabel build DATASET)")
    for rec in records:
        latest = "  (latest)" if rec["latest"] else ""
        print(f"{rec['release_id']}  {rec['created']}  {plural(rec['rows'], 'row')}{latest}")
    return 0


_VALIDATE_LINES = 20  # `vidlabel validate` prints at most this many problems of each code


def _cmd_validate(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    problems = Dataset.open(args.dataset).validate(for_export=args.for_export, roots=args.roots)
    errors = sum(p.severity == "error" for p in problems)
    if args.json:
        for problem in problems:
            print(json.dumps(problem.to_dict()))
        return 1 if errors else 0
    seen: dict[str, int] = {}  # problems of each code, in order; the first _VALIDATE_LINES of each are printed
    severity: dict[str, str] = {}
    for problem in problems:
        seen[problem.code] = seen.get(problem.code, 0) + 1
        severity[problem.code] = problem.severity
        if seen[problem.code] <= _VALIDATE_LINES:
            print(str(problem))
    for code, count in seen.items():
        if count > _VALIDATE_LINES:
            rest = plural(count - _VALIDATE_LINES, f"more {code} {severity[code]}")
            print(f"... and {rest} (vidlabel validate --json lists every problem)")
    _print_attributes(args.dataset)
    print(f"{plural(errors, 'error')}, {plural(len(problems) - errors, 'warning')}")
    return 1 if errors else 0


def _print_attributes(path: str) -> None:
    """The attribute schema of the live rows, label by label, with how many rows give each attribute."""
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.dataset._validate import attribute_summary

    ds = Dataset.open(path)
    schema = ds.attribute_schema()
    if schema:
        for line in attribute_summary(ds.snapshot().table, schema):
            print(f"attributes: {line}")


def _cmd_info(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vidlabel.dataset._dataset import DB_NAME, Dataset
    from vidlabel.store._remote import is_url

    if is_url(args.path):
        return _info_store(args.path)  # a Zarr store at a URL
    path = Path(args.path)
    if not Dataset.is_dataset(path):
        if not path.exists():
            print(
                f"vidlabel: error: {path} does not exist (expected a dataset folder or a frame store)", file=sys.stderr
            )
            return 1
        from vidlabel.store._framestore import find_stores, not_a_store_hint

        if path.is_dir() and not find_stores(path):
            print(
                f"vidlabel: error: {str(path)!r} is neither a vidlabel dataset (it has no {DB_NAME}) nor a frame store "
                f"(no store in it, nor directly inside it); give a dataset folder or a store{not_a_store_hint(path)}",
                file=sys.stderr,
            )
            return 1
        return _info_store(path)
    ds = Dataset.open(path)
    info = ds.summary()
    print(f"dataset {info['path']}")
    print(f"videos: {info['videos']}")
    for meta in ds.videos()[:50]:
        fps = meta.fps
        index = "indexed" if meta.frame_index is not None else "no index"
        untrusted = f" ({meta.untrusted_count} without a trustworthy picture)" if meta.untrusted_count else ""
        print(
            f"  {meta.video_id}: {plural(meta.frame_count, 'frame')}{untrusted}, {meta.width}x{meta.height}, "
            f"{fps['num']}/{fps['den']} fps, {index}, {meta.uri if meta.uri is not None else 'no file recorded'}"
        )
    if info["videos"] > 50:
        print(f"  ... {info['videos'] - 50} more")
    print(f"labels ({len(info['labels'])}): {', '.join(info['labels'])}")
    if info["views"]:
        print(f"views: {', '.join(info['views'])}")
    kinds = ", ".join(plural(n, k) for k, n in info["by_kind"].items())
    statuses = ", ".join(f"{n} {s}" for s, n in info["by_status"].items())
    print(f"annotations: {info['annotations']} ({kinds}; {statuses})")
    print(f"releases: {', '.join(info['releases']) or '(none)'}")
    return 0


def _info_store(path: Any) -> int:
    """``vidlabel info`` for a path that is not a dataset: describe a frame store (or a folder of stores)."""
    from vidlabel.store import backend_for, open_store

    store = open_store(path)
    store.check_files()  # every video's file and frames header open (a truncated file is an error); no pixels
    info = store.describe()
    exp = info["export"]
    videos = info["videos"]
    frames = sum(int(v.get("frames", 0)) for v in videos.values())
    size = sum(backend_for(folder).size_on_disk() for folder in store.stores)
    print(f"frame store {info['path']} ({', '.join(info['format'])}{', frames only' if info['frames_only'] else ''})")
    if len(info["stores"]) > 1:
        print(f"  stores:    {len(info['stores'])} read as one")
    print(f"  release:   {info['release']} (dataset {info['dataset']}, exported {info['created']})")
    print(f"  videos:    {len(videos)}")
    print(f"  frames:    {frames} stored, {plural(info['samples'], 'sample')}")
    print(f"  classes:   {len(info['class_names'])}: {', '.join(info['class_names'])}")
    print(f"  codec:     {exp.get('codec')}")
    chunk_frames = exp.get("chunk_frames")
    per_chunk = plural(chunk_frames, "frame") if isinstance(chunk_frames, int) else f"{chunk_frames} frames"
    print(f"  chunking:  {per_chunk} per chunk")
    print(
        f"  selection: frames={exp.get('frames')} kinds={exp.get('kinds')} stride={exp.get('stride')} "
        f"view={exp.get('view_id')} output_size={exp.get('output_size')}"
    )
    print(f"  clips:     {_clips_served(store)}")
    print(f"  on disk:   {size / 2**20:.1f} MiB")
    return 0


def _clips_served(store: Any) -> str:
    """Which clips a store serves, in words (``vidlabel info``)."""
    from vidlabel.store._clips import describe_spec, stored_clip_specs

    specs = stored_clip_specs(store)
    if all(s is None for s in specs):
        return (
            "none beyond runs of stored frames (exported without a clip context; `vidlabel export ... --clip-frames "
            "T` stores one)"
        )
    if len(set(specs)) > 1:
        return "the stores differ: " + "; ".join("no clip context" if s is None else describe_spec(s) for s in specs)
    spec = specs[0]
    assert spec is not None
    return f"{describe_spec(spec)} around each of the {plural(len(store), 'sample')} (StoreClips)"


def _cmd_index(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from vidlabel.dataset._dataset import Dataset
    from vidlabel.video._probe import read_frame_index
    from vidlabel.video._reader import resolve_video_path

    ds = Dataset.open(args.dataset)
    videos = ds.videos()
    todo = [m for m in videos if m.frame_index is None]
    if not todo:
        print(
            "the 1 video already has a frame index"
            if len(videos) == 1
            else f"all {len(videos)} videos already have a frame index"
        )
        return 0
    failed = 0
    for meta in tqdm(todo, desc="index", unit="video", file=sys.stderr, leave=False, disable=None):
        try:
            path = resolve_video_path(meta, args.roots)
            index = read_frame_index(path)
            if meta.content_hash is not None and index.content_hash != meta.content_hash:
                print(f"{meta.video_id}: skipped: {path} is not the registered file (its content hash differs)")
                failed += 1
                continue
            if index.frame_count != meta.frame_count:
                index = read_frame_index(path, method="decode")
            if index.frame_count != meta.frame_count:
                print(
                    f"{meta.video_id}: skipped: {path} decodes to {plural(index.frame_count, 'frame')} but "
                    f"{plural(meta.frame_count, 'frame')} {'is' if meta.frame_count == 1 else 'are'} registered; "
                    "register the file again"
                )
                failed += 1
                continue
        except VidlabelError as err:
            print(f"{meta.video_id}: skipped: {err}")
            failed += 1
            continue
        ds.update_video(meta.replace(frame_index=index, content_hash=index.content_hash))
        print(
            f"{meta.video_id}: indexed {plural(index.frame_count, 'frame')}, {plural(index.keyframes.size, 'keyframe')} "
            f"(by {'demuxing' if index.method == 'demux' else 'decoding'})"
        )
    print(f"indexed {len(todo) - failed} of {plural(len(todo), 'video')} without a frame index ({len(videos)} in all)")
    return 1 if failed else 0


def _cmd_check_video(args: argparse.Namespace) -> int:
    import time

    import numpy as np

    from vidlabel.dataset._dataset import Dataset
    from vidlabel.errors import VideoDecodeError
    from vidlabel.spec import ranges_text
    from vidlabel.video._reader import FrameReader

    ds = Dataset.open(args.dataset)
    meta = ds.video(args.video_id)
    if args.reads < 0:
        from vidlabel.errors import OptionError

        raise OptionError(f"--reads must be >= 0, got {args.reads}")
    with FrameReader.for_video(meta, roots=args.roots) as reader:
        index = reader.frame_index
        n = reader.frame_count
        keys = index.keyframes
        spacing = np.diff(np.append(keys, n))
        first_key = np.searchsorted(keys, np.arange(n), side="right") - 1
        expected = float(np.mean(np.arange(n) - keys[first_key] + 1))
        print(f"video {meta.video_id!r}: {reader.path}")
        print(
            f"  {plural(n, 'frame')}, {meta.width}x{meta.height}, {meta.fps['num']}/{meta.fps['den']} fps, "
            f"codec {meta.codec}"
        )
        how = f"stored ({index.method})" if reader.indexed else "none stored (built now; run 'vidlabel index')"
        print(f"  frame index: {how}")
        print(
            f"  keyframes: {keys.size}; spacing in frames: min {int(spacing.min())}, "
            f"median {float(np.median(spacing)):g}, max {int(spacing.max())}"
        )
        print(f"  frames decoded per random read: {expected:.1f} on average (decoding starts at the keyframe before)")
        # Frames without a trustworthy picture cannot be read (the reader refuses them): not timed.
        untrusted = meta.untrusted_mask() if meta.frame_count == n else np.zeros(n, bool)
        if meta.untrusted_frames is None:
            print("  untrusted frames: not recorded (registered by an older vidlabel; 'add-video --replace')")
        elif meta.untrusted_count:
            print(
                f"  untrusted frames: {meta.untrusted_count} without a trustworthy picture "
                f"({ranges_text(meta.untrusted_frames)}); readers refuse them, so they are not timed"
            )
        else:
            print("  untrusted frames: none")
        trusted = np.flatnonzero(~untrusted)
        if args.reads and trusted.size:
            frames = np.random.default_rng(0).choice(trusted, size=args.reads).tolist()
            decoded = reader.stats["decoded"]
            failed: list[int] = []
            start = time.perf_counter()
            for f in frames:
                try:
                    reader.read(f)
                except VideoDecodeError:  # not listed as untrusted (the file may be damaged since)
                    failed.append(f)
            per_read = (time.perf_counter() - start) / len(frames)
            measured = (reader.stats["decoded"] - decoded) / len(frames)
            print(
                f"  measured over {plural(len(frames), 'random read')}: {per_read * 1000:.1f} ms per frame "
                f"({1 / per_read:.1f} frames/s), {measured:.1f} frames decoded per read"
            )
            if failed:
                shown = ", ".join(str(f) for f in sorted(set(failed))[:10])
                print(
                    f"  {len(failed)} of those reads failed with a decode error (frames {shown}): the file has "
                    "frames without a trustworthy picture that its registration did not record; register it again "
                    f"({replace_command(args.dataset, None, meta.video_id)})"
                )
        elif args.reads:
            print("  no random reads timed: no frame has a trustworthy picture")
    if expected > 30:
        print(
            "  random access is costly: every random frame decodes the frames since its keyframe. Remedies:\n"
            f"  - a frame cache (nothing about the dataset changes): vidlabel cache {args.dataset} /fast/disk/frames "
            "--release latest, then FrameSamples(ds, cache='/fast/disk/frames')\n"
            f"  - or re-encode with a keyframe every 30 frames (about {expected / 15.5:.0f}x less decoding per frame), "
            "e.g. ffmpeg -i IN -c:v libx264 -g 30 -keyint_min 30 -crf 18 OUT.mp4, and register OUT as a new video "
            "(its pixels differ slightly)\n"
            f"  - or export the frames once to a frame store: vidlabel export {args.dataset} OUT\n"
            "  - or read in order: read_many / ReadPlan / VideoStream decode each keyframe interval once"
        )
    else:
        print("  random access is cheap: keyframes are close together")
    return 0


def _clip_option(args: argparse.Namespace) -> tuple[Any, int | None]:
    """``(clip, clip_frames)`` of ``vidlabel export``: ``--clip-frames`` is a MediaSequence record's frames, and
    for a store (with ``--clip-step/--clip-anchor/--clip-edge``) the clip whose context is stored."""
    from vidlabel.clip import ClipSpec

    shape = {"step": args.clip_step, "anchor": args.clip_anchor, "edge": args.clip_edge}
    given = [f"--clip-{k}" for k, v in shape.items() if v is not None]
    if args.store_format == "mediasequence" or args.clip_frames is None:
        if given:
            raise OptionError(
                f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --clip-frames and --format hdf5 or zarr "
                "(a MediaSequence record is --clip-frames stored frames)"
            )
        return None, args.clip_frames
    kept = {k: v for k, v in shape.items() if v is not None}
    return ClipSpec(args.clip_frames, **kept), None


_OVERWRITE_HELP = "replace a store at OUT exported from another dataset (refused by default)"


def _cmd_export(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.export._run import export

    ds = Dataset.open(args.dataset)
    clip, clip_frames = _clip_option(args)
    options = dict(
        release=args.release, format=args.store_format, codec=args.codec, view_id=args.view_id, frames=args.frames,
        stride=args.stride, output_size=tuple(args.output_size) if args.output_size else None,
        chunk_frames=args.chunk_frames, workers=args.workers, progress=not args.no_progress, roots=args.roots,
        storage_options=args.storage_options, overwrite=args.overwrite, clip_frames=clip_frames,
        shard_frames=args.shard_frames, clip=clip,
    )  # fmt: skip
    if args.dask_scheduler is None:
        report = export(ds, args.out, **options)  # type: ignore[arg-type]
    else:
        with _dask_client(args.dask_scheduler) as client:
            report = export(ds, args.out, executor=client.get_executor(), **options)  # type: ignore[arg-type]
    print(report.summary())
    return 0


def _dask_client(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (Dask is imported only here)."""
    from vidlabel.errors import OptionError

    try:
        from distributed import Client
    except ImportError as err:
        raise OptionError(
            f"--dask-scheduler {address} needs Dask's distributed scheduler: pip install 'vidlabel[dask]'"
        ) from err
    try:
        return Client(address)  # connect timeout: Dask's distributed.comm.timeouts.connect
    except (OSError, TimeoutError) as err:
        raise OptionError(f"cannot reach the Dask scheduler at {address!r}: {err}") from err


def _cmd_cache(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.export._run import cache

    report = cache(
        Dataset.open(args.dataset), args.out, release=args.release, codec=args.codec,
        progress=not args.no_progress, roots=args.roots, overwrite=args.overwrite,
    )  # fmt: skip
    print(report.summary())
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from vidlabel.store import verify_store

    report = verify_store(args.out, progress=sys.stderr.isatty())
    for problem in report["problems"]:
        print(f"problem: {problem}")
    status = "ok" if report["ok"] else plural(len(report["problems"]), "problem")
    chunks = plural(report["chunks_total"], "chunk")
    if report["chunks"] != report["chunks_total"]:  # a chunk file missing or a folder could not be checked
        chunks = f"{report['chunks']} of {chunks}"
    print(
        f"{status}: {plural(len(report['stores']), 'store')}, {plural(report['videos'], 'video')}, "
        f"{plural(report['frames'], 'frame')}, {chunks} ({report['bytes'] / 2**20:.1f} MiB) checked"
    )
    return 0 if report["ok"] else 1


def _cmd_upload(args: argparse.Namespace) -> int:
    from vidlabel.errors import StoreError
    from vidlabel.store import backend_for, upload
    from vidlabel.store._framestore import find_stores
    from vidlabel.store._remote import is_url

    if not is_url(args.store):
        # Refuse a store that upload() refuses before it draws its progress bar or puts a store of a folder:
        # upload() checks each store only when it reaches it.
        for folder in find_stores(args.store):
            name = backend_for(folder).name
            if name != "zarr":
                raise StoreError(
                    f"{str(folder)!r} is an {name.upper()} store: only Zarr stores go to object stores; "
                    "export it again with format='zarr' (vidlabel export ... --format zarr)",
                    path=str(folder),
                )
    report = upload(args.store, args.url, storage_options=args.storage_options, progress=not args.no_progress)
    print(report.summary())
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from vidlabel.demo import run_demo

    result = run_demo(args.dir, progress=True)
    return 0 if result["ok"] else 1


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=no_repeated_keys)
    except RepeatedKeyError as err:
        raise argparse.ArgumentTypeError(f"key {err.key!r} is given twice: give each key once") from None
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from err
    except RecursionError:
        raise argparse.ArgumentTypeError("JSON nested too deeply to read") from None
    except ValueError as err:  # an integer of more than 4300 digits, which Python refuses to convert
        raise argparse.ArgumentTypeError(f"a number is too long to read ({str(err).split(';')[0]})") from None


#: Options that take a list of values (``nargs="*"``): argparse gives them every value after them up to the next
#: option, a positional argument written after them included.
_LIST_OPTIONS = ("--roots", "--videos")


def _list_took_positionals(argv: Sequence[str]) -> str:
    """Where the last of ``argv``'s list options (:data:`_LIST_OPTIONS`) runs to the end of ``argv``, so that it
    may have taken a positional argument: the words of a hint saying so, else ''."""
    for at in range(len(argv) - 1, -1, -1):
        word = argv[at]
        if word == "--" or (word.startswith("-") and word not in _LIST_OPTIONS):
            return ""
        if word in _LIST_OPTIONS:
            values = argv[at + 1 :]
            if not values:
                return ""
            return (
                f" ({word} took every value after it: {' '.join(values)}; end its list with `--` "
                f"or write {word} after the positional arguments)"
            )
    return ""


_ROW_FORMAT = """\
rows (frames 0-based in display order; pixels of the displayed frame, origin top-left):
  {"kind": "box", "label": "person", "start_frame": 0, "box": [x0, y0, x1, y1], "track_id": 1}
  {"kind": "mask", "label": "ball", "start_frame": 20, "mask": {"size": [H, W], "counts": "..."}}
  {"kind": "marker", "label": "lights_on", "start_frame": 30, "end_frame": 59}
kind and label and start_frame are required; box: corners inside the frame (x0 < x1, y0 < y1);
mask: COCO RLE of the frame's size [height, width]; end_frame: a marker's last frame, inclusive.
optional: track_id (>= 0), origin ("human" or "model"), confidence (0..1),
status ("unreviewed", "approved", "rejected"), view_id, attributes ({"occluded": true, ...}: names of the
label's attribute schema, Dataset.set_attribute_schema). One bad row refuses the whole file.
a mask's RLE from a (H, W) uint8 array: vidlabel.geometry.encode_rle; every field: docs/reference/annotation-file.md
"""


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose missing-argument error says when a list option took the positional arguments."""

    hint = ""  # set by :func:`main` for the arguments it parses

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required"):
            message += _Parser.hint
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``vidlabel`` command (one sub-parser per command)."""
    parser = _Parser(prog="vidlabel", description="Annotated videos to training data.")
    parser.add_argument("--version", action="version", version=f"vidlabel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], int], help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.set_defaults(func=func, command_parser=p)  # the parser that names an argument it does not know
        return p

    p = add("create", _cmd_create, "Create an empty dataset folder.")
    p.add_argument("dataset", metavar="DATASET")

    p = add("add-video", _cmd_add_video, "Register a video file: probe its metadata and write its frame index.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--video-id", help="id of the video (default: the file name without extension)")
    p.add_argument("--metadata", type=_json_arg, help="JSON VideoMetadata fields that override what the probe finds")
    p.add_argument("--no-index", action="store_true", help="do not build the frame index now (see 'vidlabel index')")
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the metadata of a video already registered under this id (its annotations are kept)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar while the file is decoded")

    p = add("add-labels", _cmd_add_labels, "Add labels to the vocabulary (in order; names already there are kept).")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("labels", metavar="LABEL", nargs="+")

    p = add("add-view", _cmd_add_view, "Add a view: a named crop of the frame, optionally resized.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("view_id", metavar="VIEW_ID")
    p.add_argument(
        "--crop",
        type=int,
        nargs=4,
        metavar=("X0", "Y0", "X1", "Y1"),
        required=True,
        help="pixel corners of the crop; it must fit inside every registered video",
    )
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"), help="resize the crop to W x H")

    p = add("add-annotations", _cmd_add_annotations, "Add annotations from a JSON Lines file (one row per line).")
    p.epilog = _ROW_FORMAT
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("file", metavar="FILE.jsonl", help="one JSON object per line (row format below)")
    p.add_argument("--clip", action="store_true", help="clip boxes that leave the frame instead of refusing them")

    p = add("build", _cmd_build, "Pin an immutable release of the current annotations; prints its id.")
    p.add_argument("dataset", metavar="DATASET")

    p = add("releases", _cmd_releases, "List the releases of a dataset.")
    p.add_argument("dataset", metavar="DATASET")

    p = add(
        "validate",
        _cmd_validate,
        f"Check a dataset; prints problems with stable codes (at most {_VALIDATE_LINES} of each code, then a count).",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--json", action="store_true", help="print every problem as JSON Lines")
    p.add_argument(
        "--for-export",
        action="store_true",
        help="rate missing_video_file and video_file_changed as errors (export refuses those videos): "
        "exit 0 means export will read every video",
    )
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files, as export's")

    p = add("info", _cmd_info, "Describe a dataset or a frame store.")
    p.add_argument("path", metavar="PATH", help="a dataset folder, a frame store, or a Zarr store's URL")

    p = add("index", _cmd_index, "Add a frame index to the videos registered without one.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")

    p = add("check-video", _cmd_check_video, "Keyframe spacing and random-access cost of a video, with the remedy.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--reads", type=int, default=20, help="random reads to time (default 20)")

    p = add("export", _cmd_export, "Decode a release once into a chunked frame store.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest", help="release id to export, or 'latest' (default)")
    p.add_argument(
        "--format",
        dest="store_format",
        choices=["hdf5", "zarr", "mediasequence"],
        default="hdf5",
        help="store format (default hdf5); mediasequence: TFRecord shards of tf.train.SequenceExample (TensorFlow, "
        "MediaPipe)",
    )
    p.add_argument(
        "--codec",
        default=None,
        help="none, lz4, zstd, gzip, png or jpeg[:Q]; mediasequence: jpeg[:Q] (default 95) or png",
    )
    p.add_argument(
        "--clip-frames",
        type=int,
        default=None,
        help="hdf5/zarr: also store the frames of a clip of T frames around each selected frame (the clip "
        "context StoreClips reads); mediasequence: stored frames per SequenceExample (default: a video)",
    )
    p.add_argument("--clip-step", type=int, default=None, help="frames between a clip's frames (default 1)")
    p.add_argument(
        "--clip-anchor",
        choices=["start", "center", "end"],
        default=None,
        help="where the selected frame sits in its clip (default start)",
    )
    p.add_argument(
        "--clip-edge",
        choices=["error", "shift", "repeat", "skip"],
        default=None,
        help="a clip leaving the video or touching an untrusted frame: refuse, shift it inside (default), repeat "
        "the edge frame, or leave it out",
    )
    p.add_argument(
        "--shard-frames",
        type=int,
        default=None,
        help="mediasequence: close a TFRecord shard at this many frames (1024)",
    )
    p.add_argument("--view", dest="view_id", default=None, help="store this view's crop and its annotations only")
    p.add_argument(
        "--frames",
        choices=["annotated", "all"],
        default="annotated",
        help="annotated (default): frames with a box or mask; all: every frame of each video",
    )
    p.add_argument(
        "--stride", type=int, default=1, help="keep every Nth of those frames, counted per video (default 1)"
    )
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"), help="resize the stored frames")
    p.add_argument(
        "--chunk-frames",
        type=int,
        default=None,
        help="frames per chunk (default 1: one chunk read per random frame; larger suits sequential reading; "
        "png and jpeg need 1)",
    )
    p.add_argument("--workers", type=int, default=1, help="processes decoding and writing videos (default 1)")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=None,
        help="run one task per video on this Dask scheduler (tcp://HOST:PORT) instead of local processes",
    )
    p.add_argument(
        "--storage-options",
        type=_json_arg,
        default=None,
        help="JSON fsspec options when OUT is a URL (s3://bucket/store; default: credentials from the environment)",
    )
    p.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)

    p = add(
        "cache",
        _cmd_cache,
        "Write a frame cache: the full frames a release trains on (no annotations), for FrameSamples(cache=OUT).",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest", help="release id whose frames to cache, or 'latest' (default)")
    p.add_argument(
        "--format", dest="codec", choices=["jpeg", "png", "none"], default="jpeg", help="picture codec (default jpeg)"
    )
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a store at OUT exported from another dataset, or one that holds labels (refused by default)",
    )

    p = add("verify", _cmd_verify, "Check a frame store's structure, counts and per-chunk checksums.")
    p.add_argument("out", metavar="OUT", help="a frame store folder, or a Zarr store's URL")

    p = add(
        "upload",
        _cmd_upload,
        "Upload a complete local Zarr store to an object store (fsspec URL), the root's 'complete' last; "
        "rerun to resume.",
    )
    p.add_argument("store", metavar="STORE", help="a local Zarr frame store (vidlabel export ... --format zarr)")
    p.add_argument("url", metavar="URL", help="where to put it, e.g. s3://bucket/store or file:///data/store")
    p.add_argument(
        "--storage-options", type=_json_arg, default=None, help="JSON options of the fsspec filesystem (credentials)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")

    # vidlabel import / export-labels
    from vidlabel.formats._cli import add_format_commands

    add_format_commands(add)

    from vidlabel.viewer._cli import add_view_command  # vidlabel view

    add_view_command(add)

    p = add("demo", _cmd_demo, "Run the whole pipeline on a generated clip and check every target.")
    p.add_argument(
        "dir",
        metavar="DIR",
        nargs="?",
        default="vidlabel_demo",
        help="folder for the clip, the dataset and the store (default: ./vidlabel_demo)",
    )

    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Print vidlabel's own warnings as one line, like errors; others as Python would."""
    if issubclass(category, VidlabelWarning):  # one write: DataLoader workers forked from here share the stream
        sys.stderr.write(f"vidlabel: warning: {message}\n")
        sys.stderr.flush()
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file behind sys.stdout
        pass


_RESUMABLE = frozenset({"export", "cache", "upload"})  # commands whose rerun resumes an interrupted run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vidlabel`` console script; returns the exit status.

    Errors print ``vidlabel: error: ...`` and return 1 (2 for bad arguments,
    from argparse); vidlabel's warnings print ``vidlabel: warning: ...``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (None: ``sys.argv[1:]``).
    """
    for stream in (sys.stdout, sys.stderr):  # a file name with bytes that are not UTF-8 prints as \udcXX escapes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    _Parser.hint = _list_took_positionals(sys.argv[1:] if argv is None else list(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the command's usage (argparse's parse_args gives the top-level one)
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return int(args.func(args) or 0)
        except VidlabelError as err:
            print(f"vidlabel: error: {err}", file=sys.stderr)
            return 1
        except sqlite3.DatabaseError as err:  # a query on a damaged database (opening it is checked)
            dataset = getattr(args, "dataset", None) or getattr(args, "path", None) or "the dataset"
            from vidlabel.dataset._db import damaged_message

            print(f"vidlabel: error: {damaged_message(Path(dataset).absolute(), err)}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # the reader of our output went away (`vidlabel info STORE | head -1`)
            _stdout_to_devnull()
            return 141  # as a shell reports a command stopped by SIGPIPE; nothing to say on stderr
        except (OSError, ValueError) as err:
            print(f"vidlabel: error: {type(err).__name__}: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            # what an export or upload finished is kept, and rerunning it resumes (docs/how-to/frame-store.md)
            resumes = "; the same command resumes it" if args.command in _RESUMABLE else ""
            print(f"vidlabel: interrupted{resumes}", file=sys.stderr)
            return 130


if __name__ == "__main__":
    sys.exit(main())
