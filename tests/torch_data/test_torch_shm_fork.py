"""A batch of pooled slabs handed to a process forked from the main process stays intact (vidlabel.torch_data._shm)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import export
from vidlabel.torch_data import StoreFrames, _shm, collate_frames


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("torch_shm_fork")
    ds = make_dataset(root, videos=("a", "b"), n_frames=24)
    export(ds, root / "store", progress=False)
    return root / "store"


@pytest.fixture(autouse=True)
def _pool_for_small_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test clips are 64x48: let every image batch take a slab (forked workers inherit the setting).
    monkeypatch.setattr(_shm, "MIN_POOLED_BYTES", 0)
    monkeypatch.delenv("VIDLABEL_SHM_POOL", raising=False)
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def _frame_numbers(images: np.ndarray) -> list[int]:
    """The frame number each (C, H, W) image of a batch shows."""
    return [read_frame_number(image.transpose(1, 2, 0)) for image in images]


def _child_checks(images: torch.Tensor, frames: list[int], pipes: tuple[int, int, int, int]) -> None:
    """In the forked child: wait for the parent's word, then say whether the batch still shows its frames."""
    go, go_write, answer_read, answer = pipes
    code = 1
    try:
        os.close(go_write)
        os.close(answer_read)
        os.read(go, 1)
        # NumPy only: torch's thread pool is not to be used in a child forked after the parent used it
        code = 0 if _frame_numbers(images.numpy()) == frames else 2
        os.write(answer, bytes([code]))
    finally:
        os._exit(code)


def test_a_batch_handed_to_a_forked_child_stays_intact_after_the_parent_drops_it(store: Path) -> None:
    # before: a slab's lifetime was tracked in the main process only, so once the loop dropped the batch a
    # worker refilled the slab under the forked child's copy, which then showed other frames' pixels
    loader = DataLoader(
        StoreFrames(store), batch_size=2, shuffle=False, num_workers=2, collate_fn=collate_frames,
        multiprocessing_context="fork",
    )  # fmt: skip
    batches = iter(loader)
    batch = next(batches)
    images = batch["image"]
    frames = [int(f) for f in batch["frame_index"]]
    assert _frame_numbers(images.numpy()) == frames and any(
        e["slabs"] and any(s.data_ptr() <= images.data_ptr() < s.data_ptr() + s.nbytes() for s in e["slabs"].values())
        for e in _shm._MAPPED.values()
    )  # a slab's batch, not a copy
    go_read, go_write = os.pipe()
    answer_read, answer_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child_checks(images, frames, (go_read, go_write, answer_read, answer_write))
    os.close(go_read)
    os.close(answer_write)
    del batch, images
    gc.collect()
    read_on = 0
    for later in batches:  # the loop reads on: its slabs go back and are filled again
        assert _frame_numbers(later["image"].numpy()) == [int(f) for f in later["frame_index"]]
        read_on += 1
    assert read_on >= 10
    os.write(go_write, b"g")
    said = os.read(answer_read, 1)
    _, status = os.waitpid(pid, 0)
    os.close(go_write)
    os.close(answer_read)
    assert said == b"\x00" and os.waitstatus_to_exitcode(status) == 0


def test_a_slab_held_at_a_fork_goes_back_once_the_child_has_exited(store: Path) -> None:
    # the pin lasts as long as the child: a slab is not lost for good to every batch a fork saw
    loader = DataLoader(
        StoreFrames(store), batch_size=2, shuffle=False, num_workers=2, collate_fn=collate_frames,
        multiprocessing_context="fork", persistent_workers=True,
    )  # fmt: skip
    batches = iter(loader)
    batch = next(batches)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    pinned = set(_shm._PINS)
    assert pinned
    del batch
    gc.collect()
    for _ in batches:
        pass
    assert not pinned & set(_shm._PINS) and not pinned & set(_shm._RELEASED)
