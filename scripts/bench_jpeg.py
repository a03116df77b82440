"""JPEG store reads against decoding the same bytes alone, in one process.

For generated H.264 clips at 640x480 and 1280x720 (noise texture, pixels carry the frame number), exports every
frame with ``codec="jpeg:90"`` (HDF5), reads the stored JPEG bytes of every frame into memory, then measures on the
same random rows:

- single warm reads: ``simplejpeg.decode_jpeg`` of the bytes alone (and ``torchvision.io.decode_jpeg`` where
  torchvision is installed), ``FrameStore.read_rows`` of one row, ``StoreFrames[i]`` (torch samples); the three
  are interleaved read by read, so that load from other work on the machine falls on all alike. Prints reads/s
  and store / decode-alone (goal >= 0.95x);
- batches of 8 random rows: ``FrameStore.read_rows`` (decoded on its thread pool; the decoder releases the GIL)
  against the same 8 decoded alone one after the other on one thread (goal >= 1.6x on 2 cores).

Every frame read is checked against the frame number its pixels carry.

Usage: python scripts/bench_jpeg.py [--frames 120] [--reads 300] [--batches 40] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import machine, make_clip, number_of

from vidlabel import Dataset, export, probe
from vidlabel.store import open_store

SIZES = ((640, 480), (1280, 720))


def jpeg_store(workdir: Path, width: int, height: int, frames: int) -> Path:
    """A jpeg:90 store of every frame of a generated clip (made once per size and frame count)."""
    out = workdir / f"jpeg_store_{width}x{height}_{frames}"
    if out.exists():
        return out
    clip = make_clip(workdir / f"jpeg_clip_{width}x{height}_{frames}.mp4", frames, width, height)
    ds_path = workdir / f"jpeg_ds_{width}x{height}_{frames}"
    shutil.rmtree(ds_path, ignore_errors=True)
    ds = Dataset.create(ds_path)
    ds.add_labels(["a"])
    ds.add_video(probe(clip, video_id="clip"))
    ds.add_annotations(
        [{"kind": "box", "label": "a", "start_frame": n, "box": (8, 8, 40, 30)} for n in range(frames)], "clip"
    )
    ds.build()
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    export(ds, partial, codec="jpeg:90", frames="all", workers=1, progress=False)
    partial.rename(out)
    return out


def stored_bytes(store_dir: Path) -> list[bytes]:
    """The stored JPEG bytes of every row of the store's one frames file, by plain h5py."""
    import h5py

    (path,) = sorted((store_dir / "frames").glob("*.h5"))
    with h5py.File(path, "r") as f:
        frames = f["frames"]
        return [bytes(frames.id.read_direct_chunk((r, 0, 0, 0))[1]) for r in range(frames.shape[0])]


def decoders() -> dict[str, Callable[[bytes], np.ndarray]]:
    """The decode-alone references: simplejpeg, and torchvision.io.decode_jpeg where installed."""
    import simplejpeg

    out: dict[str, Callable[[bytes], np.ndarray]] = {
        "simplejpeg": lambda b: simplejpeg.decode_jpeg(b, colorspace="RGB")
    }
    try:
        import torch
        from torchvision.io import decode_jpeg
    except ImportError:
        return out

    def tv(b: bytes) -> np.ndarray:
        return decode_jpeg(torch.frombuffer(bytearray(b), dtype=torch.uint8)).permute(1, 2, 0).numpy()

    out["torchvision"] = tv
    return out


def single_reads(store_dir: Path, blobs: list[bytes], reads: int) -> dict[str, float]:
    """Reads/s of each way of getting one frame, interleaved read by read over the same random rows."""
    from vidlabel.torch_data import StoreFrames

    store = open_store(store_dir)
    samples = StoreFrames(store_dir)
    assert len(samples) == len(blobs)
    ways: dict[str, Callable[[int], np.ndarray]] = {
        f"{k} alone": (lambda r, d=d: d(blobs[r])) for k, d in decoders().items()
    }
    ways["FrameStore.read_rows"] = lambda r: store.read_rows("clip", [r])[0]
    ways["StoreFrames[i]"] = lambda r: samples[r]["image"].permute(1, 2, 0).numpy()
    for r in range(min(3, len(blobs))):  # warm: page cache, open files, threads
        for way in ways.values():
            assert number_of(way(r)) == r
    seconds = dict.fromkeys(ways, 0.0)
    for r in np.random.default_rng(0).integers(0, len(blobs), reads).tolist():
        for name, way in ways.items():
            t0 = time.perf_counter()
            image = way(r)
            seconds[name] += time.perf_counter() - t0
            if r % 16 == 0:
                assert number_of(image) == r, (name, r)
    store.close()
    return {name: reads / s for name, s in seconds.items()}


def batch_reads(store_dir: Path, blobs: list[bytes], batches: int) -> tuple[float, float, float]:
    """(one thread decoding alone, read_rows on its thread pool, read_rows / alone median of per-batch ratios)
    in frames/s over the same random batches of 8 rows, alternating batch by batch."""
    import simplejpeg

    store = open_store(store_dir)
    rng = np.random.default_rng(1)
    alone_s, store_s, ratios = 0.0, 0.0, []
    store.read_rows("clip", [0, 1])  # start the pool
    for _ in range(batches):
        rows = rng.choice(len(blobs), 8, replace=False).tolist()
        t0 = time.perf_counter()
        for r in rows:
            simplejpeg.decode_jpeg(blobs[r], colorspace="RGB")
        t1 = time.perf_counter()
        got = store.read_rows("clip", rows)
        t2 = time.perf_counter()
        assert [number_of(g) for g in got] == rows
        alone_s, store_s = alone_s + t1 - t0, store_s + t2 - t1
        ratios.append((t1 - t0) / (t2 - t1))
    store.close()
    n = 8 * batches
    return n / alone_s, n / store_s, statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    for width, height in SIZES:
        store_dir = jpeg_store(args.workdir, width, height, args.frames)
        blobs = stored_bytes(store_dir)
        label = f"{width}x{height} jpeg:90 ({statistics.mean(map(len, blobs)) / 1e3:.0f} KB a frame)"
        rates = single_reads(store_dir, blobs, args.reads)
        alone = rates["simplejpeg alone"]
        print(f"{label}: single warm reads, interleaved")
        for name, rate in rates.items():
            print(f"  {name:24s} {rate:8.0f}/s  {rate / alone:.2f}x simplejpeg alone")
        for name in ("FrameStore.read_rows", "StoreFrames[i]"):
            print(f"| JPEG store warm reads, {name} vs decoding the bytes alone, {width}x{height} | "
                  f"{rates[name] / alone:.2f}x | >= 0.95x |")  # fmt: skip
        one, pooled, ratio = batch_reads(store_dir, blobs, args.batches)
        print(f"  batches of 8: one thread decoding alone {one:.0f} frames/s, read_rows {pooled:.0f} frames/s")
        print(f"| JPEG store batch of 8 (read_rows, threads) vs one thread decoding alone, {width}x{height} | "
              f"{ratio:.2f}x (median of batches) | >= 1.6x on 2 cores |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
