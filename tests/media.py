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

    def box(self, n: int) -> tuple[float, float, float, float]:
        """xyxy of the moving box in frame n (coded orientation)."""
        return object_box(n, self.width, self.height)


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
) -> ClipTruth:
    """Encode a clip whose frame n shows number n; returns its truth.

    ``pts`` (in ``time_base``) makes a variable-frame-rate clip; by default
    frame n has pts n in time base 1/fps.
    """
    path = Path(path)
    time_base = time_base or Fraction(1) / fps
    pts = list(pts) if pts is not None else list(range(n_frames))
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = width, height
        stream.time_base = time_base
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
        stream.codec_context.time_base = time_base
        for n in range(n_frames):
            frame = av.VideoFrame.from_ndarray(frame_image(n, width, height), format="rgb24")
            frame.pts = pts[n]
            frame.time_base = time_base
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return ClipTruth(
        path=path, frame_count=n_frames, width=width, height=height, fps=fps, pts=tuple(pts),
        time_base=time_base, keyframe_interval=gop, codec=codec,
    )  # fmt: skip


def decode_all(path: Path) -> list[np.ndarray]:
    """Every frame of a clip by plain sequential PyAV decoding (RGB), the reference for exact reads."""
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
