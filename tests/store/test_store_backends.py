"""One conformance suite for the store backend interface, run unchanged over HDF5 and Zarr."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import google_crc32c
import h5py
import numpy as np
import pytest
import zarr

from vidlabel.errors import StoreError
from vidlabel.store import CODECS, backend_for, get_codec
from vidlabel.store._backend import Backend, node_name
from vidlabel.store._writer import write_frames

W, H = 40, 24


def noisy_frames(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:H, 0:W]
    base = (x * 4 + y * 3)[..., None] + np.array([0, 60, 120])
    return [np.clip(base + k * 5 + rng.normal(0, 4, (H, W, 3)), 0, 255).astype(np.uint8) for k in range(n)]


def tolerance(codec: str) -> int:
    return 0 if get_codec(codec).lossless else 40


@pytest.fixture(params=["hdf5", "zarr"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    b = backend_for(tmp_path / "out", request.param)
    b.mark_incomplete({"format": "vidlabel-store"})
    return b


def write_unit(backend: Backend, key: str, frames: list[np.ndarray], codec: str = "none", chunk_frames: int = 1):
    write_frames(
        backend, key, frames, frame_number=np.arange(len(frames)) * 2, frame_size=(W, H),
        chunk_frames=chunk_frames, codec=get_codec(codec), attrs={"pixel_key": "px"},
    )  # fmt: skip


def read_all(reader) -> np.ndarray:  # type: ignore[no-untyped-def]
    parts = [reader.read_chunk(c)[: reader.chunk_rows(c)] for c in range(reader.n_chunks)]
    return np.concatenate(parts) if parts else np.zeros((0, H, W, 3), np.uint8)


class TestBackendConformance:
    def test_detect_and_empty_root(self, backend: Backend) -> None:
        assert type(backend).detect(backend.folder)
        attrs, index = backend.read_root()
        assert attrs["complete"] is False and index.shape == (0, 2)
        assert backend.video_ids() == [] and backend.frames_units() == {}

    def test_root_round_trip(self, backend: Backend) -> None:
        attrs = {"format": "vidlabel-store", "class_names": ["a", "b"], "export": {"stride": 2}, "release_id": None}
        index = np.array([[0, 0], [0, 3], [1, 1]], np.int64)
        backend.write_root(attrs, index, [])
        got, got_index = backend.read_root()
        assert got == {**attrs, "complete": True}
        assert got_index.dtype == np.int64 and np.array_equal(got_index, index)
        backend.mark_incomplete(attrs)
        assert backend.read_root()[0]["complete"] is False

    @pytest.mark.parametrize(
        ("codec", "chunk_frames"),
        [(c, n) for c in CODECS for n in (1, 3) if n == 1 or not get_codec(c).per_frame],  # png/jpeg: 1 per chunk
    )
    def test_frames_unit_round_trip(self, backend: Backend, codec: str, chunk_frames: int) -> None:
        frames = noisy_frames(7)
        write_unit(backend, "u1", frames, codec, chunk_frames)
        units = backend.frames_units()
        assert (
            set(units) == {"u1"} and units["u1"]["pixel_key"] == "px" and units["u1"]["codec"] == get_codec(codec).spec
        )
        assert np.array_equal(backend.unit_frame_number("u1"), np.arange(7) * 2)
        reader = backend.open_frames_unit("u1")
        assert reader.shape == (7, H, W, 3) and reader.chunk_frames == chunk_frames
        assert reader.n_chunks == -(-7 // chunk_frames)
        got = read_all(reader)
        assert np.abs(got.astype(int) - np.stack(frames)).max() <= tolerance(codec)
        reader.close()

    def test_unfinished_unit_is_invisible_and_abort_removes_it(self, backend: Backend) -> None:
        writer = backend.frames_writer("u2", shape=(2, H, W, 3), chunk_frames=1, codec=get_codec("none"), attrs={})
        writer.write_chunk(0, noisy_frames(1)[0].tobytes())
        assert "u2" not in backend.frames_units()
        writer.abort()
        assert "u2" not in backend.frames_units()
        assert not any("u2" in p.name for p in backend.folder.rglob("*"))

    def test_unit_published_agrees_with_frames_units(self, backend: Backend) -> None:
        # an export task asks unit_published for its own key; HDF5 answers from that one file (issue 15)
        write_unit(backend, "u1", noisy_frames(2))
        write_unit(backend, "u4", noisy_frames(1))
        writer = backend.frames_writer("u2", shape=(2, H, W, 3), chunk_frames=1, codec=get_codec("none"), attrs={})
        writer.write_chunk(0, noisy_frames(1)[0].tobytes())
        units = backend.frames_units()
        assert set(units) == {"u1", "u4"}
        for key in ("u1", "u2", "u4", "nope"):
            assert backend.unit_published(key) is (key in units), key
        writer.abort()
        assert not backend.unit_published("u2")

    def test_write_frames_refuses_a_wrong_count_or_shape(self, backend: Backend) -> None:
        with pytest.raises(StoreError, match=r"got 2 frames, expected 3"):
            write_frames(backend, "u3", noisy_frames(2), frame_number=np.arange(3), frame_size=(W, H),
                         chunk_frames=1, codec=get_codec("none"), attrs={})  # fmt: skip
        with pytest.raises(StoreError, match=r"frame 0 has shape \(5, 5, 3\)"):
            write_frames(backend, "u3", [np.zeros((5, 5, 3), np.uint8)], frame_number=np.arange(1),
                         frame_size=(W, H), chunk_frames=1, codec=get_codec("none"), attrs={})  # fmt: skip
        assert "u3" not in backend.frames_units()

    def test_video_round_trip(self, backend: Backend) -> None:
        frames = noisy_frames(3)
        write_unit(backend, "u1", frames, "zstd", 2)
        arrays = {
            "frame_number": np.array([0, 2, 4], np.int64),
            "is_annotated": np.array([True, False, True]),
            "regions/row_offsets": np.array([0, 2, 2, 3], np.int64),
            "regions/bbox_xyxy": np.arange(12, dtype=np.float32).reshape(3, 4),
            "regions/confidence": np.array([np.nan, 0.5, 1.0], np.float32),
            "regions/origin": np.array([0, 1, 0], np.uint8),
            "regions/mask_counts": np.zeros(0, np.uint8),
            "segments/start_frame": np.zeros(0, np.int64),
        }
        attrs = {"content_hash": "sha256:ab", "fps": {"num": 30, "den": 1}, "view_id": None, "crop": [0, 0, 4, 4]}
        backend.write_video("cam 1", attrs=attrs, arrays=arrays, frames_key="u1")
        assert backend.video_ids() == ["cam 1"]
        assert backend.video_attrs("cam 1") == {**attrs, "complete": True}
        video = backend.open_video("cam 1")
        for name, arr in arrays.items():
            got = video.array(name)
            assert got.dtype == arr.dtype and got.shape == arr.shape, name
            np.testing.assert_array_equal(got, arr)
        np.testing.assert_array_equal(read_all(video.frames()), np.stack(frames))
        crc = video.array("frames_crc32c")
        raw = video.frames()
        assert [google_crc32c.value(raw.raw_chunk(c)) for c in range(raw.n_chunks)] == crc.tolist()
        video.close()

    def test_video_replaced_atomically_and_frames_shared(self, backend: Backend) -> None:
        write_unit(backend, "u1", noisy_frames(2))
        backend.write_video("v", attrs={"n": 1}, arrays={"frame_number": np.arange(2)}, frames_key="u1")
        backend.write_video("w", attrs={"n": 3}, arrays={"frame_number": np.arange(2)}, frames_key="u1")
        backend.write_video("v", attrs={"n": 2}, arrays={"frame_number": np.arange(2) + 5}, frames_key="u1")
        assert backend.video_attrs("v") == {"n": 2, "complete": True}
        assert backend.open_video("v").array("frame_number").tolist() == [5, 6]
        a, b = (read_all(backend.open_video(v).frames()) for v in ("v", "w"))
        np.testing.assert_array_equal(a, b)
        backend.remove_video("w")
        assert backend.video_ids() == ["v"] and backend.video_attrs("w") is None

    def test_missing_frames_unit_is_an_error(self, backend: Backend) -> None:
        if backend.name == "hdf5":
            backend.write_video("v", attrs={}, arrays={}, frames_key="nope")
            with pytest.raises(StoreError, match=r"cannot open HDF5 file .*nope\.h5"):
                backend.open_video("v").frames()
        else:
            with pytest.raises(StoreError, match=r"frames unit 'nope' of video 'v' is missing"):
                backend.write_video("v", attrs={}, arrays={}, frames_key="nope")
        with pytest.raises(StoreError, match=r"has no (file|group) for video 'zz'"):
            backend.open_video("zz")

    def test_zero_frames(self, backend: Backend) -> None:
        write_unit(backend, "u0", [])
        backend.write_video("v", attrs={}, arrays={"frame_number": np.zeros(0, np.int64)}, frames_key="u0")
        reader = backend.open_video("v").frames()
        assert reader.shape == (0, H, W, 3) and reader.n_chunks == 0

    def test_collect_garbage_keeps_what_is_used(self, backend: Backend) -> None:
        write_unit(backend, "keep", noisy_frames(1))
        write_unit(backend, "drop", noisy_frames(1))
        backend.write_video("v", attrs={}, arrays={}, frames_key="keep")
        leftover = backend.frames_writer("tmp", shape=(1, H, W, 3), chunk_frames=1, codec=get_codec("none"), attrs={})
        leftover.write_chunk(0, noisy_frames(1)[0].tobytes())
        backend.collect_garbage({"keep"})
        assert set(backend.frames_units()) == {"keep"}
        assert not any(p.name.endswith(".partial") or p.name == ".partial" for p in backend.folder.rglob("*"))
        np.testing.assert_array_equal(read_all(backend.open_video("v").frames())[0], noisy_frames(1)[0])
        assert backend.size_on_disk() > noisy_frames(1)[0].nbytes


def test_hdf5_unit_published_reads_only_a_complete_unit_of_its_own_key(tmp_path: Path) -> None:
    backend = backend_for(tmp_path / "out", "hdf5")
    backend.mark_incomplete({"format": "vidlabel-store"})
    write_unit(backend, "u1", noisy_frames(2))
    frames_dir = backend.folder / "frames"
    (frames_dir / "cut.h5").write_bytes((frames_dir / "u1.h5").read_bytes()[:100])  # cut short: unreadable
    shutil.copy(frames_dir / "u1.h5", frames_dir / "other.h5")  # complete, but its key is 'u1'
    assert backend.unit_published("u1")
    assert not backend.unit_published("cut") and not backend.unit_published("other")
    assert set(backend.frames_units()) == {"u1"}
    beside = tmp_path / "beside.h5"
    shutil.copy(frames_dir / "u1.h5", beside)
    (frames_dir / "u1.h5").unlink()
    (frames_dir / "u1.h5").symlink_to(beside)
    with pytest.raises(StoreError, match=rf"frames file leads to '{re.escape(str(beside))}', outside the store"):
        backend.unit_published("u1")


def test_node_names_are_reversible_and_safe() -> None:
    from urllib.parse import unquote

    for vid in ["cam1", "a b", "x:y", ".hidden", "__z", "ünï", "a%b"]:
        name = node_name(vid)
        assert unquote(name) == vid and "/" not in name and not name.startswith((".", "__"))


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gzip"])
def test_plain_h5py_reads_the_layout(tmp_path: Path, codec: str) -> None:
    import hdf5plugin  # noqa: F401

    backend = backend_for(tmp_path / "o", "hdf5")
    frames = noisy_frames(4)
    write_unit(backend, "u", frames, codec, 3)
    backend.write_video(
        "cam",
        attrs={"fps": {"num": 25, "den": 1}},
        arrays={"regions/row_offsets": np.zeros(5, np.int64)},
        frames_key="u",
    )
    backend.write_root({"format": "vidlabel-store"}, np.zeros((0, 2), np.int64), ["cam"])
    with h5py.File(tmp_path / "o" / "store.h5", "r") as f:
        np.testing.assert_array_equal(f["videos/cam/frames"][...], np.stack(frames))
        assert json.loads(f["videos/cam"].attrs["fps"]) == {"num": 25, "den": 1}
        assert f["videos/cam/regions/row_offsets"].shape == (5,)


@pytest.mark.parametrize("codec", CODECS)
def test_plain_zarr_reads_the_layout(tmp_path: Path, codec: str) -> None:
    backend = backend_for(tmp_path / "o", "zarr")
    frames = noisy_frames(3)
    write_unit(backend, "u", frames, codec, 1)
    backend.write_video(
        "cam",
        attrs={"fps": {"num": 25, "den": 1}},
        arrays={"regions/row_offsets": np.zeros(4, np.int64)},
        frames_key="u",
    )
    backend.write_root({"format": "vidlabel-store"}, np.zeros((0, 2), np.int64), ["cam"])
    root = zarr.open_group(tmp_path / "o", mode="r")
    got = root["videos/cam/frames"][...]
    assert np.abs(got.astype(int) - np.stack(frames)).max() <= tolerance(codec)
    assert root["videos/cam"].attrs["fps"] == {"num": 25, "den": 1}
    assert root["videos/cam/regions/row_offsets"].shape == (4,)


def test_plain_zarr_in_a_fresh_process_finds_the_picture_codecs(tmp_path: Path) -> None:
    # zarr loads vidlabel.png through the package's zarr.codecs entry points: nothing of vidlabel imported
    backend = backend_for(tmp_path / "o", "zarr")
    frames = noisy_frames(2)
    write_unit(backend, "u", frames, "png", 1)
    backend.write_video("cam", attrs={}, arrays={}, frames_key="u")
    backend.write_root({"format": "vidlabel-store"}, np.zeros((0, 2), np.int64), ["cam"])
    np.save(tmp_path / "truth.npy", np.stack(frames))
    code = (
        "import sys, numpy as np, zarr\n"
        f"got = zarr.open_group({str(tmp_path / 'o')!r}, mode='r')['videos/cam/frames'][...]\n"
        f"assert np.array_equal(got, np.load({str(tmp_path / 'truth.npy')!r}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('vidlabel.store')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "vidlabel.store._zarr_codecs" in done.stdout


@pytest.mark.parametrize("chunk_frames", [1, 3])
def test_hdf5_uncompressed_chunks_are_copied_from_a_memory_map(tmp_path: Path, chunk_frames: int) -> None:
    backend = backend_for(tmp_path / "out", "hdf5")
    backend.mark_incomplete({"format": "vidlabel-store"})
    frames = noisy_frames(7, seed=3)
    write_unit(backend, "u1", frames, "none", chunk_frames)
    reader = backend.open_frames_unit("u1")
    try:
        assert reader._offsets is not None and bool((reader._offsets >= 0).all())  # every chunk mapped
        mapped = read_all(reader)
        reader._offsets = None  # the read_direct_chunk path, as for a file whose offsets are unknown
        direct = read_all(reader)
    finally:
        reader.close()
    assert np.array_equal(mapped, np.stack(frames)) and np.array_equal(direct, np.stack(frames))
    with h5py.File(tmp_path / "out" / "frames" / "u1.h5", "r") as f:  # plain h5py agrees
        assert np.array_equal(f["frames"][:], np.stack(frames))


@pytest.mark.parametrize("first_touch", ["populate", "pread", "fault"])
@pytest.mark.parametrize("chunk_frames", [1, 3])
def test_hdf5_first_touch_of_the_map_reads_the_same_frames_and_never_shares_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_touch: str, chunk_frames: int
) -> None:
    """However a chunk's first read in a process meets the map, every read, first or later,
    gives the stored frames in the caller's buffer, and a frame the caller holds is never written again."""
    from vidlabel.store import _hdf5_frames

    monkeypatch.setattr(_hdf5_frames, "FIRST_TOUCH", first_touch)
    backend = backend_for(tmp_path / "out", "hdf5")
    backend.mark_incomplete({"format": "vidlabel-store"})
    frames = noisy_frames(7, seed=5)
    write_unit(backend, "u1", frames, "none", chunk_frames)
    reader = backend.open_frames_unit("u1")
    try:
        assert reader._first_touch == first_touch and reader._offsets is not None
        held = []
        for c in [1, 0, 1, 2, 0, 2, 1]:  # first reads and repeats, interleaved
            out = reader.read_chunk(c)
            rows = reader.chunk_rows(c)
            assert np.array_equal(out[:rows], np.stack(frames[c * chunk_frames : c * chunk_frames + rows]))
            assert out.flags.writeable and not np.shares_memory(out, reader._mapped)
            held.append((c, out, out.copy()))
        assert all(reader._touched[:3]) and not any(reader._touched[3:])
        for _, out, copy in held:  # later reads never wrote into buffers handed out earlier
            assert np.array_equal(out, copy)
        c, out, copy = held[0]
        out[:] = 0  # and changing a held frame does not change the store
        assert np.array_equal(reader.read_chunk(c), copy)
    finally:
        reader.close()
    assert reader._fd == -1
