"""Benchmark label import and export: MOT and COCO-VID against the JSON Lines path, same rows.

The rows are box tracks (human, 9-column MOT gt), spread over ``--videos`` videos. Timed:

* JSON Lines: ``vidlabel add-annotations`` (read, ``json.loads`` per line, ``add_annotations``) per video;
* MOT import: ``import_labels(ds, "mot", gt.txt, video_id=...)`` per video;
* COCO-VID import: ``import_labels(ds, "coco-vid", file)`` (one file, every video);
* MOT and COCO-VID export of a release holding the rows.

Each import goes into a fresh dataset. Prints seconds and the ratio to the JSON Lines path
(the issue's target: import <= 1.5x). The machines are shared: wall time varies with their load.

With ``--memory``, measures instead the peak memory of each format's import: a release of ``--rows`` box rows
of one video is exported in each label format, and each file imported into a fresh dataset in a child process
whose peak RSS (``VmHWM``) less its RSS before the import is printed per million rows (the goal: <= 300 MB
per million rows, whatever the file's size); for COCO-VID, YouTube-VIS and Label Studio, the reading alone (the
importer's rows, no dataset write) is measured the same way. A CVAT file of one-keyframe tracks that persist to
the task's end (``--persist-rows`` rows from a file of a few hundred KB; ``--big``: 10 million) is imported the
same way. ``--formats mot,cvat-video`` measures only those formats.

Usage::

    python scripts/bench_formats.py [--rows 1000000] [--videos 10] [--out DIR]
    python scripts/bench_formats.py --memory [--rows 1000000] [--persist-rows 1000000] [--big] [--formats F,...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from vidlabel import Dataset, VideoMetadata
from vidlabel.cli import main as cli
from vidlabel.formats import export_labels, import_labels

LABELS = ["person", "car"]
BOXES_PER_FRAME = 10


def videos(n: int, rows: int) -> list[VideoMetadata]:
    frames = max(1, rows // (n * BOXES_PER_FRAME))
    return [
        VideoMetadata(
            f"v{i:03d}", frames, {"num": 25, "den": 1}, 1920, 1080, sources=[{"uri": f"/videos/v{i:03d}.mp4"}]
        )
        for i in range(n)
    ]


def fresh(path: Path, metas: list[VideoMetadata]) -> Dataset:
    if path.exists():
        shutil.rmtree(path)
    ds = Dataset.create(path)
    for m in metas:
        ds.add_video(m)
    ds.add_labels(LABELS)
    return ds


def boxes(meta: VideoMetadata, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """BOXES_PER_FRAME tracks over every frame, moving a little each frame (xywh, pixels)."""
    f = np.repeat(np.arange(meta.frame_count), BOXES_PER_FRAME)
    track = np.tile(np.arange(BOXES_PER_FRAME), meta.frame_count)
    x = (track * 150 + f % 400).astype(np.float64) + rng.random(f.size).round(2)
    y = (track * 80 + 10).astype(np.float64)
    return {"frame": f, "track": track, "x": x, "y": y, "w": np.full(f.size, 60.0), "h": np.full(f.size, 120.0)}


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        fn()
    return time.perf_counter() - t0


MEMORY_FORMATS = {"mot": "gt", "coco-vid": "coco.json", "cvat-video": "cvat.xml", "ytvis": "ytvis.json",
                  "label-studio": "ls.json"}  # fmt: skip


def _status_kib(key: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, KiB: ``ru_maxrss`` would also count the parent's peak
    before the exec (Linux keeps it across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def child_import(fmt: str, file: Path, dataset: Path) -> None:
    """In a child process: import ``file`` into ``dataset`` and print 'rows before_kib peak_kib seconds'."""
    import importlib

    for name in ("_mot", "_cocovid", "_cvat", "_ytvis", "_labelstudio"):  # their imports are not the file's cost
        importlib.import_module(f"vidlabel.formats.{name}")
    importlib.import_module("pycocotools.mask")
    importlib.import_module("defusedxml.ElementTree")
    ds = Dataset.open(dataset)
    ds.annotations()
    before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    options = {"label_map": {1: "person"}} if fmt == "mot" else {}
    with contextlib.redirect_stdout(io.StringIO()):
        report = import_labels(ds, fmt, file, video_id="v000", **options)
    seconds = time.perf_counter() - t0
    rows = sum(len(v.annotation_ids) for v in report.videos.values())
    print(rows, before, _status_kib("VmHWM"), f"{seconds:.1f}")


def _measure(fmt: str, file: Path, dataset: Path) -> tuple[int, float, float]:
    """(rows, peak MB above the RSS before the import, seconds) of one import in a fresh child process."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, __file__, "--child", fmt, str(file), str(dataset)], capture_output=True, text=True, check=True
    )
    rows, before, peak, seconds = done.stdout.split()[-4:]
    return int(rows), (int(peak) - int(before)) / 1024, float(seconds)


def child_parse(fmt: str, file: Path, frames: int) -> None:
    """In a child process: only read ``file`` with the format's importer (no dataset write) and print
    'rows before_kib peak_kib seconds': the reading's own memory, without the write path's."""
    from vidlabel.formats._common import ImportContext
    from vidlabel.formats._registry import label_format

    importlib_formats()
    meta = VideoMetadata("v000", frames, {"num": 25, "den": 1}, 1920, 1080, sources=[{"uri": "/videos/v000.mp4"}])
    ctx = ImportContext(file, {"v000": meta}, "v000", {}, None, None, {})
    before = _status_kib("VmRSS")
    t0 = time.perf_counter()
    parsed = label_format(fmt).importer(ctx)
    seconds = time.perf_counter() - t0
    rows = sum(len(v.where) for v in parsed.videos.values())
    print(rows, before, _status_kib("VmHWM"), f"{seconds:.1f}")


def importlib_formats() -> None:
    """Import the format modules and their libraries first: their imports are not the file's cost."""
    import importlib

    for name in ("_mot", "_cocovid", "_cvat", "_ytvis", "_labelstudio"):
        importlib.import_module(f"vidlabel.formats.{name}")
    importlib.import_module("pycocotools.mask")


def json_parse_memory(root: Path, frames: int) -> None:
    """Peak RSS of reading each JSON format's file (written by :func:`memory`) without writing its rows."""
    import subprocess
    import sys

    print("reading only (the importer's Parsed, no dataset write), peak RSS above the read's start:")
    for fmt in ("coco-vid", "ytvis", "label-studio"):
        file = root / MEMORY_FORMATS[fmt]
        done = subprocess.run(
            [sys.executable, __file__, "--child-parse", fmt, str(file), str(frames)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows, before, peak, seconds = done.stdout.split()[-4:]
        mb = (int(peak) - int(before)) / 1024
        print(f"  {fmt:13s} {int(rows):>10} rows  peak {mb:8.1f} MB  {mb / int(rows) * 1e6:7.1f} MB per million rows  "
              f"{float(seconds):6.1f} s")  # fmt: skip


def persisting_cvat(path: Path, tracks: int, frames: int) -> None:
    """A CVAT file of ``tracks`` tracks of one keyframe each at frame 0: each persists to the task's last frame."""
    with open(path, "w") as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version><meta><task>'
                 f"<size>{frames}</size><original_size><width>1920</width><height>1080</height></original_size>"
                 "</task></meta>\n")  # fmt: skip
        for t in range(tracks):
            x = (t * 7) % 1800
            fh.write(f'<track id="{t}" label="person"><box frame="0" keyframe="1" outside="0" occluded="0" '
                     f'xtl="{x}" ytl="10" xbr="{x + 60}" ybr="130"/></track>\n')  # fmt: skip
        fh.write("</annotations>\n")


def memory(args: argparse.Namespace) -> None:
    from _benchlib import machine

    root = args.out or Path(tempfile.mkdtemp(prefix="bench_formats_mem_"))
    root.mkdir(parents=True, exist_ok=True)
    print(machine())
    (meta,) = videos(1, args.rows)
    ds = fresh(root / "source", [meta])
    b = boxes(meta, np.random.default_rng(0))
    ds.add_annotations(
        [{"kind": "box", "label": "person", "start_frame": f, "box": (x, y, x + w, y + h), "track_id": t}
         for f, t, x, y, w, h in zip(*(b[k].tolist() for k in ("frame", "track", "x", "y", "w", "h")))],
        meta.video_id,
    )  # fmt: skip
    rel, _ = ds.build()
    print(f"{b['frame'].size} box rows of one video ({meta.frame_count} frames); peak RSS above the import's start:")
    chosen = args.formats.split(",") if args.formats else list(MEMORY_FORMATS)
    for fmt, name in MEMORY_FORMATS.items():
        if fmt not in chosen:
            continue
        out = root / name
        export_labels(ds, fmt, out, release=rel)
        file = out / meta.video_id / "gt" / "gt.txt" if fmt == "mot" else out
        rows, mb, seconds = _measure(fmt, file, fresh(root / f"into-{fmt}", [meta]).path)
        size = file.stat().st_size / 2**20
        print(f"  {fmt:13s} {rows:>10} rows  file {size:8.1f} MB  peak {mb:8.1f} MB  "
              f"{mb / rows * 1e6:7.1f} MB per million rows  {seconds:6.1f} s")  # fmt: skip
    if {"coco-vid", "ytvis", "label-studio"} <= set(chosen):
        json_parse_memory(root, meta.frame_count)
    tracks = 1000
    frames = max(1, (10_000_000 if args.big else args.persist_rows) // tracks)
    long = VideoMetadata("v000", frames, {"num": 30, "den": 1}, 1920, 1080, sources=[{"uri": "/videos/long.mp4"}])
    file = root / "persist.xml"
    persisting_cvat(file, tracks, frames)
    rows, mb, seconds = _measure("cvat-video", file, fresh(root / "into-persist", [long]).path)
    print(f"  cvat persistence: {tracks} one-keyframe tracks over {frames} frames (file "
          f"{file.stat().st_size / 2**10:.0f} KB): {rows} rows  peak {mb:8.1f} MB  "
          f"{mb / rows * 1e6:7.1f} MB per million rows  {seconds:6.1f} s")  # fmt: skip
    if args.out is None:
        shutil.rmtree(root)


def main() -> None:
    import sys

    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child_import(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--child-parse":
        child_parse(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--videos", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--memory", action="store_true", help="peak RSS per million rows of each format's import")
    ap.add_argument("--persist-rows", type=int, default=1_000_000)
    ap.add_argument("--big", action="store_true", help="the CVAT persistence case with 10 million rows")
    ap.add_argument("--formats", default="", help="comma-separated formats to measure (default: all)")
    args = ap.parse_args()
    if args.memory:
        memory(args)
        return
    root = args.out or Path(tempfile.mkdtemp(prefix="bench_formats_"))
    root.mkdir(parents=True, exist_ok=True)
    metas = videos(args.videos, args.rows)
    rng = np.random.default_rng(0)
    files = root / "files"
    files.mkdir(exist_ok=True)
    coco: dict = {"categories": [{"id": 1, "name": "person"}], "videos": [], "images": [], "annotations": []}
    total = 0
    for vi, m in enumerate(metas, 1):
        b = boxes(m, rng)
        total += b["frame"].size
        with open(files / f"{m.video_id}.jsonl", "w") as fh:
            for f, t, x, y, w, h in zip(*(b[k].tolist() for k in ("frame", "track", "x", "y", "w", "h"))):
                fh.write(json.dumps({"kind": "box", "label": "person", "start_frame": f, "box": [x, y, x + w, y + h],
                                     "track_id": t}) + "\n")  # fmt: skip
        (files / m.video_id / "gt").mkdir(parents=True, exist_ok=True)
        with open(files / m.video_id / "gt" / "gt.txt", "w") as fh:
            for f, t, x, y, w, h in zip(*(b[k].tolist() for k in ("frame", "track", "x", "y", "w", "h"))):
                fh.write(f"{f + 1},{t + 1},{x},{y},{w},{h},1,1,1\n")
        first = len(coco["images"])
        coco["videos"].append({"id": vi, "name": m.video_id})
        coco["images"].extend({"id": first + k, "video_id": vi, "frame_id": k} for k in range(m.frame_count))
        coco["annotations"].extend(
            {
                "id": len(coco["annotations"]) + j,
                "image_id": first + f,
                "category_id": 1,
                "instance_id": t,
                "bbox": [x, y, w, h],
            }
            for j, (f, t, x, y, w, h) in enumerate(
                zip(*(b[k].tolist() for k in ("frame", "track", "x", "y", "w", "h")))
            )
        )
    (files / "coco.json").write_text(json.dumps(coco))
    del coco
    print(f"{total} boxes over {len(metas)} videos of {metas[0].frame_count} frames")

    ds = fresh(root / "jsonl", metas)
    t_jsonl = timed(lambda: [cli(["add-annotations", str(ds.path), m.video_id, str(files / f"{m.video_id}.jsonl")])
                             for m in metas])  # fmt: skip
    ds = fresh(root / "mot", metas)
    t_mot = timed(lambda: [import_labels(ds, "mot", files / m.video_id / "gt" / "gt.txt", video_id=m.video_id,
                                         label_map={1: "person"}) for m in metas])  # fmt: skip
    n_mot = len(ds.snapshot().table)
    ds = fresh(root / "coco", metas)
    t_coco = timed(lambda: import_labels(ds, "coco-vid", files / "coco.json"))
    n_coco = len(ds.snapshot().table)
    assert n_mot == n_coco == total, (n_mot, n_coco, total)
    rel, _ = ds.build()
    t_mot_out = timed(lambda: export_labels(ds, "mot", root / "out_mot", release=rel))
    t_coco_out = timed(lambda: export_labels(ds, "coco-vid", root / "out_coco.json", release=rel))
    print(f"JSON Lines add-annotations: {t_jsonl:7.2f} s  (1.00x)")
    print(f"MOT import:                 {t_mot:7.2f} s  ({t_mot / t_jsonl:.2f}x JSON Lines)")
    print(f"COCO-VID import:            {t_coco:7.2f} s  ({t_coco / t_jsonl:.2f}x JSON Lines)")
    print(f"MOT export:                 {t_mot_out:7.2f} s  ({t_mot_out / t_jsonl:.2f}x JSON Lines import)")
    print(f"COCO-VID export:            {t_coco_out:7.2f} s  ({t_coco_out / t_jsonl:.2f}x JSON Lines import)")
    if args.out is None:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
