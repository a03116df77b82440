"""Augmentations that move the labels: a bridge from vidlabel samples to torchvision ``transforms.v2`` and back.

A dataset's ``transform=`` receives the sample as tensors (what :func:`vidlabel.torch_data.to_torch_sample`
makes). :class:`V2Transform` wraps a ``torchvision.transforms.v2`` transform so that it sees the sample as
``tv_tensors``: the image as ``tv_tensors.Image`` (a clip's as ``tv_tensors.Video``), the boxes as
``tv_tensors.BoundingBoxes`` with their format and ``canvas_size`` (one per frame of a clip), the masks as
``tv_tensors.Mask``. torchvision moves boxes and masks with the pixels and draws its random parameters once
per call for everything in the call, so every frame of a clip gets the same flip, crop and colour change.

After the transform, boxes are clamped to the new image and those left smaller than ``min_size`` pixels are
dropped together with their label, track id, annotation id and mask (torchvision's ``ClampBoundingBoxes`` and
``SanitizeBoundingBoxes``); the sample then goes back to the dataset's documented layout (``box_format``,
``normalized``, float32 boxes, uint8 masks, int64 ids), so training code sees one layout whatever the transform
did. ``frame_labels`` and every other key pass through untouched.

torchvision is an optional dependency (``pip install "vidlabel[vision]"``); it is imported when a
:class:`V2Transform` is made, never by vidlabel otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch

from vidlabel.errors import MissingExtraError, OptionError, TransformError, check_flag
from vidlabel.schema import SCHEMAS
from vidlabel.spec import BOX_FORMATS

#: Keys torchvision moves with the pixels: every other per-target key follows the boxes that are kept.
_TV_KEYS = ("boxes", "masks")
_TV_FORMAT = {"xyxy": "XYXY", "xywh": "XYWH", "cxcywh": "CXCYWH"}


def _torchvision() -> Any:
    """torchvision's ``tv_tensors`` and ``transforms.v2``, or a one-line error naming the extra to install."""
    try:
        from torchvision import tv_tensors
        from torchvision.transforms import v2
    except (ImportError, RuntimeError, OSError) as err:
        raise MissingExtraError(
            f'V2Transform needs torchvision: pip install "vidlabel[vision]" (importing it failed: {err})'
        ) from None
    return tv_tensors, v2


@dataclasses.dataclass(frozen=True)
class _Layout:
    box_format: str
    normalized: bool


class V2Transform:
    """A ``torchvision.transforms.v2`` transform applied to vidlabel samples, boxes and masks moved with the pixels.

    Give it as ``transform=`` to any vidlabel PyTorch dataset (``StoreFrames``, ``StoreStream``,
    ``VideoFrames``, ``VideoStream``, ``PlannedStream`` and the clip datasets); the dataset tells it the
    sample's ``box_format`` and ``normalized``. It is picklable when the wrapped transform is, so it works in
    DataLoader workers started with fork or spawn.

    Parameters
    ----------
    transform : callable
        A torchvision ``transforms.v2`` transform (or any callable taking and returning the dict below).
        It receives a dict with ``image`` (``tv_tensors.Image`` (3, H, W) uint8, or ``tv_tensors.Video``
        (T, 3, H, W) uint8 for a clip), ``boxes`` (``tv_tensors.BoundingBoxes`` (N, 4) float64 in pixels, in the
        sample's box format; for a clip a list of T of them), ``masks`` (``tv_tensors.Mask`` (N, H, W) uint8, when
        the sample has masks; for a clip a list of T), ``labels``, ``track_ids``, ``annotation_ids`` ((N,) int64,
        for a clip lists of T) and the sample's other keys unchanged.
    min_size : float, default 1.0
        Boxes narrower or lower than this many pixels after the transform are dropped with their label, track
        id, annotation id and mask (torchvision's ``SanitizeBoundingBoxes``; at least 1).
    box_format, normalized : optional
        The samples' layout. Left ``None``, the dataset the transform is given to sets them; given, they must
        agree with the dataset's.

    Raises
    ------
    MissingExtraError
        When torchvision cannot be imported; the message names the ``vision`` extra.
    OptionError
        When ``transform`` is not callable,
        ``min_size`` is below 1, or ``box_format`` / ``normalized`` are invalid or disagree with the dataset's.
    TransformError
        From a call, when the transform returns something other than a sample dict with an image and boxes of
        the right types and shapes; the message names the sample (video, frame) and what was expected.
    """

    def __init__(
        self,
        transform: Callable[[Any], Any],
        *,
        min_size: float = 1.0,
        box_format: str | None = None,
        normalized: bool | None = None,
    ) -> None:
        _torchvision()
        if not callable(transform):
            raise OptionError(f"V2Transform takes a callable transform, got {transform!r}")
        if isinstance(min_size, bool) or not isinstance(min_size, (int, float)) or not min_size >= 1:
            raise OptionError(f"min_size must be a number >= 1 (pixels), got {min_size!r}")
        self.transform = transform
        self.min_size = float(min_size)
        self._layout: _Layout | None = None
        if box_format is not None or normalized is not None:
            self._layout = _check_layout(box_format or "xyxy", False if normalized is None else normalized)

    def with_layout(self, box_format: str, normalized: bool) -> V2Transform:
        """This transform bound to a dataset's sample layout (what the datasets call; rarely needed by hand).

        Raises
        ------
        OptionError
            When the transform was made with another ``box_format`` or ``normalized``.
        """
        layout = _check_layout(box_format, normalized)
        if self._layout is not None and self._layout != layout:
            raise OptionError(
                f"V2Transform was made for box_format={self._layout.box_format!r}, "
                f"normalized={self._layout.normalized}, but the dataset gives box_format={box_format!r}, "
                f"normalized={normalized}"
            )
        bound = V2Transform.__new__(V2Transform)
        bound.transform, bound.min_size, bound._layout = self.transform, self.min_size, layout
        return bound

    def __repr__(self) -> str:
        layout = "" if self._layout is None else f", box_format={self._layout.box_format!r}"
        return f"V2Transform({self.transform!r}, min_size={self.min_size}{layout})"

    def __call__(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        layout = self._layout or _Layout("xyxy", False)
        tv_tensors, _ = _torchvision()
        where = _where(sample)
        image = sample.get("image")
        if not isinstance(image, torch.Tensor) or image.dim() not in (3, 4):
            raise TransformError(f"{where}: V2Transform needs an image tensor (3, H, W) or (T, 3, H, W), got {image!r}")
        clip = image.dim() == 4
        inputs = _to_tv(sample, layout, clip, tv_tensors)
        out = self.transform(inputs)
        _check_output(out, clip, where, tv_tensors)
        return _from_tv(out, sample, layout, clip, self.min_size, where)


def _check_layout(box_format: str, normalized: bool) -> _Layout:
    if box_format not in BOX_FORMATS:
        raise OptionError(f"unknown box_format {box_format!r}; allowed: {', '.join(BOX_FORMATS)}")
    return _Layout(box_format, check_flag("normalized", normalized))


def bind_transform(transform: Any, box_format: str, normalized: bool) -> Any:
    """``transform`` bound to a dataset's sample layout when it is a :class:`V2Transform`; else unchanged."""
    if isinstance(transform, V2Transform):
        return transform.with_layout(box_format, normalized)
    return transform


def target_keys() -> dict[str, torch.dtype]:
    """The per-target keys of the frame schema that a dropped box takes along (``labels``, ``track_ids``,
    ``annotation_ids``, ``attributes``, ...: ragged keys whose first dimension is ``N``), with their dtype."""
    return {
        key.name: getattr(torch, key.dtype)
        for key in SCHEMAS["frame"].keys
        if key.layout == "ragged" and key.dims[:1] == ("N",) and key.name not in _TV_KEYS
    }


def _where(sample: Mapping[str, Any]) -> str:
    frame = sample.get("frame_index", sample.get("frame_indices"))
    if isinstance(frame, torch.Tensor):
        frame = frame.tolist()
    return f"sample (video {sample.get('video_id')!r}, frame {frame})"


def _pixel_boxes(boxes: torch.Tensor, layout: _Layout, height: int, width: int) -> torch.Tensor:
    """(N, 4) boxes as float64 pixels in the layout's format (exact: float32 times an integer fits float64)."""
    out = boxes.to(torch.float64)
    if layout.normalized:
        out = out * torch.tensor([width, height, width, height], dtype=torch.float64)
    return out


def _to_tv(sample: Mapping[str, Any], layout: _Layout, clip: bool, tv_tensors: Any) -> dict[str, Any]:
    image = sample["image"]
    height, width = int(image.shape[-2]), int(image.shape[-1])
    fmt = getattr(tv_tensors.BoundingBoxFormat, _TV_FORMAT[layout.box_format])

    def boxes_of(b: torch.Tensor) -> Any:
        return tv_tensors.BoundingBoxes(_pixel_boxes(b, layout, height, width), format=fmt, canvas_size=(height, width))

    inputs = dict(sample)
    inputs["image"] = tv_tensors.Video(image) if clip else tv_tensors.Image(image)
    if clip:
        inputs["boxes"] = [boxes_of(b) for b in sample["boxes"]]
        if sample.get("masks") is not None:
            inputs["masks"] = [tv_tensors.Mask(m) for m in sample["masks"]]
    else:
        inputs["boxes"] = boxes_of(sample["boxes"])
        if sample.get("masks") is not None:
            inputs["masks"] = tv_tensors.Mask(sample["masks"])
    return inputs


def _check_output(out: Any, clip: bool, where: str, tv_tensors: Any) -> None:
    expected = "tv_tensors.Video (T, 3, H, W)" if clip else "tv_tensors.Image (3, H, W)"
    if not isinstance(out, Mapping):
        raise TransformError(
            f"{where}: the transform must return the sample dict it received, got {type(out).__name__}"
        )
    image = out.get("image")
    kind = tv_tensors.Video if clip else tv_tensors.Image
    if not isinstance(image, kind) or image.dim() != (4 if clip else 3) or image.shape[-3] != 3:
        got = (
            f"{type(image).__name__} of shape {tuple(image.shape)}" if isinstance(image, torch.Tensor) else repr(image)
        )
        raise TransformError(f"{where}: the transform returned image {got}; expected {expected}")
    frames = out["boxes"] if clip else [out["boxes"]]
    if clip and (not isinstance(frames, list) or len(frames) != image.shape[0]):
        raise TransformError(f"{where}: the transform returned boxes {frames!r}; expected a list of {image.shape[0]}")
    for boxes in frames:
        if not isinstance(boxes, tv_tensors.BoundingBoxes) or boxes.dim() != 2 or boxes.shape[1] != 4:
            raise TransformError(
                f"{where}: the transform returned boxes {type(boxes).__name__}; expected tv_tensors.BoundingBoxes (N, 4)"
            )


def _clamped(boxes: torch.Tensor, box_format: str, height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, 4) pixel boxes in ``box_format`` clamped to the image, and their (N,) widths and heights' minimum.

    Boxes already inside the image come back as they are, bit for bit (no format round trip).
    """
    xyxy = boxes if box_format == "xyxy" else _convert(boxes, box_format, "xyxy")
    limits = torch.tensor([width, height, width, height], dtype=boxes.dtype)
    clamped = torch.minimum(xyxy.clamp(min=0), limits)
    sides = (clamped[:, 2:] - clamped[:, :2]).amin(1) if len(boxes) else clamped[:, 0]
    if torch.equal(clamped, xyxy):
        return boxes, sides
    return (clamped if box_format == "xyxy" else _convert(clamped, "xyxy", box_format)), sides


def _frame_out(
    target: dict[str, Any], layout: _Layout, height: int, width: int, min_size: float, where: str
) -> dict[str, Any]:
    """One frame's targets after the transform: boxes clamped to the image, those under ``min_size`` pixels
    dropped with their ids and masks (torchvision's ClampBoundingBoxes and SanitizeBoundingBoxes rules), in the
    layout's format. Done on plain tensors: through v2's transform machinery it cost more than a flip."""
    bbox = target["boxes"]
    fmt = str(bbox.format.name).lower()
    if fmt not in _TV_FORMAT:
        raise TransformError(f"{where}: the transform returned boxes in format {fmt!r}; expected one of {BOX_FORMATS}")
    plain = bbox.as_subclass(torch.Tensor).to(torch.float64)
    n = int(plain.shape[0])
    targets = target_keys()
    for key in targets:
        if key in target and int(target[key].shape[0]) != n:
            raise TransformError(f"{where}: the transform returned {n} boxes but {int(target[key].shape[0])} {key}")
    masks = target["masks"].as_subclass(torch.Tensor) if "masks" in target else None
    if masks is not None and (masks.dim() != 3 or tuple(masks.shape) != (n, height, width)):
        raise TransformError(
            f"{where}: the transform returned masks of shape {tuple(masks.shape)}; expected "
            f"({n}, {height}, {width}) to match the boxes and the image"
        )
    if fmt != layout.box_format:
        plain = _convert(plain, fmt, layout.box_format)
    plain, sides = _clamped(plain, layout.box_format, height, width)
    keep = sides >= min_size
    every = bool(keep.all())
    if layout.normalized:
        plain = plain / torch.tensor([width, height, width, height], dtype=torch.float64)
    result = {"boxes": (plain if every else plain[keep]).to(torch.float32)}
    for key, dtype in targets.items():
        if key in target:
            values = target[key].as_subclass(torch.Tensor).to(dtype)
            result[key] = values if every else values[keep]
    if masks is not None:
        result["masks"] = (masks if every else masks[keep]).to(torch.uint8)
    return result


def _convert(boxes: torch.Tensor, old: str, new: str) -> torch.Tensor:
    """(N, 4) plain boxes from one box format to another, by torchvision's kernel."""
    from torchvision.transforms.v2 import functional as F

    return F.convert_bounding_box_format(boxes, old_format=_TV_FORMAT[old], new_format=_TV_FORMAT[new])  # type: ignore[no-any-return]


def _from_tv(
    out: Mapping[str, Any],
    sample: Mapping[str, Any],
    layout: _Layout,
    clip: bool,
    min_size: float,
    where: str,
) -> dict[str, Any]:
    image = out["image"]
    height, width = int(image.shape[-2]), int(image.shape[-1])
    targets = tuple(target_keys())
    result = {k: v for k, v in out.items() if k not in ("image", *_TV_KEYS, *targets)}
    result["image"] = image.as_subclass(torch.Tensor)
    frames = range(int(image.shape[0])) if clip else [None]
    per_frame = []
    for t in frames:
        target = {"boxes": out["boxes"] if t is None else out["boxes"][t]}
        for key in (*targets, "masks"):
            if key in out and out[key] is not None:
                target[key] = out[key] if t is None else out[key][t]
        per_frame.append(_frame_out(target, layout, height, width, min_size, where))
    for key in ("boxes", *targets, "masks"):
        if key in per_frame[0]:
            result[key] = per_frame[0][key] if not clip else [f[key] for f in per_frame]
        elif key in sample:
            result[key] = sample[key]
    return result
