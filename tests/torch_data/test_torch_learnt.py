"""DataLoader workers hand what they learnt about a store's videos (small arrays, indexed frames files) to the main
process with their batches, so that the workers of later epochs (``persistent_workers=False``, torch's default:
new workers every epoch) start with it and open no HDF5 file (issue 15: over a store of 1,000 tiny videos, 2 workers
read every video's arrays and opened every frames file again every epoch, at a tenth of the rate of none)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import export, open_store
from vidlabel.store import _hdf5, _hdf5_files, _hdf5_frames
from vidlabel.store._framestore import adopt_learnt
from vidlabel.torch_data import StoreFrames, StoreStream, _shm, collate_frames

VIDEOS = ("a", "b", "c")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learnt")
    ds = make_dataset(root, videos=VIDEOS, n_frames=12)
    export(ds, root / "store", frames="all", codec="none", progress=False)
    return root / "store"


@pytest.fixture
def open_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file to which every process forked from this one appends ``pid what`` for each store file it opens with
    HDF5 (``_hdf5_files._open_inside``: video files and frames files)."""
    log = tmp_path / "opens.log"
    log.touch()
    real = _hdf5_files._open_inside

    def logged(root: Path, path: Path, what: str) -> Any:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()} {what}\n")
        return real(root, path, what)

    for module in (_hdf5, _hdf5_files, _hdf5_frames):  # every module that opens store files
        monkeypatch.setattr(module, "_open_inside", logged)
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS", "VIDLABEL_SHM_POOL"):
        monkeypatch.delenv(name, raising=False)
    return log


def worker_opens(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if int(line.split()[0]) != os.getpid()]


def expected(store: Path) -> list[tuple[str, int]]:
    """Every sample's (video id, frame number), read through another FrameStore (this process's StoreFrames must
    learn nothing itself)."""
    fs = open_store(store)
    return sorted((v, int(fs.video_data(v).frame_number[row])) for v, row in (fs.locate(i) for i in range(len(fs))))


def check_epoch(loader: DataLoader, want: list[tuple[str, int]]) -> None:  # type: ignore[type-arg]
    """Every sample once, each image the frame its frame number says (the pixels encode it)."""
    seen = []
    for batch in loader:
        for image, video_id, frame_index in zip(batch["image"], batch["video_id"], batch["frame_index"].tolist()):
            assert read_frame_number(image.permute(1, 2, 0).numpy()) == frame_index, (video_id, frame_index)
            seen.append((video_id, frame_index))
    assert sorted(seen) == want


@pytest.mark.parametrize("kind", ["StoreFrames", "StoreStream"])
def test_workers_of_later_epochs_start_with_what_earlier_workers_learnt(store: Path, open_log: Path, kind: str) -> None:
    want = expected(store)
    data: Any
    if kind == "StoreFrames":
        data = StoreFrames(store)
        loader = DataLoader(data, batch_size=4, shuffle=True, num_workers=2, collate_fn=collate_frames)
    else:
        data = StoreStream(store, shuffle=True)
        loader = DataLoader(data, batch_size=4, num_workers=2, collate_fn=collate_frames)
    check_epoch(loader, want)
    first = worker_opens(open_log)
    # the root's video table indexes every video: even the first workers open no video or frames file with HDF5
    assert first == []
    state = data.store._process()  # the main process read nothing itself, but now knows every video
    indexed = {v for v, opener in state.openers.items() if getattr(opener, "frames_index", None) is not None}
    assert set(state.data) == set(VIDEOS) and indexed == set(VIDEOS)
    open_log.write_text("")
    for _ in range(2):
        check_epoch(loader, want)
    assert worker_opens(open_log) == []


def test_the_creating_process_hands_nothing_over(store: Path) -> None:
    fs = open_store(store)
    for i in range(len(fs)):
        fs.frame(i)
    assert fs.learnt() is None
    assert fs._process().learnt == {}


def test_adopting_keeps_what_the_process_knows_and_ignores_unknown_stores(store: Path) -> None:
    fs = open_store(store)
    known = fs.video_data("a")
    other = open_store(store)
    other._creator_pid = -1  # as if created by another process: what it reads is learnt
    news = {v: (other.video_data(v), None) for v in VIDEOS}
    other.frame(0)
    token, learnt = other.learnt() or ("", {})
    assert token == other._token and set(learnt) == set(VIDEOS)
    assert learnt[other.locate(0)[0]][1] is not None  # the indexed opener of the video read
    adopt_learnt("no such store", news)  # ignored
    adopt_learnt(fs._token, news)
    state = fs._process()
    assert state.data["a"] is known  # kept, not replaced
    assert set(state.data) == set(VIDEOS)
    assert not state.data["b"].frame_number.flags.writeable
    np.testing.assert_array_equal(state.data["b"].frame_number, open_store(store).video_data("b").frame_number)


DELIVERED: list[tuple[Any, ...]] = []


def _record(*args: Any) -> None:
    DELIVERED.append(args)


def test_mail_rides_on_the_next_tensor_handed_over_and_is_delivered_once() -> None:
    DELIVERED.clear()
    _shm.post(_record, "outside a worker")  # nothing to carry it: not posted
    assert _shm._OUTBOX == []
    _shm._OUTBOX.append((_record, ("learnt", 1)))  # as post() does in a worker
    first = torch.arange(3).as_subclass(_shm._ByValueTensor)
    second = torch.arange(2).as_subclass(_shm._ByValueTensor)
    out = pickle.loads(pickle.dumps({"a": first, "b": second}))
    assert DELIVERED == [("learnt", 1)] and _shm._OUTBOX == []
    assert out["a"].tolist() == [0, 1, 2] and out["b"].tolist() == [0, 1]
