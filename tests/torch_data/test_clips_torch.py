"""Clips in PyTorch: ClipStream over DataLoader workers x ranks (every clip exactly once, equal batches per
rank, a new order each epoch, the same order for the same seed and epoch), VideoClips, collate_clips."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import ClipSpec, Dataset, FrameSamples, RandomClips, SlidingClips
from vidlabel.errors import OptionError, SampleOutOfRangeError
from vidlabel.samples import ClipSamples
from vidlabel.schema import CLIP, check_sample
from vidlabel.torch_data import ClipStream, VideoClips, collate_clips, to_torch_clip

SHARDING_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS")
SPEC = ClipSpec(4, step=2)


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SHARDING_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three generated videos of 24, 25 and 26 frames, a keyframe every 8."""
    root = tmp_path_factory.mktemp("clips_torch")
    make_dataset(root, videos=("a", "b", "c"), n_frames=24, gop=8)
    return root


def clips_of(root: Path, sampler: Any = None, spec: ClipSpec = SPEC) -> ClipSamples:
    samples = FrameSamples(Dataset.open(root / "ds"), frames="all", kinds=("box",))
    return samples.clips(spec, SlidingClips(3) if sampler is None else sampler)


def check_batch(batch: dict[str, Any], t: int = 4) -> list[int]:
    """Every frame of every clip shows its number; returns the batch's clip indices."""
    image = batch["image"]
    assert image.dtype == torch.uint8 and image.dim() == 5 and image.shape[1:3] == (t, 3)
    for b in range(image.shape[0]):
        for k in range(t):
            assert read_frame_number(image[b, k].permute(1, 2, 0).numpy()) == int(batch["frame_indices"][b, k])
    return batch["clip_index"].tolist()


def run_epoch(dataset: Any, *, workers: int = 2, batch_size: int = 3, **options: Any) -> list[list[int]]:
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, collate_fn=collate_clips, **options)
    return [check_batch(batch) for batch in loader]


def test_clip_stream_every_clip_once_across_workers_and_ranks(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clips = clips_of(root)
    n = len(clips)
    assert n == 6 + 7 + 7  # windows of span 7 every 3 frames: every clip exactly once over 2 ranks
    runs = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        stream = ClipStream(clips, seed=3)
        stream.set_epoch(1)
        assert len(stream) == n // 2
        runs.append(run_epoch(stream))
    assert len(runs[0]) == len(runs[1]) > 0  # equal batch counts per rank
    seen = Counter(i for run in runs for batch in run for i in batch)
    assert seen == Counter(range(n))


def test_clip_stream_one_process_every_clip_once_and_orders(root: Path) -> None:
    clips = clips_of(root)
    stream = ClipStream(clips, seed=5)
    epoch0 = [i for batch in run_epoch(stream) for i in batch]
    stream.set_epoch(1)
    epoch1 = [i for batch in run_epoch(stream) for i in batch]
    again = ClipStream(clips_of(root), seed=5)
    again.set_epoch(1)
    epoch1_again = [i for batch in run_epoch(again) for i in batch]
    assert sorted(epoch0) == sorted(epoch1) == list(range(len(clips)))
    assert epoch0 != epoch1 and epoch1 == epoch1_again


def test_clip_stream_random_clips_new_each_epoch(root: Path) -> None:
    stream = ClipStream(clips_of(root, RandomClips(3, seed=1)), seed=0)

    def frames_read(epoch: int) -> list[tuple[str, tuple[int, ...]]]:
        stream.set_epoch(epoch)
        out = []
        for batch in DataLoader(stream, batch_size=4, num_workers=2, collate_fn=collate_clips):
            check_batch(batch)
            out += [(v, tuple(f)) for v, f in zip(batch["video_id"], batch["frame_indices"].tolist())]
        return sorted(out)

    first, second = frames_read(0), frames_read(1)
    assert len(first) == len(second) == 9 and first != second
    assert first == frames_read(0)


def test_collate_clips_layout(root: Path) -> None:
    clips = clips_of(root)
    batch = collate_clips([clips.read(0), clips.read(5)])
    assert batch["image"].shape == (2, 4, 3, 48, 64)
    assert batch["frame_labels"].shape == (2, 4, 3) and batch["clip_labels"].shape == (2, 3)
    assert batch["frame_indices"].shape == batch["timestamps_us"].shape == (2, 4)
    assert batch["frame_indices"].dtype == batch["timestamps_us"].dtype == torch.int64
    assert batch["clip_index"].tolist() == [0, 5] and batch["video_id"] == ["a", "a"]
    assert len(batch["boxes"]) == 2 and all(len(per_clip) == 4 for per_clip in batch["boxes"])
    one = clips.read(5)
    for t in range(4):
        np.testing.assert_array_equal(batch["boxes"][1][t].numpy(), one["boxes"][t])
        np.testing.assert_array_equal(batch["track_ids"][1][t].numpy(), one["track_ids"][t])
        np.testing.assert_array_equal(batch["image"][1, t].permute(1, 2, 0).numpy(), one["image"][t])
    sample = to_torch_clip(one)
    assert sample["image"].shape == (4, 3, 48, 64) and isinstance(sample["labels"], list)
    check_sample(sample, CLIP, torch=True, dims={"T": 4, "C": 3, "H": 48, "W": 64}, optional=False)


def test_video_clips_map_style_with_distributed_sampler(root: Path) -> None:
    clips = clips_of(root)
    dataset = VideoClips(clips)
    assert len(dataset) == len(clips)
    got: list[int] = []
    counts = []
    for rank in range(2):
        sampler = DistributedSampler(dataset, num_replicas=2, rank=rank, shuffle=True, seed=2)
        sampler.set_epoch(1)
        run = run_epoch(dataset, sampler=sampler)
        counts.append(len(run))
        got += [i for batch in run for i in batch]
    assert counts[0] == counts[1] and sorted(got) == list(range(len(clips)))
    item = dataset[3]
    np.testing.assert_array_equal(item["image"].permute(0, 2, 3, 1).numpy(), clips.read(3)["image"])
    with pytest.raises(SampleOutOfRangeError, match=r"out of range"):
        dataset[len(clips)]


def test_video_clips_follow_the_epoch_of_a_random_sampler(root: Path) -> None:
    dataset = VideoClips(clips_of(root, RandomClips(2, seed=4)))
    first = [dataset[i]["frame_indices"].tolist() for i in range(len(dataset))]
    dataset.set_epoch(3)
    third = [dataset[i]["frame_indices"].tolist() for i in range(len(dataset))]
    assert first != third and len(first) == len(third) == 6


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda c: ClipStream("clips"), r"expected a vidlabel ClipSamples, got str"),
        (lambda c: ClipStream(c.samples), r"expected a vidlabel ClipSamples, got FrameSamples \(make one with"),
        (lambda c: ClipStream(c, seed=-1), r"seed must be an integer >= 0, got -1"),
        (lambda c: ClipStream(c, transform=3), r"transform must be callable or None, got 3"),
        (lambda c: VideoClips(c, transform="x"), r"transform must be callable or None"),
        (lambda c: collate_clips([]), r"collate_clips got an empty batch"),
        (lambda c: collate_clips(c.read(0)), r"takes a sequence of clip sample dicts, got dict"),
        (
            lambda c: collate_clips([c.read(0), clips_of_three(c).read(0)]),
            r"'image' differs in shape across the batch",
        ),
    ],
)
def test_bad_input_is_refused(root: Path, make: Any, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        make(clips_of(root))


def clips_of_three(clips: ClipSamples) -> ClipSamples:
    return clips.samples.clips(ClipSpec(3), SlidingClips(5))


def test_drop_last_that_drops_everything_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = FrameSamples(Dataset.open(root / "ds"), frames="all", kinds=("box",), videos=["a"])
    one = samples.clips(ClipSpec(4), SlidingClips(100))  # a single clip
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(OptionError, match=r"ClipStream: drop_last=True with 1 samples over 2 ranks"):
        next(iter(ClipStream(one, drop_last=True)))
