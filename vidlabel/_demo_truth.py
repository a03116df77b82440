"""The demo clip's truth (:mod:`vidlabel.demo`): the objects, marker and frame-number blocks of every frame,
drawn here, so that every target a pipeline returns can be checked exactly.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["BITS", "BLOCK", "DemoObject", "DemoTruth", "demo_truth", "read_frame_number"]

#: Side of the blocks that carry the frame number, in pixels.
BLOCK = 8
#: Bits of the frame number (two rows of eight blocks, least significant bit first).
BITS = 16

_BACKGROUND = 70
_BACKGROUND_MARKER_ON = 150


@dataclass(frozen=True)
class DemoObject:
    """One object of a demo frame, as the generator drew it.

    Attributes
    ----------
    label : str
    track_id : int
    kind : {"box", "mask"}
        How it is annotated: rectangles as boxes, the disc as a mask.
    box : (x0, y0, x1, y1) float
        Pixel corners, x1/y1 exclusive (for the disc: the bounding box of its mask).
    mask : (H, W) uint8 {0, 1}, optional
        The pixels of the disc (None for box objects).
    """

    label: str
    track_id: int
    kind: str
    box: tuple[float, float, float, float]
    mask: np.ndarray | None = None


def _triangle(t: int, lo: int, hi: int) -> int:
    """A value that bounces between ``lo`` and ``hi`` (inclusive), one step per ``t``."""
    span = hi - lo
    p = t % (2 * span)
    return lo + (p if p <= span else 2 * span - p)


@dataclass(frozen=True)
class DemoTruth:
    """Everything the demo clip is made of, frame by frame: what a correct pipeline must return.

    Parameters
    ----------
    frame_count : int
    width, height : int
        Frame size in pixels (even, as libx264 with yuv420p needs).
    fps : fractions.Fraction
    gop : int
        Keyframe interval of the encoded clip, in frames.
    annotate_every : int
        Objects are annotated on frames ``0, k, 2k, ...``.
    marker : (label, start_frame, end_frame)
        The time marker, ``end_frame`` inclusive; the background brightens on those frames.

    Raises
    ------
    ValueError
        On an empty clip, a size under 128x96 or odd, a marker outside the clip.
    """

    frame_count: int = 240
    width: int = 320
    height: int = 240
    fps: Fraction = Fraction(30)
    gop: int = 30
    annotate_every: int = 2
    marker: tuple[str, int, int] = ("lights_on", 90, 149)

    #: The label vocabulary, objects first, then the marker's label.
    labels: tuple[str, ...] = ("car", "person", "ball", "lights_on")

    def __post_init__(self) -> None:
        label, start, end = self.marker
        problems = [
            (self.frame_count < 1, f"frame_count must be >= 1, got {self.frame_count}"),
            (self.width < 128 or self.height < 96 or self.width % 2 or self.height % 2,
             f"size must be even and at least 128x96, got {self.width}x{self.height}"),
            (self.gop < 1 or self.annotate_every < 1,
             f"gop and annotate_every must be >= 1, got {self.gop} and {self.annotate_every}"),
            (not 0 <= start <= end < self.frame_count,
             f"marker frames must satisfy 0 <= start <= end < {self.frame_count}, got {start}..{end}"),
            (label != self.labels[-1], f"the marker's label must be {self.labels[-1]!r}, got {label!r}"),
        ]  # fmt: skip
        for bad, message in problems:
            if bad:
                raise ValueError(f"DemoTruth: {message}")

    @property
    def annotated_frames(self) -> list[int]:
        """Frames whose objects are annotated (the samples of ``frames="annotated"``)."""
        return list(range(0, self.frame_count, self.annotate_every))

    def marker_on(self, n: int) -> bool:
        """True when frame ``n`` lies in the marker's inclusive range."""
        _, start, end = self.marker
        return start <= n <= end

    def objects(self, n: int) -> list[DemoObject]:
        """The objects visible in frame ``n``, in drawing order (the disc last, on top)."""
        w, h = self.width, self.height
        top = 2 * BLOCK + 8  # objects stay below the frame-number blocks
        objs = []
        x = _triangle(3 * n, 0, w - 48)
        objs.append(DemoObject("car", 1, "box", (float(x), 40.0, float(x + 48), 68.0)))
        y = _triangle(2 * n, top, h - 44)
        x = _triangle(n, 60, 140)
        objs.append(DemoObject("person", 2, "box", (float(x), float(y), float(x + 16), float(y + 40))))
        if self.frame_count // 4 <= n < 3 * self.frame_count // 4:
            x = _triangle(2 * n, 150, w - 20)
            objs.append(DemoObject("person", 4, "box", (float(x), float(h - 60), float(x + 18), float(h - 16))))
        cx = 20.5 + _triangle(4 * n, 0, w - 41)
        cy = top + 14.5 + _triangle(3 * n, 0, h - top - 29 - 1)
        mask = _disc_mask(w, h, cx, cy, 14.0)
        objs.append(DemoObject("ball", 3, "mask", _mask_box(mask), mask))
        return objs

    def image(self, n: int) -> np.ndarray:
        """(height, width, 3) uint8 RGB picture of frame ``n``, as the generator encodes it."""
        level = _BACKGROUND_MARKER_ON if self.marker_on(n) else _BACKGROUND
        img = np.full((self.height, self.width, 3), level, dtype=np.uint8)
        for k in range(BITS):
            r, c = divmod(k, 8)
            img[r * BLOCK : (r + 1) * BLOCK, c * BLOCK : (c + 1) * BLOCK] = 255 if (n >> k) & 1 else 0
        for obj in self.objects(n):
            color = _COLORS[obj.track_id]
            if obj.mask is not None:
                img[obj.mask.astype(bool)] = color
            else:
                x0, y0, x1, y1 = (int(v) for v in obj.box)
                img[y0:y1, x0:x1] = color
        return img


_COLORS = {1: (220, 40, 40), 2: (40, 200, 60), 3: (50, 90, 235), 4: (235, 210, 40)}


@functools.lru_cache(maxsize=64)
def _drawn(truth: DemoTruth, n: int) -> np.ndarray:
    return truth.image(n).astype(np.int16)


def _mean_abs_diff(image: np.ndarray, truth: DemoTruth, n: int) -> float:
    """Mean absolute difference in 0-255 levels between ``image`` and the drawn frame ``n``."""
    return float(np.abs(image.astype(np.int16) - _drawn(truth, n)).mean())


def _disc_mask(width: int, height: int, cx: float, cy: float, radius: float) -> np.ndarray:
    """(height, width) uint8: 1 where the pixel centre lies within ``radius`` of (cx, cy)."""
    ys = np.arange(height, dtype=np.float64)[:, None] + 0.5
    xs = np.arange(width, dtype=np.float64)[None, :] + 0.5
    return (((xs - cx) ** 2 + (ys - cy) ** 2) <= radius**2).astype(np.uint8)


def _mask_box(mask: np.ndarray) -> tuple[float, float, float, float]:
    """xyxy bounding box of a mask's pixels, x1/y1 exclusive (worked out here, independently of vidlabel.geometry)."""
    ys, xs = np.nonzero(mask)
    return (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))


def demo_truth(**changes: Any) -> DemoTruth:
    """The demo clip's truth; keyword arguments change its fields (e.g. ``frame_count=60`` for a short clip).

    Parameters
    ----------
    **changes
        Fields of :class:`DemoTruth` to change from the defaults.
    """
    return DemoTruth(**changes)


def read_frame_number(image: np.ndarray) -> int:
    """The frame number written into an (H, W, 3) demo image by its 16 top-left blocks.

    Parameters
    ----------
    image : (H, W, 3) uint8
        A demo frame (full size, not a view).
    """
    gray = np.asarray(image, dtype=np.float32).mean(axis=2)
    n = 0
    for k in range(BITS):
        r, c = divmod(k, 8)
        inner = gray[r * BLOCK + 2 : (r + 1) * BLOCK - 2, c * BLOCK + 2 : (c + 1) * BLOCK - 2]
        if inner.mean() > 128:
            n |= 1 << k
    return n
