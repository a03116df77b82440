"""A frame store under faults (issue 12): a flipped byte is refused, never returned as pixels; links and names
that leave the store folder are refused, never followed."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import fsspec
import h5py
import numpy as np
import pytest

from tests.media import read_frame_number
from tests.store_support import make_dataset, reference_frames
from vidlabel import Dataset, export, open_store
from vidlabel.errors import FrameOutOfRangeError, OptionError, StoreCorruptError, StoreError, VidlabelError
from vidlabel.store import FrameStore, backend_for, upload, verify_store
from vidlabel.store._remote import ObjectStore
from vidlabel.torch_data import StoreFrames, StoreStream

EVERY = ("box", "mask", "marker")
STORES = ["hdf5-none", "hdf5-zstd4", "zarr-none", "zarr-zstd4"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("store_faults")
    ds = make_dataset(root, videos=("a", "b"), n_frames=16)
    for fmt in ("hdf5", "zarr"):  # frames="all": stored row r is frame r
        export(ds, root / f"{fmt}-none", format=fmt, frames="all", kinds=EVERY, progress=False)
        export(ds, root / f"{fmt}-zstd4", format=fmt, frames="all", codec="zstd", chunk_frames=4, kinds=EVERY,
               progress=False)  # fmt: skip
    return root, ds


def copy_store(world: tuple[Path, Dataset], name: str, tmp_path: Path) -> Path:
    """A private copy (real copies, no hard links) of a fixture store, to damage."""
    dst = tmp_path / name
    shutil.copytree(world[0] / name, dst)
    return dst


def chunk_location(store: Path, video_id: str, chunk: int) -> tuple[Path, int, int]:
    """(file, byte offset, size) of a stored frame chunk, found through the format's own tools."""
    if (store / "store.h5").exists():
        with h5py.File(store / "videos" / f"{video_id}.h5", "r") as f:
            link = f.get("frames", getlink=True)
            frames_file = (store / "videos" / link.filename).resolve()
        with h5py.File(frames_file, "r") as f:
            ds = f["frames"]
            info = ds.id.get_chunk_info_by_coord((chunk * ds.chunks[0], 0, 0, 0))
            return frames_file, int(info.byte_offset), int(info.size)
    path = store / "videos" / video_id / "frames" / f"c.{chunk}.0.0.0"
    return path, 0, path.stat().st_size


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0x10]))


def damage(store: Path, video_id: str, chunk: int) -> None:
    path, offset, size = chunk_location(store, video_id, chunk)
    flip_byte(path, offset + size // 2)


def crc_problem(where: str | Path) -> str:
    """The words (a regex) for a chunk that fails its CRC-32C in file ``where``: a Zarr chunk's own file (a
    ``c.<i>.0.0.0`` file or URL) is named as a chunk file, an HDF5 store's frames file as frames."""
    what = "frames" if str(where).endswith(".h5") else "chunk file"
    return (
        rf"the stored bytes of {what} '{re.escape(str(where))}' fail their CRC-32C checksum "
        r"\(stored [0-9a-f]{8}, read [0-9a-f]{8}\): the file is damaged"
    )


def corrupt_message(store: str, video_id: str, chunk: int, rows: tuple[int, int], where: str | Path) -> str:
    return (
        rf"^video '{video_id}', chunk {chunk} \(rows {rows[0]}\.\.{rows[1]}\) of store '{re.escape(store)}': "
        rf"{crc_problem(where)} \(`vidlabel verify` lists every damaged chunk; export again into an empty folder "
        r"to rewrite it\)$"
    )


# -- item 3: a flipped byte is refused -------------------------------------------------------------------------


@pytest.mark.parametrize("name", STORES)
def test_a_flipped_byte_is_refused_not_returned_as_pixels(
    world: tuple[Path, Dataset], tmp_path: Path, name: str
) -> None:
    root, _ = world
    store_dir = copy_store(world, name, tmp_path)
    cf = 4 if "zstd4" in name else 1
    chunk = 2
    damage(store_dir, "b", chunk)
    where = chunk_location(store_dir, "b", chunk)[0]  # Zarr: the chunk's own file; HDF5: the frames file
    bad_rows = list(range(chunk * cf, chunk * cf + cf))
    message = corrupt_message(str(store_dir), "b", chunk, (bad_rows[0], bad_rows[-1]), where)
    truth = reference_frames(root, "b")
    store = open_store(store_dir)
    for r in bad_rows:
        with pytest.raises(StoreCorruptError, match=message) as err:
            store.read_rows("b", [r])
        assert isinstance(err.value, StoreError) and isinstance(err.value, OSError) and err.value.video_id == "b"
        with pytest.raises(StoreCorruptError, match=message):
            store.read_row("b", r)
        with pytest.raises(StoreCorruptError, match=message):
            store.read_rows("b", [0, r, len(truth) - 1])  # a batch of several chunks
    for r in [r for r in range(len(truth)) if r not in bad_rows]:  # every other chunk still reads, exactly
        np.testing.assert_array_equal(store.read_row("b", r), truth[r])
    # the torch datasets check by default
    frames = StoreFrames(store_dir)
    position = frames.index.index(("b", bad_rows[0]))
    with pytest.raises(StoreCorruptError, match=message):
        frames[position]
    with pytest.raises(StoreCorruptError, match=message):
        frames.__getitems__([0, position])
    with pytest.raises(StoreCorruptError, match=message):
        list(StoreStream(store_dir, shuffle=False))
    # and verify_store still lists the chunk, in the read's words
    report = verify_store(store_dir)
    rows = rf"chunk {chunk} \(rows {bad_rows[0]}\.\.{bad_rows[-1]}\)"
    assert not report["ok"] and [
        p
        for p in report["problems"]
        if re.fullmatch(rf"{re.escape(str(store_dir))}: video 'b': {rows}: {crc_problem(where)}", p)
    ], report["problems"]


@pytest.mark.parametrize("name", ["hdf5-none", "zarr-none"])
def test_verify_checksums_false_returns_what_is_stored(world: tuple[Path, Dataset], tmp_path: Path, name: str) -> None:
    # What verification prevents: without it, the damaged chunk comes back as pixels.
    root, _ = world
    store_dir = copy_store(world, name, tmp_path)
    damage(store_dir, "a", 3)
    truth = reference_frames(root, "a")
    for off in (open_store(store_dir, verify_checksums=False), FrameStore(store_dir, verify_checksums=False)):
        image = off.read_row("a", 3)
        assert not np.array_equal(image, truth[3]) and int(np.count_nonzero(image != truth[3])) == 1
    frames = StoreFrames(store_dir, verify_checksums=False)
    assert frames.store.verify_checksums is False
    assert StoreFrames(frames.store).store.verify_checksums is False  # a given store keeps its setting
    assert StoreFrames(frames.store, verify_checksums=True).store.verify_checksums is True
    assert StoreStream(store_dir, verify_checksums=False).store.verify_checksums is False
    with pytest.raises(OptionError, match=r"verify_checksums must be True or False, got 'yes'"):
        open_store(store_dir, verify_checksums="yes")  # type: ignore[arg-type]


def test_an_intact_store_reads_the_same_with_and_without_verification(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    for name in STORES:
        on, off = open_store(root / name), open_store(root / name, verify_checksums=False)
        assert on.verify_checksums is True
        for video_id in on.video_ids:
            rows = list(range(on.video_data(video_id).frame_number.size))
            for a, b in zip(on.read_rows(video_id, rows), off.read_rows(video_id, rows)):
                np.testing.assert_array_equal(a, b)
            assert [read_frame_number(image) for image in on.read_rows(video_id, rows)] == rows


def test_a_flipped_byte_in_a_store_at_a_url_is_refused(world: tuple[Path, Dataset], tmp_path: Path, mem: str) -> None:
    root, _ = world
    url = f"{mem}/s"
    upload(root / "zarr-zstd4", url)
    fs = fsspec.filesystem("memory")
    key = fs._strip_protocol(f"{url}/videos/a/frames/c.1.0.0.0")
    data = bytearray(fs.cat_file(key))
    data[len(data) // 2] ^= 0x10
    fs.pipe_file(key, bytes(data))
    store = open_store(url)
    message = corrupt_message(url, "a", 1, (4, 7), f"{url}/videos/a/frames/c.1.0.0.0")
    with pytest.raises(StoreCorruptError, match=message):
        store.read_rows("a", [5])
    with pytest.raises(StoreCorruptError, match=message):
        store.read_rows("a", [0, 5, 9])  # chunks fetched together
    truth = reference_frames(root, "a")
    np.testing.assert_array_equal(store.read_row("a", 8), truth[8])
    with pytest.raises(StoreCorruptError) as err:
        list(StoreFrames(url, frames="stored").__getitems__(list(range(8))))
    assert isinstance(err.value, VidlabelError)


def truncate_chunk(store: str | Path, video_id: str, chunk: int) -> str:
    """Cut a Zarr store's chunk file (local or ``memory://``) to half its bytes; return its file name or URL."""
    if isinstance(store, Path):
        path = store / "videos" / video_id / "frames" / f"c.{chunk}.0.0.0"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return str(path)
    fs = fsspec.filesystem("memory")
    key = fs._strip_protocol(f"{store}/videos/{video_id}/frames/c.{chunk}.0.0.0")
    data = fs.cat_file(key)
    fs.pipe_file(key, data[: len(data) // 2])
    return f"{store}/videos/{video_id}/frames/c.{chunk}.0.0.0"


@pytest.mark.parametrize("name", ["zarr-none", "zarr-zstd4", "zarr-none-url"])
def test_a_truncated_zarr_chunk_is_worded_alike_by_reads_and_verify(
    world: tuple[Path, Dataset], tmp_path: Path, mem: str, name: str
) -> None:
    # before: a read said "chunk 2 of '.../frames' holds 4608 bytes, expected 9216" (a StoreError, no file named)
    # and verify "chunk 2 (rows 2..2) of '.../frames' fails its CRC-32C checksum"; for a compressed chunk the
    # CRC-32C mismatch was worded two ways too (an adversarial pass)
    root, _ = world
    if name.endswith("-url"):
        store_at: str | Path = f"{mem}/s"
        upload(root / "zarr-none", store_at)
    else:
        store_at = copy_store(world, name, tmp_path)
    cf = 4 if "zstd4" in name else 1
    chunk_file = truncate_chunk(store_at, "b", 2)
    if "zstd" in name:  # a compressed chunk's size is not recorded: cut short, it fails its CRC-32C
        problem = crc_problem(chunk_file)
    else:
        problem = rf"chunk file '{re.escape(chunk_file)}' is truncated: \d+ of its \d+ bytes"
    rows = rf"chunk 2 \(rows {2 * cf}\.\.{3 * cf - 1}\)"
    with pytest.raises(StoreCorruptError) as err:
        open_store(store_at).read_rows("b", [2 * cf])
    message = str(err.value)
    assert re.fullmatch(
        rf"video 'b', {rows} of store '{re.escape(str(store_at))}': ({problem}) \(`vidlabel verify` lists every "
        r"damaged chunk; export again into an empty folder to rewrite it\)",
        message,
    ), message
    said = re.search(problem, message)
    assert said is not None
    if "zstd" not in name:
        assert said[0] == f"chunk file '{chunk_file}' is truncated: 4608 of its 9216 bytes"  # 64x48 RGB, 1 frame
    assert (
        f"{store_at}: video 'b': chunk 2 (rows {2 * cf}..{3 * cf - 1}): {said[0]}" in verify_store(store_at)["problems"]
    )


def test_a_zarr_chunk_replaced_by_a_directory_is_named_and_leaks_no_descriptor(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # before: a read raised Python's own "IsADirectoryError: [Errno 21] Is a directory: 3" (a descriptor number,
    # no store, video or chunk named; also in DataLoader workers), and each failed read left that descriptor open
    # (200 reads: 200 descriptors); found by a fresh-user pass
    store = copy_store(world, "zarr-none", tmp_path)
    chunk = store / "videos" / "b" / "frames" / "c.2.0.0.0"
    chunk.unlink()
    chunk.mkdir()
    problem = f"chunk file '{chunk}' is a directory, not a file: the store was changed after export"
    fs = open_store(store)
    fds = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    for _ in range(20):
        with pytest.raises(
            StoreCorruptError, match=rf"^video 'b', chunk 2 \(rows 2\.\.2\) of store .*: {re.escape(problem)}"
        ):
            fs.read_rows("b", [2])
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) <= fds
    assert np.array_equal(fs.read_rows("b", [1])[0], fs.read_rows("b", [1])[0])  # other chunks still read
    assert any(problem in p for p in verify_store(store)["problems"])


def test_verify_lists_every_missing_zarr_chunk_and_checks_the_rest(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    # before: verify stopped checking a Zarr video at its first missing chunk ("cannot be read: chunk 2 ... is
    # missing"): chunk 5, also missing, and chunk 9, damaged, went unreported (a fresh-user pass)
    store = copy_store(world, "zarr-none", tmp_path)
    frames = store / "videos" / "b" / "frames"
    (frames / "c.2.0.0.0").unlink()
    (frames / "c.5.0.0.0").unlink()
    damaged = frames / "c.9.0.0.0"
    data = bytearray(damaged.read_bytes())
    data[0] ^= 0xFF
    damaged.write_bytes(bytes(data))
    problems = [p for p in verify_store(store)["problems"] if "video 'b'" in p]
    assert [re.search(r"chunk (\d+) \(", p)[1] for p in problems] == ["2", "5", "9"], problems  # type: ignore[index]
    assert problems[0] == f"{store}: video 'b': chunk 2 (rows 2..2): chunk file '{frames / 'c.2.0.0.0'}' is missing"
    assert "fail their CRC-32C checksum" in problems[2]


@pytest.mark.parametrize("name", ["zarr-none", "zarr-zstd4"])
def test_verify_counts_only_the_chunks_it_could_check(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # before: with one of 33 chunk files missing and one a folder, `vidlabel verify` said "31 chunks (...) checked",
    # read as every chunk of the store (a fresh-user pass)
    from vidlabel.cli import main

    store = copy_store(world, name, tmp_path)
    chunks = sorted((store / "videos").glob("*/frames/c.*"))
    total = len(chunks)  # the store's own count of chunk files, 1 or 4 frames each
    n_frames = len(open_store(store))  # frames="all": a sample per stored frame
    frames = store / "videos" / "b" / "frames"
    (frames / "c.1.0.0.0").unlink()
    (frames / "c.2.0.0.0").unlink()
    (frames / "c.2.0.0.0").mkdir()
    read = sum(c.stat().st_size for c in chunks if c.is_file())
    assert main(["verify", str(store)]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == (
        f"2 problems: 1 store, 2 videos, {n_frames} frames, {total - 2} of {total} chunks ({read / 2**20:.1f} MiB) checked"
    ), last
    report = verify_store(store)
    assert (report["chunks"], report["chunks_total"], report["bytes"]) == (total - 2, total, read)
    whole = sum(c.stat().st_size for c in (world[0] / name / "videos").glob("*/frames/c.*"))
    assert main(["verify", str(world[0] / name)]) == 0  # an intact store: every chunk checked, said as before
    assert (
        capsys.readouterr().out
        == f"ok: 1 store, 2 videos, {n_frames} frames, {total} chunks ({whole / 2**20:.1f} MiB) checked\n"
    )


@pytest.mark.parametrize("name", ["zarr-none", "zarr-zstd4"])
def test_a_missing_zarr_chunk_file_is_damage_worded_alike_by_reads_and_verify(
    world: tuple[Path, Dataset], tmp_path: Path, name: str
) -> None:
    # before: a read raised plain StoreError "video 'b', chunk 2 (rows 2..2) of store '...': chunk 2 of
    # '.../videos/b/frames' is missing (`vidlabel verify` checks every chunk)", naming no chunk file, while a
    # truncated chunk or one replaced by a directory was StoreCorruptError
    store = copy_store(world, name, tmp_path)
    cf = 4 if "zstd4" in name else 1
    chunk = store / "videos" / "b" / "frames" / "c.2.0.0.0"
    chunk.unlink()
    problem = f"chunk file '{chunk}' is missing"
    rows = f"chunk 2 (rows {2 * cf}..{3 * cf - 1})"
    message = (
        f"video 'b', {rows} of store '{store}': {problem} (`vidlabel verify` lists every damaged chunk; export "
        "again into an empty folder to rewrite it)"
    )
    fs = open_store(store)
    for read in (lambda: fs.read_rows("b", [2 * cf]), lambda: fs.read_row("b", 2 * cf)):
        with pytest.raises(StoreCorruptError, match=f"^{re.escape(message)}$") as err:
            read()
        assert type(err.value) is StoreCorruptError and err.value.video_id == "b"
    frames = StoreFrames(store)
    with pytest.raises(StoreCorruptError, match=f"^{re.escape(message)}$"):
        frames[frames.index.index(("b", 2 * cf))]
    np.testing.assert_array_equal(fs.read_row("b", 0), reference_frames(world[0], "b")[0])  # the rest still reads
    assert f"{store}: video 'b': {rows}: {problem}" in verify_store(store)["problems"]


def test_a_missing_chunk_of_a_zarr_store_at_a_url_is_damage(world: tuple[Path, Dataset], mem: str) -> None:
    # before: plain StoreError, unlike a truncated chunk there (StoreCorruptError)
    url = f"{mem}/s"
    upload(world[0] / "zarr-none", url)
    fsspec.filesystem("memory").rm(f"{url}/videos/b/frames/c.2.0.0.0")
    store = open_store(url)
    with pytest.raises(
        StoreCorruptError,
        match=rf"^video 'b', chunk 2 \(rows 2\.\.2\) of store '{re.escape(url)}': chunk 2 \(rows 2\.\.2\) of video 'b' "
        rf"is missing at '{re.escape(url)}/videos/b/frames/c\.2\.0\.0\.0' \(`vidlabel verify` lists every damaged "
        r"chunk; export again into an empty folder to rewrite it\)$",
    ) as err:
        store.read_rows("b", [2])
    assert type(err.value) is StoreCorruptError
    # a store this process cannot see at all (a memory:// store of another process) is not called damaged
    fsspec.filesystem("memory").rm(url, recursive=True)
    with pytest.raises(StoreError, match=r"is missing at .*: nothing is stored at .* in this process") as err:
        store.read_rows("b", [3])
    assert type(err.value) is StoreError


@pytest.mark.parametrize("array", ["index", "videos/b/frame_number", "videos/a/regions/bbox_xyxy"])
@pytest.mark.parametrize("where", ["folder", "url"])
def test_a_missing_chunk_of_a_small_zarr_array_is_damage_not_zeros(
    world: tuple[Path, Dataset], tmp_path: Path, mem: str, array: str, where: str
) -> None:
    """Before: read as the fill value, so with the index chunk deleted every sample was frame 0 of video 'a'."""
    if where == "folder":
        store: str | Path = copy_store(world, "zarr-none", tmp_path)
        next(
            p for p in (Path(store) / array / "c" / "0" / "0", Path(store) / array / "c" / "0") if p.is_file()
        ).unlink()
    else:
        store = f"{mem}/s"
        upload(world[0] / "zarr-none", store)
        fs = fsspec.filesystem("memory")
        fs.rm(next(p for p in (f"{store}/{array}/c/0/0", f"{store}/{array}/c/0") if fs.isfile(p)))
    shape = r"\d+x2 int64" if array == "index" else r"\d+(x4)? (int64|float32|float64)"
    match = rf"chunk '{re.escape(str(store))}/{array}/c/0(/0)?' of Zarr array '{re.escape(str(store))}/{array}' \({shape}\) is missing"
    with pytest.raises(StoreCorruptError, match=match):
        data = StoreFrames(store)
        for i in range(len(data)):
            data[i]


# -- item 9: nothing followed outside the store folder --------------------------------------------------------


def outside_frames_file(world: tuple[Path, Dataset], tmp_path: Path) -> Path:
    """A valid frames file (video 'b's pixels and checksums) in a folder beside the store."""
    src, _, _ = chunk_location(world[0] / "hdf5-none", "b", 0)
    beside = tmp_path / "beside"
    beside.mkdir(exist_ok=True)
    return Path(shutil.copy(src, beside / "frames.h5"))


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_an_hdf5_external_link_out_of_the_store_is_refused(
    world: tuple[Path, Dataset], tmp_path: Path, absolute: bool
) -> None:
    # Issue 12 item 9: videos/a.h5 'frames' -> a file beside the store returned that file's pixels as video a's.
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    outside = outside_frames_file(world, tmp_path)
    target = str(outside) if absolute else "../../beside/frames.h5"
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        for name in ("frames", "frames_crc32c"):
            del f[name]
            f[name] = h5py.ExternalLink(target, f"/{name}")
    store = open_store(store_dir)
    message = (
        rf"frame store '{re.escape(str(store_dir))}': external link '(frames|frames_crc32c)' of "
        rf"'{re.escape(str(store_dir / 'videos' / 'a.h5'))}' \(to '{re.escape(target)}'\) leads to "
        rf"'{re.escape(str(outside))}', outside the store folder: refused"
    )
    with pytest.raises(StoreError, match=message):
        store.read_row("a", 0)
    frames = StoreFrames(store_dir)
    with pytest.raises(StoreError, match=message):
        frames[frames.index.index(("a", 0))]
    np.testing.assert_array_equal(store.read_row("b", 1), reference_frames(world[0], "b")[1])  # b is untouched
    report = verify_store(store_dir)
    assert not report["ok"] and any("video 'a'" in p and "outside the store folder" in p for p in report["problems"])


def test_hdf5_links_files_and_external_storage_out_of_the_store_are_refused(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    outside = outside_frames_file(world, tmp_path)
    # a small array linked out of the store
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        del f["frame_number"]
        f["frame_number"] = h5py.ExternalLink("../../beside/frames.h5", "/frame_number")
    with pytest.raises(StoreError, match=r"external link 'frame_number' of .*a\.h5.* outside the store folder"):
        open_store(store_dir).video_data("a")
    # the root's link to a video group
    store_dir = copy_store(world, "hdf5-none", tmp_path / "2")
    with h5py.File(store_dir / "store.h5", "r+") as f:
        del f["videos/b"]
        f["videos/b"] = h5py.ExternalLink("../beside/frames.h5", "/")
    with pytest.raises(StoreError, match=r"external link 'videos/b' of .*store\.h5.* outside the store folder"):
        open_store(store_dir)
    # a video file that is a symbolic link to a file beside the store
    store_dir = copy_store(world, "hdf5-none", tmp_path / "3")
    (store_dir / "videos" / "a.h5").unlink()
    (store_dir / "videos" / "a.h5").symlink_to(outside)
    with pytest.raises(StoreError, match=rf"external link 'videos/a' .* leads to '{re.escape(str(outside))}', outside"):
        open_store(store_dir)  # the root's link to it leads out of the store
    with pytest.raises(StoreError, match=rf"video file leads to '{re.escape(str(outside))}', outside the store"):
        backend_for(store_dir).open_video("a")
    # an array whose data HDF5 keeps in an external raw file
    store_dir = copy_store(world, "hdf5-none", tmp_path / "4")
    raw = tmp_path / "beside" / "numbers.bin"
    raw.write_bytes(np.arange(16, dtype=np.int64).tobytes())
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        del f["frame_number"]
        f.create_dataset("frame_number", shape=(16,), dtype=np.int64, external=[(str(raw), 0, 16 * 8)])
    with pytest.raises(StoreError, match=r"dataset 'frame_number' keeps its data in external files .*numbers\.bin"):
        open_store(store_dir).video_data("a")


def test_hdf5_small_arrays_read_as_stored_through_links_and_refuse_what_is_not_an_array(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # a video's small arrays are read with h5py's low-level calls: what they return must equal plain h5py's
    # reading, links inside the store are followed (soft links by HDF5, external ones by vidlabel), and a name
    # that is a group, a link that leads nowhere or a missing array is refused by name
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    with h5py.File(store_dir / "videos" / "a.h5", "r") as f:
        want_a = {name: f[name][()] for name in ("frame_number", "regions/bbox_xyxy", "segments/start_frame")}
    with h5py.File(store_dir / "videos" / "b.h5", "r") as f:
        want_b_labels = f["regions/label_index"][()]
    reader = backend_for(store_dir).open_video("a")
    try:
        for name, want in want_a.items():
            got = reader.array(name)
            assert got.dtype == want.dtype and np.array_equal(got, want)
    finally:
        reader.close()
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        f["numbers_again"] = h5py.SoftLink("/frame_number")
        f["nowhere"] = h5py.SoftLink("/no/such/array")
        f["names"] = np.array(["x", "yy"], dtype=h5py.string_dtype())
        f["other_regions"] = h5py.ExternalLink("b.h5", "/regions")  # inside the store: followed by vidlabel
        f.create_group("a_group")
    reader = backend_for(store_dir).open_video("a")
    try:
        assert np.array_equal(reader.array("numbers_again"), want_a["frame_number"])
        assert np.array_equal(reader.array("other_regions/label_index"), want_b_labels)
        assert [x.decode() if isinstance(x, bytes) else x for x in reader.array("names")] == ["x", "yy"]
        for name in ("nowhere", "no_such", "regions/no_such", "no_group/x", "frame_number/x"):
            with pytest.raises(StoreError, match=rf"video file .*a\.h5' has no array '{name}'"):
                reader.array(name)
        with pytest.raises(StoreError, match=r"a\.h5': 'a_group' is not an array"):
            reader.array("a_group")
    finally:
        reader.close()


def test_an_edited_frame_number_is_refused_not_read_as_other_frames(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # frame_number + 1 still increases, and every row count still fits: without comparing it with the frames
    # file's own frame_number each sample would be labelled as the next frame while showing this one
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        f["frame_number"][...] = f["frame_number"][()] + 1
    data = StoreFrames(store_dir)
    with pytest.raises(
        StoreCorruptError,
        match=r"video 'a' of store .*: frame_number differs from the frame numbers its frames key was made from; its arrays, attributes or the store's class names differ from those exported \(labels_key\): the store was changed after export",
    ):
        data[0]
    report = verify_store(store_dir)
    assert any(
        "video 'a': frame_number differs from the frame numbers its frames key was made from" in p
        for p in report["problems"]
    )
    # the other video reads its true frames (found without data.index, which needs every video's arrays)
    b = int(np.flatnonzero(data.store.rows[:, 0] == data.store.video_ids.index("b"))[0])
    assert read_frame_number(data[b]["image"].permute(1, 2, 0).numpy()) == data[b]["frame_index"]


def test_a_shortened_csr_offset_array_is_a_store_corrupt_error(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    # before, numpy's "operands could not be broadcast together" came out of the sample list's construction
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    with h5py.File(store_dir / "videos" / "a.h5", "r+") as f:
        offsets = f["regions/row_offsets"][()]
        del f["regions/row_offsets"]
        f["regions/row_offsets"] = offsets[:-5]
    with pytest.raises(StoreCorruptError, match=r"video 'a' of store .*regions/row_offsets is not a CSR offset array over 16 rows"):  # fmt: skip
        StoreFrames(store_dir, frames="annotated")
    with pytest.raises(StoreCorruptError, match=r"regions/row_offsets is not a CSR offset array"):
        open_store(store_dir).video_data("a")
    report = verify_store(store_dir)
    assert any("regions/row_offsets is not a CSR offset array over 16 rows" in p for p in report["problems"])


def test_zarr_groups_and_chunk_files_leading_out_of_the_store_are_refused(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    root, _ = world
    beside = tmp_path / "beside"
    shutil.copytree(root / "zarr-none" / "videos" / "b", beside / "b")
    # a video group that is a symbolic link to a group beside the store
    store_dir = copy_store(world, "zarr-none", tmp_path)
    shutil.rmtree(store_dir / "videos" / "a")
    (store_dir / "videos" / "a").symlink_to(beside / "b", target_is_directory=True)
    with pytest.raises(StoreError, match=rf"video group leads to '{re.escape(str(beside / 'b'))}', outside the store"):
        open_store(store_dir).read_row("a", 0)
    # a chunk file that is a symbolic link to a file beside the store
    store_dir = copy_store(world, "zarr-none", tmp_path / "2")
    chunk = store_dir / "videos" / "a" / "frames" / "c.0.0.0.0"
    chunk.unlink()
    chunk.symlink_to(beside / "b" / "frames" / "c.0.0.0.0")
    store = open_store(store_dir, verify_checksums=False)  # refused before any checksum is looked at
    with pytest.raises(StoreError, match=r"chunk file '.*videos/a/frames/c\.0\.0\.0\.0' is a symbolic link: refused"):
        store.read_row("a", 0)
    # an array folder that is a symbolic link out of the store
    store_dir = copy_store(world, "zarr-none", tmp_path / "3")
    shutil.rmtree(store_dir / "videos" / "a" / "frame_number")
    (store_dir / "videos" / "a" / "frame_number").symlink_to(beside / "b" / "frame_number")
    with pytest.raises(StoreError, match=r"Zarr array leads to '.*beside/b/frame_number', outside the store"):
        open_store(store_dir).video_data("a")
    # a frames unit key read from zarr.json that is not a plain name
    store_dir = copy_store(world, "zarr-none", tmp_path / "4")
    meta_path = store_dir / "videos" / "a" / "frames" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["key"] = "../../beside"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=r"frames unit key '\.\./\.\./beside' is not a plain name .*: refused"):
        backend_for(store_dir).frames_units()


def test_a_store_reached_through_a_symbolic_link_still_reads(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    root, _ = world
    for name in ("hdf5-none", "zarr-none"):
        link = tmp_path / f"link-{name}"
        link.symlink_to(root / name, target_is_directory=True)
        store = open_store(link)
        np.testing.assert_array_equal(store.read_row("a", 4), reference_frames(root, "a")[4])


def test_object_store_keys_never_leave_the_url(mem: str) -> None:
    store = ObjectStore(f"{mem}/s")
    for key in ("videos/../../other/zarr.json", "/etc/passwd", "videos//a", "./zarr.json"):
        with pytest.raises(StoreError, match=rf"key {re.escape(repr(key))} under '{mem}/s' leaves the store"):
            store.get(key)
        with pytest.raises(StoreError, match=r"leaves the store"):
            store.get_many([key, "zarr.json"])
    assert store.get("zarr.json") is None  # plain keys work


# -- info opens every video's file header: a truncated file is an error there, not only in verify -------------


@pytest.mark.parametrize("which", ["video", "frames"])
def test_info_reports_a_truncated_hdf5_file_by_name(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    from vidlabel.cli import main

    store_dir = copy_store(world, "hdf5-none", tmp_path)
    assert open_store(store_dir).check_files() == 2
    assert main(["info", str(store_dir)]) == 0
    capsys.readouterr()
    target = store_dir / "videos" / "b.h5" if which == "video" else chunk_location(store_dir, "b", 0)[0]
    target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    with pytest.raises(StoreError, match=rf"cannot open HDF5 file '{re.escape(str(target.resolve()))}'.*truncated"):
        open_store(store_dir).check_files()
    assert main(["info", str(store_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(
        f"vidlabel: error: video 'b' of store '{store_dir}': cannot open HDF5 file '{target.resolve()}' of a frame "
        "store: it is truncated ("
    )


def test_verify_names_a_deleted_hdf5_video_file_as_reads_do(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: verify said "video 'b' is listed in the root but has no group", naming no file, while reads and
    # `vidlabel info` named videos/b.h5 (a fresh-user pass)
    from vidlabel.cli import main

    store_dir = copy_store(world, "hdf5-none", tmp_path)
    video_file = store_dir / "videos" / "b.h5"
    video_file.unlink()
    with pytest.raises(StoreError, match=rf"has no file for video 'b' \({re.escape(str(video_file))}\): the store was "
                       r"changed after export; restore it, .*the same export command into this folder writes the "
                       r"missing file again\)$"):  # fmt: skip
        open_store(store_dir).read_rows("b", [0])
    problem = f"{store_dir}: video 'b' is listed in the root but its file '{video_file}' is missing"
    assert verify_store(store_dir)["problems"] == [problem]
    assert main(["verify", str(store_dir)]) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"problem: {problem}"


@pytest.mark.parametrize("name", ["hdf5-none", "zarr-none"])
def test_verify_counts_the_chunks_of_a_video_it_could_not_open(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # before: with video b's file (HDF5) or frames array (Zarr) gone, verify said "N chunks checked" with N the
    # chunks of video a alone, as if the store held no others (an adversarial pass)
    from vidlabel.cli import main

    store = copy_store(world, name, tmp_path)
    if name.startswith("hdf5"):  # the truth from the frames files themselves: rows over rows a chunk, rounded up
        per_video = {}
        for vid in ("a", "b"):
            with h5py.File(store / "videos" / f"{vid}.h5", "r") as f:
                frames_file = store / "frames" / Path(f.get("frames", getlink=True).filename).name
            with h5py.File(frames_file, "r") as f:
                per_video[vid] = -(-f["frames"].shape[0] // f["frames"].chunks[0])
        (store / "videos" / "b.h5").unlink()
    else:  # the truth from the chunk files on disk
        per_video = {vid: len(list((store / "videos" / vid / "frames").glob("c.*"))) for vid in ("a", "b")}
        shutil.rmtree(store / "videos" / "b" / "frames")
    report = verify_store(store)
    assert not report["ok"] and per_video["b"] > 0
    assert (report["chunks"], report["chunks_total"]) == (per_video["a"], per_video["a"] + per_video["b"])
    assert main(["verify", str(store)]) == 1
    assert f" {per_video['a']} of {per_video['a'] + per_video['b']} chunks (" in capsys.readouterr().out


UNOPENABLE = {
    "missing": (lambda path: path.unlink(), r"it is missing"),
    "truncated": (
        lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
        r"it is truncated \(\d+ bytes of the \d+ its header records\)",
    ),
    "garbage": (
        lambda path: path.write_bytes(b"not a frames file\n" * 64),
        r"it is not an HDF5 file \(no HDF5 signature in its 1152 bytes\)",
    ),
    "directory": (lambda path: (path.unlink(), path.mkdir()), r"it is a directory, not a file"),
}


@pytest.mark.parametrize("case", list(UNOPENABLE))
def test_a_frames_file_that_cannot_be_opened_is_named_with_its_video_in_one_line(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    # before: reads and `vidlabel info` said "cannot open HDF5 file '.../frames/<key>.h5' of a frame store:
    # [Errno 2] Unable to synchronously open file (unable to open file: name = ..., errno = 2, ...)", naming no
    # video, and for a directory in the file's place h5py's text ran over two lines (an adversarial pass)
    from vidlabel.cli import main

    store_dir = copy_store(world, "hdf5-none", tmp_path)
    target = chunk_location(store_dir, "b", 0)[0]
    damage_file, why = UNOPENABLE[case]
    damage_file(target)
    inner = (
        rf"cannot open HDF5 file '{re.escape(str(target))}' of a frame store: {why}; restore it, or export again "
        "into an empty folder"
    )
    message = rf"video 'b' of store '{re.escape(str(store_dir))}': {inner}"
    store = open_store(store_dir)
    with pytest.raises(StoreError, match=rf"^{message}$") as err:
        store.read_rows("b", [0])
    assert err.value.video_id == "b" and "\n" not in str(err.value)
    assert isinstance(err.value.__cause__, StoreError) and isinstance(err.value.__cause__.__cause__, OSError)
    frames = StoreFrames(store_dir)
    with pytest.raises(StoreError, match=rf"^{message}$"):
        frames[frames.index.index(("b", 0))]
    np.testing.assert_array_equal(store.read_row("a", 0), open_store(world[0] / "hdf5-none").read_row("a", 0))
    assert main(["info", str(store_dir)]) == 1
    out, printed = capsys.readouterr()
    assert out == "" and re.fullmatch(rf"vidlabel: error: {message}\n", printed), printed
    # the words `vidlabel verify` gives after naming the store and the video
    assert [p for p in verify_store(store_dir)["problems"] if re.fullmatch(
        rf"{re.escape(str(store_dir))}: video 'b': cannot be read: {inner}", p
    )]  # fmt: skip


def test_info_reports_a_zarr_video_without_its_frames_array(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vidlabel.cli import main

    store_dir = copy_store(world, "zarr-none", tmp_path)
    assert open_store(store_dir).check_files() == 2
    (store_dir / "videos" / "a" / "frames" / "zarr.json").unlink()
    assert main(["info", str(store_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vidlabel: error: ") and "frames" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["hdf5-none", "zarr-none"])
def test_info_refuses_another_videos_frames_copied_over_as_reads_do(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # before: `vidlabel info` printed the summary and exited 0 on a store whose video b's frames were a copy of
    # video a's, which reads and `vidlabel verify` refuse (found by an adversarial pass)
    from vidlabel.cli import main

    store_dir = copy_store(world, name, tmp_path)
    if name.startswith("hdf5"):
        shutil.copyfile(chunk_location(store_dir, "a", 0)[0], chunk_location(store_dir, "b", 0)[0])
    else:
        shutil.rmtree(store_dir / "videos" / "b" / "frames")
        shutil.copytree(store_dir / "videos" / "a" / "frames", store_dir / "videos" / "b" / "frames")
    with pytest.raises(StoreCorruptError) as read:
        open_store(store_dir).read_row("b", 0)
    message = str(read.value)
    assert re.fullmatch(
        rf"video 'b' of store '{re.escape(str(store_dir))}': its frames '.*' are frames unit '\w+', not the video's "
        r"own unit '\w+': the store was changed after export; restore it, or export again into an empty folder",
        message,
    ), message
    with pytest.raises(StoreCorruptError, match=re.escape(message)):
        open_store(store_dir).check_files()
    assert main(["info", str(store_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"vidlabel: error: {message}\n"


def test_an_index_row_past_a_videos_rows_is_refused_by_the_sample_list(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    root, ds = world
    store_dir = copy_store(world, "hdf5-none", tmp_path)
    good = open_store(root / "hdf5-none")
    counts = {v: ds.video(v).frame_count for v in ("a", "b")}
    want = [(v, n) for v in ("a", "b") for n in range(counts[v])]  # frames="all": stored row r is frame r
    assert good.index == want and StoreFrames(good).index == want
    with h5py.File(store_dir / "store.h5", "r+") as f:
        index = f["index"][...]
        k = int(np.flatnonzero(index[:, 0] == 1)[3])  # the 4th sample of video 'b'
        index[k, 1] = counts["b"]
        f["index"][...] = index
    store = open_store(store_dir)
    message = rf"/index of store .*: sample {k} names row {counts['b']} of video 'b', out of range \[0, {counts['b']}\)"
    with pytest.raises(FrameOutOfRangeError, match=message):
        _ = store.index
    with pytest.raises(FrameOutOfRangeError, match=message):
        _ = StoreFrames(store).index
    with pytest.raises(FrameOutOfRangeError, match=message):  # before: numpy's IndexError (a fresh-user pass)
        StoreFrames(store, frames="annotated")


def test_a_zarr_store_exported_again_under_an_open_reader_says_to_open_it_again(tmp_path: Path) -> None:
    """Before: "chunk ... is missing (`vidlabel verify` lists every damaged chunk; export again ...)", though nothing
    is damaged: this process holds the export before the new one."""
    ds = make_dataset(tmp_path, videos=("a",), n_frames=8)
    out = tmp_path / "z"
    export(ds, out, format="zarr", frames="all", progress=False)
    store = open_store(out)
    assert read_frame_number(store.read_rows("a", [0])[0]) == 0
    opened = store.attrs["created"]
    export(ds, out, format="zarr", frames="all", chunk_frames=2, progress=False, overwrite=True)  # other units
    with pytest.raises(
        StoreCorruptError,
        match=rf"chunk 3 \(rows 3\.\.3\) of store '{re.escape(str(out))}': .* \(the store was exported again at \S+ "
        rf"after this process opened it \(the export of {re.escape(opened)}\): open it again\)$",
    ):
        store.read_rows("a", [3])
    again = open_store(out)
    assert [read_frame_number(f) for f in again.read_rows("a", [3, 7])] == [3, 7]
    # a store damaged, not exported again, still says so
    next((out / "videos" / "a" / "frames").glob("c.2.*")).unlink()
    with pytest.raises(StoreCorruptError, match=r"is missing .*`vidlabel verify` lists every damaged chunk"):
        open_store(out).read_rows("a", [5])


@pytest.mark.parametrize(
    ("video_ids", "problem"),
    [
        ([1, 2], r"its video_ids hold 1, not a video id \(a string\)"),
        ("ab", r"its video_ids 'ab' are not a list of video ids"),
        (["a", "a"], r"its video_ids list video 'a' twice"),
    ],
)
def test_a_root_whose_video_ids_are_not_distinct_names_is_refused(
    world: tuple[Path, Dataset], tmp_path: Path, video_ids: object, problem: str
) -> None:
    # before: ids that are numbers were a raw TypeError from the file-name quoting ("quote_from_bytes() expected
    # bytes"), on open and in verify; a string read as one video per character
    store = copy_store(world, "zarr-none", tmp_path)
    meta = json.loads((store / "zarr.json").read_text())
    meta["attributes"]["video_ids"] = video_ids
    (store / "zarr.json").write_text(json.dumps(meta))
    where = re.escape(f"frame store '{store}': ")
    with pytest.raises(StoreCorruptError, match=where + problem + ": the store was changed after export"):
        open_store(store)
    assert re.fullmatch(re.escape(f"{store}: ") + problem, verify_store(store)["problems"][0])


def _set_meta(store: Path, rel: str, **changes: object) -> None:
    """Edit the ``zarr.json`` at ``rel``: each change a top-level key, ``chunk_shape`` the chunk grid's."""
    path = store / rel / "zarr.json"
    meta = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "chunk_shape":
            meta["chunk_grid"]["configuration"]["chunk_shape"] = value
        else:
            meta[key] = value
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("rel", "changes", "message"),
    [
        # a declared shape of 10**12 was allocated (a raw MemoryError of terabytes) or reshaped (a raw ValueError)
        ("index", {"shape": [10**12, 2]}, r"Zarr array '.*/index' declares shape \[1000000000000, 2\] int64 "
         r"\(16000000000000 bytes\), more than 1024 times the \d+ bytes its folder holds: refused before reading"),
        ("videos/a/frame_number", {"shape": [10**12]}, r"declares shape \[1000000000000\] int64"),
        ("videos/a/regions/mask_counts", {"shape": [10**13]}, r"declares shape \[10000000000000\] uint8"),
        ("videos/a/frame_number", {"shape": [10**12], "chunk_shape": [10**12]},
         r"chunk of Zarr array '.*/videos/a/frame_number' \(1000000000000 int64\) holds 132 bytes, not the "
         r"8000000000004 its shape and type take with the checksum"),
        ("index", {"shape": [10**12, 2], "chunk_shape": [10**12, 2]}, r"\(1000000000000x2 int64\) holds \d+ bytes"),
        # metadata of the wrong kinds: raw KeyError, TypeError, ValueError, ZeroDivisionError
        ("videos/a/frame_number", {"shape": "x"}, r"frame_number': its shape 'x' is not a list of whole numbers"),
        ("videos/a/frame_number", {"chunk_grid": None}, r"its chunk shape None is not a whole number in \[1, max"),
        ("videos/a/frame_number", {"data_type": "object"}, r"its data type 'object' is not one of bool, float16"),
        ("videos/a/frame_number", {"codecs": "x"}, r"its codecs 'x' are not a list of codec objects"),
        ("videos/a/frames", {"chunk_shape": [10**9, 48, 64, 3]},
         r"frames array '.*/videos/a/frames': its chunk shape \[1000000000, 48, 64, 3\] is not a whole number in "
         r"\[1, max\(1, n\)\] per dimension of \[16, 48, 64, 3\]"),
        ("videos/a/frames", {"chunk_shape": [0, 48, 64, 3]}, r"its chunk shape \[0, 48, 64, 3\] is not a whole"),
        ("videos/a/frames", {"attributes": {}}, r"frames array '.*/videos/a/frames': its attributes \{\} name no "
         r"codec"),
    ],
)  # fmt: skip
def test_zarr_array_metadata_that_declares_what_no_store_holds_is_refused_before_reading(
    world: tuple[Path, Dataset], tmp_path: Path, rel: str, changes: dict[str, object], message: str
) -> None:
    store = copy_store(world, "zarr-none", tmp_path)
    _set_meta(store, rel, **changes)

    def read() -> None:
        fs = open_store(store)
        fs.video_data("a")
        fs.get_frame("a", 0)

    with pytest.raises(StoreCorruptError, match=message + ".*: the store was changed after export"):
        read()


def test_a_zarr_root_nested_too_deeply_is_not_a_store(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    # before: a raw RecursionError from json
    store = copy_store(world, "zarr-none", tmp_path)
    (store / "zarr.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(StoreError, match=rf"no vidlabel frame store at '{re.escape(str(store))}'"):
        open_store(store)


def test_a_dataset_or_release_given_as_a_store_says_to_export_it(tmp_path: Path) -> None:
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["obj"])
    ds.build()
    for value, kind in ((ds, "Dataset"), (ds.release("latest"), "Release")):
        with pytest.raises(OptionError, match=rf"got .*\(a {kind} is read through a store: export it with "):
            open_store(value)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"opened from a folder path or a URL, got 3$"):
        open_store(3)  # type: ignore[arg-type]


def test_a_dataset_folder_given_as_a_store_says_to_export_it_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: "no vidlabel frame store at 'ds'" and nothing more, though Dataset.open on a store says it is one
    from vidlabel.cli import main
    from vidlabel.dataset._dataset import DB_NAME

    folder = Dataset.create(tmp_path / "ds").path
    said = (
        f"{str(folder)!r} is a vidlabel dataset folder (it holds {DB_NAME}), not an exported frame store: export it "
        "first with `vidlabel export DATASET OUT`"
    )
    for call in (open_store, FrameStore, StoreFrames, verify_store, backend_for, lambda p: upload(p, "memory://x")):
        with pytest.raises(StoreError, match=rf"^no vidlabel frame store at '{re.escape(str(folder))}'.*; ") as got:
            call(folder)
        assert said in str(got.value)
    for argv in (["verify", str(folder)], ["upload", str(folder), "memory://x", "--no-progress"]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith("vidlabel: error: no vidlabel frame store at") and said in err and err.count("\n") == 1
    with pytest.raises(StoreError, match=r"no vidlabel frame store at .*nowhere'$"):
        open_store(tmp_path / "nowhere")  # a folder that is not there: nothing more to say


@pytest.mark.parametrize(
    ("rel", "name", "dataset", "message"),
    [
        # chunks never written read as the fill value: a shape of 10**12 in a small file was a raw MemoryError
        ("store.h5", "index", {"shape": (10**12, 2), "dtype": "int64", "chunks": (1024, 2)},
         r"array 'index' of '.*/store\.h5' declares shape \(1000000000000, 2\) int64 \(16000000000000 bytes\), "
         r"more than 1024 times the 0 bytes the file stores for it: refused before reading"),
        ("videos/a.h5", "regions/mask_counts", {"shape": (10**13,), "dtype": "uint8", "chunks": (4096,)},
         r"array 'regions/mask_counts' of '.*/videos/a\.h5' declares shape \(10000000000000,\) uint8"),
        # strings were read, and failed later as a raw TypeError
        ("videos/a.h5", "frame_number", {"data": np.array([b"x"] * 16, dtype=h5py.string_dtype())},
         r"video 'a' of store '.*': frame_number holds object values, not numbers"),
    ],
)  # fmt: skip
def test_hdf5_arrays_that_declare_what_their_file_does_not_hold_are_refused_before_reading(
    world: tuple[Path, Dataset], tmp_path: Path, rel: str, name: str, dataset: dict[str, object], message: str
) -> None:
    store = copy_store(world, "hdf5-none", tmp_path)
    with h5py.File(store / rel, "r+") as f:
        del f[name]
        f.create_dataset(name, **dataset)  # type: ignore[arg-type]

    def read() -> None:
        fs = open_store(store)
        fs.video_data("a")

    with pytest.raises(StoreCorruptError, match=message + ".*: the store was changed after export"):
        read()


def test_an_hdf5_root_attribute_nested_too_deeply_is_named_in_short(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # before: a raw RecursionError from json
    store = copy_store(world, "hdf5-none", tmp_path)
    with h5py.File(store / "store.h5", "r+") as f:
        f.attrs["class_names"] = "[" * 100_000 + "]" * 100_000
    with pytest.raises(StoreCorruptError, match=r"its class_names '\[{56}\.\.\. are not a list of names") as err:
        open_store(store)
    assert len(str(err.value)) < 400


@pytest.mark.parametrize("link", ["file", "folder"])
def test_upload_refuses_a_store_holding_a_symbolic_link(
    world: tuple[Path, Dataset], tmp_path: Path, mem: str, link: str
) -> None:
    # before: a chunk file linked to a file beside the store was uploaded with that file's bytes (a store from
    # elsewhere, uploaded to a shared bucket, sent ~/.ssh/id_rsa there), and a linked folder was left out silently
    store = copy_store(world, "zarr-none", tmp_path)
    secret = tmp_path / "secret"
    secret.write_bytes(b"private key")
    if link == "file":
        name = "videos/a/frames/c.0.0.0.0"
        (store / name).unlink()
        (store / name).symlink_to(secret)
    else:
        name = "videos/a/segments"
        shutil.move(store / name, tmp_path / "segments")
        (store / name).symlink_to(tmp_path / "segments")
    with pytest.raises(StoreError, match=rf"store '{re.escape(str(store))}': '{name}' is a symbolic link \(to "
                       r"'.*'\): refused, a store's files must be its own and an upload would send what it points "
                       "at"):  # fmt: skip
        upload(store, f"{mem}/up")
    fs = fsspec.filesystem("memory")
    held = fs.find(f"{mem}/up") if fs.exists(f"{mem}/up") else []
    assert all(fs.cat_file(p) != b"private key" for p in held)


def test_a_stored_mask_covering_fewer_pixels_than_its_frame_is_refused_not_returned_as_memory(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # before: a mask's RLE bytes edited to runs covering fewer pixels than the frame (its labels key made again, as
    # anyone can) were decoded by pycocotools into uninitialised memory: a sample's mask held values such as 40 and
    # 245 (what the process's heap held there), not 0 and 1
    from vidlabel.store._layout import REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS, labels_key

    store = copy_store(world, "hdf5-none", tmp_path)
    reader = backend_for(store).open_video("a")
    names = [*VIDEO_ARRAYS, *(f"regions/{n}" for n in REGION_FIELDS), *(f"segments/{n}" for n in SEGMENT_FIELDS)]
    arrays = {name: reader.array(name) for name in names}
    attrs = dict(reader.attrs)
    reader.close()
    mo = arrays["regions/mask_offsets"]
    region = int(np.flatnonzero(np.diff(mo))[0])
    counts = arrays["regions/mask_counts"].copy()
    counts[mo[region] : mo[region + 1]] = ord("0")  # runs of 0 pixels: valid characters, no pixel covered
    arrays["regions/mask_counts"] = counts
    class_names = open_store(store).class_names
    key = labels_key(attrs, arrays, class_names)
    with h5py.File(store / "videos" / "a.h5", "r+") as f:
        del f["regions/mask_counts"]
        f["regions/mask_counts"] = counts
        f.attrs["labels_key"] = json.dumps(key)
    with h5py.File(store / "store.h5", "r+") as f:
        videos = json.loads(f.attrs["videos"])
        videos["a"]["labels_key"] = key
        f.attrs["videos"] = json.dumps(videos)
    fs = open_store(store)
    row = int(np.searchsorted(np.asarray(fs.video_data("a").regions["row_offsets"]), region, side="right")) - 1
    with pytest.raises(StoreCorruptError, match=rf"video 'a' of store '{re.escape(str(store))}': the mask of region "
                       rf"{region} \(stored row {row}\) is not a mask of the 64x48 frame \(mask RLE counts cover 0 "
                       r"pixels, but its size 48x64 has 3072\): the store was changed after export"):  # fmt: skip
        fs.select(with_masks=True).sample_row("a", row)


def test_decode_rle_refuses_compressed_counts_of_another_size() -> None:
    from vidlabel.geometry import decode_rle, encode_rle, rle_counts

    mask = np.zeros((48, 64), np.uint8)
    mask[5:20, 7:30] = 1
    rle = encode_rle(mask)
    assert rle_counts(rle["counts"]).sum() == 48 * 64 and np.array_equal(decode_rle(rle), mask)
    for counts, problem in (
        (b"0", r"mask RLE counts cover 0 pixels, but its size 4x4 has 16"),
        (rle["counts"], r"mask RLE counts cover 3072 pixels, but its size 4x4 has 16"),
        (b"\x7f", r"byte 127 at position 0 is not a compressed RLE character"),
        (b"P", r"compressed RLE string is truncated"),
    ):
        with pytest.raises(ValueError, match=problem):
            decode_rle({"size": [4, 4], "counts": counts})


@pytest.mark.parametrize("size", [[70000, 1], [1, 70000], [0, 5]])
def test_a_mask_size_no_frame_has_is_refused_before_it_is_allocated(size: list[int]) -> None:
    # decode_rle trusted the RLE's size: counts covering exactly 2**20 x 2**20 pixels (a few bytes of RLE in a
    # store or release edited) made it allocate a terabyte; a side past the largest frame is refused first
    from pycocotools import mask as mask_utils

    from vidlabel.geometry import decode_rle, encode_rle

    n = size[0] * size[1]
    counts = mask_utils.frPyObjects({"size": size, "counts": [n]}, *size)["counts"] if n else b""
    with pytest.raises(ValueError, match=rf"mask RLE size {size[0]}x{size[1]} is not that of a frame: each side must "
                       r"be in \[1, 65536\]"):  # fmt: skip
        decode_rle({"size": size, "counts": counts})
    assert decode_rle(encode_rle(np.ones((3, 65536), np.uint8))).shape == (3, 65536)
