"""The shared-memory slab pool that DataLoader workers hand image batches over with (vidlabel.torch_data._shm).

What must hold: batches through workers equal batches without workers (fork and spawn, every codec), a
slab is never refilled while any view of its batch lives in the main process, slabs are reused once
batches are dropped, and the pool can be turned off.
"""

from __future__ import annotations

import gc
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import Dataset, export
from vidlabel.errors import OptionError
from vidlabel.torch_data import StoreFrames, _shm, collate_frames


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("torch_shm")
    ds = make_dataset(root, videos=("a", "b"), n_frames=24)
    every = ("box", "mask", "marker")
    export(ds, root / "none", kinds=every, progress=False)
    export(ds, root / "zstd4", format="zarr", codec="zstd", chunk_frames=4, kinds=every, progress=False)
    export(ds, root / "jpeg", codec="jpeg", kinds=every, progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _pool_for_small_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    # The test clips are 64x48: let every image batch take a slab (forked workers inherit it).
    monkeypatch.setattr(_shm, "MIN_POOLED_BYTES", 0)
    monkeypatch.delenv("VIDLABEL_SHM_POOL", raising=False)
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def pool_every_size(_worker: int) -> None:
    """In a spawned worker, which imports the pool's module afresh: every image batch takes a slab, as here."""
    _shm.MIN_POOLED_BYTES = 0


def loader(dataset: Any, workers: int, context: str | None = None, batch_size: int = 4) -> DataLoader:
    sampler = torch.utils.data.RandomSampler(dataset, generator=torch.Generator().manual_seed(7))
    return DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, num_workers=workers, collate_fn=collate_frames,
        multiprocessing_context=context if workers else None, worker_init_fn=pool_every_size if workers else None,
    )  # fmt: skip


def assert_same_batch(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        other = got[key]
        if isinstance(value, torch.Tensor):
            assert type(other) is torch.Tensor and other.dtype == value.dtype and torch.equal(other, value), key
        elif isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
            assert len(other) == len(value), key
            for a, b in zip(other, value):
                assert type(a) is torch.Tensor and a.dtype == b.dtype and torch.equal(a, b), key
        else:
            assert other == value, key


@pytest.mark.parametrize(("context", "batch_size"), [("fork", 1), ("fork", 4), ("spawn", 4)])
@pytest.mark.parametrize("store_name", ["none", "zstd4", "jpeg"])
def test_batches_through_workers_equal_batches_without_and_survive_being_kept(
    stores: tuple[Path, Dataset], store_name: str, context: str, batch_size: int
) -> None:
    root, _ = stores
    frames = StoreFrames(root / store_name, with_masks=True)
    want = list(loader(frames, 0, batch_size=batch_size))
    got = list(loader(frames, 2, context, batch_size=batch_size))  # every batch kept in a list
    assert len(got) == len(want) > 0
    if batch_size == 1:
        assert len(got) > 2 * _shm.MAX_SLABS  # more batches kept than both pools hold: the fallback is used too
    for g, w in zip(got, want):
        assert_same_batch(g, w)
        # the generator draws each frame's number in its pixels: the right frame, independently of the store
        numbers = [read_frame_number(img.permute(1, 2, 0).numpy()) for img in g["image"]]
        assert numbers == g["frame_index"].tolist()


def slab_of_image(image: torch.Tensor) -> tuple[str, int] | None:
    """(pool token, slab index) of the mapped slab in this process that ``image``'s memory lies in; None for a
    batch of one sample (read without a batch buffer, handed over the plain way)."""
    if len(image) == 1:
        return None
    ptr = image.data_ptr()
    for token, entry in list(_shm._MAPPED.items()):
        for index, slab in entry["slabs"].items():
            if slab.data_ptr() <= ptr < slab.data_ptr() + slab.nbytes():
                return token, index
    raise AssertionError(f"image at {ptr:#x} is in no slab mapped here")


def test_slabs_are_reused_once_batches_are_dropped(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none")
    want = list(loader(frames, 0, batch_size=2))
    count, seen = 0, set()
    for g, w in zip(loader(frames, 2, "fork", batch_size=2), want):
        assert_same_batch(g, w)  # checked on arrival, then dropped
        count += 1
        seen.add(slab_of_image(g["image"]))
    seen.discard(None)
    assert count == len(want) >= 10 and len({t for t, _ in seen}) == 2  # one pool per worker
    assert 2 <= len(seen) < count  # every batch through a few slabs


def test_new_workers_adopt_the_slabs_of_exited_workers_and_never_refill_a_kept_batch(
    stores: tuple[Path, Dataset],
) -> None:
    # persistent_workers=False: every epoch starts new workers; they take over the slabs the main process kept
    # mapped (no fresh shared memory per epoch), but a batch the user still holds keeps its slab.
    root, _ = stores
    frames = StoreFrames(root / "none")
    want = list(loader(frames, 0, batch_size=2))
    first: set[tuple[str, int]] = set()
    kept = None
    for k, (g, w) in enumerate(zip(loader(frames, 2, "fork", batch_size=2), want)):
        assert_same_batch(g, w)
        first.add(slab_of_image(g["image"]))
        if k == 3:
            kept, kept_want, kept_slab = g, w, slab_of_image(g["image"])
    assert kept is not None and kept_slab is not None
    first.discard(None)
    second: set[tuple[str, int]] = set()
    for _epoch in range(2):  # two more generations of workers
        for g, w in zip(loader(frames, 2, "fork", batch_size=2), want):
            assert_same_batch(g, w)
            second.add(slab_of_image(g["image"]))
            assert_same_batch(kept, kept_want)  # never overwritten while held
    second.discard(None)
    assert {t for t, _ in second} <= {t for t, _ in first}  # the same pools: adopted, not made anew
    assert kept_slab not in second  # the slab of the kept batch was never handed out again
    del kept, g
    gc.collect()
    after = {slab_of_image(g["image"]) for g in loader(frames, 2, "fork", batch_size=2)} - {None}
    assert {t for t, _ in after} <= {t for t, _ in first}


def test_a_pool_of_workers_still_running_is_not_adopted(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none")
    want = list(loader(frames, 0, batch_size=2))
    running = iter(loader(frames, 2, "fork", batch_size=2))
    a_batches = [next(running), next(running), next(running)]
    other = iter(loader(frames, 2, "fork", batch_size=2))  # forked while the first loader's workers live
    a_pools, b_pools = {slab_of_image(b["image"]) for b in a_batches}, set()
    for k, (w, b) in enumerate(zip(want, other)):
        assert_same_batch(b, w)
        b_pools.add(slab_of_image(b["image"]))
        if 3 + k < len(want):
            a = next(running)
            assert_same_batch(a, want[3 + k])
            a_pools.add(slab_of_image(a["image"]))
    a_pools, b_pools = {s[0] for s in a_pools - {None}}, {s[0] for s in b_pools - {None}}
    assert a_pools and b_pools and not a_pools & b_pools  # each pool written by one live process at a time
    for got, w in zip(a_batches, want):
        assert_same_batch(got, w)


def test_a_view_kept_from_a_batch_keeps_its_slab(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none")
    want = [b["image"][-1].clone() for b in loader(frames, 0, batch_size=2)]
    kept = []
    for batch in loader(frames, 2, "fork", batch_size=2):
        kept.append(batch["image"][-1])  # a view into the slab; the batch itself is dropped
        del batch
        gc.collect()
    assert len(kept) == len(want)
    for k, w in zip(kept, want):
        assert torch.equal(k, w)


class KeepsImages:
    """A transform that keeps images across batches in the worker (as mosaic, mixup or copy-paste do): each
    sample also carries the image of a sample seen a few samples earlier, as a view, not a copy."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, torch.Tensor]] = []

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        self.seen.append((int(sample["frame_index"]), sample["image"]))
        frame, image = self.seen.pop(0) if len(self.seen) > 5 else self.seen[0]
        sample["earlier_frame"] = frame
        sample["earlier_image"] = image
        return sample


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_images_a_transform_keeps_in_the_worker_are_never_refilled(stores: tuple[Path, Dataset], context: str) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none", transform=KeepsImages())
    count = 0
    for batch in loader(frames, 2, context, batch_size=2):
        for image, frame in zip(batch["earlier_image"], batch["earlier_frame"].tolist()):
            assert read_frame_number(image.permute(1, 2, 0).numpy()) == frame  # the frame it was, not a later one
            count += 1
    assert count == len(frames)


class ReplaysEarlierBatch:
    """Even batches: remember each sample; odd batches: return the remembered samples of the batch before, as
    they are (their images are then exactly the rows of a slab already handed over)."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size, self.n, self.kept = batch_size, 0, {}

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        batch, k = divmod(self.n, self.batch_size)
        self.n += 1
        if batch % 2 == 0:
            self.kept[k] = sample
            return sample
        return self.kept[k]


def test_a_batch_handed_over_twice_is_copied_the_second_time(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none", transform=ReplaysEarlierBatch(2))
    window: list[dict[str, Any]] = []
    checked = 0
    for batch in loader(frames, 1, "fork", batch_size=2):
        window.append(batch)
        if len(window) > 3:  # the oldest batch of the window has lived through three newer ones
            old = window.pop(0)
            numbers = [read_frame_number(img.permute(1, 2, 0).numpy()) for img in old["image"]]
            assert numbers == old["frame_index"].tolist()
            checked += 1
        gc.collect()
    assert checked > 5


def test_the_pool_can_be_turned_off(stores: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = stores
    monkeypatch.setenv("VIDLABEL_SHM_POOL", "0")
    frames = StoreFrames(root / "none")
    before = set(_shm._MAPPED)
    for g, w in zip(loader(frames, 2, "fork"), loader(frames, 0)):
        assert_same_batch(g, w)
    assert set(_shm._MAPPED) == before


def test_collate_returns_the_batch_buffer_storeframes_read_into_without_a_copy(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none")
    samples = frames.__getitems__([3, 0, 7])
    batch = collate_frames(samples)
    assert batch["image"].data_ptr() == samples[0]["image"].data_ptr()
    assert batch["image"].is_contiguous(memory_format=torch.channels_last)
    for k, i in enumerate([3, 0, 7]):
        assert torch.equal(batch["image"][k], frames[i]["image"])
    mixed = collate_frames([frames[3], frames[0]])  # separate reads: stacked (one copy)
    assert mixed["image"].data_ptr() not in (frames[3]["image"].data_ptr(),)
    assert torch.equal(mixed["image"], batch["image"][:2])


def test_slabs_outside_workers_and_release(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _shm.take_slab((4, 8, 8, 3)) is None  # not in a DataLoader worker
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())
    monkeypatch.setattr(_shm, "_POOL", None)
    slab = _shm.take_slab((4, 8, 8, 3))
    assert slab is not None and slab.array.shape == (4, 8, 8, 3) and slab.pool.in_use[slab.index] == 1
    pool, index = slab.pool, slab.index
    del slab
    gc.collect()
    assert pool.in_use[index] == 0  # dropped in the worker without being handed over: back in the pool
    again = _shm.take_slab((2, 8, 8, 3))
    assert again is not None and again.index == index  # reused (large enough)
    tensor = again.tensor(torch.from_numpy(again.array))
    first = tensor.__reduce_ex__(2)[1]
    second = tensor.__reduce_ex__(2)[1]
    assert first[2] is not None and second[2] is None  # the slab's storage travels once
    del again, tensor
    gc.collect()
    assert pool.in_use[index] == 1  # handed over: only the receiving process gives it back
    released = _shm.take_slab((4, 8, 8, 3))  # given back explicitly while its array still lives here
    assert released is not None
    old_array, index = released.array, released.index
    released.release()
    other = _shm.take_slab((4, 8, 8, 3))
    assert other is not None and other.index != index  # not refilled while the worker still holds a view
    other.release()
    del released, old_array, other
    gc.collect()
    retaken = _shm.take_slab((4, 8, 8, 3))
    assert retaken is not None and pool.in_use[retaken.index] == 1
    old_index = retaken.index
    del retaken
    gc.collect()
    assert pool.in_use[old_index] == 0
    monkeypatch.setenv("VIDLABEL_SHM_POOL", "off")
    assert _shm.take_slab((4, 8, 8, 3)) is None


def test_small_tensors_travel_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    t = torch.arange(6, dtype=torch.int64)
    assert _shm.by_value(t) is t  # not in a worker
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())
    small = _shm.by_value(t)
    assert type(pickle.loads(pickle.dumps(small))) is torch.Tensor
    assert torch.equal(pickle.loads(pickle.dumps(small)), t)
    parts = list(torch.split(torch.arange(10, dtype=torch.float32).reshape(5, 2), [2, 0, 3]))
    ragged = _shm.ragged_by_value(parts)
    back = pickle.loads(pickle.dumps(ragged))
    assert type(back) is list and [tuple(p.shape) for p in back] == [(2, 2), (0, 2), (3, 2)]
    assert all(torch.equal(a, b) for a, b in zip(back, parts))
    big = torch.zeros(_shm.MIN_POOLED_BYTES, dtype=torch.uint8)
    assert _shm.by_value(big) is big  # large: the shared-memory way
    assert type(_shm.ragged_by_value([big[:10], big[10:]])) is list


def test_read_rows_into_given_arrays(stores: tuple[Path, Dataset]) -> None:
    root, _ = stores
    frames = StoreFrames(root / "zstd4")
    store, video_id = frames.store, frames.index[0][0]
    out = np.zeros((3, 48, 64, 3), np.uint8)
    got = store.read_rows(video_id, [2, 0, 2], out=list(out))
    assert all(np.shares_memory(g, o) for g, o in zip(got, out))
    for k, row in enumerate([2, 0, 2]):
        assert np.array_equal(out[k], store.read_row(video_id, row))
    with pytest.raises(OptionError, match=r"read_rows: out must hold 3 arrays of shape \(48, 64, 3\) uint8"):
        store.read_rows(video_id, [2, 0, 2], out=list(out[:2]))
    with pytest.raises(OptionError, match=r"read_rows: out must hold 1 arrays of shape \(48, 64, 3\) uint8"):
        store.read_rows(video_id, [1], out=[np.zeros((48, 64, 3), np.float32)])


def test_a_slab_is_wrapped_once_before_it_is_pickled(monkeypatch: pytest.MonkeyPatch) -> None:
    # The DataLoader's queue pickles on its own thread: a batch can be collated again over the same slab before
    # the first batch over it is pickled. The second must not be handed over as that slab too.
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())
    monkeypatch.setattr(_shm, "_POOL", None)
    slab = _shm.take_slab((2, 8, 8, 3))
    assert slab is not None
    rows = torch.from_numpy(slab.array)
    assert _shm.slab_of(rows) is not None  # read into, not wrapped yet
    first = slab.tensor(rows.permute(0, 3, 1, 2))
    assert _shm.slab_of(rows) is None  # wrapped (not pickled yet): never a second batch over it
    values = [v.permute(2, 0, 1) for v in rows]
    again = collate_frames([{"image": v} for v in values])["image"]
    assert not isinstance(again, _shm._PooledTensor) and again.data_ptr() == first.data_ptr()  # not as the slab


def test_batch_buffers_outside_workers_are_reused_only_once_every_view_is_gone(
    stores: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = stores
    frames = StoreFrames(root / "none")
    want = [frames[i]["image"].clone() for i in range(6)]
    monkeypatch.setattr(_shm, "_FREE_BUFFERS", [])  # none left by earlier tests
    free: set[int] = set()
    first = frames.__getitems__([0, 1, 2])
    kept = first[1]["image"]  # one sample's image (a view of the batch buffer) kept, the rest dropped
    ptr = first[0]["image"].data_ptr()
    del first
    gc.collect()
    assert {id(b) for b in _shm._FREE_BUFFERS} <= free  # not given back while a view lives
    for _ in range(4):  # later batches never land in the buffer a kept view lives in
        again = frames.__getitems__([3, 4, 5])
        assert again[0]["image"].data_ptr() != ptr
        for k, sample in enumerate(again):
            assert torch.equal(sample["image"], want[3 + k])
        assert torch.equal(kept, want[1])
        del again, sample
        gc.collect()
    back = [b for b in _shm._FREE_BUFFERS if id(b) not in free]
    assert len(back) == 1  # the four batches went through one buffer, given back after each
    del kept
    gc.collect()
    back = [b for b in _shm._FREE_BUFFERS if id(b) not in free]
    assert len(back) == 2  # and now the kept one's
    both = [frames.__getitems__([5, 4, 3]), frames.__getitems__([2, 1, 0])]  # two held at once: those two
    assert not [b for b in _shm._FREE_BUFFERS if id(b) not in free]
    for k in range(3):
        assert torch.equal(both[0][k]["image"], want[5 - k]) and torch.equal(both[1][k]["image"], want[2 - k])


def test_a_fresh_batch_buffer_mapped_behind_the_reader_keeps_what_the_reader_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # outside workers a fresh batch buffer's pages are mapped on the background thread, from the back, while the
    # reader writes from the front: a page written first is never swapped for a zeroed one, and a buffer is not
    # handed out twice while its array lives
    import threading

    monkeypatch.setattr(_shm, "_FREE_BUFFERS", [])
    shape = (8, 720, 1280, 3)
    a = _shm.take_buffer(shape)
    flat = a.reshape(-1)
    flat[::4096] = np.arange(flat[::4096].size) % 251 + 1  # one byte a page, front to back, as populate runs
    done = threading.Event()
    _shm.in_background(done.set)  # after the buffer's job
    assert done.wait(60)
    np.testing.assert_array_equal(flat[::4096], np.arange(flat[::4096].size) % 251 + 1)
    assert int(flat[1::4096].max()) == 0
    b = _shm.take_buffer(shape)  # a is alive: another buffer
    assert b.ctypes.data != a.ctypes.data
    del flat, a
    gc.collect()
    c = _shm.take_buffer(shape)  # a's buffer came back: reused, not mapped again
    assert not np.shares_memory(c, b)


def test_importing_the_pool_changes_nothing_in_the_process_until_a_dataset_is_made(
    stores: tuple[Path, Dataset],
) -> None:
    # the claims file and the at-fork hook used to come with `import vidlabel.torch_data`: now with a dataset
    import subprocess
    import sys

    root, _ = stores
    code = (
        "import os, sys\n"
        "hooks = []\n"
        "real = os.register_at_fork\n"
        "def spy(**kw):\n"
        "    hooks.extend(f for f in kw.values() if str(getattr(f, '__module__', '')).startswith('vidlabel'))\n"
        "    real(**kw)\n"
        "os.register_at_fork = spy\n"
        "import vidlabel, vidlabel.torch_data, vidlabel.export, vidlabel.cli\n"
        "from vidlabel.torch_data import _shm, StoreFrames\n"
        "before = (_shm._CLAIMS_FD, len(hooks))\n"
        "StoreFrames(sys.argv[1])\n"
        "after = (_shm._CLAIMS_FD >= 0, len(hooks))\n"
        "_shm.install()\n"
        "print(before, after, len(hooks))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root / "none")], capture_output=True, text=True, check=True, timeout=120
    )
    # four hook functions: the claims-lock reset in a child, and before/after-in-parent/after-in-child of the pins
    # that keep slabs held at a fork; registered once, however many datasets are made
    assert out.stdout.split("\n")[0] == "(-1, 0) (True, 4) 4"


def test_the_background_thread_drops_a_failing_job_and_goes_on() -> None:
    import threading

    finished = threading.Event()

    def failing() -> None:
        raise OSError("a populate that fails")

    _shm.in_background(failing)
    _shm.in_background(finished.set)
    assert finished.wait(60)
    assert _shm._BACKGROUND is not None and _shm._BACKGROUND.thread.is_alive()
