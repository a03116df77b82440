"""StoreFrames and StoreStream: the one sample contract with FrameSamples, exactly once under fork and spawn,
ranks with equal counts, determinism, pickling, the chunk cache bound."""

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

from tests.media import read_frame_number
from tests.store_support import assert_same_sample, make_dataset
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.errors import (
    OptionError,
    SampleIndexTypeError,
    SampleOutOfRangeError,
    StoreError,
    VidlabelError,
    VidlabelWarning,
)
from vidlabel.torch_data import StoreFrames, StoreStream, collate_frames
from vidlabel.torch_data._common import to_torch_sample

#: JPEG q90 on the 64x48 generated clips: the largest pixel difference we accept from the decoded video.
JPEG_TOLERANCE = 48


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("torch_store")
    ds = make_dataset(root, videos=("a", "b", "c"), n_frames=24)
    every = ("box", "mask", "marker")  # store every annotated frame; StoreFrames(kinds=...) selects among them
    for fmt in ("hdf5", "zarr"):
        export(ds, root / f"{fmt}-none", format=fmt, kinds=every, progress=False)
        export(ds, root / f"{fmt}-zstd4", format=fmt, codec="zstd", chunk_frames=4, kinds=every, progress=False)
        export(ds, root / f"{fmt}-jpeg", format=fmt, codec="jpeg", kinds=every, progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


OPTIONS: list[dict[str, Any]] = [
    {},
    {"kinds": ("box",), "labels": ["person", "obj"], "label_offset": 1},
    {"box_format": "cxcywh", "normalized": True, "with_masks": True},
    {"kinds": ("mask", "marker"), "box_format": "xywh", "with_masks": True},
]


@pytest.mark.parametrize("store_name", ["hdf5-none", "zarr-zstd4", "hdf5-jpeg", "zarr-jpeg"])
@pytest.mark.parametrize("options", OPTIONS, ids=["default", "labels", "yolo", "masks_markers"])
def test_one_sample_contract_frame_samples_equals_store_frames(
    world: tuple[Path, Dataset], store_name: str, options: dict[str, Any]
) -> None:
    root, ds = world
    fs = FrameSamples(ds, **options)
    frames = StoreFrames(root / store_name, **options)
    assert list(fs.index) == frames.index and len(frames) == len(fs) > 0
    assert frames.class_names == fs.class_names
    tolerance = JPEG_TOLERANCE if "jpeg" in store_name else 0
    readers = {v: fs.reader(v) for v in fs.video_ids}
    try:
        for i, (video_id, n) in enumerate(fs.index):
            want = to_torch_sample(fs.sample(video_id, n, readers[video_id].read(n)))
            assert_same_sample(frames[i], want, pixel_tolerance=tolerance)
    finally:
        for reader in readers.values():
            reader.close()


def test_getitems_groups_a_batch_and_equals_getitem(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    frames = StoreFrames(root / "hdf5-zstd4", with_masks=True)
    idx = [5, 0, 5, 17, 3, 2, 1]
    batch = frames.__getitems__(idx)
    for i, s in zip(idx, batch):
        assert_same_sample(s, frames[i])
    assert frames.store.cache.hits > 0  # chunks of 4 frames: the batch reused cached chunks


def test_transform_and_describe(world: tuple[Path, Dataset]) -> None:
    root, ds = world

    def flip(sample: dict[str, Any]) -> dict[str, Any]:
        sample["image"] = torch.flip(sample["image"], dims=[2])
        return sample

    frames = StoreFrames(root / "zarr-none", transform=flip)
    plain = StoreFrames(root / "zarr-none")
    assert torch.equal(frames[2]["image"], torch.flip(plain[2]["image"], dims=[2]))
    info = frames.describe()
    assert info["release"] == ds.releases()[-1] and info["samples"] == len(frames)
    assert info["options"]["kinds"] == ["box", "mask"]


def pairs_of(loader: DataLoader) -> list[tuple[str, int]]:
    out = []
    for batch in loader:
        assert batch["image"].dtype == torch.uint8 and batch["image"].shape[1:] == (3, 48, 64)
        out.extend(zip(batch["video_id"], batch["frame_index"].tolist()))
    return out


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_store_frames_workers_see_every_sample_exactly_once(world: tuple[Path, Dataset], context: str) -> None:
    root, _ = world
    frames = StoreFrames(root / "hdf5-zstd4")
    loader = DataLoader(
        frames, batch_size=5, shuffle=True, num_workers=2, multiprocessing_context=context,
        collate_fn=collate_frames, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    got = pairs_of(loader)
    assert Counter(got) == Counter(frames.index)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_store_stream_workers_see_every_sample_exactly_once(world: tuple[Path, Dataset], context: str) -> None:
    root, _ = world
    stream = StoreStream(root / "zarr-zstd4", shuffle_buffer=8, seed=3)
    loader = DataLoader(stream, batch_size=4, num_workers=2, multiprocessing_context=context, collate_fn=collate_frames)
    got = pairs_of(loader)
    assert Counter(got) == Counter(stream.index) and len(got) == len(stream)


def test_store_stream_ranks_get_equal_counts(world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = world
    stream = StoreStream(root / "hdf5-zstd4", seed=1)
    n = len(stream.samples)
    for world_size in (2, 3):
        per_rank = []
        seen: Counter[int] = Counter()
        for rank in range(world_size):
            mine = []
            for worker in range(2):
                for piece in stream.shard_pieces(0, rank, world_size, worker, 2):
                    mine.extend(piece.tolist())
            per_rank.append(len(mine))
            seen.update(mine)
        assert per_rank == [-(-n // world_size)] * world_size  # same count on every rank
        assert set(seen) == set(range(n)) and sum(seen.values()) - n == world_size * per_rank[0] - n
    drop = StoreStream(root / "hdf5-zstd4", seed=1, drop_last=True)
    pieces = [p for r in range(2) for w in range(2) for p in drop.shard_pieces(0, r, 2, w, 2)]
    flat = np.concatenate(pieces).tolist()
    assert len(flat) == len(set(flat)) == 2 * (n // 2)
    # through the environment variables, as under torchrun
    monkeypatch.setenv("WORLD_SIZE", "2")
    got: list[tuple[str, int]] = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        assert len(stream) == -(-n // 2)
        ranked = [(s["video_id"], s["frame_index"]) for s in stream]
        assert len(ranked) == -(-n // 2)
        got.extend(ranked)
    assert set(got) == set(stream.index)


def test_store_stream_order_is_seeded_and_changes_with_the_epoch(world: tuple[Path, Dataset]) -> None:
    root, _ = world

    def order(seed: int, epoch: int, buffer: int = 0) -> list[tuple[str, int]]:
        stream = StoreStream(root / "hdf5-none", seed=seed, shuffle_buffer=buffer)
        stream.set_epoch(epoch)
        return [(s["video_id"], s["frame_index"]) for s in stream]

    assert order(0, 0) == order(0, 0) and order(0, 0, 5) == order(0, 0, 5)
    assert order(0, 0) != order(0, 1) and order(0, 0) != order(1, 0)
    assert sorted(order(0, 1, 5)) == sorted(order(0, 0))
    plain = StoreStream(root / "hdf5-none", shuffle=False)
    assert [(s["video_id"], s["frame_index"]) for s in plain] == plain.index
    with pytest.raises(OptionError, match=r"epoch must be an integer >= 0, got -1"):
        plain.set_epoch(-1)


@pytest.mark.parametrize("store_name", ["hdf5-zstd4", "zarr-none"])
def test_set_epoch_reaches_persistent_workers(world: tuple[Path, Dataset], store_name: str) -> None:
    # Issue 12 item 2: persistent workers kept the dataset copy of their start and repeated epoch 0 forever.
    root, _ = world

    def orders(persistent: bool, context: str = "fork") -> list[list[tuple[str, int]]]:
        stream = StoreStream(root / store_name, shuffle_buffer=6, seed=4)
        loader = DataLoader(
            stream, batch_size=4, num_workers=2, persistent_workers=persistent, multiprocessing_context=context,
            collate_fn=collate_frames,
        )  # fmt: skip
        out = []
        for epoch in range(3):
            stream.set_epoch(epoch)
            assert stream.epoch == epoch
            out.append(pairs_of(loader))
        return out

    fresh, kept = orders(False), orders(True)
    assert kept == fresh
    if store_name == "zarr-none":  # spawned workers receive the shared epoch as they start
        assert orders(True, "spawn") == fresh
    assert len({tuple(order) for order in fresh}) == 3  # each epoch its own order
    want = Counter(StoreStream(root / store_name).index)
    assert all(Counter(order) == want for order in kept)


def test_datasets_and_store_pickle(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    store = open_store(root / "zarr-zstd4")
    frames = StoreFrames(store)
    stream = StoreStream(store, seed=2)
    first = frames[3]  # opens files and fills the cache in this process
    for obj in (store, frames, stream):
        clone = pickle.loads(pickle.dumps(obj))
        assert type(clone) is type(obj)
    clone_frames = pickle.loads(pickle.dumps(frames))
    assert_same_sample(clone_frames[3], first)
    clone_store = pickle.loads(pickle.dumps(store))
    np.testing.assert_array_equal(clone_store.frame(3), store.frame(3))
    assert [(s["video_id"], s["frame_index"]) for s in pickle.loads(pickle.dumps(stream))] == [
        (s["video_id"], s["frame_index"]) for s in stream
    ]
    stream.set_epoch(3)
    clone_stream = pickle.loads(pickle.dumps(stream))  # outside a worker start: the epoch travels as a number
    assert clone_stream.epoch == 3
    clone_stream.set_epoch(5)
    assert stream.epoch == 3 and clone_stream.epoch == 5


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_a_store_exported_again_under_a_dataset_is_refused_with_open_it_again(
    world: tuple[Path, Dataset], tmp_path: Path, fmt: str
) -> None:
    # A training run holds StoreFrames while the same folder is exported again with other frames (frames='all'
    # instead of the annotated ones): the index it read at open names rows of the old export.
    _, ds = world
    store = tmp_path / "store"
    export(ds, store, format=fmt, progress=False)
    frames = StoreFrames(store)  # reads every video's small arrays here (few videos): forked workers inherit them
    spawned = pickle.loads(pickle.dumps(frames))  # what a DataLoader worker started by spawn receives: no arrays
    export(ds, store, format=fmt, frames="all", progress=False)
    assert len(StoreFrames(store)) != len(frames)  # the new export holds other rows
    # the spawned copy read the new export's rows through the old index: other frames, without a word
    with pytest.raises(
        StoreError,
        match=r"holds \d+ stored frames, not the \d+ its index was read with: the store "
        r"was exported again at .* after this process opened it .*: open it again",
    ):
        spawned[1]
    # the process that opened it (and workers forked from it) was told the store was damaged or a file missing,
    # and to restore it or export again: it is neither
    with pytest.raises(StoreError, match=r"video 'a' of store .*exported again at .*: open it again"):
        frames[1]


@pytest.mark.parametrize("store_name", ["hdf5-zstd4", "zarr-zstd4"])
def test_cache_never_holds_more_than_cache_bytes_plus_one_chunk(world: tuple[Path, Dataset], store_name: str) -> None:
    root, _ = world
    chunk_bytes = 4 * 48 * 64 * 3
    bound = 2 * chunk_bytes + 100
    frames = StoreFrames(root / store_name, cache_bytes=bound)
    assert frames.store.cache_bytes == bound
    rng = np.random.default_rng(0)
    peak = 0
    for i in rng.integers(0, len(frames), 60).tolist():
        frames[i]
        peak = max(peak, frames.store.cache.nbytes)
        assert frames.store.cache.nbytes <= bound + chunk_bytes
    assert peak == 2 * chunk_bytes and frames.store.cache.hits > 0
    with pytest.raises(OptionError, match=r"cache_bytes must be an integer >= 0, got -5"):
        StoreFrames(root / store_name, cache_bytes=-5)


def test_option_errors(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    with pytest.raises(OptionError, match=r"shuffle_buffer must be an integer >= 0, got -1"):
        StoreStream(root / "hdf5-none", shuffle_buffer=-1)
    with pytest.raises(OptionError, match=r"transform must be callable or None, got 3"):
        StoreFrames(root / "hdf5-none", transform=3)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"unknown kind 'boxes' in kinds=\['boxes'\]; allowed: box, mask, marker"):
        StoreFrames(root / "hdf5-none", kinds=("boxes",))
    with pytest.raises(OptionError, match=r"^kinds must name at least one of box, mask, marker$"):
        StoreFrames(root / "hdf5-none", kinds=())
    with pytest.raises(OptionError, match=r"^label 'person' appears twice in labels=\['person', 'obj', 'person'\]$"):
        StoreFrames(root / "hdf5-none", labels=["person", "obj", "person"])
    with pytest.raises(OptionError, match=r"^label 'obj' appears twice in labels=\['obj', 'obj'\]$"):
        StoreStream(root / "hdf5-none", labels=["obj", "obj"])
    with pytest.raises(
        OptionError, match=r"unknown label 'dog' in labels=\['dog'\]; the store's labels: obj, person, event"
    ):
        StoreFrames(root / "hdf5-none", labels=["dog"])
    with pytest.raises(OptionError, match=r"unknown box_format 'yolo'; allowed: xyxy, xywh, cxcywh"):
        StoreFrames(root / "hdf5-none", box_format="yolo")
    with pytest.raises(IndexError, match=r"sample 999 out of range \[0, \d+\)"):
        StoreFrames(root / "hdf5-none")[999]


def test_loose_indices_are_refused(world: tuple[Path, Dataset]) -> None:
    # Issue 12 item 6: StoreFrames[1.5], ['3'] and [True] were read as samples 1, 3 and 1.
    root, _ = world
    frames = StoreFrames(root / "zarr-none")
    n = len(frames)
    for bad, shown in (
        (1.5, r"1\.5 \(float\)"),
        ("3", r"'3' \(str\)"),
        (True, r"True \(bool\)"),
        (np.float64(2.0), r"(np\.float64\()?2\.0\)? \(float64\)"),
        (np.bool_(False), r"(np\.)?False_? \(bool_?\)"),
    ):
        with pytest.raises(SampleIndexTypeError, match=rf"must be an integer in \[0, {n}\), got {shown}") as info:
            frames[bad]  # type: ignore[index]
        assert isinstance(info.value, TypeError) and isinstance(info.value, VidlabelError)
        with pytest.raises(SampleIndexTypeError, match=rf"got {shown}"):
            frames.__getitems__([0, bad])  # type: ignore[list-item]
        with pytest.raises(SampleIndexTypeError, match=rf"of store .*zarr-none.*got {shown}"):
            frames.store.frame(bad)  # type: ignore[arg-type]
    with pytest.raises(SampleOutOfRangeError, match=rf"sample {n} out of range \[0, {n}\) of the {n} selected") as err:
        frames[n]
    assert isinstance(err.value, IndexError)
    with pytest.raises(SampleOutOfRangeError, match=rf"sample -{n + 1} out of range \[0, {n}\)"):
        frames[-n - 1]
    # integers of every kind still work, the same sample each time; negative counts from the end
    want = frames[2]
    for good in (2, np.int64(2), np.uint8(2), torch.tensor(2), 2 - n):
        assert_same_sample(frames[good], want)  # type: ignore[index]


def test_a_sample_of_an_empty_store_or_dataset_says_it_holds_none() -> None:
    # The one check behind FrameStore.sample, StoreFrames and VideoFrames said of an empty store "out of range
    # [0, 0) ... (negative samples count from the end: -0..-1)": negative positions that do not exist.
    from vidlabel.store._position import sample_position

    for i in (0, -1, 5):
        with pytest.raises(SampleOutOfRangeError, match=rf"^sample {i} out of range: store 's' holds no samples$"):
            sample_position(i, 0, "store 's'")
    with pytest.raises(SampleOutOfRangeError, match=r"sample 3 out of range \[0, 3\) of x \(.*: -3\.\.-1\)"):
        sample_position(3, 3, "x")
    assert sample_position(-3, 3, "x") == 0


def test_positions_by_code_gives_each_codes_positions_in_order() -> None:
    # the grouping behind FrameStore.index and StoreSamples' selection (one sort, not a scan per video; issue 15)
    from vidlabel.store._position import positions_by_code

    codes = np.random.default_rng(3).choice(np.array([0, 2, 5, 9]), size=200)  # codes with gaps, interleaved
    got = list(positions_by_code(codes))
    assert [c for c, _ in got] == [0, 2, 5, 9]
    for code, positions in got:
        assert positions.tolist() == [i for i, c in enumerate(codes.tolist()) if c == code]
    assert sum(p.size for _, p in got) == codes.size
    assert list(positions_by_code(np.zeros(0, np.int64))) == []


@pytest.mark.parametrize("store_name", ["hdf5-none", "zarr-zstd4"])
def test_a_forked_worker_opens_the_frames_without_the_video_files(
    world: tuple[Path, Dataset], store_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """StoreFrames reads each video's arrays on construction; a DataLoader worker forked afterwards (a new
    pid, fresh handles) then opens only the frames files, never a video file again (issue 15: a video file's
    open took 13 ms in a fresh fork, once per video and worker every epoch), and reads the same frames."""
    root, _ds = world
    frames = StoreFrames(root / store_name)
    want = [frames[i]["image"].clone() for i in range(len(frames))]
    store = frames.store
    opened: list[str] = []
    backend_type = type(store._backend(store._process(), store.video_ids[0]))
    real_open = backend_type.open_video

    def counting_open(self: Any, video_id: str) -> Any:
        opened.append(video_id)
        return real_open(self, video_id)

    monkeypatch.setattr(backend_type, "open_video", counting_open)
    inherited = store._process()
    monkeypatch.setattr(inherited, "pid", -1)  # as in a forked child: the next read makes a new process state
    got = [frames[i]["image"] for i in range(len(frames))]
    assert store._process() is not inherited
    assert opened == [] and len(got) == len(want) > 0
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_hdf5_video_attributes_are_read_when_first_asked(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    store = open_store(root / "hdf5-none")
    video_id = store.video_ids[0]
    reader = store._backend(store._process(), video_id).open_video(video_id)
    try:
        assert reader._attrs is None and reader.complete() is True and reader._attrs is None
        attrs = reader.attrs
        assert attrs["complete"] is True and attrs["video_id"] == video_id and reader.complete() is True
        assert attrs == store.video_data(video_id).attrs
    finally:
        reader.close()


class _FirstTouchOf(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """StoreFrames' samples, each with how its frames file met its first reads in the reading process."""

    def __init__(self, frames: StoreFrames) -> None:
        self.frames = frames

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, i: int) -> dict[str, Any]:
        sample = self.frames[i]
        reader = self.frames.store._process().frames.peek(sample["video_id"])
        shown = read_frame_number(sample["image"].permute(1, 2, 0).numpy())
        return {"mode": reader._first_touch, "frame": sample["frame_index"], "shown": shown}


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_workers_pread_a_chunks_first_read_and_the_main_process_reads_ahead(
    world: tuple[Path, Dataset], workers: int
) -> None:
    # every epoch's workers are fresh processes (persistent_workers=False): their first reads copy from the page
    # cache instead of mapping the frames file again (issue 15); the pixels are the same either way
    from vidlabel.store import _hdf5_frames as _hdf5

    root, _ = world
    data = _FirstTouchOf(StoreFrames(root / "hdf5-none"))
    loader = DataLoader(data, batch_size=4, num_workers=workers, multiprocessing_context="fork" if workers else None)
    got = [row for batch in loader for row in zip(batch["mode"], batch["frame"].tolist(), batch["shown"].tolist())]
    assert len(got) == len(data) and all(frame == shown for _, frame, shown in got)
    want = _hdf5.WORKER_FIRST_TOUCH if workers else _hdf5.FIRST_TOUCH
    assert {mode for mode, _, _ in got} == {want} and _hdf5.WORKER_FIRST_TOUCH != _hdf5.FIRST_TOUCH


def test_kinds_the_export_did_not_select_are_warned_not_silently_missing(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # a store of the frames with a box, read for markers (a temporal head): the marker-only frames are not in
    # it, and StoreFrames used to give the rest without a word
    _, ds = world
    with pytest.warns(VidlabelWarning, match="lie on frames this export does not store"):
        export(ds, tmp_path / "boxes", kinds=("box",), progress=False)
    truth = len(FrameSamples(ds, kinds=("marker",)))
    said = r"store '.*boxes' was exported with frames='annotated', kinds=\['box'\]: .* a marker are not in it"
    with pytest.warns(VidlabelWarning, match=said + r".*export with kinds=\['box', 'marker'\]"):
        frames = StoreFrames(tmp_path / "boxes", kinds=("marker",))
    assert 0 < len(frames) < truth  # only the marker frames that also hold a box are there
    with pytest.warns(VidlabelWarning, match=r"kinds=\['box'\]: .* a mask or marker are not in it"):
        StoreStream(tmp_path / "boxes", kinds=("mask", "marker"))
    with pytest.warns(VidlabelWarning, match=r"kinds=\['box'\]: .* a mask are not in it"):
        open_store(tmp_path / "boxes").select(kinds=("box", "mask"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StoreFrames(tmp_path / "boxes", kinds=("box",))  # what it was exported for
        open_store(tmp_path / "boxes").sample(0)  # one stored sample: no selection
        export(ds, tmp_path / "every", kinds=("box",), frames="all", progress=False)
        every = StoreFrames(tmp_path / "every", kinds=("marker",), frames="annotated")
        assert len(every) == truth  # every frame is there
