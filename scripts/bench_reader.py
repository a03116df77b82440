"""Benchmark the reader (spec: "What random access costs", "Reading a batch: read_many").

On a generated 1280x720 H.264 clip (3,000 frames, a keyframe every 250; its
pixels carry the frame number) and on ../shared/data/videos/vtest.avi, prints:

- raw PyAV sequential decode to RGB (frames/s) and FrameReader sequential (target >= 0.9x raw);
- random single reads: FrameReader vs a naive seek-then-decode baseline (target >= 1x), wrong frames of each;
- read_many of 8, 32 and 120 random frames vs the same frames one at a time (spec: 1.2x and 4.8x);
- frame index build time per 1,000 frames.

Usage: python scripts/bench_reader.py [--frames 3000] [--gop 250] [--reads 120] [--repeat 2] [--video PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from collections import deque
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidlabel.video._probe import probe, read_frame_index
from vidlabel.video._reader import FrameReader

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 32


def synthetic_frame(n: int, width: int, height: int, texture: np.ndarray) -> np.ndarray:
    """A moving texture with a moving box, and the frame number as 16 blocks of 32x32 at the top-left."""
    img = np.roll(texture, shift=(2 * n, 5 * n), axis=(0, 1)).copy()
    x = (7 * n) % (width - 120)
    img[300:400, x : x + 120] = (220, 40, 40)
    for k in range(16):
        r, c = divmod(k, 8)
        img[r * BLOCK : (r + 1) * BLOCK, c * BLOCK : (c + 1) * BLOCK] = 255 if (n >> k) & 1 else 0
    return img


def number_of(image: np.ndarray) -> int:
    gray = image[: 2 * BLOCK, : 8 * BLOCK].astype(np.float32).mean(axis=2)
    n = 0
    for k in range(16):
        r, c = divmod(k, 8)
        if gray[r * BLOCK + 6 : (r + 1) * BLOCK - 6, c * BLOCK + 6 : (c + 1) * BLOCK - 6].mean() > 128:
            n |= 1 << k
    return n


def make_clip(path: Path, frames: int, gop: int, width: int = 1280, height: int = 720) -> Path:
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (height // 16, width // 16, 3), dtype=np.uint8)
    texture = np.repeat(np.repeat(small, 16, axis=0), 16, axis=1)
    yy, xx = np.mgrid[0:height, 0:width]
    texture = (texture // 2 + (64 + 63 * np.sin(xx / 37.0 + yy / 53.0))[..., None]).astype(np.uint8)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"crf": "23", "preset": "veryfast", "g": str(gop), "keyint_min": str(gop), "sc_threshold": "0"}
        for n in range(frames):
            frame = av.VideoFrame.from_ndarray(synthetic_frame(n, width, height, texture), format="rgb24")
            frame.pts = n
            frame.time_base = Fraction(1, 30)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def raw_sequential(path: Path) -> tuple[float, float]:
    """Plain PyAV: container.decode, to_ndarray('rgb24') on every frame; (frames/s, CPU ms per frame)."""
    start, cpu = time.perf_counter(), time.process_time()
    n = 0
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            frame.to_ndarray(format="rgb24")
            n += 1
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1000 / n


def reader_sequential(path: Path, meta: Any) -> tuple[float, float]:
    """FrameReader.iter_frames over every frame, each image dropped at once as in the raw loop."""
    start, cpu = time.perf_counter(), time.process_time()
    with FrameReader(path, index=meta.frame_index) as reader:
        deque(reader.iter_frames(), maxlen=0)
        n = reader.frame_count
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1000 / n


class NaiveReader:
    """What most code does: seek to n / fps (backward, to a keyframe), decode until pts >= the target."""

    def __init__(self, path: Path) -> None:
        self.container = av.open(str(path))
        self.stream = self.container.streams.video[0]
        self.fps = self.stream.average_rate
        self.tb = self.stream.time_base
        self.decoded = 0

    def read(self, n: int) -> np.ndarray:
        target = int(Fraction(n) / self.fps / self.tb) + (self.stream.start_time or 0)
        self.container.seek(target, stream=self.stream, backward=True)
        last = None
        for frame in self.container.decode(self.stream):
            self.decoded += 1
            last = frame
            if frame.pts is not None and frame.pts >= target:
                break
        assert last is not None
        return last.to_ndarray(format="rgb24")

    def close(self) -> None:
        self.container.close()


def bench(path: Path, label: str, args: argparse.Namespace, identify: Any) -> None:
    print(f"\n== {label}: {path}")
    t0 = time.perf_counter()
    meta = probe(path)
    index = meta.frame_index
    assert index is not None
    spacing = np.diff(np.append(index.keyframes, meta.frame_count))
    print(
        f"{meta.frame_count} frames, {meta.width}x{meta.height} {meta.codec}, keyframe every {int(np.median(spacing))} "
        f"(max {int(spacing.max())}); probe (full decode) {time.perf_counter() - t0:.1f} s"
    )

    # Index build: clear the hash cache so hashing the file is counted too.
    sys.modules["vidlabel.video._hash"]._HASH_CACHE.clear()  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    built = read_frame_index(path)
    took = time.perf_counter() - t0
    print(
        f"index build ({built.method}, incl. content hash): {took * 1000 / meta.frame_count * 1000:.1f} ms "
        f"per 1,000 frames ({took:.2f} s)"
    )

    raw, ours = (0.0, np.inf), (0.0, np.inf)
    pairs = []
    for _ in range(args.repeat):  # interleaved pairs (the machine may be shared): best of each, median pair ratio
        r, o = raw_sequential(path), reader_sequential(path, meta)
        raw, ours = (max(raw[0], r[0]), min(raw[1], r[1])), (max(ours[0], o[0]), min(ours[1], o[1]))
        pairs.append(o[0] / r[0])
    print(
        f"sequential to RGB: raw PyAV {raw[0]:.1f} frames/s, FrameReader {ours[0]:.1f} frames/s "
        f"(best {ours[0] / raw[0]:.2f}x raw, median of {len(pairs)} interleaved pairs {np.median(pairs):.2f}x); "
        f"CPU per frame {raw[1]:.2f} ms vs {ours[1]:.2f} ms ({raw[1] / ours[1]:.2f}x)"
    )

    rng = random.Random(args.seed)
    frames = [rng.randrange(meta.frame_count) for _ in range(args.reads)]
    # Interleaved (naive, then ours, frame by frame) so both see the same load on a shared machine.
    naive = NaiveReader(path)
    reader = FrameReader(path, index=index)
    wall = {"naive": 0.0, "ours": 0.0}
    cpu = {"naive": 0.0, "ours": 0.0}
    wrong = {"naive": 0, "ours": 0}
    for n in frames:
        for name, read in (("naive", naive.read), ("ours", reader.read)):
            start, cpu_start = time.perf_counter(), time.process_time()
            image = read(n)
            wall[name] += time.perf_counter() - start
            cpu[name] += time.process_time() - cpu_start
            wrong[name] += identify(image, n)
    decoded_per_read = reader.stats["decoded"] / len(frames)
    naive_decoded = naive.decoded / len(frames)
    naive.close()
    reader.close()
    naive_fps, one_fps = len(frames) / wall["naive"], len(frames) / wall["ours"]
    print(
        f"random single reads ({len(frames)}): naive seek+decode {naive_fps:.1f} frames/s ({wrong['naive']} wrong, "
        f"{naive_decoded:.0f} decoded per read), "
        f"FrameReader {one_fps:.1f} frames/s ({wrong['ours']} wrong, {decoded_per_read:.0f} frames decoded per "
        f"read): {one_fps / naive_fps:.2f}x naive; CPU per read {cpu['naive'] * 1000 / len(frames):.0f} ms vs "
        f"{cpu['ours'] * 1000 / len(frames):.0f} ms ({cpu['naive'] / cpu['ours']:.2f}x)"
    )
    for size in (8, 32, 120):
        with FrameReader(path, index=index) as reader:
            start = time.perf_counter()
            images: list[np.ndarray] = []
            for i in range(0, len(frames), size):
                images += reader.read_many(frames[i : i + size])
            batch_fps = len(frames) / (time.perf_counter() - start)
        wrong = sum(identify(im, n) for im, n in zip(images, frames, strict=True))
        print(
            f"read_many batches of {size:>3}: {batch_fps:.1f} frames/s vs one at a time {one_fps:.1f} "
            f"= {batch_fps / one_fps:.1f}x ({wrong} wrong)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3000, help="frames of the generated clip")
    parser.add_argument("--gop", type=int, default=250, help="keyframe interval of the generated clip")
    parser.add_argument("--reads", type=int, default=120, help="random frames per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="sequential runs (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--video", type=Path, default=ROOT / ".." / "shared" / "data" / "videos" / "vtest.avi")
    args = parser.parse_args(argv)
    print(f"PyAV {av.__version__}, FFmpeg libavcodec {'.'.join(map(str, av.library_versions['libavcodec']))}")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic_720p.mp4"
        start = time.perf_counter()
        make_clip(path, args.frames, args.gop)
        print(f"generated {path.name}: {args.frames} frames in {time.perf_counter() - start:.0f} s")
        bench(path, "generated 1280x720 H.264", args, lambda image, n: number_of(image) != n)

    if args.video.exists():
        digests: list[bytes] = []
        with av.open(str(args.video)) as container:
            for frame in container.decode(video=0):
                digests.append(hashlib.blake2b(frame.to_ndarray(format="rgb24").tobytes(), digest_size=16).digest())
        bench(
            args.video,
            "real clip",
            args,
            lambda image, n: hashlib.blake2b(image.tobytes(), digest_size=16).digest() != digests[n],
        )
    else:
        print(f"\n(no {args.video}: real clip skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
