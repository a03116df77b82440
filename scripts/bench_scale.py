"""A release of many short videos (issue 15): 1,000 against 10,000 videos, no video files needed.

Each video is a VideoMetadata record with a fake source (30 frames, 64x48, a content hash so that export
planning hashes no file) holding 3 boxes. Prints, for N videos: FrameSamples open, export planning
(``select_frames`` + ``plan_export``, the per-video regions and segments), ``VideoStream.assignment`` and
``FrameSamples.sample`` over every sample (targets only, a blank image), each in seconds and as the
10,000 / 1,000 ratio (goal: within 12x, i.e. linear in the videos with room for noise).

The store rows of that goal (open_store, StoreFrames random reads) need a store of 10,000 videos written
with tiny frames; not measured here.

Usage: python scripts/bench_scale.py [--counts 1000,10000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import machine

from vidlabel import Dataset, FrameSamples, VideoMetadata
from vidlabel.torch_data import VideoStream

FRAMES = 30


def build(path: Path, n_videos: int) -> Dataset:
    if path.exists():
        return Dataset.open(path)
    ds = Dataset.create(path)
    ds.add_labels(["a", "b"])
    for v in range(n_videos):
        video_id = f"v{v:05d}"
        ds.add_video(
            VideoMetadata(video_id=video_id, frame_count=FRAMES, fps={"num": 30, "den": 1}, width=64, height=48,
                          content_hash=f"{v:064x}", sources=[{"uri": f"/nowhere/{video_id}.mp4"}])
        )  # fmt: skip
        ds.add_annotations(
            [{"kind": "box", "label": "ab"[k % 2], "start_frame": 3 * k, "box": (1, 1, 20, 20)} for k in range(3)],
            video_id,
        )
    ds.build()
    return ds


def measure(ds: Dataset) -> dict[str, float]:
    from vidlabel.export._options import check_options
    from vidlabel.export._plan import plan_export, select_frames

    out: dict[str, float] = {}
    t = time.perf_counter()
    samples = FrameSamples(ds)
    out["FrameSamples open"] = time.perf_counter() - t
    rel = ds.release("latest")
    t = time.perf_counter()
    opts = check_options(
        Path(tempfile.gettempdir()) / "vidlabel_scale_out",
        "latest",
        format="hdf5",
        codec=None,
        view_id=None,
        frames="annotated",
        kinds=("box", "mask"),
        stride=1,
        output_size=None,
        chunk_frames=None,
        workers=1,
        progress=False,
        roots=(),
        frames_only=False,
        overwrite=False,
    )
    plan_export(select_frames(rel, opts, str(ds.path)), opts)
    out["export planning"] = time.perf_counter() - t
    t = time.perf_counter()
    VideoStream(samples).assignment(0, 2)
    out["VideoStream.assignment"] = time.perf_counter() - t
    image = np.zeros((48, 64, 3), np.uint8)
    t = time.perf_counter()
    for video_id, frame in samples.index:
        samples.sample(video_id, frame, image)
    out["FrameSamples.sample, every sample"] = time.perf_counter() - t
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="1000,10000")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    counts = [int(c) for c in args.counts.split(",")]
    results = {}
    measure(build(args.workdir / f"scale_{counts[0]}", counts[0]))  # warm-up: imports, first-call costs
    for n in counts:
        t = time.perf_counter()
        ds = build(args.workdir / f"scale_{n}", n)
        print(f"  dataset of {n:,} videos ready in {time.perf_counter() - t:.1f} s", flush=True)
        results[n] = measure(ds)
    lo, hi = counts[0], counts[-1]
    for key in results[lo]:
        a, b = results[lo][key], results[hi][key]
        print(f"| {key}, {hi:,} vs {lo:,} videos | {b:.3f} s vs {a:.3f} s: {b / a:.1f}x | within 12x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
