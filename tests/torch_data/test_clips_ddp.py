"""Clips under real distributed ranks: ``torch.distributed`` (gloo, 127.0.0.1), 2 ranks from
``torch.multiprocessing.spawn``, each with a DataLoader of 2 workers, over ClipStream (sliding and random clips)
and VideoClips + DistributedSampler.

Every rank runs the same number of batches (an all_reduce of a "still running" flag after each batch), every clip
of the epoch comes out exactly once across ranks x workers, and every frame of every clip shows its number.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as tmp
from torch.utils.data import DataLoader, DistributedSampler

from tests.media import read_frame_number
from tests.services import HOST, free_port
from tests.store_support import make_dataset
from vidlabel import ClipSpec, Dataset, FrameSamples, RandomClips, SlidingClips
from vidlabel.torch_data import ClipStream, VideoClips, collate_clips

WORLD = 2
WORKERS = 2
BATCH = 3
SHARDING_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS")


def _clips(root: Path, sampler: Any) -> Any:
    samples = FrameSamples(Dataset.open(root / "ds"), frames="all", kinds=("box",))
    return samples.clips(ClipSpec(4, step=2), sampler)


def _datasets(root: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    video = VideoClips(_clips(root, SlidingClips(3)))
    return {
        "stream": (ClipStream(_clips(root, SlidingClips(3)), seed=4, shuffle_buffer=3), {}),
        "random": (ClipStream(_clips(root, RandomClips(4, seed=2)), seed=1), {}),
        "map": (video, {"sampler": DistributedSampler(video, shuffle=True, seed=3)}),
    }


def _run_rank(rank: int, root: str, port: int, out: str) -> None:
    for name in SHARDING_ENV:  # the process group alone says who this rank is
        os.environ.pop(name, None)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group(
        "gloo", init_method=f"tcp://{HOST}:{port}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    # Workers forked from a single-threaded fork server, not from the rank with gloo's threads (see test_ddp).
    forkserver = tmp.get_context("forkserver")
    try:
        results: dict[str, Any] = {}
        for name, (dataset, options) in _datasets(Path(root)).items():
            dataset.set_epoch(1)
            if "sampler" in options:
                options["sampler"].set_epoch(1)
            options.setdefault("multiprocessing_context", forkserver)
            loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, collate_fn=collate_clips, **options)
            clips: list[list[Any]] = []
            flags: list[int] = []
            it = iter(loader)
            while True:
                batch = next(it, None)
                flag = torch.tensor([0 if batch is None else 1])
                dist.all_reduce(flag)
                flags.append(int(flag))
                if batch is None or int(flag) != WORLD:
                    break
                for b, index in enumerate(batch["clip_index"].tolist()):
                    frames = batch["frame_indices"][b].tolist()
                    shown = [read_frame_number(batch["image"][b, t].permute(1, 2, 0).numpy()) for t in range(4)]
                    clips.append([index, batch["video_id"][b], frames, shown])
            results[name] = {"flags": flags, "clips": clips, "len": len(dataset)}
        Path(out, f"rank{rank}.json").write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SHARDING_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    root = tmp_path_factory.mktemp("clips_ddp")
    make_dataset(root, videos=("a", "b", "c"), n_frames=24, gop=8)
    out = root / "out"
    out.mkdir()
    tmp.spawn(_run_rank, args=(str(root), free_port(), str(out)), nprocs=WORLD, join=True)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)], root


@pytest.mark.parametrize("name", ["stream", "random", "map"])
def test_every_clip_once_across_ranks_and_workers_with_equal_batches(ranks, name: str) -> None:
    runs, root = ranks
    sampler = RandomClips(4, seed=2) if name == "random" else SlidingClips(3)
    truth = _clips(root, sampler).index(1)
    n = len(truth)
    assert n % WORLD == 0
    batches = [len(r[name]["flags"]) - 1 for r in runs]
    assert batches[0] == batches[1] > 0
    for r in runs:
        assert r[name]["flags"] == [WORLD] * batches[0] + [0]  # every rank ran out at the same batch
        # A map-style dataset holds every clip; DistributedSampler gives each rank half of them.
        assert r[name]["len"] == (n if name == "map" else n // WORLD)
    got = [c for r in runs for c in r[name]["clips"]]
    assert Counter(index for index, *_ in got) == Counter(range(n))
    for index, video_id, frames, shown in got:
        want_video, want_frames = truth[index]
        assert video_id == want_video and frames == want_frames.tolist() and shown == frames
