"""A video file replaced on disk after registration: never read, stored or served under the registered hash."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.media import encode_clip, read_frame_number
from tests.store_support import H, W, make_dataset
from vidlabel import Dataset, FrameReader, FrameSamples, export, open_store, probe
from vidlabel.cli import main
from vidlabel.errors import StoreIncompleteError, VideoChangedError, VideoDecodeError
from vidlabel.export._run import cache
from vidlabel.store import backend_for
from vidlabel.store._verify import verify_store
from vidlabel.video._probe import content_hash

N_FRAMES = 12
CHANGED = r"video 'a' changed on disk: '.*a\.mp4' now has content hash sha256:[0-9a-f]{12}\.\.\., but the video was registered with sha256:[0-9a-f]{12}\.\.\."


@pytest.fixture
def swapped(tmp_path: Path) -> tuple[Dataset, Path, Path]:
    """A built dataset whose video 'a' file was replaced by another clip; returns (ds, a.mp4, the original's copy)."""
    ds = make_dataset(tmp_path, videos=("a", "b"), n_frames=N_FRAMES)
    original = tmp_path / "keep" / "a.mp4"
    original.parent.mkdir()
    shutil.copy2(tmp_path / "a.mp4", original)
    encode_clip(tmp_path / "a.mp4", n_frames=N_FRAMES + 8, width=W, height=H, gop=5)  # same name, other bytes
    assert content_hash(tmp_path / "a.mp4") != ds.video("a").content_hash
    return ds, tmp_path / "a.mp4", original


def test_export_refuses_a_replaced_file_and_the_store_says_why(swapped: tuple[Dataset, Path, Path]) -> None:
    ds, path, original = swapped
    out = path.parent / "out"
    with pytest.raises(VideoChangedError, match=CHANGED) as info:
        export(ds, out, workers=2, progress=False)
    message = str(info.value)
    assert f"vidlabel add-video {ds.path} {path} --video-id a --replace" in message
    assert "restore the registered file" in message and "roots=" in message
    assert info.value.video_id == "a" and info.value.expected_hash == ds.video("a").content_hash
    assert isinstance(info.value, VideoDecodeError)
    assert backend_for(out, "hdf5").video_ids() == ["b"]  # nothing stored for 'a'
    with pytest.raises(StoreIncompleteError, match=r"its export failed: .*video 'a' changed on disk"):
        open_store(out)
    checked = verify_store(out)
    assert not checked["ok"]
    assert any(re.search(r"root is not marked complete: its export failed: .*video 'a' changed on disk", p)
               for p in checked["problems"])  # fmt: skip

    shutil.copy2(original, path)  # restored: the export completes, with the release's frames
    report = export(ds, out, workers=2, progress=False)
    assert report.videos_up_to_date == 1
    store = open_store(out)
    with FrameReader.for_video(ds.video("a")) as reader:
        checked = 0
        for i, (video_id, n) in enumerate(store.index):
            if video_id == "a":
                image = reader.read(n)
                assert read_frame_number(image) == n
                np.testing.assert_array_equal(store.frame(i), image)
                checked += 1
    assert checked > 0
    store.close()


def test_export_finds_the_registered_file_under_roots(swapped: tuple[Dataset, Path, Path]) -> None:
    ds, path, original = swapped
    out = path.parent / "out"
    export(ds, out, progress=False, roots=[original.parent])
    store = open_store(out)
    for i, (_video_id, n) in enumerate(store.index):
        assert read_frame_number(store.frame(i)) == n
    store.close()
    with FrameReader.for_video(ds.video("a"), roots=[original.parent]) as reader:
        assert reader.path == original and reader.frame_count == N_FRAMES


def test_readers_refuse_a_replaced_file(swapped: tuple[Dataset, Path, Path]) -> None:
    ds, path, _original = swapped
    with pytest.raises(VideoChangedError, match=CHANGED):
        FrameReader.for_video(ds.video("a"))
    samples = FrameSamples(ds)
    with pytest.raises(VideoChangedError, match=CHANGED):
        samples.reader("a")
    with samples.reader("b") as reader:  # the other video reads as before
        assert read_frame_number(reader.read(3)) == 3
    # Reading the file directly, without the registered metadata, is the caller's choice: it reads what is there.
    with FrameReader(path) as reader:
        assert reader.frame_count == N_FRAMES + 8


def test_a_cache_serves_its_frames_and_refuses_the_replaced_file_for_the_rest(
    swapped: tuple[Dataset, Path, Path],
) -> None:
    ds, path, original = swapped
    shutil.copy2(path, path.with_name("new.mp4"))
    shutil.copy2(original, path)
    store = path.parent / "frames"
    cache(ds, store, codec="none", progress=False)  # the registered file's annotated frames
    shutil.copy2(path.with_name("new.mp4"), path)
    samples = FrameSamples(ds, cache=store)
    stored = sorted(n for video_id, n in samples.index if video_id == "a")
    missing = sorted(set(range(N_FRAMES)) - set(stored))
    assert stored and missing
    with samples.reader("a") as reader:
        for n in stored:  # decoded from the registered file: still served
            assert read_frame_number(reader.read(n)) == n
        with pytest.raises(VideoChangedError, match=CHANGED):
            reader.read(missing[0])


def test_video_frames_refuse_a_replaced_file(swapped: tuple[Dataset, Path, Path]) -> None:
    pytest.importorskip("torch")
    from vidlabel.torch_data import VideoFrames

    ds, _path, _original = swapped
    samples = FrameSamples(ds, videos=["a"])
    frames = VideoFrames(samples)
    with pytest.raises(VideoChangedError, match=CHANGED):
        frames[0]


def test_validate_reports_a_replaced_file(swapped: tuple[Dataset, Path, Path]) -> None:
    ds, _path, _original = swapped
    changed = [p for p in ds.validate() if p.code == "video_file_changed"]
    assert [(p.severity, p.video_id) for p in changed] == [("warning", "a")]
    assert "--video-id a --replace" in changed[0].message
    assert not [p for p in ds.validate(hash_files=False) if p.code == "video_file_changed"]


def test_cli_validate_then_replace_build_and_export(
    swapped: tuple[Dataset, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    ds, path, _original = swapped
    assert main(["validate", str(ds.path)]) == 0
    out = capsys.readouterr().out
    assert "warning video_file_changed (video 'a')" in out and out.endswith("0 errors, 1 warning\n")
    assert main(["export", str(ds.path), str(path.parent / "out")]) == 1
    assert "video 'a' changed on disk" in capsys.readouterr().err

    assert main(["add-video", str(ds.path), str(path), "--video-id", "a", "--replace"]) == 0
    assert ds.video("a").content_hash == content_hash(path) == probe(path).content_hash
    assert main(["build", str(ds.path)]) == 0
    assert main(["validate", str(ds.path)]) == 0
    assert "video_file_changed" not in capsys.readouterr().out
    report = export(ds, path.parent / "out", progress=False)
    assert report.videos == 2
    store = open_store(path.parent / "out")
    assert any(video_id == "a" for video_id, _n in store.index)
    for i, (_video_id, n) in enumerate(store.index):
        assert read_frame_number(store.frame(i)) == n
    store.close()


def test_export_of_a_release_built_before_a_replace_says_to_build(swapped: tuple[Dataset, Path, Path]) -> None:
    ds, path, _original = swapped
    old_release = ds.release("latest").release_id
    assert main(["add-video", str(ds.path), str(path), "--video-id", "a", "--replace"]) == 0  # no build after it
    with pytest.raises(
        VideoChangedError,
        match=rf"release {old_release} pins video 'a' at content hash sha256:[0-9a-f]{{12}}\.\.\., but the video "
        rf"was re-registered since with the file now at '.*a\.mp4' \(sha256:[0-9a-f]{{12}}\.\.\.\): build a new "
        rf"release \(`vidlabel build {ds.path}`\); then export again",
    ):
        export(ds, path.parent / "out", progress=False)


def test_validate_for_export_rates_what_export_refuses_as_errors(
    swapped: tuple[Dataset, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12, item 5: a clean ``validate --for-export`` means export will run."""
    ds, path, original = swapped
    (path.parent / "b.mp4").unlink()  # video 'b' missing, video 'a' replaced
    problems = {p.code: p for p in ds.validate(for_export=True)}
    assert problems["video_file_changed"].severity == "error" and problems["video_file_changed"].video_id == "a"
    assert problems["missing_video_file"].severity == "error" and problems["missing_video_file"].video_id == "b"
    assert {p.code: p.severity for p in ds.validate()}["missing_video_file"] == "warning"  # default unchanged
    assert main(["validate", str(ds.path)]) == 0
    capsys.readouterr()
    assert main(["validate", str(ds.path), "--for-export"]) == 1
    out = capsys.readouterr().out
    assert "error video_file_changed (video 'a')" in out and "error missing_video_file (video 'b')" in out
    assert out.endswith("2 errors, 0 warnings\n")
    assert main(["export", str(ds.path), str(path.parent / "out")]) == 1  # as validate --for-export said
    capsys.readouterr()

    shutil.copy2(original, path)
    shutil.copy2(original, path.parent / "b.mp4")  # 'b' back with the wrong bytes: still an error
    assert main(["validate", str(ds.path), "--for-export"]) == 1
    assert "error video_file_changed (video 'b')" in capsys.readouterr().out


def test_validate_for_export_looks_under_the_roots_export_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: validate had no roots, so with a file moved under a root `validate --for-export` refused (exit 1)
    # while `export --roots` read every video (a fresh-user pass)
    ds = make_dataset(tmp_path, videos=("a", "b"), n_frames=N_FRAMES)
    moved = tmp_path / "moved"
    moved.mkdir()
    (tmp_path / "b.mp4").rename(moved / "b.mp4")
    assert [(p.code, p.video_id, p.severity) for p in ds.validate(for_export=True)] == [
        ("missing_video_file", "b", "error")
    ]
    assert ds.validate(for_export=True, roots=[moved]) == []
    typo = tmp_path / "no_such_dir"
    (problem,) = ds.validate(for_export=True, roots=[typo])  # a root that is no folder here is named, as export does
    assert problem.message.endswith(f"; no folder at {str(typo)!r})"), problem.message
    assert main(["validate", str(ds.path), "--for-export"]) == 1
    assert main(["validate", str(ds.path), "--for-export", "--roots", str(moved)]) == 0
    assert capsys.readouterr().out.endswith("0 errors, 0 warnings\n")
    assert main(["export", str(ds.path), str(tmp_path / "out"), "--roots", str(moved), "--no-progress"]) == 0
    capsys.readouterr()
    shutil.copy2(tmp_path / "a.mp4", moved / "b.mp4")  # other bytes under the root: export refuses, so must validate
    (problem,) = ds.validate(for_export=True, roots=[moved])
    assert (problem.code, problem.video_id, problem.severity) == ("video_file_changed", "b", "error")
    assert str(moved / "b.mp4") in problem.message


def test_reading_a_release_built_before_a_replace_says_to_build_not_to_re_register(
    swapped: tuple[Dataset, Path, Path],
) -> None:
    """FrameSamples over a release built before `add-video --replace` said to re-register the file, which was
    done; as export does, it now says the video was re-registered since and to build a new release."""
    ds, path, _original = swapped
    old_release = ds.release("latest").release_id
    samples = FrameSamples(ds, release=old_release)
    with pytest.raises(VideoChangedError, match=CHANGED):  # the file changed, nothing re-registered yet
        samples.reader("a")
    assert main(["add-video", str(ds.path), str(path), "--video-id", "a", "--replace"]) == 0  # no build after it
    with pytest.raises(
        VideoChangedError,
        match=rf"^release {old_release} pins video 'a' at content hash sha256:[0-9a-f]{{12}}\.\.\., but the video "
        rf"was re-registered since with the file now at '.*a\.mp4' \(sha256:[0-9a-f]{{12}}\.\.\.\): build a new "
        rf"release \(`vidlabel build {ds.path}`\) and read that",
    ) as info:
        samples.reader("a")
    assert info.value.video_id == "a" and info.value.actual_hash == content_hash(path)
    with FrameSamples(ds, release=old_release).reader("b") as reader:  # the other video reads as before
        assert read_frame_number(reader.read(3)) == 3
