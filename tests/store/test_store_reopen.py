"""An uncompressed HDF5 frames file closed by the store's LRU of open readers is opened again without HDF5, from
what its first open learnt (issue 15: random reads over many videos reopened a frames file in full on almost
every read, 1.2-1.3 ms each); a file that is no longer the one indexed is opened in full again."""

from __future__ import annotations

import multiprocessing
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.store_support import make_dataset, reference_frames
from vidlabel import export, open_store
from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.store import FrameStore, _hdf5, _hdf5_files, _hdf5_frames
from vidlabel.store._framestore import _ProcessState

VIDEOS = ("cam", "cam2")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("reopen")
    ds = make_dataset(root, videos=VIDEOS, n_frames=12)
    export(ds, root / "store", frames="all", codec="none", chunk_frames=2, progress=False)
    return root, root / "store"


@pytest.fixture
def full_opens(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The frames files opened with HDF5 (``_hdf5_files._open_inside``), in order, with one reader open at a time."""
    opened: list[Path] = []
    real = _hdf5_files._open_inside

    def counting(root: Path, path: Path, what: str) -> Any:
        if what == "frames file":
            opened.append(Path(path))
        return real(root, path, what)

    for module in (_hdf5, _hdf5_files, _hdf5_frames):  # every module that opens store files
        monkeypatch.setattr(module, "_open_inside", counting)
    monkeypatch.setattr(_ProcessState, "MAX_OPEN", 1)
    return opened


def read_alternating(
    store: FrameStore, root: Path, rounds: int = 3, refs: dict[str, list[np.ndarray]] | None = None
) -> None:
    """Read every stored frame of both videos, alternating between them (each read closes the other's reader),
    and check each against the frame the generator drew (its pixels encode the frame number), decoded here
    unless ``refs`` gives them."""
    refs = refs if refs is not None else {v: reference_frames(root, v) for v in VIDEOS}
    rows = {v: [i for i in range(len(store)) if store.locate(i)[0] == v] for v in VIDEOS}
    for _ in range(rounds):
        for a, b in zip(rows["cam"], rows["cam2"]):
            for i in (a, b):
                video_id, row = store.locate(i)
                n = store.video_data(video_id).frame_number[row]
                np.testing.assert_array_equal(store.frame(i), refs[video_id][n])


def frames_file(store: FrameStore, video_id: str) -> Path:
    return Path(store._frames_reader(store._process(), video_id).path)


def test_a_frames_file_closed_by_the_lru_reopens_without_hdf5(world: tuple[Path, Path], full_opens: list[Path]) -> None:
    root, path = world
    store = open_store(path)
    read_alternating(store, root)
    assert len(store._process().frames) == 1  # every read above closed the other video's reader
    # the root's video table indexes each frames file: none is opened with HDF5, not even on its first read
    assert full_opens == []
    store.close()


def read_a_copy(world: tuple[Path, Path], tmp_path: Path, full_opens: list[Path]) -> tuple[FrameStore, Path]:
    """A private copy of the store, every frame read once (each frames file indexed), no reader left open and
    ``full_opens`` cleared; and the frames file of video ``cam``. No chunk cache: every read reads the file."""
    root, path = world
    store = open_store(Path(shutil.copytree(path, tmp_path / "store")), cache_bytes=0)
    read_alternating(store, root, rounds=1)
    cam = frames_file(store, "cam")
    full_opens.clear()
    store._process().frames.close()
    return store, cam


def test_a_frames_file_replaced_after_its_reader_closed_is_opened_in_full(
    world: tuple[Path, Path], tmp_path: Path, full_opens: list[Path]
) -> None:
    store, cam = read_a_copy(world, tmp_path, full_opens)
    copy = cam.with_name(cam.name + ".copy")
    shutil.copyfile(cam, copy)
    os.replace(copy, cam)  # the same bytes in another file (another inode)
    read_alternating(store, world[0], rounds=2)
    assert [p.name for p in full_opens] == [cam.name]  # opened in full once, then indexed again
    store.close()


@pytest.mark.parametrize("mtime", ["moved", "kept"])
def test_a_frames_file_changed_in_place_after_its_reader_closed_is_refused(
    world: tuple[Path, Path], tmp_path: Path, full_opens: list[Path], mtime: str
) -> None:
    """Moved: the file is no longer the one indexed, so it is opened in full; kept (an edit that restores the
    modification time): it is reopened from the index, whose checksums are the stored ones. Either way the
    flipped byte fails its chunk's CRC-32C."""
    store, cam = read_a_copy(world, tmp_path, full_opens)
    reader = store._frames_reader(store._process(), "cam")
    assert isinstance(reader, _hdf5.HDF5FramesReader) and reader._offsets is not None
    offset = int(reader._offsets[0])
    store._process().frames.close()
    full_opens.clear()
    before = os.stat(cam)
    with cam.open("r+b") as fh:  # one byte of chunk 0 flipped, the file's size kept
        fh.seek(offset + 100)
        value = fh.read(1)[0]
        fh.seek(offset + 100)
        fh.write(bytes([value ^ 0xFF]))
    shift = 1_000_000_000 if mtime == "moved" else 0
    os.utime(cam, ns=(before.st_atime_ns, before.st_mtime_ns + shift))
    first_cam_row = next(i for i in range(len(store)) if store.locate(i) == ("cam", 0))
    with pytest.raises(
        StoreCorruptError, match=r"fail their CRC-32C checksum \(stored [0-9a-f]{8}, read [0-9a-f]{8}\)"
    ):
        store.frame(first_cam_row)
    # moved: opened in full to read; kept: reopened from the index, then opened to name the damage (check_crc)
    assert [p.name for p in full_opens] == [cam.name]
    store.close()


def _read_in_child(
    store: FrameStore, root: Path, refs: dict[str, list[np.ndarray]], send: Any, count: Callable[[], int]
) -> None:
    # The reference frames come decoded from the parent: FFmpeg's decoder threads are not to be used in a child
    # forked after the parent used them (a lock held at the fork never comes free), and the test is the store's.
    try:
        read_alternating(store, root, rounds=1, refs=refs)
        send.send(("ok", count()))
    except BaseException as err:  # reported to the parent
        send.send(("error", repr(err)))


def test_a_process_forked_after_the_frames_were_read_reopens_them_without_hdf5(
    world: tuple[Path, Path], full_opens: list[Path]
) -> None:
    root, path = world
    store = open_store(path)
    refs = {v: reference_frames(root, v) for v in VIDEOS}
    read_alternating(store, root, rounds=1, refs=refs)
    before = len(full_opens)
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_read_in_child, args=(store, root, refs, send, lambda: len(full_opens) - before)
    )
    child.start()
    status, value = receive.recv()
    child.join(timeout=60)
    assert (status, value) == ("ok", 0)
    store.close()


def test_a_frames_file_overwritten_with_another_units_bytes_is_refused_without_checksums(
    world: tuple[Path, Path], tmp_path: Path, full_opens: list[Path]
) -> None:
    """Another video's frames file copied over this one in place (zero-padded to its size), its modification
    time put back, read with ``verify_checksums=False`` (no CRC to catch it): the change time tells the file is
    not the one indexed, so it is opened in full and its unit key refused (found by a fresh-user pass: the
    index was trusted)."""
    root, path = world
    store = open_store(Path(shutil.copytree(path, tmp_path / "store")), cache_bytes=0, verify_checksums=False)
    read_alternating(store, root, rounds=1)
    files = {v: frames_file(store, v) for v in VIDEOS}
    store._process().frames.close()
    small, big = sorted(VIDEOS, key=lambda v: files[v].stat().st_size)
    before = os.stat(files[big])
    data = files[small].read_bytes()
    files[big].write_bytes(data + bytes(before.st_size - len(data)))  # in place: same inode, same size
    os.utime(files[big], ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(files[big]).st_mtime_ns == before.st_mtime_ns and os.stat(files[big]).st_size == before.st_size
    row = next(i for i in range(len(store)) if store.locate(i) == (big, 0))
    with pytest.raises(StoreCorruptError, match=rf"video '{big}' .* are frames unit '\w+', not the video's own unit"):
        store.frame(row)
    assert [p.name for p in full_opens][-1] == files[big].name
    store.close()


def test_a_frames_file_turned_into_a_link_outside_the_store_is_refused(
    world: tuple[Path, Path], tmp_path: Path, full_opens: list[Path]
) -> None:
    """The frames file replaced by a symlink to a hard link of itself outside the store (the same file): the
    reopen does not follow it, the full open refuses it (as it always did)."""
    store, cam = read_a_copy(world, tmp_path, full_opens)
    outside = tmp_path / "outside.h5"
    os.link(cam, outside)
    cam.unlink()
    cam.symlink_to(outside)
    row = next(i for i in range(len(store)) if store.locate(i) == ("cam", 0))
    with pytest.raises(StoreError, match=r"outside the store folder"):
        store.frame(row)
    store.close()
