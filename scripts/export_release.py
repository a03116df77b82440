#!/usr/bin/env python3
"""Export one release of a vidlabel dataset to a frame store, then check and summarise it.

A one-off script to copy and adapt (the ``vidlabel export`` command does the
same with fewer words). Typical use::

    python scripts/export_release.py my_dataset my_store --release latest
    python scripts/export_release.py my_dataset my_store_lower --view lower_strip --codec lz4 --workers 2

It opens the dataset, resolves the release (an id or "latest"), prints what
it is about to export, runs ``vidlabel.export`` with a progress bar, verifies
the store's checksums, reads one sample back, and prints a summary: frames,
size on disk, bytes per frame, export speed, and annotations that the store
does not hold (on frames a stride or a view leaves out), which are counted,
never dropped silently.

Exit status: 0 on success, 1 on a vidlabel error (bad dataset, release,
option, video), 2 on bad arguments, 3 when the written store fails its check.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import vidlabel
from vidlabel.errors import VidlabelError
from vidlabel.spec import KINDS
from vidlabel.store import verify_store


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: dataset, output, release, codec, view and the export knobs."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset", help="dataset folder (vidlabel create)")
    p.add_argument("output", help="store folder to write (an existing store there is updated / resumed)")
    p.add_argument("--release", default="latest", help='release id, or "latest" (default)')
    p.add_argument("--format", default="hdf5", choices=["hdf5", "zarr"], help="store backend (default hdf5)")
    p.add_argument(
        "--codec", default=None, help="none (default, lossless), lz4, zstd[:level], gzip[:level], png, jpeg[:q]"
    )
    p.add_argument("--view", default=None, help="store this view's crop with only its annotations")
    p.add_argument("--frames", default="annotated", choices=["annotated", "all"], help="which frames to store")
    p.add_argument("--stride", type=int, default=1, help="keep every Nth frame of each video's list")
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"), help="resize stored frames")
    p.add_argument("--chunk-frames", type=int, default=None, help="frames per chunk (default 1: best for random reads)")
    p.add_argument("--workers", type=int, default=1, help="processes decoding videos in parallel")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-verify", action="store_true", help="skip the checksum pass over the written store")
    return p.parse_args(argv)


def describe_release(release: vidlabel.Release) -> str:
    """One paragraph about a release: id, videos, frames, labels, rows by kind."""
    table = release.table
    kinds = Counter(KINDS[int(k)] for k in table.kind)
    frames = sum(meta.frame_count for meta in release.videos.values())
    by_kind = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k]) or "no annotations"
    return (
        f"release {release.release_id} (built {release.created}): {len(release.videos)} videos, {frames} frames, "
        f"{len(release.labels)} labels [{', '.join(release.labels)}], {len(table)} annotations ({by_kind})"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the export; returns the exit status."""
    args = parse_args(argv)
    out = Path(args.output)
    try:
        ds = vidlabel.Dataset.open(args.dataset)
        release = ds.release(args.release)
        print(describe_release(release))
        view = f"view {args.view!r}" if args.view else "full frames"
        print(f"exporting to {out} ({args.format}, codec {args.codec or 'default'}, {view}, frames={args.frames}, "
              f"stride={args.stride}, workers={args.workers})")  # fmt: skip

        t0 = time.perf_counter()
        report = vidlabel.export(
            ds,
            out,
            release=release.release_id,
            format=args.format,
            codec=args.codec,
            view_id=args.view,
            frames=args.frames,
            stride=args.stride,
            output_size=tuple(args.output_size) if args.output_size else None,
            chunk_frames=args.chunk_frames,
            workers=args.workers,
            progress=not args.no_progress,
            roots=args.roots,
        )
        seconds = time.perf_counter() - t0

        store = vidlabel.open_store(out)
        check = None if args.no_verify else verify_store(out, progress=not args.no_progress)
        first = store.sample(0) if len(store) else None
    except VidlabelError as err:
        print(f"export_release: error: {err}", file=sys.stderr)
        return 1

    size = report.size_bytes
    frames = len(store)
    print()
    print("summary")
    print(f"  store        {out}  ({', '.join(store.describe()['format'])}, codec {report.codec})")
    print(f"  release      {store.release_id}; classes: {', '.join(store.class_names)}")
    print(f"  frames       {frames} stored from {report.videos} videos (decoded {report.frames_decoded}, "
          f"reused {report.frames_reused + report.frames_copied})")  # fmt: skip
    print(f"  size         {size / 1e6:.1f} MB on disk, {size / max(1, frames) / 1e3:.1f} KB per frame")
    print(f"  time         {seconds:.1f} s, {report.frames_decoded / seconds if seconds else 0:.0f} frames/s decoded")
    lost = report.not_stored["box"] + report.not_stored["mask"]
    if lost:
        print(f"  NOT STORED   {report.not_stored['box']} boxes and {report.not_stored['mask']} masks lie on frames "
              f"this export leaves out (stride/frames/view): {report.not_stored['by_video']}")  # fmt: skip
        if report.not_stored.get("untrusted"):
            print(f"               of them {report.not_stored['untrusted']} on frames without a trustworthy picture "
                  f"(truncated or corrupt videos): {report.not_stored['untrusted_by_video']}")  # fmt: skip
    else:
        print("  annotations  every box and mask of the release lies on a stored frame")
    if first is not None:
        print(f"  sample 0     video {first['video_id']!r} frame {first['frame_index']}: image "
              f"{first['image'].shape} {first['image'].dtype}, {len(first['boxes'])} boxes")  # fmt: skip
    if check is not None:
        print(
            f"  verify       {'ok' if check['ok'] else 'FAILED'}: {check['chunks']} of {check['chunks_total']} chunks checked"
        )
        for problem in check["problems"][:10]:
            print(f"    {problem}")
        if not check["ok"]:
            return 3
    print(f"\ntrain from it:  StoreFrames(open_store({str(out)!r})) in vidlabel.torch_data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
