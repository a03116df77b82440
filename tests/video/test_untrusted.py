"""Frames without a trustworthy picture (truncated or corrupt files): probe records them, add-video warns,
validate reports annotations on them, FrameSamples and export leave them out, an export of older metadata
fails with the remedy."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import av
import numpy as np
import pytest

from tests.media import ClipTruth, displayed_number, encode_clip, object_box, read_frame_number, truncate_file
from vidlabel import Dataset, FrameReader, FrameSamples, export, open_store, probe
from vidlabel.cli import main
from vidlabel.dataset._release import read_release, video_dict
from vidlabel.dataset._validate import PROBLEM_CODES
from vidlabel.errors import StoreIncompleteError, VideoDecodeError, VidlabelWarning
from vidlabel.spec import VideoMetadata, frame_ranges, ranges_text
from vidlabel.store import verify_store

W, H = 64, 48


def untrusted_truth(path: Path) -> list[int]:
    """Frames a plain PyAV decode outputs after a decode error and before the next keyframe, plus the frames
    it never outputs (holes). Frame ``n`` is the packet with the ``n``-th smallest pts, up to the last pts
    that decodes (the module notes of vidlabel.probe)."""
    slots: set[int] = set()
    out: dict[int, bool] = {}  # pts -> output after an error
    tainted = False
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for packet in container.demux(stream):
            if packet.size and packet.pts is not None:
                slots.add(packet.pts)
            try:
                frames = stream.decode(packet)
            except av.error.FFmpegError:
                tainted = True
                continue
            for frame in frames:
                tainted = tainted and not frame.key_frame
                out[frame.pts] = tainted
    numbered = sorted(p for p in slots if p <= max(out))
    return [n for n, pts in enumerate(numbered) if out.get(pts, True)]


def refused(meta: VideoMetadata, order: list[int], *, numbered: bool = True) -> list[int]:
    """The frames ``FrameReader.read`` refuses with VideoDecodeError, reading in ``order``.

    With ``numbered``, every frame it returns must show its own number (clips without hidden leading frames).
    """
    out = []
    with FrameReader.for_video(meta) as reader:
        for n in order:
            try:
                image = reader.read(n)
            except VideoDecodeError as err:
                assert f"frame {n}" in str(err)
                out.append(n)
            else:
                assert not numbered or displayed_number(image, meta.rotation) == n
    return sorted(out)


def cut_clip(media_dir: Path, name: str, fraction: float) -> Path:
    """A 60-frame B-frame faststart mp4 (GOP 12, 2 B-frames) cut to its first ``fraction`` of bytes."""
    whole = encode_clip(
        media_dir / f"whole_bframes_for_{name}", n_frames=60, gop=12, bframes=2, width=W, height=H,
        container_options={"movflags": "+faststart"},
    )  # fmt: skip
    return truncate_file(whole.path, media_dir / name, fraction)


@pytest.fixture(scope="module")
def cut_bframes(media_dir: Path) -> Path:
    """Cut at 70%: 35 frames decode, the last two after a decode error."""
    return cut_clip(media_dir, "t.mp4", 0.70)


@pytest.fixture(scope="module")
def cut_bframes_hole(media_dir: Path) -> Path:
    """Cut at 80%: the packet of frame 43 fails (a hole), then frames 42 and 44 come out."""
    return cut_clip(media_dir, "cut80.mp4", 0.80)


def box_rows(frame_count: int) -> list[dict]:
    return [
        {"kind": "box", "label": "obj", "start_frame": n, "box": list(object_box(n, W, H))} for n in range(frame_count)
    ]


@pytest.fixture
def cut_dataset(tmp_path: Path, cut_bframes: Path) -> tuple[Dataset, VideoMetadata]:
    """A dataset holding the cut clip as video 't' with a box on every frame and a marker over frames 30..34."""
    ds = Dataset.create(tmp_path / "ds")
    meta = probe(cut_bframes)
    with pytest.warns(VidlabelWarning, match="no trustworthy picture"):
        ds.add_video(meta)
    ds.add_labels(["obj", "mk"])
    ds.add_annotations([*box_rows(meta.frame_count), {"kind": "marker", "label": "mk", "start_frame": 30,
                                                       "end_frame": 34}], "t")  # fmt: skip
    return ds, meta


# -- probe ---------------------------------------------------------------------------------------------------


def test_probe_records_what_the_reader_refuses_on_every_clip(any_clip: ClipTruth) -> None:
    meta = probe(any_clip.path)
    expected = any_clip.extra.get("untrusted", [])
    assert meta.untrusted_frames == frame_ranges(np.asarray(expected, dtype=np.int64))
    assert refused(meta, list(range(meta.frame_count)), numbered=False) == expected  # test_frames checks pixels


@pytest.mark.parametrize("name", ["cut_bframes", "cut_bframes_hole"])
def test_probe_of_cut_bframe_clips_agrees_with_plain_decoding_and_the_reader(
    request: pytest.FixtureRequest, name: str
) -> None:
    path: Path = request.getfixturevalue(name)
    meta = probe(path)
    truth = untrusted_truth(path)
    assert truth and truth[-1] == meta.frame_count - 1  # the cut leaves untrusted frames at the end
    mask = meta.untrusted_mask()
    assert mask.shape == (meta.frame_count,) and mask.dtype == bool
    assert np.flatnonzero(mask).tolist() == truth and meta.untrusted_count == len(truth)
    order = np.random.default_rng(3).permutation(meta.frame_count).tolist()
    assert refused(meta, order) == truth  # random order: seeks, rewinds
    assert refused(meta, list(range(meta.frame_count))) == truth


def test_probe_of_the_brief_clip(cut_bframes: Path) -> None:
    meta = probe(cut_bframes)
    assert meta.frame_count == 35 and meta.untrusted_frames == ((33, 34),)


def test_corrupt_middle_random_order(clip_corrupt: ClipTruth) -> None:
    meta = probe(clip_corrupt.path)
    assert meta.untrusted_frames == ((15, 23),)
    order = np.random.default_rng(5).permutation(meta.frame_count).tolist()
    assert refused(meta, order) == clip_corrupt.extra["untrusted"]


# -- metadata ------------------------------------------------------------------------------------------------


def test_metadata_ranges_are_checked_merged_and_round_trip() -> None:
    meta = VideoMetadata("v", 10, {"num": 30, "den": 1}, 4, 4, untrusted_frames=[[5, 6], (2, 2), (7, 8), (1, 1)])
    assert meta.untrusted_frames == ((1, 2), (5, 8))
    assert meta.untrusted_count == 6
    assert np.flatnonzero(meta.untrusted_mask()).tolist() == [1, 2, 5, 6, 7, 8]
    again = VideoMetadata.from_dict(json.loads(json.dumps(meta.to_dict())))
    assert again == meta
    assert video_dict(meta)["untrusted_frames"] == [[1, 2], [5, 8]]
    old = {k: v for k, v in meta.to_dict().items() if k != "untrusted_frames"}
    unknown = VideoMetadata.from_dict(old)
    assert unknown.untrusted_frames is None and unknown.untrusted_count == 0 and not unknown.untrusted_mask().any()
    assert "untrusted_frames" not in video_dict(unknown)  # old metadata serialises (and hashes) as before
    with pytest.raises(ValueError, match=r"untrusted frames 8\.\.10 of video 'v' must satisfy .*frame_count \(10\)"):
        VideoMetadata("v", 10, {"num": 30, "den": 1}, 4, 4, untrusted_frames=[(8, 10)])
    with pytest.raises(ValueError, match=r"untrusted frames 3\.\.2 of video 'v'"):
        VideoMetadata("v", 10, {"num": 30, "den": 1}, 4, 4, untrusted_frames=[(3, 2)])
    with pytest.raises(ValueError, match=r"must be \(first, last\) frame pairs, got 4"):
        VideoMetadata("v", 10, {"num": 30, "den": 1}, 4, 4, untrusted_frames=[4])


def test_frame_ranges_and_text() -> None:
    assert frame_ranges([7, 3, 4, 5, 9, 4]) == ((3, 5), (7, 7), (9, 9))
    assert frame_ranges(np.array([False, True, True, False, True])) == ((1, 2), (4, 4))
    assert frame_ranges([]) == ()
    assert ranges_text(((3, 5), (7, 7))) == "3..5, 7"
    assert ranges_text(((1, 1), (3, 3), (5, 5)), limit=2) == "1, 3, ... (3 ranges in all)"


# -- dataset, release, validate --------------------------------------------------------------------------------


def test_add_video_warns_and_the_ranges_persist(tmp_path: Path, cut_bframes: Path) -> None:
    ds = Dataset.create(tmp_path / "ds")
    meta = probe(cut_bframes)
    with pytest.warns(VidlabelWarning, match=r"video 't': 2 frames have no trustworthy picture \(33\.\.34: they "
                      r"follow a decode error before the next keyframe.*truncated or corrupt"):  # fmt: skip
        ds.add_video(meta)
    assert ds.video("t").untrusted_frames == ((33, 34),)
    assert Dataset.open(ds.path).videos()[0].untrusted_frames == ((33, 34),)
    with pytest.warns(VidlabelWarning, match=r"video 't': 2 frames have no trustworthy picture"):
        ds.update_video(meta)
    rel, _ = ds.build()
    assert read_release(ds.path / "releases" / f"{rel.release_id}.h5").videos["t"].untrusted_frames == ((33, 34),)


def test_clean_video_does_not_warn_and_old_rows_load(tmp_path: Path, clip: ClipTruth) -> None:
    ds = Dataset.create(tmp_path / "ds")
    ds.add_video(probe(clip.path, video_id="c"))  # no warning (they are errors in the tests)
    assert ds.video("c").untrusted_frames == ()
    # A row written before vidlabel recorded untrusted frames: no key in its metadata JSON.
    con = sqlite3.connect(ds.path / "vidlabel.sqlite")
    (text,) = con.execute("SELECT metadata FROM videos WHERE video_id = 'c'").fetchone()
    old = {k: v for k, v in json.loads(text).items() if k != "untrusted_frames"}
    con.execute("UPDATE videos SET metadata = ? WHERE video_id = 'c'", (json.dumps(old),))
    con.commit()
    con.close()
    meta = Dataset.open(ds.path).video("c")
    assert meta.untrusted_frames is None and meta.frame_count == clip.frame_count


def test_validate_reports_annotations_on_untrusted_frames(cut_dataset: tuple[Dataset, VideoMetadata]) -> None:
    ds, _ = cut_dataset
    assert PROBLEM_CODES["untrusted_frame"] == "warning"
    ids = {a["start_frame"]: a["annotation_id"] for a in ds.annotations("t", kind="box")}
    problems = [p for p in ds.validate() if p.code == "untrusted_frame"]
    assert [(p.annotation_id, p.video_id, p.severity) for p in problems] == [
        (ids[33], "t", "warning"),
        (ids[34], "t", "warning"),
    ]  # the marker over frames 30..34 is not reported
    assert "box on frame 33, which has no trustworthy picture" in problems[0].message
    assert f"warning untrusted_frame (video 't', annotation {ids[33]})" in str(problems[0])
    _, report = ds.build()  # a warning does not refuse a build
    assert {p.code for p in report.warnings} == {"untrusted_frame"}


# -- FrameSamples ----------------------------------------------------------------------------------------------


def test_frame_samples_leave_untrusted_frames_out(cut_dataset: tuple[Dataset, VideoMetadata]) -> None:
    ds, _ = cut_dataset
    ds.build()
    with pytest.warns(VidlabelWarning, match=r"2 annotations and 2 frames without a trustworthy picture are left "
                      r"out of the samples \(video 't': 2 annotations, 2 frames: 33\.\.34\)") as record:  # fmt: skip
        fs = FrameSamples(ds)
    assert sum("trustworthy" in str(w.message) for w in record) == 1
    assert fs.index == [("t", n) for n in range(33)]
    d = fs.describe()
    assert d["rows_on_untrusted_frames"] == 2 and d["untrusted_frames_left_out"] == 2 and d["samples"] == 33
    for t in fs.targets():
        assert t["boxes"].tolist() == [list(object_box(t["frame_index"], W, H))]
    with pytest.warns(VidlabelWarning, match=r"0 annotations and 2 frames .*33\.\.34"):
        all_frames = FrameSamples(ds, frames="all", kinds=("marker",))
    assert all_frames.index == [("t", n) for n in range(33)]
    with pytest.warns(VidlabelWarning, match=r"0 annotations and 2 frames"):
        markers = FrameSamples(ds, kinds=("marker",))
    assert markers.index == [("t", n) for n in range(30, 33)]
    samples = list(fs.iter_plan(fs.plan_reads(np.arange(len(fs)), seed=0)))
    assert sorted(s["frame_index"] for s in samples) == list(range(33))
    assert all(read_frame_number(s["image"]) == s["frame_index"] for s in samples)


def test_plan_reads_refuses_a_requested_untrusted_frame_before_reading(
    cut_dataset: tuple[Dataset, VideoMetadata],
) -> None:
    # A pair naming frame 33 was planned, and the epoch stopped at that chunk with the reader's VideoDecodeError,
    # after the samples before it had been read (a training run lost in the middle of an epoch).
    ds, meta = cut_dataset
    ds.build()
    with pytest.warns(VidlabelWarning, match="trustworthy"):
        fs = FrameSamples(ds, frames="all")
    first, last = meta.untrusted_frames[0]  # type: ignore[index]
    for requests, named in (([("t", first)], first), ([("t", 5), ("t", last), ("t", 0)], last)):
        with pytest.raises(
            VideoDecodeError,
            match=rf"requested frame {named} of video 't' has no trustworthy picture "
            rf"\(untrusted frames: {first}\.\.{last}; 1 of the requests",
        ):
            fs.plan_reads(requests, seed=0)
    plan = fs.plan_reads([("t", first - 1), ("t", 0), ("t", first - 1)], seed=0)  # trusted frames still read
    got = sorted(s["frame_index"] for s in fs.iter_plan(plan))
    assert got == [0, first - 1, first - 1]


# -- export ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_export_stores_exactly_the_trusted_frames(
    cut_dataset: tuple[Dataset, VideoMetadata], tmp_path: Path, fmt: str
) -> None:
    ds, meta = cut_dataset
    ds.build()
    ids = {a["start_frame"]: a["annotation_id"] for a in ds.annotations("t", kind="box")}
    with pytest.warns(VidlabelWarning, match=r"2 box and 0 mask annotations lie on frames this export does not "
                      r"store \(2 on frames without a trustworthy picture in video 't'"):  # fmt: skip
        report = export(ds, tmp_path / "out", format=fmt, progress=False)
    assert report.samples == 33 and report.frames_decoded == 33 and report.untrusted_frames == 2
    assert report.not_stored["untrusted"] == 2 and report.not_stored["untrusted_by_video"] == {"t": 2}
    assert report.not_stored["annotation_ids"] == [ids[33], ids[34]]
    assert (report.not_stored["box"], report.not_stored["mask"]) == (2, 0)
    summary = report.summary()
    assert "2 on frames without a trustworthy picture in video 't'" in summary and "stride" not in summary
    assert "2 frames without a trustworthy picture left out" in summary
    store = open_store(tmp_path / "out")
    assert store.index == [("t", n) for n in range(33)]
    with FrameReader.for_video(meta) as reader:
        for n in range(33):
            image = store.get_frame("t", n)
            assert image is not None and np.array_equal(image, reader.read(n)) and read_frame_number(image) == n
    data = store.video_data("t")
    assert data.regions["annotation_id"].tolist() == [ids[n] for n in range(33)]
    seg = data.segments
    assert (seg["start_frame"].tolist(), seg["end_frame"].tolist()) == ([30], [34])  # the marker is kept whole
    assert (seg["start_index"].tolist(), seg["end_index"].tolist()) == ([30], [32])  # stored rows only
    assert verify_store(tmp_path / "out")["ok"]
    assert main(["verify", str(tmp_path / "out")]) == 0


def test_export_tells_untrusted_apart_from_stride(cut_dataset: tuple[Dataset, VideoMetadata], tmp_path: Path) -> None:
    ds, _ = cut_dataset
    ds.build()
    with pytest.warns(VidlabelWarning, match=r"18 box and 0 mask annotations .*2 on frames without a trustworthy picture.*; "
                      r"16 by stride=2, frames='annotated', kinds=\['box', 'mask'\]"):  # fmt: skip
        report = export(ds, tmp_path / "out", stride=2, progress=False)
    assert report.samples == 17 and report.not_stored["box"] == 18 and report.not_stored["untrusted"] == 2
    summary = report.summary()
    assert "18 box and 0 mask annotations lie on frames this export does not store (2 on frames without a " in summary
    assert "the reader refuses those frames; 16 by stride / frames / kinds)" in summary
    with pytest.warns(VidlabelWarning, match=r"2 frames without a trustworthy picture are not stored"):
        report = export(ds, tmp_path / "all", frames="all", progress=False)
    store = open_store(tmp_path / "all")
    assert store.index == [("t", n) for n in range(33)] and report.untrusted_frames == 2


def test_export_of_metadata_without_untrusted_info_says_what_to_do(
    tmp_path: Path, cut_bframes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = Dataset.create(tmp_path / "ds")
    meta = probe(cut_bframes)
    ds.add_video(meta.replace(untrusted_frames=None))  # as registered by an older vidlabel: no warning
    ds.add_labels(["obj"])
    ds.add_annotations(box_rows(meta.frame_count), "t")
    ds.build()
    with pytest.raises(
        VideoDecodeError,
        match=r"(?s)export to .* stopped: cannot read frame 33 of video 't'.*registered before vidlabel recorded "
        r"which frames have no trustworthy picture.*running it again fails the same way.*"
        r"vidlabel add-video .* --video-id t --replace",
    ) as info:
        export(ds, tmp_path / "out", progress=False)
    assert "rerun" not in str(info.value) and info.value.video_id == "t"
    # Readers of the store the failed export left say why it is incomplete, not "rerun to resume".
    with pytest.raises(StoreIncompleteError, match=r"(?s)is incomplete: its export failed: export to .* stopped: "
                       r"cannot read frame 33 of video 't'.*--replace") as refused:  # fmt: skip
        open_store(tmp_path / "out")
    assert "resume" not in str(refused.value)
    # The remedy works: re-register (the CLI warns), build, export.
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        assert main(["add-video", str(ds.path), str(cut_bframes), "--replace", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "replaced video 't': 35 frames, 2 without a trustworthy picture" in out
    assert "vidlabel: warning: video 't': 2 frames have no trustworthy picture (33..34" in err
    ds.build()
    with pytest.warns(VidlabelWarning, match="2 on frames without a trustworthy picture"):
        report = export(ds, tmp_path / "out", progress=False)
    assert report.samples == 33 and open_store(tmp_path / "out").index == [("t", n) for n in range(33)]


def test_export_of_a_frame_probe_trusted_names_a_changed_file(tmp_path: Path, cut_bframes: Path) -> None:
    ds = Dataset.create(tmp_path / "ds")
    meta = probe(cut_bframes)
    ds.add_video(meta.replace(untrusted_frames=()))  # metadata that (wrongly) trusts every frame
    ds.add_labels(["obj"])
    ds.add_annotations(box_rows(meta.frame_count), "t")
    ds.build()
    with pytest.raises(VideoDecodeError, match=r"(?s)frame 33 .*Probe did not find this frame of video 't' "
                       r"untrusted.*may have changed.*--replace"):  # fmt: skip
        export(ds, tmp_path / "out", progress=False)


# -- CLI -------------------------------------------------------------------------------------------------------


def test_cli_add_video_prints_the_warning(
    tmp_path: Path, cut_bframes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["create", str(tmp_path / "ds")]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        assert main(["add-video", str(tmp_path / "ds"), str(cut_bframes), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "added video 't': 35 frames, 2 without a trustworthy picture, 64x48" in out
    assert err.startswith(
        "vidlabel: warning: video 't': 2 frames have no trustworthy picture (33..34: they follow a decode error "
        "before the next keyframe"
    )
    assert main(["add-video", str(tmp_path / "ds"), str(cut_bframes), "--no-progress"]) == 1
    assert "vidlabel add-video --replace" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        assert main(["add-video", str(tmp_path / "ds"), str(cut_bframes), "--no-progress",
                     "--metadata", '{"frame_count": 34}', "--replace"]) == 0  # fmt: skip
    assert Dataset.open(tmp_path / "ds").video("t").untrusted_frames == ((33, 33),)
    assert "replaced video 't': 34 frames, 1 without a trustworthy picture" in capsys.readouterr().out
    assert main(["info", str(tmp_path / "ds")]) == 0
    assert "  t: 34 frames (1 without a trustworthy picture), 64x48" in capsys.readouterr().out
