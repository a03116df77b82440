"""A store of many short videos: every frame and box read right from the root's video table, no per-video HDF5
file opened on a video's first read; a video whose file changed since export is read from its file; a table
that does not fit together, or whose arrays were edited, is refused."""

from __future__ import annotations

import os
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import h5py
import numpy as np
import pytest

from tests.media import BLOCK, frame_image, read_frame_number
from tests.store_support import make_dataset
from vidlabel import Dataset, export, open_store, probe
from vidlabel.errors import SchemaVersionError, StoreCorruptError
from vidlabel.store import _hdf5, _hdf5_files, _hdf5_frames, _hdf5_table, verify_store

VIDEOS, FRAMES, W, H = 200, 3, 64, 48
SMALL = ("cam", "cam2", "cam3")
VIDEO_BITS = 8  # one row of 8 blocks at the bottom: video numbers up to 255


def clip_image(video: int, n: int) -> np.ndarray:
    """Frame ``n`` of video ``video``: the frame number in the top blocks, the video number in the bottom row."""
    img = frame_image(n, W, H)
    for k in range(VIDEO_BITS):
        img[H - BLOCK :, k * BLOCK : (k + 1) * BLOCK] = 255 if (video >> k) & 1 else 0
    return img


def read_video_number(image: np.ndarray) -> int:
    gray = np.asarray(image, np.float32).mean(axis=2)
    row = gray[H - BLOCK + 2 : H - 2]
    return sum(1 << k for k in range(VIDEO_BITS) if row[:, k * BLOCK + 2 : (k + 1) * BLOCK - 2].mean() > 128)


def encode(path: Path, video: int) -> None:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(30))
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.options = {"crf": "12", "preset": "veryfast", "bf": "0", "g": str(FRAMES)}
        for n in range(FRAMES):
            frame = av.VideoFrame.from_ndarray(clip_image(video, n), format="rgb24")
            frame.pts = n
            out.mux(stream.encode(frame))
        out.mux(stream.encode())


def box_of(video: int, n: int) -> tuple[float, float, float, float]:
    """The box drawn from video and frame numbers, the truth every sample's box is checked against."""
    x = float((video + n) % 40)
    return (x, 2.0, x + 10.0, 12.0 + n)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of :data:`VIDEOS` clips of :data:`FRAMES` frames, each frame boxed; exported once."""
    root = tmp_path_factory.mktemp("many")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["thing"])
    for v in range(VIDEOS):
        encode(root / f"v{v:03d}.mp4", v)
        ds.add_video(probe(root / f"v{v:03d}.mp4", video_id=f"v{v:03d}"))
        rows = [{"kind": "box", "label": "thing", "start_frame": n, "box": box_of(v, n)} for n in range(FRAMES)]
        ds.add_annotations(rows, f"v{v:03d}")
    ds.build()
    export(ds, root / "store", frames="all", codec="none", progress=False)
    return root / "store"


@pytest.fixture
def file_opens(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every store file opened with HDF5 (``_open_inside``), as (what, file name)."""
    opened: list[tuple[str, str]] = []
    real = _hdf5_files._open_inside

    def counting(root: Path, path: Path, what: str) -> Any:
        opened.append((what, Path(path).name))
        return real(root, path, what)

    for module in (_hdf5, _hdf5_files, _hdf5_frames, _hdf5_table):
        if hasattr(module, "_open_inside"):
            monkeypatch.setattr(module, "_open_inside", counting)
    return opened


def check_every_sample(store: Any) -> None:
    assert len(store) == VIDEOS * FRAMES
    for i in range(len(store)):
        video_id, row = store.locate(i)
        v, n = int(video_id[1:]), int(store.video_data(video_id).frame_number[row])
        image = store.frame(i)
        assert (read_video_number(image), read_frame_number(image)) == (v, n), f"sample {i}"
        sample = store.sample(i)
        np.testing.assert_allclose(sample["boxes"], [box_of(v, n)])


@pytest.mark.slow
def test_every_frame_and_box_of_many_videos_reads_right(many: Path, file_opens: list[tuple[str, str]]) -> None:
    store = open_store(many)
    file_opens.clear()
    check_every_sample(store)
    # every video's arrays and frames index came from the root's table: no video or frames file opened with HDF5
    assert [what for what, _ in file_opens if what in ("video file", "frames file")] == []
    store.close()


@pytest.mark.slow
def test_a_store_without_the_table_reads_the_same(
    many: Path, tmp_path: Path, file_opens: list[tuple[str, str]]
) -> None:
    path = Path(shutil.copytree(many, tmp_path / "store"))
    with h5py.File(path / "store.h5", "r+") as f:
        del f["table"]
        f.attrs["format_version"] = "1"
    store = open_store(path)
    check_every_sample(store)
    assert sum(what == "video file" for what, _ in file_opens) == VIDEOS
    store.close()


@pytest.fixture(scope="module")
def small_ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return make_dataset(tmp_path_factory.mktemp("small"), videos=SMALL, n_frames=6)


@pytest.fixture
def small(small_ds: Dataset, tmp_path: Path) -> Path:
    """A store of :data:`SMALL` exported for one test (the files its table describes are its own)."""
    export(small_ds, tmp_path / "store", frames="all", codec="none", progress=False)
    return tmp_path / "store"


def frames_of(store: Any) -> list[np.ndarray]:
    return [store.frame(i) for i in range(len(store))]


def test_a_video_file_changed_since_export_is_read_from_the_file(
    small: Path, file_opens: list[tuple[str, str]]
) -> None:
    want = frames_of(open_store(small))
    video_file = small / "videos" / "cam2.h5"
    stat = video_file.stat()
    os.utime(video_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    store = open_store(small)
    file_opens.clear()
    got = frames_of(store)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert [name for what, name in file_opens if what == "video file"] == ["cam2.h5"]
    store.close()


def edit_table(path: Path, name: str, edit: Any) -> None:
    with h5py.File(path / "store.h5", "r+") as f:
        arr = f["table"][name][()]
        del f["table"][name]
        f["table"][name] = edit(arr)


def test_a_table_whose_offsets_do_not_fit_is_refused(small: Path) -> None:
    edit_table(small, "offsets", lambda a: a[:-1])
    store = open_store(small)
    with pytest.raises(StoreCorruptError, match=r"the video table of .*store\.h5': its offsets have shape \(3, "):
        store.frame(0)


def test_a_table_whose_boxes_were_edited_is_refused(small: Path) -> None:
    def moved(boxes: np.ndarray) -> np.ndarray:
        boxes[:, 0] += 1
        return boxes

    edit_table(small, "regions/bbox_xyxy", moved)
    store = open_store(small)
    with pytest.raises(StoreCorruptError, match=r"video 'cam' of store .*differ from those exported \(labels_key\)"):
        store.sample(0)


def test_verify_says_a_table_that_differs_from_a_video_file(small: Path) -> None:
    assert verify_store(small)["problems"] == []

    def moved(boxes: np.ndarray) -> np.ndarray:
        boxes[0, 0] += 1
        return boxes

    edit_table(small, "regions/bbox_xyxy", moved)
    problems = verify_store(small)["problems"]
    assert len(problems) == 1
    assert problems[0].startswith(f"{small}: video 'cam': the root's video table differs from its file (attributes")


def test_a_reader_of_version_2_refuses_a_store_with_the_table_by_its_version(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vidlabel.store._discovery as discovery

    assert open_store(small).attrs["format_version"] == 3
    monkeypatch.setattr(discovery, "FORMAT_VERSION", 2)
    with pytest.raises(SchemaVersionError, match=r"has format version 3; this vidlabel reads up to 2"):
        open_store(small)
