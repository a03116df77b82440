"""Run the reader over the tricky case files and the real clips; count wrong frames (zero expected).

Cases (``../shared/cases`` from the repository root by default): every frame
carries its number as 16 blocks of 16x16 pixels (cases/README.md); each file
is read in random order, with ``read_many`` and with ``iter_frames``, with the
probed frame index and without one, and compared with ``truth.json``.

Real clips (``../shared/data/videos``): a plain sequential PyAV decode gives the
reference picture of every frame (kept as digests); the reader then reads
random positions one at a time and as one ``read_many`` batch, with and without
the index, and every picture must equal the reference.

Cut files (issue 12): every clip of both folders is cut with Python at several
byte offsets (inside a packet, one byte into it, exactly at its end, and 1 MB),
each cut is probed and read whole (in order, then one by one in reverse), and
every frame the reader returns must equal the intact file's frame of that
number; the frames it refuses are counted as untrusted.

Usage: python scripts/check_cases.py [--cases DIR] [--videos DIR] [--positions 200] [--seed 0] [--cuts 8]
       [--frame-threads N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidlabel.errors import FrameOutOfRangeError, NoVideoStreamError, VideoDecodeError, VidlabelWarning
from vidlabel.video._probe import probe
from vidlabel.video._reader import FrameReader as _FrameReader

ROOT = Path(__file__).resolve().parent.parent


def read_id(image: np.ndarray, *, block: int = 16, nbits: int = 16, x0: int = 16, y0: int = 8) -> int:
    """The frame number drawn in a case file's pixels (cases/README.md)."""
    gray = image.astype(np.float32).mean(axis=2)
    n = 0
    for k in range(nbits):
        r, c = divmod(k, 8)
        y, x = y0 + r * block, x0 + c * block
        if gray[y + 2 : y + block - 2, x + 2 : x + block - 2].mean() > 128:
            n |= 1 << k
    return n


class Tally:
    """Counts of one file's checks."""

    def __init__(self) -> None:
        self.reads = 0
        self.wrong = 0
        self.flagged = 0
        self.warnings: list[str] = []
        self.failures: list[str] = []

    def fail(self, message: str) -> None:
        self.failures.append(message)


def read_all_ways(reader: FrameReader, frames: list[int], identify: Any, tally: Tally, seed: int) -> dict[int, Any]:
    """Read ``frames`` one at a time in random order, as one read_many and by iter_frames; id of each (or 'E')."""
    order = list(frames)
    random.Random(seed).shuffle(order)
    ids: dict[int, Any] = {}
    for n in order:
        tally.reads += 1
        try:
            ids[n] = identify(reader.read(n))
        except VideoDecodeError:
            ids[n] = "E"
    good = [n for n in order if ids[n] != "E"]
    for n, image in zip(good, reader.read_many(good), strict=True):
        tally.reads += 1
        if identify(image) != ids[n]:
            tally.fail(f"read_many frame {n} differs from read")
    reader.on_corrupt = "skip"
    seen = []
    for n, image in reader.iter_frames(frames):
        tally.reads += 1
        seen.append(n)
        if identify(image) != ids[n]:
            tally.fail(f"iter_frames frame {n} differs from read")
    if seen != sorted(good):
        tally.fail(f"iter_frames gave {len(seen)} frames, read gave {len(good)}")
    return ids


def check_case(path: Path, truth: dict[str, Any], seed: int) -> tuple[Tally, str]:
    tally = Tally()
    name = path.name
    if truth.get("video_streams") == 0:
        try:
            probe(path)
            tally.fail("audio-only file was probed without error")
        except NoVideoStreamError as err:
            return tally, f"NoVideoStreamError: {str(err).replace(str(path), path.name)}"
        return tally, ""
    meta = probe(path)
    index = meta.frame_index
    assert index is not None
    kw = {"block": 8, "nbits": 8, "x0": 1, "y0": 2} if "67x37" in name else {}
    rot = meta.rotation

    def identify(image: np.ndarray) -> int:
        return read_id(np.rot90(image, k=-(rot // 90)) if rot else image, **kw)

    expected_count = truth.get("frames")
    if expected_count is not None and meta.frame_count != expected_count:
        tally.fail(f"frame_count {meta.frame_count}, truth {expected_count}")
    if "size_wh" in truth and [meta.width, meta.height] != truth["size_wh"]:
        tally.fail(f"size {meta.width}x{meta.height}, truth {truth['size_wh']}")
    if "display_size_wh" in truth and [meta.width, meta.height] != truth["display_size_wh"]:
        tally.fail(f"displayed size {meta.width}x{meta.height}, truth {truth['display_size_wh']}")
    if "rotation_ccw_deg" in truth and meta.rotation != truth["rotation_ccw_deg"]:
        tally.fail(f"rotation {meta.rotation}, truth {truth['rotation_ccw_deg']}")
    if "keyframes" in truth and index.keyframes.tolist() != truth["keyframes"]:
        tally.fail(f"keyframes {index.keyframes.tolist()}, truth {truth['keyframes']}")
    tb = Fraction(index.timebase["num"], index.timebase["den"])
    if "pts_ms" in truth:
        got_ms = [round(int(p) * tb * 1000) for p in index.pts]
        if got_ms != truth["pts_ms"]:
            tally.fail("pts differ from truth pts_ms")
    if truth.get("pts_s") == "i/30":
        if [int(p) * tb for p in index.pts] != [Fraction(i, 30) for i in range(index.frame_count)]:
            tally.fail("pts differ from i/30")
    notes = [f"{meta.frame_count} frames, index {index.method}"]
    frames = list(range(meta.frame_count))
    for use_index in (True, False):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VidlabelWarning)
            with FrameReader(path, index=index if use_index else None) as reader:
                ids = read_all_ways(reader, frames, identify, tally, seed)
                # Beyond the end: a clear error, never a wrong frame.
                try:
                    reader.read(reader.frame_count)
                    tally.fail("reading past the end returned a frame")
                except FrameOutOfRangeError:
                    pass
                if "display_size_wh" in truth:
                    image = reader.read(0)
                    corner = image[:16, :16].reshape(-1, 3).mean(axis=0)
                    if not (corner[1] > 150 and corner[0] < 100 and corner[2] < 100):
                        tally.fail(f"green marker not at the displayed top-left (mean RGB {corner.round()})")
            tally.warnings += [str(w.message)[:80] for w in caught if not str(w.message).startswith("skipping")]
        returned = {n: i for n, i in ids.items() if i != "E"}
        flagged = sorted(n for n, i in ids.items() if i == "E")
        if name.startswith("B5"):
            # The rule we report: what PyAV displays (the edit list applied): frame n shows id n + 5.
            tally.wrong += sum(1 for n, i in returned.items() if i != n + 5)
            if use_index:
                notes.append(f"returns ids {min(returned.values())}..{max(returned.values())} (edit list applied)")
        else:
            tally.wrong += sum(1 for n, i in returned.items() if i != n)
        tally.flagged += len(flagged)
        if use_index and flagged:
            notes.append(f"flagged {flagged[0]}..{flagged[-1]} ({len(flagged)})")
        if use_index and flagged != np.flatnonzero(meta.untrusted_mask()).tolist():
            tally.fail(f"probe's untrusted_frames {meta.untrusted_frames} differ from the frames the reader refuses")
    if name.startswith("B9_corrupt"):
        if tally.flagged and not all(25 <= n <= 44 for n in flagged):
            tally.fail(f"flagged frames outside 25..44: {flagged}")
        if sorted(returned) != [*range(25), *range(45, 60)]:
            tally.fail("frames 0..24 and 45..59 should all be returned")
    if name == "B1_seek_gop_bframes.mp4":
        notes.append(check_mot(path, meta, tally))
    return tally, "; ".join(n for n in notes if n)


def check_mot(path: Path, meta: Any, tally: Tally) -> str:
    """The red box of mot_gt_seek_gop.txt is where the ground truth says, in the frames the reader returns."""
    gt = [line.split(",") for line in (path.parent / "mot_gt_seek_gop.txt").read_text().split()]
    with FrameReader(path, index=meta.frame_index) as reader:
        frames = [int(row[0]) - 1 for row in gt]
        images = reader.read_many(frames)
    bad = 0
    for row, image in zip(gt, images, strict=True):
        left, top, w, h = (int(float(v)) for v in row[2:6])
        x0, y0 = max(left - 1, 0), max(top - 1, 0)
        x1, y1 = min(left - 1 + w, image.shape[1]), min(top - 1 + h, image.shape[0])
        if x1 - x0 < 4:
            continue
        inner = image[y0 + 1 : y1 - 1, x0 + 1 : x1 - 1].reshape(-1, 3).mean(axis=0)
        if not (inner[0] > 180 and inner[1] < 80 and inner[2] < 80):
            bad += 1
    if bad:
        tally.fail(f"{bad} MOT boxes not on the red box")
    return f"MOT boxes ok ({len(gt)} rows)" if not bad else ""


def digest(image: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(image).tobytes(), digest_size=16).digest()


def sequential_digests(path: Path) -> tuple[list[bytes], int]:
    """Digest of every frame of a plain sequential PyAV decode (going on past decode errors)."""
    out: list[bytes] = []
    errors = 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for packet in container.demux(stream):
            try:
                out.extend(digest(f.to_ndarray(format="rgb24")) for f in stream.decode(packet))
            except av.error.FFmpegError:
                errors += 1
    return out, errors


def check_clip(path: Path, positions: int, seed: int) -> tuple[Tally, str]:
    tally = Tally()
    start = time.perf_counter()
    reference, errors = sequential_digests(path)
    meta = probe(path)
    if meta.frame_count != len(reference):
        tally.fail(f"probe counts {meta.frame_count} frames, sequential decode {len(reference)}")
    rng = random.Random(seed)
    frames = [rng.randrange(meta.frame_count) for _ in range(positions)]
    for use_index in (True, False):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", VidlabelWarning)
            with FrameReader(path, index=meta.frame_index if use_index else None) as reader:
                for n in frames:
                    tally.reads += 1
                    try:
                        tally.wrong += digest(reader.read(n)) != reference[n]
                    except VideoDecodeError:
                        tally.flagged += 1
                good = sorted(set(frames))
                for n, image in zip(good, reader.read_many(good), strict=True):
                    tally.reads += 1
                    tally.wrong += digest(image) != reference[n]
            tally.warnings += [str(w.message)[:80] for w in caught]
    index = meta.frame_index
    assert index is not None
    spacing = np.diff(np.append(index.keyframes, meta.frame_count))
    note = (
        f"{meta.codec} {meta.width}x{meta.height}, {errors} decode errors, index {index.method}"
        f"{' (decoder_pts)' if index.decoder_pts is not None else ''}, keyframe spacing max {int(spacing.max())}, "
        f"{time.perf_counter() - start:.0f} s"
    )
    return tally, note


def reader_digests(meta: Any, tally: Tally | None = None, *, random_reads: int = 0, seed: int = 0) -> dict[int, bytes]:
    """Digest of every frame a reader of ``meta`` returns in order (refused frames left out); then
    ``random_reads`` frames read one by one in random order (seeks and rewinds), which must agree."""
    out: dict[int, bytes] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)
        with FrameReader.for_video(meta, on_corrupt="skip") as reader:
            out = {n: digest(image) for n, image in reader.iter_frames()}
            rng = random.Random(seed)
            for n in rng.sample(range(reader.frame_count), min(random_reads, reader.frame_count)):
                try:
                    again = digest(reader.read(n))
                except VideoDecodeError:
                    if n in out and tally is not None:
                        tally.fail(f"frame {n}: iter_frames returned it, read refuses it")
                    continue
                if again != out.get(n) and tally is not None:
                    tally.fail(f"frame {n}: read differs from iter_frames")
    return out


def cut_offsets(path: Path, count: int, seed: int) -> list[int]:
    """``count`` video packets at random, each cut one byte in, half way and exactly at its end; and 1 MB."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        layout = [(int(p.pos), int(p.size)) for p in container.demux(stream) if p.size and p.pos is not None]
    size = path.stat().st_size
    picked = random.Random(seed).sample(layout, min(count, len(layout)))
    offsets = {o for pos, length in picked if pos >= 0 for o in (pos + 1, pos + length // 2, pos + length)}
    return sorted(o for o in offsets | {1_000_000} if 0 < o < size)


class CutTally:
    """Counts of one file's cut sweep."""

    def __init__(self) -> None:
        self.cuts = self.refused = self.frames = self.wrong = self.untrusted = 0
        self.failures: list[str] = []


def check_cuts(path: Path, count: int, seed: int, workdir: Path) -> CutTally:
    """Cut ``path`` at :func:`cut_offsets`; no frame read from a cut may differ from the intact file's frame."""
    tally = CutTally()
    reference = reader_digests(probe(path))
    data = path.read_bytes()
    for offset in cut_offsets(path, count, seed):
        cut = workdir / f"cut_{offset}{path.suffix}"
        cut.write_bytes(data[:offset])
        try:
            meta = probe(cut)
        except (NoVideoStreamError, VideoDecodeError):
            tally.refused += 1  # cut before the header, or before any frame: refused whole
            continue
        check = Tally()
        got = reader_digests(meta, check, random_reads=20, seed=seed + offset)
        tally.failures += [f"cut at {offset}: {f}" for f in check.failures]
        tally.cuts += 1
        tally.frames += len(got)
        tally.untrusted += meta.untrusted_count
        wrong = sorted(n for n, d in got.items() if reference.get(n) != d)
        if wrong:
            tally.wrong += len(wrong)
            tally.failures.append(f"cut at {offset}: frames {wrong[:8]} differ from the intact file")
        cut.unlink()
    return tally


def run_cuts(paths: list[Path], count: int, seed: int) -> int:
    """The cut sweep over ``paths``, printed as a table; returns the number of wrong frames and failed checks."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            rows.append((path.name, check_cuts(path, count, seed, Path(tmp))))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'cut file':<{width}}  {'cuts':>4}  {'refused':>7}  {'frames':>6}  {'wrong':>5}  {'untrusted':>9}")
    for name, t in rows:
        print(f"{name:<{width}}  {t.cuts:>4}  {t.refused:>7}  {t.frames:>6}  {t.wrong:>5}  {t.untrusted:>9}")
        for failure in t.failures:
            print(f"{'':<{width}}    ! {failure}")
    cuts = sum(t.cuts for _, t in rows)
    wrong = sum(t.wrong for _, t in rows)
    print(
        f"\ncut sweep: {len(rows)} files x {cuts} cut offsets read ({sum(t.refused for _, t in rows)} more refused "
        f"whole), {sum(t.frames for _, t in rows)} frames read, {wrong} wrong frames, "
        f"{sum(t.untrusted for _, t in rows)} untrusted frames found"
    )
    return wrong + sum(len(t.failures) for _, t in rows)


FRAME_THREADS = 0  # --frame-threads: every reader decodes with FFmpeg frame threading on this many threads


class FrameReader(_FrameReader):
    """The reader, with ``--frame-threads`` (``for_video`` too: it constructs ``cls``)."""

    def __init__(self, path: Any, **kwargs: Any) -> None:
        kwargs["frame_threads"] = kwargs.get("frame_threads") or FRAME_THREADS
        super().__init__(path, **kwargs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=ROOT / ".." / "shared" / "cases")
    parser.add_argument("--videos", type=Path, default=ROOT / ".." / "shared" / "data" / "videos")
    parser.add_argument("--positions", type=int, default=200, help="random positions per real clip")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cuts", type=int, default=8, help="packets to cut in per file (3 offsets each); 0: no sweep")
    parser.add_argument("--only-cuts", action="store_true", help="run the cut sweep alone")
    parser.add_argument("--frame-threads", type=int, default=0, help="FrameReader(frame_threads=N) for every read")
    args = parser.parse_args(argv)
    global FRAME_THREADS
    FRAME_THREADS = args.frame_threads

    rows: list[tuple[str, Tally, str]] = []
    truth = json.loads((args.cases / "truth.json").read_text())
    clips = sorted(p for p in args.videos.iterdir() if p.suffix.lower() in (".avi", ".mp4", ".mkv", ".mov", ".webm"))
    cut_paths = [args.cases / n for n in sorted(truth) if truth[n].get("video_streams") != 0] + clips
    if args.only_cuts:
        return 0 if run_cuts(cut_paths, args.cuts, args.seed) == 0 else 1
    for name in sorted(truth):
        tally, note = check_case(args.cases / name, truth[name], args.seed)
        rows.append((name, tally, note))
    for path in clips:
        tally, note = check_clip(path, args.positions, args.seed)
        rows.append((path.name, tally, note))

    width = max(len(r[0]) for r in rows)
    print(f"{'file':<{width}}  {'reads':>6}  {'wrong':>5}  {'flagged':>7}  {'checks':<6}  notes")
    total_wrong = failures = 0
    for name, tally, note in rows:
        ok = "ok" if not tally.failures else "FAIL"
        print(f"{name:<{width}}  {tally.reads:>6}  {tally.wrong:>5}  {tally.flagged:>7}  {ok:<6}  {note}")
        for failure in tally.failures:
            print(f"{'':<{width}}    ! {failure}")
        for warning in sorted(set(tally.warnings)):
            print(f"{'':<{width}}    warning: {warning}")
        total_wrong += tally.wrong
        failures += len(tally.failures)
    print(f"\n{sum(t.reads for _, t, _ in rows)} reads, {total_wrong} wrong frames, {failures} failed checks")
    cut_problems = run_cuts(cut_paths, args.cuts, args.seed) if args.cuts else 0
    return 0 if total_wrong == 0 and failures == 0 and cut_problems == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
