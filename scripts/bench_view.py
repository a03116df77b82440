"""Key press to painted frame in ``vidlabel view``, 1280x720, from a store and from the video.

A generated H.264 clip (noise texture, the frame number in blocks, a keyframe every 30 frames) is registered
with three tracked boxes per frame, a model box and a marker, built, and exported with ``frames="all"``
(default codec). A viewer is started over the store and over the dataset (frames decoded from the video), and
a headless Chromium (the tests' machinery: Debian's /usr/bin/chromium through Playwright) opens each page and
presses ArrowRight again and again. The page itself measures, with ``performance.now()``, from the keydown
to the end of the task that drew the requested frame and its overlay ("drawn") and to the next animation
frame after it ("presented"), in three rhythms:

- no prefetch: the page fetches only the frame shown (``?prefetch=0``), each key asks the server for a frame it
  has not read: the whole path, server read, PNG or JPEG encoding, transfer, decoding and drawing;
- back to back: the next key as soon as the frame is painted (a held key; prefetch has no time to get ahead);
- paced: one key every 100 ms (a person stepping through frames; prefetch gets ahead).

Each is printed as the median (and 90th percentile) over the presses, beside the store's raw frame read
(``FrameStore.read_row`` of a frame not read before, median) measured in this run, and the ratio of the two.
Goal: <= 50 ms from a store.

Usage: python scripts/bench_view.py [--frames N] [--presses N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts._benchlib import machine, make_clip
from tests.view.browser import browser_missing, chromium, open_page, wait_frame

W, H = 1280, 720
#: (name, extra query, seconds between presses): no prefetch, each key waits for its frame; with prefetch.
RHYTHMS = (("no prefetch", "&prefetch=0", None), ("back to back", "", None), ("paced 100 ms", "", 0.1))


def build(folder: Path, frames: int) -> tuple[Path, Path]:
    """The dataset (a release built) and its store of every frame, made once per folder."""
    import vidlabel

    ds_path, store = folder / "ds", folder / "store"
    if (store / "store.h5").exists() or (store / "zarr.json").exists():
        return ds_path, store
    clip = make_clip(folder / f"view_{W}x{H}_{frames}.mp4", frames, W, H, gop=30)
    ds = vidlabel.Dataset.create(ds_path)
    ds.add_labels(["car", "person", "event"])
    ds.add_video(vidlabel.probe(clip, video_id="clip"))
    rows = []
    for n in range(frames):
        for t in range(3):
            x = (40 + 37 * t + 5 * n) % (W - 200)
            rows.append({"kind": "box", "label": "car" if t else "person", "start_frame": n, "track_id": t,
                         "box": (float(x), 200.0 + 120 * t, float(x + 160), 300.0 + 120 * t)})  # fmt: skip
        rows.append({"kind": "box", "label": "person", "start_frame": n, "box": (900.0, 100.0, 1100.0, 500.0),
                     "origin": "model", "confidence": 0.7})  # fmt: skip
    rows.append({"kind": "marker", "label": "event", "start_frame": frames // 4, "end_frame": frames // 2})
    ds.add_annotations(rows, "clip")
    ds.build()
    vidlabel.export(ds, store, frames="all", progress=False)
    return ds_path, store


def raw_reads(store_path: Path, frames: int) -> list[float]:
    """Seconds of each ``read_row`` of the store's frames in a fresh FrameStore (each frame read once)."""
    import vidlabel

    store = vidlabel.open_store(store_path)
    out = []
    for row in range(frames):
        t0 = time.perf_counter()
        store.read_row("clip", row)
        out.append(time.perf_counter() - t0)
    store.close()
    return out


def key_to_paint(context, url: str, presses: int, pace_s: float | None) -> list[dict]:
    """The page's own timings of ``presses`` ArrowRight presses from frame 0."""
    page = open_page(context, url + "#video=clip&n=0")
    wait_frame(page, 0)
    page.evaluate("window.vidlabelView.paints.length = 0")
    for n in range(1, presses + 1):
        start = time.perf_counter()
        page.keyboard.press("ArrowRight")
        wait_frame(page, n)
        if pace_s is not None:
            time.sleep(max(0.0, pace_s - (time.perf_counter() - start)))
    page.wait_for_function(f"window.vidlabelView.paints.length >= {presses}")
    paints = page.evaluate("window.vidlabelView.paints")
    page.close()
    assert [p["frame"] for p in paints] == list(range(1, presses + 1)), paints
    return paints


def stats(values: list[float]) -> str:
    return f"median {statistics.median(values):6.1f} ms, p90 {float(np.percentile(values, 90)):6.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=90, help="frames of the clip (default 90)")
    parser.add_argument("--presses", type=int, default=40, help="key presses per case (default 40)")
    parser.add_argument("--dir", type=Path, default=None, help="where to keep the clip, dataset and store")
    args = parser.parse_args()
    missing = browser_missing()
    if missing:
        print(f"bench_view: {missing}", file=sys.stderr)
        return 1
    import vidlabel

    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench_view_"))
    folder.mkdir(parents=True, exist_ok=True)
    presses = min(args.presses, args.frames - 1)
    print(f"machine: {machine()}")
    print(f"clip: {W}x{H}, {args.frames} frames, H.264 keyframe every 30; {presses} presses per case; {folder}")
    ds_path, store_path = build(folder, args.frames)
    raw_ms = statistics.median(raw_reads(store_path, args.frames)) * 1e3
    print(f"store raw frame read (FrameStore.read_row, first read of each frame): median {raw_ms:.2f} ms")
    with chromium(1600, 1000) as context:
        for label, path in (("store", store_path), ("video", ds_path)):
            for fmt in ("png", "jpeg"):
                for rhythm, query, pace in RHYTHMS:
                    # a fresh server each time: nothing read or encoded by the case before
                    with vidlabel.view(path) as server:
                        paints = key_to_paint(context, f"{server.url}?format={fmt}{query}", presses, pace)
                        drawn = [p["drawn_ms"] for p in paints]
                        shown = [p["presented_ms"] for p in paints]
                        ratio = statistics.median(drawn) / raw_ms
                        print(f"{label:5s} {fmt:4s} {rhythm:12s}: drawn {stats(drawn)} ({ratio:5.1f}x raw read); "
                              f"presented {stats(shown)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
