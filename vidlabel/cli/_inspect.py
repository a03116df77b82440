"""``vidlabel info``, ``index``, ``check-video``: what a dataset or a store holds, and how its videos read."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command
from vidlabel._words import plural
from vidlabel.errors import VidlabelError, replace_command

if TYPE_CHECKING:
    import numpy as np

    from vidlabel._command import Subparsers
    from vidlabel.spec import VideoMetadata
    from vidlabel.video._reader import FrameReader


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
    import numpy as np

    from vidlabel.dataset._dataset import Dataset
    from vidlabel.video._reader import FrameReader

    ds = Dataset.open(args.dataset)
    meta = ds.video(args.video_id)
    if args.reads < 0:
        from vidlabel.errors import OptionError

        raise OptionError(f"--reads must be >= 0, got {args.reads}")
    with FrameReader.for_video(meta, roots=args.roots) as reader:
        expected = _print_keyframes(meta, reader)
        n = reader.frame_count
        # Frames without a trustworthy picture cannot be read (the reader refuses them): not timed.
        untrusted = meta.untrusted_mask() if meta.frame_count == n else np.zeros(n, bool)
        _print_untrusted(meta)
        trusted = np.flatnonzero(~untrusted)
        if args.reads and trusted.size:
            _time_reads(args, meta, reader, trusted)
        elif args.reads:
            print("  no random reads timed: no frame has a trustworthy picture")
    _print_remedies(args, expected)
    return 0


def _print_keyframes(meta: VideoMetadata, reader: FrameReader) -> float:
    """Print the video, its frame index and keyframe spacing; returns the frames a random read decodes on average."""
    import numpy as np

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
    return expected


def _print_untrusted(meta: VideoMetadata) -> None:
    from vidlabel.spec import ranges_text

    if meta.untrusted_frames is None:
        print("  untrusted frames: not recorded (registered by an older vidlabel; 'add-video --replace')")
    elif meta.untrusted_count:
        print(
            f"  untrusted frames: {meta.untrusted_count} without a trustworthy picture "
            f"({ranges_text(meta.untrusted_frames)}); readers refuse them, so they are not timed"
        )
    else:
        print("  untrusted frames: none")


def _time_reads(args: argparse.Namespace, meta: VideoMetadata, reader: FrameReader, trusted: np.ndarray) -> None:
    """Time ``--reads`` random reads of trusted frames and print the cost, and the frames that failed to decode."""
    import time

    import numpy as np

    from vidlabel.errors import VideoDecodeError

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


def _print_remedies(args: argparse.Namespace, expected: float) -> None:
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


def register(subparsers: Subparsers) -> None:
    """Add ``info``, ``index`` and ``check-video``."""
    p = add_command(subparsers, "info", _cmd_info, "Describe a dataset or a frame store.")
    p.add_argument("path", metavar="PATH", help="a dataset folder, a frame store, or a Zarr store's URL")

    p = add_command(subparsers, "index", _cmd_index, "Add a frame index to the videos registered without one.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")

    p = add_command(
        subparsers,
        "check-video",
        _cmd_check_video,
        "Keyframe spacing and random-access cost of a video, with the remedy.",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("video_id", metavar="VIDEO_ID")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--reads", type=int, default=20, help="random reads to time (default 20)")
