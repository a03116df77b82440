"""YouTube-VIS import/export: file-name positions or digits, null = absent, xywh, polygon / list / string RLE."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from pycocotools import mask as mask_utils

from tests.formats_util import assert_same_rows, dataset, meta, random_tracks, uncompressed_rle
from vidlabel.errors import FormatError
from vidlabel.formats import export_labels, import_labels
from vidlabel.geometry import decode_rle


def doc(annotations, names, categories=({"id": 7, "name": "car"}, {"id": 1, "name": "person"}), vid="cam1"):
    return {
        "categories": list(categories),
        "videos": [
            {"id": 3, "width": 64, "height": 48, "length": len(names), "file_names": [f"{vid}/{n}" for n in names]}
        ],
        "annotations": annotations,
    }


def write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def test_positions_null_and_categories_by_name(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    names = [f"{i:05d}.jpg" for i in range(4)]
    anns = [
        {"id": 1, "video_id": 3, "category_id": 7, "bboxes": [None, [1, 2, 3, 4], None, [2, 2, 3, 4]]},
        {"id": 2, "video_id": 3, "category_id": 1, "bboxes": [[5, 5, 1, 1], None, None, None], "score": 0.5},
    ]
    rep = import_labels(ds, "ytvis", write(tmp_path / "y.json", doc(anns, names)), video_id="cam1")
    got = sorted((r["track_id"], r["start_frame"], r["label"], r["box"], r["origin"]) for r in ds.annotations())
    assert got == [
        (0, 1, "car", (1.0, 2.0, 4.0, 6.0), "human"),
        (0, 3, "car", (2.0, 2.0, 5.0, 6.0), "human"),
        (1, 0, "person", (5.0, 5.0, 6.0, 6.0), "model"),
    ]
    assert rep.notes == []


def test_consecutive_names_counting_from_one_are_positions_with_a_note(tmp_path: Path) -> None:
    """Frames extracted by ffmpeg are numbered 00001.jpg, 00002.jpg, ...: the first file is frame 0 (before, the
    digits were taken and every box landed one frame late); frames='digits' still takes the digits."""
    names = [f"{i:05d}.jpg" for i in range(1, 5)]
    anns = [{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2], None, None, [3, 3, 2, 2]]}]
    f = write(tmp_path / "y.json", doc(anns, names))
    ds = dataset(tmp_path / "ds")
    rep = import_labels(ds, "ytvis", f)
    assert sorted((r["start_frame"], r["box"]) for r in ds.annotations()) == [
        (0, (1.0, 1.0, 3.0, 3.0)),
        (3, (3.0, 3.0, 5.0, 5.0)),
    ]
    assert any(
        "the file names count from 1 (cam1/00001.jpg, ...): frames taken as their positions" in n for n in rep.notes
    )
    ds2 = dataset(tmp_path / "ds2")
    import_labels(ds2, "ytvis", f, frames="digits")
    assert sorted(r["start_frame"] for r in ds2.annotations()) == [1, 4]


def test_stride_in_digits_chosen_with_a_note_or_positions_on_request(tmp_path: Path) -> None:
    names = ["00000.jpg", "00005.jpg", "00010.jpg"]
    anns = [{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [None, [1, 2, 3, 4], [1, 2, 3, 4]]}]
    f = write(tmp_path / "y.json", doc(anns, names))
    ds = dataset(tmp_path / "ds")
    rep = import_labels(ds, "ytvis", f)  # the folder 'cam1' of the file names names the video
    assert sorted(r["start_frame"] for r in ds.annotations()) == [5, 10]
    assert any("frames taken from the file names' digits (0, 5, ...; steps [5])" in n for n in rep.notes)
    ds2 = dataset(tmp_path / "ds2")
    import_labels(ds2, "ytvis", f, frames="position")
    assert sorted(r["start_frame"] for r in ds2.annotations()) == [1, 2]
    with pytest.raises(FormatError, match=r"option frames='every'; allowed: 'auto', 'position', 'digits'"):
        import_labels(ds2, "ytvis", f, frames="every")


def test_segmentations_polygon_list_and_string_rle(tmp_path: Path) -> None:
    truth = np.zeros((48, 64), np.uint8)
    truth[5:9, 10:13] = 1
    rle = mask_utils.encode(np.asfortranarray(truth))
    counts_list = uncompressed_rle(truth)
    segs = [
        [[10, 5, 13, 5, 13, 9, 10, 9]],
        {"size": [48, 64], "counts": counts_list},
        {"size": [48, 64], "counts": rle["counts"].decode()},
        None,
    ]
    anns = [
        {"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[0, 0, 1, 1]] * 3 + [[1, 1, 2, 2]], "segmentations": segs}
    ]
    ds = dataset(tmp_path / "ds")
    import_labels(ds, "ytvis", write(tmp_path / "y.json", doc(anns, [f"{i}.jpg" for i in range(4)])), video_id="cam1")
    rows = sorted(ds.annotations(), key=lambda r: r["start_frame"])
    assert [r["kind"] for r in rows] == ["mask", "mask", "mask", "box"]
    assert rows[3]["box"] == (1.0, 1.0, 3.0, 3.0)
    for r in rows[:3]:
        assert np.array_equal(decode_rle(r["mask"]), truth) and r["box"] == (10.0, 5.0, 13.0, 9.0)


@pytest.mark.parametrize(
    ("width", "match"),
    [
        ("64", r"videos\[0\]: width is '64'; expected a finite number"),
        (65, r"videos\[0\]: width 65 disagrees with video 'cam1', whose width is 64$"),
        (64.5, r"videos\[0\]: width is 64.5; expected a whole number"),
    ],
)
def test_a_video_size_that_is_text_or_another_size_is_refused(tmp_path: Path, width, match: str) -> None:
    """A width written as text was compared as text, so "64" read as "64 disagrees with ... 64"."""
    d = doc([{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2]]}], ["00000.jpg"])
    d["videos"][0]["width"] = width
    with pytest.raises(FormatError, match=match):
        import_labels(dataset(tmp_path / "ds"), "ytvis", write(tmp_path / "y.json", d))


def test_bad_files(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    anns = [{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2]]}]
    with pytest.raises(FormatError, match=r"annotations\[0\]: bboxes has 1 entries; the video has 2 file_names"):
        import_labels(ds, "ytvis", write(tmp_path / "a.json", doc(anns, ["0.jpg", "1.jpg"])))
    far = [{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [None, [1, 1, 2, 2]]}]
    with pytest.raises(
        FormatError, match=r"annotations\[0\] frame index 1: frame 40 \(0-based\) is outside video 'cam1'"
    ):
        import_labels(ds, "ytvis", write(tmp_path / "b.json", doc(far, ["00000.jpg", "00040.jpg"])))
    (tmp_path / "c.json").write_text("[1, 2")
    with pytest.raises(FormatError, match=r"c.json line 1: not valid JSON"):
        import_labels(ds, "ytvis", tmp_path / "c.json")
    with pytest.raises(FormatError, match=r"label\(s\) 'bus' are not in the dataset"):
        import_labels(
            ds,
            "ytvis",
            write(
                tmp_path / "d.json",
                doc(
                    [*anns[:0], dict(anns[0], bboxes=[[1, 1, 2, 2]])], ["0.jpg"], categories=[{"id": 1, "name": "bus"}]
                ),
            ),
        )
    assert ds.annotations() == []


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        # raw ValueError / TypeError before
        ("score", "high", r"annotations\[0\]: score is 'high'; expected a finite number"),
        ("score", [1], r"annotations\[0\]: score is \[1\]; expected a finite number"),
        ("video_id", [3], r"annotations\[0\]: video_id is \[3\]; expected a number or a string"),
        ("category_id", [1], r"annotations\[0\]: category_id is \[1\]; expected a number or a string"),
    ],
)
def test_fields_of_the_wrong_type_are_refused(tmp_path: Path, field: str, value, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    ann = {"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 2, 3, 4]], field: value}
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "ytvis", write(tmp_path / "a.json", doc([ann], ["00000.jpg"])))
    assert ds.annotations() == []


def test_file_names_are_never_opened(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    anns = [{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2]]}]
    f = write(tmp_path / "y.json", doc(anns, ["../../../../etc/passwd"], vid="/abs"))
    with pytest.raises(FormatError, match=r"videos\[0\]: video '3', '/' of the file is not a registered video"):
        import_labels(ds, "ytvis", f)
    import_labels(ds, "ytvis", f, videos={3: "cam1"})
    assert len(ds.annotations()) == 1


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=random_tracks(masks=True))
def test_round_trip(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("ytvis")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20)])
    ds.add_annotations(rows, "cam1")
    ds.build()
    export_labels(ds, "ytvis", tmp / "out.json")
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20)])
    import_labels(ds2, "ytvis", tmp / "out.json")
    assert_same_rows(ds2.annotations(), ds.annotations())


def test_model_track_without_confidence_counted_as_not_written(tmp_path: Path) -> None:
    # YouTube-VIS marks a model's instance by its score: without one the rows read back as human
    ds = dataset(tmp_path / "ds")
    model_rows = [
        {"kind": "box", "label": "person", "start_frame": f, "box": (1, 2, 11, 12), "track_id": 0, "origin": "model"}
        for f in (0, 1, 2)
    ]
    ds.add_annotations([*model_rows, {"kind": "box", "label": "car", "start_frame": 0, "box": (1, 2, 5, 6)}], "cam1")
    ds.build()
    report = export_labels(ds, "ytvis", tmp_path / "a.json")
    why = "origin of model rows without a confidence (a YouTube-VIS instance is a model's by its score)"
    assert report.not_written == {why: len(model_rows)}
    assert not any("differ" in n for n in report.notes)  # no confidence at all: no "confidences differ" note


def test_an_empty_or_degenerate_segmentation_beside_a_bbox_imports_the_bbox(tmp_path: Path) -> None:
    """A frame's segmentation of [] (no polygon) or of a polygon under 3 points, next to its bbox, dropped the
    object on that frame, counted only as a bad polygon; the bbox is now imported as a box, and the count says so."""
    ds = dataset(tmp_path / "ds")
    names = [f"{i:05d}.jpg" for i in range(3)]
    square = [[30, 10, 40, 10, 40, 20, 30, 20]]
    anns = [
        {
            "id": 1,
            "video_id": 3,
            "category_id": 7,
            "bboxes": [[30, 10, 10, 10], [1, 2, 3, 4], [5, 6, 7, 8]],
            "segmentations": [square, [], [[1, 1, 5, 5]]],
        },
        {
            "id": 2,
            "video_id": 3,
            "category_id": 1,
            "bboxes": [None, None, None],
            "segmentations": [None, [[1, 1]], None],
        },
    ]
    rep = import_labels(ds, "ytvis", write(tmp_path / "y.json", doc(anns, names)), video_id="cam1")
    got = sorted((r["start_frame"], r["kind"], r["box"]) for r in ds.annotations())
    assert got == [
        (0, "mask", (30.0, 10.0, 40.0, 20.0)),
        (1, "box", (1.0, 2.0, 4.0, 6.0)),
        (2, "box", (5.0, 6.0, 12.0, 14.0)),
    ]
    assert rep.skipped == {"polygon with < 3 points (its bbox imported as a box)": 2, "polygon with < 3 points": 1}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        # a video's frames are its file_names: a length saying otherwise was imported without a word
        ({"length": 5}, r"videos\[0\]: length 5 disagrees with its 2 file_names"),
        ({"length": "2"}, r"videos\[0\]: length is '2'; expected a finite number"),
        # bboxes / segmentations that are no lists were read as absent (the annotation's boxes gone unsaid)
        ({"bboxes": {}}, r"annotations\[0\]: bboxes has \{\} entries; the video has 2 file_names"),
        ({"bboxes": ""}, r"annotations\[0\]: bboxes has '' entries; the video has 2 file_names"),
        ({"segmentations": 0}, r"annotations\[0\]: segmentations has 0 entries; the video has 2 file_names"),
    ],
)
def test_a_length_or_lists_that_disagree_with_the_file_names_are_refused(tmp_path: Path, change, match) -> None:
    ds = dataset(tmp_path / "ds")
    d = doc([{"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2], None]}], ["00000.jpg", "00001.jpg"])
    target = d["videos"][0] if "length" in change else d["annotations"][0]
    target.update(change)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "ytvis", write(tmp_path / "y.json", d))
    assert ds.annotations() == []


def test_null_or_empty_lists_are_absent(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    anns = [
        {"id": 1, "video_id": 3, "category_id": 1, "bboxes": [[1, 1, 2, 2], None], "segmentations": None},
        {"id": 2, "video_id": 3, "category_id": 7, "bboxes": [None, [3, 3, 2, 2]], "segmentations": []},
    ]
    import_labels(ds, "ytvis", write(tmp_path / "y.json", doc(anns, ["00000.jpg", "00001.jpg"])))
    assert sorted((r["label"], r["start_frame"], r["box"]) for r in ds.annotations()) == [
        ("car", 1, (3.0, 3.0, 5.0, 5.0)),
        ("person", 0, (1.0, 1.0, 3.0, 3.0)),
    ]
