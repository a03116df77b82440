"""One-off shared segments of the slab pool: when no pool slab is free (batches larger than the pool's bytes
hold as many of as a worker has in flight, or batches kept), a worker reads the batch into a fresh shared
segment that travels without a copy and is never reused, instead of a private buffer torch copies again."""

from __future__ import annotations

import gc
import pickle
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import ClipSpec, export
from vidlabel.torch_data import StoreClips, _shm, collate_clips

T = 4
#: Bytes of a batch of 3 clips of T frames of the generated 64x48 clips.
BATCH_BYTES = 3 * T * 64 * 48 * 3


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shm_oneoff")
    ds = make_dataset(root, videos=("a", "b"), n_frames=24)
    export(ds, root / "store", clip=ClipSpec(T, step=1), progress=False)
    return root / "store"


@pytest.fixture
def worker_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process acts as a DataLoader worker with a fresh pool whose bytes hold one slab of these tests."""
    monkeypatch.setattr(_shm, "_applies", lambda: True)
    monkeypatch.setattr(_shm, "MIN_POOLED_BYTES", 0)
    monkeypatch.setattr(_shm, "MAX_SLAB_BYTES", 400)
    monkeypatch.setattr(_shm, "_POOL", None)


def test_a_full_pool_gives_a_one_off_segment_that_travels_without_a_copy(worker_pool: None) -> None:
    shape = (2, 8, 8, 3)
    first = _shm.take_slab(shape)
    assert first is not None and first.segment is None  # the pool's one slab
    second = _shm.take_slab(shape)
    assert second is not None and second.segment is not None  # the pool is full: a one-off segment
    second.array[:] = np.arange(second.array.size, dtype=np.uint8).reshape(shape)
    found = _shm.slab_of(torch.from_numpy(second.array))
    assert found is not None and found.segment is second.segment
    batch = second.tensor(torch.from_numpy(second.array).permute(0, 3, 1, 2))
    assert _shm.slab_of(torch.from_numpy(second.array)) is None  # wrapped once, never twice
    got = pickle.loads(ForkingPickler.dumps(batch))
    assert type(got) is torch.Tensor and got.shape == (2, 3, 8, 8) and torch.equal(got, batch.as_subclass(torch.Tensor))
    # the receiver maps the same segment (no copy): a byte written on one side shows on the other
    second.array[1, 2, 3, 1] ^= 0xFF
    assert int(got[1, 1, 2, 3]) == int(second.array[1, 2, 3, 1])
    pool = _shm._POOL
    assert pool is not None and len(pool.slabs) == 1 and len(pool.one_offs) == 1
    del second, found, batch, got
    gc.collect()
    assert pool.one_offs == {}  # freed with its last view: the pool keeps none


def test_one_off_list_of_several_sizes_travels_as_views_of_one_segment(worker_pool: None) -> None:
    keep = _shm.take_slab((300,))
    slab = _shm.take_slab((10 + 6,))
    assert keep is not None and slab is not None and slab.segment is not None
    slab.array[:] = np.arange(16, dtype=np.uint8)
    flat = torch.from_numpy(slab.array)
    views = slab.tensors([flat[:10].view(2, 5), flat[10:].view(3, 2)])
    got = pickle.loads(ForkingPickler.dumps(views))
    assert all(type(g) is torch.Tensor for g in got)
    assert [g.tolist() for g in got] == [[list(range(5)), list(range(5, 10))], [[10, 11], [12, 13], [14, 15]]]


def one_slab_each(_worker: int) -> None:
    """In a worker: every clip batch pooled, and pool bytes for a single batch (so kept batches overflow it)."""
    _shm.MIN_POOLED_BYTES = 0
    _shm.MAX_SLAB_BYTES = BATCH_BYTES


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_clip_batches_beyond_the_pool_equal_batches_without_workers(
    store: Path, context: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIDLABEL_SHM_POOL", raising=False)
    clips = StoreClips(store)

    def loader(workers: int) -> DataLoader:
        sampler = torch.utils.data.RandomSampler(clips, generator=torch.Generator().manual_seed(3))
        return DataLoader(
            clips, batch_size=3, sampler=sampler, num_workers=workers, collate_fn=collate_clips,
            multiprocessing_context=context if workers else None, worker_init_fn=one_slab_each if workers else None,
        )  # fmt: skip

    want = list(loader(0))
    got = list(loader(2))  # every batch kept: all but one batch of each worker overflow its pool
    assert len(got) == len(want) >= 4
    seen = []
    for g, w in zip(got, want):
        assert type(g["image"]) is torch.Tensor and torch.equal(g["image"], w["image"])
        assert g["video_id"] == w["video_id"] and torch.equal(g["frame_indices"], w["frame_indices"])
        for image, frames in zip(g["image"], g["frame_indices"]):
            assert [read_frame_number(f.permute(1, 2, 0).numpy()) for f in image] == frames.tolist()
        seen.extend(g["clip_index"].tolist())
    assert sorted(seen) == list(range(len(clips)))
