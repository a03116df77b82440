"""Benchmark the dataset at the spec's scale: 100 videos, 1,000,000 box annotations.

Rows are made as a labelling tool would hand them over (dicts with tracks
that move, model rows with a confidence) and added in batches of 10,000 per
``add_annotations`` call; only the library calls are timed. Prints seconds and
MB for writing, ``validate()``, ``build()`` and loading the release's table
in a fresh process-like ``Dataset`` object, each with its ratio to the spec's
figures ("How big a dataset can be": 20 s, 5.5 s, 6 s, 83 MB).

Usage::

    python scripts/bench_dataset.py [--videos 100] [--rows 1000000] [--batch 10000] [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from vidlabel import Dataset, FrameIndex, VideoMetadata

SPEC = {"write": 20.0, "validate": 5.5, "build": 6.0, "disk_mb": 83.0}
LABELS = ["person", "car", "bicycle", "dog", "ball", "goal", "foul", "replay"]


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
    try:
        ds = Dataset.create(path)
        ds.add_labels(LABELS)
        per_video = args.rows // args.videos
        t_write = 0.0
        t0 = time.perf_counter()
        for v in range(args.videos):
            meta = make_video(v, args.frames)
            ds.add_video(meta)
        t_write += time.perf_counter() - t0
        t_make = 0.0
        for v in range(args.videos):
            vid = f"match_{v:03d}"
            done = 0
            while done < per_video:
                k = min(args.batch, per_video - done)
                tm = time.perf_counter()
                rows = make_rows(rng, k, args.frames)
                t_make += time.perf_counter() - tm
                t0 = time.perf_counter()
                ds.add_annotations(rows, vid)
                t_write += time.perf_counter() - t0
                done += k
        n_rows = args.videos * per_video

        t0 = time.perf_counter()
        problems = ds.validate()
        t_validate = time.perf_counter() - t0

        t0 = time.perf_counter()
        release, report = ds.build()
        t_build = time.perf_counter() - t0
        mb = folder_mb(path)
        db_mb = folder_mb(path) - folder_mb(path / "releases")

        fresh = Dataset.open(path)
        t0 = time.perf_counter()
        loaded = fresh.release(release.release_id)
        t_load = time.perf_counter() - t0
        assert len(loaded.table) == n_rows == len(release.table)
        t0 = time.perf_counter()
        snap = fresh.snapshot()
        t_snap = time.perf_counter() - t0
        assert len(snap.table) == n_rows

        errors = sum(p.severity == "error" for p in problems)
        print(
            f"vidlabel dataset benchmark: {args.videos} videos, {n_rows:,} box annotations, batches of {args.batch:,}"
        )
        print(f"(making the row dicts took {t_make:.1f} s, not counted)")
        print(f"{'step':<28}{'measured':>12}{'spec':>10}{'ratio':>8}")
        print(
            f"{'write (add_annotations)':<28}{t_write:>10.2f} s{SPEC['write']:>8.1f} s{t_write / SPEC['write']:>8.2f}"
        )
        print(
            f"{'validate()':<28}{t_validate:>10.2f} s{SPEC['validate']:>8.1f} s"
            f"{t_validate / SPEC['validate']:>8.2f}   ({len(problems)} problems, {errors} errors)"
        )
        print(f"{'build()':<28}{t_build:>10.2f} s{SPEC['build']:>8.1f} s{t_build / SPEC['build']:>8.2f}   ({report})")
        print(
            f"{'disk (dataset folder)':<28}{mb:>9.1f} MB{SPEC['disk_mb']:>7.0f} MB{mb / SPEC['disk_mb']:>8.2f}"
            f"   (database {db_mb:.1f} MB + release file {mb - db_mb:.1f} MB)"
        )
        print(
            f"{'load release table':<28}{t_load:>10.2f} s{'':>10}{'':>8}   (fresh Dataset, {len(loaded.table):,} rows)"
        )
        print(f"{'snapshot() of live rows':<28}{t_snap:>10.2f} s")
    finally:
        if not args.keep:
            shutil.rmtree(work if args.out is None else path, ignore_errors=True)


if __name__ == "__main__":
    main()
