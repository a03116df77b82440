"""Mask values of annotation rows: (H, W) arrays and COCO RLE (compressed or not) checked, with their bbox
(see :mod:`vidlabel.dataset._rows` for why vidlabel decodes compressed RLE itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel.dataset._row_values import _show
from vidlabel.geometry import encode_rle, mask_bbox, rle_counts


def _rle_bbox(runs: np.ndarray, height: int) -> tuple[float, float, float, float] | None:
    """xyxy bbox (x1, y1 exclusive) of the ones of column-major runs, or None for an empty mask."""
    ends = np.cumsum(runs)
    starts = ends - runs
    ones = np.arange(runs.size) % 2 == 1
    ones &= runs > 0
    if not ones.any():
        return None
    s, e = starts[ones], ends[ones] - 1
    cs, ce = s // height, e // height
    single = cs == ce
    y0 = np.where(single, s % height, 0).min()
    y1 = np.where(single, e % height, height - 1).max() + 1
    return (float(cs.min()), float(y0), float(ce.max() + 1), float(y1))


def _rle_runs(counts: Any) -> np.ndarray | str:
    """Run lengths of a COCO RLE ``counts`` (compressed string/bytes or a list of runs), or what is wrong."""
    try:
        if isinstance(counts, str):
            return rle_counts(counts.encode("ascii"))
        if isinstance(counts, bytes | bytearray):
            return rle_counts(bytes(counts))
        if isinstance(counts, Sequence | np.ndarray):
            arr = np.asarray(counts)
            if arr.dtype == object and arr.ndim == 1 and all(type(x) is int for x in arr.tolist()):
                arr = np.asarray(counts, dtype=np.int64)  # Python ints past int64: OverflowError, said below
            if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
                raise ValueError(f"uncompressed counts must be a flat list of integers, got {_show(counts)}")
            if not isinstance(counts, np.ndarray) and any(isinstance(x, bool) for x in counts):
                raise ValueError(f"uncompressed counts must be integers, not true/false, got {_show(counts)}")
            runs = arr.astype(np.int64, copy=False)
            if (runs < 0).any():
                raise ValueError("negative run length")
            return runs
        raise ValueError(f"counts must be a string, bytes or a list, got {type(counts).__name__}")
    except (ValueError, UnicodeEncodeError, OverflowError) as err:  # OverflowError: a run beyond int64
        return f"mask RLE counts are not valid COCO RLE ({err})"


def _parse_rle(
    value: Mapping[str, Any], full: tuple[int, int], crop: tuple[int, int, int, int] | None, allowed: str
) -> tuple[bytes, tuple[float, float, float, float]] | str | np.ndarray:
    """A COCO RLE dict: (counts, bbox) at full size, the (H, W) mask at the crop's size, or what is wrong."""
    if "size" not in value or "counts" not in value:
        return f"a mask RLE needs 'size' and 'counts', got keys {sorted(map(str, value))}; allowed: COCO RLE"
    size = value["size"]
    if (
        not isinstance(size, Sequence | np.ndarray)
        or isinstance(size, str | bytes)
        or len(size) != 2
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in size)
    ):
        return f"mask RLE size must be [height, width] as two integers, got {_show(size)}"
    h, w = (int(v) for v in size)
    counts = value["counts"]
    runs = _rle_runs(counts)
    if isinstance(runs, str):
        return runs
    covered = sum(runs.tolist())  # Python ints: an int64 sum wraps, and runs near 2**63 then summed to h * w
    if covered != h * w:
        return f"mask RLE counts cover {covered} pixels, but its size {h}x{w} has {h * w}"
    if (h, w) == full:
        bbox = _rle_bbox(runs, h)
        if bbox is None:
            return "mask is empty (no pixel set); allowed: a mask with at least one pixel"
        if isinstance(counts, bytes | bytearray | str) and len(counts) > 0:
            data = counts.encode("ascii") if isinstance(counts, str) else bytes(counts)
        else:
            data = encode_rle(_runs_to_mask(runs, h, w))["counts"]
        return data, bbox
    if crop is not None and (h, w) == (crop[3] - crop[1], crop[2] - crop[0]):
        return _runs_to_mask(runs, h, w)
    return f"mask size {h}x{w} (H x W) does not fit; allowed: {allowed}"


def _parse_mask(
    value: Any, full: tuple[int, int], crop: tuple[int, int, int, int] | None
) -> tuple[bytes, tuple[float, float, float, float]] | str:
    """(compressed RLE counts of the full-frame mask, bbox), or a message saying what is wrong.

    ``full`` is (height, width) of the frame; a view's row may give its mask at
    the crop's size, which is pasted into the full frame at the crop's corner.
    """
    fh, fw = full
    allowed = f"(H, W) = ({fh}, {fw})"
    if crop is not None:
        allowed += f" or the view's crop size ({crop[3] - crop[1]}, {crop[2] - crop[0]})"
    if isinstance(value, Mapping):
        parsed = _parse_rle(value, full, crop, allowed)
        if not isinstance(parsed, np.ndarray):
            return parsed
        value = parsed  # a crop-sized RLE, now an array pasted below like any crop-sized mask
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return f"mask must be an (H, W) array or a COCO RLE dict, got {type(value).__name__}"
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        return f"mask must be an (H, W) array of 0/1 or a COCO RLE dict, got {_show(arr)}"
    if arr.shape != (fh, fw):
        if crop is not None and arr.shape == (crop[3] - crop[1], crop[2] - crop[0]):
            full_mask = np.zeros((fh, fw), np.uint8)
            full_mask[crop[1] : crop[3], crop[0] : crop[2]] = arr != 0
            arr = full_mask
        else:
            return f"mask shape {arr.shape} does not fit; allowed: {allowed}"
    bbox = mask_bbox(arr)
    if bbox is None:
        return "mask is empty (no pixel set); allowed: a mask with at least one pixel"
    return encode_rle(arr)["counts"], bbox


def _runs_to_mask(runs: np.ndarray, h: int, w: int) -> np.ndarray:
    values = (np.arange(runs.size) % 2).astype(np.uint8)
    flat = np.repeat(values, runs)
    return flat.reshape(w, h).T.copy()
