"""CVAT for video 1.1: task frames (step), keyframe interpolation, outside, persistence, masks, tags, bad XML."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.formats_util import assert_same_rows, dataset, meta, random_tracks
from vidlabel import Dataset
from vidlabel.errors import AnnotationError, FormatError, VidlabelWarning
from vidlabel.formats import export_labels, import_labels
from vidlabel.geometry import decode_rle


def cvat(body: str, *, start: int = 0, stop: int = 29, step: str = "", width: int = 64) -> str:
    return f"""<?xml version="1.0" encoding="utf-8"?>
<annotations>
  <version>1.1</version>
  <meta><task><name>cam1</name><start_frame>{start}</start_frame><stop_frame>{stop}</stop_frame>
    <frame_filter>{step}</frame_filter><original_size><width>{width}</width><height>48</height></original_size></task></meta>
{body}
</annotations>
"""


def box(
    frame: int, x0: float, y0: float, x1: float, y1: float, *, outside: int = 0, keyframe: int = 1, extra: str = ""
) -> str:
    return (
        f'<box frame="{frame}" outside="{outside}" occluded="0" keyframe="{keyframe}" xtl="{x0}" ytl="{y0}" '
        f'xbr="{x1}" ybr="{y1}" z_order="0"{extra}/>'
    )


def mask_el(frame: int, rle: str, width: int, height: int) -> str:
    return (
        f'<mask frame="{frame}" keyframe="1" outside="0" occluded="0" rle="{rle}" left="0" top="0" '
        f'width="{width}" height="{height}"/>'
    )


def test_xml_syntax_error_names_line_and_column_once(tmp_path: Path) -> None:
    f = tmp_path / "annotations.xml"
    f.write_text(cvat("<track id='0' label='car'><box frame='0'</track>"))
    with pytest.raises(FormatError) as info:
        import_labels(dataset(tmp_path / "ds"), "cvat-video", f)
    assert (
        str(info.value) == f"{f} line 6: not well-formed XML (not well-formed (invalid token), column 41)"
    )  # 1-based, as editors count


def load(tmp_path: Path, xml: str, **kw):
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "annotations.xml"
    f.write_text(xml)
    rep = import_labels(ds, "cvat-video", f, **kw)
    return ds, rep


def boxes_by_frame(ds) -> dict[int, tuple]:
    return {r["start_frame"]: r["box"] for r in ds.annotations() if r["kind"] == "box"}


def test_interpolation_outside_and_persistence(tmp_path: Path) -> None:
    body = (
        '<track id="9" label="car">'
        + box(0, 0, 0, 10, 10)
        + box(2, 99, 99, 99.5, 99.5, keyframe=0)
        + box(4, 4, 8, 14, 18)
        + box(6, 8, 8, 18, 18, outside=1)
        + box(10, 1, 1, 2, 2)
        + "</track>"
    )
    ds, _ = load(tmp_path, cvat(body, stop=12))
    got = boxes_by_frame(ds)
    assert sorted(got) == [0, 1, 2, 3, 4, 5, 10, 11, 12]  # hidden 6..9; persists to stop_frame 12
    assert got[2] == (2.0, 4.0, 12.0, 14.0)  # the non-keyframe shape at 2 is ignored: halfway 0 -> 4
    assert got[5] == (6.0, 8.0, 16.0, 18.0)  # halfway towards the outside keyframe at 6
    assert got[12] == (1.0, 1.0, 2.0, 2.0)
    assert {r["track_id"] for r in ds.annotations()} == {0}


def test_step_two_task_frames(tmp_path: Path) -> None:
    # CVAT writes a shape's frame as the video frame (start_frame + k * step, its abs_frame_id): keyframes 3 and 7
    body = '<track id="0" label="person">' + box(3, 0, 0, 10, 10) + box(7, 4, 0, 14, 10) + "</track>"
    ds, rep = load(tmp_path, cvat(body, start=3, stop=11, step="step=2"))
    got = boxes_by_frame(ds)
    # the task's frames are video frames 3, 5, ..., 11; rows only on those
    assert sorted(got) == [3, 5, 7, 9, 11]
    assert got[5] == (2.0, 0.0, 12.0, 10.0) and got[11] == (4.0, 0.0, 14.0, 10.0)
    assert any("step 2" in n for n in rep.notes)


def test_frames_are_video_frames_not_task_positions(tmp_path: Path) -> None:
    # a task over video frames 10..29: CVAT's XML says frame="10" for the task's first frame
    body = '<track id="0" label="person">' + box(10, 0, 0, 10, 10) + box(14, 4, 0, 14, 10, outside=1) + "</track>"
    ds, _ = load(tmp_path, cvat(body, start=10, stop=29))
    got = boxes_by_frame(ds)
    assert sorted(got) == [10, 11, 12, 13]  # was read as positions: frames 20..23, ten frames late
    assert got[12] == (2.0, 0.0, 12.0, 10.0)


@pytest.mark.parametrize(("frame", "step"), [(2, ""), (30, ""), (6, "step=2")])
def test_frame_outside_the_task_frames_refused(tmp_path: Path, frame: int, step: str) -> None:
    body = '<track id="0" label="person">' + box(frame, 0, 0, 10, 10) + "</track>"
    want = rf"<box frame=\"{frame}\">: frame {frame} is not a task frame: the task's frames are video frames 3\.\.29"
    with pytest.raises(FormatError, match=want):
        load(tmp_path, cvat(body, start=3, stop=29, step=step))


def test_masks_grouped_with_box_track_and_tags_to_markers(tmp_path: Path) -> None:
    # a 3x2 tight box at left=5, top=7: rows "0 1 1" / "1 1 0" -> runs 1 (zero), 4 (one), 1 (zero)
    mask = '<mask frame="1" keyframe="1" outside="0" occluded="1" rle="1, 4, 1" left="5" top="7" width="3" height="2"/>'
    closing = (
        '<mask frame="2" keyframe="1" outside="1" occluded="0" rle="1, 4, 1" left="5" top="7" width="3" height="2"/>'
    )
    body = (
        '<track id="0" label="car" group_id="3">' + box(0, 0, 0, 10, 10) + box(1, 0, 0, 10, 10, outside=1) + "</track>"
        '<track id="1" label="car" group_id="3">' + mask + closing + "</track>"
        '<track id="2" label="car">' + mask + "</track>"
        '<image id="2" name="f2"><tag label="goal"/></image><image id="3" name="f3"><tag label="goal"/></image>'
        '<image id="5" name="f5"><tag label="goal"/><polygon points="1,1;2,2;3,1" label="car"/></image>'
        '<track id="3" label="car"><polyline frame="0" keyframe="1" outside="0" points="1,1;2,2;3,1"/></track>'
    )
    with pytest.warns(
        VidlabelWarning,
        match=(
            r"<track id=\"1\" label=\"car\"><mask frame=\"1\"> and <track id=\"2\" label=\"car\"><mask frame=\"1\"> of "
            r".*annotations\.xml are the same annotation"
        ),
    ):
        ds, rep = load(tmp_path, cvat(body, stop=5))  # the mask element of frame 1 in two tracks: said at once
    rows = ds.annotations()
    masks = sorted((r for r in rows if r["kind"] == "mask"), key=lambda r: (r["track_id"] is None, r["start_frame"]))
    truth = np.zeros((48, 64), np.uint8)
    truth[7, 6:8] = 1
    truth[8, 5:7] = 1
    assert [(m["start_frame"], m["track_id"]) for m in masks] == [
        (1, 0),
        (1, None),
        (2, None),
        (3, None),
        (4, None),
        (5, None),
    ]
    assert all(np.array_equal(decode_rle(m["mask"]), truth) for m in masks)
    markers = sorted((r["start_frame"], r["end_frame"]) for r in rows if r["kind"] == "marker")
    assert markers == [(2, 3), (5, 5)]
    assert rep.skipped == {
        "unsupported shape type: polygon (in <image>)": 1,
        "unsupported shape type: polyline (track)": 1,
    }
    # the occluded flag of a mask keyframe is the attribute of the rows it is carried to
    assert [m["attributes"] for m in masks] == [{"occluded": True}] * 6


def polygon(frame: int, points: str, *, outside: int = 0, keyframe: int = 1) -> str:
    return f'<polygon frame="{frame}" outside="{outside}" occluded="0" keyframe="{keyframe}" points="{points}" z_order="0"/>'


def rect(x0: int, y0: int, x1: int, y1: int) -> str:
    """A rectangle as CVAT polygon points; with integer corners it covers pixels [y0, y1) x [x0, x1)."""
    return f"{x0},{y0};{x1},{y0};{x1},{y1};{x0},{y1}"


def rect_mask(x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    truth = np.zeros((48, 64), np.uint8)
    truth[y0:y1, x0:x1] = 1
    return truth


def masks_by_frame(ds) -> dict[int, np.ndarray]:
    rows = [r for r in ds.annotations() if r["kind"] == "mask"]
    assert len({r["start_frame"] for r in rows}) == len(rows)
    return {r["start_frame"]: decode_rle(r["mask"]) for r in rows}


def test_polygon_track_every_written_shape_outside_hides(tmp_path: Path) -> None:
    from pycocotools import mask as mask_utils

    tri = [20.5, 4.0, 40.0, 30.25, 6.0, 22.0]
    body = (
        '<track id="7" label="car">'
        + polygon(0, rect(2, 3, 10, 9))
        + polygon(1, rect(4, 3, 12, 9), keyframe=0)  # CVAT's own interpolated shape: taken as written
        + polygon(2, rect(4, 3, 12, 9), outside=1)
        + polygon(3, ";".join(f"{x},{y}" for x, y in zip(tri[::2], tri[1::2])))
        + polygon(4, rect(0, 40, 64, 48), keyframe=0)
        + "</track>"
    )
    ds, rep = load(tmp_path, cvat(body, stop=8))
    got = masks_by_frame(ds)
    assert sorted(got) == [0, 1, 3, 4]  # hidden on 2 (outside); nothing after the last written shape (4)
    assert np.array_equal(got[0], rect_mask(2, 3, 10, 9)) and int(got[0].sum()) == 8 * 6
    assert np.array_equal(got[1], rect_mask(4, 3, 12, 9))
    assert np.array_equal(got[4], rect_mask(0, 40, 64, 48))
    assert np.array_equal(got[3], mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects([tri], 48, 64))))
    assert {r["track_id"] for r in ds.annotations()} == {0}
    assert rep.videos["cam1"].counts == {"mask": 4} and not rep.skipped


def test_polygon_step_two_task_frames(tmp_path: Path) -> None:
    body = (
        '<track id="0" label="person">'
        + "".join(polygon(3 + 2 * k, rect(k, 0, k + 5, 5)) for k in range(5))
        + "</track>"
    )
    ds, _ = load(tmp_path, cvat(body, start=3, stop=11, step="step=2"))
    got = masks_by_frame(ds)
    assert sorted(got) == [3, 5, 7, 9, 11]  # the shapes' frames are the video frames 3 + 2k
    for k in range(5):
        assert np.array_equal(got[3 + 2 * k], rect_mask(k, 0, k + 5, 5))


def test_polygon_too_few_points_and_zero_area_counted(tmp_path: Path) -> None:
    body = (
        '<track id="0" label="car">'
        + polygon(0, "1,1;9,9")
        + polygon(1, rect(1, 1, 9, 9))
        + polygon(2, "0,0;5,0;10,0")
        + polygon(3, "")
        + "</track>"
    )
    ds, rep = load(tmp_path, cvat(body))
    got = masks_by_frame(ds)
    assert sorted(got) == [1] and np.array_equal(got[1], rect_mask(1, 1, 9, 9))
    assert rep.skipped == {"polygon with < 3 points": 2, "polygon of zero area": 1}
    assert rep.videos["cam1"].counts == {"mask": 1}


def test_polygon_tracks_join_the_box_track_of_their_group(tmp_path: Path) -> None:
    body = (
        '<track id="0" label="car">' + polygon(0, rect(0, 0, 4, 4)) + "</track>"  # ungrouped: track 0
        '<track id="1" label="car" group_id="5">' + polygon(0, rect(5, 5, 9, 9)) + "</track>"  # joins track 1
        '<track id="2" label="car" group_id="5">' + box(0, 5, 5, 9, 9) + "</track>"  # box track: 1
        '<track id="3" label="car">' + box(0, 20, 20, 30, 30) + "</track>"  # box track: 2
        '<track id="4" label="car" group_id="9">' + polygon(0, rect(10, 10, 14, 14)) + "</track>"  # no box: 3
        '<track id="5" label="car">' + box(0, 0, 0, 4, 4) + polygon(1, rect(0, 0, 4, 4)) + "</track>"
    )
    ds, rep = load(tmp_path, cvat(body, stop=0))
    rows = ds.annotations()
    got = sorted((r["kind"], r["track_id"], decode_rle(r["mask"]).sum() if r["mask"] else None) for r in rows)
    assert got == [("box", 1, None), ("box", 2, None), ("mask", 0, 16), ("mask", 1, 16), ("mask", 3, 16)]
    grouped = [r for r in rows if r["kind"] == "mask" and r["track_id"] == 1]
    assert np.array_equal(decode_rle(grouped[0]["mask"]), rect_mask(5, 5, 9, 9))
    assert rep.skipped == {"track mixing box and polygon shapes": 1}


def test_box_attributes_and_occluded_are_kept_on_every_frame_of_their_keyframe(tmp_path: Path) -> None:
    body = (
        '<track id="0" label="car">'
        + box(0, 0, 0, 10, 10).replace("/>", '><attribute name="color">red</attribute></box>')
        + box(2, 0, 0, 10, 10).replace('occluded="0"', 'occluded="1"')
        + "</track>"
    )
    ds, rep = load(tmp_path, cvat(body))
    got = [(r["start_frame"], r["attributes"]) for r in ds.annotations()][:4]
    assert got == [
        (0, {"occluded": False, "color": "red"}), (1, {"occluded": False, "color": "red"}),
        (2, {"occluded": True}), (3, {"occluded": True}),
    ]  # fmt: skip
    assert rep.attributes_added == {"car": {"occluded": "bool", "color": "text"}} and rep.notes == []


def test_tag_attributes_are_the_markers_and_a_change_cuts_the_run(tmp_path: Path) -> None:
    body = (
        '<image id="0" name="f0"><tag label="goal"><attribute name="team">home</attribute></tag></image>'
        '<image id="1" name="f1"><tag label="goal"><attribute name="team">home</attribute></tag></image>'
        '<image id="2" name="f2"><tag label="goal"><attribute name="team">home</attribute>'
        '<attribute name="kind">penalty</attribute></tag></image>'
        '<track id="0" label="car">'
        + box(0, 0, 0, 10, 10).replace("/>", '><attribute name="team">away</attribute></box>')
        + "</track>"
    )
    ds, rep = load(tmp_path, cvat(body))
    markers = [(r["start_frame"], r["end_frame"], r["attributes"]) for r in ds.annotations() if r["kind"] == "marker"]
    assert markers == [(0, 1, {"team": "home"}), (2, 2, {"kind": "penalty", "team": "home"})]
    assert rep.attributes_added["goal"] == {"kind": "text", "team": "text"}
    assert not rep.skipped and not [n for n in rep.notes if "not stored" in n]


def test_entity_bomb_refused(tmp_path: Path) -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
        "<annotations>&lol2;</annotations>"
    )
    with pytest.raises(FormatError, match=r"annotations.xml: refused: the XML declares entities or a DTD"):
        load(tmp_path, bomb)


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        (cvat("<track id='0' label='car'><box frame='0'</track>"), r"annotations.xml line 6: not well-formed XML"),
        (
            cvat("", stop=30),
            r"<meta><task>: task frames start_frame=0 .. stop_frame=30 do not lie in video 'cam1': frames 0..29",
        ),
        (
            cvat('<track id="4" label="car">' + box(31, 0, 0, 1, 1) + "</track>"),
            r'<track id="4" label="car"><box frame="31">: frame 31 is not a task frame: the task.s frames are video frames 0\.\.29 ',
        ),
        (
            cvat('<track id="4" label="bus">' + box(1, 0, 0, 1, 1) + "</track>"),
            r"label\(s\) 'bus' are not in the dataset",
        ),
        (cvat("", width=640), r"<original_size>: width 640 disagrees with video 'cam1', whose width is 64"),
        (
            cvat('<track id="4" label="car">' + box(1, 0, "x", 1, 1) + "</track>"),
            r'<box frame="1">: attribute ytl=.x.; expected a number',
        ),
        (
            cvat('<track id="4" label="car">' + polygon(1, "1,1;2,x;3,1") + "</track>"),
            r"""<track id="4" label="car"><polygon frame="1">: points entry '2,x'; expected 'x,y' numbers""",
        ),
        (
            cvat('<track id="4" label="car">' + polygon(1, "1,1;2,2,2;3,1") + "</track>"),
            r"<polygon frame=\"1\">: points entry '2,2,2'; expected 'x,y' numbers",
        ),
        (
            cvat('<track id="4" label="car">' + polygon(1, "1,1;2,inf;3,1") + "</track>"),
            r"<polygon frame=\"1\">: points entry '2,inf'; expected finite numbers",
        ),
        (
            cvat('<track id="4" label="car"><polygon frame="1" outside="0" keyframe="1"/></track>'),
            r"<polygon frame=\"1\">: points is missing; expected 'x1,y1;x2,y2;...'",
        ),
        (
            cvat(
                '<track id="4" label="car">' + polygon(1, rect(0, 0, 4, 4)) + polygon(1, rect(0, 0, 5, 5)) + "</track>"
            ),
            r'<polygon frame="1">: a second polygon on frame 1 of the track \(first: <track id="4" label="car"><polygon',
        ),
        (
            cvat('<track id="4" label="car">' + polygon(30, rect(0, 0, 4, 4)) + "</track>"),
            r'<polygon frame="30">: frame 30 is not a task frame: the task.s frames are video frames 0\.\.29 ',
        ),
        (
            cvat('<track id="4" label="car">' + mask_el(1, "9", -3, -3) + "</track>"),
            r'<mask frame="1">: mask box width=-3 height=-3; width and height must be positive \(pixels\)$',
        ),
        (
            cvat('<track id="4" label="car">' + mask_el(1, "0", 3, 0) + "</track>"),
            r'<mask frame="1">: mask box width=3 height=0; width and height must be positive',
        ),
        (
            cvat('<track id="4" label="car">' + box(1, 0, 0, 1, 1, outside="yes") + "</track>"),  # type: ignore[arg-type]
            r"""<box frame="1">: attribute outside='yes'; allowed: '0', '1' \(CVAT writes flags as 0/1\)$""",
        ),
        (
            cvat('<track id="4" label="car">' + box(1, 0, 0, 1, 1, keyframe="true") + "</track>"),  # type: ignore[arg-type]
            r"""<box frame="1">: attribute keyframe='true'; allowed: '0', '1'""",
        ),
        (
            cvat(
                '<track id="4" label="car">' + box(1, 0, 0, 1, 1).replace('occluded="0"', 'occluded="2"') + "</track>"
            ),
            r"""<box frame="1">: attribute occluded='2'; allowed: '0', '1'""",
        ),
        (
            cvat('<track id="4" label="car">' + polygon(1, rect(0, 0, 4, 4), outside="no") + "</track>"),  # type: ignore[arg-type]
            r"""<polygon frame="1">: attribute outside='no'; allowed: '0', '1'""",
        ),
        (
            cvat(
                '<track id="4" label="car">'
                + mask_el(1, "0, 6", 3, 2).replace('outside="0"', 'outside="Y"')
                + "</track>"
            ),
            r"""<mask frame="1">: attribute outside='Y'; allowed: '0', '1'""",
        ),
        # raw ValueError / OverflowError before
        (
            cvat('<track id="4" label="car">' + box(1, 0, 0, 1, 1, extra=' rotation="abc"') + "</track>"),
            r"""<box frame="1">: attribute rotation='abc'; expected a number""",
        ),
        (
            cvat("", width="wide"),  # type: ignore[arg-type]
            r"""<meta><task><original_size>: width='wide'; expected an integer""",
        ),
        (
            cvat('<track id="4" label="car">' + mask_el(1, "99999999999999999999999, 6", 3, 2) + "</track>"),
            r"""<mask frame="1">: rle is not comma-separated integers""",
        ),
    ],
)
def test_bad_files(tmp_path: Path, xml: str, match: str) -> None:
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "annotations.xml"
    f.write_text(xml)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "cvat-video", f)
    assert ds.annotations() == [] and ds.labels() == ["person", "car", "goal"]


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=random_tracks(masks=True, markers=True))
def test_round_trip(tmp_path_factory, rows) -> None:
    tmp = tmp_path_factory.mktemp("cvat")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20)])
    ds.add_annotations(rows, "cam1")
    ds.build()
    export_labels(ds, "cvat-video", tmp / "out.xml")
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20)])
    import_labels(ds2, "cvat-video", tmp / "out.xml")
    assert_same_rows(ds2.annotations(), ds.annotations())


def test_two_box_keyframes_on_one_frame_are_refused_naming_both(tmp_path: Path) -> None:
    """As two polygons on one frame of a track are: taking the later box dropped the earlier without a word."""
    body = '<track id="9" label="car">' + box(0, 0, 0, 10, 10) + box(3, 4, 8, 14, 18) + box(3, 1, 1, 2, 2) + "</track>"
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "annotations.xml"
    f.write_text(cvat(body))
    with pytest.raises(FormatError, match=r'<box frame="3">: a second keyframe of the track on video frame 3$'):
        import_labels(ds, "cvat-video", f)
    assert ds.annotations() == []


def test_model_markers_round_trip_and_touching_markers_counted(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    markers = [
        {"kind": "marker", "label": "goal", "start_frame": 0, "end_frame": 4},
        {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 9},  # touches the first: one run of tags
        {"kind": "marker", "label": "goal", "start_frame": 2, "end_frame": 3, "origin": "model", "confidence": 0.7},
        {"kind": "marker", "label": "person", "start_frame": 20, "end_frame": 21, "origin": "model"},
    ]
    ds.add_annotations(markers, "cam1")
    ds.build()
    report = export_labels(ds, "cvat-video", tmp_path / "a.xml")
    assert report.counts["marker"] == 4
    assert report.not_written == {
        "marker touching or overlapping another of its label (CVAT tags are per frame: read back as one marker)": 1,
        "confidence of model rows (CVAT holds none; the rows are written)": 1,
    }
    new = dataset(tmp_path / "new")
    import_labels(new, "cvat-video", tmp_path / "a.xml", video_id="cam1")
    got = sorted((r["label"], r["start_frame"], r["end_frame"], r["origin"]) for r in new.annotations())
    assert got == [("goal", 0, 9, "human"), ("goal", 2, 3, "model"), ("person", 20, 21, "model")]


@pytest.mark.parametrize(
    ("rle", "message"),
    [
        (f"{2**63 - 1}, {2**63 - 1}, 102", rf"rle covers {2 * (2**63 - 1) + 102} pixels; the mask's box 10x10 has 100"),
        ("-5, 105", r"rle has a negative run \(-5\); runs are pixel counts >= 0"),
    ],
)
def test_mask_runs_that_wrap_or_are_negative_are_refused(tmp_path: Path, rle: str, message: str) -> None:
    # before: runs summed in int64 wrapped around to the box's 100 pixels, the check passed and decoding the
    # runs crashed the Python process (a segmentation fault in NumPy's repeat); a negative run was refused as
    # "rle covers 100 pixels; the mask's box 10x10 has 100"
    xml = cvat(f"<track id='0' label='car'>{mask_el(0, rle, 10, 10)}</track>")
    with pytest.raises(FormatError, match=r'<track id="0" label="car"><mask frame="0">: ' + message):
        load(tmp_path, xml)


def test_the_task_size_ends_the_task_where_no_stop_frame_is_given(tmp_path: Path) -> None:
    # <size> counts the task's frames: a visible box persists to the task's end, frame 9 here, not to the
    # video's last frame 29 (without <size> and <stop_frame> it went on to 29, rows nobody drew)
    xml = cvat("<track id='0' label='car'>" + box(0, 1, 1, 5, 5) + "</track>").replace(
        "<stop_frame>29</stop_frame>", "<size>10</size>"
    )
    ds, _ = load(tmp_path, xml)
    assert sorted(r["start_frame"] for r in ds.annotations()) == list(range(10))


@pytest.mark.parametrize(
    ("size", "match"),
    [
        (
            "12",
            r"<meta><task><size>: size 12 disagrees with start_frame=0 \.\. stop_frame=29 \(step 1\): 30 task frames",
        ),
        ("0", r"<meta><task><size>: size 0; expected >= 1"),
        ("ten", r"<meta><task>: size='ten'; expected an integer"),
    ],
)
def test_a_task_size_that_disagrees_with_its_frames_is_refused(tmp_path: Path, size: str, match: str) -> None:
    xml = cvat("<track id='0' label='car'>" + box(0, 1, 1, 5, 5) + "</track>").replace(
        "<stop_frame>29</stop_frame>", f"<stop_frame>29</stop_frame><size>{size}</size>"
    )
    ds = dataset(tmp_path / "ds")
    f = tmp_path / "annotations.xml"
    f.write_text(xml)
    with pytest.raises(FormatError, match=match):
        import_labels(ds, "cvat-video", f)
    assert ds.annotations() == []


def test_mask_and_marker_attributes_round_trip_through_cvat(tmp_path: Path) -> None:
    from vidlabel.geometry import encode_rle

    ds = dataset(tmp_path / "ds")
    ds.set_attribute_schema("person", {"occluded": "bool", "parked": "bool", "size": "number", "pose": "text"})
    ds.set_attribute_schema("goal", {"team": "text", "occluded": "bool"})
    disc = np.zeros((48, 64), np.uint8)
    disc[10:20, 5:25] = 1
    rows = [
        {"kind": "mask", "label": "person", "start_frame": 3, "mask": encode_rle(disc), "track_id": 2,
         "attributes": {"occluded": True, "parked": False, "size": 2.5, "pose": "sitting"}},
        {"kind": "mask", "label": "person", "start_frame": 4, "mask": encode_rle(disc), "track_id": 2,
         "attributes": {"occluded": False, "pose": "standing"}},
        {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 7, "attributes": {"team": "home"}},
        {"kind": "marker", "label": "goal", "start_frame": 10, "end_frame": 10,
         "attributes": {"team": "away", "occluded": True}},
    ]  # fmt: skip
    ds.add_annotations(rows, "cam1")
    ds.build()
    report = export_labels(ds, "cvat-video", tmp_path / "out")
    assert not report.not_written
    ds2 = dataset(tmp_path / "ds2")
    rep = import_labels(ds2, "cvat-video", report.paths[0], video_id="cam1")
    got = sorted((r["kind"], r["start_frame"], r["end_frame"], r["attributes"]) for r in ds2.annotations())
    want = sorted((r["kind"], r["start_frame"], r.get("end_frame", r["start_frame"]), r["attributes"]) for r in rows)
    assert got == want
    assert rep.attributes_added["goal"] == {"occluded": "bool", "team": "text"}


def test_polygon_shapes_occluded_flag_and_attributes_are_their_rows(tmp_path: Path) -> None:
    first = polygon(0, rect(2, 3, 10, 9)).replace('occluded="0"', 'occluded="1"')
    second = polygon(1, rect(4, 3, 12, 9)).replace("/>", '><attribute name="parked">true</attribute></polygon>')
    labels = (
        "<labels><label><name>car</name><attributes><attribute><name>parked</name>"
        "<input_type>checkbox</input_type></attribute></attributes></label></labels>"
    )
    xml = cvat('<track id="7" label="car">' + first + second + "</track>", stop=8)
    ds, rep = load(tmp_path, xml.replace("</task></meta>", labels + "</task></meta>"))
    got = sorted((r["start_frame"], r["attributes"]) for r in ds.annotations())
    assert got == [(0, {"occluded": True}), (1, {"occluded": False, "parked": True})]
    assert rep.attributes_added == {"car": {"occluded": "bool", "parked": "bool"}}
    assert not [n for n in rep.notes if "not stored" in n]


@pytest.mark.parametrize("kind", ["number", "checkbox"])
def test_a_huge_attribute_value_is_echoed_cut_short(tmp_path: Path, kind: str) -> None:
    digits = "1" * 100_000
    labels = (
        "<labels><label><name>car</name><attributes><attribute><name>visibility</name>"
        f"<input_type>{kind}</input_type></attribute></attributes></label></labels>"
    )
    shape = box(0, 0, 0, 10, 10).replace("/>", f'><attribute name="visibility">{digits}</attribute></box>')
    xml = cvat('<track id="0" label="car">' + shape + "</track>", stop=8)
    with pytest.raises(FormatError, match=r"attribute 'visibility' is '1111111111.*\.\.\.; expected") as info:
        load(tmp_path, xml.replace("</task></meta>", labels + "</task></meta>"))
    assert len(str(info.value)) < 400


def test_an_attribute_name_set_cannot_read_refuses_the_import(tmp_path: Path) -> None:
    shape = box(0, 0, 0, 10, 10).replace("/>", '><attribute name="lane=left">yes</attribute></box>')
    with pytest.raises(AnnotationError, match=r"attribute name of label 'car' is 'lane=left', which holds '='"):
        load(tmp_path, cvat('<track id="0" label="car">' + shape + "</track>", stop=8))
    ds = Dataset.open(tmp_path / "ds")
    assert ds.annotations() == [] and ds.attribute_schema() == {}
