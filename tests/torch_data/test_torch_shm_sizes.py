"""The slab pool with a store of two frame sizes (issue 15): a shuffled batch of mixed sizes travels in one
slab (not a fresh shared-memory segment per sample), and a buffer handed to the user is never reused while
the user holds any image of it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import encode_clip, object_box, read_frame_number
from vidlabel import Dataset, export, probe
from vidlabel.torch_data import StoreFrames, _shm, collate_frames

SIZES = {"small": (64, 48), "large": (96, 64)}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shm_sizes")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object"])
    for video_id, (w, h) in SIZES.items():
        truth = encode_clip(root / f"{video_id}.mp4", n_frames=20, width=w, height=h, gop=10)
        ds.add_video(probe(truth.path, video_id=video_id))
        ds.add_annotations(
            [{"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, w, h)} for f in range(20)],
            video_id,
        )
    ds.build()
    export(ds, root / "store", progress=False)
    return root / "store"


@pytest.fixture(autouse=True)
def _pool_for_small_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shm, "MIN_POOLED_BYTES", 0)
    monkeypatch.delenv("VIDLABEL_SHM_POOL", raising=False)
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def loader(dataset: Any, workers: int, batch_size: int = 4) -> DataLoader:
    sampler = torch.utils.data.RandomSampler(dataset, generator=torch.Generator().manual_seed(3))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
                      collate_fn=collate_frames, multiprocessing_context="fork" if workers else None)  # fmt: skip


def check_image(image: torch.Tensor, video_id: str, frame: int) -> None:
    w, h = SIZES[video_id]
    assert type(image) is torch.Tensor and image.shape == (3, h, w)
    assert read_frame_number(image.permute(1, 2, 0).numpy()) == frame


def test_mixed_size_batches_travel_in_slabs_and_equal_batches_without_workers(store: Path) -> None:
    frames = StoreFrames(store)
    want = list(loader(frames, 0))
    assert any(isinstance(b["image"], list) for b in want)  # some batches mix the two sizes
    got = []
    for batch in loader(frames, 2):  # checked on arrival; every batch kept
        for image, video_id, frame in zip(batch["image"], batch["video_id"], batch["frame_index"].tolist()):
            check_image(image, video_id, frame)
        got.append(batch)
    # the slabs of every pool the main process maps: the workers may have made a pool or adopted one that
    # exited workers of an earlier loader (another test's) left behind
    slabs = {s.data_ptr() for e in _shm._MAPPED.values() for s in e["slabs"].values()}
    mixed = [b for b in got if isinstance(b["image"], list)]
    assert len(mixed) > 0
    # a mixed batch's images are views of one pooled slab, not one fresh segment each
    for batch in mixed:
        ptrs = {img.untyped_storage().data_ptr() for img in batch["image"]}
        assert len(ptrs) == 1 and ptrs <= slabs
    for g, w in zip(got, want):  # every batch kept until now is still what it was
        assert g["video_id"] == w["video_id"] and torch.equal(g["frame_index"], w["frame_index"])
        gi = g["image"] if isinstance(g["image"], list) else list(g["image"])
        wi = w["image"] if isinstance(w["image"], list) else list(w["image"])
        assert len(gi) == len(wi) and all(torch.equal(a, b) for a, b in zip(gi, wi))


def test_an_image_kept_from_a_mixed_batch_keeps_its_slab(store: Path) -> None:
    frames = StoreFrames(store)
    kept: list[tuple[torch.Tensor, str, int]] = []
    n_batches = 0
    for _epoch in range(3):  # more batches than the pools hold slabs: slabs are reused meanwhile
        for batch in loader(frames, 2, batch_size=3):
            n_batches += 1
            if isinstance(batch["image"], list):
                kept.append((batch["image"][-1], batch["video_id"][-1], int(batch["frame_index"][-1])))
            del batch  # the rest of the batch is dropped at once
            gc.collect()
    assert n_batches > 2 * _shm.MAX_SLABS and len(kept) > 3
    for image, video_id, frame in kept:
        check_image(image, video_id, frame)  # never overwritten by a later batch
        w, h = SIZES[video_id]
        assert image.shape == (3, h, w)
