"""Benchmark the frame store: export speed, size and random-read speed per codec, in one run.

On generated 1280x720 H.264 clips (default four clips of 600 frames, a
keyframe every 250 frames; a panning noise texture with moving boxes, so the
decoded frames have realistic entropy), it prints per codec:

- export frames/s with ``workers=2`` over the four clips, against raw PyAV
  decoding of the same clips in one process (target >= 0.8x for the default codec),
  and the CPU time per frame of both (all processes, FFmpeg's threads included);
- bytes per stored frame;
- random single-frame reads/s through ``StoreFrames`` (the store read once into the page cache first: an
  uncompressed HDF5 unit larger than a quarter of the free memory is written with ``O_DIRECT``, so a
  just-exported store may be on disk only; the reads of the store just exported are printed too) against ``FrameReader``
  random reads (target >= 300x), against a folder of JPEG files like the
  spec's frame cache (target >= 5x for the default codec) and against a plain
  memcpy of the same bytes (target >= 0.6 for the uncompressed codec);

and a DataLoader over the default codec's store with 2 workers against 0
(target >= 1.6x), with controls: the slab pool off (torch's own hand-over),
an in-memory dataset and a CPU-only dataset.

Usage::

    python scripts/bench_store.py [--dir /tmp/vidlabel_bench] [--frames 600] [--clips 4] [--codecs none,lz4,...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

WIDTH, HEIGHT = 1280, 720
GOP = 250


def frame_picture(n: int, texture: np.ndarray) -> np.ndarray:
    """Frame ``n``: a panning noise texture, two moving boxes and the frame number in 16 blocks."""
    y0, x0 = (n * 3) % (texture.shape[0] - HEIGHT), (n * 5) % (texture.shape[1] - WIDTH)
    img = texture[y0 : y0 + HEIGHT, x0 : x0 + WIDTH].copy()
    bx, by = (40 + 7 * n) % (WIDTH - 200), (60 + 3 * n) % (HEIGHT - 150)
    img[by : by + 150, bx : bx + 200] = (200, 60, 40)
    cx = (WIDTH - 300 - 4 * n) % (WIDTH - 120)
    img[400:520, cx : cx + 120] = (40, 180, 90)
    for k in range(16):
        r, c = divmod(k, 8)
        img[r * 16 : (r + 1) * 16, c * 16 : (c + 1) * 16] = 255 if (n >> k) & 1 else 0
    return img


def encode(path: Path, n_frames: int, seed: int) -> None:
    import av

    rng = np.random.default_rng(seed)
    # smooth shading plus fine noise: after H.264 the frames compress losslessly about as real footage does
    yy, xx = np.mgrid[0 : HEIGHT * 2, 0 : WIDTH * 2]
    shade = 110 + 50 * np.sin(xx / 97.0 + seed) * np.cos(yy / 71.0)
    texture = np.clip(shade[..., None] + rng.normal(0, 9, (HEIGHT * 2, WIDTH * 2, 3)), 0, 255).astype(np.uint8)
    tmp = path.with_suffix(".part.mp4")
    with av.open(str(tmp), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = {"crf": "20", "preset": "veryfast", "g": str(GOP), "keyint_min": str(GOP),
                          "sc_threshold": "0", "bf": "0"}  # fmt: skip
        for n in range(n_frames):
            frame = av.VideoFrame.from_ndarray(frame_picture(n, texture), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    tmp.rename(path)


def disk_write_mb_s(folder: Path, size_mb: int = 1024) -> float:
    """Sequential write speed of the work folder's disk, flushed (fsync), in MB/s."""
    block = np.random.default_rng(0).integers(0, 256, 8 * 2**20, dtype=np.uint8).tobytes()
    path = folder / "disk_test.bin"
    t0 = time.perf_counter()
    with open(path, "wb") as fh:
        for _ in range(size_mb // 8):
            fh.write(block)
        fh.flush()
        os.fsync(fh.fileno())
    seconds = time.perf_counter() - t0
    path.unlink()
    return size_mb * 2**20 / 1e6 / seconds


def raw_decode_fps(paths: list[Path]) -> tuple[float, int, float]:
    """Plain PyAV sequential decoding to RGB of every clip, one process: (frames/s, frames, CPU ms per frame)."""
    import av

    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for path in paths:
        with av.open(str(path)) as container:
            for frame in container.decode(video=0):
                frame.to_ndarray(format="rgb24")
                n += 1
    return n / (time.perf_counter() - t0), n, (time.process_time() - c0) / n * 1e3


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (export workers), user + system."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed_rate(fn: Any, *, min_seconds: float = 2.0, max_calls: int = 100_000) -> float:
    """Calls per second of ``fn`` over at least ``min_seconds`` (after one warm-up call)."""
    fn()
    calls, t0 = 0, time.perf_counter()
    while calls < max_calls:
        fn()
        calls += 1
        if time.perf_counter() - t0 >= min_seconds:
            break
    return calls / (time.perf_counter() - t0)


def random_crop(sample: dict[str, Any]) -> dict[str, Any]:
    """A typical training transform done in the worker: a random 224x224 crop of the image (boxes left as is)."""
    import torch

    hwc = sample["image"].permute(1, 2, 0).numpy()  # the channels-last view's memory, no copy
    h, w = hwc.shape[:2]
    y, x = int(torch.randint(0, h - 224, ())), int(torch.randint(0, w - 224, ()))
    sample["image"] = torch.from_numpy(np.ascontiguousarray(hwc[y : y + 224, x : x + 224])).permute(2, 0, 1)
    return sample


class InMemoryFrames:
    """A map-style dataset of empty 720p frames: what torch's DataLoader alone costs (no store, no decoding)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        import torch

        image = torch.from_numpy(np.empty((HEIGHT, WIDTH, 3), np.uint8)).permute(2, 0, 1)
        return {"image": image, "video_id": "x", "frame_index": i}


class CpuBound:
    """A map-style dataset whose samples cost only CPU (a Python loop, no I/O): how much 2 workers can gain here."""

    def __len__(self) -> int:
        return 1600

    def __getitem__(self, i: int) -> dict[str, Any]:
        total = 0
        for k in range(20_000):
            total += k
        return {"video_id": "x", "frame_index": i, "value": total}


def loader_pair(dataset: Any, rounds: int = 3) -> tuple[float, float]:
    """(0 workers, 2 workers) samples/s: the best of ``rounds`` alternating runs of each, so that a burst of
    other work on the machine (disk writeback after an export, another job) does not pick the winner."""
    zero, two = 0.0, 0.0
    for _ in range(rounds):
        zero = max(zero, loader_rate(dataset, 0))
        two = max(two, loader_rate(dataset, 2))
    return zero, two


def loader_rate(dataset: Any, workers: int, samples: int = 1600) -> float:
    """Samples/s of a DataLoader (batch 8, random sampler, collate_frames) after its first batch."""
    import torch
    from torch.utils.data import DataLoader

    from vidlabel.torch_data import collate_frames

    sampler = torch.utils.data.RandomSampler(dataset, num_samples=samples, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=workers, collate_fn=collate_frames)
    it = iter(loader)
    next(it)  # start-up (worker processes) not timed
    count, t0 = 0, time.perf_counter()
    for batch in it:
        count += len(batch["video_id"])
    return count / (time.perf_counter() - t0)


def checksum_cost(store_dir: Path, codec: str, *, seconds: float) -> str:
    """StoreFrames random single reads/s with CRC-32C verification (``verify_checksums=True``, the default)
    and without, on the same store in the same run (best of 3 alternating runs of each), and the CRC-32C
    of one stored frame's bytes alone."""
    import google_crc32c

    from vidlabel.torch_data import StoreFrames

    rng = np.random.default_rng(1)
    checked, unchecked = StoreFrames(store_dir), StoreFrames(store_dir, verify_checksums=False)
    n = len(checked)
    best = {True: 0.0, False: 0.0}
    for _ in range(3):
        for verify, frames in ((True, checked), (False, unchecked)):

            def read_one(frames: StoreFrames = frames) -> None:
                frames[int(rng.integers(n))]

            best[verify] = max(best[verify], timed_rate(read_one, min_seconds=seconds / 2))
    image = np.ascontiguousarray(checked[0]["image"].permute(1, 2, 0).numpy())
    crc_ms = 1e3 / timed_rate(lambda: google_crc32c.value(image), min_seconds=seconds / 2)
    return (
        f"{codec:>8}: StoreFrames random reads/s with CRC-32C verification (default) {best[True]:.0f}, without "
        f"{best[False]:.0f} ({best[True] / best[False]:.2f}x); CRC-32C of one {image.shape[1]}x{image.shape[0]} "
        f"frame's bytes {crc_ms:.3f} ms ({google_crc32c.implementation} implementation)"
    )


def page_cache(store: Path) -> None:
    """Read every file of ``store`` once, so that it is in the page cache."""
    for path in sorted(store.rglob("*")):
        if path.is_file():
            with path.open("rb", buffering=0) as fh:
                while fh.read(8 << 20):
                    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/vidlabel_bench", help="work folder (clips are kept and reused)")
    parser.add_argument("--frames", type=int, default=600, help="frames per clip (>= 600 for the report)")
    parser.add_argument("--clips", type=int, default=4)
    parser.add_argument("--codecs", default="none,lz4,zstd,gzip,png,jpeg")
    parser.add_argument("--format", default="hdf5", choices=["hdf5", "zarr"])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per read measurement")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import simplejpeg

    from vidlabel import Dataset, FrameReader, export, probe
    from vidlabel.store import DEFAULT_CODEC, open_store
    from vidlabel.torch_data import StoreFrames

    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    paths = []
    t0 = time.perf_counter()
    for i in range(args.clips):
        path = work / f"clip{i}_{args.frames}.mp4"
        if not path.exists():
            encode(path, args.frames, seed=i)
        paths.append(path)
    print(f"clips: {args.clips} x {args.frames} frames, {WIDTH}x{HEIGHT}, keyframe every {GOP} "
          f"(ready in {time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip

    ds_path = work / f"ds_{args.clips}x{args.frames}"
    shutil.rmtree(ds_path, ignore_errors=True)
    ds = Dataset.create(ds_path)
    ds.add_labels(["box"])
    for i, path in enumerate(paths):
        vid = f"clip{i}"
        ds.add_video(probe(path, video_id=vid))
        rows = [{"kind": "box", "label": "box", "start_frame": n,
                 "box": ((40 + 7 * n) % (WIDTH - 200), (60 + 3 * n) % (HEIGHT - 150),
                         (40 + 7 * n) % (WIDTH - 200) + 200, (60 + 3 * n) % (HEIGHT - 150) + 150)}
                for n in range(args.frames)]  # fmt: skip
        ds.add_annotations(rows, vid)
    ds.build()
    total = args.clips * args.frames

    disk = disk_write_mb_s(work)
    print(f"disk: sequential write, flushed: {disk:.0f} MB/s", flush=True)
    raw_fps, n_raw, raw_cpu_ms = raw_decode_fps(paths)
    print(f"raw PyAV decode to RGB, one process: {raw_fps:.0f} frames/s ({n_raw} frames), "
          f"CPU {raw_cpu_ms:.2f} ms per frame (FFmpeg's threads included)", flush=True)  # fmt: skip

    meta0 = ds.video("clip0")
    rng = np.random.default_rng(0)
    with FrameReader.for_video(meta0) as reader:
        picks = rng.integers(0, args.frames, 12).tolist()
        t0 = time.perf_counter()
        for n in picks:
            reader.read(n)
        reader_rate = len(picks) / (time.perf_counter() - t0)
    print(f"FrameReader random single reads: {reader_rate:.1f} frames/s", flush=True)

    # the spec's frame cache: one JPEG file per frame
    jpeg_dir = work / "jpeg_folder"
    shutil.rmtree(jpeg_dir, ignore_errors=True)
    jpeg_dir.mkdir()
    with FrameReader.for_video(meta0) as reader:
        for n, image in reader.iter_frames(range(min(300, args.frames))):
            (jpeg_dir / f"{n:06d}.jpg").write_bytes(simplejpeg.encode_jpeg(image, quality=90, colorspace="RGB"))
    files = sorted(jpeg_dir.glob("*.jpg"))
    jpeg_bytes = sum(f.stat().st_size for f in files) / len(files)

    def read_jpeg() -> None:
        f = files[int(rng.integers(len(files)))]
        simplejpeg.decode_jpeg(f.read_bytes(), colorspace="RGB")

    jpeg_rate = timed_rate(read_jpeg, min_seconds=args.seconds)
    print(f"JPEG folder random reads: {jpeg_rate:.0f} frames/s ({jpeg_bytes / 1e3:.0f} KB per frame)", flush=True)

    pool = np.stack([frame_picture(k, np.zeros((HEIGHT * 2, WIDTH * 2, 3), np.uint8)) for k in range(32)])

    def memcpy() -> None:
        np.copyto(np.empty((HEIGHT, WIDTH, 3), np.uint8), pool[int(rng.integers(len(pool)))])

    memcpy_rate = timed_rate(memcpy, min_seconds=args.seconds)
    print(f"memcpy of one frame from memory: {memcpy_rate:.0f} frames/s", flush=True)

    rows = []
    checksum_lines: list[str] = []
    for codec in [c.strip() for c in args.codecs.split(",") if c.strip()]:
        out = work / f"store_{codec}"
        shutil.rmtree(out, ignore_errors=True)
        os.sync()  # start each export with the previous one's writes on disk
        cpu0 = cpu_seconds()
        report = export(ds, out, codec=codec, format=args.format, workers=2, progress=False)
        export_fps = report.frames_decoded / report.seconds
        export_cpu_ms = (cpu_seconds() - cpu0) / max(1, report.frames_decoded) * 1e3
        os.sync()  # reads are measured with the export's writes on disk (no writeback competing for the CPU)
        frames = StoreFrames(out)
        n = len(frames)

        def read_one(frames: StoreFrames = frames, n: int = n) -> None:
            frames[int(rng.integers(n))]

        cold = timed_rate(read_one, min_seconds=min(1.0, args.seconds))
        page_cache(out)
        print(
            f"  {codec}: StoreFrames random reads of the store just exported (before the page-cache read): {cold:.0f}/s"
        )
        rate = timed_rate(read_one, min_seconds=args.seconds)
        store = open_store(out)
        row = {
            "codec": report.codec,
            "export_fps": export_fps,
            "export_mb_s": export_fps * report.size_bytes / total / 1e6,
            "export_vs_raw": export_fps / raw_fps,
            "export_cpu_ms": export_cpu_ms,
            "bytes_per_frame": report.size_bytes / total,
            "reads": rate,
            "vs_reader": rate / reader_rate,
            "vs_jpeg": rate / jpeg_rate,
            "vs_memcpy": rate / memcpy_rate,
        }
        rows.append(row)
        print(f"{report.codec:>8}: export {export_fps:6.0f} frames/s ({row['export_vs_raw']:.2f}x raw, "
              f"{row['export_mb_s']:.0f} MB/s written, CPU {export_cpu_ms:.1f} ms/frame), "
              f"{row['bytes_per_frame'] / 1e3:7.0f} KB/frame, StoreFrames random reads {rate:6.0f}/s "
              f"({row['vs_reader']:.0f}x FrameReader, {row['vs_jpeg']:.1f}x JPEG folder, "
              f"{row['vs_memcpy']:.2f} of memcpy)", flush=True)  # fmt: skip
        checksum_lines.append(checksum_cost(out, report.codec, seconds=args.seconds))
        print(checksum_lines[-1], flush=True)
        store.close()
        if report.codec.split(":")[0] not in (DEFAULT_CODEC, "lz4"):  # kept for the DataLoader runs below
            shutil.rmtree(out, ignore_errors=True)

    loader_lines: list[str] = []
    runs = [
        (DEFAULT_CODEC, "full 720p frames", None),
        (DEFAULT_CODEC, "random 224x224 crop in the worker", random_crop),
        ("lz4", "random 224x224 crop in the worker", random_crop),
    ]
    for codec, label, transform in runs:
        store_dir = work / f"store_{codec}"
        if not (store_dir / "store.h5").exists() and not (store_dir / "zarr.json").exists():
            continue
        frames = StoreFrames(store_dir, transform=transform)
        zero, two = loader_pair(frames)
        loader_lines.append(
            f"DataLoader over StoreFrames ({codec}), {label}, batch 8, random sampler, best of 3 alternating runs: 0 workers "
            f"{zero:.0f} samples/s, 2 workers {two:.0f} samples/s: {two / zero:.2f}x (target >= 1.6x)"
        )
        print(loader_lines[-1], flush=True)
    if loader_lines:
        store_dir = work / f"store_{DEFAULT_CODEC}"
        os.environ["VIDLABEL_SHM_POOL"] = "0"  # workers inherit it: torch's own hand-over, a fresh segment per batch
        frames = StoreFrames(store_dir)
        zero, two = loader_pair(frames)
        del os.environ["VIDLABEL_SHM_POOL"]
        loader_lines.append(
            f"  control, the same full frames with vidlabel's shared-memory slab pool off (VIDLABEL_SHM_POOL=0): "
            f"0 workers {zero:.0f} samples/s, 2 workers {two:.0f} samples/s: {two / zero:.2f}x"
        )
        print(loader_lines[-1], flush=True)
        fake = InMemoryFrames(1600)
        zero, two = loader_pair(fake)
        loader_lines.append(
            f"  the hand-over alone: a dataset of empty 720p tensors (no store; collate stacks them into slabs): "
            f"0 workers {zero:.0f} samples/s, 2 workers {two:.0f} samples/s: {two / zero:.2f}x"
        )
        print(loader_lines[-1], flush=True)
        zero, two = loader_pair(CpuBound())
        loader_lines.append(
            f"  control, a CPU-only dataset (no I/O, no images): 0 workers {zero:.0f} samples/s, "
            f"2 workers {two:.0f} samples/s: {two / zero:.2f}x (the most 2 workers can give on this machine)"
        )
        print(loader_lines[-1], flush=True)
    shutil.rmtree(work / "store_lz4", ignore_errors=True)

    print()
    print(f"| codec | export frames/s (workers=2) | vs raw decode ({raw_fps:.0f}/s) | export CPU ms/frame (raw {raw_cpu_ms:.1f}) | "
          f"written MB/s (disk {disk:.0f}) | bytes/frame | "
          f"random reads/s | vs FrameReader ({reader_rate:.1f}/s) | vs JPEG folder ({jpeg_rate:.0f}/s) | "
          f"vs memcpy ({memcpy_rate:.0f}/s) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['codec']} | {r['export_fps']:.0f} | {r['export_vs_raw']:.2f}x | {r['export_cpu_ms']:.1f} | {r['export_mb_s']:.0f} | "
              f"{r['bytes_per_frame'] / 1e3:.0f} KB | "
              f"{r['reads']:.0f} | {r['vs_reader']:.0f}x | {r['vs_jpeg']:.1f}x | {r['vs_memcpy']:.2f} |")  # fmt: skip
    if loader_lines:
        print()
        print("\n".join(loader_lines))
    print()
    print("\n".join(checksum_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
