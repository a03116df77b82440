"""Benchmark export formats in one run: MediaSequence TFRecords next to the HDF5 store's ``none`` and ``jpeg`` codecs.

On one generated 1280x720 H.264 clip (bench_store.py's panning noise texture with moving boxes, so the
frames have realistic entropy), with a box on every frame and ``frames="all"``, it exports the same
release with ``workers=1`` as:

- HDF5, codec ``none`` (the store's default) and ``jpeg`` (quality 90);
- MediaSequence, ``jpeg:95`` (its default), ``jpeg:90`` (the store's JPEG quality) and ``png``;

and prints frames/s (wall clock, decode included) and bytes per stored frame (the output folder's size
over the frames). Every export decodes the clip once; the numbers compare writers on the same decode.

Usage::

    python scripts/bench_export.py [--dir /tmp/vidlabel_bench_export] [--frames 300]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_store import encode

from vidlabel import Dataset, export, probe

RUNS = [
    ("hdf5", "none"),
    ("hdf5", "jpeg"),
    ("mediasequence", "jpeg:95"),
    ("mediasequence", "jpeg:90"),
    ("mediasequence", "png"),
]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/vidlabel_bench_export")
    ap.add_argument("--frames", type=int, default=300)
    args = ap.parse_args()
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    clip = root / "clip.mp4"
    encode(clip, args.frames, seed=1)
    ds = Dataset.create(root / "ds")
    ds.add_labels(["box"])
    ds.add_video(probe(clip, video_id="clip"))
    ds.add_annotations(
        [{"kind": "box", "label": "box", "start_frame": n, "box": (40, 60, 240, 210), "track_id": 0}
         for n in range(args.frames)],
        "clip",
    )  # fmt: skip
    ds.build()
    print(f"{args.frames} frames of 1280x720 H.264, frames='all', workers=1")
    print(f"{'format':<15}{'codec':<10}{'frames/s':>10}{'bytes/frame':>14}")
    for fmt, codec in RUNS:
        out = root / f"{fmt}-{codec.replace(':', '')}"
        t0 = time.perf_counter()
        report = export(ds, out, format=fmt, codec=codec, frames="all", progress=False)
        seconds = time.perf_counter() - t0
        frames = report.samples
        print(f"{fmt:<15}{codec:<10}{frames / seconds:>10.1f}{folder_bytes(out) / frames:>14,.0f}")
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
