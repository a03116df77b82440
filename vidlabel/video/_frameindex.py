"""The frame index of a video file: demuxed and checked against its first decoded frames, else decoded.

:func:`read_frame_index` (and :func:`index_and_cut`, which also says why a file
looks cut short) indexes a file in one pass over its packets where demuxing
alone gives the displayed frames, else by decoding every frame. From a full
decode, :func:`best_index` keeps the demuxed index where it gives the same
frames and :func:`untrusted_frames` lists the frames without a trustworthy
picture. The numbering rules are in :mod:`vidlabel.video._probe`.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vidlabel.errors import OptionError, VideoDecodeError, check_flag, check_path
from vidlabel.spec import FrameIndex, frame_ranges
from vidlabel.video._cut import ends_inside_transport_packet, mark_cut, truncation
from vidlabel.video._hash import content_hash
from vidlabel.video._scan import Scan, open_video, scan_packets

__all__ = [
    "VERIFY_FRAMES",
    "best_index",
    "decode_scan",
    "index_and_cut",
    "is_vfr",
    "read_frame_index",
    "untrusted_frames",
]

#: Decoded frames checked against a demuxed index before ``read_frame_index`` trusts it.
VERIFY_FRAMES = 32


def _scan_file(
    container: Any,
    stream: Any,
    *,
    decode: bool,
    limit: int | None = None,
    progress: bool = False,
    decode_first: int = 0,
) -> Scan:
    """:func:`~vidlabel.video._scan.scan_packets` with the signs of a cut file recorded on the scan
    (:func:`~vidlabel.video._cut.mark_cut`, in full where every frame was decoded)."""
    # A transport stream that ends inside a transport packet: its last video packet may be cut short unmarked.
    cut_last = ends_inside_transport_packet(container)
    scan = scan_packets(
        container, stream, decode=decode, cut_last=cut_last, limit=limit, progress=progress, decode_first=decode_first
    )
    mark_cut(container, stream, scan, whole=decode and (limit is None or len(scan.labels) < limit))
    return scan


def _index_from_decode(scan: Scan, chash: str | None, rate: Fraction | None = None) -> FrameIndex | None:
    labels = scan.labels
    if not labels:
        return None
    tb = {"num": scan.timebase.numerator, "den": scan.timebase.denominator}
    if any(v is None for v in labels) or len(set(labels)) != len(labels):
        # No usable timestamps: number frames by their position, one tick of 1 / rate each, so times are
        # position / rate (a raw stream has no others). A time base other than the stream's tells the
        # reader the pts are no decoder labels: it counts frames.
        if rate and 1 / rate != scan.timebase:
            tb = {"num": rate.denominator, "den": rate.numerator}
        return FrameIndex(tb, np.arange(len(labels)), _keys(scan.key_out), method="decode", content_hash=chash)
    arr = np.asarray(labels, dtype=np.int64)
    if arr.size < 2 or bool(np.all(np.diff(arr) > 0)):
        pts = arr
        if scan.errors:
            # Holes: after decode errors the decoder drops some frames (with or without an error
            # each); every packet up to the last decoded frame keeps its frame number.
            slots = np.unique(
                np.asarray(
                    [p for p, d, z in zip(scan.pts, scan.discard, scan.size) if p is not None and not d and z > 0],
                    dtype=np.int64,
                )
            )
            if np.isin(arr, slots).all():
                pts = slots[slots <= arr[-1]]
        keys = np.searchsorted(pts, arr[np.asarray(scan.key_out, dtype=bool)])
        return FrameIndex(tb, pts, np.union1d([0], keys), method="decode", content_hash=chash)
    return FrameIndex(tb, np.sort(arr), _keys(scan.key_out), method="decode", content_hash=chash, decoder_pts=arr)


def _keys(flags: list[bool]) -> np.ndarray:
    return np.union1d([0], np.flatnonzero(np.asarray(flags, dtype=bool))).astype(np.int64)


def _index_from_demux(
    scan: Scan, chash: str | None, *, file_size: int, has_b_frames: bool
) -> tuple[FrameIndex | None, list[str]]:
    """The demuxed index, and why it cannot be trusted (empty list: no reason found)."""
    problems: list[str] = []
    if not scan.pts:
        return None, ["no video packets"]
    if any(scan.discard):
        problems.append(f"{sum(scan.discard)} packets marked discard (an edit list hides frames)")
    if any(s == 0 for s in scan.size):
        problems.append(f"{sum(1 for s in scan.size if s == 0)} empty packets")
    if any(p is None for p in scan.pts):
        problems.append("packets without pts")
    if scan.demux_error:
        problems.append(f"demuxing stopped early: {scan.demux_error}")
    if any(e > file_size for e in scan.end) or scan.short_packets:
        problems.append("the last packets are cut short (truncated file)")
    keep = [i for i in range(len(scan.pts)) if not scan.discard[i] and scan.size[i] > 0 and scan.pts[i] is not None]
    pts = np.asarray([scan.pts[i] for i in keep], dtype=np.int64)
    if has_b_frames and pts.size > 2 and all(scan.pts[i] == scan.dts[i] for i in keep):
        problems.append("the codec reorders frames but the container gives pts == dts (no composition offsets)")
    order = np.sort(pts)
    if order.size > 1 and not bool(np.all(np.diff(order) > 0)):
        problems.append("duplicate pts")
        return None, problems
    if order.size == 0:
        return None, problems or ["no video packets with pts"]
    keyed = pts[np.asarray([scan.key[i] for i in keep], dtype=bool)]
    keys = np.union1d([0], np.searchsorted(order, keyed))
    tb = {"num": scan.timebase.numerator, "den": scan.timebase.denominator}
    return FrameIndex(tb, order, keys, method="demux", content_hash=chash), problems


def _same_frames(a: FrameIndex, b: FrameIndex) -> bool:
    return (
        a.timebase == b.timebase
        and np.array_equal(a.pts, b.pts)
        and np.array_equal(a.keyframes, b.keyframes)
        and a.decoder_pts is None
        and b.decoder_pts is None
    )


def decode_scan(path: Path, *, limit: int | None = None, progress: bool = False) -> tuple[Scan, dict[str, Any]]:
    container, stream = open_video(path)
    try:
        ctx = stream.codec_context
        info = {
            "codec": ctx.name,
            "pix_fmt": ctx.pix_fmt,
            "has_b_frames": bool(ctx.has_b_frames),
            "average_rate": stream.average_rate,
            "guessed_rate": stream.guessed_rate,
            "codec_rate": ctx.framerate,
            "width": ctx.width,
            "height": ctx.height,
        }
        scan = _scan_file(container, stream, decode=True, limit=limit, progress=progress)
    finally:
        container.close()
    return scan, info


def read_frame_index(
    path: str | os.PathLike[str], *, method: Literal["auto", "demux", "decode"] = "auto", hash_file: bool = True
) -> FrameIndex:
    """The frame index of a video file: pts of every displayed frame and the keyframes.

    ``"auto"`` demuxes the file without decoding (seconds even for long
    videos), then decodes the first :data:`VERIFY_FRAMES` frames to check
    that the decoder labels them as the index says. Where demuxing cannot give
    the displayed frames (an edit list hiding frames, empty packets, packets
    without pts, a truncated last packet, B-frames without composition offsets,
    or decoded labels that disagree) it builds the index by decoding the whole
    file and records ``method="decode"``. Packets that fail to decode in the
    middle of a file are not seen by demuxing; their frames keep their numbers
    either way, and the reader flags them when asked.

    Parameters
    ----------
    path : path-like
    method : {"auto", "demux", "decode"}
        ``"demux"`` never decodes (and raises where demuxing cannot tell the
        frames); ``"decode"`` always decodes the whole file.
    hash_file : bool
        Record the file's content hash in the index (reads the whole file once
        more; False leaves ``content_hash`` None).

    Returns
    -------
    FrameIndex
        With ``content_hash`` of the file.

    Raises
    ------
    VideoNotFoundError, NoVideoStreamError, VideoDecodeError
        If the file is missing, holds no video, or no frame decodes (or, with
        ``method="demux"``, demuxing cannot index it).
    OptionError
        (a ValueError) On an unknown ``method``, a ``hash_file`` that is not True or False, or a ``path``
        that is no path (None, a number, an open dataset).
    """
    p = Path(check_path(path, "read_frame_index", "video file"))
    if method not in ("auto", "demux", "decode"):
        raise OptionError(f"method must be 'auto', 'demux' or 'decode', got {method!r}")
    hash_file = check_flag("hash_file", hash_file)
    return index_and_cut(p, method=method, hash_file=hash_file)[0]


def index_and_cut(
    p: Path, *, method: Literal["auto", "demux", "decode"] = "auto", hash_file: bool = True
) -> tuple[FrameIndex, str | None]:
    """:func:`read_frame_index` (arguments checked), and why the file looks cut short (None where nothing
    says so), from the same pass: the signs :func:`probe` reads (:func:`~vidlabel.video._cut.truncation`),
    less the hole in the pts before the frames drained at the end where only demuxing ran. A reader without
    probe's record (``FrameReader(path)``) refuses the frames a reordering decoder gives out only when drained
    in such a file."""
    chash = content_hash(p) if hash_file else None
    if method != "decode":
        # One pass over the file: every packet demuxed, the first VERIFY_FRAMES frames also decoded.
        container, stream = open_video(p)
        try:
            has_b = bool(stream.codec_context.has_b_frames)
            scan = _scan_file(container, stream, decode=False, decode_first=VERIFY_FRAMES if method == "auto" else 0)
            cut = truncation(container, stream, scan)
        finally:
            container.close()
        index, problems = _index_from_demux(scan, chash, file_size=p.stat().st_size, has_b_frames=has_b)
        if method == "demux":
            if index is None or problems:
                raise VideoDecodeError(
                    f"cannot index {str(p)!r} by demuxing: {'; '.join(problems)}; use method='decode'", path=str(p)
                )
            return index, cut
        if index is not None and not problems:
            n = min(len(scan.labels), VERIFY_FRAMES, index.frame_count)
            if scan.errors == 0 and n > 0 and scan.labels[:n] == index.pts[:n].tolist():
                return index, cut
    scan, info = decode_scan(p)
    return best_index(p, scan, info, chash), scan.truncated


def best_index(p: Path, scan: Scan, info: dict[str, Any], chash: str | None) -> FrameIndex:
    """The index from a full decode pass; labelled ``"demux"`` when demuxing alone gives the same frames."""
    decoded = _index_from_decode(scan, chash, _stream_rate(info))
    if decoded is None:
        raise VideoDecodeError(
            f"no frame of {str(p)!r} decodes ({len(scan.pts)} video packets, {scan.errors} decode errors)",
            path=str(p),
        )
    demuxed, problems = _index_from_demux(
        scan, chash, file_size=p.stat().st_size, has_b_frames=bool(info["has_b_frames"])
    )
    return demuxed if demuxed is not None and not problems and _same_frames(demuxed, decoded) else decoded


def _stream_rate(info: dict[str, Any]) -> Fraction | None:
    """Frames per second the stream declares: the bitstream's (H.264/HEVC timing info; a raw stream's
    demuxer reports a default 25 as its average), else the average, else FFmpeg's guess; None if none."""
    for key in ("codec_rate", "average_rate", "guessed_rate"):
        rate = info.get(key)
        if rate:
            return Fraction(rate)
    return None


def untrusted_frames(scan: Scan, index: FrameIndex) -> tuple[tuple[int, int], ...]:
    """Frames of ``index`` without a trustworthy picture, by the reader's rule, from a full decode pass.

    A frame is untrusted when it comes out of the decoder after a decode error
    and before the frame of the next keyframe (:attr:`Scan.trusted`), or when
    no decoded frame fills its slot (a hole: its packet failed). Where the
    decoder's timestamps cannot number the frames (missing or repeated) the
    reader counts frames instead, and then trusts none after the first error.
    """
    labels = scan.labels
    n = index.frame_count
    if any(v is None for v in labels) or len(set(labels)) != len(labels):
        bad = np.asarray(scan.errors_before[:n], dtype=np.int64) > 0
        return frame_ranges(np.r_[bad, np.ones(n - bad.size, bool)])
    trusted = np.asarray(scan.trusted, dtype=bool)
    if index.decoder_pts is not None:  # frames numbered in decoding output order
        pos = np.arange(min(len(labels), n))
        trusted = trusted[: pos.size]
    else:
        arr = np.asarray(labels, dtype=np.int64)
        pos = np.searchsorted(index.pts, arr)
        inside = pos < n
        inside[inside] = index.pts[pos[inside]] == arr[inside]
        pos, trusted = pos[inside], trusted[inside]
    bad = np.ones(n, bool)  # a hole until a decoded frame fills the slot
    bad[pos] = False
    bad[pos[~trusted]] = True
    return frame_ranges(bad)


def is_vfr(index: FrameIndex) -> bool:
    """Whether a video has a variable frame rate: pts steps differing by more than 5% (and a tick) of the median."""
    if index.frame_count < 3:
        return False
    steps = np.diff(index.pts)
    med = float(np.median(steps))
    return bool(steps.max() - steps.min() > max(1.0, 0.05 * med))
