"""Train a small temporal model on clips with transforms.v2 augmentation drawn once per clip.

    pip install "vidlabel[vision]"     # torch and torchvision, pinned together
    python examples/train_clips_v2.py DATASET --steps 50

Clips of 8 frames, 2 apart, slide over every video of the dataset's latest release; each clip gets one random
flip and one resized crop for all its frames (``V2Transform``), so the motion between frames is kept. A per-frame
CNN feeds a GRU that predicts every frame's ``frame_labels`` (the time markers), the usual target of action
recognition and temporal localisation.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from vidlabel import ClipSpec, Dataset, FrameSamples, SlidingClips
from vidlabel.torch_data import ClipStream, V2Transform, collate_clips


class FrameGRU(nn.Module):
    """(B, T, 3, H, W) uint8 clips to (B, T, C) logits: a small CNN per frame, a GRU over the frames."""

    def __init__(self, n_classes: int, width: int = 16) -> None:
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(3, width, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.gru = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, n_classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        features = self.cnn(clips.flatten(0, 1).float() / 255).view(b, t, -1)
        return self.head(self.gru(features)[0])


def main(argv: Sequence[str] | None = None) -> list[float]:
    """Run ``--steps`` training steps; returns the loss of each step."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a vidlabel dataset with a release")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--size", type=int, default=112, help="the side of the square crop fed to the model")
    args = parser.parse_args(argv)

    samples = FrameSamples(Dataset.open(args.dataset), frames="all", kinds=("box",))
    clips = samples.clips(ClipSpec(8, step=2), SlidingClips(4))
    augment = V2Transform(
        v2.Compose(
            [
                v2.RandomHorizontalFlip(p=0.5),
                v2.RandomResizedCrop((args.size, args.size), scale=(0.6, 1.0), antialias=True),
                v2.ColorJitter(brightness=0.2, contrast=0.2),
            ]
        )
    )
    stream = ClipStream(clips, transform=augment, seed=0)
    loader = DataLoader(stream, batch_size=args.batch_size, num_workers=args.workers, collate_fn=collate_clips)
    model = FrameGRU(len(samples.class_names))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    losses: list[float] = []
    epoch = 0
    while len(losses) < args.steps:
        stream.set_epoch(epoch)
        for batch in loader:
            loss = loss_fn(model(batch["image"]), batch["frame_labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print(f"step {len(losses)}: loss {losses[-1]:.3f}")
            if len(losses) == args.steps:
                break
        epoch += 1
    return losses


if __name__ == "__main__":
    main()
