"""HDF5 uncompressed frames units streamed into early-allocated chunks in whole 2 MiB blocks of the file
(``REGION_WRITE``): the stored bytes equal those of HDF5's own per-chunk writes bit for bit, and every fallback
writes the same."""

from __future__ import annotations

import errno
import itertools
import os
import threading
from pathlib import Path

import google_crc32c
import h5py
import numpy as np
import pytest

from tests.media import decode_all, encode_clip, read_frame_number
from vidlabel import Dataset, export, open_store, probe
from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.store import _hdf5, _hdf5_frames, _hdf5_region, backend_for, get_codec
from vidlabel.store._fs import PAGE
from vidlabel.store._writer import write_frames

W, H = 40, 24  # 2,880 bytes a frame: chunks never fall on page boundaries


def frames(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.integers(0, 256, (H, W, 3), dtype=np.uint8) for _ in range(n)]


def write(folder: Path, images: list[np.ndarray], chunk_frames: int) -> Path:
    backend = backend_for(folder, "hdf5")
    backend.mark_incomplete({"format": "vidlabel-store"})
    write_frames(
        backend, "u", images, frame_number=np.arange(len(images)), frame_size=(W, H), chunk_frames=chunk_frames,
        codec=get_codec("none"), attrs={"pixel_key": "px"},
    )  # fmt: skip
    return folder / "frames" / "u.h5"


def stored(path: Path) -> tuple[np.ndarray, np.ndarray, bool]:
    """(frames, frames_crc32c, chunks allocated early) read with plain h5py."""
    with h5py.File(path, "r") as f:
        early = f["frames"].id.get_create_plist().get_alloc_time() == h5py.h5d.ALLOC_TIME_EARLY
        return f["frames"][()], f["frames_crc32c"][()], early


@pytest.fixture
def small_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hdf5_region, "_STAGE_BYTES", 2 * PAGE)  # many staged writes and a tail
    monkeypatch.setattr(_hdf5_region, "_FOLIO_BYTES", 2 * PAGE)  # aligned on 8 KiB


@pytest.mark.parametrize("n, chunk_frames", [(1, 1), (7, 1), (9, 4), (40, 3), (150, 1), (260, 2)])
def test_region_writes_store_the_same_bytes_as_hdf5s_own_chunk_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_stage: None, n: int, chunk_frames: int
) -> None:
    images = frames(n)
    region = stored(write(tmp_path / "region", images, chunk_frames))
    monkeypatch.setattr(_hdf5, "REGION_WRITE", False)
    plain = stored(write(tmp_path / "plain", images, chunk_frames))
    assert region[2] and not plain[2]
    np.testing.assert_array_equal(region[0], np.stack(images))
    np.testing.assert_array_equal(region[0], plain[0])
    np.testing.assert_array_equal(region[1], plain[1])
    padded = np.zeros((-(-n // chunk_frames) * chunk_frames, H, W, 3), np.uint8)
    padded[:n] = images
    want = [
        google_crc32c.value(padded[c : c + chunk_frames].tobytes()) for c in range(0, padded.shape[0], chunk_frames)
    ]
    assert region[1].tolist() == want
    reader = backend_for(tmp_path / "region", "hdf5").open_frames_unit("u")
    try:
        got = np.concatenate([reader.read_chunk(c)[: reader.chunk_rows(c)] for c in range(reader.n_chunks)])
    finally:
        reader.close()
    np.testing.assert_array_equal(got, np.stack(images))


def test_chunks_in_several_blocks_are_all_written_by_the_region(tmp_path: Path) -> None:
    # past ~60 chunks HDF5 puts pieces of its chunk index between the early-allocated chunks (at 1280x720 a
    # few KB after every ~57): every block of chunks back to back is a run of its own, none falls back
    backend = backend_for(tmp_path / "o", "hdf5")
    writer = backend.frames_writer("u", shape=(150, H, W, 3), chunk_frames=1, codec=get_codec("none"), attrs={})
    try:
        assert writer._region is not None
        runs = writer._region._runs
        assert len(runs) > 1 and sum(n for _, n in runs) == 150 * H * W * 3
        assert all(a + n < b for (a, n), (b, _) in itertools.pairwise(runs))  # gaps between them
    finally:
        writer.abort()


@pytest.mark.parametrize("region_write", [False, True])
def test_the_region_or_hdf5s_chunk_writes_as_the_module_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, region_write: bool
) -> None:
    monkeypatch.setattr(_hdf5, "REGION_WRITE", region_write)
    backend = backend_for(tmp_path / "o", "hdf5")
    writer = backend.frames_writer("u", shape=(5, H, W, 3), chunk_frames=2, codec=get_codec("none"), attrs={})
    try:
        assert (writer._region is not None) is region_write
    finally:
        writer.abort()
    images = frames(5)
    got, crc, early = stored(write(tmp_path / "s", images, 2))
    np.testing.assert_array_equal(got, np.stack(images))
    assert crc.size == 3 and early is region_write


def test_buffered_region_writes_cover_whole_2mib_blocks_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where the kernel keeps large folios, a write of a whole aligned 2 MiB block lands in one 2 MiB folio that a
    # reader's map takes with one page-table entry (HDF5's per-chunk writes at each chunk's offset left small
    # ones): every write of the flush thread starts on a 2 MiB boundary of the file and, but for each run's
    # last, covers whole 2 MiB blocks; the bytes outside them (each run's head and tail) are written too
    h, w = 480, 640  # 921,600 bytes a frame: chunks straddle 2 MiB boundaries
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(20)]
    writes: list[tuple[str, int, int]] = []
    real, real_v = _hdf5_region._pwrite_all, _hdf5_region._pwritev_all
    copied: list[bool] = []  # per view the flush thread wrote: True where it is not the bytes of an image

    def spy(fd: int, data: memoryview, offset: int) -> None:
        writes.append((threading.current_thread().name, offset, data.nbytes))
        real(fd, data, offset)

    def spy_v(fd: int, views: list[memoryview], offset: int) -> None:
        writes.append((threading.current_thread().name, offset, sum(v.nbytes for v in views)))
        copied.extend(not any(np.shares_memory(np.frombuffer(v, np.uint8), im) for im in images) for v in views)
        real_v(fd, views, offset)

    monkeypatch.setattr(_hdf5_region, "_pwrite_all", spy)
    monkeypatch.setattr(_hdf5_region, "_pwritev_all", spy_v)
    backend = backend_for(tmp_path / "s", "hdf5")
    backend.mark_incomplete({"format": "vidlabel-store"})
    write_frames(
        backend, "u", images, frame_number=np.arange(20), frame_size=(w, h), chunk_frames=1,
        codec=get_codec("none"), attrs={"pixel_key": "px"},
    )  # fmt: skip
    staged = [(a, n) for name, a, n in writes if name.startswith("vidlabel-region")]
    folio = 2 << 20
    assert len(staged) >= 4 and all(a % folio == 0 for a, _ in staged)
    assert sum(n % folio == 0 for _, n in staged) >= len(staged) - 1  # one run: only its last write is short
    assert sum(n for _, _, n in writes) == 20 * h * w * 3  # every byte of the chunks written once
    # the flush thread writes the chunks' own bytes (gathered views, one pwritev a stretch): no staging copy
    assert copied and not any(copied)
    got, _, early = stored(tmp_path / "s" / "frames" / "u.h5")
    assert early and np.array_equal(got, np.stack(images))


@pytest.mark.parametrize("cut", [0, 1, 5, 6, 7, 11, 12, 30])
def test_split_views_cuts_after_the_bytes_asked(cut: int) -> None:
    data = np.arange(30, dtype=np.uint8)
    views = [memoryview(data[:5]), memoryview(data[5:6]), memoryview(data[6:12]), memoryview(data[12:])]
    head, rest = _hdf5_region._split_views(views, cut)
    assert b"".join(bytes(v) for v in head) == bytes(data[:cut])
    assert b"".join(bytes(v) for v in rest) == bytes(data[cut:])
    assert all(v.nbytes for v in head + rest)  # no empty view is written or kept


def test_pwritev_all_finishes_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pwritev may write fewer bytes than asked (a signal, a full pipe of a FUSE file system): the rest follows
    data = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8)
    views = [memoryview(data[a : a + 700]) for a in range(0, 5000, 700)]
    real = os.pwritev

    def short(fd: int, buffers: list[memoryview], offset: int) -> int:
        return real(fd, [memoryview(bytes(b"".join(bytes(b) for b in buffers)[:999]))], offset)

    monkeypatch.setattr(os, "pwritev", short)
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        _hdf5_region._pwritev_all(fd, views, 100)
    finally:
        os.close(fd)
    assert path.read_bytes() == bytes(100) + data.tobytes()


def test_chunks_out_of_order_leave_the_region_without_losing_bytes(tmp_path: Path, small_stage: None) -> None:
    images = frames(6)
    backend = backend_for(tmp_path / "o", "hdf5")
    writer = backend.frames_writer("u", shape=(6, H, W, 3), chunk_frames=2, codec=get_codec("none"), attrs={})
    for c in (0, 2, 1):
        writer.write_chunk(c, np.ascontiguousarray(np.stack(images[2 * c : 2 * c + 2])))
    writer.commit(frame_number=np.arange(6), crc32c=np.zeros(3, np.uint32))
    got, _, _ = stored(tmp_path / "o" / "frames" / "u.h5")
    np.testing.assert_array_equal(got, np.stack(images))


def test_a_chunk_past_the_allocated_block_is_refused(tmp_path: Path) -> None:
    backend = backend_for(tmp_path / "p", "hdf5")
    writer = backend.frames_writer("u", shape=(2, H, W, 3), chunk_frames=1, codec=get_codec("none"), attrs={})
    try:
        assert writer._region is not None
        writer.write_chunk(0, np.zeros((1, H, W, 3), np.uint8))
        writer.write_chunk(1, np.zeros((1, H, W, 3), np.uint8))
        with pytest.raises(StoreError, match=r"frames file: 8640 bytes at \d+ run past the chunks' end"):
            writer._region.write(memoryview(np.zeros(3 * H * W * 3, np.uint8)))
    finally:
        writer.abort()
    assert not (tmp_path / "p" / "frames" / "u.h5.partial").exists()


def test_an_exported_store_is_the_same_with_and_without_region_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encode_clip(tmp_path / "c.mp4", n_frames=12, width=64, height=48, gop=5).path
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["a"])
    ds.add_video(probe(path, video_id="v"))
    ds.add_annotations([{"kind": "box", "label": "a", "start_frame": 0, "box": (1, 1, 9, 9)}], "v")
    ds.build()
    export(ds, tmp_path / "region", frames="all", progress=False)
    # HDF5's own chunk writes
    monkeypatch.setattr(_hdf5, "REGION_WRITE", False)
    export(ds, tmp_path / "plain", frames="all", progress=False)
    reference = decode_all(path)
    images = {}
    for name in ("region", "plain"):
        store = open_store(tmp_path / name)
        sel = store.select()
        images[name] = np.stack([sel.sample(j)["image"] for j in range(len(sel))])
        (unit,) = (tmp_path / name / "frames").glob("*.h5")
        assert stored(unit)[2] == (name != "plain")
    np.testing.assert_array_equal(images["region"], images["plain"])
    np.testing.assert_array_equal(images["region"], np.stack(reference))
    assert [read_frame_number(im) for im in images["region"]] == list(range(12))


def test_a_failed_write_on_the_flush_thread_fails_the_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_stage: None
) -> None:
    # the gathered stretches are written on the region's flush thread while the next one gathers: their error
    # must reach write_frames (nothing published, the partial file removed), not die with the thread
    failed: list[int] = []
    real_pwrite_all = _hdf5_region._pwrite_all

    def failing(fd: int, data: memoryview, offset: int) -> None:
        if threading.current_thread().name.startswith("vidlabel-region") and offset > 0:
            failed.append(offset)
            raise OSError(errno.EIO, "injected write error")
        real_pwrite_all(fd, data, offset)

    def failing_v(fd: int, views: list[memoryview], offset: int) -> None:  # the buffered stretches' writes
        if offset > 0:
            failed.append(offset)
            raise OSError(errno.EIO, "injected write error")
        real_pwritev_all(fd, views, offset)

    real_pwritev_all = _hdf5_region._pwritev_all
    monkeypatch.setattr(_hdf5_region, "_pwrite_all", failing)
    monkeypatch.setattr(_hdf5_region, "_pwritev_all", failing_v)
    with pytest.raises(OSError, match="injected write error"):
        write(tmp_path / "f", frames(30), 1)
    assert failed
    assert not list((tmp_path / "f" / "frames").glob("*.h5*"))


@pytest.mark.parametrize("first_touch", ["populate", "pread", "fault"])
def test_a_mapped_chunk_is_checksummed_block_by_block_as_it_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_touch: str
) -> None:
    # the reader checksums each block right after copying it: a flipped byte in any block (the last one here,
    # blocks of 1,000 bytes, not page aligned) is still refused, and every other chunk reads exactly
    monkeypatch.setattr(_hdf5_frames, "_COPY_BLOCK", 1000)
    monkeypatch.setattr(_hdf5_frames, "FIRST_TOUCH", first_touch)
    images = frames(6)
    path = write(tmp_path / "s", images, 2)  # chunks of 5,760 bytes: 6 blocks
    with h5py.File(path, "r") as f:
        info = f["frames"].id.get_chunk_info_by_coord((2, 0, 0, 0))
    with open(path, "r+b") as fh:
        fh.seek(int(info.byte_offset) + int(info.size) - 3)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x01]))
    reader = backend_for(tmp_path / "s", "hdf5").open_frames_unit("u")
    try:
        assert reader._mapped is not None  # the mapped path
        for c in (0, 2):
            np.testing.assert_array_equal(reader.read_chunk(c), np.stack(images[2 * c : 2 * c + 2]))
        with pytest.raises(StoreCorruptError, match=r"fail their CRC-32C checksum \(stored [0-9a-f]{8}"):
            reader.read_chunk(1)
        reader.verify_checksums = False  # unchecked: the damaged bytes as stored
        assert int(np.count_nonzero(reader.read_chunk(1) != np.stack(images[2:4]))) == 1
    finally:
        reader.close()


def test_a_damaged_checksummed_array_of_a_frames_file_is_a_store_corrupt_error(tmp_path: Path) -> None:
    # the small arrays (frames_crc32c, frame_number) carry HDF5's fletcher32: a flipped byte in one is refused
    # as a vidlabel error naming the array and the file, not h5py's bare "filter returned failure during read"
    images = frames(4)
    path = write(tmp_path / "s", images, 1)
    with h5py.File(path, "r") as f:
        info = f["frames_crc32c"].id.get_chunk_info(0)
    with open(path, "r+b") as fh:
        fh.seek(int(info.byte_offset))
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0x01]))
    reader = backend_for(tmp_path / "s", "hdf5").open_frames_unit("u")
    try:
        with pytest.raises(StoreCorruptError, match=rf"array 'frames_crc32c' of '{path}' cannot be read \(.*damaged"):
            reader.read_chunk(0)
    finally:
        reader.close()
