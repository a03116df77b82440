"""Label files as the real tools write them: each a file these tests write in the tool's own shape."""

from __future__ import annotations

import configparser
import json
from pathlib import Path

import pytest

from tests.formats_util import dataset, meta
from vidlabel.cli import main
from vidlabel.errors import FormatError
from vidlabel.formats import export_labels, import_labels


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- MOT: 10-column ground truth (MOT15), folders ---------------------------------------------------------------

MOT15_GT = "1,1,10,20,5,6,1,-1,-1,-1\n2,1,11,20,5,6,1,-1,-1,-1\n2,2,30,5,4,4,0,-1,-1,-1\n"


def test_mot15_ten_column_gt_is_read_as_ground_truth_with_its_consider_flag(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", MOT15_GT)
    rep = import_labels(ds, "mot", gt, video_id="cam1", label="person")
    rows = ds.annotations("cam1")
    got = sorted((r["start_frame"], r["track_id"], r["box"], r["origin"], r["confidence"]) for r in rows)
    assert got == [(0, 0, (10.0, 20.0, 15.0, 26.0), "human", None), (1, 0, (11.0, 20.0, 16.0, 26.0), "human", None)]
    assert sum(rep.skipped.values()) == 1  # the line with consider flag 0
    assert any("read as ground truth" in n and "gt.txt" in n and "read_as='results'" in n for n in rep.notes)


def test_mot_read_as_forces_the_other_reading_in_python_and_on_the_command_line(tmp_path: Path, capsys) -> None:
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", MOT15_GT)
    ds = dataset(tmp_path / "ds")
    rep = import_labels(ds, "mot", gt, video_id="cam1", label="person", read_as="results")
    assert [r["origin"] for r in ds.annotations()] == ["model"] * 3
    assert any("read as tracker results (read_as='results')" in n for n in rep.notes)
    res = write(tmp_path / "tracker.txt", "1,1,10,20,5,6,1,-1,-1,-1\n")
    ds2 = dataset(tmp_path / "ds2")
    assert main(["import", str(tmp_path / "ds2"), "mot", str(res), "--video", "cam1", "--label", "car",
                 "--read-as", "gt"]) == 0  # fmt: skip
    assert "read as ground truth (read_as='gt')" in capsys.readouterr().out
    (row,) = ds2.annotations()
    assert row["origin"] == "human" and row["confidence"] is None and row["label"] == "car"


def test_mot_ten_columns_outside_gt_txt_are_results_and_the_note_says_why(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    res = write(tmp_path / "MOT15-02.txt", "1,1,10,20,5,6,1,-1,-1,-1\n2,1,11,20,5,6,1,-1,-1,-1\n")
    rep = import_labels(ds, "mot", res, video_id="cam1", label="person")
    assert [(r["origin"], r["confidence"]) for r in ds.annotations()] == [("model", 1.0)] * 2
    assert any("read as tracker results" in n and "not gt.txt" in n and "read_as='gt'" in n for n in rep.notes)
    # a gt.txt whose column 7 holds scores is results, and the note names the line
    scored = write(tmp_path / "other" / "gt.txt", "1,1,10,20,5,6,1,-1,-1,-1\n1,2,1,1,5,6,0.75,-1,-1,-1\n")
    rep = import_labels(dataset(tmp_path / "ds2"), "mot", scored, video_id="cam1", label="person")
    assert any("column 7 holds '0.75' on line 2" in n for n in rep.notes)


def test_mot_ten_column_gt_needs_a_label_and_refuses_other_flags(tmp_path: Path) -> None:
    gt = write(tmp_path / "seq" / "gt" / "gt.txt", MOT15_GT)
    with pytest.raises(
        FormatError, match=r"gt\.txt line 1: 10-column ground truth .* has no class column: give label="
    ):
        import_labels(dataset(tmp_path / "ds"), "mot", gt, video_id="cam1")
    bad = write(tmp_path / "s2" / "gt" / "gt.txt", "1,1,10,20,5,6,2,-1,-1,-1\n")
    with pytest.raises(FormatError, match=r"line 1: consider flag \(column 7\) is '2'"):
        import_labels(dataset(tmp_path / "ds2"), "mot", bad, video_id="cam1", label="person", read_as="gt")
    with pytest.raises(FormatError, match=r"option read_as='both'; allowed: 'auto', 'gt', 'results'"):
        import_labels(dataset(tmp_path / "ds3"), "mot", bad, video_id="cam1", label="person", read_as="both")


def test_mot_export_seqinfo_has_the_seven_keys_of_the_mot_kit(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    ds.add_annotations([{"kind": "box", "label": "person", "start_frame": 0, "box": (1, 2, 5, 6)}], "cam1")
    ds.build()
    export_labels(ds, "mot", tmp_path / "out")
    cp = configparser.ConfigParser()
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    cp.read(tmp_path / "out" / "cam1" / "seqinfo.ini")
    assert dict(cp["Sequence"]) == {
        "name": "cam1", "imDir": "img1", "frameRate": "25", "seqLength": "30", "imWidth": "64", "imHeight": "48",
        "imExt": ".jpg",
    }  # fmt: skip


def test_mot_challenge_layout_of_several_sequences_imports_in_one_command(tmp_path: Path, capsys) -> None:
    ds = dataset(tmp_path / "ds", videos=[meta("MOT17-02", frame_count=5), meta("MOT17-04", frame_count=6)])
    root = tmp_path / "MOT17" / "train"
    for name, n, line in (("MOT17-02", 5, "2,3,1,2,3,4,1,1,0.5\n"), ("MOT17-04", 6, "6,1,4,4,2,2,1,3,1\n")):
        write(root / name / "seqinfo.ini", f"[Sequence]\nname={name}\nimDir=img1\nframeRate=25\nseqLength={n}\n"
              "imWidth=64\nimHeight=48\nimExt=.jpg\n")  # fmt: skip
        write(root / name / "gt" / "gt.txt", line)
        write(root / name / "det" / "det.txt", "1,-1,1,1,5,5,0.9\n")  # public detections: not ground truth
    assert main(["import", str(tmp_path / "ds"), "mot", str(tmp_path / "MOT17"), "--label-map", "1=person,3=car"]) == 0
    out = capsys.readouterr().out
    got = sorted((r["video_id"], r["start_frame"], r["label"], r["track_id"], r["box"]) for r in ds.annotations())
    assert got == [("MOT17-02", 1, "person", 2, (1.0, 2.0, 4.0, 6.0)), ("MOT17-04", 5, "car", 0, (4.0, 4.0, 6.0, 6.0))]
    assert "det/det.txt line" in out and "include_det=True" in out
    ds2 = dataset(tmp_path / "ds2", videos=[meta("MOT17-02", frame_count=5), meta("MOT17-04", frame_count=6)])
    import_labels(ds2, "mot", root, label_map={1: "person", 3: "car"}, label="car", include_det=True)
    assert sorted((r["video_id"], r["origin"]) for r in ds2.annotations() if r["origin"] == "model") == [
        ("MOT17-02", "model"), ("MOT17-04", "model"),
    ]  # fmt: skip


def test_a_mot_folder_without_sequences_and_a_file_error_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(FormatError, match=r"empty: is a folder holding no MOT sequence: expected gt/gt\.txt"):
        import_labels(dataset(tmp_path / "ds"), "mot", tmp_path / "empty", label="person")
    write(tmp_path / "f" / "cam1" / "gt" / "gt.txt", "1,1,1,1,2,2,1,1,1\n1,1,1,1,2,-2,1,1,1\n")
    write(tmp_path / "f" / "cam1" / "gt" / "labels.txt", "person\n")
    with pytest.raises(FormatError, match=r"cam1/gt/gt\.txt line 2: box x=1\.0, y=1\.0, w=2\.0, h=-2\.0"):
        import_labels(dataset(tmp_path / "ds2"), "mot", tmp_path / "f")


# -- COCO-VID: TAO's frame_index and category lists, mmtracking's repeated keys --------------------------------


def _tao(frame_index: list[int], **video: object) -> dict:
    return {
        "videos": [{"id": 7, "name": "cam1", **video}],
        "images": [{"id": 100 + k, "video_id": 7, "frame_id": k, "frame_index": f} for k, f in enumerate(frame_index)],
        "annotations": [
            {"id": k + 1, "image_id": 100 + k, "category_id": 1, "instance_id": 4, "bbox": [1, 2, 3, 4]}
            for k in range(len(frame_index))
        ],
        "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "car"}],
    }


def test_tao_frame_index_places_the_boxes_and_is_noted(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "tao.json", json.dumps(_tao([0, 12, 24])))
    rep = import_labels(ds, "coco-vid", f)
    assert sorted(r["start_frame"] for r in ds.annotations()) == [0, 12, 24]
    assert any("frame_index" in n and "frame_id 1 is frame_index 12" in n for n in rep.notes)


def test_tao_frame_index_past_the_video_is_refused(tmp_path: Path) -> None:
    f = write(tmp_path / "tao.json", json.dumps(_tao([0, 30])))
    with pytest.raises(FormatError, match=r"images\[1\]: frame_index 30 is outside video 'cam1': frame_index 0\.\.29"):
        import_labels(dataset(tmp_path / "ds"), "coco-vid", f)
    f = write(tmp_path / "tao2.json", json.dumps(_tao([3, 3])))
    with pytest.raises(FormatError, match=r"images\[1\]: video 7: frame_index 3 repeats \(images\[0\] has it too\)"):
        import_labels(dataset(tmp_path / "ds2"), "coco-vid", f)


def test_tao_negative_and_not_exhaustive_categories_are_noted(tmp_path: Path) -> None:
    doc = _tao([0], neg_category_ids=[2], not_exhaustive_category_ids=[1])
    rep = import_labels(dataset(tmp_path / "ds"), "coco-vid", write(tmp_path / "t.json", json.dumps(doc)))
    assert any("neg_category_ids (checked absent from the video), not stored: car" in n for n in rep.notes)
    assert any("not_exhaustive_category_ids (not every instance labelled), not stored: person" in n for n in rep.notes)


def test_a_key_repeated_with_the_same_value_is_read_and_another_value_refused(tmp_path: Path) -> None:
    doc = json.dumps(_tao([0, 1]))
    # mmtracking's test files repeat a key with the same value in every annotation
    same = doc.replace('"instance_id": 4,', '"instance_id": 4, "instance_id": 4,')
    rep = import_labels(dataset(tmp_path / "ds"), "coco-vid", write(tmp_path / "same.json", same))
    assert rep.rows == 2 and any("'instance_id' (2)" in n and "same value" in n for n in rep.notes)
    other = doc.replace('"instance_id": 4,', '"instance_id": 4, "instance_id": 5,', 1)
    with pytest.raises(FormatError, match=r"key 'instance_id' is given twice .* \(4 and 5\)"):
        import_labels(dataset(tmp_path / "ds2"), "coco-vid", write(tmp_path / "other.json", other))


def test_coco_vid_label_map_names_category_ids(tmp_path: Path) -> None:
    doc = _tao([0])
    del doc["categories"]
    f = write(tmp_path / "nocat.json", json.dumps(doc))
    with pytest.raises(FormatError, match=r"category_id 1 is not in categories\[\] \(ids \[\]\); the file has no "):
        import_labels(dataset(tmp_path / "ds"), "coco-vid", f)
    ds = dataset(tmp_path / "ds2")
    rep = import_labels(ds, "coco-vid", f, label_map={1: "car"})
    assert [r["label"] for r in ds.annotations()] == ["car"] and any("label_map" in n for n in rep.notes)


# -- YouTube-VIS / OVIS ----------------------------------------------------------------------------------------


def _ytvis(**extra: object) -> dict:
    return {
        "videos": [{"id": 1, "width": 64, "height": 48, "length": 3, "file_names": [f"cam1/{k:05d}.jpg" for k in range(3)]}],
        "annotations": [
            {"id": 1, "video_id": 1, "category_id": 2, "bboxes": [[1, 2, 3, 4], None, [2, 2, 3, 4]], **extra}
        ],
    }  # fmt: skip


def test_ytvis_without_categories_imports_with_a_label_map(tmp_path: Path, capsys) -> None:
    f = write(tmp_path / "v.json", json.dumps(_ytvis()))
    with pytest.raises(FormatError, match=r"category_id 2 is not in categories.*label_map \(--label-map"):
        import_labels(dataset(tmp_path / "ds"), "ytvis", f)
    ds = dataset(tmp_path / "ds2")
    assert main(["import", str(tmp_path / "ds2"), "ytvis", str(f), "--label-map", "2=car"]) == 0
    assert [(r["label"], r["start_frame"]) for r in ds.annotations()] == [("car", 0), ("car", 2)]


# -- Label Studio ----------------------------------------------------------------------------------------------


def _ls_task(width: float, height: float) -> list:
    key = {"frame": 1, "enabled": False, "rotation": 0, "x": 50.0, "y": 50.0, "width": width, "height": height}
    region = {"id": "a", "type": "videorectangle", "value": {"framesCount": 30, "sequence": [key], "labels": ["car"]}}
    return [{"id": 1, "data": {"video": "cam1.mp4"}, "annotations": [{"id": 1, "result": [region]}]}]


def test_label_studio_box_drawn_leftward_and_upward_is_normalised(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    f = write(tmp_path / "ls.json", json.dumps(_ls_task(-25.0, -50.0)))
    rep = import_labels(ds, "label-studio", f, video_id="cam1")
    (row,) = ds.annotations()
    # x 50% - 25% of 64 px, y 50% - 50% of 48 px: the box from (16, 0) to (32, 24)
    assert row["box"] == (16.0, 0.0, 32.0, 24.0)
    assert any("negative width or height" in n for n in rep.notes)


# -- MediaSequence: label indices only ------------------------------------------------------------------------


def test_mediasequence_regions_with_label_indices_only_are_named_by_a_label_map(tmp_path: Path, clip) -> None:
    from tfrecord import example_pb2  # the tfrecord package's own protos: not vidlabel's
    from tfrecord.reader import tfrecord_iterator

    from vidlabel.export._tfrecord import TFRecordWriter
    from vidlabel.video import probe

    ds = dataset(tmp_path / "a", videos=[probe(clip.path, video_id="cam1")])
    ds.add_annotations([{"kind": "box", "label": "car", "start_frame": 3, "box": (1.0, 2.0, 9.0, 12.0)}], "cam1")
    ds.build()
    export_labels(ds, "mediasequence", tmp_path / "ms")
    (shard,) = sorted((tmp_path / "ms").glob("*.tfrecord"))
    records = []
    for raw in tfrecord_iterator(str(shard)):
        se = example_pb2.SequenceExample()
        se.ParseFromString(bytes(raw))
        del se.feature_lists.feature_list["region/label/string"]  # a file naming classes by index alone
        records.append(se.SerializeToString())
    writer = TFRecordWriter(shard)
    for rec in records:
        writer.write_record(rec)
    writer.close()
    with pytest.raises(FormatError, match=r"regions without region/label/string .* take names from label_map"):
        import_labels(dataset(tmp_path / "b", videos=[probe(clip.path, video_id="cam1")]), "mediasequence", shard)
    with pytest.raises(FormatError, match=r"region/label/index 1 is not in the label map \(known: 0=person\)"):
        import_labels(dataset(tmp_path / "c", videos=[probe(clip.path, video_id="cam1")]), "mediasequence", shard,
                      label_map={0: "person"})  # fmt: skip
    ds2 = dataset(tmp_path / "d", videos=[probe(clip.path, video_id="cam1")])
    import_labels(ds2, "mediasequence", shard, label_map={0: "person", 1: "truck"}, add_labels=True)
    (row,) = ds2.annotations()
    # the box went through MediaSequence's normalized float32 coordinates
    assert (row["label"], row["start_frame"]) == ("truck", 3) and row["box"] == pytest.approx((1, 2, 9, 12), abs=1e-4)


def test_ovis_occlusion_levels_are_kept_as_attributes_and_written_back(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    doc = _ytvis(occlusion=[0, None, 2])
    doc["categories"] = [{"id": 2, "name": "car"}]
    rep = import_labels(ds, "ytvis", write(tmp_path / "ovis.json", json.dumps(doc)))
    assert [(r["start_frame"], r["attributes"]) for r in ds.annotations()] == [
        (0, {"occlusion": 0.0}), (2, {"occlusion": 2.0}),
    ]  # fmt: skip
    assert rep.attributes_added == {"car": {"occlusion": "number"}}
    ds.build()
    export_labels(ds, "ytvis", tmp_path / "out.json")
    (ann,) = json.loads((tmp_path / "out.json").read_text())["annotations"]
    assert ann["occlusion"][:3] == [0.0, None, 2.0]
    with pytest.raises(FormatError, match=r"annotations\[0\]: occlusion is '\[0\]'; expected a list of 3 levels"):
        import_labels(
            dataset(tmp_path / "ds2"),
            "ytvis",
            write(
                tmp_path / "bad.json", json.dumps({**doc, "annotations": [{**doc["annotations"][0], "occlusion": [0]}]})
            ),
        )


def test_label_studio_per_region_choices_and_numbers_are_attributes_both_ways(tmp_path: Path) -> None:
    doc = _ls_task(25.0, 50.0)
    result = doc[0]["annotations"][0]["result"]
    result.append({"id": "a", "type": "choices", "from_name": "pose", "to_name": "video",
                   "value": {"choices": ["walking"]}})  # fmt: skip
    result.append({"id": "a", "type": "number", "from_name": "age", "to_name": "video", "value": {"number": 7}})
    result.append({"id": "zz", "type": "choices", "from_name": "weather", "to_name": "video",
                   "value": {"choices": ["rain"]}})  # a task-level choice: no region of that id  # fmt: skip
    ds = dataset(tmp_path / "ds")
    rep = import_labels(ds, "label-studio", write(tmp_path / "ls.json", json.dumps(doc)), video_id="cam1")
    (row,) = ds.annotations()
    assert row["attributes"] == {"pose": "walking", "age": 7.0}
    assert rep.attributes_added == {"car": {"pose": "text", "age": "number"}}
    assert rep.skipped == {"unsupported result type: choices": 1}
    ds.build()
    out = export_labels(ds, "label-studio", tmp_path / "out.json")
    assert not out.not_written
    ds2 = dataset(tmp_path / "ds2")
    import_labels(ds2, "label-studio", tmp_path / "out.json")
    assert [r["attributes"] for r in ds2.annotations()] == [{"pose": "walking", "age": 7.0}]


def test_mediasequence_export_counts_the_attributes_it_cannot_hold(tmp_path: Path, clip) -> None:
    from vidlabel.video import probe

    ds = dataset(tmp_path / "a", videos=[probe(clip.path, video_id="cam1")])
    ds.set_attribute_schema("car", {"occluded": "bool"})
    rows = [{"kind": "box", "label": "car", "start_frame": f, "box": (1.0, 2.0, 9.0, 12.0)} for f in (1, 2, 3)]
    rows[0]["attributes"] = {"occluded": True}
    rows[2]["attributes"] = {"occluded": False}
    ds.add_annotations(rows, "cam1")
    ds.build()
    rep = export_labels(ds, "mediasequence", tmp_path / "ms")
    assert rep.not_written == {"attributes of a row (MediaSequence holds none; the rows are written)": 2}
