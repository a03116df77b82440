"""`vidlabel index` and `vidlabel check-video` on a dataset of generated clips."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.media import ClipTruth
from vidlabel.cli import main
from vidlabel.dataset._dataset import Dataset
from vidlabel.errors import VidlabelWarning
from vidlabel.video._probe import probe, read_frame_index


@pytest.fixture
def dataset(tmp_path: Path, clip: ClipTruth, clip_long_gop: ClipTruth, clip_editlist: ClipTruth) -> Dataset:
    ds = Dataset.create(tmp_path / "ds")
    for truth in (clip, clip_long_gop, clip_editlist):
        ds.add_video(probe(truth.path, with_index=False))
    return ds


def test_index_adds_missing_indexes(dataset: Dataset, capsys: pytest.CaptureFixture[str], clip: ClipTruth) -> None:
    assert all(m.frame_index is None for m in dataset.videos())
    assert main(["index", str(dataset.path)]) == 0
    out = capsys.readouterr().out
    assert "clip: indexed 48 frames, 4 keyframes (by demuxing)" in out
    assert "long_gop: indexed 300 frames, 2 keyframes (by demuxing)" in out
    assert "editlist: indexed 35 frames" in out and "(by decoding)" in out
    assert "indexed 3 of 3 videos without a frame index (3 in all)" in out
    for meta in dataset.videos():
        assert meta.frame_index is not None and meta.frame_index.frame_count == meta.frame_count
        assert meta.frame_index.content_hash == meta.content_hash
    assert dataset.video("clip").frame_index == read_frame_index(clip.path)
    assert main(["index", str(dataset.path)]) == 0
    assert "all 3 videos already have a frame index" in capsys.readouterr().out


def test_index_finds_moved_files_under_roots(
    tmp_path: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = Dataset.create(tmp_path / "ds")
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(clip.path, moved / "clip.mp4")
    ds.add_video(probe(clip.path, with_index=False).replace(sources=[{"uri": "/nowhere/clip.mp4"}]))
    assert main(["index", str(ds.path)]) == 1
    assert "clip: skipped: file of video 'clip' not found; tried: /nowhere/clip.mp4" in capsys.readouterr().out
    assert ds.video("clip").frame_index is None
    assert main(["index", str(ds.path), "--roots", str(moved)]) == 0
    assert ds.video("clip").frame_index is not None


def test_index_refuses_another_file(tmp_path: Path, clip: ClipTruth, clip_bframes: ClipTruth, capsys) -> None:  # type: ignore[no-untyped-def]
    ds = Dataset.create(tmp_path / "ds")
    meta = probe(clip.path, with_index=False)
    ds.add_video(meta.replace(sources=[{"uri": str(clip_bframes.path)}]))
    assert main(["index", str(ds.path)]) == 1
    assert "is not the registered file (its content hash differs)" in capsys.readouterr().out


def test_check_video_reports_cost_and_remedy(dataset: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(dataset.path)]) == 0
    capsys.readouterr()
    assert main(["check-video", str(dataset.path), "long_gop", "--reads", "5"]) == 0
    out = capsys.readouterr().out
    assert "300 frames, 64x48, 30/1 fps, codec h264" in out
    assert "frame index: stored (demux)" in out
    assert "keyframes: 2; spacing in frames: min 50, median 150, max 250" in out
    # Uniform random frame: (1+...+250 + 1+...+50) / 300 frames decoded.
    expected = (250 * 251 / 2 + 50 * 51 / 2) / 300
    assert f"frames decoded per random read: {expected:.1f} on average" in out
    assert "measured over 5 random reads:" in out and "ms per frame" in out
    assert "-g 30" in out and f"vidlabel export {dataset.path} OUT" in out
    # the spec's first remedy ("Making random access fast"): a frame cache, the dataset unchanged
    assert f"  - a frame cache (nothing about the dataset changes): vidlabel cache {dataset.path} " in out
    assert main(["check-video", str(dataset.path), "clip", "--reads", "0"]) == 0
    out = capsys.readouterr().out
    assert "spacing in frames: min 12, median 12, max 12" in out
    assert "random access is cheap" in out and "measured" not in out


def test_check_video_without_index_and_errors(dataset: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-video", str(dataset.path), "clip", "--reads", "2"]) == 0
    assert "none stored (built now; run 'vidlabel index')" in capsys.readouterr().out
    assert main(["check-video", str(dataset.path), "nope"]) == 1
    assert "vidlabel: error: unknown video 'nope'" in capsys.readouterr().err
    assert main(["check-video", str(dataset.path), "clip", "--reads", "-1"]) == 1
    assert "--reads must be >= 0, got -1" in capsys.readouterr().err


def test_check_video_leaves_untrusted_frames_out_of_the_timed_reads(
    tmp_path: Path, media_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.video.test_untrusted import cut_clip

    meta = probe(cut_clip(media_dir, "check_cut80.mp4", 0.80), video_id="cut")
    assert meta.untrusted_count > 0  # the file is damaged: some frames have no trustworthy picture
    ds = Dataset.create(tmp_path / "ds")
    with pytest.warns(VidlabelWarning, match="no trustworthy picture"):
        ds.add_video(meta)
    assert main(["check-video", str(ds.path), "cut", "--reads", "40"]) == 0
    out = capsys.readouterr().out
    ranges = ", ".join(f"{a}..{b}" if b > a else f"{a}" for a, b in meta.untrusted_frames or ())
    assert f"untrusted frames: {meta.untrusted_count} without a trustworthy picture ({ranges})" in out
    assert "measured over 40 random reads:" in out and "failed" not in out

    # Registered before untrusted frames were recorded: the reads that hit them are counted, not fatal.
    ds.update_video(meta.replace(untrusted_frames=None))
    assert main(["check-video", str(ds.path), "cut", "--reads", "40"]) == 0
    out = capsys.readouterr().out
    assert "untrusted frames: not recorded" in out
    assert "of those reads failed with a decode error" in out and "--video-id cut --replace" in out


def test_dataset_and_release_keep_decoder_labels(tmp_path: Path, clip_pts_from_dts: ClipTruth) -> None:
    meta = probe(clip_pts_from_dts.path)
    assert meta.frame_index is not None and meta.frame_index.decoder_pts is not None
    ds = Dataset.create(tmp_path / "ds")
    ds.add_video(meta)
    assert ds.video(meta.video_id).frame_index == meta.frame_index
    release, _ = ds.build()
    assert ds.release(release.release_id).videos[meta.video_id].frame_index == meta.frame_index
