"""Train a torchvision detector on a vidlabel frame store with transforms.v2 augmentation.

    pip install "vidlabel[vision]"     # torch and torchvision, pinned together
    python examples/train_detection.py STORE --steps 100

The model is built without downloaded weights (``weights=None, weights_backbone=None``), so this runs offline;
pass ``--pretrained`` on a machine that can download torchvision's weights. The augmentation moves the boxes with
the pixels (``V2Transform``), and the targets go to the model as torchvision's detection API wants them: a list
of images and a list of ``{"boxes": (N, 4) float32 xyxy pixels, "labels": (N,) int64}`` dicts, label 0 being the
background (hence ``label_offset=1``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from torch.utils.data import DataLoader
from torchvision import tv_tensors
from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
from torchvision.transforms import v2

from vidlabel.torch_data import StoreFrames, V2Transform, collate_frames


def augmentation() -> V2Transform:
    """Flip, colour and zoom-out drawn once per sample; boxes follow, those cut below a pixel are dropped."""
    return V2Transform(
        v2.Compose(
            [
                v2.RandomHorizontalFlip(p=0.5),
                v2.RandomPhotometricDistort(p=0.5),
                v2.RandomZoomOut(fill={tv_tensors.Image: 114, "others": 0}, side_range=(1.0, 1.5), p=0.3),
            ]
        )
    )


def main(argv: Sequence[str] | None = None) -> list[float]:
    """Run ``--steps`` training steps; returns the loss of each step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="a frame store written by `vidlabel export`")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--min-size", type=int, default=320, help="the detector's input size (shorter side)")
    args = parser.parse_args(argv)

    data = StoreFrames(args.store, kinds=("box",), label_offset=1, transform=augmentation())
    loader = DataLoader(
        data, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, collate_fn=collate_frames
    )
    model = fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None,
        weights_backbone=None,
        num_classes=len(data.class_names) + 1,
        min_size=args.min_size,
        max_size=args.min_size * 2,
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9, weight_decay=1e-4)
    model.train()
    losses: list[float] = []
    while len(losses) < args.steps:
        for batch in loader:
            images = [image.float() / 255 for image in batch["image"]]
            targets = [{"boxes": b, "labels": lab} for b, lab in zip(batch["boxes"], batch["labels"])]
            loss = sum(model(images, targets).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print(f"step {len(losses)}: loss {losses[-1]:.3f}")
            if len(losses) == args.steps:
                break
    return losses


if __name__ == "__main__":
    main()
