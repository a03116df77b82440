"""validate(): problems with stable codes, video ids, row ids and severities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vidlabel import Dataset, FrameIndex, FrameSamples, VideoMetadata, View
from vidlabel.dataset._validate import PROBLEM_CODES, Problem, for_export, validate_table
from vidlabel.errors import OptionError, VidlabelWarning
from vidlabel.spec import AnnotationTable
from vidlabel.video._probe import content_hash, resolve_video_path

HASH = "sha256:" + "11" * 32


def video(video_id: str = "clip", uri: str | None = None, **kw) -> VideoMetadata:
    return VideoMetadata(
        video_id=video_id,
        frame_count=30,
        fps=25,
        width=64,
        height=48,
        sources=[{"uri": uri or f"/missing/{video_id}.mp4"}],
        content_hash=content_hash(uri) if uri and Path(uri).is_file() else HASH,  # validate() hashes existing files
        **kw,
    )


def index(file_hash: str | None = HASH, n: int = 30) -> FrameIndex:
    return FrameIndex(timebase={"num": 1, "den": 25}, pts=np.arange(n), keyframes=[0], content_hash=file_hash)


def codes(problems: list[Problem]) -> list[tuple[str, str | None, int | None]]:
    return [(p.code, p.video_id, p.annotation_id) for p in problems]


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    d = Dataset.create(tmp_path / "ds")
    (tmp_path / "clip.mp4").write_bytes(b"not really a video, but it exists")
    d.add_video(video(uri=str(tmp_path / "clip.mp4"), frame_index=index(content_hash(tmp_path / "clip.mp4"))))
    d.add_labels(["person", "car", "goal"])
    return d


def box(frame: int, label: str = "person", b: tuple = (1, 2, 11, 22), **kw) -> dict:
    return {"kind": "box", "label": label, "start_frame": frame, "box": b, **kw}


def test_clean_dataset_has_no_problems(ds: Dataset) -> None:
    ds.add_annotations([box(1, track_id=1), box(2, track_id=1), box(2, "car", (30, 2, 40, 22))], "clip")
    assert ds.validate() == []


def test_severities_are_stable() -> None:
    assert PROBLEM_CODES["missing_video_file"] == "warning"
    assert PROBLEM_CODES["frame_index_stale"] == "warning"
    assert PROBLEM_CODES["frame_index_length"] == "error"
    assert PROBLEM_CODES["box_out_of_frame"] == "error"
    assert PROBLEM_CODES["track_label_conflict"] == "error"
    assert PROBLEM_CODES["duplicate_annotation"] == "warning"


def test_missing_video_file(ds: Dataset, tmp_path: Path) -> None:
    ds.add_video(video("gone"))
    ds.add_video(VideoMetadata(video_id="nosource", frame_count=3, fps=25, width=8, height=8))
    ds.add_video(video("remote", uri="s3://bucket/remote.mp4"))
    ds.add_video(video("as_uri", uri=(tmp_path / "clip.mp4").as_uri()))
    (ds.path / "rel.mp4").write_bytes(b"x")
    ds.add_video(video("relative", uri="rel.mp4"))
    problems = ds.validate(hash_files=False)  # existence only: these files do not hold the registered (made-up) bytes
    assert codes(problems) == [("missing_video_file", "gone", None), ("missing_video_file", "nosource", None)]
    changed = {p.video_id for p in ds.validate() if p.code == "video_file_changed"}
    assert changed == {"as_uri", "relative"}  # found by file:// uri and relative to the dataset folder, then hashed
    assert all(p.severity == "warning" for p in problems)
    assert "/missing/gone.mp4" in problems[0].message
    assert "no source file is recorded" in problems[1].message
    assert not ds.validate(check_files=False)


def test_a_video_whose_first_source_is_gone_is_found_by_its_next_one(ds: Dataset, tmp_path: Path) -> None:
    # before: validate looked at the first recorded source only, so validate --for-export refused with an error
    # (missing_video_file) a video export reads from its second source
    there = tmp_path / "clip.mp4"
    ds.add_video(video("two", uri=str(there)).replace(sources=[{"uri": "/missing/two.mp4"}, {"uri": str(there)}]))
    assert ds.validate(for_export=True) == []
    assert resolve_video_path(ds.video("two")) == there  # where export and the readers read it
    ds.add_video(video("neither").replace(sources=[{"uri": "/missing/a.mp4"}, {"uri": "/missing/b.mp4"}]))
    (p,) = ds.validate(for_export=True)
    assert (p.code, p.video_id, p.severity) == ("missing_video_file", "neither", "error")
    assert p.message == "video file not found (tried /missing/a.mp4, /missing/b.mp4)"


def test_a_folder_where_the_video_file_was_is_a_missing_file_named_as_a_folder(ds: Dataset, tmp_path: Path) -> None:
    # export refuses such a video (resolve_video_path takes files only): validate --for-export must say so first
    (tmp_path / "was_a_file.mp4").mkdir()
    ds.add_video(video("folder", uri=str(tmp_path / "was_a_file.mp4")))
    (p,) = ds.validate(hash_files=False)
    assert (p.code, p.video_id, p.severity) == ("missing_video_file", "folder", "warning")
    assert p.message == f"video file not found (tried {tmp_path / 'was_a_file.mp4'} (a folder, not a video file))"
    (e,) = for_export(ds.validate())
    assert (e.code, e.video_id, e.severity) == ("missing_video_file", "folder", "error")


def test_frame_index_stale_and_length(ds: Dataset) -> None:
    ds.update_video(ds.video("clip").replace(frame_index=index("sha256:" + "22" * 32)))
    (p,) = ds.validate()
    assert (p.code, p.severity, p.video_id) == ("frame_index_stale", "warning", "clip")
    assert "22222222" in p.message and "vidlabel index" in p.message
    ds.update_video(ds.video("clip").replace(frame_index=index(ds.video("clip").content_hash, n=31)))
    (p,) = ds.validate()
    assert (p.code, p.severity) == ("frame_index_length", "error")
    assert "covers 31 frames but the metadata says frame_count=30" in p.message


def test_rows_that_no_longer_fit_the_video(ds: Dataset) -> None:
    m = np.zeros((48, 64), np.uint8)
    m[1:3, 1:3] = 1
    ids = ds.add_annotations(
        [
            box(1, b=(1, 2, 60, 22)),
            box(25),
            {"kind": "mask", "label": "car", "start_frame": 2, "mask": m},
            {"kind": "marker", "label": "goal", "start_frame": 15, "end_frame": 29},
        ],
        "clip",
    )
    clip_hash = ds.video("clip").content_hash
    shrunk = ds.video("clip").replace(width=50, frame_count=20, frame_index=index(clip_hash, n=20))
    with pytest.warns(
        VidlabelWarning,
        match=r"video 'clip' in .*: 2 annotation rows past its last frame 19 \(up to frame 29\); 1 box outside its "
        r"50x48 frame \(up to x 60, y 22\); 1 mask of another size than its 50x48 frame \(e.g. 64x48\); the rows "
        r"are kept: validate reports them as errors",
    ):
        ds.update_video(shrunk)
    got = codes(ds.validate())
    assert ("box_out_of_frame", "clip", ids[0]) in got
    assert ("frame_out_of_range", "clip", ids[1]) in got
    assert ("mask_size_mismatch", "clip", ids[2]) in got
    assert ("frame_out_of_range", "clip", ids[3]) in got
    assert len(got) == 4
    assert all(p.severity == "error" for p in ds.validate())


def test_a_larger_file_warns_of_the_masks_it_no_longer_fits(ds: Dataset) -> None:
    # before: only rows past the new end or boxes outside the new size were said; masks of the old size, which
    # validate rates as errors and build refuses, went unsaid (every box fits a larger frame)
    m = np.zeros((48, 64), np.uint8)
    m[1:3, 1:3] = 1
    ids = ds.add_annotations([box(1), {"kind": "mask", "label": "car", "start_frame": 2, "mask": m}], "clip")
    clip = ds.video("clip")
    with pytest.warns(
        VidlabelWarning,
        match=r"video 'clip' in .*: 1 mask of another size than its 128x96 frame \(e.g. 64x48\); the rows are "
        r"kept: validate reports them as errors \(frame_out_of_range, box_out_of_frame, mask_size_mismatch\)",
    ):
        ds.update_video(clip.replace(width=clip.width * 2, height=clip.height * 2))
    assert codes(ds.validate()) == [("mask_size_mismatch", "clip", ids[1])]


def test_duplicates_and_track_frame_conflicts(ds: Dataset) -> None:
    ids = ds.add_annotations([box(1, track_id=2), box(1, "car", (20, 2, 30, 12)), box(5, track_id=3)], "clip")
    with (
        pytest.warns(VidlabelWarning, match=r"video 'clip': 1 of the 5 rows just added equal rows already stored "
                     r"\(row 0 \(0-based\), annotation 4, equals annotation 2: same kind, label, view, frames, box and mask\)"),
        pytest.warns(VidlabelWarning, match=r"video 'clip': rows 2 and 3 \(0-based\) of the input are the same annotation"),
    ):  # fmt: skip
        more = ds.add_annotations(
            [
                box(1, "car", (20, 2, 30, 12)),  # same as ids[1]
                box(5, b=(40, 2, 50, 12), track_id=3),  # track 3 twice on frame 5
                {"kind": "marker", "label": "goal", "start_frame": 3, "end_frame": 4},
                {"kind": "marker", "label": "goal", "start_frame": 3, "end_frame": 4},
                {"kind": "marker", "label": "goal", "start_frame": 3, "end_frame": 5},
            ],
            "clip",
        )
    problems = ds.validate()
    assert codes(problems) == [
        ("duplicate_annotation", "clip", more[0]),
        ("track_frame_conflict", "clip", more[1]),
        ("duplicate_annotation", "clip", more[3]),
    ]
    assert f"same box as annotation {ids[1]}" in problems[0].message
    assert f"track 3 already has box annotation {ids[2]} on frame 5" in problems[1].message
    assert all(p.severity == "warning" for p in problems)
    ds.set_status([more[0]], "rejected")  # rejected rows are not checked
    assert ("duplicate_annotation", "clip", more[0]) not in codes(ds.validate())


def test_views_problems(ds: Dataset) -> None:
    ds.add_view("left", crop=(0, 0, 32, 48))
    ids = ds.add_annotations([box(1, b=(40, 2, 50, 12), view_id="left"), box(2, view_id="left")], "clip")
    problems = ds.validate()
    assert codes(problems) == [("box_outside_view", "clip", ids[0])]
    with pytest.warns(VidlabelWarning, match=r"video 'clip' .*: 1 box outside its 30x48 frame \(up to x 50, y 12\)"):
        ds.update_video(ds.video("clip").replace(width=30))
    got = codes(ds.validate())
    assert ("view_outside_frame", "clip", ids[0]) in got


def make_table(rows: list[dict], labels=("a", "b"), video_ids=("v",), view_ids=()) -> AnnotationTable:
    n = len(rows)
    col = lambda name, default: [r.get(name, default) for r in rows]  # noqa: E731
    return AnnotationTable(
        labels=labels,
        video_ids=video_ids,
        view_ids=view_ids,
        annotation_id=np.arange(1, n + 1),
        video=col("video", 0),
        kind=col("kind", 0),
        label=col("label", 0),
        start_frame=col("start", 0),
        end_frame=[r.get("end", r.get("start", 0)) for r in rows],
        box=np.array(col("box", (1.0, 1.0, 5.0, 5.0)), float).reshape(n, 4),
        track_id=col("track", -1),
        origin=np.zeros(n),
        confidence=np.full(n, np.nan),
        status=np.zeros(n),
        view=col("view", -1),
        mask_offsets=np.zeros(n + 1),
        mask_counts=np.zeros(0),
        mask_size=np.zeros((n, 2)),
    )


def test_track_label_conflict_in_stored_rows() -> None:
    # add_annotations refuses this; validate still finds it in data written by other means.
    table = make_table(
        [
            {"track": 7, "label": 0, "start": 0},
            {"track": 7, "label": 0, "start": 1},
            {"track": 7, "label": 1, "start": 2},
            {"track": 8, "label": 1, "start": 2, "box": (10, 10, 20, 20)},
            {"track": 2**40, "label": 0, "start": 3},
            {"track": 2**40, "label": 1, "start": 4},
        ]
    )
    problems = validate_table(table, {"v": video("v")}, {}, check_files=False)
    assert codes(problems) == [("track_label_conflict", "v", 3), ("track_label_conflict", "v", 6)]
    assert "track 7 carries labels 'a', 'b'" in problems[0].message
    assert problems[0].severity == "error"


def test_invalid_boxes_in_stored_rows() -> None:
    table = make_table([{"box": (5, 5, 1, 1)}, {"box": (np.nan, 1, 2, 3)}, {"kind": 2, "box": (np.nan,) * 4}])
    problems = validate_table(table, {"v": video("v")}, {}, check_files=False)
    assert codes(problems) == [("invalid_box", "v", 1), ("invalid_box", "v", 2)]


def test_view_outside_frame_in_table() -> None:
    table = make_table([{"view": 0}], view_ids=("wide",))
    views = {"wide": View("wide", (0, 0, 100, 10))}
    problems = validate_table(table, {"v": video("v")}, views, check_files=False)
    assert codes(problems) == [("view_outside_frame", "v", 1)]
    assert "crops (0, 0, 100, 10), which does not fit inside the 64x48 frame (1 row uses it)" in problems[0].message


def test_view_outside_frame_for_every_view_and_video_used_or_not(ds: Dataset) -> None:
    ds.add_view("wide", crop=(0, 0, 64, 20))
    ds.add_view("small", crop=(0, 0, 16, 16))
    assert ds.validate() == []
    ds.add_video(video("narrow", uri=str(ds.path.parent / "clip.mp4")).replace(width=40))  # added after the view
    problems = ds.validate()
    assert codes(problems) == [("view_outside_frame", "narrow", None)]
    # no row of the video uses the view: a warning, so a smaller video added after the view blocks no build
    assert problems[0].severity == "warning"
    assert problems[0].message == (
        "view 'wide' crops (0, 0, 64, 20), which does not fit inside the 40x48 frame (no rows use it; FrameSamples "
        "with this view refuses this video: leave it out with videos=)"
    )
    release, _ = ds.build()
    with pytest.raises(OptionError, match=r"view 'wide': crop \(0, 0, 64, 20\) does not fit inside video 'narrow'"):
        FrameSamples(ds, release=release.release_id, view_id="wide")
    assert len(FrameSamples(ds, release=release.release_id, view_id="wide", videos=["clip"])) == 0
    ids = ds.add_annotations([box(1, view_id="small"), box(2, view_id="small")], "narrow")
    assert codes(ds.validate()) == [("view_outside_frame", "narrow", None)]
    with pytest.warns(
        VidlabelWarning, match=r"video 'narrow' .*: 2 boxes outside its 10x48 frame \(up to x 11, y 22\)"
    ):
        ds.update_video(ds.video("narrow").replace(width=10))
    got = ds.validate()
    assert codes(got) == [
        ("view_outside_frame", "narrow", None),
        ("box_out_of_frame", "narrow", ids[0]),
        ("view_outside_frame", "narrow", ids[0]),
        ("box_out_of_frame", "narrow", ids[1]),
    ]
    assert "(2 rows use it)" in got[2].message


def test_problem_text_and_dict() -> None:
    p = Problem("box_out_of_frame", "error", "box leaves", "clip", 3)
    assert str(p) == "error box_out_of_frame (video 'clip', annotation 3): box leaves"
    assert p.to_dict() == {
        "code": "box_out_of_frame",
        "severity": "error",
        "message": "box leaves",
        "video_id": "clip",
        "annotation_id": 3,
    }
    assert str(Problem("x", "warning", "m")) == "warning x: m"


def test_validate_for_export_checks_the_latest_release_as_it_pins_a_re_registered_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file was re-encoded and re-registered after the build, with no new build: export of the latest release
    refuses the video (it pins the old bytes), so validate --for-export must not exit 0."""
    from tests.media import encode_clip
    from vidlabel import export
    from vidlabel.cli import main
    from vidlabel.errors import VideoChangedError
    from vidlabel.video._probe import probe

    clip = tmp_path / "a.mp4"
    encode_clip(clip, n_frames=12, width=32, height=24)
    ds = Dataset.create(tmp_path / "ds")
    ds.add_video(probe(clip, progress=False))
    ds.add_labels(["p"])
    ds.add_annotations([{"kind": "box", "label": "p", "start_frame": 3, "box": [1, 1, 9, 9]}], "a")
    rel, _ = ds.build()
    assert ds.validate(for_export=True) == []
    encode_clip(clip, n_frames=12, width=32, height=24, gop=3)  # other bytes, same frames and size
    ds.update_video(probe(clip, progress=False))  # re-registered; no build since
    assert [p.code for p in ds.validate()] == []  # the live dataset is fine
    problems = ds.validate(for_export=True)
    assert [(p.code, p.severity, p.video_id) for p in problems] == [("video_file_changed", "error", "a")]
    assert f"release {rel.release_id} (the latest" in problems[0].message and "vidlabel build" in problems[0].message
    assert main(["validate", str(ds.path), "--for-export"]) == 1
    assert "video_file_changed" in capsys.readouterr().out
    with pytest.raises(VideoChangedError):  # what validate foretold
        export(ds, tmp_path / "store", progress=False)
    new, _ = ds.build()
    assert new.release_id != rel.release_id and ds.validate(for_export=True) == []
