"""Every check of add_annotations: the error names row, field, value and what is allowed; nothing is written."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from vidlabel import Dataset, VideoMetadata
from vidlabel.errors import AnnotationError, UnknownVideoError
from vidlabel.geometry import decode_rle, rle_counts

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

W, H, N = 64, 48, 100
GOOD = {"kind": "box", "label": "person", "start_frame": 5, "box": (1, 2, 11, 22)}


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    d = Dataset.create(tmp_path / "ds")
    d.add_video(VideoMetadata(video_id="clip", frame_count=N, fps={"num": 25, "den": 1}, width=W, height=H))
    d.add_labels(["person", "car", "goal"])
    d.add_view("left", crop=(0, 0, 32, 48))
    d.add_annotations([{**GOOD, "track_id": 7}], "clip")  # stored before every refused batch
    return d


def state(ds: Dataset) -> list[dict[str, Any]]:
    return ds.annotations()


def refused(ds: Dataset, rows: list[dict[str, Any]], match: str, *, clip: bool = False) -> AnnotationError:
    """Add ``rows`` (the bad one last, after two good ones); check the error and that nothing changed."""
    before = state(ds)
    batch = [dict(GOOD), dict(GOOD, start_frame=6), *rows]
    with pytest.raises(AnnotationError, match=match) as info:
        ds.add_annotations(batch, "clip", clip=clip)
    err = info.value
    assert getattr(err, "row", None) == 2, str(err)
    assert str(err).startswith("row 2 (0-based), field ")
    assert "nothing was written" in str(err)
    assert state(ds) == before
    # The next id is the one it would have been: the refused batch consumed nothing.
    row = dict(GOOD, box=(1, 2, 11, 12 + len(before)))  # a row not stored yet (one stored twice warns)
    assert ds.add_annotations([row], "clip") == [before[-1]["annotation_id"] + 1]
    return err


M = np.zeros((H, W), np.uint8)
M[3:9, 4:10] = 1


CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "unknown label",
        {**GOOD, "label": "prson"},
        r"field 'label'.*unknown label 'prson'; known: person, car, goal \(add it with add_labels / `vidlabel add-labels`\)",
    ),
    ("missing label", {"kind": "box", "start_frame": 1, "box": (1, 2, 3, 4)}, r"field 'label'.*missing; known:"),
    ("unknown kind", {**GOOD, "kind": "polygon"}, r"field 'kind'.*unknown kind 'polygon'; allowed: box, mask, marker"),
    ("missing kind", {"label": "car", "start_frame": 1}, r"field 'kind'.*missing; allowed: box, mask, marker"),
    ("unknown view", {**GOOD, "view_id": "right"}, r"field 'view_id'.*unknown view 'right'; known: left"),
    ("frame negative", {**GOOD, "start_frame": -1}, r"field 'start_frame'.*frame -1 out of range \[0, 100\)"),
    ("frame too big", {**GOOD, "start_frame": N}, r"field 'start_frame'.*frame 100 out of range \[0, 100\)"),
    ("frame not int", {**GOOD, "start_frame": 1.5}, r"field 'start_frame'.*1\.5 is not an integer frame number"),
    ("frame string", {**GOOD, "start_frame": "3"}, r"field 'start_frame'.*'3' is not an integer frame number"),
    ("frame missing", {"kind": "box", "label": "car", "box": (1, 2, 3, 4)}, r"field 'start_frame'.*missing"),
    (
        "end before start",
        {"kind": "marker", "label": "goal", "start_frame": 9, "end_frame": 4},
        r"field 'end_frame'.*end_frame 4 < start_frame 9; allowed: end_frame >= start_frame",
    ),
    (
        "end out of range",
        {"kind": "marker", "label": "goal", "start_frame": 9, "end_frame": N},
        r"field 'end_frame'.*frame 100 out of range \[0, 100\).*inclusive",
    ),
    (
        "box spans frames",
        {**GOOD, "end_frame": 7},
        r"field 'end_frame'.*end_frame 7 != start_frame 5: a box row covers one frame",
    ),
    ("empty box", {**GOOD, "box": (5, 2, 5, 22)}, r"field 'box'.*is empty or inverted; allowed: x0 < x1 and y0 < y1"),
    ("inverted box", {**GOOD, "box": (10, 20, 1, 2)}, r"field 'box'.*\(10, 20, 1, 2\) is empty or inverted"),
    ("nan box", {**GOOD, "box": (1, math.nan, 3, 4)}, r"field 'box'.*holds NaN or infinity"),
    ("inf box", {**GOOD, "box": (1, 2, math.inf, 4)}, r"field 'box'.*holds NaN or infinity"),
    ("box of 3", {**GOOD, "box": (1, 2, 3)}, r"field 'box'.*\(1, 2, 3\) is not 4 numbers"),
    ("box text", {**GOOD, "box": "1,2,3,4"}, r"field 'box'.*'1,2,3,4' is not 4 numbers"),
    ("box of strings", {**GOOD, "box": ["1", "2", "3", "4"]}, r"field 'box'.*\['1', '2', '3', '4'\] is not 4 numbers"),
    ("box huge", {**GOOD, "box": (1, 2, 10**400, 4)}, r"field 'box'.*is not 4 numbers"),
    ("box missing", {"kind": "box", "label": "car", "start_frame": 1}, r"field 'box'.*missing; a box row needs"),
    (
        "box outside",
        {**GOOD, "box": (50, 2, 70, 22)},
        r"field 'box'.*leaves the frame; allowed: 0 <= x0 < x1 <= 64, 0 <= y0 < y1 <= 48 \(pass clip=True",
    ),
    (
        "mask wrong shape",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": np.ones((H, W + 1))},
        r"field 'mask'.*mask shape \(48, 65\) does not fit; allowed: \(H, W\) = \(48, 64\)",
    ),
    (
        "mask wrong shape for a view",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": np.ones((48, 31)), "view_id": "left"},
        r"field 'mask'.*allowed: \(H, W\) = \(48, 64\) or the view's crop size \(48, 32\)",
    ),
    (
        "mask rle wrong size",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 60], "counts": [2880]}},
        r"field 'mask'.*mask size 48x60 \(H x W\) does not fit",
    ),
    (
        "mask rle bad counts",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": "~~~"}},
        r"field 'mask'.*not valid COCO RLE",
    ),
    (
        "mask rle wrong total",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": [10, 5]}},
        r"field 'mask'.*cover 15 pixels, but its size 48x64 has 3072",
    ),
    (
        "mask rle float counts",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": [0.0, 3072.0]}},
        r"field 'mask'.*not valid COCO RLE \(uncompressed counts must be a flat list of integers, got \[0\.0, 3072\.0\]",
    ),
    (
        "mask rle string counts in a list",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": ["0", "3072"]}},
        r"field 'mask'.*uncompressed counts must be a flat list of integers, got \['0', '3072'\]",
    ),
    (
        "mask rle nested counts",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": [[0], [3072]]}},
        r"field 'mask'.*uncompressed counts must be a flat list of integers, got \[\[0\], \[3072\]\]",
    ),
    (
        "mask rle bool counts",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [48, 64], "counts": [False, 3072]}},
        r"field 'mask'.*uncompressed counts must be integers, not true/false",
    ),
    (
        "mask rle float size",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": {"size": [47.5, 64], "counts": [0, 3040]}},
        r"field 'mask'.*mask RLE size must be \[height, width\] as two integers, got \[47\.5, 64\]",
    ),
    (
        "box empty in float32",
        {**GOOD, "box": (10, 10, 10.0000001, 20)},
        r"field 'box'.*is empty or inverted; allowed: x0 < x1 and y0 < y1 \(xyxy corners, compared as float32",
    ),
    (
        "mask empty",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": np.zeros((H, W))},
        r"field 'mask'.*mask is empty",
    ),
    ("mask missing", {"kind": "mask", "label": "car", "start_frame": 1}, r"field 'mask'.*missing; a mask row needs"),
    (
        "mask box disagrees",
        {"kind": "mask", "label": "car", "start_frame": 1, "mask": M, "box": (0, 0, 10, 10)},
        r"field 'box'.*is not the mask's bbox \(4\.0, 3\.0, 10\.0, 9\.0\)",
    ),
    ("confidence > 1", {**GOOD, "confidence": 1.5}, r"field 'confidence'.*1\.5 is not a number in \[0, 1\]"),
    ("confidence < 0", {**GOOD, "confidence": -0.1}, r"field 'confidence'.*-0\.1 is not a number in \[0, 1\]"),
    ("confidence nan", {**GOOD, "confidence": math.nan}, r"field 'confidence'.*nan is not a number in \[0, 1\]"),
    ("confidence text", {**GOOD, "confidence": "high"}, r"field 'confidence'.*'high' is not a number in \[0, 1\]"),
    ("confidence huge", {**GOOD, "confidence": 10**400}, r"field 'confidence'.*is not a number in \[0, 1\]"),
    ("confidence bool", {**GOOD, "confidence": True}, r"field 'confidence'.*True is not a number in \[0, 1\]"),
    (
        "marker with box",
        {"kind": "marker", "label": "goal", "start_frame": 1, "box": (1, 2, 3, 4)},
        r"field 'box'.*a marker row does not take box; allowed:",
    ),
    (
        "marker with track",
        {"kind": "marker", "label": "goal", "start_frame": 1, "track_id": 3},
        r"field 'track_id'.*a marker row does not take track_id",
    ),
    ("box with mask", {**GOOD, "mask": M}, r"field 'mask'.*a box row does not take mask; allowed:"),
    ("unknown field", {**GOOD, "colour": "red"}, r"field 'colour'.*unknown field\(s\) \['colour'\]; allowed:"),
    ("annotation id", {**GOOD, "annotation_id": 4}, r"unknown field\(s\) \['annotation_id'\] \(annotation ids are"),
    ("unknown status", {**GOOD, "status": "done"}, r"field 'status'.*'done'; allowed: unreviewed, approved, rejected"),
    ("unknown origin", {**GOOD, "origin": "robot"}, r"field 'origin'.*unknown origin 'robot'; allowed: human, model"),
    ("negative track", {**GOOD, "track_id": -2}, r"field 'track_id'.*-2 is not an integer >= 0"),
    # before: "18446744073709551616 is not an integer >= 0", of an integer
    (
        "track past int64",
        {**GOOD, "track_id": 2**64},
        r"field 'track_id'.*18446744073709551616 does not fit in 64 bits; "
        r"allowed: integers in \[0, 2\*\*63\) or None",
    ),
    (
        "frame past int64",
        {**GOOD, "start_frame": 2**63},
        r"field 'start_frame'.*9223372036854775808 does not fit in 64 "
        r"bits; allowed: integers in \[0, ",
    ),
    (
        "track relabelled vs stored",
        {**GOOD, "label": "car", "track_id": 7},
        r"field 'track_id'.*track 7 has label 'car' here but 'person' in rows already stored for video 'clip'",
    ),
    ("other video", {**GOOD, "video_id": "other"}, r"field 'video_id'.*'other' differs from the batch's video 'clip'"),
]


@pytest.mark.parametrize(("row", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused(ds: Dataset, row: dict[str, Any], match: str) -> None:
    refused(ds, [row], match)


def test_track_with_two_labels_within_the_batch(ds: Dataset) -> None:
    before = state(ds)
    rows = [dict(GOOD, track_id=3), dict(GOOD, start_frame=6), dict(GOOD, label="car", track_id=3)]
    with pytest.raises(
        AnnotationError, match=r"row 2 \(0-based\), field 'track_id'.*track 3 has label 'car' here but 'person'"
    ):
        ds.add_annotations(rows, "clip")
    assert state(ds) == before


def test_row_not_a_dict(ds: Dataset) -> None:
    with pytest.raises(
        AnnotationError, match=r"^row 1 \(0-based\), video 'clip': a row must be a dict of fields, got list"
    ):
        ds.add_annotations([GOOD, ["box"]], "clip")  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (GOOD, r"rows must be a list of dicts \(one per annotation\), got dict \(wrap a single row in a list"),
        (None, r"rows must be a list of dicts \(one per annotation\), got NoneType"),
        ("box", r"rows must be a list of dicts \(one per annotation\), got str"),
        (3, r"rows must be a list of dicts \(one per annotation\), got int"),
    ],
)
def test_rows_not_a_list(ds: Dataset, rows: Any, match: str) -> None:
    before = state(ds)
    with pytest.raises(AnnotationError, match=match):
        ds.add_annotations(rows, "clip")
    assert state(ds) == before


def test_unknown_video(ds: Dataset) -> None:
    before = state(ds)
    with pytest.raises(UnknownVideoError, match=r"unknown video 'nope'.*known: clip"):
        ds.add_annotations([GOOD], "nope")
    assert state(ds) == before


def test_marker_without_end_frame_covers_one_frame(ds: Dataset) -> None:
    # the annotation file's table (docs/reference/annotation-file.md): end_frame is optional; a marker without it is a one-frame marker.
    (aid,) = ds.add_annotations([{"kind": "marker", "label": "goal", "start_frame": 4}], "clip")
    row = next(r for r in ds.annotations() if r["annotation_id"] == aid)
    assert (row["start_frame"], row["end_frame"]) == (4, 4)


def test_single_row_batch_says_so(ds: Dataset) -> None:
    with pytest.raises(
        AnnotationError, match=r"^row 0 \(0-based\), field 'label'.*-- the batch \(1 row\) was refused"
    ) as info:
        ds.add_annotations([dict(GOOD, label="x")], "clip")
    assert (info.value.row, info.value.field) == (0, "label")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("field", "match"),
    [
        ("start_frame", r"^row 1 \(0-based\), field 'start_frame'.*True is not an integer frame number"),
        ("end_frame", r"^row 1 \(0-based\), field 'end_frame'.*True is not an integer"),
        ("track_id", r"^row 1 \(0-based\), field 'track_id'.*True is not an integer >= 0"),
    ],
)
def test_a_boolean_beside_integers_is_refused_not_taken_as_1(ds: Dataset, field: str, match: str) -> None:
    # JSON true among integers: NumPy would make one int array of them (True -> 1) on the fast path
    before = state(ds)
    box = dict(GOOD, track_id=3)
    first = {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 9} if field == "end_frame" else box
    with pytest.raises(AnnotationError, match=match):
        ds.add_annotations([first, dict(first, **{field: True})], "clip")
    assert state(ds) == before


@pytest.mark.parametrize(
    "tracks",
    [
        [2**53 + 1, 1.0],  # before: NumPy made the batch float64, and 2**53 + 1 was stored as 2**53, without a word
        [2**62, 1.0],  # before: refused, 'is not an integer >= 0'
        [np.int64(2**63 - 1), 4],  # before: refused, 'is not an integer >= 0'
        [2**63 - 1, 2**62 + 3],
    ],
)
def test_every_track_id_in_int64_is_stored_exactly_whatever_its_neighbours(ds: Dataset, tracks: list[Any]) -> None:
    ids = ds.add_annotations([dict(GOOD, start_frame=i, track_id=t) for i, t in enumerate(tracks)], "clip")
    stored = {r["annotation_id"]: r["track_id"] for r in state(ds)}
    assert [stored[i] for i in ids] == [int(t) for t in tracks]


def test_first_bad_row_is_named_and_others_counted(ds: Dataset) -> None:
    rows = [GOOD, dict(GOOD, box=(9, 9, 1, 1)), dict(GOOD, label="x"), dict(GOOD, start_frame=-3), GOOD]
    with pytest.raises(
        AnnotationError,
        match=r"^row 1 \(0-based\), field 'box'.*inverted.*3 of 5 rows have problems \(this message shows the first\)",
    ):
        ds.add_annotations(rows, "clip")


def test_clip_option(ds: Dataset) -> None:
    ids = ds.add_annotations([dict(GOOD, box=(-4, -4, 10, 100)), dict(GOOD, box=(60, 40, 80, 90))], "clip", clip=True)
    rows = {r["annotation_id"]: r for r in ds.annotations()}
    assert rows[ids[0]]["box"] == (0.0, 0.0, 10.0, 48.0)
    assert rows[ids[1]]["box"] == (60.0, 40.0, 64.0, 48.0)
    refused(ds, [dict(GOOD, box=(70, 2, 80, 22))], r"field 'box'.*lies entirely outside the 64x48 frame", clip=True)


def test_track_checks_count_rows_of_any_status(ds: Dataset) -> None:
    (i,) = ds.add_annotations([dict(GOOD, label="car", track_id=9)], "clip")
    ds.set_status([i], "rejected")
    refused(ds, [dict(GOOD, track_id=9)], r"track 9 has label 'person' here but 'car' in rows already stored")


def test_view_crop_outside_the_video(tmp_path: Path) -> None:
    d = Dataset.create(tmp_path / "ds")
    d.add_view("big", crop=(0, 0, 40, 40))  # before the video: add_view refuses it afterwards
    d.add_video(VideoMetadata(video_id="small", frame_count=10, fps=25, width=20, height=20))
    d.add_labels(["a"])
    with pytest.raises(AnnotationError, match=r"crop \(0, 0, 40, 40\) does not fit inside video 'small' \(20x20\)"):
        d.add_view("big2", crop=(0, 0, 40, 40))
    with pytest.raises(AnnotationError, match=r"field 'view_id'.*view 'big' crops \(0, 0, 40, 40\), outside the 20x20"):
        d.add_annotations(
            [{"kind": "box", "label": "a", "start_frame": 0, "box": (1, 1, 5, 5), "view_id": "big"}], "small"
        )
    assert d.annotations() == []


@settings(max_examples=25, deadline=None)
@given(
    h=st.integers(1, 12),
    w=st.integers(1, 12),
    data=st.data(),
)
def test_rle_counts_inverts_pycocotools(h: int, w: int, data: st.DataObject) -> None:
    bits = data.draw(st.lists(st.booleans(), min_size=h * w, max_size=h * w))
    m = np.asfortranarray(np.array(bits, np.uint8).reshape(h, w))
    rle = mask_utils.encode(m)
    runs = rle_counts(rle["counts"])  # geometry's decoder, the one add_annotations and decode_rle both use
    assert runs.sum() == h * w
    values = np.repeat(np.arange(runs.size) % 2, runs)
    assert np.array_equal(values.reshape(w, h).T, m)
    assert compressed(runs.tolist()) == rle["counts"]  # the test's writer writes what pycocotools writes
    assert np.array_equal(decode_rle({"size": [h, w], "counts": rle["counts"]}), m)


def compressed(runs: list[int]) -> bytes:
    """COCO compressed RLE of run lengths, written as pycocotools' ``rleToString`` writes it (any Python int)."""
    out = bytearray()
    for i, run in enumerate(runs):
        x = run - runs[i - 2] if i > 2 else run
        more = True
        while more:
            c, x = x & 0x1F, x >> 5
            more = x != -1 if c & 0x10 else x != 0
            out.append((c | 0x20 if more else c) + 48)
    return bytes(out)


@pytest.mark.parametrize(
    "runs",
    [
        [5, 2**41, 3067],  # one run past 2**40 (nine characters)
        [0, 1, 2**39 - 1, 1, 2**40 - 2, 1, 3 * 2**39 - 3],  # changes of eight characters each that add up past it
    ],
)
def test_runs_past_2_40_are_refused_naming_the_row(ds: Dataset, runs: list[int]) -> None:
    # before: the loop decoded runs of any length, and a run past 2**40 (no frame holds one) was said only as
    # counts covering another number of pixels; geometry's decoder says it, in add_annotations and decode_rle alike
    counts = compressed(runs)
    mask = {"size": [H, W], "counts": counts.decode()}
    refused(
        ds,
        [{"kind": "mask", "label": "car", "start_frame": 1, "mask": mask}],
        r"field 'mask'.*mask RLE counts are not valid COCO RLE \(compressed RLE string holds a run longer than "
        r"2\*\*40\)",
    )
    with pytest.raises(ValueError, match=r"compressed RLE string holds a run longer than 2\*\*40"):
        decode_rle({"size": [H, W], "counts": counts})


def test_box_corners_past_float32_are_outside_the_frame_without_a_warning(ds: Dataset) -> None:
    # before: NumPy's "RuntimeWarning: overflow encountered in cast" on every such batch, and (6.4e307, 0, 1.28e308,
    # 12), both float32 infinity, was refused as "empty or inverted" rather than as outside the frame
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        refused(ds, [dict(GOOD, box=(6.4e307, 0, 1.28e308, 12))], r"field 'box'.*leaves the frame; allowed: 0 <= x0")
        refused(ds, [dict(GOOD, box=(6.4e307, 0, 1.28e308, 12))], r"field 'box'.*lies entirely outside the 64x48 "
                "frame", clip=True)  # fmt: skip
        (i,) = ds.add_annotations([dict(GOOD, box=(2, 3, 1e39, 12))], "clip", clip=True)
    assert {r["annotation_id"]: r["box"] for r in ds.annotations()}[i] == (2.0, 3.0, 64.0, 12.0)
