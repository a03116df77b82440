"""Label Studio video: 1-based frames, percent boxes, interpolation, enabled=false inclusive, timelines, predictions."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.formats_util import assert_same_rows, dataset, meta, random_tracks
from vidlabel.cli import main
from vidlabel.errors import FormatError, VidlabelWarning
from vidlabel.formats import export_labels, import_labels


def key(frame: int, x: float, y: float, w: float = 10.0, h: float = 25.0, enabled: bool = True, **kw) -> dict:
    return {"frame": frame, "enabled": enabled, "x": x, "y": y, "width": w, "height": h, **kw}


def region(rid: str, seq: list[dict], label: str = "car", frames_count: int = 30, **kw) -> dict:
    return {
        "id": rid,
        "type": "videorectangle",
        "value": {"framesCount": frames_count, "sequence": seq, "labels": [label]},
        **kw,
    }


def task(results: list[dict], predictions: list[dict] | None = None, video: str = "/data/upload/1/cam1.mp4") -> dict:
    t = {"id": 11, "data": {"video": video}, "annotations": [{"id": 1, "result": results}]}
    if predictions is not None:
        t["predictions"] = predictions
    return t


def load(tmp_path: Path, doc, **kw):
    ds = dataset(tmp_path / "ds")  # 64x48, 30 frames
    f = tmp_path / "ls.json"
    f.write_text(json.dumps(doc))
    return ds, import_labels(ds, "label-studio", f, **kw)


def test_percent_one_based_interpolation_and_hold_to_end(tmp_path: Path) -> None:
    ds, _ = load(tmp_path, [task([region("abc", [key(1, 0, 0), key(5, 50, 50)])])])
    got = {r["start_frame"]: r["box"] for r in ds.annotations()}
    assert sorted(got) == list(range(30))  # 1-based frames 1..5 are 0..4, then held to the last frame 29
    assert got[0] == (0.0, 0.0, 6.4, 12.0)  # 10 % of 64 wide, 25 % of 48 high
    assert got[2] == (16.0, 12.0, 22.4, 24.0)  # halfway: x 25 % of 64, y 25 % of 48
    assert got[29] == (32.0, 24.0, 38.4, 36.0)


def test_enabled_false_ends_after_that_frame(tmp_path: Path) -> None:
    seq = [key(2, 0, 0), key(4, 50, 0, enabled=False), key(10, 0, 50, enabled=False)]
    ds, _ = load(tmp_path, [task([region("r", seq), region("s", [key(3, 1, 1)], label="person")])])
    frames = sorted(r["start_frame"] for r in ds.annotations() if r["label"] == "car")
    assert frames == [1, 2, 3, 9]  # on frame 4 (1-based) itself, gone after it; frame 10 alone
    tracks = {r["label"]: r["track_id"] for r in ds.annotations()}
    assert tracks == {"car": 0, "person": 1}  # region ids in order of first appearance


def test_region_without_keyframes_is_counted(tmp_path: Path) -> None:
    # an empty (or absent) sequence holds no box: the region is counted, not dropped without a word
    absent = region("c", [])
    del absent["value"]["sequence"]
    ds, rep = load(tmp_path, [task([region("a", []), region("b", [key(3, 1, 1)], label="person"), absent])])
    assert {r["label"] for r in ds.annotations()} == {"person"}
    assert {r["track_id"] for r in ds.annotations()} == {0}  # the empty region takes no track id
    assert rep.skipped == {"videorectangle region without keyframes (empty value.sequence)": 2}


def test_timelinelabels_and_predictions(tmp_path: Path) -> None:
    timeline = {
        "id": "t1",
        "type": "timelinelabels",
        "value": {"ranges": [{"start": 3, "end": 7}], "timelinelabels": ["goal"]},
    }
    pred = {
        "model_version": "m",
        "score": 0.6,
        "result": [region("p", [key(30, 0, 0)], score=0.9), region("q", [key(30, 0, 0)])],
    }
    rotated = region("rot", [key(1, 0, 0, rotation=15)])
    with pytest.warns(
        VidlabelWarning,
        match=(
            r"\[0\]\.predictions\[0\]\.result\[0\]\.sequence\[0\] and \[0\]\.predictions\[0\]\.result\[1\]\.sequence\[0\] "
            r"of .*ls\.json are the same annotation"
        ),
    ):
        ds, rep = load(tmp_path, [task([timeline, rotated], [pred])])  # p and q: one box, two scores
    rows = ds.annotations()
    assert [(r["start_frame"], r["end_frame"]) for r in rows if r["kind"] == "marker"] == [(2, 6)]
    boxes = sorted((r["confidence"], r["origin"], r["start_frame"]) for r in rows if r["kind"] == "box")
    assert boxes == [(pytest.approx(0.6), "model", 29), (pytest.approx(0.9), "model", 29)]
    assert rep.skipped == {"rotated rectangle": 1}


def test_frames_count_mismatch_error_or_warning(tmp_path: Path) -> None:
    doc = [task([region("a", [key(1, 0, 0)], frames_count=31)])]
    with pytest.raises(
        FormatError,
        match=r"ls.json \[0\].annotations\[0\].result\[0\]: framesCount 31 disagrees with video 'cam1', whose frame count is 30",
    ):
        load(tmp_path, doc)
    with pytest.warns(VidlabelWarning, match=r"framesCount 31 disagrees with video 'cam1', whose frame count is 30"):
        ds, rep = load(tmp_path / "w", doc, frames_count_mismatch="warn")
    assert len(ds.annotations()) == 30 and any("framesCount 31" in n for n in rep.notes)


def test_bad_files(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "ls.json"
    f.write_text('[{"id": 1, "data": {"video": "cam1.mp4"}, "annotations": [}]')
    with pytest.raises(FormatError, match=r"ls.json line 1: not valid JSON"):
        import_labels(ds, "label-studio", f)
    f.write_text(json.dumps([task([region("a", [key(31, 0, 0)])])]))
    with pytest.raises(
        FormatError, match=r"result\[0\].sequence\[0\]: frame 31 \(1-based\) is outside video 'cam1': frames 1..30"
    ):
        import_labels(ds, "label-studio", f)
    f.write_text(json.dumps([task([region("a", [key(1, 0, 0)], label="bus")])]))
    with pytest.raises(FormatError, match=r"label\(s\) 'bus' are not in the dataset"):
        import_labels(ds, "label-studio", f)
    f.write_text(json.dumps([task([region("a", [key(1, 0, 0)])], video="other.mp4"), task([], video="x.mp4")]))
    with pytest.raises(
        FormatError, match=r"\[0\]: video '11', 'other' of the file is not a registered video; the file holds 2 videos"
    ):
        import_labels(ds, "label-studio", f)
    assert ds.annotations() == []


def test_labels_and_frames_of_the_wrong_type_are_refused(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "ls.json"
    bare = region("a", [key(1, 0, 0)])
    bare["value"]["labels"] = "car"  # a string, not a list: was read letter by letter as label 'c'
    f.write_text(json.dumps([task([bare])]))
    with pytest.raises(FormatError, match=r"result\[0\]: labels is 'car'; expected a list of label names"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    f.write_text(json.dumps([task([region("a", [key(1.5, 0, 0)])])]))
    with pytest.raises(FormatError, match=r"sequence\[0\]: frame is 1.5; expected a whole number"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    f.write_text(json.dumps([task([region("a", [key(1, 0, 0, rotation="abc")])])]))
    with pytest.raises(FormatError, match=r"ls.json .*sequence\[0\]: rotation is 'abc'; expected a finite number"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    f.write_text(json.dumps([task([region("a", [key(1, 0, 0)], frames_count="30")])]))
    with pytest.raises(FormatError, match=r"result\[0\]: framesCount is '30'; expected a finite number"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    timeline = {"id": "t", "type": "timelinelabels", "value": {"ranges": [{"start": 2, "end": 4.5}]}}
    timeline["value"]["timelinelabels"] = ["goal"]
    f.write_text(json.dumps([task([timeline])]))
    with pytest.raises(FormatError, match=r"ranges\[0\]: end is 4.5; expected a whole number"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    timeline["value"]["ranges"] = ["2-4"]
    f.write_text(json.dumps([task([timeline])]))
    with pytest.raises(FormatError, match=r"ranges\[0\]: a range must be an object with start and end"):
        import_labels(ds, "label-studio", f, video_id="cam1")
    assert ds.annotations() == []


def test_exported_box_on_the_frame_edge_comes_back_without_clipping(tmp_path: Path) -> None:
    # 200 / 240 * 100 + 40 / 240 * 100 percent is 240.00000000000003 pixels again: that is the edge
    ds = dataset(tmp_path / "a", videos=[meta(width=320, height=240)])
    ds.add_annotations([{"kind": "box", "label": "car", "start_frame": 0, "box": (300, 200, 320, 240)}], "cam1")
    ds.build()
    export_labels(ds, "label-studio", tmp_path / "out.json")
    ds2 = dataset(tmp_path / "b", videos=[meta(width=320, height=240)])
    report = import_labels(ds2, "label-studio", tmp_path / "out.json", video_id="cam1", clip=False)
    assert not any("clipped" in n for n in report.notes)
    (box,) = [r["box"] for r in ds2.annotations()]
    assert box == pytest.approx((300, 200, 320, 240)) and box[2:] == (320.0, 240.0)


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=random_tracks(markers=True))
def test_round_trip(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("ls")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20)])
    ds.add_annotations(rows, "cam1")
    ds.build()
    export_labels(ds, "label-studio", tmp / "out.json")
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20)])
    import_labels(ds2, "label-studio", tmp / "out.json")
    assert_same_rows(ds2.annotations(), ds.annotations())


def test_round_trip_matches_tasks_by_the_written_video_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the file names ('clip-a.mp4') say nothing of the video ids, and the task ids (1, 2) are not ids either
    videos = [
        dataclasses.replace(meta(vid, frame_count=20), sources=[{"uri": f"/videos/clip-{c}.mp4"}])
        for vid, c in (("my_video", "a"), ("1", "b"))
    ]
    ds = dataset(tmp_path / "a", videos=videos)
    ds.add_annotations(
        [{"kind": "box", "label": "car", "start_frame": 3, "box": (1, 2, 11, 12), "track_id": 0}], "my_video"
    )
    ds.add_annotations([{"kind": "marker", "label": "goal", "start_frame": 2, "end_frame": 5}], "1")
    ds.build()
    out = tmp_path / "out.json"
    assert main(["export-labels", str(tmp_path / "a"), "label-studio", str(out)]) == 0
    tasks = json.loads(out.read_text())
    assert [(t["id"], t["data"]) for t in tasks] == [
        (1, {"video": "/videos/clip-b.mp4", "video_id": "1"}),
        (2, {"video": "/videos/clip-a.mp4", "video_id": "my_video"}),
    ]
    ds2 = dataset(tmp_path / "b", videos=videos)
    capsys.readouterr()
    assert main(["import", str(tmp_path / "b"), "label-studio", str(out)]) == 0, capsys.readouterr().err
    assert_same_rows(ds2.annotations(), ds.annotations())
    # a video_id that is not registered (nor the task id, nor the file stem) is named in the refusal
    tasks[1]["data"]["video_id"] = "gone"
    out.write_text(json.dumps(tasks))
    with pytest.raises(FormatError, match=r"\[1\]: video 'gone', '2', 'clip-a' of the file is not a registered video"):
        import_labels(dataset(tmp_path / "c", videos=videos), "label-studio", out)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        # each raised a raw TypeError ('int' object is not iterable)
        (lambda t: t.update(annotations=5), r"ls\.json \[0\]\.annotations: is '5'; expected a list"),
        (lambda t: t.update(predictions=7), r"ls\.json \[0\]\.predictions: is '7'; expected a list"),
        (
            lambda t: t["annotations"][0]["result"][0]["value"].update(sequence=3),
            r"\[0\]\.annotations\[0\]\.result\[0\]\.sequence: is '3'; expected a list",
        ),
        (
            lambda t: t["annotations"][0]["result"].append(
                {"type": "timelinelabels", "value": {"ranges": 2, "timelinelabels": ["goal"]}}
            ),
            r"\[0\]\.annotations\[0\]\.result\[1\]\.ranges: is '2'; expected a list",
        ),
    ],
)
def test_lists_that_are_numbers_are_refused(tmp_path: Path, change, match: str) -> None:
    t = task([region("a", [key(1, 0, 0)])])
    change(t)
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "ls.json"
    f.write_text(json.dumps([t]))
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "label-studio", f, video_id="cam1")
    assert ds.annotations() == []


def test_a_prediction_sharing_a_region_id_with_the_annotation_is_its_own_track(tmp_path: Path) -> None:
    """An annotation made from a prediction keeps the prediction's region ids: the two are two tracks (before,
    one track held the model's and the human's box on every frame)."""
    human = region("abc", [key(1, 0, 0)])
    model = {"result": [region("abc", [key(1, 50, 50)], score=0.7)]}
    ds, _ = load(tmp_path, [task([human], [model])])
    per_track: dict[int, set[str]] = {}
    frames: dict[tuple[int, int], int] = {}
    for r in ds.annotations():
        per_track.setdefault(r["track_id"], set()).add(r["origin"])
        frames[r["track_id"], r["start_frame"]] = frames.get((r["track_id"], r["start_frame"]), 0) + 1
    assert sorted(per_track.values(), key=sorted) == [{"human"}, {"model"}]
    assert set(frames.values()) == {1} and len(frames) == 60  # one box a frame in each of the two tracks


@pytest.mark.parametrize("enabled", ["false", 0, 1, None])
def test_enabled_other_than_true_or_false_is_refused(tmp_path: Path, enabled) -> None:
    seq = [key(2, 0, 0), key(4, 50, 0, enabled=enabled)]
    with pytest.raises(
        FormatError, match=rf"result\[0\]\.sequence\[1\]: enabled is {enabled!r}; expected true or false"
    ):
        load(tmp_path, [task([region("r", seq)])])


def test_two_keyframes_on_one_frame_are_refused_naming_both(tmp_path: Path) -> None:
    seq = [key(2, 0, 0), key(5, 10, 10), key(5, 50, 50)]
    with pytest.raises(
        FormatError,
        match=r"result\[0\]\.sequence\[2\]: a second keyframe of the track on video frame 4 \(first: "
        r"\[0\]\.annotations\[0\]\.result\[0\]\.sequence\[1\]\)",
    ):
        load(tmp_path, [task([region("r", seq)])])


@pytest.mark.parametrize(
    ("start", "end", "match"),
    [
        (0, 4, r"ranges\[0\]: start 0 \(1-based, inclusive\) is outside video 'cam1': frames 1\.\.30$"),
        (2, 31, r"ranges\[0\]: end 31 \(1-based, inclusive\) is outside video 'cam1': frames 1\.\.30$"),
    ],
)
def test_a_timeline_range_outside_the_video_is_named_as_the_file_writes_it(
    tmp_path: Path, start: int, end: int, match: str
) -> None:
    # was 'frame -1 (0-based) is outside video 'cam1': frames 0..29' for a start of 0 in the file: neither the
    # file's value nor its 1-based range, where a sequence frame is said 1-based
    ds = dataset(tmp_path / "ds")
    timeline = {"id": "t", "type": "timelinelabels", "value": {"ranges": [{"start": start, "end": end}]}}
    timeline["value"]["timelinelabels"] = ["goal"]
    f = tmp_path / "ls.json"
    f.write_text(json.dumps([task([timeline])]))
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "label-studio", f, video_id="cam1")
    assert ds.annotations() == []


def test_a_skipped_annotation_is_counted_not_imported(tmp_path: Path) -> None:
    # Label Studio keeps an annotation whose annotator pressed "Skip" with was_cancelled: true; what it holds
    # is no finished labelling: its regions are counted under not imported, the task's other annotation and
    # its predictions are imported as usual
    doc = task([region("a", [key(1, 0, 0)])], predictions=[{"id": 9, "result": [region("p", [key(2, 5, 5)])]}])
    doc["annotations"].append(
        {"id": 2, "was_cancelled": True, "result": [region("b", [key(3, 1, 1)], label="person"), region("c", [])]}
    )
    doc["annotations"].append({"id": 3, "was_cancelled": True, "result": []})  # the usual skip: nothing in it
    ds, rep = load(tmp_path, [doc])
    rows = ds.annotations()
    assert {(r["label"], r["origin"]) for r in rows} == {("car", "human"), ("car", "model")}
    assert min(r["start_frame"] for r in rows if r["origin"] == "human") == 0  # annotation 1's region
    assert rep.skipped == {"result of a skipped annotation (was_cancelled: true)": 2}


def test_bools_and_attributes_that_change_along_a_track_are_written_per_keyframe_and_read_back(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    ds.set_attribute_schema("car", {"occluded": "bool", "visibility": "number", "pose": "text"})
    rows = [
        {"kind": "box", "label": "car", "start_frame": f, "box": (1.0 + f, 2.0, 11.0 + f, 20.0), "track_id": 4,
         "attributes": {"occluded": f >= 3, "visibility": 1.0 - f / 10, "pose": "left"}}
        for f in range(6)
    ]  # fmt: skip
    rows[5]["attributes"].pop("visibility")  # a value some rows lack is per keyframe too
    ds.add_annotations(rows, "cam1")
    ds.build()
    report = export_labels(ds, "label-studio", tmp_path / "out.json")
    assert not report.not_written
    doc = json.loads((tmp_path / "out.json").read_text())
    results = doc[0]["annotations"][0]["result"]
    (rect,) = [r for r in results if r["type"] == "videorectangle"]
    # the constant text stays a per-region choice (what the editor shows); the others ride on each keyframe
    assert [r["value"] for r in results if r["type"] == "choices"] == [{"choices": ["left"]}]
    assert [k.get("attributes") for k in rect["value"]["sequence"]] == [
        {k: v for k, v in r["attributes"].items() if k != "pose"} for r in rows
    ]
    ds2 = dataset(tmp_path / "ds2")
    rep = import_labels(ds2, "label-studio", tmp_path / "out.json")
    assert rep.attributes_added == {"car": {"occluded": "bool", "pose": "text", "visibility": "number"}}
    assert [(r["start_frame"], r["attributes"]) for r in ds2.annotations()] == [
        (r["start_frame"], r["attributes"]) for r in rows
    ]


def test_keyframe_attributes_hold_to_the_next_keyframe(tmp_path: Path) -> None:
    seq = [key(1, 10, 10, attributes={"occluded": True}), key(4, 20, 10, attributes={"occluded": False}),
           key(6, 20, 10, enabled=False)]  # fmt: skip
    ds, _ = load(tmp_path, [task([region("a", seq)])], video_id="cam1")
    assert [(r["start_frame"], r.get("attributes")) for r in ds.annotations()] == [
        (0, {"occluded": True}), (1, {"occluded": True}), (2, {"occluded": True}),
        (3, {"occluded": False}), (4, {"occluded": False}), (5, None),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("attributes", "match"),
    [
        ([1, 2], r"sequence\[0\].*attributes is '\[1, 2\]'; expected an object of name -> value"),
        ({"pose": {"a": 1}}, r"sequence\[0\].*attribute 'pose' is .*expected true/false, a number or a string"),
    ],
)
def test_keyframe_attributes_of_the_wrong_shape_are_refused(tmp_path: Path, attributes, match: str) -> None:
    with pytest.raises(FormatError, match=match):
        load(tmp_path, [task([region("a", [key(1, 10, 10, attributes=attributes)])])], video_id="cam1")


def test_an_attribute_of_another_type_in_a_later_region_names_that_region(tmp_path: Path) -> None:
    # the first region makes visibility a number: the import blamed a row of that region instead of the odd one
    first = region("a", [key(1, 10, 10, attributes={"visibility": 0.5})])
    second = region("b", [key(2, 10, 10, attributes={"visibility": "high"})])
    with pytest.raises(
        FormatError, match=r"result\[1\]: attribute 'visibility' is 'high' \(text\); earlier 'car' rows give number"
    ):
        load(tmp_path, [task([first, second])], video_id="cam1")
