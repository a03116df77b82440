"""A release of many short videos: 1,000 against 10,000 videos (and 100,000 for the dataset rows).

The dataset rows need no video files: each video is a VideoMetadata record with a fake source (30 frames, 64x48, a content hash so that export
planning hashes no file) holding 3 boxes. Prints, for N videos: FrameSamples open, export planning
(``select_frames`` + ``plan_export``, the per-video regions and segments), ``VideoStream.assignment`` and
``FrameSamples.sample`` over every sample (targets only, a blank image), each in seconds and as the
10,000 / 1,000 ratio (goal: within 12x, i.e. linear in the videos with room for noise).

The store rows: N distinct tiny H.264 clips (64x48, 10 frames, the video number in the pixels so that no
two share a content hash, and so their stored frames) are probed, registered with 3 boxes each and exported
with ``frames="all"``, codec none, HDF5, ``workers=2`` (built once and kept in ``--workdir``; the export
time, in seconds, milliseconds a video and the ratio, is printed as information, recorded when the store
was built). Then, in a fresh process per count, the store's files read once before (so that both counts
read from the page cache): ``open_store``, ``StoreFrames`` construction over the opened store, 2,000 random
``__getitem__`` (after 200 reads of warm-up), the same reads again ("again": every video read has its
arrays loaded and its frames file indexed, as in a second epoch; at most 64 frames files stay open, the others
are opened again from their index), 300 random ``__getitems__`` batches of 8, then
``StoreFrames(frames="annotated")`` over a newly opened store (it reads every video's arrays) and its
``index`` (best of 3), each in seconds and as the ratio. Last, over the store of the first count: a DataLoader
with 2 workers against 0 (``persistent_workers=False``, torch's default: new workers every epoch; batch 8,
``collate_frames``), 5 epochs of 2,000 samples drawn with replacement in a fresh process, rates over epochs 1-2,
2-3 and 4-5 (the loader of ``bench_storeframes.py`` row 3; 3 alternating runs, median and range): a worker
reads videos its epoch's predecessors read, which it starts with only when they handed them over.

Each store count also prints 2,000 random ``__getitem__`` over its store against the same reads over a store
of one video of 2,000 frames of the same size (64x48, exported alike), each in a fresh process, one right
after the other (goal: within 2x). The ratios are printed for each count against the one before it (goal:
within 11x). Both run at 1,000 and 10,000 videos by default; the 100,000-video rows are opt-in, built once
in ``--workdir``: ``--counts 1000,10000,100000`` for the dataset rows (no video files; its dataset takes
minutes to build), ``--store-counts 1000,10000,100000`` for the store rows (100,000 clips and their export:
the better part of an hour).

Usage: python scripts/bench_scale.py [--counts 1000,10000] [--store-counts 1000,10000] [--workdir DIR]
[--no-store]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import machine, write_h264

from vidlabel import Dataset, FrameSamples, VideoMetadata, export, open_store, probe
from vidlabel.torch_data import VideoStream

FRAMES = 30
STORE_FRAMES, STORE_W, STORE_H = 10, 64, 48
SINGLE_READS, BATCHES, BATCH = 2000, 300, 8
ONE_FRAMES = 2000
SCRIPT = Path(__file__).resolve()


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


def tiny_clip(path: Path, number: int) -> Path:
    """A 64x48 H.264 clip of STORE_FRAMES frames whose pixels hold ``number`` (16 bits as 4x4 blocks along the
    top rows) and the frame number (the gray level): distinct bytes, so a distinct content hash; cached."""
    if path.exists():
        return path
    bits = ((number >> np.arange(16)) & 1).astype(np.uint8) * 255

    def image(n: int) -> np.ndarray:
        img = np.full((STORE_H, STORE_W, 3), 40 + 16 * n, np.uint8)
        img[:4, :] = np.repeat(bits, 4)[None, :, None]
        return img

    options = {"preset": "ultrafast", "g": str(STORE_FRAMES)}
    return write_h264(path, (image(n) for n in range(STORE_FRAMES)), STORE_W, STORE_H, options)


def build_store(workdir: Path, n_videos: int) -> tuple[Path, dict[str, float]]:
    """The store of ``n_videos`` tiny clips and its build times (clips, probe + register, export), cached:
    a rerun reads the times recorded when it was built."""
    out, times_file = workdir / f"store_{n_videos}", workdir / f"store_{n_videos}.json"
    if (out / "store.h5").exists() and times_file.exists():
        return out, json.loads(times_file.read_text())
    clips = workdir / "clips"
    clips.mkdir(exist_ok=True)
    times: dict[str, float] = {}
    t = time.perf_counter()
    paths = [tiny_clip(clips / f"v{v:05d}.mp4", v) for v in range(n_videos)]
    times["clips"] = time.perf_counter() - t
    ds_path = workdir / f"store_ds_{n_videos}"
    if ds_path.exists():
        ds = Dataset.open(ds_path)
    else:
        t = time.perf_counter()
        ds = Dataset.create(ds_path)
        ds.add_labels(["a", "b"])
        for v, clip in enumerate(paths):
            meta = probe(clip, video_id=f"v{v:05d}")
            ds.add_video(meta)
            ds.add_annotations(
                [{"kind": "box", "label": "ab"[k % 2], "start_frame": 3 * k, "box": (1, 1, 20, 20)} for k in range(3)],
                meta.video_id,
            )
        ds.build()
        times["probe + register"] = time.perf_counter() - t
    t = time.perf_counter()
    export(ds, out, frames="all", workers=2, progress=False, overwrite=True)
    times["export"] = time.perf_counter() - t
    times_file.write_text(json.dumps(times))
    return out, times


def build_one_video_store(workdir: Path) -> Path:
    """The baseline: one video of :data:`ONE_FRAMES` frames of the same size (64x48), exported as the many-video
    stores are (``frames="all"``, codec none, HDF5); cached in ``workdir``."""
    out = workdir / "store_one_video"
    if (out / "store.h5").exists():
        return out
    clip = workdir / "one_video.mp4"
    if not clip.exists():
        images = (np.full((STORE_H, STORE_W, 3), n % 256, np.uint8) for n in range(ONE_FRAMES))
        write_h264(clip, images, STORE_W, STORE_H, {"preset": "ultrafast", "g": str(STORE_FRAMES)})
    ds_path = workdir / "store_ds_one_video"
    ds = Dataset.open(ds_path) if ds_path.exists() else Dataset.create(ds_path)
    if not ds.releases():
        ds.add_labels(["a", "b"])
        ds.add_video(probe(clip, video_id="one"))
        ds.add_annotations(
            [{"kind": "box", "label": "ab"[k % 2], "start_frame": 3 * k, "box": (1, 1, 20, 20)}
             for k in range(ONE_FRAMES // 3)], "one",
        )  # fmt: skip
        ds.build()
    export(ds, out, frames="all", workers=1, progress=False, overwrite=True)
    return out


def child_reads(store: str) -> dict[str, float]:
    """In a fresh process: 2,000 random StoreFrames ``__getitem__`` after 200 of warm-up (seconds)."""
    from vidlabel.torch_data import StoreFrames

    data = StoreFrames(open_store(store))
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(data), 200).tolist():
        data[i]
    t = time.perf_counter()
    for i in rng.integers(0, len(data), SINGLE_READS).tolist():
        data[i]
    return {"reads": time.perf_counter() - t}


def child_store(store: str) -> dict[str, float]:
    """In a fresh process: open_store, StoreFrames over it, random single and batch reads (seconds each)."""
    from vidlabel.torch_data import StoreFrames

    out: dict[str, float] = {}
    t = time.perf_counter()
    fs = open_store(store)
    out["open_store"] = time.perf_counter() - t
    t = time.perf_counter()
    data = StoreFrames(fs)
    out["StoreFrames construction"] = time.perf_counter() - t
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(data), 200).tolist():  # warm-up: first-call costs, not the store's size
        data[i]
    singles = rng.integers(0, len(data), SINGLE_READS).tolist()
    t = time.perf_counter()
    for i in singles:
        data[i]
    out[f"StoreFrames {SINGLE_READS:,} random __getitem__"] = time.perf_counter() - t
    t = time.perf_counter()
    for i in singles:  # the same reads again: every video's arrays are loaded, its frames file indexed
        data[i]
    out[f"StoreFrames {SINGLE_READS:,} random __getitem__, again"] = time.perf_counter() - t
    batches = rng.integers(0, len(data), (BATCHES, BATCH)).tolist()
    t = time.perf_counter()
    for b in batches:
        data.__getitems__(b)
    out[f"StoreFrames {BATCHES} random __getitems__ of {BATCH}"] = time.perf_counter() - t
    out["samples"] = len(data)
    t = time.perf_counter()
    annotated = StoreFrames(open_store(store), frames="annotated")  # reads every video's arrays
    out["StoreFrames(frames='annotated') construction"] = time.perf_counter() - t
    times = []
    for _ in range(3):
        t = time.perf_counter()
        assert len(annotated.index) == len(annotated) == 3 * len(data) // STORE_FRAMES  # 3 boxed frames a video
        times.append(time.perf_counter() - t)
    out["StoreFrames.index, arrays loaded, best of 3"] = min(times)
    return out


def page_cache(store: Path) -> None:
    """Read every file of ``store`` once, so that both counts are read from the page cache (uncompressed HDF5
    units larger than a quarter of the free memory are written with O_DIRECT: a store just exported may not
    be)."""
    for path in sorted(store.rglob("*")):
        if path.is_file():
            with path.open("rb", buffering=0) as fh:
                while fh.read(8 << 20):
                    pass


def _child(flag: str, store: Path) -> dict[str, float]:
    proc = subprocess.run([sys.executable, str(SCRIPT), flag, str(store)], capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def store_rows(workdir: Path, counts: list[int]) -> None:
    one = build_one_video_store(workdir)
    page_cache(one)
    results: dict[int, dict[str, float]] = {}
    builds: dict[int, dict[str, float]] = {}
    for n in counts:
        store, builds[n] = build_store(workdir, n)
        print(f"  store of {n:,} videos: built in " + ", ".join(f"{k} {v:.1f} s" for k, v in builds[n].items())
              + f" (export {1000 * builds[n]['export'] / n:.2f} ms a video)", flush=True)  # fmt: skip
        page_cache(store)
        results[n] = _child("--child-store", store)
        r = results[n]
        # the same reads over one video of the same frames, measured right after (the machine's load alike)
        base = _child("--child-reads", one)["reads"]
        many = _child("--child-reads", store)["reads"]
        print(f"| StoreFrames {SINGLE_READS:,} random __getitem__, {n:,} videos vs one video of {ONE_FRAMES:,} "
              f"frames | {1000 * many / SINGLE_READS:.3f} ms vs {1000 * base / SINGLE_READS:.3f} ms a read: "
              f"{many / base:.1f}x | within 2x |", flush=True)  # fmt: skip
        print(f"  {n:,} videos, {int(r['samples']):,} samples: "
              + ", ".join(f"{k} {v:.3f} s" for k, v in r.items() if k != "samples")
              + f"; {SINGLE_READS / r[f'StoreFrames {SINGLE_READS:,} random __getitem__']:,.0f} reads/s, "
              f"{BATCHES / r[f'StoreFrames {BATCHES} random __getitems__ of {BATCH}']:,.0f} batches/s",
              flush=True)  # fmt: skip
    for lo, hi in itertools.pairwise(counts):
        e_lo, e_hi = builds[lo]["export"], builds[hi]["export"]
        print(f"  export per video (information): {1000 * e_hi / hi:.2f} ms vs {1000 * e_lo / lo:.2f} ms, "
              f"total {e_hi:.1f} s vs {e_lo:.1f} s: {e_hi / e_lo:.1f}x")  # fmt: skip
        for key in results[lo]:
            if key == "samples":
                continue
            a, b = results[lo][key], results[hi][key]
            print(f"| {key}, {hi:,} vs {lo:,} videos | {b:.3f} s vs {a:.3f} s: {b / a:.1f}x | within 11x |")


def loader_row(store: Path, repeat: int = 3) -> None:
    """DataLoader 2 workers against 0 over ``store``, epochs of 2,000 samples (see the module docstring)."""
    from bench_storeframes import rate, spread

    def run(workers: int) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, str(SCRIPT.with_name("bench_storeframes.py")), "--child", "loader",
                               str(store), str(workers), "8", "0", "2000"], capture_output=True, text=True, check=True)  # fmt: skip
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))

    zero, two = [], []
    for _ in range(repeat):
        zero.append(run(0))
        two.append(run(2))
    for name, runs in (("0 workers", zero), ("2 workers", two)):
        print(f"  DataLoader over {store.name}, {name}: epoch seconds (median of {repeat}) "
              + ", ".join(f"{statistics.median(r['seconds'][e] for r in runs):.2f}" for e in range(5))
              + f"; CPU ms/sample main {statistics.median(r['main_cpu_ms'] for r in runs):.2f} + workers "
              f"{statistics.median(r['worker_cpu_ms'] for r in runs):.2f}")  # fmt: skip
    ratios = {k: [rate(b, sl) / rate(a, sl) for a, b in zip(zero, two)]
              for k, sl in (("1-2", slice(0, 2)), ("2-3", slice(1, 3)), ("4-5", slice(3, 5)))}  # fmt: skip
    print(f"| DataLoader 2 workers vs 0 over {store.name}, epochs of 2,000 samples, persistent_workers=False | "
          + "; ".join(f"epochs {k} {spread(v)}" for k, v in ratios.items()) + " | >= 1x |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="1000,10000", help="videos of the dataset rows (add 100000: see above)")
    ap.add_argument("--store-counts", default="1000,10000", help="videos of the store rows (100000: see above)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench")
    ap.add_argument("--no-store", action="store_true", help="skip the store rows")
    ap.add_argument("--child-store", help=argparse.SUPPRESS)
    ap.add_argument("--child-reads", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_store:
        print(json.dumps(child_store(args.child_store)))
        return 0
    if args.child_reads:
        print(json.dumps(child_reads(args.child_reads)))
        return 0
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
    for lo, hi in itertools.pairwise(counts):
        for key in results[lo]:
            a, b = results[lo][key], results[hi][key]
            print(f"| {key}, {hi:,} vs {lo:,} videos | {b:.3f} s vs {a:.3f} s: {b / a:.1f}x | within 11x |")
    if not args.no_store:
        counts = [int(c) for c in args.store_counts.split(",")]
        store_rows(args.workdir, counts)
        loader_row(args.workdir / f"store_{counts[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
