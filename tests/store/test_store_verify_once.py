"""A chunk of an uncompressed HDF5 store is checked against its CRC-32C once per process, when it is first read:
later reads of it are not hashed again while its frames file is unchanged, a file written since is checked again,
and a flipped byte is refused on the first read through every reading path."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.media import read_frame_number
from tests.store_support import make_dataset, reference_frames
from vidlabel import Dataset, export, open_store
from vidlabel.clip import ClipSpec
from vidlabel.errors import StoreCorruptError
from vidlabel.store import _hdf5_frames
from vidlabel.torch_data import StoreClips, StoreFrames

N_FRAMES = 24
SPEC = ClipSpec(4, step=1, anchor="start", edge="shift")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("verify_once")
    ds = make_dataset(root, videos=("a",), n_frames=N_FRAMES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(ds, root / "cf1", frames="all", clip=SPEC, progress=False)
        export(ds, root / "cf4", frames="all", chunk_frames=4, clip=SPEC, progress=False)
    return root, ds


def private_copy(world: tuple[Path, Dataset], name: str, tmp_path: Path) -> Path:
    """A copy of a fixture store whose frames files carry an old modification time, so that any write to one
    later moves it whatever the file system's timestamp granularity."""
    dst = tmp_path / name
    shutil.copytree(world[0] / name, dst)
    for path in (dst / "frames").glob("*.h5"):
        os.utime(path, ns=(10**18, 10**18))
    return dst


def frames_file(store_dir: Path) -> Path:
    (path,) = (store_dir / "frames").glob("*.h5")
    return path


def flip_row_byte(store_dir: Path, row: int) -> None:
    """Flip one byte in the middle of stored row ``row``'s pixels, found through h5py."""
    import h5py

    path = frames_file(store_dir)
    with h5py.File(path, "r") as f:
        ds = f["frames"]
        cf = ds.chunks[0]
        info = ds.id.get_chunk_info_by_coord((row // cf * cf, 0, 0, 0))
        frame_bytes = int(np.prod(ds.shape[1:]))
    offset = int(info.byte_offset) + (row % cf) * frame_bytes + frame_bytes // 2
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0x10]))


class CountingCrc:
    """google_crc32c as the frames reader calls it, counting the bytes it hashes."""

    def __init__(self) -> None:
        import google_crc32c

        self._real = google_crc32c
        self.nbytes = 0

    def extend(self, crc: int, data: object) -> int:
        self.nbytes += memoryview(data).nbytes  # type: ignore[arg-type]
        return int(self._real.extend(crc, data))

    def value(self, data: object) -> int:
        self.nbytes += memoryview(data).nbytes  # type: ignore[arg-type]
        return int(self._real.value(data))


@pytest.mark.parametrize("name", ["cf1", "cf4"])
def test_a_chunk_is_hashed_on_its_first_read_only(
    world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    root, _ = world
    crc = CountingCrc()
    monkeypatch.setattr(_hdf5_frames, "google_crc32c", crc)
    store = open_store(root / name, cache_bytes=0)  # no chunk cache: every read goes to the frames file
    truth = reference_frames(root, "a")
    first = store.read_row("a", 5)
    hashed = crc.nbytes
    assert hashed >= first.nbytes
    for _ in range(3):
        np.testing.assert_array_equal(store.read_row("a", 5), truth[5])
        assert [read_frame_number(f) for f in store.read_rows("a", [5, 5])] == [5, 5]
    assert crc.nbytes == hashed
    np.testing.assert_array_equal(store.read_row("a", 17), truth[17])  # another chunk: hashed on its first read
    assert crc.nbytes > hashed


@pytest.mark.parametrize("name", ["cf1", "cf4"])
def test_a_byte_flipped_after_a_verified_read_is_refused(
    world: tuple[Path, Dataset], tmp_path: Path, name: str
) -> None:
    root, _ = world
    store_dir = private_copy(world, name, tmp_path)
    truth = reference_frames(root, "a")
    store = open_store(store_dir, cache_bytes=0)
    frames = StoreFrames(store)
    position = frames.index.index(("a", 9))
    np.testing.assert_array_equal(store.read_row("a", 9), truth[9])
    np.testing.assert_array_equal(frames[position]["image"].permute(1, 2, 0).numpy(), truth[9])
    flip_row_byte(store_dir, 9)
    with pytest.raises(StoreCorruptError, match=r"video 'a', chunk \d+ \(rows \d+\.\.\d+\) of store .*CRC-32C"):
        store.read_row("a", 9)
    with pytest.raises(StoreCorruptError, match=r"video 'a', chunk \d+ .*CRC-32C"):
        frames[position]
    with pytest.raises(StoreCorruptError, match=r"video 'a', chunk \d+ .*CRC-32C"):
        store.read_clip("a", [8, 9, 10, 11])


@pytest.mark.parametrize("name", ["cf1", "cf4"])
def test_a_flipped_byte_is_refused_on_the_first_read_of_every_path(
    world: tuple[Path, Dataset], tmp_path: Path, name: str
) -> None:
    store_dir = private_copy(world, name, tmp_path)
    flip_row_byte(store_dir, 9)
    message = r"video 'a', chunk \d+ \(rows \d+\.\.\d+\) of store .*CRC-32C"
    with pytest.raises(StoreCorruptError, match=message):
        open_store(store_dir).read_rows("a", [0, 9, 20])
    with pytest.raises(StoreCorruptError, match=message):
        open_store(store_dir).read_clip("a", [7, 8, 9, 10])
    frames = StoreFrames(store_dir)
    with pytest.raises(StoreCorruptError, match=message):
        frames[frames.index.index(("a", 9))]
    frames = StoreFrames(store_dir)
    with pytest.raises(StoreCorruptError, match=message):
        frames.__getitems__([0, frames.index.index(("a", 9))])
    clips = StoreClips(store_dir, clip=SPEC)
    # frames="all": stored row r is frame r
    (hit, *_) = np.flatnonzero((clips.frame_indices == 9).any(axis=1)).tolist()
    with pytest.raises(StoreCorruptError, match=message):
        clips[hit]


@pytest.mark.parametrize("name", ["cf1", "cf4"])
def test_repeated_reads_equal_the_video_bit_for_bit(world: tuple[Path, Dataset], name: str) -> None:
    root, _ = world
    truth = reference_frames(root, "a")
    store = open_store(root / name)
    frames = StoreFrames(store)
    for _ in range(2):  # the first pass verifies, the second reads verified chunks
        for i, (_video_id, row) in enumerate(frames.index):
            np.testing.assert_array_equal(frames[i]["image"].permute(1, 2, 0).numpy(), truth[row])
        got = store.read_rows("a", list(range(N_FRAMES))[::-1])
        assert [read_frame_number(f) for f in got] == list(range(N_FRAMES))[::-1]
        np.testing.assert_array_equal(store.read_clip("a", [3, 4, 5, 6]), np.stack(truth[3:7]))


def test_read_rows_hands_out_fresh_frames_that_share_nothing_with_later_reads(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    truth = reference_frames(root, "a")
    store = open_store(root / "cf1")
    first = store.read_rows("a", [2, 3, 2])
    assert all(f.flags.writeable and f.flags.c_contiguous and f.shape == truth[2].shape for f in first)
    first[0][:] = 0  # a caller's frame is its own: no other frame of the call, nor a later read, sees the write
    np.testing.assert_array_equal(first[2], truth[2])
    np.testing.assert_array_equal(first[1], truth[3])
    again = store.read_rows("a", [2, 3])
    np.testing.assert_array_equal(again[0], truth[2])
    assert not np.shares_memory(again[0], first[0]) and not np.shares_memory(again[1], first[1])
