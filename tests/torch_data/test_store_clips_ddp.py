"""Store clips under real distributed ranks: ``torch.distributed`` (gloo, 127.0.0.1), 2 ranks from
``torch.multiprocessing.spawn``, each with a DataLoader of 2 workers, over StoreClips + DistributedSampler and
StoreClipStream.

Every rank runs the same number of batches (an all_reduce of a "still running" flag after each batch), every clip
comes out exactly once across ranks x workers, and every frame of every clip shows its number.
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
from vidlabel import ClipSpec, export
from vidlabel.torch_data import StoreClips, StoreClipStream, collate_clips

WORLD = 2
WORKERS = 2
BATCH = 3
SPEC = ClipSpec(4, step=2, anchor="center")
SHARDING_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS")


def _datasets(store: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    clips = StoreClips(store)
    return {
        "map": (clips, {"sampler": DistributedSampler(clips, shuffle=True, seed=3)}),
        "stream": (StoreClipStream(store, seed=4, shuffle_buffer=3, batch_clips=2), {}),
    }


def _run_rank(rank: int, store: str, port: int, out: str) -> None:
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
        for name, (dataset, options) in _datasets(Path(store)).items():
            if "sampler" in options:
                options["sampler"].set_epoch(1)
            else:
                dataset.set_epoch(1)
            loader = DataLoader(
                dataset, batch_size=BATCH, num_workers=WORKERS, collate_fn=collate_clips,
                multiprocessing_context=forkserver, **options,
            )  # fmt: skip
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
                    shown = [read_frame_number(f.permute(1, 2, 0).numpy()) for f in batch["image"][b]]
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
    root = tmp_path_factory.mktemp("store_clips_ddp")
    ds = make_dataset(root, videos=("a", "b"), n_frames=40, box_every=6)
    export(ds, root / "store", format="zarr", clip=SPEC, chunk_frames=2, progress=False)
    out = root / "out"
    out.mkdir()
    tmp.spawn(_run_rank, args=(str(root / "store"), free_port(), str(out)), nprocs=WORLD, join=True)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)], root / "store"


@pytest.mark.parametrize("name", ["map", "stream"])
def test_every_store_clip_once_across_ranks_and_workers(ranks: tuple[list[dict[str, Any]], Path], name: str) -> None:
    runs, store = ranks
    truth = StoreClips(store)
    n = len(truth)
    assert n % WORLD == 0 and n > 0
    batches = [len(r[name]["flags"]) - 1 for r in runs]
    assert batches[0] == batches[1] > 0
    for r in runs:
        assert r[name]["flags"] == [WORLD] * batches[0] + [0]  # every rank ran out at the same batch
        assert r[name]["len"] == (n if name == "map" else n // WORLD)
    got = [c for r in runs for c in r[name]["clips"]]
    assert Counter(index for index, *_ in got) == Counter(range(n))
    for index, video_id, frames, shown in got:
        assert video_id == truth.index[index][0]
        assert frames == truth.frame_indices[index].tolist() and shown == frames
