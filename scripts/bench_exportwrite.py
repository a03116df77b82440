"""Export ``--frames all`` (codec none, HDF5) against its limits: raw decode and a plain sequential
write of the same frame bytes to the same folder, all measured in this run.

Per size (generated H.264 clips, noise texture), each measurement in a fresh process, runs alternating:

- ``raw``: plain PyAV ``container.decode`` + ``to_ndarray("rgb24")`` of every frame;
- ``write``/``write1``: the same frame bytes (decoded once beforehand by raw PyAV into a file, read into
  memory outside the timing) written sequentially to a new file in the export's folder with ``numpy.tofile``,
  frame by frame (``write``, as the export writes them) or in one call (``write1``), then ``os.fsync``;
  printed as the page-cache rate (``tofile`` alone) and the disk rate (``tofile`` + ``fsync``);
- ``export``: ``vidlabel.export(..., frames="all")`` into a fresh folder (default chunk_frames=1, 1 worker);
- ``export_chunkwise``: the export with an uncompressed unit that goes through the page cache written chunk by
  chunk with HDF5's ``write_direct_chunk`` (``vidlabel.store._hdf5.REGION_WRITE = False``) instead of in whole 2 MiB blocks of the file.

Each prints frames/s, CPU ms a frame (user + sys of the process, all threads) and minor faults a frame. The
row's ratio is export / min(raw, the faster write with fsync), run by run. Goal: >= 0.8x.

Usage: python scripts/bench_exportwrite.py [--repeat 3] [--sizes 1280x720,640x480] [--frames 300] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import machine, make_clip, raw_decode

SCRIPT = Path(__file__).resolve()


def _usage() -> tuple[float, float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


def _measure(fn: Any, frames: int, extra: dict[str, float] | None = None) -> dict[str, float]:
    u0, s0, f0 = _usage()
    t = time.perf_counter()
    n = fn() or frames
    wall = time.perf_counter() - t
    u1, s1, f1 = _usage()
    out = {"rate": n / wall, "user_ms": (u1 - u0) * 1000 / n, "sys_ms": (s1 - s0) * 1000 / n, "faults": (f1 - f0) / n}
    out.update(extra or {})
    return out


def dataset_for(workdir: Path, clip: Path) -> Path:
    from vidlabel import Dataset, probe

    path = workdir / f"ds_{clip.stem}"
    if not path.exists():
        ds = Dataset.create(path)
        ds.add_labels(["a"])
        meta = probe(clip, video_id="v")
        ds.add_video(meta)
        ds.add_annotations([{"kind": "box", "label": "a", "start_frame": 0, "box": (10, 10, 40, 30)}], "v")
        ds.build()
    return path


def frame_bytes(workdir: Path, clip: Path) -> Path:
    """The decoded frames of ``clip`` as one raw (T, H, W, 3) uint8 file (made once, by raw PyAV)."""
    import av

    path = workdir / f"{clip.stem}.rgb"
    if not path.exists():
        with av.open(str(clip)) as container, open(path.with_suffix(".partial"), "wb") as fh:
            for frame in container.decode(video=0):
                fh.write(frame.to_ndarray(format="rgb24").tobytes())
        path.with_suffix(".partial").rename(path)
    return path


def child(kind: str, clip: str, workdir: str, frames: int) -> dict[str, float]:
    work = Path(workdir)
    if kind == "raw":
        return _measure(lambda: raw_decode(Path(clip)), frames)
    if kind in ("write", "write1"):
        data = np.fromfile(frame_bytes(work, Path(clip)), dtype=np.uint8).reshape(frames, -1)
        out = work / "write_out" / "frames.bin"
        shutil.rmtree(out.parent, ignore_errors=True)
        out.parent.mkdir(parents=True)
        t0 = time.perf_counter()
        u0, s0, _ = _usage()
        with open(out, "wb") as fh:
            if kind == "write1":  # one call for all the bytes
                data.tofile(fh)
            else:  # frame by frame, as the export writes them
                for row in data:
                    row.tofile(fh)
            fh.flush()
            t1 = time.perf_counter()
            os.fsync(fh.fileno())
        t2 = time.perf_counter()
        u1, s1, _ = _usage()
        shutil.rmtree(out.parent, ignore_errors=True)
        return {"rate": frames / (t2 - t0), "cache_rate": frames / (t1 - t0), "fsync_s": t2 - t1,
                "user_ms": (u1 - u0) * 1000 / frames, "sys_ms": (s1 - s0) * 1000 / frames, "faults": 0.0}  # fmt: skip
    from vidlabel import Dataset, export

    if kind == "export_chunkwise":
        from vidlabel.store import _hdf5

        _hdf5.REGION_WRITE = False

    ds = Dataset.open(dataset_for(work, Path(clip)))
    out = work / "export_out"
    shutil.rmtree(out, ignore_errors=True)
    result = _measure(lambda: export(ds, out, frames="all", progress=False) and None, frames)
    shutil.rmtree(out, ignore_errors=True)
    return result


def run_child(*args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(SCRIPT), "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def med(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def describe(name: str, runs: list[dict[str, float]]) -> str:
    rates = [r["rate"] for r in runs]
    text = (
        f"  {name:7s} {statistics.median(rates):6,.0f}/s ({min(rates):,.0f}-{max(rates):,.0f}), CPU "
        f"{med(runs, 'user_ms') + med(runs, 'sys_ms'):.2f} ms/frame (user {med(runs, 'user_ms'):.2f}, "
        f"sys {med(runs, 'sys_ms'):.2f}), {med(runs, 'faults'):.0f} faults/frame"
    )
    if "cache_rate" in runs[0]:
        text += f"; tofile alone {med(runs, 'cache_rate'):,.0f}/s, fsync {med(runs, 'fsync_s'):.2f} s"
    return text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        print(json.dumps(child(argv[1], argv[2], argv[3], int(argv[4]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="1280x720,640x480")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench_export")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        clip = make_clip(args.workdir / f"clip_{size}_{args.frames}.mp4", args.frames, width, height)
        dataset_for(args.workdir, clip)
        frame_bytes(args.workdir, clip)
        runs: dict[str, list[dict[str, float]]] = {"raw": [], "write": [], "write1": [], "export": [],
                                                 "export_chunkwise": []}  # fmt: skip
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(run_child(kind, str(clip), str(args.workdir), str(args.frames)))
        print(f"{size}, {args.frames} frames:")
        for kind, rs in runs.items():
            print(describe(kind, rs))
        limits = [
            min(r["rate"], max(w["rate"], w1["rate"])) for r, w, w1 in zip(runs["raw"], runs["write"], runs["write1"])
        ]
        for kind, what in (("export", ""), ("export_chunkwise", " chunk by chunk (REGION_WRITE off)")):
            ratios = [e["rate"] / lim for e, lim in zip(runs[kind], limits)]
            vs_raw = [e["rate"] / r["rate"] for e, r in zip(runs[kind], runs["raw"])]
            print(
                f"| export --frames all (codec none){what} vs min(raw decode, tofile+fsync), {size} | "
                f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); vs raw decode "
                f"{statistics.median(vs_raw):.2f}x ({min(vs_raw):.2f}-{max(vs_raw):.2f}) | >= 0.8x |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
