"""VideoStream, VideoFrames, PlannedStream, collate_frames, worker_info: exactly once, determinism, fork and spawn."""

from __future__ import annotations

import pickle
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import object_box, read_frame_number
from tests.samples.test_samples_video import CLIPS, HEIGHT, WIDTH, VideoDataset, build_video_dataset
from vidlabel import Dataset, FrameSamples
from vidlabel.errors import OptionError, SampleIndexTypeError, SampleOutOfRangeError, VidlabelError, VidlabelWarning
from vidlabel.torch_data import PlannedStream, VideoFrames, VideoStream, collate_frames, worker_info
from vidlabel.torch_data import _common as common
from vidlabel.torch_data._common import to_torch_sample

N_SAMPLES = sum(n for n, _ in CLIPS.values())


@pytest.fixture(scope="module")
def vds(tmp_path_factory: pytest.TempPathFactory) -> VideoDataset:
    return build_video_dataset(tmp_path_factory.mktemp("torch_video"))


@pytest.fixture(scope="module")
def samples(vds: VideoDataset) -> FrameSamples:
    return FrameSamples(Dataset.open(vds.path), release=vds.release_id, kinds=("box",))


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def check_tensor_sample(s: dict[str, Any]) -> tuple[str, int]:
    """A tensor sample: (3, H, W) uint8 image showing its frame number; the generator's box."""
    image = s["image"]
    assert isinstance(image, torch.Tensor) and image.dtype == torch.uint8 and image.shape == (3, HEIGHT, WIDTH)
    assert read_frame_number(image.permute(1, 2, 0).numpy()) == s["frame_index"]
    assert s["boxes"].dtype == torch.float32 and s["boxes"][0].tolist() == list(
        object_box(s["frame_index"], WIDTH, HEIGHT)
    )
    assert s["labels"].dtype == torch.int64 and s["frame_labels"].dtype == torch.float32
    return s["video_id"], s["frame_index"]


def batches_to_pairs(loader: DataLoader) -> list[tuple[str, int]]:
    out = []
    for batch in loader:
        assert batch["image"].dtype == torch.uint8 and batch["image"].shape[1:] == (3, HEIGHT, WIDTH)
        for i, (video_id, frame) in enumerate(zip(batch["video_id"], batch["frame_index"].tolist())):
            assert read_frame_number(batch["image"][i].permute(1, 2, 0).numpy()) == frame
            assert batch["boxes"][i][0].tolist() == list(object_box(frame, WIDTH, HEIGHT))
            out.append((video_id, frame))
    return out


# -- worker_info, collate, conversion ------------------------------------------------------------------


def test_worker_info_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_info() == (0, 1)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert worker_info() == (1, 2)
    monkeypatch.setenv("VIDLABEL_WORKER", "2")
    monkeypatch.setenv("VIDLABEL_NUM_WORKERS", "3")
    assert worker_info() == (1 * 3 + 2, 2 * 3)
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(OptionError, match=r"RANK/WORLD_SIZE: 2 must lie in \[0, 2\)"):
        worker_info()
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(OptionError, match="environment variable RANK must be an integer, got 'one'"):
        worker_info()
    monkeypatch.delenv("RANK")  # WORLD_SIZE 2 alone: every process took rank 0 and read the same share
    with pytest.raises(OptionError, match=r"WORLD_SIZE is 2 but RANK is not set: .* rank in \[0, 2\)"):
        worker_info()
    monkeypatch.setattr(common, "process_group_rank", lambda: (1, 2))  # a process group of that world tells
    assert worker_info() == (1 * 3 + 2, 2 * 3)
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert worker_info() == (2, 3)


def test_rank_without_world_size_is_refused_not_read_as_the_only_rank(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a launcher that exports RANK but not WORLD_SIZE: each rank took (0, 1) and read the whole epoch
    for name in ("WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(OptionError, match=r"RANK is 1 but WORLD_SIZE is not set: .*Set WORLD_SIZE to the number"):
        worker_info()
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["obj"])
    with pytest.raises(OptionError, match="RANK is 1 but WORLD_SIZE is not set"):
        list(VideoStream(FrameSamples(ds, release=None)))
    assert common.rank_and_world((1, 3)) == (1, 3)  # the rank a dataset was pickled in tells the world size
    monkeypatch.setattr(common, "process_group_rank", lambda: (1, 2))  # so does a process group
    assert worker_info() == (1, 2)
    monkeypatch.undo()
    monkeypatch.setenv("RANK", "0")  # rank 0 of a world of one: as before
    assert worker_info() == (0, 1)


def _sample(h: int, w: int, n: int, frame: int) -> dict[str, Any]:
    return {
        "image": np.full((h, w, 3), frame, np.uint8),
        "boxes": np.zeros((n, 4), np.float32),
        "labels": np.arange(n, dtype=np.int64),
        "frame_labels": np.array([0, 1], np.float32),
        "video_id": "v",
        "view_id": None,
        "frame_index": frame,
    }


def test_to_torch_sample_and_collate() -> None:
    hwc = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    t = to_torch_sample({**_sample(4, 6, 2, 3), "image": hwc})
    assert t["image"].shape == (3, 4, 6) and t["image"].dtype == torch.uint8
    assert np.array_equal(t["image"].numpy(), hwc.transpose(2, 0, 1))  # channel c, row y, column x
    assert t["image"].data_ptr() == hwc.ctypes.data  # a view, no copy
    assert t["boxes"].shape == (2, 4) and t["frame_index"] == 3 and t["view_id"] is None
    readonly = np.zeros(3, np.int64)
    readonly.setflags(write=False)
    assert to_torch_sample({"labels": readonly})["labels"].tolist() == [0, 0, 0]  # copied, no warning
    batch = collate_frames([to_torch_sample(_sample(4, 6, n, n)) for n in (0, 1, 3)])
    assert batch["image"].shape == (3, 3, 4, 6) and batch["image"].dtype == torch.uint8
    assert batch["image"].is_contiguous(memory_format=torch.channels_last)
    assert [int(batch["image"][i, 2, 3, 5]) for i in range(3)] == [0, 1, 3]
    chw = collate_frames([{"image": torch.full((3, 2, 2), k, dtype=torch.uint8)} for k in (1, 2)])["image"]
    assert chw.is_contiguous() and chw[:, 0, 0, 0].tolist() == [1, 2]
    assert [b.shape[0] for b in batch["boxes"]] == [0, 1, 3] and isinstance(batch["labels"], list)
    assert batch["frame_labels"].shape == (3, 2)
    assert batch["frame_index"].tolist() == [0, 1, 3] and batch["frame_index"].dtype == torch.int64
    assert batch["video_id"] == ["v", "v", "v"] and batch["view_id"] == [None, None, None]
    ragged = collate_frames([to_torch_sample(_sample(4, 6, 1, 0)), to_torch_sample(_sample(5, 6, 1, 1))])
    assert isinstance(ragged["image"], list) and [i.shape for i in ragged["image"]] == [(3, 4, 6), (3, 5, 6)]
    with pytest.raises(OptionError, match="empty batch"):
        collate_frames([])
    with pytest.raises(OptionError, match="lacks key 'boxes'"):
        collate_frames([{"boxes": torch.zeros(1, 4)}, {}])


# -- VideoStream ----------------------------------------------------------------------------------


def stream_pairs(dataset: Any, num_workers: int, context: str | None = None, batch_size: int = 4) -> list:
    loader = DataLoader(
        dataset, batch_size=batch_size, num_workers=num_workers, collate_fn=collate_frames,
        multiprocessing_context=context if num_workers else None,
    )  # fmt: skip
    return batches_to_pairs(loader)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("num_workers", [0, 2, 3])
def test_video_stream_every_sample_once(samples: FrameSamples, num_workers: int) -> None:
    stream = VideoStream(samples, shuffle_buffer=8, seed=5)
    stream.set_epoch(1)
    got = stream_pairs(stream, num_workers)
    assert Counter(got) == Counter(samples.index) and len(got) == N_SAMPLES


@pytest.mark.filterwarnings("ignore:VideoStream under 2 ranks")  # uneven on purpose: the videos' sizes differ
def test_video_stream_two_ranks_two_workers(samples: FrameSamples, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = VideoStream(samples, seed=2)
    got: Counter = Counter()
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        got.update(stream_pairs(stream, 2))
    assert got == Counter(samples.index)


def test_video_stream_ranks_given_unequal_samples_warn_of_the_ddp_hang(
    samples: FrameSamples, monkeypatch: pytest.MonkeyPatch
) -> None:
    # torchrun over the README's minimal loop: whole videos per rank, so the ranks ran different numbers of
    # batches and DDP's next all_reduce waited forever, without a word
    stream = VideoStream(samples, seed=2)
    monkeypatch.setenv("WORLD_SIZE", "2")
    sizes = np.diff(stream._edges)
    per_rank = [sum(int(sizes[samples._codes[v]]) for v in videos) for videos in stream.assignment(0, 2)]
    assert per_rank[0] != per_rank[1] and sum(per_rank) == N_SAMPLES  # the truth: unequal shares
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        said = rf"VideoStream under 2 ranks: epoch 0 gives rank {rank} {per_rank[rank]} samples, .*wait forever"
        with pytest.warns(VidlabelWarning, match=said + r".*Use PlannedStream"):
            assert len(list(stream)) == per_rank[rank]
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(stream)) == N_SAMPLES  # one rank: nothing to warn of


def test_video_stream_whole_videos_in_order(samples: FrameSamples, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = VideoStream(samples, shuffle_videos=True, seed=0)
    assignment = stream.assignment(0, 2)
    assert sorted(v for videos in assignment for v in videos) == sorted(CLIPS)
    for shard in (0, 1):
        monkeypatch.setenv("VIDLABEL_WORKER", str(shard))
        monkeypatch.setenv("VIDLABEL_NUM_WORKERS", "2")
        pairs = [check_tensor_sample(s) for s in stream]
        # each video front to back, videos in the assigned order
        expected = [(v, f) for v in assignment[shard] for f in range(CLIPS[v][0])]
        assert pairs == expected
    sizes = [sum(CLIPS[v][0] for v in videos) for videos in assignment]
    assert abs(sizes[0] - sizes[1]) <= max(n for n, _ in CLIPS.values())


def test_video_stream_seed_and_epoch(samples: FrameSamples) -> None:
    def order(seed: int, epoch: int, buffer: int = 8) -> list[tuple[str, int]]:
        stream = VideoStream(samples, shuffle_buffer=buffer, seed=seed)
        stream.set_epoch(epoch)
        return [(s["video_id"], s["frame_index"]) for s in stream]

    a = order(0, 0)
    assert a == order(0, 0)
    assert a != order(0, 1) and a != order(1, 0)
    assert sorted(a) == sorted(order(0, 1))
    plain = VideoStream(samples, shuffle_videos=False)
    assert [(s["video_id"], s["frame_index"]) for s in plain] == list(samples.index)
    assert len(plain) == N_SAMPLES


def flip_transform(sample: dict[str, Any]) -> dict[str, Any]:
    """Module level, so spawn workers can import it."""
    assert isinstance(sample["image"], torch.Tensor)
    sample["flipped"] = torch.flip(sample["image"], dims=[2])
    return sample


def test_transform_receives_tensors(samples: FrameSamples) -> None:
    stream = VideoStream(samples, transform=flip_transform, shuffle_videos=False)
    first = next(iter(stream))
    assert torch.equal(first["flipped"], torch.flip(first["image"], dims=[2]))
    with pytest.raises(OptionError, match="transform must be callable"):
        VideoStream(samples, transform=3)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="shuffle_buffer must be an integer >= 0"):
        VideoStream(samples, shuffle_buffer=-1)
    with pytest.raises(OptionError, match=r"expected a vidlabel\.FrameSamples, got list"):
        VideoStream([])  # type: ignore[arg-type]


# -- VideoFrames ----------------------------------------------------------------------------------


def test_video_frames_map_style(samples: FrameSamples) -> None:
    frames = VideoFrames(samples)
    assert len(frames) == N_SAMPLES
    check_tensor_sample(frames[0])
    assert (frames[-1]["video_id"], frames[-1]["frame_index"]) == samples.index[-1]
    batch = frames.__getitems__([40, 3, 40, 100, 2])
    assert [(s["video_id"], s["frame_index"]) for s in batch] == [samples.index[i] for i in [40, 3, 40, 100, 2]]
    for s in batch:
        check_tensor_sample(s)
    with pytest.raises(IndexError, match=r"sample 138 out of range \[0, 138\)"):
        frames[N_SAMPLES]
    frames.close()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_video_frames_loader_with_shuffle(samples: FrameSamples, num_workers: int) -> None:
    loader = DataLoader(
        VideoFrames(samples), batch_size=6, shuffle=True, num_workers=num_workers, collate_fn=collate_frames,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert Counter(batches_to_pairs(loader)) == Counter(samples.index)


# -- PlannedStream ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plan_and_requests(samples: FrameSamples) -> tuple[Any, Counter]:
    rng = np.random.default_rng(7)
    positions = rng.choice(len(samples), size=90, replace=True)
    return samples.plan_reads(positions, seed=11), Counter(samples.index[int(p)] for p in positions)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("num_workers", [0, 2, 3])
def test_planned_stream_every_request_once(samples: FrameSamples, plan_and_requests, num_workers: int) -> None:
    plan, want = plan_and_requests
    stream = PlannedStream(samples, plan, shuffle_buffer=10)
    stream.set_epoch(2)
    assert len(stream) == 90
    assert Counter(stream_pairs(stream, num_workers)) == want


def test_planned_stream_two_ranks_two_workers(samples, plan_and_requests, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, want = plan_and_requests
    got: Counter = Counter()
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        got.update(stream_pairs(PlannedStream(samples, plan), 2))
    assert got == want


def test_planned_stream_seed_and_epoch(samples: FrameSamples, plan_and_requests) -> None:
    plan, _ = plan_and_requests

    def order(epoch: int) -> list[tuple[str, int]]:
        stream = PlannedStream(samples, plan, shuffle_buffer=4)
        stream.set_epoch(epoch)
        return [check_tensor_sample(s) for s in stream]

    assert order(0) == order(0)
    assert order(0) != order(1)
    again = pickle.loads(pickle.dumps(PlannedStream(samples, plan, shuffle_buffer=4)))
    assert [(s["video_id"], s["frame_index"]) for s in again] == order(0)
    with pytest.raises(OptionError, match=r"plan must be a vidlabel\.ReadPlan"):
        PlannedStream(samples, [])  # type: ignore[arg-type]


@pytest.mark.parametrize("epoch", [2**63, 2**64 + 5])
def test_set_epoch_refuses_an_epoch_the_shared_64_bit_value_would_wrap(
    samples: FrameSamples, plan_and_requests, epoch: int
) -> None:
    # 2**64 + 5 was kept as 5 (epoch 5's order without a word) and 2**63 as -2**63
    plan, _ = plan_and_requests
    for stream in (VideoStream(samples), PlannedStream(samples, plan)):
        stream.set_epoch(3)
        with pytest.raises(OptionError, match=r"epoch must be an integer in \[0, 9223372036854775807\]"):
            stream.set_epoch(epoch)
        assert stream.epoch == 3
        stream.set_epoch(2**63 - 1)
        assert stream.epoch == 2**63 - 1


# -- spawn ------------------------------------------------------------------------------------------


def tag_stream(sample: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(sample["image"], torch.Tensor)
    sample["source"] = "stream"
    return sample


def tag_plan(sample: dict[str, Any]) -> dict[str, Any]:
    sample["source"] = "plan"
    return sample


@pytest.mark.slow
def test_spawn_workers(samples: FrameSamples, plan_and_requests) -> None:
    # One spawn DataLoader (spawned workers are slow to start) over both iterable datasets chained.
    plan, want = plan_and_requests
    both = torch.utils.data.ChainDataset(
        [VideoStream(samples, shuffle_buffer=4, transform=tag_stream), PlannedStream(samples, plan, transform=tag_plan)]
    )
    loader = DataLoader(both, batch_size=16, num_workers=2, multiprocessing_context="spawn", collate_fn=collate_frames)
    got: dict[str, Counter] = {"stream": Counter(), "plan": Counter()}
    for batch in loader:
        for i, frame in enumerate(batch["frame_index"].tolist()):
            assert read_frame_number(batch["image"][i].permute(1, 2, 0).numpy()) == frame
            got[batch["source"][i]][(batch["video_id"][i], frame)] += 1
    assert got["stream"] == Counter(samples.index)
    assert got["plan"] == want


def epoch_orders(dataset: Any, *, persistent: bool, epochs: int = 3) -> list[list[tuple[str, int]]]:
    """The (video_id, frame) order of ``epochs`` epochs through one DataLoader with 2 fork workers."""
    loader = DataLoader(
        dataset, batch_size=4, num_workers=2, persistent_workers=persistent, multiprocessing_context="fork",
        collate_fn=collate_frames,
    )  # fmt: skip
    orders = []
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        orders.append(batches_to_pairs(loader))
    return orders


@pytest.mark.parametrize("kind", ["video_stream", "planned_stream"])
def test_set_epoch_reaches_persistent_workers(samples: FrameSamples, plan_and_requests, kind: str) -> None:
    # Issue 12 item 2: persistent workers kept the dataset copy of their start and repeated epoch 0 forever.
    plan, want = plan_and_requests

    def make() -> Any:
        if kind == "video_stream":
            return VideoStream(samples, shuffle_buffer=4, seed=5)
        return PlannedStream(samples, plan, shuffle_buffer=4)

    fresh = epoch_orders(make(), persistent=False)
    kept = epoch_orders(make(), persistent=True)
    assert kept == fresh
    assert len({tuple(order) for order in fresh}) == 3  # each epoch its own order
    every = Counter(samples.index) if kind == "video_stream" else want
    assert all(Counter(order) == every for order in kept)


@pytest.mark.parametrize("bad", [1.5, "3", True, np.float32(2.0)])
def test_video_frames_refuses_non_integer_indices(samples: FrameSamples, bad: Any) -> None:
    with pytest.raises(SampleIndexTypeError, match=r"sample index of VideoFrames must be an integer in \[0, \d+\)"):
        VideoFrames(samples)[bad]


def test_video_frames_out_of_range_names_the_range(samples: FrameSamples) -> None:
    frames = VideoFrames(samples)
    n = len(frames)
    assert check_tensor_sample(frames[-1]) == samples.index[n - 1]  # negative counts from the end
    assert check_tensor_sample(frames[np.int64(2)]) == samples.index[2]
    for bad in (n, -n - 1):
        with pytest.raises(
            SampleOutOfRangeError,
            match=rf"sample {bad} out of range \[0, {n}\) of VideoFrames \(negative .* -{n}\.\.-1\)",
        ):
            frames[bad]
    with pytest.raises(VidlabelError, match="out of range"):
        frames.__getitems__([0, n])
    with pytest.raises(IndexError):  # the builtin a sequence protocol user catches
        frames[n]


def test_datasets_pickle(samples: FrameSamples, tmp_path: Path) -> None:
    frames = VideoFrames(samples)
    frames[0]  # opens a reader, which must not travel
    again = pickle.loads(pickle.dumps(frames))
    assert check_tensor_sample(again[5]) == samples.index[5]
    stream = pickle.loads(pickle.dumps(VideoStream(samples, seed=4)))
    assert stream.seed == 4 and len(stream) == N_SAMPLES


def test_view_and_masks_through_the_loader(vds: VideoDataset) -> None:
    top = FrameSamples(Dataset.open(vds.path), release=vds.release_id, view_id="top", with_masks=True)
    loader = DataLoader(VideoStream(top, shuffle_videos=False), batch_size=4, collate_fn=collate_frames)
    frames = []
    for batch in loader:
        assert batch["image"].shape[1:] == (3, 40, 64) and batch["view_id"] == ["top"] * len(batch["video_id"])
        for i, frame in enumerate(batch["frame_index"].tolist()):
            assert read_frame_number(batch["image"][i].permute(1, 2, 0).numpy()) == frame
            assert batch["masks"][i].shape == (1, 40, 64) and int(batch["masks"][i].sum()) == 0  # a box row
            x0, y0, x1, y1 = object_box(frame, WIDTH, HEIGHT)
            assert batch["boxes"][i].tolist() == [[x0, y0, x1, min(y1, 40)]]
            frames.append(frame)
    assert frames == list(range(0, 30, 3))


@pytest.mark.parametrize("shuffle_videos", [True, False])
def test_video_stream_assignment_refuses_shard_counts_and_epochs_that_are_not_integers(
    samples: FrameSamples, shuffle_videos: bool
) -> None:
    # assignment(0, 1.5) was a raw TypeError from range(), assignment(0, True) one shard, and with
    # shuffle_videos=False assignment(-1, 2) a split of epoch -1 that shuffle_videos=True refused
    stream = VideoStream(samples, shuffle_videos=shuffle_videos, seed=1)
    for bad in (1.5, True, "2", 0):
        with pytest.raises(OptionError, match=r"num_shards must be an integer >= 1, got"):
            stream.assignment(0, bad)  # type: ignore[arg-type]
    for epoch in (-1, 1.5, True):
        with pytest.raises(OptionError, match=r"epoch must be an integer >= 0, got"):
            stream.assignment(epoch, 2)  # type: ignore[arg-type]
    assert stream.assignment(np.int64(2), np.int64(3)) == stream.assignment(2, 3)
    assert sorted(v for shard in stream.assignment(0, 2) for v in shard) == sorted(CLIPS)


def test_plan_reads_takes_positions_drawn_as_a_torch_tensor(samples: FrameSamples) -> None:
    # torch.multinomial(weights, n, replacement=True), the weighted draw on the PyTorch side, was refused with
    # "request 0 must be a position or a (video_id, frame) pair, got tensor(5)": a position is what it is
    weights = torch.ones(len(samples), dtype=torch.float64)
    weights[:10] = 50.0
    drawn = torch.multinomial(weights, 40, replacement=True, generator=torch.Generator().manual_seed(3))
    assert drawn.dtype == torch.int64
    plan = samples.plan_reads(drawn, seed=4)
    want = Counter(samples.index[int(p)] for p in drawn.tolist())
    assert Counter(check_tensor_sample(s) for s in PlannedStream(samples, plan)) == want
    assert plan.summary() == samples.plan_reads(drawn.numpy(), seed=4).summary()
    with pytest.raises(OptionError, match=rf"sample position {N_SAMPLES} out of range \[0, {N_SAMPLES}\)"):
        samples.plan_reads(torch.tensor([0, N_SAMPLES]), seed=0)
    with pytest.raises(OptionError, match=r"must be a 1-D array of positions"):
        samples.plan_reads(torch.zeros((2, 2), dtype=torch.int64), seed=0)
