"""One pass over a video file's packets: the file opened, every packet demuxed, frames decoded as asked.

:func:`scan_packets` records what each packet and decoded frame showed in a
:class:`Scan` (pts, keyframes, sizes, decode errors, which frames follow one);
:mod:`vidlabel.video._cut` reads the signs of a cut file off it and
:mod:`vidlabel.video._frameindex` the frame index. The numbering rules are in
:mod:`vidlabel.video._probe`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from vidlabel.errors import NoVideoStreamError, VideoDecodeError, VideoNotFoundError

__all__ = ["Scan", "check_regular", "open_video", "rotation_of", "scan_packets", "with_last"]


def check_regular(p: Path) -> None:
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
    check_regular(p)
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
class Scan:
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


def scan_packets(
    container: Any,
    stream: Any,
    *,
    decode: bool,
    cut_last: bool = False,
    limit: int | None = None,
    progress: bool = False,
    decode_first: int = 0,
) -> Scan:
    """Every packet of the stream (and, with ``decode``, every frame, up to ``limit`` frames).

    Without ``decode``, ``decode_first`` frames are still decoded on the way (the head
    check of a demuxed index, in the same pass over the file). ``cut_last``: the file
    ends inside a transport stream packet (:func:`vidlabel.video._cut.ends_inside_transport_packet`),
    so its last video packet may be cut short unmarked and is taken as corrupt.
    """
    scan = Scan(timebase=Fraction(stream.time_base))
    bar = _progress_bar(container, stream) if progress else None
    packets = with_last(container.demux(stream)) if cut_last else ((p, False) for p in container.demux(stream))
    decoder = _Decoder(scan, stream.codec_context, bar)
    try:
        while True:
            try:
                packet, last = next(packets)
            except StopIteration:
                break
            except av.error.FFmpegError as err:
                # Unreadable data while demuxing: the file ends here.
                scan.demux_error = str(err)
                break
            flush = packet.size == 0 and packet.pts is None and packet.dts is None
            if not flush:
                _record_packet(scan, packet)
            if not decode and len(scan.labels) >= decode_first:
                continue
            # A packet the demuxer marks corrupt (cut short by the end of the file, damaged) may decode
            # without error into a half-concealed picture: it taints like a decode error.
            corrupt = not flush and (bool(packet.is_corrupt) or (cut_last and last))
            decoded = decoder.feed(packet, flush=flush, corrupt=corrupt)
            if decoded and limit is not None and len(scan.labels) >= limit:
                break
    finally:
        if bar is not None:
            bar.close()
    return scan


def _progress_bar(container: Any, stream: Any) -> Any:
    """A tqdm bar over the frames of ``stream``, named after the file."""
    from tqdm import tqdm

    return tqdm(
        total=stream.frames or None, unit="frame", desc=os.path.basename(container.name), leave=False, disable=None
    )


def _record_packet(scan: Scan, packet: Any) -> None:
    """Append what a demuxed (not flush) packet shows to ``scan``'s per-packet lists."""
    scan.pts.append(packet.pts)
    scan.dts.append(packet.dts)
    scan.key.append(bool(packet.is_keyframe))
    scan.size.append(int(packet.size))
    scan.discard.append(bool(packet.is_discard))
    scan.end.append(int(packet.pos) + int(packet.size) if packet.pos is not None and packet.pos >= 0 else -1)


class _Decoder:
    """Decodes a scan's packets and records each frame, with the reader's rule of trust.

    The rule (:mod:`vidlabel.video._decode`): after a decode error, a packet marked corrupt or a frame
    marked corrupt, frames are untrusted until the frame of a keyframe packet demuxed after it comes out
    of the decoder (the corrupt frame itself included).
    """

    def __init__(self, scan: Scan, ctx: Any, bar: Any) -> None:
        self.scan, self.ctx, self.bar = scan, ctx, bar
        self.tainted = False
        self.recover: int | None = None

    def feed(self, packet: Any, *, flush: bool, corrupt: bool) -> bool:
        """Decode one packet (``flush``: the final, empty one) and record the frames it gives out; False when
        it fails to decode."""
        scan = self.scan
        if corrupt:
            scan.corrupt += 1
            self.tainted, self.recover = True, None
        elif packet.is_keyframe and self.tainted and packet.pts is not None:
            self.recover = packet.pts
        try:
            frames = self.ctx.decode(packet)
        except av.error.FFmpegError:
            scan.errors += 1
            self.tainted, self.recover = True, None
            if not flush and not packet.is_discard:
                scan.lost.append(packet.pts)
            return False
        for frame in frames:
            self._frame(frame, drained=flush)
        return True

    def _frame(self, frame: Any, *, drained: bool) -> None:
        scan = self.scan
        if self.tainted and frame.key_frame and frame.pts is not None and frame.pts == self.recover:
            self.tainted = False
        # The decoder concealed errors in it (decode_error_flags, AV_FRAME_FLAG_CORRUPT).
        if frame.is_corrupt:
            scan.corrupt += 1
            self.tainted, self.recover = True, None
        scan.trusted.append(not self.tainted)
        scan.errors_before.append(scan.errors + scan.corrupt)
        _record_size(scan, frame)
        scan.labels.append(frame.pts)
        scan.key_out.append(bool(frame.key_frame))
        scan.drained.append(drained)
        if self.bar is not None:
            self.bar.update(1)


def _record_size(scan: Scan, frame: Any) -> None:
    """The first decoded frame's picture properties, else where the frames first change size."""
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
