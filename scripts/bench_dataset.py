"""Benchmark the dataset at the spec's scale: 100 videos, 1,000,000 box annotations.

Rows are made as a labelling tool would hand them over (dicts with tracks
that move, model rows with a confidence) and added in batches of 10,000 per
``add_annotations`` call; only the library calls are timed. Prints seconds and
MB for writing, ``validate()``, ``build()`` and loading the release's table
in a fresh ``Dataset`` object, each with its ratio to the spec's figures
("How big a dataset can be": 20 s, 5.5 s, 6 s, 83 MB). Wall seconds are what
the targets are about; the CPU seconds of this process are printed next to
them because the machines are shared and wall time varies with their load.

Usage::

    python scripts/bench_dataset.py [--videos 100] [--rows 1000000] [--batch 10000] [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from vidlabel import Dataset, FrameIndex, VideoMetadata

SPEC = {"write": 20.0, "validate": 5.5, "build": 6.0, "disk_mb": 83.0}
LABELS = ["person", "car", "bicycle", "dog", "ball", "goal", "foul", "replay"]


class Timer:
    """Wall and CPU seconds accumulated over ``with`` blocks."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Timer:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def make_video(i: int, frames: int) -> VideoMetadata:
    pts = np.arange(frames, dtype=np.int64) * 512
    index = FrameIndex(
        timebase={"num": 1, "den": 15360},
        pts=pts,
        keyframes=np.arange(0, frames, 250),
        content_hash=f"sha256:{i:064x}",
    )
    return VideoMetadata(
        video_id=f"match_{i:03d}",
        frame_count=frames,
        fps={"num": 30, "den": 1},
        width=1280,
        height=720,
        sources=[{"uri": f"/data/videos/match_{i:03d}.mp4"}],
        content_hash=f"sha256:{i:064x}",
        codec="h264",
        frame_index=index,
    )


def make_rows(rng: np.random.Generator, n: int, frames: int, tracks: int = 40) -> list[dict]:
    """``n`` box rows of ``tracks`` moving objects on random frames; a third from a model with a confidence."""
    track = rng.integers(0, tracks, n)
    track_label = rng.integers(0, 5, tracks)  # object classes only
    frame = np.sort(rng.choice(frames, n, replace=n > frames))
    # Each track moves smoothly; positions with two decimals as annotation tools write them.
    cx = (200 + 880 * (0.5 + 0.5 * np.sin(frame / 300 + track))).round(2)
    cy = (150 + 420 * (0.5 + 0.5 * np.cos(frame / 400 + 2 * track))).round(2)
    w = (20 + 4 * (track % 10)).astype(float)
    h = (40 + 3 * (track % 7)).astype(float)
    x0, y0, x1, y1 = (cx - w / 2).round(2), (cy - h / 2).round(2), (cx + w / 2).round(2), (cy + h / 2).round(2)
    model = rng.random(n) < 1 / 3
    conf = rng.random(n).round(3)
    rows = []
    for i in range(n):
        row = {
            "kind": "box",
            "label": LABELS[track_label[track[i]]],
            "start_frame": int(frame[i]),
            "box": (float(x0[i]), float(y0[i]), float(x1[i]), float(y1[i])),
            "track_id": int(track[i]),
            "origin": "model" if model[i] else "human",
        }
        if model[i]:
            row["confidence"] = float(conf[i])
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--videos", type=int, default=100)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--frames", type=int, default=18_000, help="frames per video (10 minutes at 30 fps)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the dataset (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the dataset afterwards")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_dataset_")) if args.out is None else args.out
    path = work / "bench_ds"
    if path.exists():
        shutil.rmtree(path)
    rng = np.random.default_rng(0)
    write, validate, build, load, snapshot = Timer(), Timer(), Timer(), Timer(), Timer()
    try:
        ds = Dataset.create(path)
        with write:
            ds.add_labels(LABELS)
            for v in range(args.videos):
                ds.add_video(make_video(v, args.frames))
        per_video = args.rows // args.videos
        t_make = 0.0
        for v in range(args.videos):
            done = 0
            while done < per_video:
                k = min(args.batch, per_video - done)
                t0 = time.perf_counter()
                rows = make_rows(rng, k, args.frames)
                t_make += time.perf_counter() - t0
                with write:
                    ds.add_annotations(rows, f"match_{v:03d}")
                done += k
        n_rows = args.videos * per_video
        with validate:
            problems = ds.validate()
        with build:
            release, report = ds.build()
        mb = folder_mb(path)
        release_mb = folder_mb(path / "releases")
        fresh = Dataset.open(path)
        with load:
            loaded = fresh.release(release.release_id)
        assert len(loaded.table) == n_rows == len(release.table)
        with snapshot:
            snap = fresh.snapshot()
        assert len(snap.table) == n_rows
    finally:
        if not args.keep:
            shutil.rmtree(work if args.out is None else path, ignore_errors=True)

    errors = sum(p.severity == "error" for p in problems)
    print(f"vidlabel dataset benchmark: {args.videos} videos, {n_rows:,} box annotations, batches of {args.batch:,}")
    print(f"(making the row dicts took {t_make:.1f} s, not counted; load average {os.getloadavg()[0]:.1f})")
    print(f"{'step':<26}{'wall':>9}{'cpu':>9}{'spec':>9}{'ratio':>7}")

    def line(name: str, t: Timer, spec: float | None, note: str = "") -> None:
        ratio = f"{t.wall / spec:>7.2f}" if spec else f"{'':>7}"
        spec_s = f"{spec:>7.1f} s" if spec else f"{'':>9}"
        print(f"{name:<26}{t.wall:>7.2f} s{t.cpu:>7.2f} s{spec_s}{ratio}   {note}".rstrip())

    line("write (add_annotations)", write, SPEC["write"])
    line("validate()", validate, SPEC["validate"], f"({len(problems)} problems, {errors} errors)")
    line("build()", build, SPEC["build"], f"({report})")
    line("load a release's table", load, None, f"(fresh Dataset, {len(loaded.table):,} rows)")
    line("snapshot() of live rows", snapshot, None)
    print(
        f"{'disk (dataset folder)':<26}{mb:>7.1f} MB{'':>9}{SPEC['disk_mb']:>6.0f} MB{mb / SPEC['disk_mb']:>7.2f}"
        f"   (database {mb - release_mb:.1f} MB + release file {release_mb:.1f} MB)"
    )


if __name__ == "__main__":
    main()
