"""Per-sample cost of the video datasets (issue 15): VideoStream against raw PyAV decode to RGB, same clip.

For generated H.264 clips at 320x240, 640x480 and 1280x720 (noise texture, a keyframe every 250, three
boxes on every frame) and, when present, ../shared/data/videos/{box.mp4,vtest.avi} (one box a frame),
in one process, runs alternating: raw PyAV (``container.decode`` + ``to_ndarray("rgb24")``), raw PyAV with one
``VideoReformatter`` reused for every frame (as FrameReader converts; ``to_ndarray(format=...)`` makes a swscale
context per frame), then FrameReader.iter_frames over every frame, VideoStream over every frame (tensor samples),
PlannedStream over a random draw of as many frames and VideoFrames batches of 8 random positions. Prints samples/s
(median and range over runs), CPU ms per sample over all threads, minor page faults per sample, and VideoStream / raw
(and / raw with one reformatter) and iter_frames / raw as the median and range of the run-by-run ratios (goals:
VideoStream >= 0.8x of raw, iter_frames >= 1.3x of raw with no more faults a frame, at every size).

Usage: python scripts/bench_stream.py [--repeat 3] [--workdir DIR] [--sizes 320x240,640x480,1280x720]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import alternate, machine, make_clip, number_of, rates, ratio_range, raw_decode, raw_decode_reused

from vidlabel import Dataset, FrameReader, FrameSamples, probe
from vidlabel.torch_data import PlannedStream, VideoFrames, VideoStream

ROOT = Path(__file__).resolve().parent.parent
SHARED = (
    next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT) / "data" / "videos"
)
FRAMES = {320: 600, 640: 300, 1280: 150}


def dataset_for(clip: Path, workdir: Path, boxes_per_frame: int) -> Dataset:
    path = workdir / f"ds_{clip.stem}_{boxes_per_frame}"
    if path.exists():
        return Dataset.open(path)
    ds = Dataset.create(path)
    ds.add_labels(["a", "b"])
    meta = probe(clip, video_id="clip")
    ds.add_video(meta)
    ds.add_annotations(
        [
            {"kind": "box", "label": "ab"[k % 2], "start_frame": f, "box": (10 + k, 10, 40 + k, 30)}
            for f in range(meta.frame_count)
            for k in range(boxes_per_frame)
        ],
        "clip",
    )
    ds.build()
    return ds


def bench(label: str, clip: Path, ds: Dataset, repeat: int, check_numbers: bool) -> None:
    samples = FrameSamples(ds, frames="all")
    n = len(samples)
    stream = VideoStream(samples, shuffle_videos=False)
    positions = np.random.default_rng(0).integers(0, n, n)
    plan = samples.plan_reads(positions, seed=0)
    frames = VideoFrames(samples)

    def run_stream() -> int:
        count = 0
        for s in stream:
            if check_numbers and count % 50 == 0:
                assert number_of(s["image"].permute(1, 2, 0).numpy()) == s["frame_index"]
            count += 1
        assert count == n
        return count

    def run_iter() -> int:
        with FrameReader.for_video(ds.video("clip")) as reader:
            return sum(1 for _ in reader.iter_frames())

    def run_plan() -> int:
        return sum(1 for _ in PlannedStream(samples, plan))

    def run_frames() -> int:
        batches = positions[: max(8, n // 32 * 8)].reshape(-1, 8)
        return sum(len(frames.__getitems__(b.tolist())) for b in batches)

    res = alternate({"raw": lambda: raw_decode(clip), "raw1": lambda: raw_decode_reused(clip), "iter": run_iter,
                     "stream": run_stream, "plan": run_plan, "frames": run_frames}, repeat)  # fmt: skip
    print(f"{label}: {n} frames")
    print(f"  raw PyAV decode to RGB       {rates(res['raw'])}")
    print(f"  raw PyAV, one reformatter    {rates(res['raw1'])}")
    print(f"  FrameReader.iter_frames      {rates(res['iter'])}   vs raw {ratio_range(res['iter'], res['raw'])}")
    print(f"  VideoStream                  {rates(res['stream'])}   vs raw {ratio_range(res['stream'], res['raw'])}, "
          f"vs raw with one reformatter {ratio_range(res['stream'], res['raw1'])}")  # fmt: skip
    print(f"  PlannedStream (random draw)  {rates(res['plan'])}")
    print(f"  VideoFrames, batches of 8    {rates(res['frames'])}")
    print(f"| VideoStream vs raw PyAV, {label} | {ratio_range(res['stream'], res['raw'])} | >= 0.8x |")
    faults = statistics.median(r[2] for r in res["iter"]), statistics.median(r[2] for r in res["raw"])
    print(f"| FrameReader.iter_frames vs raw PyAV, {label} | {ratio_range(res['iter'], res['raw'])}; minor page faults "
          f"a frame {faults[0]:.1f} (raw {faults[1]:.1f}) | >= 1.3x, faults <= raw |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench")
    ap.add_argument("--sizes", default="320x240,640x480,1280x720")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    for size in args.sizes.split(","):
        w, h = (int(v) for v in size.split("x"))
        clip = make_clip(args.workdir / f"clip_{w}x{h}.mp4", FRAMES.get(w, 300), w, h)
        bench(f"{w}x{h} H.264", clip, dataset_for(clip, args.workdir, 3), args.repeat, True)
    for name in ("box.mp4", "vtest.avi"):
        if (SHARED / name).exists():
            bench(name, SHARED / name, dataset_for(SHARED / name, args.workdir, 1), args.repeat, False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
