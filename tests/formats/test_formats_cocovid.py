"""COCO-VID import/export: frame_id 0-based and dense, instance tracks, xywh, polygons and RLE, categories by name."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from pycocotools import mask as mask_utils

from tests.formats_util import assert_same_rows, dataset, meta, random_tracks, uncompressed_rle
from vidlabel.dataset._db import DB_NAME
from vidlabel.errors import FormatError
from vidlabel.formats import export_labels, import_labels
from vidlabel.geometry import decode_rle


def doc(annotations, *, frames=range(30), categories=({"id": 7, "name": "car"}, {"id": 1, "name": "person"})):
    return {
        "categories": list(categories),
        "videos": [{"id": 5, "name": "cam1"}],
        "images": [{"id": 100 + f, "video_id": 5, "frame_id": f, "width": 64, "height": 48} for f in frames],
        "annotations": annotations,
    }


def write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def test_frames_tracks_boxes_categories_by_name(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")  # person=0, car=1: ids 1 and 7 in the file differ from ours
    anns = [
        {"id": 1, "image_id": 103, "category_id": 7, "instance_id": 4, "bbox": [10, 20, 5, 6]},
        {"id": 2, "image_id": 100, "category_id": 1, "instance_id": -1, "bbox": [1.5, 2, 3, 4], "score": 0.25},
    ]
    rep = import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))  # video by name
    got = sorted(
        (r["start_frame"], r["label"], r["box"], r["track_id"], r["origin"], r["confidence"]) for r in ds.annotations()
    )
    assert got == [
        (0, "person", (1.5, 2.0, 4.5, 6.0), None, "model", 0.25),
        (3, "car", (10.0, 20.0, 15.0, 26.0), 4, "human", None),
    ]
    assert rep.videos["cam1"].counts == {"box": 2}


def test_polygon_and_rle_segmentations(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    truth = np.zeros((48, 64), np.uint8)
    truth[10:20, 30:40] = 1
    fortran = np.asfortranarray(truth)
    runs = uncompressed_rle(truth)
    compressed = mask_utils.encode(fortran)["counts"].decode()
    anns = [
        {
            "id": 1,
            "image_id": 101,
            "category_id": 1,
            "instance_id": 0,
            "segmentation": [[30, 10, 40, 10, 40, 20, 30, 20]],
        },
        {
            "id": 2,
            "image_id": 102,
            "category_id": 1,
            "instance_id": 0,
            "segmentation": {"size": [48, 64], "counts": runs},
        },
        {
            "id": 3,
            "image_id": 103,
            "category_id": 1,
            "instance_id": 0,
            "segmentation": {"size": [48, 64], "counts": compressed},
        },
        {"id": 4, "image_id": 104, "category_id": 1, "instance_id": 0, "segmentation": [[1, 1, 5, 5]]},
    ]
    rep = import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    rows = sorted(ds.annotations(), key=lambda r: r["start_frame"])
    assert [r["start_frame"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert r["kind"] == "mask" and r["box"] == (30.0, 10.0, 40.0, 20.0)
    assert np.array_equal(decode_rle(rows[1]["mask"]), truth) and np.array_equal(decode_rle(rows[2]["mask"]), truth)
    # pycocotools rasterises the polygon's boundary pixels inside: the square 30..40 x 10..20 covers 10x10 pixels
    assert int(decode_rle(rows[0]["mask"]).sum()) == 100
    assert rep.skipped == {"polygon with < 3 points": 1}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), True, 1e12, "7"])
def test_polygon_coordinate_not_a_finite_pixel_is_refused(tmp_path: Path, value) -> None:
    # NaN or infinity reached pycocotools' rasteriser, which crashed the process (segfault, or all memory)
    ds = dataset(tmp_path / "ds")
    poly = [[30, 10, 40, 10, value, 20, 30, 20]]
    anns = [{"id": 1, "image_id": 101, "category_id": 1, "instance_id": 0, "segmentation": poly}]
    with pytest.raises(
        FormatError, match=r"a\.json annotations\[0\]: segmentation polygon .* not a list of x, y numbers"
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    assert ds.annotations() == []


def test_polygon_vertex_far_outside_is_cut_to_the_frame(tmp_path: Path) -> None:
    # a vertex 1e9 pixels out made pycocotools walk a billion-pixel outline (memory, then a crash)
    ds = dataset(tmp_path / "ds")
    far = [[0, 0, 1e9, 0, 1e9, 1e9, 0, 1e9]]  # covers the whole 64x48 frame
    near = [[-100, -100, 200, -100, 200, 200, -100, 200]]
    anns = [
        {"id": 1, "image_id": 101, "category_id": 1, "instance_id": 0, "segmentation": far},
        {"id": 2, "image_id": 102, "category_id": 1, "instance_id": 0, "segmentation": near},
    ]
    import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    rows = sorted(ds.annotations(), key=lambda r: r["start_frame"])
    assert [int(decode_rle(r["mask"]).sum()) for r in rows] == [48 * 64, 48 * 64]


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        (range(1, 31), r"images\[0\]: video 5: the lowest frame_id is 1; COCO-VID frame_id is 0-based"),
        ([0, 1, 3, 4], r"images\[2\]: video 5: frame_id 3 follows 1; frame_id must be dense"),
    ],
)
def test_one_based_or_gappy_frames_refused(tmp_path: Path, frames, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc([], frames=frames)))


def test_a_cut_json_file_names_where_its_string_starts_once(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    cut = tmp_path / "cut.json"
    cut.write_text('{"videos": [\n  {"name": "cam')
    with pytest.raises(
        FormatError, match=r"cut.json line 2: not valid JSON \(Unterminated string starting at column 12\)$"
    ):
        import_labels(ds, "coco-vid", cut)


def test_bad_files(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    bad = tmp_path / "bad.json"
    bad.write_text('{"videos": [\n  {"id": 1,}\n]}')
    with pytest.raises(
        FormatError,
        match=r"bad.json line 2: not valid JSON \(Expecting property name enclosed in double quotes at column 12\)",
    ):
        import_labels(ds, "coco-vid", bad)
    far = [{"id": 1, "image_id": 130, "category_id": 1, "bbox": [1, 1, 2, 2]}]
    with pytest.raises(
        FormatError, match=r"annotations\[0\]: its image images\[30\] \(id 130\) has frame_id 30, outside video 'cam1'"
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "far.json", doc(far, frames=range(31))))
    unknown = [{"id": 1, "image_id": 100, "category_id": 3, "bbox": [1, 1, 2, 2]}]
    with pytest.raises(FormatError, match=r"annotations\[0\]: category_id 3 is not in categories\[\] \(ids \[1, 7\]\)"):
        import_labels(ds, "coco-vid", write(tmp_path / "u.json", doc(unknown)))
    label = [{"id": 1, "image_id": 100, "category_id": 2, "bbox": [1, 1, 2, 2]}]
    with pytest.raises(FormatError, match=r"label\(s\) 'bus' are not in the dataset"):
        import_labels(ds, "coco-vid", write(tmp_path / "l.json", doc(label, categories=[{"id": 2, "name": "bus"}])))
    boxes = [{"id": 1, "image_id": 100, "category_id": 1, "bbox": [1, 1, 2, 2]},
             {"id": 2, "image_id": 101, "category_id": 1, "bbox": [1, "x", 2, 2]}]  # fmt: skip
    with pytest.raises(FormatError, match=r"annotations\[1\]: bbox is 'x'; expected a finite number"):
        import_labels(ds, "coco-vid", write(tmp_path / "b.json", doc(boxes)))
    other = doc([])
    other["videos"][0]["name"] = "cam9"
    with pytest.raises(
        FormatError, match=r"videos\[0\]: video '5', 'cam9' of the file is not a registered video; pass video_id="
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "o.json", other))
    assert ds.annotations() == []


def _ann(**fields):
    return [{"id": 1, "image_id": 100, "category_id": 1, "instance_id": 0, "bbox": [1, 2, 3, 4], **fields}]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        # each raised a raw OverflowError, RecursionError, TypeError or UnicodeEncodeError before
        (json.dumps(doc(_ann())).replace("[1, 2, 3, 4]", "[1" + "0" * 400 + ", 2, 3, 4]"),
         r"annotations\[0\]: bbox is 1000000000.*\.\.\.; expected a finite number"),
        ('{"videos": ' + "[" * 100_000 + "]" * 100_000 + "}", r"a\.json: JSON nested too deeply to read"),
        (json.dumps(doc(_ann(bbox=["1", 2, 3, 4]))), r"annotations\[0\]: bbox is '1'; expected a finite number"),
        (json.dumps(doc(_ann(segmentation={"size": 48, "counts": [3072]}))),
         r"annotations\[0\]: segmentation size 48 is not the frame's \[height, width\] = \[48, 64\]"),
        (json.dumps(doc(_ann(segmentation={"size": [48, 64], "counts": "\u00e9"}))),
         r"annotations\[0\]: compressed RLE counts 'é' hold a character that is not ASCII"),
    ],
    ids=["huge-int", "deep-nesting", "text-number", "size-not-a-list", "non-ascii-counts"],
)  # fmt: skip
def test_hostile_json_is_a_format_error(tmp_path: Path, text: str, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    path = tmp_path / "a.json"
    path.write_text(text)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "coco-vid", path)
    assert ds.annotations() == []


@pytest.mark.parametrize(
    ("change", "match"),
    [
        # a list or an object as an id raised a raw TypeError (unhashable type)
        (lambda d: d["annotations"][0].update(image_id=[100]), r"annotations\[0\]: image_id is \[100\]; expected a number"),
        (lambda d: d["annotations"][0].update(category_id={}), r"annotations\[0\]: category_id is \{\}; expected a number"),
        (lambda d: d["images"][0].update(video_id=[5]), r"images\[0\]: video_id is \[5\]; expected a number"),
        (lambda d: d["videos"][0].update(id=[5]), r"videos\[0\]: id is \[5\]; expected a number or a string"),
        # a repeated id silently replaced the first: the annotation landed on another frame, or got another label
        (lambda d: d["images"][1].update(id=100), r"images\[1\]: image id 100 repeats \(images\[0\] has it too\)"),
        (lambda d: d["categories"].append({"id": 1, "name": "car"}), r"categories\[2\]: category id 1 repeats \('person', 'car'\)"),
        (lambda d: d["videos"].append({"id": 5, "name": "cam1"}), r"videos\[1\]: video id 5 repeats"),
    ],
    ids=["image_id-list", "category_id-object", "video_id-list", "video-id-list", "image-id-twice", "category-id-twice",
         "video-id-twice"],
)  # fmt: skip
def test_ids_that_are_lists_or_repeat_are_refused(tmp_path: Path, change, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    d = doc(_ann())
    change(d)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", d))
    assert ds.annotations() == []


def test_a_file_of_several_unknown_videos_names_the_cli_flag(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    two = doc([])
    two["videos"] = [{"id": 5, "name": "a"}, {"id": 6, "name": "b"}]
    with pytest.raises(
        FormatError, match=r"the file holds 2 videos: pass videos=\{file key: video id\} \(--video-map K="
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "two.json", two))


def test_multi_video_file_is_one_transaction(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds", videos=[meta("cam1"), meta("cam2")])
    d = doc([{"id": 1, "image_id": 100, "category_id": 1, "bbox": [1, 1, 2, 2], "instance_id": 0}])
    d["videos"].append({"id": 6, "name": "cam2"})
    d["images"].append({"id": 999, "video_id": 6, "frame_id": 0, "width": 64, "height": 48})
    d["annotations"].append({"id": 2, "image_id": 999, "category_id": 1, "bbox": [100, 100, 2, 2]})  # outside the frame
    with pytest.raises(FormatError, match=r"annotations\[1\]: field 'box' \(video 'cam2'\): .*outside"):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", d))
    assert ds.annotations() == []  # cam1's row was written, then undone


def _dump(ds_path: Path) -> list[str]:
    with closing(sqlite3.connect(ds_path / DB_NAME)) as con:
        return list(con.iterdump())


def test_a_refused_file_adds_no_labels_tracks_or_ids(tmp_path: Path) -> None:
    """The labels ``add_labels=True`` adds, the first video's track and the annotation ids all roll back
    with the file (before, the labels stayed: a refused file changed the dataset)."""
    ds = dataset(tmp_path / "ds", videos=[meta("cam1"), meta("cam2")])
    cats = ({"id": 1, "name": "person"}, {"id": 3, "name": "zebra"})
    d = doc([{"id": 1, "image_id": 100, "category_id": 3, "bbox": [1, 1, 2, 2], "instance_id": 0}], categories=cats)
    d["videos"].append({"id": 6, "name": "cam2"})
    d["images"].append({"id": 999, "video_id": 6, "frame_id": 0, "width": 64, "height": 48})
    d["annotations"].append({"id": 2, "image_id": 999, "category_id": 1, "bbox": [100, 100, 2, 2]})  # outside
    before = _dump(tmp_path / "ds")
    with pytest.raises(FormatError, match=r"annotations\[1\]: field 'box' \(video 'cam2'\): .*outside"):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", d), add_labels=True)
    assert _dump(tmp_path / "ds") == before
    assert ds.labels() == ["person", "car", "goal"]
    # cam1's track 0 is free: the same file, cam2's row mended, imports with track 0 as zebra
    d["annotations"][1]["bbox"] = [1, 1, 2, 2]
    import_labels(ds, "coco-vid", write(tmp_path / "b.json", d), add_labels=True)
    assert ds.labels() == ["person", "car", "goal", "zebra"]
    assert sorted((r["video_id"], r["label"], r["track_id"]) for r in ds.annotations()) == [
        ("cam1", "zebra", 0),
        ("cam2", "person", None),
    ]


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=random_tracks(masks=True, untracked=True))
def test_round_trip(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("coco")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20), meta("cam2", frame_count=5)])
    ds.add_annotations(rows, "cam1")
    ds.add_annotations(
        [{"kind": "box", "label": "car", "start_frame": 4, "box": (1, 2, 3, 4), "origin": "model", "confidence": 0.5}],
        "cam2",
    )
    ds.build()
    rep = export_labels(ds, "coco-vid", tmp / "out.json")
    assert rep.counts["box"] + rep.counts["mask"] == len(rows) + 1
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20), meta("cam2", frame_count=5)])
    import_labels(ds2, "coco-vid", tmp / "out.json")
    assert_same_rows(ds2.annotations(), ds.annotations())


def test_ignore_annotations_counted_and_visibility_kept_as_attributes(tmp_path: Path) -> None:
    # mmtracking's mot2coco writes visibility; an `ignore` region is no object (CocoVideoDataset puts it with iscrowd)
    ds = dataset(tmp_path / "ds")
    anns = [
        {"id": 1, "image_id": 100, "category_id": 1, "instance_id": 0, "bbox": [1, 2, 3, 4], "visibility": 0.25},
        {"id": 2, "image_id": 101, "category_id": 1, "instance_id": 0, "bbox": [2, 2, 3, 4], "visibility": 1.0},
        {"id": 3, "image_id": 101, "category_id": 1, "instance_id": -1, "bbox": [20, 20, 9, 9], "ignore": True},
        {"id": 4, "image_id": 102, "category_id": 7, "instance_id": 1, "bbox": [5, 5, 5, 5], "occluded": 1},
    ]
    rep = import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    got = sorted((r["start_frame"], r["box"]) for r in ds.annotations())
    assert got == [(0, (1.0, 2.0, 4.0, 6.0)), (1, (2.0, 2.0, 5.0, 6.0)), (2, (5.0, 5.0, 10.0, 10.0))]
    assert rep.skipped == {"ignore annotation (an ignored region, as iscrowd)": 1}
    assert rep.notes == []
    got = sorted((r["start_frame"], r.get("attributes")) for r in ds.annotations())
    assert got == [(0, {"visibility": 0.25}), (1, {"visibility": 1.0}), (2, {"occluded": True})]
    assert rep.attributes_added == {"person": {"visibility": "number"}, "car": {"occluded": "bool"}}


@pytest.mark.parametrize(
    ("width", "match"),
    [
        ("64", r"images\[0\]: width is '64'; expected a finite number"),
        (64.5, r"images\[0\]: width is 64\.5; expected a whole number"),
        (65, r"images\[0\]: width 65 disagrees with video 'cam1', whose width is 64"),
    ],
)
def test_image_width_text_or_fraction_refused_as_such(tmp_path: Path, width, match: str) -> None:
    d = doc([])
    d["images"][0]["width"] = width
    with pytest.raises(FormatError, match=match):
        import_labels(dataset(tmp_path / "ds"), "coco-vid", write(tmp_path / "a.json", d))


def test_a_degenerate_segmentation_beside_a_bbox_imports_the_bbox_and_a_null_instance_is_untracked(
    tmp_path: Path,
) -> None:
    """A polygon under 3 points (or of no area) next to the annotation's bbox dropped the object, counted only
    as a bad polygon; the bbox is now imported as a box. ``"instance_id": null`` was refused, while an absent
    instance_id means untracked: null now means the same."""
    ds = dataset(tmp_path / "ds")
    anns = [
        {"id": 1, "image_id": 101, "category_id": 1, "instance_id": 2, "bbox": [1, 2, 3, 4], "segmentation": [[1, 1, 5, 5]]},
        {"id": 2, "image_id": 102, "category_id": 1, "instance_id": None, "bbox": [5, 6, 7, 8],
         "segmentation": [[1, 1, 2, 2, 3, 3]]},  # three points on a line: no area
    ]  # fmt: skip
    rep = import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    got = sorted((r["start_frame"], r["kind"], r["box"], r["track_id"]) for r in ds.annotations())
    assert got == [(1, "box", (1.0, 2.0, 4.0, 6.0), 2), (2, "box", (5.0, 6.0, 12.0, 14.0), None)]
    assert rep.skipped == {
        "polygon with < 3 points (its bbox imported as a box)": 1,
        "polygon of zero area (its bbox imported as a box)": 1,
    }


def test_mot_frame_id_of_a_half_split_file_is_the_video_frame(tmp_path: Path) -> None:
    # mmtracking's tools/convert_datasets/mot/mot2coco.py writes a "half-val" file from the second half of a MOT
    # sequence: img_names = img_names[split_frame:], then frame_id = position in that slice (0, 1, ...) and
    # mot_frame_id = int(file name), the sequence's own 1-based frame. mmtracking's MOTChallengeDataset writes
    # results at mot_frame_id when an image has one ("`mot_frame_id` is the actual frame id used for evaluation.
    # It may not start from 0"), else frame_id + 1. So the video frame (0-based) is mot_frame_id - 1.
    ds = dataset(tmp_path / "ds")  # 30 frames; a half-val slice of 30 images starts at MOT frame 16 (30 // 2 + 1)
    split = 30 // 2 + 1
    images = [
        {"id": 100 + k, "video_id": 5, "frame_id": k, "mot_frame_id": split + k + 1, "width": 64, "height": 48}
        for k in range(30 - split)
    ]
    anns = [
        {"id": 1, "image_id": 100, "category_id": 1, "instance_id": 0, "bbox": [1, 2, 3, 4]},  # 000017.jpg
        {"id": 2, "image_id": 113, "category_id": 1, "instance_id": 0, "bbox": [5, 6, 3, 4]},  # 000030.jpg
    ]
    f = write(tmp_path / "half-val_cocoformat.json", {**doc(anns), "images": images})
    rep = import_labels(ds, "coco-vid", f)
    assert sorted(r["start_frame"] for r in ds.annotations()) == [16, 29]  # MOT frames 17 and 30, 1-based
    assert any("mot_frame_id" in n for n in rep.notes)


def test_mot_frame_id_below_one_or_repeated_is_refused(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    images = [{"id": 100 + k, "video_id": 5, "frame_id": k, "mot_frame_id": k + 1} for k in range(3)]
    images[2]["mot_frame_id"] = 0
    with pytest.raises(FormatError, match=r"images\[2\]: mot_frame_id 0 .*1-based"):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", {**doc([]), "images": images}))
    images[2]["mot_frame_id"] = 2
    with pytest.raises(FormatError, match=r"images\[2\]: .*mot_frame_id 2 .*images\[1\]"):
        import_labels(ds, "coco-vid", write(tmp_path / "b.json", {**doc([]), "images": images}))


def test_model_rows_without_a_confidence_are_counted_as_not_written(tmp_path: Path) -> None:
    # COCO-VID tells a model's annotation by its score (mmtracking's results carry one); a model row without a
    # confidence is written without a score, so it reads back as a human row: its origin is lost, and the
    # report counts it under "not written" (as YouTube-VIS does), not only in a note.
    ds = dataset(tmp_path / "a")
    ds.add_annotations(
        [
            {"kind": "box", "label": "person", "start_frame": 1, "box": (1, 1, 5, 5), "origin": "model"},
            {
                "kind": "box",
                "label": "person",
                "start_frame": 2,
                "box": (1, 1, 5, 5),
                "origin": "model",
                "confidence": 0.5,
            },
            {"kind": "box", "label": "person", "start_frame": 3, "box": (1, 1, 5, 5)},
        ],
        "cam1",
    )
    ds.build()
    rep = export_labels(ds, "coco-vid", tmp_path / "out.json")
    assert [n for why, n in rep.not_written.items() if "origin" in why] == [1]
    ds2 = dataset(tmp_path / "b")
    import_labels(ds2, "coco-vid", tmp_path / "out.json")
    assert sorted((r["start_frame"], r["origin"]) for r in ds2.annotations()) == [
        (1, "human"),
        (2, "model"),
        (3, "human"),
    ]


@pytest.mark.parametrize(
    ("image", "match"),
    [
        (
            {"frame_id": 0, "mot_frame_id": 31},
            r"a\.json annotations\[0\]: its image images\[0\] \(id 100\) has mot_frame_id 31 \(1-based\), outside "
            r"video 'cam1': mot_frame_id 1\.\.30 \(30 frames\)$",
        ),
        (
            {"frame_id": 30},
            r"a\.json annotations\[0\]: its image images\[30\] \(id 130\) has frame_id 30, outside video 'cam1': "
            r"frame_id 0\.\.29 \(30 frames\)$",
        ),
    ],
)
def test_an_annotation_on_an_image_past_the_video_names_the_image_and_its_frame(
    tmp_path: Path, image: dict, match: str
) -> None:
    # an image of mot_frame_id 31 was refused as 'annotations[0]: frame 30 (0-based) is outside video 'cam1':
    # frames 0..29', a number the file holds nowhere, naming neither the image nor its mot_frame_id
    ds = dataset(tmp_path / "ds")
    d = doc([], frames=range(31) if "mot_frame_id" not in image else range(30))
    at = 0 if "mot_frame_id" in image else 30
    d["images"][at].update(image)
    d["annotations"] = [{"id": 1, "image_id": 100 + at, "category_id": 1, "bbox": [1, 2, 3, 4]}]
    if "mot_frame_id" in image:
        for k, im in enumerate(d["images"][1:], 1):
            im["mot_frame_id"] = k
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", d))
    assert ds.annotations() == []


def test_a_videos_entry_whose_size_disagrees_with_the_registered_video_is_refused(tmp_path: Path) -> None:
    # videos[].width/height were never read: a file of a 128x96 video imported onto the 64x48 one without a
    # word when its images carried no size (mmtracking's CocoVID files give the size on videos too)
    ds = dataset(tmp_path / "ds")
    d = doc([{"id": 1, "image_id": 100, "category_id": 1, "bbox": [1, 2, 3, 4]}])
    for im in d["images"]:
        del im["width"], im["height"]
    d["videos"][0].update(width=128, height=96)
    with pytest.raises(
        FormatError, match=r"a\.json videos\[0\]: width 128 disagrees with video 'cam1', whose width is 64$"
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", d))
    assert ds.annotations() == []
    d["videos"][0].update(width=64, height=48)
    import_labels(ds, "coco-vid", write(tmp_path / "a.json", d))
    assert len(ds.annotations()) == 1


def test_an_attribute_of_another_type_late_in_the_file_names_its_row(tmp_path: Path) -> None:
    # the first rows make visibility a number: the import named annotations[0] and 0.5 instead of the odd row
    ds = dataset(tmp_path / "ds")
    anns = [
        {"id": i + 1, "image_id": 100 + i, "category_id": 1, "instance_id": 0, "bbox": [1, 2, 3, 4],
         "attributes": {"seen": 0.5}}
        for i in range(30)
    ]  # fmt: skip
    anns[29]["attributes"] = {"seen": "high"}
    with pytest.raises(
        FormatError, match=r"annotations\[29\]: attribute 'seen' is 'high' \(text\); earlier 'person' rows give number"
    ):
        import_labels(ds, "coco-vid", write(tmp_path / "a.json", doc(anns)))
    assert ds.annotations() == []
