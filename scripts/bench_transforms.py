"""Per-sample cost of V2Transform's bridge (tv_tensors there and back) against the transform it wraps.

For 640x480 and 1280x720 samples with 8 boxes and labels, track ids and annotation ids (masks off, as in
detection), in one process, runs alternating:

- ``transform``: a horizontal flip + RandomResizedCrop((H, W) of the input) on a dict of tv_tensors made
  beforehand, what a torchvision user's pipeline costs by itself;
- ``transform+sanitize``: the same followed by ClampBoundingBoxes and SanitizeBoundingBoxes, as torchvision
  recommends after a crop;
- ``bridge``: ``V2Transform`` of the same pipeline on the sample as the datasets give it (tensors), back to the
  sample layout;
- ``bridge alone``: ``V2Transform(lambda d: d)``, the conversion there and back with its clamp and sanitize and
  no transform: the bridge's own cost.

Prints samples/s with CPU ms a sample, and the bridge's own cost as a share of the flip + resized crop, from CPU
time (less disturbed by other work on the machine than wall time) and from wall time (goal <= 10%). Needs torchvision (``pip install "vidlabel[vision]"``).

Usage: python scripts/bench_transforms.py [--repeat 5] [--samples 40] [--sizes 640x480,1280x720]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import alternate, machine, rates

from vidlabel.torch_data import V2Transform


def make_sample(width: int, height: int, n_boxes: int = 8) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    image = torch.from_numpy(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).permute(2, 0, 1)
    x0 = rng.uniform(0, width * 0.7, n_boxes)
    y0 = rng.uniform(0, height * 0.7, n_boxes)
    boxes = np.stack([x0, y0, x0 + width * 0.2, y0 + height * 0.2], 1).astype(np.float32)
    return {
        "image": image,
        "boxes": torch.from_numpy(boxes),
        "labels": torch.arange(n_boxes),
        "track_ids": torch.arange(n_boxes),
        "annotation_ids": torch.arange(n_boxes),
        "frame_labels": torch.zeros(3),
        "video_id": "bench",
        "view_id": None,
        "frame_index": 0,
    }


def pipeline(width: int, height: int) -> v2.Compose:
    return v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.RandomResizedCrop((height, width), antialias=True)])


def runner(fn: Any, inputs: Any, n: int) -> Any:
    def run() -> int:
        torch.manual_seed(0)
        for _ in range(n):
            fn(inputs)
        return n

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--sizes", default="640x480,1280x720")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {machine()}; torch {torch.__version__}, one thread")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.split("x"))
        sample = make_sample(width, height)
        tv_inputs = {
            "image": tv_tensors.Image(sample["image"]),
            "boxes": tv_tensors.BoundingBoxes(sample["boxes"], format="XYXY", canvas_size=(height, width)),
            "labels": sample["labels"],
        }
        flip_crop = pipeline(width, height)
        sanitized = v2.Compose([flip_crop, v2.ClampBoundingBoxes(), v2.SanitizeBoundingBoxes()])
        bridge = V2Transform(flip_crop).with_layout("xyxy", False)
        runs = alternate(
            {
                "transform": runner(flip_crop, tv_inputs, args.samples),
                "transform+sanitize": runner(sanitized, tv_inputs, args.samples),
                "bridge": runner(bridge, sample, args.samples),
                "bridge alone": runner(V2Transform(lambda d: d).with_layout("xyxy", False), sample, args.samples),
            },
            args.repeat,
        )
        print(f"{size}, 8 boxes, flip + RandomResizedCrop:")
        for name, result in runs.items():
            print(f"  {name:20s} {rates(result)}")
        cpu = {name: statistics.median(r[1] for r in result) for name, result in runs.items()}
        wall = {name: statistics.median(1000 / r[0] for r in result) for name, result in runs.items()}
        print(
            f"| bridge's own cost, {size} | {cpu['bridge alone']:.2f} ms CPU a sample, "
            f"{cpu['bridge alone'] / cpu['transform']:.1%} of the flip + resized crop's {cpu['transform']:.2f} ms "
            f"(wall: {wall['bridge alone'] / wall['transform']:.1%}) | <= 10% |"
        )


if __name__ == "__main__":
    main()
