"""Box formats, clipping, views (crop + resize of images, boxes and masks) and mask RLE.

Stored boxes are always xyxy pixel corners in the full displayed frame; the
functions here turn them into what training code asks for (spec: "Choosing
what to train on", ``box_format`` and ``normalized``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.schema import frame_sample
from vidlabel.spec import BOX_FORMATS, MAX_VIDEO_SIDE, View

__all__ = [
    "boxes_from_xyxy",
    "boxes_to_xyxy",
    "clip_boxes",
    "crop_resize_image",
    "decode_rle",
    "encode_rle",
    "make_sample",
    "mask_bbox",
    "resize_image",
    "resize_mask",
    "rle_counts",
    "view_boxes",
    "view_image",
    "view_mask",
]


def _check_format(box_format: str) -> None:
    if box_format not in BOX_FORMATS:
        raise ValueError(f"unknown box_format {box_format!r}; allowed: {', '.join(BOX_FORMATS)}")


def boxes_from_xyxy(
    boxes: np.ndarray, box_format: str = "xyxy", *, normalized: bool = False, size: tuple[int, int] | None = None
) -> np.ndarray:
    """Convert (N, 4) xyxy pixel corners to ``box_format``.

    Parameters
    ----------
    boxes : (N, 4) array, xyxy pixels
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
        Divide x by the image width and y by its height.
    size : (width, height)
        Image size; required with ``normalized=True``.

    Returns
    -------
    (N, 4) float64

    Raises
    ------
    ValueError
        On an unknown format or ``normalized`` without ``size``.
    """
    _check_format(box_format)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    if box_format == "xyxy":
        out = b.copy()
    elif box_format == "xywh":
        out = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
    else:
        out = np.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], axis=1)
    if normalized:
        if size is None:
            raise ValueError("normalized boxes need the image size (width, height)")
        out /= np.array([size[0], size[1], size[0], size[1]], dtype=np.float64)
    return out


def boxes_to_xyxy(
    boxes: np.ndarray, box_format: str = "xyxy", *, normalized: bool = False, size: tuple[int, int] | None = None
) -> np.ndarray:
    """Inverse of :func:`boxes_from_xyxy`: (N, 4) in ``box_format`` to xyxy pixels, float64.

    Parameters
    ----------
    boxes : (N, 4) array-like
        Boxes in ``box_format``.
    box_format : {"xyxy", "xywh", "cxcywh"}
        Their format.
    normalized : bool
        Coordinates are fractions of ``size`` (then ``size`` is required).
    size : (width, height), optional
        Image size in pixels for ``normalized``.
    """
    _check_format(box_format)
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    if normalized:
        if size is None:
            raise ValueError("normalized boxes need the image size (width, height)")
        b *= np.array([size[0], size[1], size[0], size[1]], dtype=np.float64)
    if box_format == "xyxy":
        return b
    if box_format == "xywh":
        return np.stack([b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]], axis=1)
    cx, cy, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)


def clip_boxes(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """Clip (N, 4) xyxy boxes to ``[0, width] x [0, height]``; returns float64.

    Parameters
    ----------
    boxes : (N, 4) array-like
        xyxy pixel corners.
    width, height : int
        The image size in pixels.
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4).copy()
    b[:, [0, 2]] = np.clip(b[:, [0, 2]], 0, width)
    b[:, [1, 3]] = np.clip(b[:, [1, 3]], 0, height)
    return b


def view_boxes(boxes: np.ndarray, view: View | None) -> np.ndarray:
    """Map (N, 4) xyxy full-frame pixels into a view's pixels: shift by the crop, scale to ``output_size``, clip.

    Returns (N, 4) float64; the input unchanged (as float64) when ``view`` is None.

    Parameters
    ----------
    boxes : (N, 4) array-like
        xyxy pixel corners in the full displayed frame.
    view : View or None
        The view (crop, optional output size).
    """
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    if view is None:
        return b.copy()
    x0, y0, _, _ = view.crop
    cw, ch = view.crop_size
    ow, oh = view.size
    sx, sy = ow / cw, oh / ch
    out = (b - np.array([x0, y0, x0, y0], dtype=np.float64)) * np.array([sx, sy, sx, sy])
    return clip_boxes(out, ow, oh)


def _bilinear_axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Half-pixel centres, as OpenCV's INTER_LINEAR and PIL's BILINEAR without antialias.
    pos = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    pos = np.clip(pos, 0, n_in - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, (pos - lo)


def resize_image(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bilinear resize of an (H, W, C) uint8 image to ``size = (width, height)``; returns (height, width, C) uint8.

    Parameters
    ----------
    image : (H, W, C) uint8
    size : (width, height)
        The output size in pixels.
    """
    w, h = size
    if image.shape[1] == w and image.shape[0] == h:
        return image
    ylo, yhi, wy = _bilinear_axis(image.shape[0], h)
    xlo, xhi, wx = _bilinear_axis(image.shape[1], w)
    img = image.astype(np.float32)
    rows = img[ylo] * (1 - wy)[:, None, None].astype(np.float32) + img[yhi] * wy[:, None, None].astype(np.float32)
    out = rows[:, xlo] * (1 - wx)[None, :, None].astype(np.float32) + rows[:, xhi] * wx[None, :, None].astype(
        np.float32
    )
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def resize_mask(mask: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize of an (H, W) mask to ``size = (width, height)``; dtype kept.

    Parameters
    ----------
    mask : (H, W) array
    size : (width, height)
        The output size in pixels.
    """
    w, h = size
    if mask.shape[1] == w and mask.shape[0] == h:
        return mask
    ys = np.minimum(((np.arange(h) + 0.5) * mask.shape[0] / h).astype(np.intp), mask.shape[0] - 1)
    xs = np.minimum(((np.arange(w) + 0.5) * mask.shape[1] / w).astype(np.intp), mask.shape[1] - 1)
    return mask[ys[:, None], xs[None, :]]


def crop_resize_image(
    image: np.ndarray, crop: tuple[int, int, int, int], output_size: tuple[int, int] | None
) -> np.ndarray:
    """Crop an (H, W, C) image to xyxy ``crop`` (clamped to the image) and resize it to ``output_size`` if given.

    Parameters
    ----------
    image : (H, W, C) uint8
    crop : (x0, y0, x1, y1) int
        Pixel corners of the crop.
    output_size : (width, height) or None
        Resize to this size (bilinear); None keeps the crop's size.
    """
    x0, y0, x1, y1 = crop
    out = image[y0:y1, x0:x1]
    if output_size is not None:
        out = resize_image(out, output_size)
    return np.ascontiguousarray(out)


def view_image(image: np.ndarray, view: View | None) -> np.ndarray:
    """The view's pixels of a full displayed frame: (H', W', 3) uint8; the frame itself when ``view`` is None.

    Parameters
    ----------
    image : (H, W, 3) uint8
        The full displayed frame.
    view : View or None
        The view (crop, optional output size).
    """
    if view is None:
        return image
    return crop_resize_image(image, view.crop, view.output_size)


def view_mask(mask: np.ndarray, view: View | None) -> np.ndarray:
    """Crop and (nearest) resize an (H, W) full-frame mask to a view; the mask itself when ``view`` is None.

    Parameters
    ----------
    mask : (H, W) array
        A full-frame mask.
    view : View or None
        The view (crop, optional output size).
    """
    if view is None:
        return mask
    x0, y0, x1, y1 = view.crop
    out = mask[y0:y1, x0:x1]
    if view.output_size is not None:
        out = resize_mask(out, view.output_size)
    return np.ascontiguousarray(out)


def encode_rle(mask: np.ndarray) -> dict[str, Any]:
    """COCO compressed RLE of an (H, W) mask (non-zero = inside), via pycocotools.

    Returns ``{"size": [H, W], "counts": bytes}``.

    Parameters
    ----------
    mask : (H, W) array
        Non-zero pixels are inside.
    """
    from pycocotools import mask as mask_utils

    m = np.asfortranarray(np.asarray(mask) != 0, dtype=np.uint8)
    rle = mask_utils.encode(m)
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": bytes(rle["counts"])}


def rle_counts(counts: bytes) -> np.ndarray:
    """Run lengths of a COCO compressed RLE string (the inverse of pycocotools' ``rleToString``), decoded with NumPy.

    pycocotools does not check what it decodes: its C decoder (``rleFrString``) accepts any byte, reads past a
    truncated string's end and shifts ints by more than their width, and its ``decode`` of counts covering fewer
    pixels than ``size`` returns uninitialised memory (``{"size": [4, 4], "counts": b"0"}`` gave values such as 40
    and 245). Strings from users, files and stores are decoded here first.

    Parameters
    ----------
    counts : bytes
        The ``counts`` of a compressed COCO RLE.

    Returns
    -------
    (R,) int64
        Alternating run lengths, zeros first, in column-major (Fortran) pixel order; their sum is the pixels covered.

    Raises
    ------
    ValueError
        If it is not a compressed RLE string: a byte outside ``'0'..'o'``, cut inside a run, a run (or the change
        of one) longer than 2**40, which no frame holds, or a negative run.
    """
    c = np.frombuffer(counts, np.uint8).astype(np.int64) - 48
    if c.size == 0:
        return np.zeros(0, np.int64)
    if c.min() < 0 or c.max() > 63:
        bad = int(np.flatnonzero((c < 0) | (c > 63))[0])
        raise ValueError(f"byte {counts[bad]!r} at position {bad} is not a compressed RLE character")
    more = (c & 0x20) != 0
    if more[-1]:
        raise ValueError("compressed RLE string is truncated")
    ends = np.flatnonzero(~more)
    starts = np.r_[0, ends[:-1] + 1]
    lengths = ends - starts + 1
    if lengths.max() > 8:  # 40 bits: a run (or the change of one) of no frame is longer
        raise ValueError("compressed RLE string holds a run longer than 2**40")
    k = np.arange(c.size) - np.repeat(starts, lengths)
    x = np.add.reduceat((c & 0x1F) << (5 * k), starts)
    x -= np.where((c[ends] & 0x10) != 0, np.int64(1) << (5 * lengths), 0)  # the last 5 bits' sign, extended
    runs = x.copy()  # each run after the third is a change from the run two before it
    runs[2::2] = np.cumsum(x[2::2])
    runs[3::2] = x[1] + np.cumsum(x[3::2]) if x.size > 3 else runs[3::2]
    # Each change is under 2**40, so a sum that would wrap past int64 passes a run over 2**40 first: refused here.
    if runs.max() > 2**40:
        raise ValueError("compressed RLE string holds a run longer than 2**40")
    if runs.min() < 0:
        raise ValueError("compressed RLE string decodes to a negative run length")
    return runs


def decode_rle(rle: dict[str, Any]) -> np.ndarray:
    """(H, W) uint8 {0, 1} mask from COCO RLE (compressed ``bytes``/``str`` counts, or uncompressed list counts).

    Parameters
    ----------
    rle : dict
        ``{"size": [H, W], "counts": ...}``.

    Raises
    ------
    ValueError
        If compressed counts are not valid RLE or do not cover exactly H x W pixels (pycocotools returned
        uninitialised memory for fewer, :func:`rle_counts`), or a side of ``size`` is outside
        ``[1, MAX_VIDEO_SIDE]`` (a crafted size of 2**20 x 2**20 covered exactly was allocated).
    """
    from pycocotools import mask as mask_utils

    h, w = (int(v) for v in rle["size"])
    if not (0 < h <= MAX_VIDEO_SIDE and 0 < w <= MAX_VIDEO_SIDE):  # a crafted size allocated whatever it asked for
        raise ValueError(f"mask RLE size {h}x{w} is not that of a frame: each side must be in [1, {MAX_VIDEO_SIDE}]")
    counts = rle["counts"]
    if isinstance(counts, list):
        obj = mask_utils.frPyObjects({"size": [h, w], "counts": counts}, h, w)
    else:
        data = counts.encode() if isinstance(counts, str) else bytes(counts)
        covered = sum(rle_counts(data).tolist())  # Python ints: no int64 sum to wrap
        if covered != h * w:
            raise ValueError(f"mask RLE counts cover {covered} pixels, but its size {h}x{w} has {h * w}")
        obj = {"size": [h, w], "counts": data}
    return np.ascontiguousarray(mask_utils.decode(obj), dtype=np.uint8)


def mask_bbox(mask: np.ndarray) -> tuple[float, float, float, float] | None:
    """xyxy pixel corners of the non-zero pixels of an (H, W) mask (x1, y1 exclusive), or None if it is empty.

    Parameters
    ----------
    mask : (H, W) array
        Non-zero pixels are inside.
    """
    m = np.asarray(mask) != 0
    rows = np.flatnonzero(m.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(m.any(axis=0))
    return (float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1))


def make_sample(
    *,
    image: np.ndarray,
    boxes_xyxy: np.ndarray,
    label_index: np.ndarray,
    track_ids: np.ndarray,
    annotation_ids: np.ndarray,
    frame_labels: np.ndarray,
    video_id: str,
    view_id: str | None,
    frame_index: int,
    masks: np.ndarray | None = None,
    box_format: str = "xyxy",
    normalized: bool = False,
    label_offset: int = 0,
    attributes: np.ndarray | None = None,
) -> dict[str, Any]:
    """The frame sample (:func:`vidlabel.schema.frame_sample`) of stored xyxy pixel boxes, in the output box format.

    Parameters
    ----------
    image : (H, W, 3) uint8 RGB
        The frame in displayed orientation, already cropped/resized to the view.
    boxes_xyxy : (N, 4)
        Pixel corners in ``image``'s pixels, rows ordered by annotation id.
    label_index : (N,) int
        Position in ``class_names`` (``label_offset`` is added here).
    track_ids, annotation_ids : (N,) int
        -1 for no track.
    frame_labels : (C,)
        Multi-hot of the markers active on this frame, indexed by ``class_names``.
    masks : (N, H, W) uint8, optional
        Only with ``with_masks=True``; aligned with the boxes.
    attributes : (N, A) float32, optional
        Only with ``with_attributes``; aligned with the boxes.

    Returns
    -------
    dict
        ``image`` (H, W, 3) uint8, ``boxes`` (N, 4) float32 in ``box_format``
        (fractions with ``normalized``), ``labels``/``track_ids``/``annotation_ids``
        (N,) int64, ``masks`` (N, H, W) uint8 when given, ``frame_labels`` (C,)
        float32, ``video_id``, ``view_id``, ``frame_index`` (int).
    """
    height, width = int(image.shape[0]), int(image.shape[1])
    boxes = boxes_from_xyxy(boxes_xyxy, box_format, normalized=normalized, size=(width, height)).astype(np.float32)
    return frame_sample(
        image=image,
        boxes=boxes,
        labels=np.asarray(label_index, dtype=np.int64).reshape(-1) + int(label_offset),
        track_ids=track_ids,
        annotation_ids=annotation_ids,
        frame_labels=frame_labels,
        video_id=video_id,
        view_id=view_id,
        frame_index=frame_index,
        masks=masks,
        attributes=attributes,
    )
