"""Shared helpers of the bench_* scripts: the machine line, clips made with PyAV, alternating timings.

Every ratio a script prints is measured in the same run as its baseline, runs alternating
(baseline, candidate, baseline, ...), and reported as the median with the range over runs.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

BLOCK = 16


def machine() -> str:
    """'cpu model, N cores, M GiB, load a/b/c' of this machine, and whether Python caches bytecode (with
    ``PYTHONDONTWRITEBYTECODE`` set, every fresh process compiles vidlabel's modules from source as it imports
    them: about 10 ms of a fresh-process export's fixed cost on these VMs)."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    load = ", load {:.1f}/{:.1f}/{:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    pyc = ", no bytecode cache (PYTHONDONTWRITEBYTECODE)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""
    return f"{model}, {os.cpu_count()} cores{mem}{load}{pyc}{damon_reclaim()}"


def damon_reclaim() -> str:
    """', DAMON pageout of memory idle ~N s (at most M MB/s)' when a running kdamond pages out idle memory
    (proactive reclaim, as on issue 15's EPYC VM: a page-cached store left alone for about a minute is read
    partly from disk again); '' otherwise or where it cannot be read."""
    root = Path("/sys/kernel/mm/damon/admin/kdamonds")
    try:
        for kdamond in sorted(root.glob("[0-9]*")):
            if (kdamond / "state").read_text().strip() != "on":
                continue
            for ctx in sorted((kdamond / "contexts").glob("[0-9]*")):
                aggr_us = int((ctx / "monitoring_attrs/intervals/aggr_us").read_text())
                for scheme in sorted((ctx / "schemes").glob("[0-9]*")):
                    if (scheme / "action").read_text().strip() != "pageout":
                        continue
                    age = int((scheme / "access_pattern/age/min").read_text()) * aggr_us / 1e6
                    quota = int((scheme / "quotas/bytes").read_text()) / 2**20
                    reset_s = max(int((scheme / "quotas/reset_interval_ms").read_text()), 1) / 1000
                    return f", DAMON pageout of memory idle ~{age:.0f} s (at most {quota / reset_s:.0f} MB/s)"
    except (OSError, ValueError):
        return ""
    return ""


def synthetic_frame(n: int, texture: np.ndarray) -> np.ndarray:
    """A moving noise texture with the frame number as 16 blocks (16x16 px) at the top-left."""
    img = np.roll(texture, shift=(2 * n, 5 * n), axis=(0, 1)).copy()
    for k in range(16):
        r, c = divmod(k, 8)
        img[r * BLOCK : (r + 1) * BLOCK, c * BLOCK : (c + 1) * BLOCK] = 255 if (n >> k) & 1 else 0
    return img


def number_of(image: np.ndarray) -> int:
    """The frame number drawn by :func:`synthetic_frame`."""
    gray = image[: 2 * BLOCK, : 8 * BLOCK].astype(np.float32).mean(axis=2)
    n = 0
    for k in range(16):
        r, c = divmod(k, 8)
        if gray[r * BLOCK + 4 : (r + 1) * BLOCK - 4, c * BLOCK + 4 : (c + 1) * BLOCK - 4].mean() > 128:
            n |= 1 << k
    return n


def make_clip(path: Path, frames: int, width: int, height: int, gop: int = 250) -> Path:
    """An H.264 clip (noise texture, so that decode cost and compression look like real footage); cached."""
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (max(1, height // 16), max(1, width // 16), 3), dtype=np.uint8)
    texture = np.repeat(np.repeat(small, 16, axis=0), 16, axis=1)[:height, :width]
    yy, xx = np.mgrid[0:height, 0:width]
    texture = (texture // 2 + (64 + 63 * np.sin(xx / 37.0 + yy / 53.0))[..., None]).astype(np.uint8)
    options = {"crf": "23", "preset": "veryfast", "g": str(gop), "keyint_min": str(gop), "sc_threshold": "0"}
    return write_h264(path, (synthetic_frame(n, texture) for n in range(frames)), width, height, options)


def write_h264(path: Path, images: Iterable[np.ndarray], width: int, height: int, options: dict[str, str]) -> Path:
    """Encode ``images`` ((H, W, 3) uint8 RGB, 30 fps) with libx264 ``options`` into an MP4 at ``path``,
    written under a temporary name and renamed into place (a killed run leaves no half clip to reuse)."""
    partial = path.with_suffix(".partial" + path.suffix)
    with av.open(str(partial), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = options
        for n, image in enumerate(images):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = n
            frame.time_base = Fraction(1, 30)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    partial.rename(path)
    return path


def raw_decode(path: Path) -> int:
    """Plain PyAV: container.decode, to_ndarray('rgb24') on every frame; returns the frame count."""
    n = 0
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            frame.to_ndarray(format="rgb24")
            n += 1
    return n


def raw_decode_reused(path: Path) -> int:
    """Plain PyAV with one ``VideoReformatter`` reused for every frame (single-threaded), as FrameReader converts:
    ``to_ndarray(format="rgb24")`` makes a new swscale context per frame; returns the frame count."""
    from av.video.reformatter import VideoReformatter

    n = 0
    to_rgb = VideoReformatter()
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            to_rgb.reformat(frame, format="rgb24", threads=1).to_ndarray()
            n += 1
    return n


def minor_faults() -> int:
    """Minor page faults of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timed(fn: Callable[[], int]) -> tuple[float, float, float]:
    """(items/s wall, CPU ms per item over all threads, minor faults per item) of one call of ``fn``
    returning its item count."""
    t0, c0, f0 = time.perf_counter(), time.process_time(), minor_faults()
    n = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return n / wall, cpu * 1000 / max(n, 1), (minor_faults() - f0) / max(n, 1)


Run = tuple[float, float, float]


def alternate(fns: dict[str, Callable[[], int]], repeat: int) -> dict[str, list[Run]]:
    """Run each of ``fns`` ``repeat`` times, alternating; per name the list of (rate, CPU ms/item, faults/item)."""
    out: dict[str, list[Run]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            out[k].append(timed(fn))
    return out


def ratio_range(num: list[Run], den: list[Run]) -> str:
    """'median (min-max)' of the run-by-run rate ratios num[i] / den[i]."""
    r = [a[0] / b[0] for a, b in zip(num, den)]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"


def rates(runs: list[Run]) -> str:
    """'median/s (min-max), CPU ms, faults' of a list of runs (medians of CPU and faults per item)."""
    r = [x[0] for x in runs]
    c = statistics.median(x[1] for x in runs)
    f = statistics.median(x[2] for x in runs)
    return f"{statistics.median(r):,.0f}/s ({min(r):,.0f}-{max(r):,.0f}), {c:.2f} ms CPU, {f:.0f} faults"
