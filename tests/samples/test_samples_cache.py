"""FrameSamples(cache=...): frames from a frame store when it holds them for the same file, else from the video."""

from __future__ import annotations

import pickle
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.media import ClipTruth, decode_all, encode_clip, object_box, read_frame_number
from tests.store.test_store_faults import damage
from vidlabel import Dataset, FrameReader, FrameSamples, Release, probe
from vidlabel.cli import main
from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    SampleIndexTypeError,
    StoreCorruptError,
    StoreError,
    VideoChangedError,
    VideoNotFoundError,
    VidlabelWarning,
)
from vidlabel.export._run import cache, export
from vidlabel.samples._samples import StoreBackedReader
from vidlabel.store import open_store

W, H = 64, 48


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A one-clip dataset (24 frames, boxes on 0..9 only, a "top" view) and a lossless cache of frames 0..9."""
    root = tmp_path_factory.mktemp("samples_cache")
    clip = encode_clip(root / "clip.mp4", n_frames=24, width=W, height=H, gop=6)
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object"])
    ds.add_view("top", crop=(0, 0, 64, 40))
    ds.add_video(probe(clip.path, video_id="clip"))
    ds.add_annotations(
        [{"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, W, H)} for f in range(10)]
        + [{"kind": "box", "label": "object", "start_frame": 4, "box": object_box(4, W, H), "view_id": "top"}],
        "clip",
        clip=True,
    )
    ds.build()
    cache(ds, root / "frames", codec="none", progress=False)
    return root / "ds", root / "frames", clip.path


def test_cached_frames_equal_decoded_frames(cached: tuple[Path, Path, Path]) -> None:
    ds_path, store, video = cached
    samples = FrameSamples(Dataset.open(ds_path), cache=store, frames="all")
    truth = decode_all(video)
    with samples.reader("clip") as reader:
        assert isinstance(reader, StoreBackedReader)
        assert (reader.width, reader.height, reader.frame_count) == (W, H, 24)
        for n, image in reader.iter_frames([20, 3, 9, 10, 3, 0]):  # cached and uncached mixed
            assert np.array_equal(image, truth[n])
        order = [n for n, _ in reader.iter_frames([20, 3, 9, 10, 0])]
        assert order == [0, 3, 9, 10, 20]
        assert [read_frame_number(i) for i in reader.read_many([12, 2, 12, 7])] == [12, 2, 12, 7]
        assert read_frame_number(reader.read(23)) == 23
    assert samples.describe()["options"]["cache"] == str(store)


def test_cached_frames_do_not_need_the_video(cached: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ds_path, store, video = cached
    ds_copy = tmp_path / "ds"
    shutil.copytree(ds_path, ds_copy)
    hidden = video.with_suffix(".hidden")
    video.rename(hidden)
    try:
        samples = FrameSamples(Dataset.open(ds_copy), cache=store)
        assert samples.index == [("clip", f) for f in range(10)]
        with samples.reader("clip") as reader:
            for n, image in reader.iter_frames(range(10)):
                s = samples.sample("clip", n, image)
                assert read_frame_number(s["image"]) == n and s["boxes"][0].tolist() == list(object_box(n, W, H))
            with pytest.raises(VideoNotFoundError, match="clip"):
                reader.read(15)  # not cached: falls back to the (missing) video
    finally:
        hidden.rename(video)


@pytest.mark.parametrize("frame", [5.7, np.float64(5.2), "5", True, np.bool_(True)])
def test_a_cached_reader_refuses_a_frame_that_is_not_an_integer(cached: tuple[Path, Path, Path], frame: object) -> None:
    # frame 5 is cached: a non-integer frame must not be rounded or parsed to it (FrameReader refuses it too)
    ds_path, store, _ = cached
    samples = FrameSamples(Dataset.open(ds_path), cache=store)
    with samples.reader("clip") as reader:
        assert isinstance(reader, StoreBackedReader)
        with pytest.raises(
            SampleIndexTypeError, match=r"frame numbers must be integers, got .* video 'clip'.*\[0, 24\)"
        ):
            reader.read(frame)  # type: ignore[arg-type]
        with pytest.raises(SampleIndexTypeError, match="video 'clip'"):
            reader.read_many([3, frame])  # type: ignore[list-item]
        with pytest.raises(SampleIndexTypeError, match="video 'clip'"):
            list(reader.iter_frames([frame]))  # type: ignore[list-item]
        with pytest.raises(FrameOutOfRangeError, match=r"frame 24 out of range \[0, 24\) in video 'clip'"):
            reader.read(24)
        assert read_frame_number(reader.read(np.int64(5))) == 5


def test_a_cached_reader_refuses_one_frame_where_a_list_is_due_as_the_video_reader_does(
    cached: tuple[Path, Path, Path],
) -> None:
    ds_path, store, _ = cached
    for cache_path in (store, None):  # was a raw "TypeError: 'int' object is not iterable" from the cache's reader
        with FrameSamples(Dataset.open(ds_path), cache=cache_path).reader("clip") as reader:
            for call in (reader.read_many, lambda f: list(reader.iter_frames(f))):
                with pytest.raises(
                    SampleIndexTypeError,
                    match=r"(read_many|iter_frames) takes a sequence of frame numbers, got 5 for video 'clip' "
                    r"\(for one frame: read\(5\)\)",
                ):
                    call(5)


def test_cache_serves_views(cached: tuple[Path, Path, Path]) -> None:
    ds_path, store, video = cached
    samples = FrameSamples(Dataset.open(ds_path), cache=store, view_id="top")
    assert samples.index == [("clip", 4)]
    with samples.reader("clip") as reader:
        image = reader.read(4)
    assert image.shape == (40, 64, 3) and np.array_equal(image, decode_all(video)[4][:40])


def test_cache_ignored_for_another_file(cached: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ds_path, store, video = cached
    ds_copy = tmp_path / "ds"
    shutil.copytree(ds_path, ds_copy)
    ds = Dataset.open(ds_copy)
    other = encode_clip(tmp_path / "clip.mp4", n_frames=24, width=W, height=H, gop=4)  # re-encoded: other bytes
    ds.update_video(probe(other.path, video_id="clip"))
    assert ds.video("clip").content_hash != probe(video).content_hash
    samples = FrameSamples(ds, release=None, cache=store)
    with samples.reader("clip") as reader:
        assert isinstance(reader, FrameReader) and reader.path == other.path
        assert read_frame_number(reader.read(5)) == 5


def test_a_cache_is_never_written_over_a_store_with_labels(
    cached: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds_path, _, _ = cached
    ds = Dataset.open(ds_path)
    store = tmp_path / "store"
    export(ds, store, codec="none", progress=False)
    before = open_store(store)
    boxes = before.sample(4)["boxes"].tolist()
    assert not before.frames_only and boxes == [list(object_box(4, W, H))] * 2  # the frame's box and the view's
    with pytest.raises(StoreError, match=r"holds a frame store with labels \(release r\w+, 1 videos.*--overwrite"):
        cache(ds, store, codec="none", progress=False)
    assert main(["cache", str(ds_path), str(store), "--no-progress"]) == 1
    assert "holds a frame store with labels" in capsys.readouterr().err
    kept = open_store(store)  # refused before anything was written
    assert not kept.frames_only and kept.sample(4)["boxes"].tolist() == boxes
    cache(ds, tmp_path / "frames", codec="none", progress=False)
    cache(ds, tmp_path / "frames", codec="none", progress=False)  # a cache over a cache: as before
    cache(ds, store, codec="none", progress=False, overwrite=True)  # asked for: replaced
    assert open_store(store).frames_only


def _cached_one_box(tmp_path: Path, *, n_frames: int, gop: int, frame: int) -> tuple[ClipTruth, Dataset, Release]:
    """A clip with one box on ``frame``, its dataset with one release, and that release's cache at tmp_path/frames."""
    clip = encode_clip(tmp_path / "clip.mp4", n_frames=n_frames, width=W, height=H, gop=gop)
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["object"])
    ds.add_video(probe(clip.path, video_id="clip"))
    ds.add_annotations([{"kind": "box", "label": "object", "start_frame": frame, "box": object_box(frame, W, H)}],
                       "clip")  # fmt: skip
    release, _ = ds.build()
    cache(ds, tmp_path / "frames", codec="none", progress=False)
    return clip, ds, release


def test_a_frame_the_cache_lacks_of_a_re_registered_video_says_to_build_a_new_release(tmp_path: Path) -> None:
    # the file was re-encoded in place and re-registered after the release was built: the remedy is a new
    # release (as FrameSamples says without a cache), not another re-registration
    clip, ds, release = _cached_one_box(tmp_path, n_frames=12, gop=6, frame=2)
    encode_clip(clip.path, n_frames=12, width=W, height=H, gop=4)  # other bytes, same path
    ds.update_video(probe(clip.path, video_id="clip"))
    for store in (None, tmp_path / "frames"):
        samples = FrameSamples(ds, release=release.release_id, cache=store)
        if store is not None:
            with samples.reader("clip") as reader:
                assert read_frame_number(reader.read(2)) == 2  # the release's own frame, from the cache
        with pytest.raises(
            VideoChangedError,
            match=rf"release {release.release_id} pins video 'clip'.*re-registered since.*build a new release",
        ):
            with samples.reader("clip") as reader:
                reader.read(7)  # not cached: from the file, which is no longer the release's


def test_a_cache_rebuilt_or_removed_while_in_use_still_gives_the_release_s_frames(tmp_path: Path) -> None:
    # "The cache is derived data: it ... can be deleted and rebuilt any time" (spec, "Making random access fast")
    a = encode_clip(tmp_path / "a.mp4", n_frames=12, width=W, height=H, gop=6)
    b = encode_clip(tmp_path / "b.mp4", n_frames=12, width=W, height=H, gop=6)
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["object"])
    for clip, vid in ((a, "a"), (b, "b")):
        ds.add_video(probe(clip.path, video_id=vid))
        rows = [{"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, W, H)} for f in range(6)]
        ds.add_annotations(rows, vid)
    first, _ = ds.build()
    frames = tmp_path / "frames"
    cache(ds, frames, codec="none", progress=False)
    samples = FrameSamples(ds, release=first.release_id, cache=frames)
    held = [samples.reader("a"), samples.reader("b")]  # readers held across the rebuild (as VideoFrames does)
    assert all(isinstance(r, StoreBackedReader) for r in held)
    # "b" is re-registered with another file (its frame n shows n + 100), a label added (every video's stored
    # labels change), and the cache rebuilt for that release
    moved = encode_clip(tmp_path / "b2.mp4", n_frames=112, width=W, height=H, gop=6, pts=list(range(-100, 12)))
    assert moved.frame_count == 12 and moved.number(3) == 103
    ds.update_video(probe(moved.path, video_id="b"))
    ds.add_labels(["more"])
    ds.build()
    cache(ds, frames, codec="none", progress=False)
    assert read_frame_number(held[1].read(3)) == 3  # the first release's "b" is no longer in the cache: its file
    assert read_frame_number(held[0].read(4)) == 4  # "a" is: from the cache opened again
    with samples.reader("b") as reader:
        assert [read_frame_number(i) for i in reader.read_many([3, 4, 9])] == [3, 4, 9]
    with samples.reader("a") as reader:
        assert isinstance(reader, StoreBackedReader) and read_frame_number(reader.read(5)) == 5
    assert sorted(read_frame_number(s["image"]) for s in samples.iter_plan(samples.plan_reads([6, 2], seed=0))) == [
        0,
        2,
    ]
    for reader in held:
        reader.close()
    shutil.rmtree(frames)  # deleted
    with warnings.catch_warnings():  # files this process holds open may still be read (where the system allows)
        warnings.simplefilter("ignore", VidlabelWarning)
        with samples.reader("a") as reader:
            assert [read_frame_number(i) for i in reader.read_many([0, 5, 11])] == [0, 5, 11]
    again = pickle.loads(pickle.dumps(samples))  # as a DataLoader worker gets it: opens the cache anew
    with pytest.warns(VidlabelWarning, match=rf"frame cache {re.escape(repr(str(frames)))} cannot be read now") as said:
        with again.reader("a") as reader:  # said once, then every frame from the videos
            assert [read_frame_number(i) for i in reader.read_many([0, 5, 11])] == [0, 5, 11]
        with again.reader("b") as reader:
            assert read_frame_number(reader.read(2)) == 2
    assert len(said) == 1
    with pytest.raises(StoreError, match="no vidlabel frame store"):
        FrameSamples(ds, release=first.release_id, cache=frames)  # a new one still fails early on a wrong path


def test_a_cache_damaged_after_it_was_opened_is_refused_not_read_around(tmp_path: Path) -> None:
    _, ds, _ = _cached_one_box(tmp_path, n_frames=8, gop=4, frame=3)
    samples = FrameSamples(ds, cache=tmp_path / "frames")
    damage(tmp_path / "frames", "clip", 0)  # a byte of the one stored frame, after the cache was opened
    with samples.reader("clip") as reader:
        with pytest.raises(StoreCorruptError, match="CRC-32C"):
            reader.read(3)


def test_a_cache_that_is_no_store_says_how_to_build_one(cached: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ds_path, _, _ = cached
    ds = Dataset.open(ds_path)
    release = ds.release("latest").release_id
    for where in (tmp_path / "missing", ds_path):  # no folder; a folder that is no store (the dataset itself)
        with pytest.raises(
            StoreError, match=re.escape(f"cache={str(where)!r} is not a frame cache: no vidlabel frame store at")
        ) as got:
            FrameSamples(ds, cache=where)
        assert f"Build one with `vidlabel cache {ds_path} {where} --release {release}`" in str(got.value)
        assert "leave out cache= to read every frame from the videos" in str(got.value)


@pytest.mark.parametrize("bad", ["", True, 123, ["frames"], b"frames"])
def test_a_cache_that_is_no_path_is_refused(cached: tuple[Path, Path, Path], bad: object) -> None:
    # str() of these named a folder 'True', '123', "['frames']", "b'frames'", or '' the current folder
    with pytest.raises(OptionError, match=r"cache must be the folder or URL of a frame cache .* or None, got "):
        FrameSamples(Dataset.open(cached[0]), cache=bad)  # type: ignore[arg-type]


def test_a_cache_of_another_dataset_is_not_replaced_and_the_refusal_names_vidlabel_cache(
    cached: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds_path, _, video = cached
    store = tmp_path / "frames"
    cache(Dataset.open(ds_path), store, codec="none", progress=False)
    other = Dataset.create(tmp_path / "other")  # another dataset of the same video
    other.add_labels(["object"])
    other.add_video(probe(video, video_id="clip"))
    other.add_annotations([{"kind": "box", "label": "object", "start_frame": 1, "box": object_box(1, W, H)}], "clip")
    other.build()
    held = open_store(store).attrs["created"]
    assert main(["cache", str(other.path), str(store), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"{str(store)!r} holds a frame store exported from dataset {str(ds_path)!r}" in err
    assert "not from this frame cache's dataset" in err
    assert "Write the cache to another folder, or pass overwrite=True (`vidlabel cache ... --overwrite`)" in err
    assert "vidlabel export" not in err and open_store(store).attrs["created"] == held  # not replaced
