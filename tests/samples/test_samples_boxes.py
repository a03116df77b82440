"""Box formats: exact round trips (hypothesis), and FrameSamples' boxes converting back to the stored corners."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.samples.test_samples import make_release
from vidlabel import FrameSamples
from vidlabel.geometry import boxes_from_xyxy, boxes_to_xyxy
from vidlabel.spec import BOX_FORMATS


@st.composite
def frame_and_boxes(draw: st.DrawFn) -> tuple[int, int, np.ndarray]:
    """A frame size and boxes with corners on a quarter-pixel grid inside it (what annotation tools produce)."""
    width = draw(st.integers(1, 8192))
    height = draw(st.integers(1, 8192))
    n = draw(st.integers(0, 6))
    rows = []
    for _ in range(n):
        x0 = draw(st.integers(0, 4 * width - 1))
        y0 = draw(st.integers(0, 4 * height - 1))
        x1 = draw(st.integers(x0 + 1, 4 * width))
        y1 = draw(st.integers(y0 + 1, 4 * height))
        rows.append((x0 / 4, y0 / 4, x1 / 4, y1 / 4))
    return width, height, np.array(rows, dtype=np.float64).reshape(-1, 4)


@settings(max_examples=200, deadline=None)
@given(frame_and_boxes(), st.sampled_from(BOX_FORMATS))
def test_pixel_round_trip_is_exact(data: tuple[int, int, np.ndarray], box_format: str) -> None:
    _, _, boxes = data
    there = boxes_from_xyxy(boxes, box_format)
    assert np.array_equal(boxes_to_xyxy(there, box_format), boxes)
    # and through float32, as samples carry them (quarter pixels below 8192 fit float32 exactly)
    assert np.array_equal(boxes_to_xyxy(there.astype(np.float32), box_format), boxes)


@settings(max_examples=200, deadline=None)
@given(frame_and_boxes(), st.sampled_from(BOX_FORMATS))
def test_normalized_round_trip(data: tuple[int, int, np.ndarray], box_format: str) -> None:
    # Not exact in floating point (x / W * W can differ from x in the last bit), but within a few
    # float64 roundings of the frame size.
    width, height, boxes = data
    size = (width, height)
    there = boxes_from_xyxy(boxes, box_format, normalized=True, size=size)
    assert (there.min(initial=0) >= 0 and there.max(initial=0) <= 1 + 1e-12) or box_format != "xyxy"
    back = boxes_to_xyxy(there, box_format, normalized=True, size=size)
    assert np.all(np.abs(back - boxes) <= 4 * np.spacing(float(max(width, height))))


def test_known_values() -> None:
    box = np.array([[20.0, 30.0, 80.0, 150.0]])
    assert boxes_from_xyxy(box, "xywh").tolist() == [[20, 30, 60, 120]]
    assert boxes_from_xyxy(box, "cxcywh").tolist() == [[50, 90, 60, 120]]
    assert boxes_from_xyxy(box, "cxcywh", normalized=True, size=(320, 240)).tolist() == [[0.15625, 0.375, 0.1875, 0.5]]


@settings(max_examples=40, deadline=None)
@given(frame_and_boxes(), st.sampled_from(BOX_FORMATS))
def test_frame_samples_boxes_convert_back_to_the_stored_corners(data, box_format: str) -> None:
    width, height, boxes = data
    rows = [{"video": "v", "kind": "box", "label": "x", "start_frame": 0, "box": tuple(b)} for b in boxes.tolist()]
    rel = make_release(rows, labels=("x",), videos={"v": (1, width, height)})
    image = np.zeros((height, width, 3), np.uint8) if width * height <= 1 << 20 else None
    pixels = FrameSamples.from_release(rel, box_format=box_format, frames="all")
    fractions = FrameSamples.from_release(rel, box_format=box_format, normalized=True, frames="all")
    got = next(pixels.targets())["boxes"]
    assert got.dtype == np.float32 and got.shape == (len(rows), 4)
    assert np.array_equal(boxes_to_xyxy(got, box_format), boxes)
    if image is not None:
        assert np.array_equal(pixels.sample("v", 0, image)["boxes"], got)
    frac = next(fractions.targets())["boxes"]
    back = boxes_to_xyxy(frac.astype(np.float64), box_format, normalized=True, size=(width, height))
    # float32 fractions: about 2^-24 of the frame size
    assert np.all(np.abs(back - boxes) <= 2.0**-22 * max(width, height))
