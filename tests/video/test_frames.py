"""FrameReader: frame N is the N-th displayed frame, however it is asked for.

The truth is independent of the reader: pixels encode the frame number, and
plain sequential PyAV decoding (tests/media.py) gives the reference pictures.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import shutil
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.media import ClipTruth, decode_all, decode_tolerant, displayed_number, encode_clip
from vidlabel.errors import FrameOutOfRangeError, VideoDecodeError, VideoNotFoundError, VidlabelWarning
from vidlabel.geometry import view_image
from vidlabel.spec import FrameIndex, VideoMetadata, View
from vidlabel.video._cached import CachedReader
from vidlabel.video._probe import probe, read_frame_index
from vidlabel.video._reader import FrameReader, resolve_video_path


@functools.cache
def _meta(path: Path) -> VideoMetadata:
    return probe(path)


_REFERENCES: dict[Path, tuple[np.ndarray | None, ...]] = {}


def reference(truth: ClipTruth) -> tuple[np.ndarray | None, ...]:
    """Displayed pictures of every frame from plain sequential decoding; None where none can be trusted."""
    if truth.path not in _REFERENCES:
        _REFERENCES[truth.path] = _reference(truth)
    return _REFERENCES[truth.path]


def _reference(truth: ClipTruth) -> tuple[np.ndarray | None, ...]:
    if "untrusted" in truth.extra:  # corrupt: the intact clip it was made from is the reference
        coded: list[np.ndarray | None] = list(
            decode_all(truth.path.with_name("whole_for_corruption.mp4"))  # type: ignore[arg-type]
        )
        for n in truth.extra["untrusted"]:
            coded[n] = None
    elif "claimed_frames" in truth.extra:  # truncated: what decodes
        coded = [image for _, image in decode_tolerant(truth.path)[0]]
    else:
        coded = list(decode_all(truth.path))  # type: ignore[arg-type]
    assert len(coded) == truth.frame_count
    k = truth.rotation // 90
    return tuple(None if c is None else np.ascontiguousarray(np.rot90(c, k=k)) if k else c for c in coded)


def check_frame(truth: ClipTruth, reader: FrameReader, n: int, image: np.ndarray) -> None:
    expected = reference(truth)[n]
    assert expected is not None, f"frame {n} should not have been returned"
    assert image.dtype == np.uint8 and image.shape == (truth.height, truth.width, 3)
    assert displayed_number(image, truth.rotation) == truth.number(n)
    assert np.array_equal(image, expected)


def read_checked(truth: ClipTruth, reader: FrameReader, n: int) -> None:
    if reference(truth)[n] is None:
        with pytest.raises(VideoDecodeError, match=rf"cannot read frame {n} of video"):
            reader.read(n)
    else:
        check_frame(truth, reader, n, reader.read(n))


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_random_reads_and_read_many_equal_sequential_decode(any_clip: ClipTruth, data: st.DataObject) -> None:
    truth = any_clip
    n = truth.frame_count
    order = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=40), label="order")
    use_index = data.draw(st.booleans(), label="use_index")
    index = _meta(truth.path).frame_index if use_index else None
    with FrameReader(truth.path, index=index) as reader:
        assert reader.frame_count == truth.frame_count
        for t in order:
            read_checked(truth, reader, t)
        good = [t for t in order if reference(truth)[t] is not None]
        for t, image in zip(good, reader.read_many(good), strict=True):
            check_frame(truth, reader, t, image)


@pytest.mark.parametrize("frame_threads", [0, 2])
def test_every_frame_in_random_order(any_clip: ClipTruth, frame_threads: int) -> None:
    order = np.random.default_rng(7).permutation(any_clip.frame_count).tolist()
    with FrameReader.for_video(_meta(any_clip.path), frame_threads=frame_threads) as reader:
        for t in order:
            read_checked(any_clip, reader, t)
        good = [t for t in order if reference(any_clip)[t] is not None]
        for t, image in zip(good, reader.read_many(good), strict=True):
            check_frame(any_clip, reader, t, image)


@pytest.mark.parametrize("frame_threads", [0, 2])
def test_iter_frames_gives_every_frame_once(any_clip: ClipTruth, frame_threads: int) -> None:
    with FrameReader(any_clip.path, on_corrupt="skip", frame_threads=frame_threads) as reader:
        ctx = pytest.warns(VidlabelWarning, match="skipping frames") if "untrusted" in any_clip.extra else None
        if ctx is not None:
            with ctx:
                got = list(reader.iter_frames())
        else:
            got = list(reader.iter_frames())
        expected = [n for n in range(any_clip.frame_count) if reference(any_clip)[n] is not None]
        assert [n for n, _ in got] == expected
        for n, image in got:
            check_frame(any_clip, reader, n, image)
        assert reader.skipped == sorted(set(range(any_clip.frame_count)) - set(expected))


def test_iter_frames_never_writes_into_a_frame_the_caller_holds(clip_bframes: ClipTruth) -> None:
    with FrameReader(clip_bframes.path) as reader:
        frames = reader.iter_frames()
        n0, held = next(frames)
        kept = held.copy()
        rest = list(frames)
    assert n0 == 0 and len(rest) == clip_bframes.frame_count - 1
    assert np.array_equal(held, kept) and np.array_equal(held, reference(clip_bframes)[0])
    images = [held] + [image for _, image in rest]
    assert not any(np.shares_memory(a, b) for a, b in itertools.pairwise(images))
    assert not any(np.shares_memory(held, image) for image in images[1:])
    for n, image in rest:
        check_frame(clip_bframes, reader, n, image)
    with FrameReader(clip_bframes.path) as reader:
        batch = reader.read_many([3, 1, 2, 1])
    assert [displayed_number(image) for image in batch] == [3, 1, 2, 1]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(batch) for b in batch[i + 1 :])


def test_reads_between_iter_frames_steps_stay_exact(clip_long_gop: ClipTruth) -> None:
    # The caller may read other frames (another converter is used meanwhile) and stop early.
    with FrameReader.for_video(_meta(clip_long_gop.path)) as reader:
        for n, image in reader.iter_frames(range(0, 40, 3)):
            check_frame(clip_long_gop, reader, n, image)
            other = clip_long_gop.frame_count - 1 - n
            check_frame(clip_long_gop, reader, other, reader.read(other))
            if n >= 30:
                break
        got = dict(reader.iter_frames([5, 6, 7]))
        assert sorted(got) == [5, 6, 7]
        for n, image in got.items():
            check_frame(clip_long_gop, reader, n, image)


def _iterated_in_child(reader: FrameReader, queue: Any) -> None:
    queue.put([displayed_number(image) for _, image in reader.iter_frames(range(5, 12))])
    reader.close()


def test_iter_frames_in_a_forked_child_after_the_parent_iterated(clip: ClipTruth) -> None:
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    with FrameReader(clip.path) as reader:
        assert [n for n, _ in reader.iter_frames(range(3))] == [0, 1, 2]
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        # The child inherits the reader's converter pool, whose thread stayed in the parent.
        child = ctx.Process(target=_iterated_in_child, args=(reader, queue))
        child.start()
        child.join(timeout=120)
        assert child.exitcode == 0
        assert queue.get(timeout=5) == list(range(5, 12))
        assert [displayed_number(image) for _, image in reader.iter_frames([20, 21])] == [20, 21]


def test_sequential_reading_never_seeks_and_decodes_each_frame_once(clip_long_gop: ClipTruth) -> None:
    with FrameReader(clip_long_gop.path, index=_meta(clip_long_gop.path).frame_index) as reader:
        frames = list(reader.iter_frames())
        assert len(frames) == 300
        assert reader.stats["seeks"] == 0 and reader.stats["rewinds"] == 0
        assert reader.stats["decoded"] == 300 and reader.stats["converted"] == 300


def test_reading_on_inside_an_interval_does_not_seek(clip_long_gop: ClipTruth) -> None:
    with FrameReader(clip_long_gop.path, index=_meta(clip_long_gop.path).frame_index) as reader:
        reader.read(100)
        decoded = reader.stats["decoded"]
        reader.read(180)  # same keyframe interval, ahead: read on
        assert reader.stats["seeks"] == 0 and reader.stats["rewinds"] == 0
        assert reader.stats["decoded"] - decoded == 80
        reader.read(260)  # keyframe 250 is much nearer than reading on: seek
        assert reader.stats["seeks"] == 1
        reader.read(120)  # behind: back to the start of the file (frame 0 is the only earlier keyframe)
        assert reader.stats["rewinds"] == 1


def test_read_many_decodes_each_interval_once(clip_long_gop: ClipTruth) -> None:
    frames = [299, 10, 260, 200, 5, 251, 10, 120]
    index = _meta(clip_long_gop.path).frame_index
    with FrameReader(clip_long_gop.path, index=index) as batch:
        images = batch.read_many(frames)
        # Frames 0..200 once, then a seek to keyframe 250 and 250..299: 201..249 are never decoded.
        assert batch.stats["decoded"] == 201 + 50 and batch.stats["seeks"] == 1
        assert batch.stats["converted"] == len(set(frames))
    with FrameReader(clip_long_gop.path, index=index) as single:
        for t in frames:
            single.read(t)
        # One at a time goes back to the start for 10, 200, 5 and 10 again.
        assert single.stats["decoded"] > batch.stats["decoded"] + 150
    for t, image in zip(frames, images, strict=True):
        check_frame(clip_long_gop, batch, t, image)
    assert images[1] is not images[6] and np.array_equal(images[1], images[6])  # a repeat is its own array


def test_slice_iteration_and_len(clip: ClipTruth) -> None:
    with FrameReader(clip.path) as reader:
        assert len(reader) == 48
        part = reader[10:20:3]
        assert [displayed_number(im) for im in part] == [10, 13, 16, 19]
        assert displayed_number(reader[5]) == 5
        assert sum(1 for _ in reader) == 48
        assert [n for n, _ in reader.iter_frames(range(40, 48))] == list(range(40, 48))
        assert reader.read_many([]) == [] and list(reader.iter_frames([])) == []


def test_rotation_follows_the_display_matrix(clip_rot90: ClipTruth, clip_rot270: ClipTruth) -> None:
    coded = decode_all(clip_rot90.path)
    with FrameReader(clip_rot90.path) as reader:
        assert (reader.width, reader.height, reader.rotation) == (48, 64, 90)
        image = reader.read(3)
        assert image.shape == (64, 48, 3)
        assert np.array_equal(image, np.rot90(coded[3], k=1))
        # The number blocks start at the coded top-left; rotated 90 counter-clockwise they are at the bottom-left.
        assert image[-1, 0].tolist() == coded[3][0, 0].tolist()
    with FrameReader(clip_rot270.path) as reader:
        assert reader.rotation == -90
        image = reader.read(5)
        assert np.array_equal(image, np.rot90(decode_all(clip_rot270.path)[5], k=-1))  # as cases/truth.json B6
        assert image[0, -1].tolist() == decode_all(clip_rot270.path)[5][0, 0].tolist()


def test_view_crops_and_resizes(clip: ClipTruth) -> None:
    view = View("top", crop=(0, 0, 32, 24), output_size=(16, 12))
    ref = decode_all(clip.path)
    with FrameReader(clip.path, view=view) as reader:
        assert (reader.width, reader.height) == (16, 12)
        assert np.array_equal(reader.read(7), view_image(ref[7], view))
        assert all(im.shape == (12, 16, 3) for im in reader.read_many([1, 2]))


def test_corrupt_frames_raise_by_default(clip_corrupt: ClipTruth) -> None:
    with FrameReader(clip_corrupt.path) as reader:
        with pytest.raises(VideoDecodeError, match=r"frame 16 of video 'corrupt'.*lost to a decode error"):
            reader.read(16)
        with pytest.raises(VideoDecodeError, match=r"frame 20 of video 'corrupt'.*follows a decode error"):
            reader.read(20)
        with pytest.raises(VideoDecodeError, match=r"frame 23"):
            reader.read_many([2, 23])
        with pytest.raises(VideoDecodeError, match=r"frame 15"):
            list(reader.iter_frames(range(10, 30)))
        check_frame(clip_corrupt, reader, 24, reader.read(24))  # the next keyframe: exact, not renumbered
        check_frame(clip_corrupt, reader, 14, reader.read(14))


def test_corrupt_frames_skipped_on_request(clip_corrupt: ClipTruth) -> None:
    with FrameReader(clip_corrupt.path, on_corrupt="skip") as reader:
        with pytest.warns(VidlabelWarning, match=r"skipping frames that cannot be trusted, first frame 15"):
            got = [n for n, _ in reader.iter_frames(range(10, 30))]
        assert got == [10, 11, 12, 13, 14, *range(24, 30)]
        assert reader.skipped == list(range(15, 24))
        with pytest.raises(VideoDecodeError, match="frame 17"):
            reader.read(17)


def test_truncated_file_reads_its_prefix(clip_truncated: ClipTruth) -> None:
    n = clip_truncated.frame_count
    with FrameReader(clip_truncated.path) as reader:
        assert reader.frame_count == n
        check_frame(clip_truncated, reader, n - 1, reader.read(n - 1))
        with pytest.raises(FrameOutOfRangeError, match=rf"frame {n} out of range \[0, {n}\) in video 'truncated'"):
            reader.read(n)


def test_stale_demux_index_of_a_truncated_file_raises_at_the_end(clip_truncated: ClipTruth) -> None:
    # An index claiming more frames than decode (e.g. built before the file was cut, then re-hashed).
    index = read_frame_index(clip_truncated.path)
    longer = FrameIndex(
        index.timebase, np.append(index.pts, index.pts[-1] + 512), index.keyframes, "demux", index.content_hash
    )
    with FrameReader(clip_truncated.path, index=longer) as reader:
        with pytest.raises(VideoDecodeError, match=rf"frame {index.frame_count} .*file ends after frame"):
            reader.read(index.frame_count)
        check_frame(clip_truncated, reader, 3, reader.read(3))


def test_out_of_range_and_bad_numbers(clip: ClipTruth) -> None:
    with FrameReader(clip.path, video_id="cam1") as reader:
        with pytest.raises(FrameOutOfRangeError, match=r"frame 48 out of range \[0, 48\) in video 'cam1'"):
            reader.read(48)
        with pytest.raises(FrameOutOfRangeError, match=r"frame -1 out of range \[0, 48\)"):
            reader.read(-1)
        with pytest.raises(FrameOutOfRangeError, match=r"frame 99 out of range"):
            reader.read_many([1, 99])
        with pytest.raises(FrameOutOfRangeError, match=r"frame 50 out of range"):
            list(reader.iter_frames([3, 50]))
        with pytest.raises(TypeError, match=r"frame numbers must be integers, got 1\.5"):
            reader.read(1.5)  # type: ignore[arg-type]
        assert displayed_number(reader.read(np.int64(4))) == 4  # type: ignore[arg-type]


def test_index_for_another_file_is_ignored_with_a_warning(clip: ClipTruth, clip_bframes: ClipTruth) -> None:
    other = _meta(clip_bframes.path).frame_index
    with pytest.warns(VidlabelWarning, match="was read from another file"):
        reader = FrameReader(clip.path, index=other)
    with reader:
        assert reader.frame_count == 48 and not reader.indexed
        read_checked(clip, reader, 30)


def test_index_that_disagrees_is_dropped_and_frames_stay_exact(clip: ClipTruth) -> None:
    index = _meta(clip.path).frame_index
    assert index is not None
    shifted = FrameIndex(index.timebase, index.pts + 1, index.keyframes, "demux", None)  # no hash: not checkable
    with pytest.warns(VidlabelWarning, match="disagrees with the decoder"):
        reader = FrameReader(clip.path, index=shifted)
    with reader:
        for t in (40, 3, 25, 47, 0):
            read_checked(clip, reader, t)


def test_index_with_wrong_keyframes_still_exact(clip: ClipTruth) -> None:
    index = _meta(clip.path).frame_index
    assert index is not None
    wrong = FrameIndex(index.timebase, index.pts, [0, 5, 17, 30], "demux", index.content_hash)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)
        with FrameReader(clip.path, index=wrong) as reader:
            for t in (40, 6, 18, 31, 2):
                read_checked(clip, reader, t)


def test_for_video_with_stale_index_length(clip: ClipTruth) -> None:
    meta = _meta(clip.path).replace(frame_count=47)
    with pytest.warns(VidlabelWarning, match="covers 48 frames but the video has 47"):
        reader = FrameReader.for_video(meta)
    with reader:
        assert reader.video_id == "clip"


def test_without_index_vfr_never_seeks(clip_vfr: ClipTruth) -> None:
    with FrameReader(clip_vfr.path) as reader:
        for t in (25, 2, 29, 11):
            read_checked(clip_vfr, reader, t)
        assert reader.stats["seeks"] == 0
    with FrameReader(clip_vfr.path, index=_meta(clip_vfr.path).frame_index) as reader:
        for t in (25, 2, 29, 11):
            read_checked(clip_vfr, reader, t)
        assert reader.stats["seeks"] >= 1  # with an index, seeking by time is safe


def test_without_index_seeks_after_the_check(clip_long_gop: ClipTruth) -> None:
    with FrameReader(clip_long_gop.path) as reader:
        read_checked(clip_long_gop, reader, 280)
        read_checked(clip_long_gop, reader, 270)
        assert reader.stats["seeks"] >= 2  # the one-off check, then a real seek


def test_permuted_decoder_labels(clip_pts_from_dts: ClipTruth) -> None:
    for index in (_meta(clip_pts_from_dts.path).frame_index, None):
        with FrameReader(clip_pts_from_dts.path, index=index) as reader:
            for t in (39, 0, 21, 7, 12, 38):
                read_checked(clip_pts_from_dts, reader, t)
            assert reader._mode == "label"


def test_edit_list_numbers(clip_editlist: ClipTruth) -> None:
    # What PyAV displays (the edit list hides encoded frames 0..4): displayed frame n shows number n + 5.
    with FrameReader(clip_editlist.path) as reader:
        assert reader.frame_count == 35
        assert displayed_number(reader.read(0)) == 5
        assert displayed_number(reader.read(34)) == 39


def test_resolve_video_path_with_roots(tmp_path: Path, clip: ClipTruth) -> None:
    moved = tmp_path / "new_home" / "cams"
    moved.mkdir(parents=True)
    shutil.copy(clip.path, moved / "clip.mp4")
    meta = _meta(clip.path).replace(sources=[{"uri": "/gone/old_home/cams/clip.mp4"}])
    assert resolve_video_path(meta, roots=[tmp_path / "new_home"]) == moved / "clip.mp4"
    assert resolve_video_path(meta, roots=[moved]) == moved / "clip.mp4"
    with FrameReader.for_video(meta, roots=[tmp_path / "new_home"]) as reader:
        read_checked(clip, reader, 9)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()  # a folder here (one that is not is named: tests/export/test_export.py)
    message = (  # before: "(pass roots=[...], --roots on the command line, to search folders)", with roots passed
        f"file of video 'clip' not found; tried: /gone/old_home/cams/clip.mp4, {elsewhere}/gone/old_home/cams/clip.mp4, "
        f"{elsewhere}/old_home/cams/clip.mp4, {elsewhere}/cams/clip.mp4, {elsewhere}/clip.mp4 (not found under the "
        "roots given either: check the file is there, or pass other roots)"
    )
    with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}$"):
        resolve_video_path(meta, roots=[elsewhere])
    with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}$"):
        FrameReader.for_video(meta, roots=iter([elsewhere]))  # roots as any iterable
    with pytest.raises(VideoNotFoundError, match="has no recorded source path"):
        resolve_video_path(meta.replace(sources=[]))
    file_uri = meta.replace(sources=[{"uri": (moved / "clip.mp4").as_uri()}])
    assert resolve_video_path(file_uri) == moved / "clip.mp4"


def test_a_registered_path_that_is_a_folder_is_named_as_one(tmp_path: Path, clip: ClipTruth) -> None:
    # before: "file of video 'clip' not found; tried: .../cams/clip.mp4", as if nothing were there
    folder = tmp_path / "cams" / "clip.mp4"
    folder.mkdir(parents=True)
    meta = _meta(clip.path).replace(sources=[{"uri": str(folder)}])
    message = (
        rf"^file of video 'clip' not found; tried: {re.escape(str(folder))} \(a folder, not a video file\) "
        r"\(pass roots=\[\.\.\.\], --roots on the command line, to search folders\)$"
    )
    with pytest.raises(VideoNotFoundError, match=message):
        FrameReader.for_video(meta)
    with pytest.raises(VideoNotFoundError, match=message):
        resolve_video_path(meta)
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(clip.path, moved / "clip.mp4")
    with FrameReader.for_video(meta, roots=[moved]) as reader:  # the folder does not stop the search
        assert reader.path == moved / "clip.mp4"
        read_checked(clip, reader, 3)


def test_bad_files_raise_clear_errors(
    tmp_path: Path, audio_only: Path, not_media: Path, empty_file: Path, cut_before_index: Path
) -> None:
    from vidlabel.errors import NoVideoStreamError

    with pytest.raises(NoVideoStreamError, match=r"no video stream in .*audio_only\.mp4"):
        FrameReader(audio_only)
    with pytest.raises(NoVideoStreamError, match=r"cannot open .*not_media\.mp4"):
        FrameReader(not_media)
    with pytest.raises(VideoDecodeError, match=r"empty \(0 bytes\)"):
        FrameReader(empty_file)
    with pytest.raises(NoVideoStreamError, match=r"cut_before_index\.mp4"):
        FrameReader(cut_before_index)
    with pytest.raises(VideoNotFoundError, match=r"missing\.mp4"):
        FrameReader(tmp_path / "missing.mp4")
    with pytest.raises(ValueError, match="on_corrupt must be 'raise' or 'skip', got 'ignore'"):
        FrameReader(audio_only, on_corrupt="ignore")  # type: ignore[arg-type]


def test_closed_reader(clip: ClipTruth) -> None:
    reader = FrameReader(clip.path)
    reader.close()
    reader.close()
    with pytest.raises(VideoDecodeError, match="is closed"):
        reader.read(3)


def test_cached_reader(clip: ClipTruth) -> None:
    with CachedReader(clip.path, capacity=3) as cached:
        assert cached.frame_count == 48 and (cached.width, cached.height) == (64, 48)
        a = cached.read(5)
        b = cached.read(5)
        assert cached.hits == 1 and cached.misses == 1 and a is not b and np.array_equal(a, b)
        a[:] = 0  # the cache keeps its own copy
        assert displayed_number(cached.read(5)) == 5
        images = cached.read_many([6, 5, 7, 6])
        assert [displayed_number(im) for im in images] == [6, 5, 7, 6]
        cached.read(8)  # capacity 3: frame 5 is evicted (6, 7, 8 remain)
        decoded = cached.reader.stats["converted"]
        cached.read(7)
        assert cached.reader.stats["converted"] == decoded
        cached.read(5)
        assert cached.reader.stats["converted"] == decoded + 1
        got = list(cached.iter_frames([9, 7, 8]))
        assert [n for n, _ in got] == [7, 8, 9] and all(displayed_number(im) == n for n, im in got)
        assert len(cached) == 48 and sum(1 for _ in cached) == 48
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        CachedReader(clip.path, capacity=0)


def test_nonreference_frames_are_skipped_on_the_way(clip_bframes: ClipTruth) -> None:
    frames = [50, 7, 33, 59, 18, 44]
    index = _meta(clip_bframes.path).frame_index
    decoded = {}
    for skip in (True, False):
        with FrameReader(clip_bframes.path, index=index) as reader:
            reader.skip_nonref = skip
            for t in frames:
                check_frame(clip_bframes, reader, t, reader.read(t))
            decoded[skip] = reader.stats["decoded"]
    assert decoded[True] < decoded[False]


@pytest.mark.parametrize("bframes", [1, 3])
def test_repeated_pts_never_give_a_wrong_frame(tmp_path: Path, bframes: int) -> None:
    # 2000 fps in Matroska's millisecond time base: every second frame repeats its neighbour's pts, so pts
    # cannot tell frames apart; skipping non-reference frames on the way must not hide that (it gave frame 2
    # the picture of frame 3)
    truth = encode_clip(tmp_path / "repeated_pts.mkv", n_frames=24, fps=Fraction(2000), gop=12, bframes=bframes)
    with av.open(str(truth.path)) as container:
        labels = [f.pts for f in container.decode(video=0)]
    assert len(set(labels)) < len(labels)  # the file really repeats pts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)
        with FrameReader(truth.path) as reader:
            assert [displayed_number(image) for _, image in reader.iter_frames()] == list(range(24))
        with FrameReader(truth.path) as reader:
            assert [displayed_number(reader.read(n)) for n in (2, 3, 9, 5, 17, 16)] == [2, 3, 9, 5, 17, 16]


def _numbers_in_child(reader: FrameReader, queue: Any) -> None:
    queue.put([displayed_number(reader.read(t)) for t in (30, 2, 47)])
    reader.close()


def test_reader_pickles_and_survives_fork(clip: ClipTruth) -> None:
    import multiprocessing
    import pickle

    with FrameReader(clip.path, index=_meta(clip.path).frame_index, video_id="cam") as reader:
        reader.read(20)
        copy = pickle.loads(pickle.dumps(reader))
        with copy:
            assert copy.indexed and copy.video_id == "cam" and displayed_number(copy.read(9)) == 9
        if "fork" in multiprocessing.get_all_start_methods():
            # The child inherits the open container (and decoder threads that live only in the parent).
            ctx = multiprocessing.get_context("fork")
            queue = ctx.Queue()
            child = ctx.Process(target=_numbers_in_child, args=(reader, queue))  # fork: nothing pickled
            child.start()
            child.join(timeout=120)
            assert child.exitcode == 0
            assert queue.get(timeout=5) == [30, 2, 47]
            assert displayed_number(reader.read(21)) == 21


def test_usable_index_one_rule_for_reader_and_planner(clip: ClipTruth, clip_bframes: ClipTruth) -> None:
    from vidlabel.video._reader import usable_index

    meta = _meta(clip.path)
    assert meta.frame_index is not None and meta.content_hash is not None
    index, why = usable_index(meta)
    assert index is meta.frame_index and why is None
    no_hash = dataclasses.replace(meta.frame_index, content_hash=None)
    index, why = usable_index(meta.replace(frame_index=no_hash))
    assert index is not None and index.content_hash == meta.content_hash and why is None
    index, why = usable_index(meta.replace(frame_count=47))
    assert index is None and why is not None and "covers 48 frames but the video has 47" in why
    other = dataclasses.replace(meta.frame_index, content_hash=_meta(clip_bframes.path).content_hash)
    index, why = usable_index(meta.replace(frame_index=other))
    assert index is None and why is not None and "was read from another file" in why
    assert usable_index(meta.replace(frame_index=None)) == (None, None)


def test_for_video_drops_an_index_of_another_file_and_reads_exact_frames(
    clip: ClipTruth, clip_bframes: ClipTruth
) -> None:
    meta = _meta(clip.path)
    assert meta.frame_index is not None
    other = dataclasses.replace(meta.frame_index, content_hash=_meta(clip_bframes.path).content_hash)
    meta = meta.replace(frame_index=other)
    with pytest.warns(VidlabelWarning, match=r"frame index of video 'clip' was read from another file"):
        reader = FrameReader.for_video(meta)
    with reader:
        assert not reader.indexed
        read_checked(clip, reader, 30)


def test_reader_without_index_opens_its_file_twice_not_three_times(
    clip: ClipTruth, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vidlabel.video._decode as decode_mod
    import vidlabel.video._frameindex as index_mod

    opened: list[str] = []
    real = index_mod.open_video

    def counting(path: Any) -> Any:
        opened.append(str(path))
        return real(path)

    for mod in (index_mod, decode_mod):  # the reader opens through DecodeEngine._open
        monkeypatch.setattr(mod, "open_video", counting)
    with FrameReader(clip.path) as reader:  # one pass builds the index (demux + head decode), one reads
        assert opened == [str(clip.path)] * 2
        read_checked(clip, reader, 0)
        read_checked(clip, reader, 30)
    assert len(opened) == 2


def test_a_recorded_path_with_dot_dot_parts_is_not_followed_out_of_a_root(tmp_path: Path, clip: ClipTruth) -> None:
    # before: a recorded path "/x/../../outside/clip.mp4" (a dataset or release file from elsewhere) was tried
    # under root R as "R/../../outside/clip.mp4", and the file beside the root was opened and read
    root = tmp_path / "data" / "root"
    root.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    shutil.copy(clip.path, tmp_path / "outside" / "clip.mp4")
    meta = _meta(clip.path).replace(sources=[{"uri": "/x/../../outside/clip.mp4"}])
    message = (
        f"file of video 'clip' not found; tried: /x/../../outside/clip.mp4, {root}/outside/clip.mp4, {root}/clip.mp4 "
        "(not found under the roots given either"
    )
    with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}"):
        resolve_video_path(meta, roots=[root])
    with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}"):
        FrameReader.for_video(meta, roots=[root])
