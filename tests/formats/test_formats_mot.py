"""MOT Challenge import/export: 1-based frames and ids, xywh verbatim, consider flag, scores, seqinfo.ini."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.formats_util import assert_same_rows, dataset, meta, random_tracks
from vidlabel.errors import FormatError
from vidlabel.formats import FORMATS, export_labels, import_labels


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_gt_frames_ids_xywh_and_consider(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    gt = write(
        tmp_path / "seq" / "gt" / "gt.txt", "3, 2, 10, 20, 5, 6, 1, 3, 0.5\n1,4,10.5,20,5,6,1,1,1\n2,-1,1,1,2,2,0,1,1\n"
    )
    rep = import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person", 3: "car"})
    rows = ds.annotations("cam1")
    got = sorted((r["start_frame"], r["track_id"], r["label"], r["box"]) for r in rows)
    assert got == [(0, 3, "person", (10.5, 20.0, 15.5, 26.0)), (2, 1, "car", (10.0, 20.0, 15.0, 26.0))]
    assert rep.skipped == {
        "consider flag 0 (gt column 7; include_ignored=True or --option include_ignored=true keeps them)": 1
    }
    assert rep.videos["cam1"].counts == {"box": 2} and rep.videos["cam1"].annotation_ids == [
        r["annotation_id"] for r in rows
    ]
    assert all(r["origin"] == "human" and r["confidence"] is None for r in rows)


def test_include_ignored_keeps_consider_zero_untracked(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    gt = write(tmp_path / "gt.txt", "2,-1,1,1,2,2,0,1,1\n")
    import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"}, include_ignored=True)
    (row,) = ds.annotations("cam1")
    assert row["track_id"] is None and row["start_frame"] == 1 and row["box"] == (1.0, 1.0, 3.0, 3.0)


def test_rows_with_id_zero_or_negative_are_untracked_and_noted(tmp_path: Path) -> None:
    # behaviour unchanged (ids <= 0 are untracked); the note says how many, and id 0 apart (a 0-based tracker)
    ds = dataset(tmp_path / "ds")
    res = write(tmp_path / "res.txt", "1,0,1,1,2,2\n2,0,1,1,2,2\n1,1,5,5,2,2\n3,-1,1,1,2,2\n")
    rep = import_labels(ds, "mot", res, video_id="cam1", label="person")
    got = sorted((r["start_frame"], -1 if r["track_id"] is None else r["track_id"]) for r in ds.annotations("cam1"))
    assert got == [(0, -1), (0, 0), (1, -1), (2, -1)]  # only the id-1 row is tracked (track 0)
    assert rep.notes == [
        "3 rows with a track id <= 0 (column 2) imported untracked (MOT ids are 1-based: an id <= 0 is untracked, "
        "see docs/how-to/label-formats.md, MOT); 2 rows with id 0: a tracker that numbers its ids from 0 loses object 0's "
        "track (renumber its ids from 1)"
    ]
    ds2 = dataset(tmp_path / "ds2")
    rep = import_labels(ds2, "mot", write(tmp_path / "res2.txt", "1,-1,1,1,2,2\n"), video_id="cam1", label="person")
    assert rep.notes == [
        "1 row with a track id <= 0 (column 2) imported untracked (MOT ids are 1-based: an id <= 0 is untracked, "
        "see docs/how-to/label-formats.md, MOT)"
    ]


def test_det_with_scores_is_model_rows_untracked(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    det = write(tmp_path / "det.txt", "1,-1,4,5,6,7,0.75,-1,-1,-1\n5,-1,4,5,6,7,12.5,-1,-1,-1\n")
    rep = import_labels(ds, "mot", det, video_id="cam1", label="person")
    rows = sorted(ds.annotations("cam1"), key=lambda r: r["start_frame"])
    assert [(r["start_frame"], r["origin"], r["confidence"], r["track_id"]) for r in rows] == [
        (0, "model", 0.75, None),
        (4, "model", None, None),
    ]
    assert any(n.startswith("1 score outside [0, 1] not kept") for n in rep.notes)


def test_one_based_pixels_and_labels_txt(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    write(tmp_path / "labels.txt", "person\ncar\n")
    gt = write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,2,1\n")
    import_labels(ds, "mot", gt, video_id="cam1", one_based_pixels=True)
    (row,) = ds.annotations("cam1")
    assert row["label"] == "car" and row["box"] == (9.0, 19.0, 14.0, 25.0)


def test_six_columns_need_label(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "x.txt", "1,1,10,20,5,6\n")
    with pytest.raises(FormatError, match=r"x.txt line 1: a 6-column MOT file has no class column"):
        import_labels(ds, "mot", f, video_id="cam1")
    import_labels(ds, "mot", f, video_id="cam1", label="car")
    assert [r["label"] for r in ds.annotations("cam1")] == ["car"]


def test_seqinfo_mismatch_is_an_error(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    write(
        tmp_path / "seq" / "seqinfo.ini",
        "[Sequence]\nname=cam1\nframeRate=25\nseqLength=30\nimWidth=640\nimHeight=48\n",
    )
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", "1,1,10,20,5,6,1,1,1\n")
    with pytest.raises(
        FormatError, match=r"seqinfo.ini imWidth: imWidth=640 disagrees with video 'cam1', whose width is 64"
    ):
        import_labels(ds, "mot", gt, label_map={1: "person"})
    assert ds.annotations() == []
    write(
        tmp_path / "seq" / "seqinfo.ini", "[Sequence]\nname=cam1\nframeRate=30\nseqLength=30\nimWidth=64\nimHeight=48\n"
    )
    with pytest.raises(FormatError, match=r"frameRate=30 disagrees with video 'cam1', whose rate is 25.000 fps"):
        import_labels(ds, "mot", gt, label_map={1: "person"})
    write(
        tmp_path / "seq" / "seqinfo.ini", "[Sequence]\nname=cam1\nframeRate=25\nseqLength=30\nimWidth=64\nimHeight=48\n"
    )
    rep = import_labels(ds, "mot", gt, label_map={1: "person"})  # the video comes from seqinfo's name
    assert list(rep.videos) == ["cam1"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1,1,10,20\n", r"bad.txt line 1: has 4 columns"),
        ("1,1,10,20,5,6,1,1,1\nx,1,10,20,5,6,1,1,1\n", r"bad.txt line 2: not a number in 'x,1,10"),
        ("1,1,10,20,0,6,1,1,1\n", r"bad.txt line 1: box x=10.0, y=20.0, w=0.0"),
        (
            "1,1,10,20,5,6,1,1,1\n31,1,10,20,5,6,1,1,1\n",
            r"bad.txt line 2: frame 31 \(column 1, 1-based\) is outside video 'cam1': frames 1..30 \(30 frames\)$",  # once
        ),
        ("0,1,10,20,5,6,1,1,1\n", r"bad.txt line 1: frame 0 \(column 1, 1-based\) is outside"),
        (
            "1,1,10,20,5,6,1,4,1\n",
            r"bad.txt line 1: class 4 \(column 8\) is not in the label map \(known classes: 1=person\)",
        ),
        ("1,1,100,20,5,6,1,1,1\n", r"bad.txt line 1: field 'box' \(video 'cam1'\): .*outside"),
        ("1.5,1,10,20,5,6,1,1,1\n", r"bad.txt line 1: frame '1.5' and id '1' \(columns 1, 2\) must be whole numbers"),
        ("2,1.5,10,20,5,6,1,1,1\n", r"bad.txt line 1: frame '2' and id '1.5' \(columns 1, 2\) must be whole"),
        ("1,1,10,20,5,6,1,1,1\n2,1,10,20,5,6,2,1,1\n", r"bad.txt line 2: consider flag \(column 7\) is '2'; gt lines "),
        (
            "1,1,10,20,5,6,-1,1,1\n",
            r"bad.txt line 1: consider flag \(column 7\) is '-1'; gt lines hold 0 \(ignore\) or 1",
        ),
        ("1,1,10,20,5,6,nan,1,1\n", r"bad.txt line 1: consider flag \(column 7\) is 'nan'"),
        ("1,1,10,20,5,6,0.5,1,1\n", r"bad.txt line 1: consider flag \(column 7\) is '0.5'"),
    ],
)
def test_bad_files_name_the_line(tmp_path: Path, text: str, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "bad.txt", text)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "mot", f, video_id="cam1", label_map={1: "person"})
    assert ds.annotations() == []


def test_unknown_label_refused_with_list_unless_add_labels(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds", labels=("person",))
    f = write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,2,1\n")
    with pytest.raises(FormatError, match=r"label\(s\) 'bike' are not in the dataset \(known: person\)"):
        import_labels(ds, "mot", f, video_id="cam1", label_map={2: "bike"})
    assert ds.annotations() == [] and ds.labels() == ["person"]
    dry = import_labels(ds, "mot", f, video_id="cam1", label_map={2: "bike"}, add_labels=True, dry_run=True)
    assert dry.labels_added == ["bike"] and dry.videos["cam1"].counts == {"box": 1} and ds.labels() == ["person"]
    assert ds.annotations() == []
    import_labels(ds, "mot", f, video_id="cam1", label_map={2: "bike"}, add_labels=True)
    assert ds.labels() == ["person", "bike"] and len(ds.annotations()) == 1


def test_whole_float_frames_are_accepted(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", "3.0,2.000,10,20,5,6,1,1,1\n")
    import_labels(ds, "mot", f, video_id="cam1", label_map={1: "person"})
    assert [(r["start_frame"], r["track_id"]) for r in ds.annotations()] == [(2, 1)]


@pytest.mark.parametrize("name", ["one_based_pixels", "include_ignored"])
def test_boolean_options_refuse_other_values(tmp_path: Path, name: str) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,1,1\n")
    with pytest.raises(FormatError, match=rf"option {name}='maybe'; allowed: True, False"):
        import_labels(ds, "mot", f, video_id="cam1", label_map={1: "person"}, **{name: "maybe"})
    assert ds.annotations() == []


def test_unknown_format_and_option(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", "1,1,10,20,5,6\n")
    with pytest.raises(FormatError, match=r"unknown format 'motx'; known: .*mot"):
        import_labels(ds, "motx", f, video_id="cam1")
    with pytest.raises(FormatError, match=r"format 'mot' takes no option\(s\) frames"):
        import_labels(ds, "mot", f, video_id="cam1", label="car", frames="auto")
    assert "mot" in FORMATS


def test_a_misspelt_keyword_is_refused_before_the_file_is_read(tmp_path: Path) -> None:
    # video= for video_id=: refused as an option MOT does not take, with the right keyword named, not by the
    # importer's "pass video_id=" after it read the file
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", "1,1,10,20,5,6\n")
    message = (
        r"format 'mot' takes no option\(s\) video \(its options: one_based_pixels, include_ignored, read_as, include_det\); "
        r"did you mean video= -> video_id=\?"
    )
    with pytest.raises(FormatError, match=message):
        import_labels(ds, "mot", f, video="cam1", label="car")
    with pytest.raises(FormatError, match=r"format 'cvat-video' takes no option\(s\) frames \(its options: none"):
        import_labels(ds, "cvat-video", tmp_path / "missing.xml", frames="auto")  # refused before it is opened
    with pytest.raises(FormatError, match=r"labelmap, videoid \(its options: .*\); did you mean labelmap= -> "
                       r"label_map=, videoid= -> video_id=\?"):  # fmt: skip
        import_labels(ds, "mot", f, labelmap={1: "car"}, videoid="cam1")
    assert ds.annotations() == []


def test_export_layout_and_counts(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    ds.add_annotations(
        [
            {"kind": "box", "label": "car", "start_frame": 4, "box": (1, 2, 11, 22), "track_id": 0},
            {"kind": "box", "label": "person", "start_frame": 0, "box": (1.5, 2, 3, 4)},
            {
                "kind": "box",
                "label": "car",
                "start_frame": 2,
                "box": (1, 2, 3, 4),
                "origin": "model",
                "confidence": 0.5,
            },
            {"kind": "marker", "label": "goal", "start_frame": 1, "end_frame": 3},
        ],
        "cam1",
    )
    rel, _ = ds.build()
    rep = export_labels(ds, "mot", tmp_path / "out", release=rel.release_id)
    gt = (tmp_path / "out" / "cam1" / "gt" / "gt.txt").read_text().splitlines()
    assert gt == ["1,-1,1.5,2.0,1.5,2.0,1,1,1", "5,1,1.0,2.0,10.0,20.0,1,2,1"]
    det = (tmp_path / "out" / "cam1" / "det" / "det.txt").read_text().splitlines()
    assert det == ["3,-1,1.0,2.0,2.0,2.0,0.5,-1,-1,-1"]
    assert (tmp_path / "out" / "cam1" / "gt" / "labels.txt").read_text() == "person\ncar\ngoal\n"
    # the model rows' one label, which the import of the folder reads back
    assert (tmp_path / "out" / "cam1" / "det" / "labels.txt").read_text() == "car\n"
    assert rep.counts == {"box": 3} and rep.not_written == {"marker (MOT holds no markers)": 1}
    assert "not written (the format cannot hold them): marker (MOT holds no markers): 1" in str(rep)
    # the report names every file written (it said "to 2 files" for 4)
    assert sorted(rep.paths) == sorted(str(p) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert "wrote 3 box to 5 files" in str(rep)
    ds2 = dataset(tmp_path / "ds2")
    import_labels(ds2, "mot", tmp_path / "out")
    assert sorted((r["label"], r["origin"]) for r in ds2.annotations()) == [
        ("car", "human"), ("car", "model"), ("person", "human"),
    ]  # fmt: skip


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=random_tracks(untracked=True))
def test_round_trip(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("mot")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20)])
    ds.add_annotations(rows, "cam1")
    _rel, _ = ds.build()
    export_labels(ds, "mot", tmp / "out", release="latest")
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20)])
    import_labels(ds2, "mot", tmp / "out" / "cam1" / "gt" / "gt.txt", video_id="cam1")  # labels.txt beside it
    assert_same_rows(ds2.annotations(), ds.annotations())


def test_a_second_file_gets_new_track_ids_unless_keep(tmp_path: Path) -> None:
    # Two MOT files of two different cameras' worth of people, both numbering their tracks from 1.
    first = write(tmp_path / "a.txt", "1,1,0,0,5,5,1,1,1\n2,1,1,0,5,5,1,1,1\n1,2,20,0,5,5,1,1,1\n")
    second = write(tmp_path / "b.txt", "3,1,40,0,5,5,1,1,1\n4,2,50,0,5,5,1,1,1\n")
    ds = dataset(tmp_path / "ds")
    import_labels(ds, "mot", first, video_id="cam1", label_map={1: "person"})
    rep = import_labels(ds, "mot", second, video_id="cam1", label_map={1: "person"})
    tracks = {(r["start_frame"], r["box"][0]): r["track_id"] for r in ds.annotations("cam1")}
    # file a: MOT ids 1, 2 -> tracks 0, 1; file b's ids 1, 2 (tracks 0, 1 in the file) come after them: 2, 3
    assert tracks == {(0, 0.0): 0, (1, 1.0): 0, (0, 20.0): 1, (2, 40.0): 2, (3, 50.0): 3}
    assert any("the file's tracks 0..1 are stored as 2..3" in n for n in rep.notes)
    kept = dataset(tmp_path / "kept")
    import_labels(kept, "mot", first, video_id="cam1", label_map={1: "person"})
    import_labels(kept, "mot", second, video_id="cam1", label_map={1: "person"}, track_ids="keep")
    assert sorted(r["track_id"] for r in kept.annotations("cam1")) == [0, 0, 0, 1, 1]
    with pytest.raises(FormatError, match=r"option track_ids='renumber'; allowed: 'new' \(the default\), 'keep'"):
        import_labels(kept, "mot", second, video_id="cam1", label_map={1: "person"}, track_ids="renumber")


def test_frame_number_past_int64_is_outside_the_video(tmp_path: Path) -> None:
    # a 20-digit frame overflowed NumPy's int64 in the frame check: a raw OverflowError
    ds = dataset(tmp_path / "ds")
    gt = write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,1,1\n20000000000000000000,1,10,20,5,6,1,1,1\n")
    with pytest.raises(
        FormatError,
        match=r"gt\.txt line 2: frame 20000000000000000000 \(column 1, 1-based\) is outside video 'cam1': frames 1..30",
    ):
        import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"})
    assert ds.annotations() == []


@pytest.mark.parametrize(
    ("seqinfo", "line", "match"),
    [
        # raw ValueError / OverflowError / InterpolationError before; a class 1.7 was read as class 1
        ("", "1,1,10,20,5,6,1,nan,1", r"gt\.txt line 1: class nan \(column 8\) is not a whole number"),
        ("", "1,1,10,20,5,6,1,inf,1", r"gt\.txt line 1: class inf \(column 8\) is not a whole number"),
        ("", "1,1,10,20,5,6,1,1.7,1", r"gt\.txt line 1: class 1.7 \(column 8\) is not a whole number"),
        ("imWidth=wide\n", "1,1,10,20,5,6,1,1,1", r"seqinfo\.ini imWidth: imWidth='wide'; expected a whole number"),
        (
            "seqLength=30.5\n",
            "1,1,10,20,5,6,1,1,1",
            r"seqinfo\.ini seqLength: seqLength='30.5'; expected a whole number",
        ),
        ("frameRate=fast\n", "1,1,10,20,5,6,1,1,1", r"seqinfo\.ini frameRate: frameRate='fast'; expected a number"),
        ("frameRate=nan\n", "1,1,10,20,5,6,1,1,1", r"seqinfo\.ini frameRate: frameRate='nan'; expected a number"),
    ],
)
def test_bad_class_and_seqinfo_numbers_are_refused(tmp_path: Path, seqinfo: str, line: str, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    write(tmp_path / "seq" / "seqinfo.ini", f"[Sequence]\n{seqinfo}")
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", line + "\n")
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"})
    assert ds.annotations() == []


def test_seqinfo_name_with_a_percent_sign_is_text(tmp_path: Path) -> None:
    # configparser's interpolation read '%' as a reference: a raw InterpolationSyntaxError
    ds = dataset(tmp_path / "ds")
    write(tmp_path / "seq" / "seqinfo.ini", "[Sequence]\nname=cam1 100%\nimWidth=64\n")
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", "1,1,10,20,5,6,1,1,1\n")
    with pytest.raises(FormatError, match=r"video 'cam1 100%' of the file is not a registered video"):
        import_labels(ds, "mot", gt, label_map={1: "person"})
    import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"})
    assert len(ds.annotations()) == 1


def test_one_label_for_a_gt_file_of_several_classes_is_refused(tmp_path: Path) -> None:
    # 9-column gt: column 8 is the class (MOT16/17: 1 pedestrian, 3 car, 7 static person, ...). label= gives every
    # row one label; over a file of several classes it merged cars into persons without a word.
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,1,1\n2,2,10,20,5,6,1,3,1\n3,3,10,20,5,6,0,7,1\n")
    with pytest.raises(FormatError, match=r"gt.txt line 2: class 3 \(column 8\) .* line 1 is class 1"):
        import_labels(ds, "mot", f, video_id="cam1", label="person")
    assert ds.annotations("cam1") == []
    # one class among the rows imported (line 3 is consider 0, skipped): label= names it
    write(tmp_path / "gt.txt", "1,1,10,20,5,6,1,1,1\n3,3,10,20,5,6,0,7,1\n")
    import_labels(ds, "mot", f, video_id="cam1", label="person")
    assert [r["label"] for r in ds.annotations("cam1")] == ["person"]


@pytest.mark.parametrize("frame", [0, 31])
def test_a_frame_outside_the_video_is_named_as_the_file_writes_it(tmp_path: Path, frame: int) -> None:
    # MOT frames are 1-based (column 1): a 30-frame video holds frames 1..30. The error said "frame -1 (0-based) is
    # outside ... frames 0..29" for a line whose column 1 is 0: neither the value in the file nor its range.
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "gt.txt", f"1,1,10,20,5,6,1,1,1\n{frame},1,10,20,5,6,1,1,1\n")
    with pytest.raises(
        FormatError, match=rf"gt.txt line 2: frame {frame} \(column 1, 1-based\) is outside video 'cam1': frames 1..30"
    ):
        import_labels(ds, "mot", f, video_id="cam1", label_map={1: "person"})


def test_track_ids_past_2_53_stay_distinct_and_exact(tmp_path: Path) -> None:
    # ids were parsed as floats: 9007199254740993 and ...992 both became track 9007199254740991, merging two
    # objects into one track (two boxes of it on frame 0) without a word; '1_0' was read as frame 10
    ds = dataset(tmp_path / "ds")
    gt = write(tmp_path / "gt.txt", "1,9007199254740993,10,10,5,5,1,1,1\n1,9007199254740992,20,20,5,5,1,1,1\n")
    import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"}, track_ids="keep")
    assert sorted(r["track_id"] for r in ds.annotations()) == [9007199254740991, 9007199254740992]
    for text, match in [
        ("1,1.0e17,10,10,5,5,1,1,1\n", r"gt2\.txt line 1: frame '1' and id '1.0e17' \(columns 1, 2\) must be whole"),
        ("1_0,1,10,10,5,5,1,1,1\n", r"gt2\.txt line 1: not a number in '1_0,1,.*digit separator"),
    ]:
        with pytest.raises(FormatError, match=match):
            import_labels(ds, "mot", write(tmp_path / "gt2.txt", text), video_id="cam1", label_map={1: "person"})
    assert len(ds.annotations()) == 2
