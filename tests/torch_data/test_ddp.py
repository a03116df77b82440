"""Real distributed ranks: ``torch.distributed`` (gloo, 127.0.0.1), 2 ranks from ``torch.multiprocessing.spawn``,
each with a DataLoader of 2 workers (forked from a fork server; one scenario spawns them), over StoreFrames +
DistributedSampler, StoreStream and PlannedStream.

Every rank runs the same number of batches (each batch is followed by an all_reduce of a "still running" flag: a
rank that ran out early shows as a sum below the world size instead of a hang), every sample of the epoch comes out
exactly once across ranks x workers (or, for an odd epoch, the documented padding: the wrap repeats the order's
first samples, ``drop_last`` drops the tail), the pixels show the frame number, and an all_reduce of the per-rank
counts equals the epoch's length. One spawn runs every scenario; the tests check what the ranks recorded.
"""

from __future__ import annotations

import json
import os
import pickle
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as tmp
from torch.utils.data import DataLoader, DistributedSampler

from tests.media import read_frame_number
from tests.services import HOST, free_port
from tests.store_support import make_dataset
from vidlabel import Dataset, FrameSamples, export
from vidlabel.errors import OptionError
from vidlabel.torch_data import PlannedStream, StoreFrames, StoreStream, collate_frames
from vidlabel.torch_data import _common as common
from vidlabel.torch_data._common import rank_and_world

EVERY = ("box", "mask", "marker")
WORLD = 2
WORKERS = 2
BATCH = 3
SHARDING_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS")


def tag_worker(sample: dict[str, Any]) -> dict[str, Any]:
    """Transform: the DataLoader worker that made the sample."""
    info = torch.utils.data.get_worker_info()
    sample["worker"] = -1 if info is None else int(info.id)
    return sample


def _datasets(root: Path) -> dict[str, tuple[Any, dict[str, Any]]]:
    """Scenario name -> (dataset, extra DataLoader options); built inside each rank."""
    store = root / "store"
    samples = FrameSamples(Dataset.open(root / "ds"), kinds=("box",))
    rng = np.random.default_rng(5)
    even_plan = samples.plan_reads(rng.choice(len(samples), size=40, replace=True), seed=3)
    odd_plan = samples.plan_reads(np.arange(len(samples)), seed=3)  # every sample once (an odd number)
    frames = StoreFrames(store, kinds=EVERY, transform=tag_worker)
    return {
        "frames": (frames, {"sampler": DistributedSampler(frames, shuffle=True, seed=4)}),
        "stream": (StoreStream(store, kinds=EVERY, shuffle_buffer=4, seed=2, transform=tag_worker), {}),
        "stream_odd": (StoreStream(store, kinds=("box",), seed=2, transform=tag_worker), {}),
        "stream_odd_drop": (StoreStream(store, kinds=("box",), seed=2, drop_last=True, transform=tag_worker), {}),
        "stream_spawn": (
            StoreStream(store, kinds=("box",), seed=2, transform=tag_worker),
            {"multiprocessing_context": "spawn"},
        ),
        "planned": (PlannedStream(samples, even_plan, shuffle_buffer=4, transform=tag_worker), {}),
        "planned_odd": (PlannedStream(samples, odd_plan, transform=tag_worker), {}),
        "planned_odd_drop": (PlannedStream(samples, odd_plan, drop_last=True, transform=tag_worker), {}),
    }


def _run_rank(rank: int, root: str, port: int, out: str) -> None:
    for name in SHARDING_ENV:  # the process group alone says who this rank is
        os.environ.pop(name, None)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo's pairs on the loopback interface only
    dist.init_process_group(
        "gloo", init_method=f"tcp://{HOST}:{port}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=60)
    )
    forkserver = tmp.get_context("forkserver")
    forkserver.set_forkserver_preload(["tests.test_ddp"])  # torch, vidlabel and the transform: imported once
    try:
        results: dict[str, Any] = {"rank_and_world": list(rank_and_world())}
        for name, (dataset, options) in _datasets(Path(root)).items():
            started = time.perf_counter()
            if hasattr(dataset, "set_epoch"):
                dataset.set_epoch(1)
            if "sampler" in options:
                options["sampler"].set_epoch(1)
            # workers are forked from a single-threaded fork server, not from the rank: CPython before 3.11.8 can
            # deadlock a child forked while a native thread registers with the interpreter (gh-112275, the
            # child waits forever on a lock in PyOS_AfterFork_Child), and gloo's threads do so around collectives
            # (1 hang in about 10 runs here on Python 3.11.7); fork itself is tested without a process group
            options.setdefault("multiprocessing_context", forkserver)
            loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, collate_fn=collate_frames, **options)
            samples: list[list[Any]] = []
            flags: list[int] = []
            batches = 0
            it = iter(loader)
            while True:
                batch = next(it, None)
                flag = torch.tensor([0 if batch is None else 1])
                dist.all_reduce(flag)  # every rank, after every batch: the sum says whether all still run
                if batch is None or int(flag) != WORLD:
                    flags.append(int(flag))
                    break
                flags.append(int(flag))
                batches += 1
                for k, frame in enumerate(batch["frame_index"].tolist()):
                    shown = read_frame_number(batch["image"][k].permute(1, 2, 0).numpy())
                    samples.append([batch["video_id"][k], frame, shown, int(batch["worker"][k])])
            count = torch.tensor([len(samples)])
            dist.all_reduce(count)
            gathered: list[Any] = [None] * WORLD
            dist.all_gather_object(gathered, [s[:2] for s in samples])
            results[name] = {
                "batches": batches, "flags": flags, "samples": samples, "count_sum": int(count),
                "gathered": gathered, "len": len(dataset),
                "sampler_len": len(options["sampler"]) if "sampler" in options else None,
                "seconds": time.perf_counter() - started,  # for a reader of the JSON; nothing asserts on it
            }  # fmt: skip
        Path(out, f"rank{rank}.json").write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset (``root/ds``, three generated clips) and its Zarr store (``root/store``, chunks of 4 frames)."""
    root = tmp_path_factory.mktemp("ddp")
    ds = make_dataset(root, videos=("a", "b", "c"), n_frames=12)
    export(ds, root / "store", format="zarr", chunk_frames=4, kinds=EVERY, progress=False)
    return root


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SHARDING_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def ddp(built: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    root = built
    out = root / "out"
    out.mkdir()
    tmp.spawn(_run_rank, args=(str(root), free_port(), str(out)), nprocs=WORLD, join=True)
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(WORLD)]
    truth = {
        "store": [tuple(k) for k in StoreFrames(root / "store", kinds=EVERY).index],
        "store_box": [tuple(k) for k in StoreStream(root / "store", kinds=("box",)).index],
        "samples": [tuple(k) for k in FrameSamples(Dataset.open(root / "ds"), kinds=("box",)).index],
    }
    return ranks, truth


def _check_common(ranks: list[dict[str, Any]], name: str) -> list[tuple[str, int]]:
    """Same batches on every rank, no rank ran out early, pixels right, every (rank, worker) worked;
    returns every sample key over ranks x workers."""
    runs = [r[name] for r in ranks]
    assert runs[0]["batches"] == runs[1]["batches"] > 0
    for run in runs:
        assert run["flags"] == [WORLD] * run["batches"] + [0]  # the last all_reduce: every rank done at once
        assert all(shown == frame for _, frame, shown, _ in run["samples"])
        assert {worker for *_, worker in run["samples"]} == set(range(WORKERS))
    keys = [(v, f) for run in runs for v, f, _, _ in run["samples"]]
    assert runs[0]["count_sum"] == runs[1]["count_sum"] == len(keys)
    assert [[tuple(k) for k in g] for g in runs[0]["gathered"]] == [[(v, f) for v, f, *_ in r["samples"]] for r in runs]
    return keys


def test_ranks_read_rank_and_world_from_the_process_group(ddp) -> None:
    ranks, _ = ddp
    assert [r["rank_and_world"] for r in ranks] == [[0, WORLD], [1, WORLD]]


def test_store_frames_with_distributed_sampler(ddp) -> None:
    ranks, truth = ddp
    keys = _check_common(ranks, "frames")
    n = len(truth["store"])
    assert n % WORLD == 0 and Counter(keys) == Counter(truth["store"])  # each exactly once
    assert ranks[0]["frames"]["count_sum"] == n and [r["frames"]["sampler_len"] for r in ranks] == [n // WORLD] * WORLD


def test_store_stream_every_sample_once(ddp) -> None:
    ranks, truth = ddp
    keys = _check_common(ranks, "stream")
    n = len(truth["store"])
    assert n % WORLD == 0 and Counter(keys) == Counter(truth["store"]) and ranks[0]["stream"]["count_sum"] == n
    assert [r["stream"]["len"] for r in ranks] == [n // WORLD] * WORLD


@pytest.mark.parametrize("name", ["stream_odd", "stream_spawn"])
def test_store_stream_odd_epoch_pads_by_wrapping(ddp, name: str) -> None:
    # an odd number of samples over 2 ranks: (n + 1) / 2 each; the wrap repeats one, the first of the epoch's order
    ranks, truth = ddp
    keys = _check_common(ranks, name)
    n = len(truth["store_box"])
    assert n % 2 == 1 and set(keys) == set(truth["store_box"])
    assert len(keys) == ranks[0][name]["count_sum"] == n + 1 and [r[name]["len"] for r in ranks] == [(n + 1) // 2] * 2
    (repeated,) = [k for k, n in Counter(keys).items() if n == 2]
    assert repeated in {(v, f) for v, f, *_ in ranks[0][name]["samples"]}  # rank 0 starts the order


def test_store_stream_odd_epoch_drop_last(ddp) -> None:
    ranks, truth = ddp
    keys = _check_common(ranks, "stream_odd_drop")
    assert len(keys) == len(set(keys)) == len(truth["store_box"]) - 1 and set(keys) < set(truth["store_box"])


def test_planned_stream_every_request_once(ddp) -> None:
    ranks, truth = ddp
    keys = _check_common(ranks, "planned")
    rng = np.random.default_rng(5)  # the requests the ranks planned, drawn again here
    want = Counter(truth["samples"][int(p)] for p in rng.choice(len(truth["samples"]), size=40, replace=True))
    assert Counter(keys) == want and ranks[0]["planned"]["count_sum"] == 40
    assert [r["planned"]["len"] for r in ranks] == [20, 20]


def test_planned_stream_odd_epoch_pads_or_drops(ddp) -> None:
    ranks, truth = ddp
    keys = _check_common(ranks, "planned_odd")
    n = len(truth["samples"])
    assert n % 2 == 1 and set(keys) == set(truth["samples"]) and len(keys) == n + 1
    assert sorted(Counter(keys).values()) == [1] * (n - 1) + [2]
    assert [r["planned_odd"]["len"] for r in ranks] == [(n + 1) // 2] * 2
    dropped = _check_common(ranks, "planned_odd_drop")
    assert len(dropped) == len(set(dropped)) == n - 1 and set(dropped) < set(truth["samples"])


# -- the sharding rules behind it, without a process group ------------------------------------------------------------


def _stream_sizes(stream: StoreStream, world: int, workers: int) -> list[list[int]]:
    return [
        [sum(p.size for p in stream.shard_pieces(1, r, world, w, workers)) for w in range(workers)]
        for r in range(world)
    ]


@pytest.mark.parametrize("drop_last", [False, True])
def test_store_stream_worker_w_yields_as_many_samples_on_every_rank(built: Path, drop_last: bool) -> None:
    for kinds in (EVERY, ("box",)):
        stream = StoreStream(built / "store", kinds=kinds, seed=2, drop_last=drop_last)
        n = len(stream.samples)
        for world in (2, 3):
            per_rank = n // world if drop_last else -(-n // world)
            for workers in (1, 2, 3):
                sizes = _stream_sizes(stream, world, workers)
                want = [len(part) for part in np.array_split(np.arange(per_rank), workers)]
                assert sizes == [want] * world, (kinds, world, workers)
                flat = [
                    i
                    for r in range(world)
                    for w in range(workers)
                    for p in stream.shard_pieces(1, r, world, w, workers)
                    for i in p.tolist()
                ]
                assert set(flat) == set(range(n)) if not drop_last else len(set(flat)) == len(flat)


def test_plan_shards_under_ranks_are_equal_and_read_the_right_frames(built: Path) -> None:
    samples = FrameSamples(Dataset.open(built / "ds"), kinds=("box",))
    rng = np.random.default_rng(9)
    requests = rng.choice(len(samples), size=37, replace=True)
    plan = samples.plan_reads(requests, seed=1)
    want = Counter(samples.index[int(p)] for p in requests)
    for world, workers in ((2, 1), (2, 2), (3, 2)):
        shards = world * workers
        sizes = plan.shard_sizes(1, shards, world_size=world)
        per_rank = -(-37 // world)
        split = [len(part) for part in np.array_split(np.arange(per_rank), workers)]
        assert sizes == split * world
        got = Counter(r for s in range(shards) for r in plan.iter_requests(1, s, shards, world_size=world))
        assert set(got) == set(want) and sum(got.values()) == per_rank * world
        assert all(got[k] >= want[k] for k in want)  # the padding only adds repeats
        dropped = plan.shard_sizes(1, shards, world_size=world, drop_last=True)
        assert sum(dropped) == (37 // world) * world and len(set(dropped[::workers])) == 1
    # chunks cut between parts still decode the right pixels
    for s in range(4):
        for sample in samples.iter_plan(plan, epoch=1, shard=s, num_shards=4, world_size=2):
            assert read_frame_number(sample["image"]) == sample["frame_index"]
    assert plan.shard_sizes(1, 3) == plan.shard_sizes(1, 3, world_size=1)  # one rank: whole chunks, as before


def test_plan_shard_refuses_a_world_size_that_does_not_divide_the_shards(built: Path) -> None:
    samples = FrameSamples(Dataset.open(built / "ds"), kinds=("box",))
    plan = samples.plan_reads(np.arange(10), seed=1)
    with pytest.raises(OptionError, match=r"num_shards 3 must be world_size 2 x the DataLoader workers"):
        plan.shard(0, 0, 3, world_size=2)
    with pytest.raises(OptionError, match=r"world_size must be an integer >= 1, got 0"):
        plan.shard_sizes(0, 2, world_size=0)


def test_a_dataset_pickled_in_a_rank_carries_its_rank(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a DataLoader worker started by spawn has no process group: the pickled dataset says which rank it serves
    stream = StoreStream(built / "store", kinds=("box",))
    n = len(stream.samples)
    monkeypatch.setattr(common, "process_group_rank", lambda: (1, 2))
    blob = pickle.dumps(stream)
    monkeypatch.undo()
    again = pickle.loads(blob)
    assert rank_and_world() == (0, 1) and again._rank_and_world() == (1, 2) and len(again) == -(-n // 2)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")  # the environment still overrides
    assert again._rank_and_world() == (2, 3)
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("WORLD_SIZE", "2")  # WORLD_SIZE without RANK: the pickled rank of that world tells
    assert again._rank_and_world() == (1, 2)
    monkeypatch.delenv("WORLD_SIZE")
    with pytest.raises(OptionError, match=r"inherited rank/world_size: 2 must lie in \[0, 2\)"):
        rank_and_world((2, 2))


def test_drop_last_with_more_ranks_than_samples_is_refused_not_an_empty_epoch(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 ranks over a 5-frame validation set with drop_last=True: floor(5 / 8) = 0 on every rank, and every rank
    # used to run an epoch of no batches without a word
    samples = FrameSamples(Dataset.open(built / "ds"), kinds=("box",))
    plan = samples.plan_reads(np.arange(5), seed=1)
    store = built / "store"
    n = len(StoreStream(store, kinds=("box",)).samples)
    for name in ("VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORLD_SIZE", str(n + 3))
    monkeypatch.setenv("RANK", "1")
    stream = StoreStream(store, kinds=("box",), drop_last=True)
    said = rf"StoreStream over .*store.*drop_last=True with {n} samples over {n + 3} ranks .* = 0 samples, "
    with pytest.raises(OptionError, match=said + r".*rank 1 yields nothing.*drop_last=False"):
        next(iter(stream))
    with pytest.raises(OptionError, match=r"PlannedStream: drop_last=True with 5 samples over \d+ ranks .*at most 5"):
        next(iter(PlannedStream(samples, plan, drop_last=True)))
    # without drop_last every rank reads one sample (the start of the order repeated), the right frame
    for dataset in (StoreStream(store, kinds=("box",)), PlannedStream(samples, plan)):
        got = list(dataset)
        assert len(got) == len(dataset) == 1
        assert read_frame_number(got[0]["image"].permute(1, 2, 0).numpy()) == got[0]["frame_index"]
    monkeypatch.setenv("WORLD_SIZE", str(n))  # as many ranks as samples: one each, nothing dropped
    assert len(list(StoreStream(store, kinds=("box",), drop_last=True))) == 1
