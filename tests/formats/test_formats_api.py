"""vidlabel.formats: the registry, the CLI commands, dry runs, reports and the public names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import vidlabel.formats as formats
from tests.formats_util import dataset
from vidlabel.cli import main
from vidlabel.errors import FormatError, VidlabelError, VidlabelWarning
from vidlabel.formats import FORMATS, export_labels, import_labels


def test_registry_names_and_public_docstrings() -> None:
    assert sorted(FORMATS) == [
        "coco-vid", "cvat-video", "label-studio", "mediasequence", "mot", "ytvis",
    ]  # fmt: skip
    for name in formats.__all__:
        assert getattr(formats, name).__doc__, name
    assert issubclass(FormatError, VidlabelError) and issubclass(FormatError, ValueError)
    assert str(FormatError("x.txt line 3: bad")) == "x.txt line 3: bad"


def test_cli_import_help_lists_formats(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    out = capsys.readouterr().out
    for name, fmt in FORMATS.items():
        assert name in out and fmt.summary in out


def test_cli_import_dry_run_json_then_import_and_export(tmp_path: Path, capsys) -> None:
    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n2,1,11,20,5,6,1,1,1\n")
    args = ["import", str(tmp_path / "ds"), "mot", str(gt), "--video", "cam1", "--label-map", "1=person,3=car"]
    assert main([*args, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] is True and report["videos"]["cam1"]["counts"] == {"box": 2} and ds.annotations() == []
    assert main(args) == 0
    out = capsys.readouterr().out
    ids = [r["annotation_id"] for r in ds.annotations()]
    assert f"video 'cam1': 2 box (ids {ids[0]}..{ids[1]})" in out
    ds.build()
    assert main(["export-labels", str(tmp_path / "ds"), "coco-vid", str(tmp_path / "out.json")]) == 0
    assert "wrote 2 box to" in capsys.readouterr().out
    doc = json.loads((tmp_path / "out.json").read_text())
    assert [a["bbox"] for a in doc["annotations"]] == [[10.0, 20.0, 5.0, 6.0], [11.0, 20.0, 5.0, 6.0]]


def test_rows_repeated_in_the_file_or_already_stored_warn_and_a_dry_run_reports_them(tmp_path: Path, capsys) -> None:
    # a file holding one box twice was imported doubled without a word, and a dry run said nothing of rows
    # repeated in the file nor of rows already stored (a file imported twice): the import warns, the dry run reports;
    # the import's warning named 0-based rows of the rows read, not the file's lines (a line left out shifts them)
    ds = dataset(tmp_path / "ds")
    lines = ["2,9,11,20,5,6,0,1,1", "1,1,10,20,5,6,1,1,1", "3,2,30,20,5,6,1,1,1", "1,1,10,20,5,6,1,1,1"]
    gt = tmp_path / "gt.txt"
    gt.write_text("\n".join(lines) + "\n")
    again = [i for i, line in enumerate(lines) if line in lines[:i]]  # 0-based rows repeating an earlier one
    (row,) = again
    first = lines.index(lines[row])
    same = "same kind, label, view, frames, box and mask"
    args = ["import", str(tmp_path / "ds"), "mot", str(gt), "--video", "cam1", "--label", "person"]
    assert main([*args, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["duplicates"] == [
        f"video 'cam1': line {first + 1} and line {row + 1} are the same annotation ({same}); an import keeps it "
        "and warns (validate warns duplicate_annotation)"
    ]
    assert ds.annotations() == []
    with pytest.warns(VidlabelWarning) as caught:
        rep = import_labels(ds, "mot", gt, video_id="cam1", label="person")
    (w,) = caught
    ids = rep.videos["cam1"].annotation_ids
    assert str(w.message).startswith(
        f"video 'cam1': line {first + 1} and line {row + 1} of {gt} are the same annotation: annotation "
        f"{ids[row - 1]} just added repeats annotation {ids[first - 1]} ({same}); it is kept"
    )
    assert rep.duplicates == [] and len(ds.annotations()) == len(lines) - 1
    dry = import_labels(ds, "mot", gt, video_id="cam1", label="person", dry_run=True)
    assert dry.duplicates[1] == (
        f"video 'cam1': {len(lines) - 1} rows equal annotations already stored (line 2 equals annotation {ids[0]} "
        f"already stored: {same}), as when one file is imported twice; an import keeps them and warns (validate "
        "warns duplicate_annotation)"
    )
    assert f"  duplicate: {dry.duplicates[1]}" in str(dry).splitlines() and len(ds.annotations()) == len(lines) - 1
    gt.write_text("1,1,10,20,5,6,1,1,1\n1,1,10,20,5,6,1,1,1\n1,1,70,20,5,6,1,1,1\n")
    with pytest.raises(FormatError, match=r"gt.txt line 3: field 'box' \(video 'cam1'\): .* leaves the frame") as real:
        import_labels(ds, "mot", gt, video_id="cam1", label="person", clip=False)
    with pytest.raises(FormatError) as dry_err:  # a dry run refuses what the import refuses, in its words
        import_labels(ds, "mot", gt, video_id="cam1", label="person", clip=False, dry_run=True)
    assert str(dry_err.value) == str(real.value) and len(ds.annotations()) == len(lines) - 1


def test_cli_errors_exit_1_with_file_and_line(tmp_path: Path, capsys) -> None:
    dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n1,1,10,20\n")
    assert main(["import", str(tmp_path / "ds"), "mot", str(gt), "--video", "cam1", "--label", "car"]) == 1
    assert f"vidlabel: error: {gt} line 2: has 4 columns" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["import", str(tmp_path / "ds"), "mot", str(gt), "--label-map", "one=person"])
    assert "class ids must be integers" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--label-map", "1=person,1=car"],
            r"argument --label-map: 1 is given twice \(1=person and 1=car\): give it once",
        ),
        (["--label-map", "1=person,01=car"], r"argument --label-map: 1 is given twice \(1=person and 1=car\)"),
        (["--label-map", "1=person", "--label-map", "1=car"], r"--label-map: 1 is given twice \(1=person and 1=car\)"),
        (["--video-map", "7=cam1,7=cam2"], r"argument --video-map: 7 is given twice \(7=cam1 and 7=cam2\)"),
        (["--video-map", "7=cam1", "--video-map", "7=cam2"], r"--video-map: 7 is given twice \(7=cam1 and 7=cam2\)"),
        (
            ["--option", "include_ignored=true", "--option", "include_ignored=false"],
            r"--option include_ignored is given twice",
        ),
    ],
)
def test_cli_a_map_key_or_option_given_twice_is_refused(tmp_path: Path, capsys, flags: list[str], said: str) -> None:
    """Before, the later value replaced the earlier without a word: class 1 imported as car."""
    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n")
    try:
        code = main(["import", str(tmp_path / "ds"), "mot", str(gt), "--video", "cam1", *flags])
    except SystemExit as exit_:
        code = exit_.code
    assert code in (1, 2) and re.search(said, capsys.readouterr().err)
    assert ds.annotations() == []


def test_cli_one_label_map_may_be_given_in_two_flags(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n1,2,10,20,5,6,1,3,1\n")
    args = [
        "import",
        str(tmp_path / "ds"),
        "mot",
        str(gt),
        "--video",
        "cam1",
        "--label-map",
        "1=person",
        "--label-map",
        "3=car",
    ]
    assert main(args) == 0
    assert sorted(r["label"] for r in ds.annotations()) == ["car", "person"]


def test_export_needs_a_release(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=r"export_labels writes a release, never live rows"):
        export_labels(ds, "mot", tmp_path / "out", release=None)  # type: ignore[arg-type]
    ds.add_annotations([{"kind": "box", "label": "car", "start_frame": 0, "box": (1, 1, 2, 2)}], "cam1")
    rel, _ = ds.build()
    with pytest.raises(FormatError, match=r"video\(s\) cam9 not in release r[0-9a-f]+; known: cam1"):
        export_labels(ds, "mot", tmp_path / "out", release=rel, videos=["cam9"])
    rep = export_labels(ds, "mot", tmp_path / "out", release=rel)
    assert rep.release_id == rel.release_id and rep.counts == {"box": 1}


def test_missing_file(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=r"nope.json: file not found"):
        import_labels(ds, "coco-vid", tmp_path / "nope.json")


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
@pytest.mark.parametrize("format", sorted(FORMATS))
def test_a_pipe_or_device_is_not_a_regular_file_not_missing(tmp_path: Path, capsys, format: str, special: str) -> None:
    # before: a FIFO (or /dev/stdin, a device) given as the label file was "file not found", though it is there;
    # it is said to be no regular file, found without opening it (opening a FIFO waits for a writer)
    import os

    ds = dataset(tmp_path / "ds")
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "labels.txt"
        os.mkfifo(path)
    said = f"{path}: is not a regular file (a pipe, a device or a socket); write the labels to a file and give its path"
    with pytest.raises(FormatError, match=rf"^{re.escape(said)}$"):
        import_labels(ds, format, path, video_id="cam1")
    capsys.readouterr()
    assert main(["import", str(tmp_path / "ds"), format, str(path), "--video", "cam1"]) == 1
    assert capsys.readouterr().err == f"vidlabel: error: {said}\n"
    assert ds.annotations() == []


def test_refused_rows_name_the_video_once(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n2,1,100,20,5,6,1,1,1\n")  # line 2: x 100..105 leaves the 64-pixel frame
    with pytest.raises(FormatError) as info:
        import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"}, clip=False)
    msg = str(info.value)
    assert msg.startswith(f"{gt} line 2: field 'box' (video 'cam1'): (100.0, 20.0, 105.0, 26.0) leaves the frame")
    assert msg.count("cam1") == 1 and ds.annotations() == []


@pytest.mark.parametrize(
    ("fmt", "name", "content", "expected"),
    [
        ("label-studio", "ls.json", b'{"a": 1}', "tasks whose annotations[].result or predictions[].result hold"),
        ("label-studio", "ls.json", b"[]", "videorectangle or timelinelabels regions"),
        ("mot", "gt.txt", b"", "lines 'frame,id,left,top,width,height,...' (6, 7, 9 or 10 comma-separated columns)"),
        ("mediasequence", "empty.tfrecord", b"", "tf.train.SequenceExample records with region/bbox"),
        ("cvat-video", "a.xml", b"<annotations><version>1.1</version></annotations>", "<track> elements holding"),
        ("ytvis", "y.json", b'{"videos": [], "annotations": [], "categories": []}', "'annotations' with per-frame"),
    ],
)
def test_a_file_without_rows_warns_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, name: str, content: bytes, expected: str
) -> None:
    import re
    import warnings

    ds = dataset(tmp_path / "ds")
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.warns(
        VidlabelWarning, match=rf"^{re.escape(f'{f} ({fmt}) yields no rows: nothing to import; expected')}"
    ):
        report = import_labels(ds, fmt, f, video_id="cam1", label="car" if fmt == "mot" else None)
    assert not any(v.counts for v in report.videos.values()) and ds.annotations() == []
    argv = ["import", str(tmp_path / "ds"), fmt, str(f), "--video", "cam1"] + (
        ["--label", "car"] if fmt == "mot" else []
    )
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "added 0 rows" in out
    (line,) = err.splitlines()
    assert line.startswith(f"vidlabel: warning: {f} ({fmt}) yields no rows: nothing to import; expected ")
    assert expected in line


def test_a_file_whose_rows_are_all_skipped_does_not_warn(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "ls.json"
    rotated = {"id": "r", "type": "videorectangle", "value": {"sequence": [{"frame": 1, "x": 1, "y": 1, "width": 5,
               "height": 5, "rotation": 30, "enabled": True}], "labels": ["car"]}}  # fmt: skip
    f.write_text(json.dumps([{"id": 1, "data": {"video": "cam1.mp4"}, "annotations": [{"result": [rotated]}]}]))
    report = import_labels(ds, "label-studio", f, video_id="cam1")  # a warning would be an error here
    assert sum(report.skipped.values()) == 1


@pytest.mark.parametrize(
    ("fmt", "text", "column"),
    [
        (
            "coco-vid",
            '{"videos": [], "images": [], "categories": [], "annotations": [{"category_id": 1, "category_id": 3}]}',
            64,
        ),
        ("ytvis", '{"videos": [], "categories": [{"id": 1, "name": "car", "name": "person"}], "annotations": []}', 31),
        ("label-studio", '[{"id": 1, "data": {"video": "a.mp4", "video": "b.mp4"}}]', 20),
    ],
)
def test_a_json_key_given_twice_in_one_object_is_refused(tmp_path: Path, fmt: str, text: str, column: int) -> None:
    """json keeps the last of two equal keys without a word: a class or a video would silently change."""
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "labels.json"
    f.write_text(text)
    with pytest.raises(
        FormatError,
        match=rf"^{re.escape(str(f))} line 1: key '\w+' is given twice in the object opening at column {column} "
        r"\(.+ and .+\)",
    ):
        import_labels(ds, fmt, f, video_id="cam1")
    assert ds.annotations() == []


def test_a_json_key_given_twice_is_named_by_the_line_of_its_object(tmp_path: Path) -> None:
    # the error named the file alone ('labels.json: key 'bbox' is given twice in one object'): in an
    # indented COCO-VID file of thousands of annotations there was no telling which one
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "labels.json"
    doc = {
        "videos": [{"id": 1, "name": "cam1"}],
        "images": [{"id": k + 1, "video_id": 1, "frame_id": k} for k in range(3)],
        "categories": [{"id": 1, "name": "car"}],
        "annotations": [{"id": k + 1, "image_id": k + 1, "category_id": 1, "bbox": [1, 2, 3, 4]} for k in range(3)],
    }
    lines = json.dumps(doc, indent=1).splitlines()
    at = max(i for i, line in enumerate(lines) if '"bbox": [' in line)  # the last annotation's bbox
    lines.insert(at, '   "bbox": [5, 6, 7, 8],')
    f.write_text("\n".join(lines))
    opening = max(i for i in range(at) if lines[i].strip() == "{") + 1
    with pytest.raises(
        FormatError,
        match=rf"^{re.escape(str(f))} line {opening}: key 'bbox' is given twice in the object opening at column 3 "
        r"\(\[5, 6, 7, 8\] and \[1, 2, 3, 4\]\)",
    ):
        import_labels(ds, "coco-vid", f, video_id="cam1")
    assert ds.annotations() == []


@pytest.mark.parametrize("fmt", ["mot", "coco-vid", "ytvis", "label-studio"])
def test_exported_confidences_are_written_as_the_numbers_given(tmp_path: Path, fmt: str) -> None:
    """A confidence is stored as float32: 0.9 was written as 0.8999999761581421 (the float64 of that float32)."""
    ds = dataset(tmp_path / "ds")
    ds.add_annotations(
        [{"kind": "box", "label": "person", "start_frame": f, "box": (1, 1, 9, 9), "track_id": 0, "origin": "model",
          "confidence": 0.9} for f in (0, 1)],
        "cam1",
    )  # fmt: skip
    ds.build()
    out = tmp_path / ("out.json" if fmt != "mot" else "mot")
    export_labels(ds, fmt, out, release="latest")
    text = "".join(p.read_text() for p in ([out] if out.is_file() else sorted(out.rglob("*.txt"))))
    assert "0.9" in text and "0.89999" not in text
    if fmt != "mot":  # and it comes back as the confidence imported
        new = dataset(tmp_path / "new")
        import_labels(new, fmt, out, video_id="cam1")
        assert [r["confidence"] for r in new.annotations()] == [pytest.approx(0.9)] * 2


def test_the_clipped_boxes_note_counts_one_box_in_the_singular(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")  # 64x48
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,60,20,10,6,1,1,1\n")
    report = import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "person"})
    assert "1 box reaching outside the frame was clipped to it (clip=False or --no-clip refuses them)" in report.notes


@pytest.mark.parametrize(
    ("fmt", "out", "tool"),
    [("cvat-video", "a.xml", "CVAT"), ("ytvis", "a.json", "YouTube-VIS"), ("label-studio", "a.json", "Label Studio")],
)
def test_human_rows_of_a_track_with_model_rows_counted_as_not_written(
    tmp_path: Path, fmt: str, out: str, tool: str
) -> None:
    # a model proposed track 0; a human corrected frames 1 and 2: the format gives the track one origin
    ds = dataset(tmp_path / "ds")
    model = {"origin": "model", "confidence": 0.5}
    rows = [
        {"kind": "box", "label": "person", "start_frame": 0, "box": (1, 2, 11, 12), "track_id": 0, **model},
        {"kind": "box", "label": "person", "start_frame": 1, "box": (2, 2, 12, 12), "track_id": 0},
        {"kind": "box", "label": "person", "start_frame": 2, "box": (3, 2, 13, 12), "track_id": 0},
        {"kind": "box", "label": "car", "start_frame": 0, "box": (1, 2, 11, 12), "track_id": 1},
    ]
    ds.add_annotations(rows, "cam1")
    ds.build()
    report = export_labels(ds, fmt, tmp_path / out)
    human_in_model_track = sum(1 for r in rows if r["track_id"] == 0 and "origin" not in r)
    reason = f"origin of human rows in a track that also holds model rows ({tool} gives a track one origin: written as model)"
    assert report.not_written[reason] == human_in_model_track == 2
    new = dataset(tmp_path / "new")
    import_labels(new, fmt, tmp_path / out, video_id="cam1")
    assert sorted(r["origin"] for r in new.annotations()) == ["human", "model", "model", "model"]  # as counted


@pytest.mark.parametrize(
    ("fmt", "out"),
    [("mot", "mot"), ("cvat-video", "a.xml"), ("ytvis", "a.json"), ("coco-vid", "a.json"), ("label-studio", "a.json")],
)
def test_view_of_rows_counted_as_not_written(tmp_path: Path, fmt: str, out: str) -> None:
    ds = dataset(tmp_path / "ds")
    ds.add_view("left", (0, 0, 32, 48))
    rows = [
        {"kind": "box", "label": "person", "start_frame": 0, "box": (1, 2, 11, 12), "track_id": 0},
        {"kind": "box", "label": "person", "start_frame": 1, "box": (2, 2, 12, 12), "track_id": 0, "view_id": "left"},
        {"kind": "box", "label": "car", "start_frame": 4, "box": (3, 2, 13, 12), "view_id": "left"},
    ]
    ds.add_annotations(rows, "cam1")
    ds.build()
    report = export_labels(ds, fmt, tmp_path / out)
    views = sum(1 for r in rows if "view_id" in r)
    assert report.not_written["view of a row (the label formats hold no views: written without it)"] == views == 2


@pytest.mark.parametrize("fmt", ["coco-vid", "ytvis", "label-studio"])
def test_a_json_number_of_thousands_of_digits_is_a_format_error(tmp_path: Path, fmt: str) -> None:
    # before: a raw ValueError from Python's limit on integer digits (4300)
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "labels.json"
    f.write_text('[{"id": 1' + "0" * 5000 + "}]")
    with pytest.raises(
        FormatError,
        match=rf"^{re.escape(str(f))}: a number in the JSON is too long to read \(Exceeds the limit \(4300 digits\) "
        r"for integer string conversion: value has 5001 digits\)$",
    ):
        import_labels(ds, fmt, f, video_id="cam1")
    assert ds.annotations() == []


def test_cli_a_number_of_thousands_of_digits_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: "vidlabel: error: ValueError: Exceeds the limit ...; use sys.set_int_max_str_digits() to increase
    # the limit", naming neither the file nor the line, and add-video --metadata alike
    dataset(tmp_path / "ds")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"kind": "box", "label": "car", "start_frame": 1' + "0" * 5000 + ', "box": [1, 1, 5, 5]}\n')
    capsys.readouterr()
    assert main(["add-annotations", str(tmp_path / "ds"), "cam1", str(rows)]) == 1
    assert capsys.readouterr().err == (
        f"vidlabel: error: {rows} line 1: a number is too long to read (Exceeds the limit (4300 digits) for integer "
        "string conversion: value has 5001 digits)\n"
    )
    with pytest.raises(SystemExit):
        main(["add-video", str(tmp_path / "ds"), str(tmp_path / "x.mp4"), "--metadata", "1" + "0" * 5000])
    assert "argument --metadata: a number is too long to read (Exceeds the limit" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:.*:vidlabel.errors.VidlabelWarning")
@pytest.mark.parametrize(("fmt", "out"), [("cvat-video", "out.xml"), ("label-studio", "out.json")])
def test_a_second_box_of_a_track_on_one_frame_does_not_bridge_the_gap_after_it(
    tmp_path: Path, fmt: str, out: str
) -> None:
    # Track 0 has boxes on frames 5 (twice) and 9, nothing on 6..8. A CVAT track and a Label Studio region hold
    # one shape per frame, so the second box on 5 is not written (counted); the first must still end its span (an
    # outside keyframe on 6 in CVAT, enabled: false in Label Studio), or the tool interpolates 5 -> 9 and frames
    # 6, 7, 8 come back with boxes nobody drew.
    ds = dataset(tmp_path / "a")
    ds.add_annotations(
        [
            {"kind": "box", "label": "person", "start_frame": 5, "box": (1, 1, 10, 10), "track_id": 0},
            {"kind": "box", "label": "person", "start_frame": 5, "box": (2, 2, 12, 12), "track_id": 0},
            {"kind": "box", "label": "person", "start_frame": 9, "box": (3, 3, 13, 13), "track_id": 0},
        ],
        "cam1",
    )
    ds.build()
    rep = export_labels(ds, fmt, tmp_path / out)
    assert sum(rep.not_written.values()) == 1
    ds2 = dataset(tmp_path / "b")
    import_labels(ds2, fmt, tmp_path / out)
    got = {r["start_frame"]: np.float32(r["box"]).tolist() for r in ds2.annotations()}  # Label Studio: percents
    assert got == {5: [1.0, 1.0, 10.0, 10.0], 9: [3.0, 3.0, 13.0, 13.0]}


def test_a_video_map_key_that_matches_no_video_or_a_video_id_beside_a_map_is_refused(tmp_path: Path) -> None:
    # --video-map 9=cam2 (a mistyped key) was ignored without a word: the file's video, named cam1, went to cam1;
    # --video cam2 beside a map was ignored too, and the rows went where the map or the names led
    from tests.formats_util import meta

    ds = dataset(tmp_path / "ds", videos=[meta("cam1"), meta("cam2")])
    f = tmp_path / "coco.json"
    f.write_text(
        json.dumps(
            {
                "categories": [{"id": 1, "name": "car"}],
                "videos": [{"id": 5, "name": "cam1"}],
                "images": [{"id": k + 1, "video_id": 5, "frame_id": k} for k in range(30)],
                "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4]}],
            }
        )
    )
    with pytest.raises(
        FormatError,
        match=r"coco\.json: videos= \(--video-map\) key\(s\) '9' match no video of the file, whose video\(s\) 'cam1' the map does not name",
    ):
        import_labels(ds, "coco-vid", f, videos={9: "cam2"})
    with pytest.raises(
        FormatError, match=r"coco\.json: video_id='cam2' \(--video\) and videos= \(--video-map\) are both given"
    ):
        import_labels(ds, "coco-vid", f, video_id="cam2", videos={5: "cam2"})
    assert ds.annotations() == []
    import_labels(ds, "coco-vid", f, videos={5: "cam2", 6: "cam1"})  # a map shared with other files: 6 unused
    assert [r["video_id"] for r in ds.annotations()] == ["cam2"]


def test_a_video_id_for_a_file_of_several_videos_is_refused(tmp_path: Path) -> None:
    # --video cam2 with a file of two Label Studio tasks was ignored without a word: both tasks went to cam1,
    # the video their data.video names
    from tests.formats_util import meta

    ds = dataset(tmp_path / "ds", videos=[meta("cam1"), meta("cam2")])

    def region(x: int) -> dict:
        key = {"frame": 1, "enabled": False, "x": x, "y": 1, "width": 5, "height": 5}
        return {"id": "a", "type": "videorectangle", "value": {"sequence": [key], "labels": ["car"]}}

    tasks = [{"id": k, "data": {"video": "/data/cam1.mp4"}, "annotations": [{"result": [region(k)]}]} for k in (1, 2)]
    f = tmp_path / "ls.json"
    f.write_text(json.dumps(tasks))
    with pytest.raises(
        FormatError,
        match=r"ls\.json: video_id='cam2' \(--video\) names the dataset video of a file of one video, but this file "
        r"holds several, which would go to 'cam1' by their ids or names",
    ):
        import_labels(ds, "label-studio", f, video_id="cam2")
    assert ds.annotations() == []
    import_labels(ds, "label-studio", f, videos={1: "cam2", 2: "cam2"})
    assert [r["video_id"] for r in ds.annotations()] == ["cam2", "cam2"]
