"""V2Transform over every dataset, in DataLoader workers under fork and spawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import ClipSpec, Dataset, FrameSamples, SlidingClips, export
from vidlabel.errors import VidlabelError
from vidlabel.torch_data import (
    ClipStream,
    PlannedStream,
    StoreClips,
    StoreClipStream,
    StoreFrames,
    StoreStream,
    V2Transform,
    VideoClips,
    VideoFrames,
    VideoStream,
    collate_clips,
    collate_frames,
)

pytestmark = pytest.mark.vision
tv = pytest.importorskip("torchvision")
from torchvision.transforms import v2  # noqa: E402

W = 64


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("transforms")
    ds = make_dataset(root, videos=("a", "b"), n_frames=16)
    export(ds, root / "store", kinds=("box", "mask", "marker"), progress=False)
    return root, ds


def flip() -> V2Transform:
    return V2Transform(v2.RandomHorizontalFlip(p=1.0))


def mirrored(boxes: torch.Tensor, box_format: str) -> torch.Tensor:
    if box_format == "xyxy":
        x0, y0, x1, y1 = boxes.unbind(1)
        return torch.stack([W - x1, y0, W - x0, y1], 1)
    x, y, w, h = boxes.unbind(1)
    return torch.stack([W - x - w, y, w, h], 1)


def check_flipped(plain: dict[str, Any], out: dict[str, Any], box_format: str) -> None:
    """``out`` is ``plain`` mirrored: image columns reversed, boxes mirrored, every id kept in order."""
    assert torch.equal(torch.as_tensor(out["image"]), torch.as_tensor(plain["image"]).flip(-1))
    torch.testing.assert_close(out["boxes"], mirrored(plain["boxes"], box_format), rtol=0, atol=1e-5)
    for key in ("labels", "track_ids", "annotation_ids"):
        assert torch.equal(out[key], plain[key]), key
    if "masks" in plain:
        assert torch.equal(out["masks"], plain["masks"].flip(-1))
    assert torch.equal(out["frame_labels"], plain["frame_labels"])
    assert (out["video_id"], out["frame_index"]) == (plain["video_id"], plain["frame_index"])
    # The frame number is drawn in the top-left corner: flipped back, it still reads as the sample's frame.
    image = torch.as_tensor(out["image"]).flip(-1).permute(1, 2, 0).numpy()
    assert read_frame_number(np.ascontiguousarray(image)) == plain["frame_index"]


@pytest.mark.parametrize("box_format", ["xyxy", "xywh"])
def test_store_frames_and_stream(world: tuple[Path, Dataset], box_format: str) -> None:
    root, _ = world
    options = {"box_format": box_format, "with_masks": True}
    plain, flipped = StoreFrames(root / "store", **options), StoreFrames(root / "store", transform=flip(), **options)
    assert len(plain) > 0
    for i in range(len(plain)):
        check_flipped(plain[i], flipped[i], box_format)
    stream = StoreStream(root / "store", transform=flip(), shuffle=False, **options)
    by_frame = {(s["video_id"], s["frame_index"]): s for s in (plain[i] for i in range(len(plain)))}
    seen = 0
    for sample in stream:
        check_flipped(by_frame[(sample["video_id"], sample["frame_index"])], sample, box_format)
        seen += 1
    assert seen == len(plain)


def test_video_datasets(world: tuple[Path, Dataset]) -> None:
    _, ds = world
    samples = FrameSamples(ds, box_format="xywh", with_masks=True)
    plain = VideoFrames(samples)
    by_frame = {(s["video_id"], s["frame_index"]): s for s in (plain[i] for i in range(len(plain)))}
    flipped = VideoFrames(samples, transform=flip())
    for i in range(len(plain)):
        check_flipped(plain[i], flipped[i], "xywh")
    plan = samples.plan_reads(range(len(samples)), seed=0)
    for dataset in (VideoStream(samples, transform=flip()), PlannedStream(samples, plan, transform=flip())):
        got = list(dataset)
        assert len(got) == len(plain)
        for sample in got:
            check_flipped(by_frame[(sample["video_id"], sample["frame_index"])], sample, "xywh")


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_in_dataloader_workers(world: tuple[Path, Dataset], context: str) -> None:
    root, _ = world
    plain = StoreFrames(root / "store", with_masks=True)
    flipped = StoreFrames(root / "store", with_masks=True, transform=flip())
    loader = DataLoader(
        flipped, batch_size=4, num_workers=2, collate_fn=collate_frames, multiprocessing_context=context
    )
    seen = 0
    for batch in loader:
        for j in range(len(batch["video_id"])):
            sample = {k: (v[j] if isinstance(v, (list, torch.Tensor)) else v) for k, v in batch.items()}
            i = plain.index.index((sample["video_id"], int(sample["frame_index"])))
            check_flipped(plain[i], sample, "xyxy")
            seen += 1
    assert seen == len(plain)


def test_a_transform_made_for_another_layout_is_refused_by_the_dataset(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    with pytest.raises(VidlabelError, match="made for box_format='xywh', normalized=False, but the dataset gives"):
        StoreFrames(root / "store", transform=V2Transform(v2.Identity(), box_format="xywh"))


@pytest.mark.parametrize("dataset", ["VideoClips", "ClipStream"])
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_clip_datasets_flip_every_frame_of_a_clip_or_none(
    world: tuple[Path, Dataset], dataset: str, context: str
) -> None:
    _, ds = world
    samples = FrameSamples(ds, frames="all", kinds=("box",), box_format="xywh")
    clips = samples.clips(ClipSpec(4, step=2), SlidingClips(3))
    plain = VideoClips(clips)
    by_clip = {int(plain[i]["clip_index"]): plain[i] for i in range(len(plain))}
    augment = V2Transform(v2.RandomHorizontalFlip(p=0.5))
    data = VideoClips(clips, transform=augment) if dataset == "VideoClips" else ClipStream(clips, transform=augment)
    loader = DataLoader(data, batch_size=2, num_workers=2, collate_fn=collate_clips, multiprocessing_context=context)
    outcomes = []
    for batch in loader:
        for b, index in enumerate(batch["clip_index"].tolist()):
            before, images = by_clip[index], batch["image"][b]
            flipped = torch.equal(images[0], before["image"][0].flip(-1))
            assert flipped or torch.equal(images[0], before["image"][0])
            for t in range(images.shape[0]):
                want = before["image"][t].flip(-1) if flipped else before["image"][t]
                assert torch.equal(images[t], want), (index, t)
                boxes = mirrored(before["boxes"][t], "xywh") if flipped else before["boxes"][t]
                torch.testing.assert_close(batch["boxes"][b][t], boxes, rtol=0, atol=1e-5)
                assert torch.equal(batch["annotation_ids"][b][t], before["annotation_ids"][t])
            outcomes.append(flipped)
    assert len(outcomes) == len(plain) and len(set(outcomes)) == 2


@pytest.mark.parametrize("dataset", ["StoreClips", "StoreClipStream"])
def test_store_clip_datasets_flip_every_frame_of_a_clip_or_none(world: tuple[Path, Dataset], dataset: str) -> None:
    root, ds = world
    export(ds, root / "clip-store", clip=ClipSpec(4, step=2), kinds=("box",), progress=False)
    plain = StoreClips(root / "clip-store", kinds=("box",), box_format="xywh")
    by_clip = {(s["video_id"], tuple(s["frame_indices"].tolist())): s for s in (plain[i] for i in range(len(plain)))}
    augment = V2Transform(v2.RandomHorizontalFlip(p=0.5))
    kind = StoreClips if dataset == "StoreClips" else StoreClipStream
    data = kind(root / "clip-store", kinds=("box",), box_format="xywh", transform=augment)
    loader = DataLoader(data, batch_size=2, num_workers=2, collate_fn=collate_clips)
    outcomes = []
    for batch in loader:
        for b, video_id in enumerate(batch["video_id"]):
            before = by_clip[(video_id, tuple(batch["frame_indices"][b].tolist()))]
            images = batch["image"][b]
            flipped = torch.equal(images[0], before["image"][0].flip(-1))
            for t in range(images.shape[0]):
                want = before["image"][t].flip(-1) if flipped else before["image"][t]
                assert torch.equal(images[t], want)
                boxes = mirrored(before["boxes"][t], "xywh") if flipped else before["boxes"][t]
                torch.testing.assert_close(batch["boxes"][b][t], boxes, rtol=0, atol=1e-5)
            outcomes.append(flipped)
    assert len(outcomes) == len(plain) and len(set(outcomes)) == 2
