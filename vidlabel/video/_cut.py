"""Signs that a video file was cut short, read off a scan of its packets or off its frame index.

A file cut short keeps the header of the whole one: its last packets may be cut
(:func:`short_packets`), demuxing may stop on an error, the header or the
container's index may count more packets than there are, or the header's
duration may run past the last packet (:func:`truncation`). A cut on a packet
boundary leaves one sign only where the decoder reorders frames: a hole in the
pts before the frames the decoder gives out when drained at the end
(:func:`hole_at_the_end`, off probe's full decode; :func:`cut_tail`, off the
frame index of a reader without probe's record). Those drained frames may show a
later frame, so they are not trusted (:func:`mark_cut`).
"""

from __future__ import annotations

import os
from fractions import Fraction
from typing import Any

import numpy as np

from vidlabel.video._scan import Scan

__all__ = [
    "CUT_TAIL_FRAMES",
    "TS_PACKET_SIZES",
    "cut_tail",
    "declared_step",
    "ends_inside_transport_packet",
    "hole_at_the_end",
    "mark_cut",
    "short_packets",
    "truncation",
]

TS_PACKET_SIZES = (188, 192, 204)  # MPEG-TS, M2TS (a 4-byte timestamp first), TS with Reed-Solomon parity


def ends_inside_transport_packet(container: Any) -> bool:
    """An MPEG transport stream whose size is no whole number of its fixed-size packets: the file ends inside
    one, so its last PES (the last video packet, which the demuxer gives out at the end of the file with no
    length to check it against) may be cut short without the demuxer marking it corrupt."""
    if container.format.name != "mpegts":
        return False
    try:
        size = os.path.getsize(container.name)
    except OSError:
        return False
    return all(size % n for n in TS_PACKET_SIZES)


def mark_cut(container: Any, stream: Any, scan: Scan, *, whole: bool) -> None:
    """Record on ``scan`` the packets cut short and, with ``whole`` (every frame of the file decoded), why
    the file looks cut short (:func:`truncation`), distrusting the frames a reordering decoder gave out
    only when drained at the end of such a file."""
    scan.short_packets = short_packets(container, stream, scan)
    if not whole:
        return
    scan.truncated = truncation(container, stream, scan)
    if scan.truncated and stream.codec_context.has_b_frames:
        # The decoder held these frames back for reordering: in a cut file the frames meant to be shown
        # before them may be missing, so they may sit at the wrong number. Untrusted, like a corrupt frame.
        for i, drained in enumerate(scan.drained):
            if drained:
                scan.trusted[i] = False
                scan.errors_before[i] += 1


def truncation(container: Any, stream: Any, scan: Scan) -> str | None:
    """Why a fully scanned file looks cut short (None when nothing says so).

    Signs: a packet marked corrupt or cut short, demuxing stopped by an error,
    fewer packets than the container's header or index counts, a hole in the
    pts (at a constant frame rate) before the frames the decoder gives out when
    drained at the end, or (single stream files) a duration in the header beyond
    the last packet.
    """
    packets = sum(1 for z in scan.size if z > 0)
    if scan.demux_error:
        return f"demuxing stopped: {scan.demux_error}"
    if scan.short_packets or scan.corrupt:
        return "a packet is cut short or marked corrupt"
    if ends_inside_transport_packet(container):
        return "the file ends inside a transport stream packet"
    if stream.frames and packets < int(stream.frames):
        return f"{packets} video packets, the header counts {int(stream.frames)}"
    entries = sum(1 for e in stream.index_entries if e.size > 0)
    if entries > packets:
        return f"{packets} video packets, the container's index lists {entries}"
    known = np.unique(np.asarray([p for p in scan.pts if p is not None], dtype=np.int64))
    hole = hole_at_the_end(scan, declared_step(stream))
    if hole:
        return hole
    if len(container.streams) == 1 and container.duration and known.size > 1:
        step_us = float(np.median(np.diff(known)) * scan.timebase * 1_000_000)
        end_us = float(int(known[-1]) * scan.timebase * 1_000_000) + step_us
        # Compared with the end counted from 0: demuxers give the duration from 0 (matroska) or from the start.
        if float(container.duration) - end_us > 1.5 * step_us + 1000:
            return f"the header's duration ({container.duration} us) runs past the last packet"
    return None


def declared_step(stream: Any) -> int | None:
    """Ticks of ``stream``'s time base from one frame to the next at the frame rate it declares (the
    bitstream's, else FFmpeg's guess, else the average), None where it declares none or the step is not a
    whole number of ticks within 1%."""
    for rate in (getattr(stream.codec_context, "framerate", None), stream.guessed_rate, stream.average_rate):
        try:
            if rate and rate > 0 and stream.time_base:
                exact = 1 / (Fraction(rate) * Fraction(stream.time_base))
                step = round(exact)
                if step > 0 and abs(exact - step) <= max(1, step) * Fraction(1, 100):
                    return int(step)
        except (TypeError, ValueError, ZeroDivisionError):
            continue
    return None


def hole_at_the_end(scan: Scan, declared: int | None = None) -> str | None:
    """A pts step into a frame the final drain gave out that is wider than every other step of a constant
    frame rate: B-frames shown before the last frames kept were cut off (an MPEG-TS cut on a packet boundary
    drops them without a sign in the packets). The rate is the one every other step shows (two or more of
    them, all equal), or, with fewer (a file cut within its first frames), the stream's ``declared`` step
    where the steps there are equal to it. None when there is no such hole."""
    labels = scan.labels
    if not any(scan.drained) or any(v is None for v in labels):
        return None
    order = np.argsort(np.asarray(labels, dtype=np.int64), kind="stable")
    pts = np.asarray(labels, dtype=np.int64)[order]
    drained = np.asarray(scan.drained, dtype=bool)[order]
    steps = np.diff(pts)
    into_drained = drained[1:]
    body, tail = steps[~into_drained], steps[into_drained]
    if body.size >= 2 and np.all(body == body[0]) and body[0] > 0:
        step = int(body[0])
    elif declared and body.size < 2 and np.all(body == declared):
        step = declared
    else:
        return None
    if not np.any(tail > step):
        return None
    missing = int(np.sum(tail // step - 1))
    return f"the pts skip {missing} frame{'s' if missing != 1 else ''} among the last frames (B-frames cut off)"


def short_packets(container: Any, stream: Any, scan: Scan) -> int:
    """Packets that end at the end of the file yet are shorter than the container's index says."""
    try:
        file_size = os.path.getsize(container.name)
    except OSError:
        return 0
    last = [i for i, e in enumerate(scan.end) if e >= file_size]
    if not last:
        return 0
    sizes = {int(e.pos): int(e.size) for e in stream.index_entries if e.size > 0}
    return sum(1 for i in last if scan.size[i] < sizes.get(scan.end[i] - scan.size[i], 0))


#: Frames at the end of an index among which :func:`cut_tail` looks for a hole in the pts: more than a
#: decoder's reordering depth with two B-frames in a row or a B-pyramid of three.
CUT_TAIL_FRAMES = 4


def cut_tail(pts: np.ndarray, declared: int | None = None) -> frozenset[int]:
    """Frames of an index that follow a hole in the pts among its last :data:`CUT_TAIL_FRAMES` frames, where
    every earlier step is one frame of a constant rate (within one tick of rounding): in a video whose decoder
    reorders frames, the sign of a file cut short, whose B-frames shown before its last frames are gone, so a
    frame there may show a later one. Empty where there is no such hole (or too few frames to tell).

    :func:`hole_at_the_end` reads the same sign off probe's full decode (the frames the
    decoder gave out only when drained); a reader without probe's record uses this one. With fewer frames
    than that (a file cut within its first frames), the stream's ``declared`` step (ticks a frame) stands
    for the rate, where every earlier step equals it.
    """
    steps = np.diff(pts)
    if steps.size >= CUT_TAIL_FRAMES + 2:
        body, tail = steps[:-CUT_TAIL_FRAMES], steps[-CUT_TAIL_FRAMES:]
        low, high = int(body.min()), int(body.max())
    elif declared and steps.size >= 2:
        body, tail = steps[:0], steps[-CUT_TAIL_FRAMES:]
        low = high = declared
        if np.any(tail[:-1] < low - 1):  # steps shorter than a frame: not the declared rate
            return frozenset()
    else:
        return frozenset()
    if low <= 0 or high - low > 1:  # not a constant frame rate
        return frozenset()
    wide = np.flatnonzero(tail > high + max(1, low // 2))  # at least half a frame more: a frame is missing
    if not wide.size:
        return frozenset()
    return frozenset(range(pts.size - tail.size + int(wide[0]), pts.size))
