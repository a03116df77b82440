"""Test clips made with PyAV whose pixels encode their frame number, with the truth of each.

Every frame carries its number as 16 bits in 8x8 blocks, 2 rows of 8, from
the top-left corner (block k white when bit k is set, least significant bit
first). A filled box of a known colour moves along a known path below the
blocks, so boxes have exact ground truth from the generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

BLOCK = 8
BITS = 16
OBJECT_SIZE = (12, 10)  # (w, h) of the moving box
OBJECT_COLOR = (230, 40, 40)


@dataclass(frozen=True)
class ClipTruth:
    """What a correct reader must return for a generated clip."""

    path: Path
    frame_count: int
    width: int  # displayed
    height: int  # displayed
    fps: Fraction
    pts: tuple[int, ...]  # pts of displayed frame n, in time_base
    time_base: Fraction
    keyframe_interval: int | None
    rotation: int = 0  # degrees counter-clockwise as in the display matrix
    codec: str = "libx264"
    extra: dict = field(default_factory=dict)
    number_offset: int = 0  # displayed frame n shows number n + number_offset (an edit list hides the first ones)
    coded_size: tuple[int, int] | None = None  # (w, h) as encoded when it differs from the displayed size

    def box(self, n: int) -> tuple[float, float, float, float]:
        """xyxy of the moving box in frame n (coded orientation)."""
        w, h = self.coded_size or (self.width, self.height)
        return object_box(n, w, h)

    def number(self, n: int) -> int:
        """The number displayed frame ``n`` shows."""
        return n + self.number_offset

    def seconds(self, n: int) -> Fraction:
        """Presentation time of displayed frame ``n`` relative to the first encoded frame's pts 0."""
        return self.pts[n + self.number_offset] * self.time_base


def object_box(n: int, width: int, height: int) -> tuple[float, float, float, float]:
    """xyxy pixel corners of the moving box in frame ``n`` of a ``width`` x ``height`` clip."""
    w, h = OBJECT_SIZE
    span_x = max(1, width - w)
    x0 = (3 * n) % span_x
    y0 = 2 * BLOCK + 2 + (n % max(1, height - 2 * BLOCK - 2 - h))
    return (float(x0), float(y0), float(x0 + w), float(y0 + h))


def frame_image(n: int, width: int, height: int) -> np.ndarray:
    """(height, width, 3) uint8 RGB picture of frame ``n``: number blocks plus the moving box."""
    img = np.full((height, width, 3), 40 + (5 * n) % 60, dtype=np.uint8)
    for k in range(BITS):
        if (n >> k) & 1:
            r, c = divmod(k, 8)
            img[r * BLOCK : (r + 1) * BLOCK, c * BLOCK : (c + 1) * BLOCK] = 255
        else:
            r, c = divmod(k, 8)
            img[r * BLOCK : (r + 1) * BLOCK, c * BLOCK : (c + 1) * BLOCK] = 0
    x0, y0, x1, y1 = (int(v) for v in object_box(n, width, height))
    img[y0:y1, x0:x1] = OBJECT_COLOR
    return img


def read_frame_number(image: np.ndarray) -> int:
    """Decode the frame number from an (H, W, 3) image in coded orientation."""
    gray = np.asarray(image, dtype=np.float32).mean(axis=2)
    n = 0
    for k in range(BITS):
        r, c = divmod(k, 8)
        inner = gray[r * BLOCK + 2 : (r + 1) * BLOCK - 2, c * BLOCK + 2 : (c + 1) * BLOCK - 2]
        if inner.mean() > 128:
            n |= 1 << k
    return n


def encode_clip(
    path: Path,
    *,
    n_frames: int = 48,
    width: int = 64,
    height: int = 48,
    fps: Fraction = Fraction(30),
    codec: str = "libx264",
    gop: int | None = 12,
    bframes: int = 0,
    pts: list[int] | None = None,
    time_base: Fraction | None = None,
    rotation: int | None = None,
    container_options: dict[str, str] | None = None,
    pts_from_dts: bool = False,
) -> ClipTruth:
    """Encode a clip whose frame n shows number n; returns its truth.

    ``pts`` (in ``time_base``) makes a variable-frame-rate clip; by default
    frame n has pts n in time base 1/fps. Frames with a negative pts are hidden
    by the mp4 muxer's edit list: the truth's ``number_offset`` counts them.
    ``rotation`` writes a display matrix (degrees counter-clockwise; ``width``
    and ``height`` are the coded size, the truth's the displayed one).
    ``container_options`` go to the muxer (e.g. ``{"movflags": "+faststart"}``).
    ``pts_from_dts`` stores every packet with pts = dts (shifted to start at 0):
    a file with B-frames but no composition offsets, whose decoder labels frames
    with a permutation of the pts.
    """
    path = Path(path)
    time_base = time_base or Fraction(1) / fps
    pts = list(pts) if pts is not None else list(range(n_frames))
    held: list = []
    with av.open(str(path), "w", options=container_options or {}) as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = width, height
        stream.time_base = time_base
        if rotation is not None:
            stream.set_display_rotation(rotation)
        if codec == "libx264":
            stream.pix_fmt = "yuv420p"
            opts = {"crf": "12", "preset": "veryfast", "bf": str(bframes)}
            if gop is not None:
                opts.update({"g": str(gop), "keyint_min": str(gop), "sc_threshold": "0"})
            stream.options = opts
        elif codec == "ffv1":
            stream.pix_fmt = "yuv420p"
            if gop is not None:
                stream.codec_context.gop_size = gop
        else:
            stream.pix_fmt = "yuv420p"
            stream.codec_context.bit_rate = 4_000_000
            if gop is not None:
                stream.codec_context.gop_size = gop
            if bframes:
                stream.codec_context.max_b_frames = bframes
        stream.codec_context.time_base = time_base

        def mux(packets: list) -> None:
            if pts_from_dts:
                held.extend(packets)
            else:
                for packet in packets:
                    out.mux(packet)

        for n in range(n_frames):
            frame = av.VideoFrame.from_ndarray(frame_image(n, width, height), format="rgb24")
            frame.pts = pts[n]
            frame.time_base = time_base
            mux(stream.encode(frame))
        mux(stream.encode())
        if held:
            shift = -min(p.dts for p in held)
            for packet in held:
                packet.dts += shift
                packet.pts = packet.dts
                out.mux(packet)
    hidden = sum(1 for p in pts if p < 0) if path.suffix in (".mp4", ".mov") else 0
    displayed = (height, width) if rotation is not None and rotation % 180 else (width, height)
    return ClipTruth(
        path=path, frame_count=n_frames - hidden, width=displayed[0], height=displayed[1], fps=fps,
        pts=tuple(pts), time_base=time_base, keyframe_interval=gop, rotation=rotation or 0, codec=codec,
        number_offset=hidden, coded_size=(width, height) if displayed != (width, height) else None,
    )  # fmt: skip


def displayed_number(image: np.ndarray, rotation: int = 0) -> int:
    """The number a displayed frame shows: undo the display rotation, then :func:`read_frame_number`."""
    return read_frame_number(np.rot90(image, k=-(rotation // 90)) if rotation else image)


def encode_audio_only(path: Path, *, seconds: float = 0.5, rate: int = 16000) -> Path:
    """An AAC file with one audio stream and no video."""
    path = Path(path)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=rate)
        stream.layout = "mono"
        for i in range(int(seconds * rate) // 1024):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            frame.sample_rate = rate
            frame.pts = i * 1024
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def packet_layout(path: Path) -> list[tuple[int | None, int, int, bool]]:
    """(pts, byte offset, size, keyframe) of every video packet, in file order."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [(p.pts, int(p.pos), int(p.size), bool(p.is_keyframe)) for p in container.demux(stream) if p.size]


def corrupt_frames(src: Path, dst: Path, frames: list[int]) -> Path:
    """Copy ``src`` to ``dst`` with the payload of the packets of ``frames`` overwritten with 0xFF.

    ``frames`` are displayed frame numbers of a clip without hidden frames (the
    packet with the n-th smallest pts). The 4-byte length prefix of each packet
    is kept, so the container still parses and the decoder reports errors.
    """
    layout = packet_layout(src)
    by_pts = sorted(layout, key=lambda p: p[0] if p[0] is not None else -1)
    data = bytearray(Path(src).read_bytes())
    for n in frames:
        _, pos, size, _ = by_pts[n]
        data[pos + 4 : pos + size] = b"\xff" * (size - 4)
    Path(dst).write_bytes(bytes(data))
    return Path(dst)


def truncate_file(src: Path, dst: Path, fraction: float) -> Path:
    """Copy the first ``fraction`` of ``src``'s bytes to ``dst`` (a file cut short)."""
    data = Path(src).read_bytes()
    Path(dst).write_bytes(data[: int(len(data) * fraction)])
    return Path(dst)


def decode_all(path: Path) -> list[np.ndarray]:
    """Every frame of a clip by plain sequential PyAV decoding (RGB), the reference for exact reads."""
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def decode_tolerant(path: Path) -> tuple[list[tuple[int, np.ndarray]], int]:
    """Plain sequential PyAV decoding that goes on past decode errors.

    Returns ``([(pts, rgb image in coded orientation), ...], number_of_errors)``
    in decoding output order.
    """
    frames: list[tuple[int, np.ndarray]] = []
    errors = 0
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for packet in container.demux(stream):
            try:
                decoded = stream.decode(packet)
            except av.error.FFmpegError:
                errors += 1
                continue
            frames.extend((f.pts, f.to_ndarray(format="rgb24")) for f in decoded)
    return frames, errors
