"""Video metadata, content hash and frame index, read from the file with PyAV; where a video's file is.

Frame ``n`` of a video is the ``n``-th displayed frame: the ``n``-th frame a
full sequential decode gives, in presentation order. The container's own frame
count is never trusted (mkv and webm report 0, an mp4 edit list hides frames
the packets still hold, an AVI can carry empty packets, a truncated file keeps
the header of the whole one): :func:`probe` counts the frames that decode.

Numbering rules this module fixes (the reader in :mod:`vidlabel.frames` follows
them):

- Frames come from the decoder; each carries a timestamp (pts) that identifies
  it. The frame index lists the pts of every displayed frame in presentation
  order, and which frames decoding can start from (keyframes; frame 0 always
  counts as one, since decoding can start at the beginning of the file).
- A packet that fails to decode in the middle of the file leaves a hole: its
  frame keeps its number (taken from the packet's pts) and later frames are not
  renumbered. Packets that fail at the end of a truncated file are not frames:
  ``frame_count`` stops after the last frame that decodes.
- Untrusted frames (``VideoMetadata.untrusted_frames``): those that follow a
  decode error, a packet the demuxer marks corrupt (``packet.is_corrupt``: cut
  short by the end of the file, damaged) or a frame the decoder marks corrupt
  (``frame.is_corrupt``: errors concealed in it) before the frame of the next
  keyframe, that frame included; holes; and, in a file cut short (see
  ``_truncation``) whose decoder reorders frames, the frames given out only
  when the decoder is drained at the end, whose B-frames may have been cut.
- Streams whose decoder gives frames no pts or repeated pts (a raw H.264 or HEVC
  stream, a broken muxer) are numbered by position, in a time base of one frame
  of the stream's declared rate (so a frame's time is its number / rate, the only
  time such a stream has); the reader counts frames in them.
- Files whose decoder labels frames with a permutation of the container's pts
  (B-frames stored without composition offsets) are indexed in decoding output
  order, with the labels kept in :attr:`FrameIndex.decoder_pts`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path, PurePath
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import av
import numpy as np

from vidlabel.errors import (
    AnnotationError,
    NoVideoStreamError,
    OptionError,
    VideoDecodeError,
    VideoNotFoundError,
    check_flag,
    check_path,
)
from vidlabel.spec import FrameIndex, VideoMetadata, frame_ranges

__all__ = ["content_hash", "probe", "read_frame_index", "resolve_video_path", "video_path_candidates"]

#: Decoded frames checked against a demuxed index before ``read_frame_index`` trusts it.
VERIFY_FRAMES = 32

_HASH_CACHE: dict[tuple[str, int, int], str] = {}

# FFmpeg's names (av_color_range_name / av_color_space_name); unspecified -> None.
_COLOR_RANGES = {1: "tv", 2: "pc"}
_COLOR_SPACES = {
    0: "gbr", 1: "bt709", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 8: "ycgco",
    9: "bt2020nc", 10: "bt2020c", 11: "smpte2085", 12: "chroma-derived-nc", 13: "chroma-derived-c", 14: "ictcp",
}  # fmt: skip


def content_hash(path: str | os.PathLike[str]) -> str:
    """``"sha256:<hex>"`` of a file's bytes, read in 1 MiB blocks.

    The result is cached per process by (real path, size, modification time),
    so readers opened many times on one file hash it once.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    str
        ``"sha256:"`` followed by 64 hex digits.

    Raises
    ------
    VideoNotFoundError
        If the file does not exist.
    VideoDecodeError
        If the path is a folder, a device, a pipe or a socket (not a regular file).
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError as err:
        raise VideoNotFoundError(f"video file not found: {str(p)!r}", path=str(p)) from err
    _check_regular(p)
    key = (os.path.realpath(p), st.st_size, st.st_mtime_ns)
    cached = _HASH_CACHE.get(key)
    if cached is not None:
        return cached
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    digest = "sha256:" + h.hexdigest()
    _HASH_CACHE[key] = digest
    return digest


def _check_regular(p: Path) -> None:
    """Refuse a folder, a device (``/dev/zero``), a pipe or a socket: only a regular file has an end and a hash."""
    if p.is_dir():
        raise VideoDecodeError(f"{str(p)!r} is a folder, not a video file", path=str(p))
    if not p.is_file():
        raise VideoDecodeError(
            f"{str(p)!r} is not a regular file (a device, pipe or socket); give a video file", path=str(p)
        )


def open_video(path: str | os.PathLike[str]) -> tuple[Any, Any]:
    """Open a file with PyAV and pick its video stream.

    Returns ``(container, stream)``; the caller closes the container. Attached
    pictures (cover art) are not video streams. The decoder keeps PyAV's default
    threading, and no Python log callback is installed (together they were seen
    to hang on close).

    Raises
    ------
    VideoNotFoundError
        If the file does not exist.
    VideoDecodeError
        If the path is not a regular file (a folder, a device, a pipe) or the file is empty.
    NoVideoStreamError
        If FFmpeg cannot open the file as media (not a media file, or cut
        before its header) or it holds no video stream (audio only).
    """
    p = Path(path)
    if not p.exists():
        raise VideoNotFoundError(f"video file not found: {str(p)!r}", path=str(p))
    _check_regular(p)
    if p.stat().st_size == 0:
        raise VideoDecodeError(f"video file {str(p)!r} is empty (0 bytes)", path=str(p))
    try:
        container = av.open(str(p), mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError) as err:
        raise NoVideoStreamError(
            f"cannot open {str(p)!r} as media: not a media file FFmpeg knows, or cut before its header ({err})",
            path=str(p),
        ) from err
    streams = [s for s in container.streams.video if not (s.disposition & av.stream.Disposition.attached_pic)]
    if not streams or streams[0].codec_context is None:
        kinds = ", ".join(sorted({s.type for s in container.streams})) or "none"
        container.close()
        raise NoVideoStreamError(f"no video stream in {str(p)!r} (streams: {kinds})", path=str(p))
    return container, streams[0]


def rotation_of(frame: Any) -> int:
    """Display rotation of a decoded frame in degrees counter-clockwise, rounded to 0, 90, 180 or 270 (-90 kept)."""
    rot = round(float(getattr(frame, "rotation", 0) or 0) / 90.0) * 90
    rot = ((rot + 180) % 360) - 180  # -180..179: -90 stays -90, 270 becomes -90
    return 180 if rot == -180 else rot


@dataclass
class _Scan:
    """What one pass over a file's video packets found (decoding optional)."""

    timebase: Fraction
    pts: list[int | None] = field(default_factory=list)
    dts: list[int | None] = field(default_factory=list)
    key: list[bool] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    discard: list[bool] = field(default_factory=list)
    end: list[int] = field(default_factory=list)  # byte after the packet, -1 if unknown
    labels: list[int | None] = field(default_factory=list)  # decoded frames' pts, output order
    key_out: list[bool] = field(default_factory=list)
    lost: list[int | None] = field(default_factory=list)  # pts of packets that failed to decode
    trusted: list[bool] = field(default_factory=list)  # per decoded frame: no decode error since the last keyframe
    errors_before: list[int] = field(default_factory=list)  # per decoded frame: decode errors before its output
    errors: int = 0
    corrupt: int = 0  # packets the demuxer and frames the decoder marked corrupt
    first_frame: dict[str, Any] = field(default_factory=dict)
    demux_error: str | None = None
    short_packets: int = 0  # packets shorter than the container's index says (a cut file)
    drained: list[bool] = field(default_factory=list)  # per decoded frame: given out only by the final drain
    truncated: str | None = None  # why the file looks cut short (None: no sign of it)
    size_change: tuple[int, int, int] | None = (
        None  # (output position, width, height) of the first frame of another size
    )


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


def with_last(packets: Iterator[Any]) -> Iterator[tuple[Any, bool]]:
    """``(packet, last)`` for each packet of ``packets``: ``last`` is True for the last one that is not the
    final (flush) packet. One packet is read ahead; a demuxing error comes after the packets before it."""
    held = None
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            break
        except av.error.FFmpegError:
            if held is not None:
                yield held, True
            raise
        if packet.size == 0 and packet.pts is None and packet.dts is None:
            if held is not None:
                yield held, True
                held = None
            yield packet, False
            continue
        if held is not None:
            yield held, False
        held = packet
    if held is not None:
        yield held, True


def _scan(
    container: Any,
    stream: Any,
    *,
    decode: bool,
    limit: int | None = None,
    progress: bool = False,
    decode_first: int = 0,
) -> _Scan:
    """Every packet of the stream (and, with ``decode``, every frame, up to ``limit`` frames).

    Without ``decode``, ``decode_first`` frames are still decoded on the way (the head
    check of a demuxed index, in the same pass over the file).
    """
    scan = _Scan(timebase=Fraction(stream.time_base))
    ctx = stream.codec_context
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=stream.frames or None, unit="frame", desc=os.path.basename(container.name), leave=False, disable=None
        )
    # A transport stream that ends inside a transport packet: its last video packet may be cut short unmarked.
    cut_last = ends_inside_transport_packet(container)
    packets = with_last(container.demux(stream)) if cut_last else ((p, False) for p in container.demux(stream))
    # The reader's rule (vidlabel.video._decode): after a decode error, a packet marked corrupt or a frame
    # marked corrupt, frames are untrusted until the frame of a keyframe packet demuxed after it comes out
    # of the decoder (the corrupt frame itself included).
    tainted = False
    recover: int | None = None
    try:
        while True:
            try:
                packet, last = next(packets)
            except StopIteration:
                break
            except av.error.FFmpegError as err:  # unreadable data while demuxing: the file ends here
                scan.demux_error = str(err)
                break
            flush = packet.size == 0 and packet.pts is None and packet.dts is None
            if not flush:
                scan.pts.append(packet.pts)
                scan.dts.append(packet.dts)
                scan.key.append(bool(packet.is_keyframe))
                scan.size.append(int(packet.size))
                scan.discard.append(bool(packet.is_discard))
                scan.end.append(
                    int(packet.pos) + int(packet.size) if packet.pos is not None and packet.pos >= 0 else -1
                )
            if not decode and len(scan.labels) >= decode_first:
                continue
            # A packet the demuxer marks corrupt (cut short by the end of the file, damaged) may decode
            # without error into a half-concealed picture: it taints like a decode error.
            corrupt = not flush and (bool(packet.is_corrupt) or (cut_last and last))
            if corrupt:
                scan.corrupt += 1
                tainted, recover = True, None
            elif packet.is_keyframe and tainted and packet.pts is not None:
                recover = packet.pts
            try:
                frames = ctx.decode(packet)
            except av.error.FFmpegError:
                scan.errors += 1
                tainted, recover = True, None
                if not flush and not packet.is_discard:
                    scan.lost.append(packet.pts)
                continue
            for frame in frames:
                if tainted and frame.key_frame and frame.pts is not None and frame.pts == recover:
                    tainted = False
                if frame.is_corrupt:  # the decoder concealed errors in it (decode_error_flags, AV_FRAME_FLAG_CORRUPT)
                    scan.corrupt += 1
                    tainted, recover = True, None
                scan.trusted.append(not tainted)
                scan.errors_before.append(scan.errors + scan.corrupt)
                if not scan.first_frame:
                    scan.first_frame = {
                        "rotation": rotation_of(frame),
                        "width": frame.width,
                        "height": frame.height,
                        "format": frame.format.name,
                        "color_range": int(frame.color_range),
                        "colorspace": int(frame.colorspace),
                    }
                elif scan.size_change is None and (frame.width, frame.height) != (
                    scan.first_frame["width"],
                    scan.first_frame["height"],
                ):
                    scan.size_change = (len(scan.labels), frame.width, frame.height)
                scan.labels.append(frame.pts)
                scan.key_out.append(bool(frame.key_frame))
                scan.drained.append(flush)
                if bar is not None:
                    bar.update(1)
            if limit is not None and len(scan.labels) >= limit:
                break
    finally:
        if bar is not None:
            bar.close()
    scan.short_packets = _short_packets(container, stream, scan)
    if decode and (limit is None or len(scan.labels) < limit):
        scan.truncated = _truncation(container, stream, scan)
        if scan.truncated and ctx.has_b_frames:
            # The decoder held these frames back for reordering: in a cut file the frames meant to be shown
            # before them may be missing, so they may sit at the wrong number. Untrusted, like a corrupt frame.
            for i, drained in enumerate(scan.drained):
                if drained:
                    scan.trusted[i] = False
                    scan.errors_before[i] += 1
    return scan


def _truncation(container: Any, stream: Any, scan: _Scan) -> str | None:
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
    hole = _hole_at_the_end(scan, declared_step(stream))
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


def _hole_at_the_end(scan: _Scan, declared: int | None = None) -> str | None:
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


def _short_packets(container: Any, stream: Any, scan: _Scan) -> int:
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


def _index_from_decode(scan: _Scan, chash: str | None, rate: Fraction | None = None) -> FrameIndex | None:
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
    scan: _Scan, chash: str | None, *, file_size: int, has_b_frames: bool
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


def _decode_scan(path: Path, *, limit: int | None = None, progress: bool = False) -> tuple[_Scan, dict[str, Any]]:
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
        scan = _scan(container, stream, decode=True, limit=limit, progress=progress)
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
    says so), from the same pass: the signs :func:`probe` reads (:func:`_truncation`), less the hole in the
    pts before the frames drained at the end where only demuxing ran. A reader without probe's record
    (``FrameReader(path)``) refuses the frames a reordering decoder gives out only when drained in such a file."""
    chash = content_hash(p) if hash_file else None
    if method != "decode":
        # One pass over the file: every packet demuxed, the first VERIFY_FRAMES frames also decoded.
        container, stream = open_video(p)
        try:
            has_b = bool(stream.codec_context.has_b_frames)
            scan = _scan(container, stream, decode=False, decode_first=VERIFY_FRAMES if method == "auto" else 0)
            cut = _truncation(container, stream, scan)
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
    scan, info = _decode_scan(p)
    return _best_index(p, scan, info, chash), scan.truncated


def _best_index(p: Path, scan: _Scan, info: dict[str, Any], chash: str | None) -> FrameIndex:
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


def _untrusted_frames(scan: _Scan, index: FrameIndex) -> tuple[tuple[int, int], ...]:
    """Frames of ``index`` without a trustworthy picture, by the reader's rule, from a full decode pass.

    A frame is untrusted when it comes out of the decoder after a decode error
    and before the frame of the next keyframe (:attr:`_Scan.trusted`), or when
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


def _fps(index: FrameIndex | None, info: dict[str, Any], frame_count: int) -> Fraction:
    """Exact frame rate: from constant pts steps, else the stream's average rate, else the index's span."""
    if index is not None and index.frame_count > 1 and index.decoder_pts is None:
        steps = np.unique(np.diff(index.pts))
        if steps.size == 1:
            tb = Fraction(index.timebase["num"], index.timebase["den"])
            return 1 / (int(steps[0]) * tb)
    for key in ("average_rate", "guessed_rate"):
        rate = info.get(key)
        if rate:
            return Fraction(rate)
    if index is not None and index.frame_count > 1:
        span = int(index.pts[-1] - index.pts[0]) * Fraction(index.timebase["num"], index.timebase["den"])
        if span > 0:
            return Fraction(frame_count - 1) / span
    return Fraction(1)


def probe(
    path: str | os.PathLike[str],
    *,
    video_id: str | None = None,
    with_index: bool = True,
    progress: bool = False,
) -> VideoMetadata:
    """Metadata of a video file, from one demux-and-decode pass over it.

    Parameters
    ----------
    path : path-like
    video_id : str, optional
        Default: the file name without its extension.
    with_index : bool
        Attach the frame index (built from the same pass: ``method="demux"``
        when demuxing alone gives the same frames, else ``"decode"``).
    progress : bool
        Show a tqdm bar over the decoded frames.

    Returns
    -------
    VideoMetadata
        ``frame_count`` = frames that decode (holes from mid-file decode errors
        included, see the module notes); ``width``/``height`` displayed (rotation
        applied); exact ``fps``; ``rotation`` in degrees counter-clockwise;
        ``codec``, ``pix_fmt``, ``color_range``, ``color_space``, ``bit_depth``;
        ``content_hash``; ``sources=[{"uri": absolute path}]``;
        ``untrusted_frames``: inclusive ``(first, last)`` ranges of the frames
        :class:`~vidlabel.frames.FrameReader` refuses (``VideoDecodeError``):
        those that follow a decode error before the next keyframe, and holes;
        ``()`` when every frame decodes cleanly.

    Raises
    ------
    VideoNotFoundError, NoVideoStreamError, VideoDecodeError
        Missing file; no video stream or not a media file; empty file or no
        frame decodes; frames of more than one size (a stream that changes size in the middle: vidlabel
        reads one frame size per video).
    OptionError
        If ``with_index`` or ``progress`` is not True or False, or ``path`` is no path (None, a number).
    AnnotationError
        If ``video_id`` (or, without one, the file name's stem) is not a non-empty string without '/';
        refused before the file is read.
    """
    with_index, progress = check_flag("with_index", with_index), check_flag("progress", progress)
    p = Path(check_path(path, "probe", "video file"))
    vid = video_id if video_id is not None else p.stem
    if not isinstance(vid, str) or not vid or "/" in vid:
        raise AnnotationError(f"video_id must be a non-empty string without '/', got {vid!r} (probe of {str(p)!r})")
    chash = content_hash(p)
    scan, info = _decode_scan(p, progress=progress)
    index = _best_index(p, scan, info, chash)
    first = scan.first_frame
    if scan.size_change is not None:
        n, w, h = scan.size_change
        raise VideoDecodeError(
            f"the frames of {str(p)!r} change size: frames 0..{n - 1} are {first['width']}x{first['height']}, "
            f"frame {n} is {w}x{h} (coded sizes); vidlabel reads one frame size per video: re-encode it to one "
            f"size, e.g. ffmpeg -i IN -vf scale={first['width']}:{first['height']} -c:v libx264 -crf 18 OUT.mp4, "
            "or split it where the size changes",
            path=str(p),
        )
    rotation = int(first.get("rotation", 0))
    width, height = int(first.get("width") or info["width"]), int(first.get("height") or info["height"])
    if rotation % 180:
        width, height = height, width
    pix_fmt = first.get("format") or info["pix_fmt"]
    try:
        bit_depth: int | None = int(av.VideoFormat(pix_fmt).components[0].bits) if pix_fmt else None
    except (ValueError, IndexError):
        bit_depth = None
    fps = _fps(index, info, index.frame_count)
    return VideoMetadata(
        video_id=vid,
        frame_count=index.frame_count,
        fps={"num": fps.numerator, "den": fps.denominator},
        width=width,
        height=height,
        sources=[{"uri": os.path.abspath(p)}],
        content_hash=chash,
        rotation=rotation,
        codec=info["codec"],
        pix_fmt=pix_fmt,
        color_range=_COLOR_RANGES.get(int(first.get("color_range", 0))),
        color_space=_COLOR_SPACES.get(int(first.get("colorspace", 2))),
        bit_depth=bit_depth,
        frame_index=index if with_index else None,
        untrusted_frames=_untrusted_frames(scan, index),
    )


def roots_of(roots: object, name: str = "roots") -> tuple[str, ...]:
    """Video search folders as strings: one folder (a str or path) alone, or a sequence of them.

    Every function with a ``roots`` option (FrameSamples, export, ``Dataset.validate``, the readers) reads it
    through this, so ``roots="/data"`` is the one folder ``/data`` everywhere, never the folders ``/``, ``d``, ...

    Raises
    ------
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (None, bytes, a number, a list holding one);
        names the option and the value.
    """
    if isinstance(roots, (str, os.PathLike)):
        return (str(os.fspath(roots)),)
    hint = "a folder path or a list of folder paths"
    if isinstance(roots, (bytes, bytearray)) or not isinstance(roots, Iterable):
        raise OptionError(f"{name} must be {hint}, got {roots!r}")
    out: list[str] = []
    for r in roots:
        if not isinstance(r, (str, os.PathLike)) or isinstance(os.fspath(r), bytes):
            raise OptionError(f"{name} must be {hint}, got {r!r} among {roots!r}")
        out.append(str(os.fspath(r)))
    return tuple(out)


def resolve_video_path(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """The file of a registered video: its recorded path, else the same file under one of ``roots``.

    Under each root the recorded path's trailing parts are tried, longest
    first (``/old/data/cam1/a.mp4`` → ``ROOT/old/data/cam1/a.mp4``, ...,
    ``ROOT/cam1/a.mp4``, ``ROOT/a.mp4``).

    Parameters
    ----------
    meta : VideoMetadata
    roots : iterable of path-like
        Folders to search when the recorded path is stale.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    VideoNotFoundError
        Naming the video id and every path tried; a path that is a folder is said to be one.
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (:func:`roots_of`).
    """
    roots = list(roots_of(roots))
    path, tried = _find_video(meta, roots)
    if path is None:
        raise _not_found([(meta, tried)], roots=roots)
    return path


def resolve_video_paths(metas: Iterable[VideoMetadata], roots: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """:func:`resolve_video_path` of every video in ``metas``, in their order; looks for every file before it
    refuses, so that one error names every video whose file is missing, not only the first.

    Raises
    ------
    VideoNotFoundError
        For one video, :func:`resolve_video_path`'s; for several, one naming the first
        :data:`NAMED_MISSING` with the paths tried (every path for the first; for the others their recorded
        paths and how many more were tried under ``roots``) and counting the rest.
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (:func:`roots_of`).
    """
    roots = list(roots_of(roots))
    found: list[Path] = []
    missing: dict[str, tuple[VideoMetadata, list[str]]] = {}
    for meta in metas:
        path, tried = _find_video(meta, roots)
        if path is None:
            missing.setdefault(meta.video_id, (meta, tried))
        else:
            found.append(path)
    if missing:
        raise _not_found(list(missing.values()), roots=roots)
    return found


#: Videos a refusal for missing files names one by one (:func:`resolve_video_paths`); it counts the rest.
NAMED_MISSING = 10

_ROOTS_HINT = "(pass roots=[...], --roots on the command line, to search folders)"


def _roots_hint(roots: list[str | os.PathLike[str]], n_videos: int) -> str:
    """What to do about videos not found: pass roots, or, when roots were searched, look at the files or the
    roots (naming a root that is no folder here: a typo, or a folder of another machine)."""
    if not roots:
        return _ROOTS_HINT
    files = "the file is" if n_videos == 1 else "the files are"
    return f"(not found under the roots given either: check {files} there, or pass other roots{roots_not_here(roots)})"


def roots_not_here(roots: Iterable[str | os.PathLike[str]]) -> str:
    """``"; no folder at '/a', '/b'"`` for the ``roots`` that are no folder on this machine (a typo, or a folder of
    another machine), else ``""``: the words that end a refusal for files not found under them."""
    absent = [repr(str(r)) for r in roots if not Path(r).is_dir()]
    return f"; no folder at {', '.join(absent)}" if absent else ""


def _find_video(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]]) -> tuple[Path | None, list[str]]:
    """The file of a registered video, else None and the words for every path tried (a folder is said to be one:
    a folder where the file was registered is otherwise taken for a file gone missing)."""
    tried: list[str] = []
    for cand in video_path_candidates(meta, roots):
        if cand.is_file():
            return cand, tried
        tried.append(tried_words(cand))
    return None, tried


def tried_words(path: Path) -> str:
    """A path tried for a video's file, for a refusal: a folder there is said to be one (it is otherwise taken for
    a file gone missing)."""
    return f"{path} (a folder, not a video file)" if path.is_dir() else str(path)


def _not_found(
    missing: list[tuple[VideoMetadata, list[str]]], *, roots: list[str | os.PathLike[str]]
) -> VideoNotFoundError:
    """The error for videos whose files were found nowhere (each with the paths tried), the first named first;
    ``roots``: the folders searched too."""
    meta, tried = missing[0]
    recorded = [_uri_path(s["uri"]) for s in meta.sources]
    where = str(recorded[0]) if recorded else None
    if len(missing) == 1:
        if not recorded:
            return VideoNotFoundError(f"video {meta.video_id!r} has no recorded source path", video_id=meta.video_id)
        return VideoNotFoundError(
            f"file of video {meta.video_id!r} not found; tried: {', '.join(tried)} {_roots_hint(roots, 1)}",
            video_id=meta.video_id,
            path=where,
        )
    named = [_tried_words(m, t, every=i == 0) for i, (m, t) in enumerate(missing[:NAMED_MISSING])]
    more = len(missing) - len(named)
    return VideoNotFoundError(
        f"files of {len(missing)} videos not found: {'; '.join(named)}{f'; and {more} more' if more else ''} "
        f"{_roots_hint(roots, len(missing))}",
        video_id=meta.video_id,
        path=where,
    )


def _tried_words(meta: VideoMetadata, tried: list[str], *, every: bool) -> str:
    """One video of a refusal for missing files: its id and the paths tried (with ``every`` False, the recorded
    paths and how many were tried under the roots: the same trailing parts as for the first video named)."""
    n_recorded = len(meta.sources)
    if not n_recorded:
        return f"{meta.video_id!r} (no recorded source path)"
    shown = tried if every else tried[:n_recorded]
    under = len(tried) - len(shown)
    rest = f" and {under} path{'s' if under != 1 else ''} under the roots" if under else ""
    return f"{meta.video_id!r} (tried: {', '.join(shown)}{rest})"


def video_path_candidates(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]] = ()) -> Iterator[Path]:
    """Where a registered video's file may be, in the order :func:`resolve_video_path` tries them.

    The recorded paths, then under each root the recorded paths' trailing
    parts, longest first. Paths are yielded whether or not they exist. Trailing
    parts that hold ``..`` are not tried under a root: a path read from a
    dataset or release file never leaves the root it is looked for under
    (``/x/../../secret/v.mp4`` gave ``ROOT/../../secret/v.mp4``).

    Parameters
    ----------
    meta : VideoMetadata
        The registered video (its ``path`` and ``paths``).
    roots : path-like or iterable of path-like
        Folders to look under when the recorded paths are stale (:func:`roots_of`).
    """
    folders = roots_of(roots)
    recorded = [_uri_path(s["uri"]) for s in meta.sources]
    yield from recorded
    for root in folders:
        for p in recorded:
            parts = [part for part in PurePath(p).parts if part not in (PurePath(p).anchor, "")]
            for i in range(len(parts)):
                if ".." not in parts[i:]:
                    yield Path(root, *parts[i:])


def _uri_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def avcc_length(ctx: Any) -> int:
    """Size in bytes of the NAL length prefix of H.264 stored as in mp4/mkv (avcC extradata); 0 for anything else.

    Parameters
    ----------
    ctx : av.codec.context.CodecContext
        A decoder's codec context.
    """
    extradata = ctx.extradata
    if ctx.name != "h264" or not extradata or len(extradata) < 7 or extradata[0] != 1:
        return 0
    return (extradata[4] & 3) + 1


def h264_nonref(data: memoryview, length_size: int) -> bool:
    """True if a length-prefixed H.264 packet is well formed and holds only non-reference slices.

    Such a frame can be left undecoded: no other frame refers to it. A packet
    that does not parse (corrupt) is never called non-reference, so decoding it
    still reports its error.

    Parameters
    ----------
    data : memoryview
        The packet's bytes.
    length_size : int
        From :func:`avcc_length`; 0 gives False.
    """
    if not length_size:
        return False
    pos, end, slices = 0, len(data), 0
    while pos < end:
        if pos + length_size > end:
            return False
        size = int.from_bytes(data[pos : pos + length_size], "big")
        pos += length_size
        if size <= 0 or pos + size > end:
            return False
        header = data[pos]
        if header & 0x80:  # forbidden_zero_bit: not H.264
            return False
        kind = header & 31
        if kind == 1 and not header & 0x60:  # a slice with nal_ref_idc 0
            slices += 1
        elif kind not in (6, 9, 12):  # anything but SEI, delimiter, filler: keep it
            return False
        pos += size
    return slices > 0


def is_vfr(index: FrameIndex) -> bool:
    """Whether a video has a variable frame rate: pts steps differing by more than 5% (and a tick) of the median."""
    if index.frame_count < 3:
        return False
    steps = np.diff(index.pts)
    med = float(np.median(steps))
    return bool(steps.max() - steps.min() > max(1.0, 0.05 * med))
