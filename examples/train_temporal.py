"""Train a tiny temporal model on clips read from a frame store.

A per-frame CNN turns each frame of a clip into a feature vector, a GRU runs
over the clip's frames, and a linear head predicts each frame's
``frame_labels`` (the markers active on it) with a multi-label loss. The
store is one exported with a clip context::

    vidlabel export DATASET STORE --clip-frames 8 --clip-step 2
    python examples/train_temporal.py STORE --steps 100

Each printed line is ``step N loss L``.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader

from vidlabel.torch_data import StoreClips, collate_clips


class FrameCNNGRU(nn.Module):
    """(B, T, 3, H, W) uint8 clips to (B, T, C) per-frame logits."""

    def __init__(self, classes: int, width: int = 16) -> None:
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )  # fmt: skip
        self.gru = nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        b, t = clips.shape[:2]
        x = clips.flatten(0, 1).float() / 255.0
        features = self.cnn(x).view(b, t, -1)
        out, _ = self.gru(features)
        return self.head(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    clips = StoreClips(args.store)
    loader = DataLoader(
        clips, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, collate_fn=collate_clips
    )
    model = FrameCNNGRU(len(clips.class_names))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    step = 0
    while step < args.steps:
        for batch in loader:
            logits = model(batch["image"])
            loss = loss_fn(logits, batch["frame_labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            print(f"step {step} loss {loss.item():.4f}", flush=True)
            if step >= args.steps:
                break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
