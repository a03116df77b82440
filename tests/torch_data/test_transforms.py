"""V2Transform: torchvision transforms.v2 over vidlabel samples, boxes and masks moved with the pixels.

Objects are drawn in known colours, so their pixels after a transform are found by colour and every box and
mask is checked against them. Runs where torchvision imports (CI runs it in a second environment with torch
and torchvision pinned together).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.vision
tv = pytest.importorskip("torchvision")

from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms.v2 import InterpolationMode  # noqa: E402

from vidlabel.errors import OptionError, TransformError  # noqa: E402
from vidlabel.geometry import boxes_from_xyxy  # noqa: E402
from vidlabel.torch_data import V2Transform  # noqa: E402

H, W = 96, 128
NEAREST = InterpolationMode.NEAREST
# (colour, kind, geometry): rectangles as xyxy pixel edges, a disc as (cx, cy, r).
OBJECTS: list[tuple[tuple[int, int, int], str, tuple[int, ...]]] = [
    ((255, 0, 0), "rect", (10, 12, 40, 50)),
    ((0, 255, 0), "rect", (70, 20, 118, 44)),
    ((0, 0, 255), "disc", (60, 70, 14)),
    ((255, 255, 0), "rect", (2, 80, 20, 94)),
]


def object_masks() -> list[np.ndarray]:
    y, x = np.mgrid[0:H, 0:W]
    out = []
    for _, kind, g in OBJECTS:
        if kind == "rect":
            m = (x >= g[0]) & (x < g[2]) & (y >= g[1]) & (y < g[3])
        else:
            m = (x - g[0]) ** 2 + (y - g[1]) ** 2 <= g[2] ** 2
        out.append(m.astype(np.uint8))
    return out


def draw() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The image (H, W, 3), the objects' xyxy boxes (exact pixel extents) and their masks (N, H, W)."""
    image = np.full((H, W, 3), 128, np.uint8)
    masks = object_masks()
    boxes = []
    for (colour, _, _), m in zip(OBJECTS, masks):
        image[m.astype(bool)] = colour
        ys, xs = np.nonzero(m)
        boxes.append((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1))
    return image, np.array(boxes, np.float32), np.stack(masks)


def tensor_sample(box_format: str = "xyxy", normalized: bool = False, *, masks: bool = True) -> dict[str, Any]:
    image, xyxy, m = draw()
    boxes = boxes_from_xyxy(xyxy, box_format).astype(np.float32)
    if normalized:
        boxes = (boxes / np.array([W, H, W, H], np.float32)).astype(np.float32)
    n = len(OBJECTS)
    sample: dict[str, Any] = {
        "image": torch.from_numpy(image).permute(2, 0, 1),
        "boxes": torch.from_numpy(boxes),
        "labels": torch.arange(n, dtype=torch.int64),
        "track_ids": torch.arange(10, 10 + n, dtype=torch.int64),
        "annotation_ids": torch.arange(100, 100 + n, dtype=torch.int64),
        "frame_labels": torch.tensor([0.0, 1.0]),
        "video_id": "cam",
        "view_id": None,
        "frame_index": 7,
    }
    if masks:
        sample["masks"] = torch.from_numpy(m)
    return sample


def colour_pixels(image: torch.Tensor, colour: tuple[int, int, int]) -> np.ndarray:
    """(H, W) bool: where the (3, H, W) image shows exactly this colour."""
    arr = image.permute(1, 2, 0).numpy()
    return np.all(arr == np.array(colour, np.uint8), axis=-1)


def check_objects(out: dict[str, Any], *, drops_by_centre: bool = False) -> None:
    """Each returned box encloses its object's pixels within 1 px, each mask equals them, and every object with
    pixels left in the image still has its box (identified by its annotation id), except where the transform
    drops boxes whose centre left the crop (``RandomIoUCrop``, as in SSD)."""
    image = out["image"]
    assert image.dtype == torch.uint8 and image.dim() == 3
    kept = out["annotation_ids"].tolist()
    assert out["labels"].tolist() == [a - 100 for a in kept] and out["track_ids"].tolist() == [a - 90 for a in kept]
    for j, aid in enumerate(kept):
        colour = OBJECTS[aid - 100][0]
        pixels = colour_pixels(image, colour)
        ys, xs = np.nonzero(pixels)
        assert len(xs), f"object {aid} kept but no pixel of it is left"
        x0, y0, x1, y1 = out["boxes"][j].tolist()
        assert x0 - 1 <= xs.min() and xs.max() + 1 <= x1 + 1 and y0 - 1 <= ys.min() and ys.max() + 1 <= y1 + 1, (
            aid,
            (x0, y0, x1, y1),
            (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1),
        )
        np.testing.assert_array_equal(out["masks"][j].numpy().astype(bool), pixels)
    for aid in set(range(100, 100 + len(OBJECTS))) - set(kept) if not drops_by_centre else ():
        # Dropped boxes are those whose object left the image (or kept under a pixel of it).
        assert colour_pixels(image, OBJECTS[aid - 100][0]).sum() <= 2, f"object {aid} is visible but was dropped"


class CropColumns:
    """A fixed crop that removes the ``left`` first columns from every tv_tensor of the sample."""

    def __init__(self, left: int) -> None:
        self.left = left

    def __call__(self, d: dict[str, Any]) -> dict[str, Any]:
        kinds = (tv.tv_tensors.Image, tv.tv_tensors.BoundingBoxes, tv.tv_tensors.Mask)
        crop = v2.functional.crop
        return {k: crop(v, 0, self.left, H, W - self.left) if isinstance(v, kinds) else v for k, v in d.items()}


GEOMETRIC = {
    "hflip": v2.RandomHorizontalFlip(p=1.0),
    "vflip": v2.RandomVerticalFlip(p=1.0),
    "resize": v2.Resize((60, 90), interpolation=NEAREST),
    "random_resized_crop": v2.RandomResizedCrop((64, 64), scale=(0.3, 1.0), interpolation=NEAREST),
    "affine": v2.RandomAffine(degrees=(20, 30), shear=(5, 10), interpolation=NEAREST),
    "perspective": v2.RandomPerspective(distortion_scale=0.4, p=1.0, interpolation=NEAREST),
    "zoom_out": v2.RandomZoomOut(fill={tv.tv_tensors.Image: 0, "others": 0}, side_range=(1.5, 2.5), p=1.0),
    "iou_crop": v2.RandomIoUCrop(),
}


@pytest.mark.parametrize("name", sorted(GEOMETRIC))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_boxes_and_masks_follow_the_pixels(name: str, seed: int) -> None:
    torch.manual_seed(seed)
    out = V2Transform(GEOMETRIC[name]).with_layout("xyxy", False)(tensor_sample())
    check_objects(out, drops_by_centre=name == "iou_crop")
    assert out["frame_labels"].tolist() == [0.0, 1.0] and out["video_id"] == "cam" and out["frame_index"] == 7


def test_a_flip_moves_each_box_to_its_mirror_exactly() -> None:
    sample = tensor_sample()
    out = V2Transform(v2.RandomHorizontalFlip(p=1.0)).with_layout("xyxy", False)(sample)
    x0, y0, x1, y1 = sample["boxes"].unbind(1)
    np.testing.assert_array_equal(out["boxes"].numpy(), torch.stack([W - x1, y0, W - x0, y1], 1).numpy())
    torch.testing.assert_close(out["image"], sample["image"].flip(-1))


def test_a_box_that_leaves_the_image_takes_its_label_track_and_annotation_id_with_it() -> None:
    # Cropping the left 64 columns away leaves only the objects whose pixels reach past x = 64.
    crop = CropColumns(64)
    out = V2Transform(crop).with_layout("xyxy", False)(tensor_sample())
    # The green rectangle (x 70..118) and the disc (x 46..74) reach past x = 64; red and yellow end before it.
    assert out["annotation_ids"].tolist() == [101, 102]
    assert out["labels"].tolist() == [1, 2] and out["track_ids"].tolist() == [11, 12]
    assert out["masks"].shape == (2, H, 64)
    check_objects(out)


def test_a_box_that_leaves_the_image_takes_its_attributes_with_it() -> None:
    # Every per-target key of the sample schema follows the kept boxes, in its own dtype.
    sample = tensor_sample()
    sample["attributes"] = torch.tensor([[0.0, 0.5], [1.0, 0.25], [float("nan"), 0.75], [1.0, 1.0]])
    out = V2Transform(CropColumns(64)).with_layout("xyxy", False)(sample)
    assert out["annotation_ids"].tolist() == [101, 102]
    assert out["attributes"].dtype == torch.float32
    torch.testing.assert_close(out["attributes"], sample["attributes"][1:3], equal_nan=True)


def test_a_box_cut_by_the_crop_is_clamped_to_the_image() -> None:
    crop = CropColumns(30)
    out = V2Transform(crop).with_layout("xyxy", False)(tensor_sample())
    ids = out["annotation_ids"].tolist()
    assert 100 in ids  # the red rectangle spans x 10..40: 10 columns remain
    assert out["boxes"][ids.index(100)].tolist() == [0.0, 12.0, 10.0, 50.0]
    check_objects(out)


@pytest.mark.parametrize("box_format", ["xyxy", "xywh", "cxcywh"])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("identity", ["identity", "lambda", "flip_p0"])
def test_identity_transforms_give_back_the_sample_bit_for_bit(box_format: str, normalized: bool, identity: str) -> None:
    rng = np.random.default_rng(5)
    sample = tensor_sample(box_format, normalized)
    x0 = rng.uniform(0, W - 20, 4)
    y0 = rng.uniform(0, H - 20, 4)
    xyxy = np.stack([x0, y0, x0 + rng.uniform(1, 19, 4), y0 + rng.uniform(1, 19, 4)], 1).astype(np.float32)
    boxes = boxes_from_xyxy(xyxy, box_format).astype(np.float32)
    if normalized:
        boxes = (boxes / np.array([W, H, W, H], np.float32)).astype(np.float32)
    sample["boxes"] = torch.from_numpy(boxes)
    fn = {"identity": v2.Identity(), "lambda": lambda d: d, "flip_p0": v2.RandomHorizontalFlip(p=0.0)}[identity]
    out = V2Transform(fn).with_layout(box_format, normalized)(sample)
    assert set(out) == set(sample)
    for key, value in sample.items():
        if isinstance(value, torch.Tensor):
            assert out[key].dtype == value.dtype and type(out[key]) is torch.Tensor, key
            assert torch.equal(out[key], value), key
        else:
            assert out[key] == value, key


def test_one_draw_for_every_frame_of_a_clip() -> None:
    # T identical frames: one draw of flip, crop and colour for the clip leaves them identical.
    sample = tensor_sample()
    t = 6
    clip = dict(sample)
    clip["image"] = sample["image"].unsqueeze(0).repeat(t, 1, 1, 1)
    for key in ("boxes", "labels", "track_ids", "annotation_ids", "masks"):
        clip[key] = [sample[key].clone() for _ in range(t)]
    clip["frame_labels"] = torch.zeros(t, 2)
    del clip["frame_index"]
    clip["frame_indices"] = torch.arange(t)
    pipeline = v2.Compose(
        [
            v2.RandomHorizontalFlip(p=0.5),
            v2.RandomResizedCrop((64, 64), scale=(0.3, 1.0), interpolation=NEAREST),
            v2.ColorJitter(brightness=0.5, hue=0.2),
        ]
    )
    flips = set()
    for seed in range(8):
        torch.manual_seed(seed)
        out = V2Transform(pipeline).with_layout("xyxy", False)(clip)
        assert out["image"].shape[0] == t and len(out["boxes"]) == t
        for k in range(1, t):
            assert torch.equal(out["image"][k], out["image"][0])
            assert torch.equal(out["boxes"][k], out["boxes"][0])
            assert torch.equal(out["annotation_ids"][k], out["annotation_ids"][0])
            assert torch.equal(out["masks"][k], out["masks"][0])
        flips.add(bool(out["boxes"][0][0, 0] > W / 2) if len(out["boxes"][0]) else None)
        assert torch.equal(out["frame_indices"], torch.arange(t)) and out["frame_labels"].shape == (t, 2)


def test_a_clip_frame_by_frame_shows_one_flip_and_one_crop() -> None:
    # Geometry only (no colour): each frame's objects follow the same flip and crop; checked frame by frame.
    sample = tensor_sample()
    t = 4
    clip = {"image": sample["image"].unsqueeze(0).repeat(t, 1, 1, 1), "video_id": "cam"}
    for key in ("boxes", "labels", "track_ids", "annotation_ids", "masks"):
        clip[key] = [sample[key].clone() for _ in range(t)]
    torch.manual_seed(3)
    pipeline = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.RandomResizedCrop((64, 64), interpolation=NEAREST)])
    out = V2Transform(pipeline).with_layout("xyxy", False)(clip)
    for k in range(t):
        frame = {key: out[key][k] for key in ("image", "boxes", "labels", "track_ids", "annotation_ids", "masks")}
        check_objects(frame)


def test_normalized_cxcywh_comes_back_normalized_after_a_resize() -> None:
    sample = tensor_sample("cxcywh", True)
    out = V2Transform(v2.Resize((48, 64), interpolation=NEAREST)).with_layout("cxcywh", True)(sample)
    # Halving both sides keeps fractions: the boxes come back as they were (to float32 rounding).
    torch.testing.assert_close(out["boxes"], sample["boxes"], atol=1e-6, rtol=0)


def test_a_transform_that_returns_a_pair_is_refused_naming_the_sample() -> None:
    bridge = V2Transform(lambda d: (d["image"], d)).with_layout("xyxy", False)
    with pytest.raises(TransformError, match=r"video 'cam', frame 7\).*must return the sample dict"):
        bridge(tensor_sample())


def test_a_transform_that_returns_a_plain_tensor_image_is_refused() -> None:
    bridge = V2Transform(lambda d: {**d, "image": torch.zeros(3, 4, 4, dtype=torch.uint8)}).with_layout("xyxy", False)
    with pytest.raises(
        TransformError, match=r"frame 7\).*returned image Tensor of shape \(3, 4, 4\); expected tv_tensors"
    ):
        bridge(tensor_sample())


def test_a_transform_that_drops_labels_but_not_boxes_is_refused() -> None:
    bridge = V2Transform(lambda d: {**d, "labels": d["labels"][:1]}).with_layout("xyxy", False)
    with pytest.raises(TransformError, match=r"frame 7\).*returned 4 boxes but 1 labels"):
        bridge(tensor_sample())


def test_masks_of_the_wrong_size_are_refused() -> None:
    bridge = V2Transform(lambda d: {**d, "masks": tv.tv_tensors.Mask(d["masks"][:, :10])}).with_layout("xyxy", False)
    with pytest.raises(TransformError, match=r"masks of shape \(4, 10, 128\); expected \(4, 96, 128\)"):
        bridge(tensor_sample())


def test_boxes_that_are_no_bounding_boxes_are_refused() -> None:
    bridge = V2Transform(lambda d: {**d, "boxes": torch.zeros(4, 4)}).with_layout("xyxy", False)
    with pytest.raises(TransformError, match=r"returned boxes Tensor; expected tv_tensors.BoundingBoxes"):
        bridge(tensor_sample())


def test_options_are_checked() -> None:
    with pytest.raises(OptionError, match="takes a callable transform, got 3"):
        V2Transform(3)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"min_size must be a number >= 1 \(pixels\), got 0.5"):
        V2Transform(v2.Identity(), min_size=0.5)
    with pytest.raises(OptionError, match="made for box_format='xywh', normalized=False, but the dataset gives"):
        V2Transform(v2.Identity(), box_format="xywh").with_layout("xyxy", False)
    with pytest.raises(OptionError, match="normalized must be True or False, got 'no'"):
        V2Transform(v2.Identity(), normalized="no")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="unknown box_format 'yolo'"):
        V2Transform(v2.Identity()).with_layout("yolo", False)


def test_it_pickles_with_its_layout() -> None:
    bridge = V2Transform(v2.RandomHorizontalFlip(p=1.0)).with_layout("xywh", True)
    again = pickle.loads(pickle.dumps(bridge))
    sample = tensor_sample("xywh", True)
    assert torch.equal(again(sample)["boxes"], bridge(sample)["boxes"])
