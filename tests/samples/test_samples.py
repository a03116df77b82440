"""FrameSamples over hand-built releases: every selection argument against values worked out by hand."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from vidlabel import FrameSamples
from vidlabel.dataset._release import Release
from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    SampleIndexTypeError,
    SampleOutOfRangeError,
    UnknownVideoError,
    VidlabelWarning,
)
from vidlabel.geometry import encode_rle, mask_bbox
from vidlabel.samples._samples import SampleIndex
from vidlabel.spec import KINDS, ORIGINS, STATUSES, AnnotationTable, VideoMetadata, View

# -- building releases by hand --------------------------------------------------------------------


def make_table(
    rows: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    video_ids: Sequence[str],
    view_ids: Sequence[str] = (),
) -> AnnotationTable:
    """An AnnotationTable from row dicts (fields as in ``Dataset.add_annotations`` plus ``video`` and ``id``)."""
    n = len(rows)
    counts: list[bytes] = []
    sizes = np.zeros((n, 2), np.int32)
    boxes = np.full((n, 4), np.nan)
    for i, r in enumerate(rows):
        if r.get("mask") is not None:
            rle = encode_rle(r["mask"])
            counts.append(rle["counts"])
            sizes[i] = rle["size"]
            boxes[i] = mask_bbox(r["mask"])
        else:
            counts.append(b"")
            if r.get("box") is not None:
                boxes[i] = r["box"]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(c) for c in counts], out=offsets[1:])
    return AnnotationTable(
        labels=tuple(labels),
        video_ids=tuple(video_ids),
        view_ids=tuple(view_ids),
        annotation_id=[r.get("id", i + 1) for i, r in enumerate(rows)],
        video=[list(video_ids).index(r["video"]) for r in rows],
        kind=[KINDS.index(r["kind"]) for r in rows],
        label=[list(labels).index(r["label"]) for r in rows],
        start_frame=[r["start_frame"] for r in rows],
        end_frame=[r.get("end_frame", r["start_frame"]) for r in rows],
        box=boxes,
        track_id=[r.get("track_id", -1) for r in rows],
        origin=[ORIGINS.index(r.get("origin", "human")) for r in rows],
        confidence=[r.get("confidence", np.nan) for r in rows],
        status=[STATUSES.index(r.get("status", "unreviewed")) for r in rows],
        view=[list(view_ids).index(r["view_id"]) if r.get("view_id") else -1 for r in rows],
        mask_offsets=offsets,
        mask_counts=np.frombuffer(b"".join(counts), np.uint8),
        mask_size=sizes,
    )


def make_release(
    rows: Sequence[Mapping[str, Any]],
    *,
    labels: Sequence[str],
    videos: Mapping[str, tuple[int, int, int]],  # video_id -> (frame_count, width, height)
    views: Sequence[View] = (),
    release_id: str | None = "r000000000001",
) -> Release:
    metas = {
        v: VideoMetadata(video_id=v, frame_count=n, fps={"num": 30, "den": 1}, width=w, height=h)
        for v, (n, w, h) in videos.items()
    }
    view_ids = [v.view_id for v in views]
    table = make_table(rows, labels, sorted(videos), view_ids)
    return Release(
        release_id=release_id,
        created="2026-01-01T00:00:00Z",
        labels=tuple(labels),
        views={v.view_id: v for v in views},
        videos=metas,
        table=table,
    )


class FakeDataset:
    """What FrameSamples asks of a Dataset: release(id) / snapshot() and a path."""

    def __init__(self, release: Release, live: Release | None = None) -> None:
        self._release = release
        self._live = live
        self.path = "/nowhere/ds"
        self.asked: list[Any] = []

    def release(self, release_id: str = "latest") -> Release:
        self.asked.append(release_id)
        return self._release

    def snapshot(self) -> Release:
        self.asked.append(None)
        assert self._live is not None
        return self._live


DEMO_LABELS = ("person", "car", "scene_change")


def demo_release(**kw: Any) -> Release:
    """The spec's train_demo, by hand."""
    return make_release(
        [
            {"video": "clip", "kind": "box", "label": "person", "start_frame": 10, "box": (20, 30, 80, 150),
             "track_id": 1, "origin": "model"},
            {"video": "clip", "kind": "box", "label": "car", "start_frame": 10, "box": (100, 60, 220, 140),
             "origin": "human"},
            {"video": "clip", "kind": "marker", "label": "scene_change", "start_frame": 8, "end_frame": 12,
             "origin": "human"},
        ],
        labels=DEMO_LABELS,
        videos={"clip": (300, 320, 240)},
        **kw,
    )  # fmt: skip


def fs(release: Release, **options: Any) -> FrameSamples:
    return FrameSamples.from_release(release, **options)


IMAGE = np.zeros((240, 320, 3), np.uint8)


# -- the demo ------------------------------------------------------------------------------------


def test_demo_selection_and_targets() -> None:
    ds = FakeDataset(demo_release())
    samples = FrameSamples(ds, release="r000000000001", kinds=("box",))
    assert ds.asked == ["r000000000001"]
    assert len(samples) == 1 and samples.index == [("clip", 10)]
    assert samples.class_names == ["person", "car", "scene_change"]
    s = samples.sample("clip", 10, IMAGE)
    assert s["boxes"].dtype == np.float32 and s["boxes"].tolist() == [[20, 30, 80, 150], [100, 60, 220, 140]]
    assert s["labels"].dtype == np.int64 and s["labels"].tolist() == [0, 1]
    assert s["track_ids"].tolist() == [1, -1] and s["annotation_ids"].tolist() == [1, 2]
    assert s["frame_labels"].dtype == np.float32 and s["frame_labels"].tolist() == [0.0, 0.0, 1.0]
    assert s["video_id"] == "clip" and s["view_id"] is None and s["frame_index"] == 10
    assert s["image"] is IMAGE and "masks" not in s


def test_release_none_reads_the_live_snapshot() -> None:
    live = demo_release(release_id=None)
    ds = FakeDataset(demo_release(), live=live)
    samples = FrameSamples(ds, release=None)
    assert ds.asked == [None] and samples.release_id is None
    assert FrameSamples(ds).release_id == "r000000000001" and ds.asked[-1] == "latest"


@pytest.mark.parametrize(
    ("box_format", "normalized", "expected"),
    [
        ("xyxy", False, [20, 30, 80, 150]),
        ("xywh", False, [20, 30, 60, 120]),
        ("cxcywh", False, [50, 90, 60, 120]),
        ("xyxy", True, [20 / 320, 30 / 240, 80 / 320, 150 / 240]),
        ("xywh", True, [20 / 320, 30 / 240, 60 / 320, 120 / 240]),
        # YOLO: centre (50, 90), size (60, 120) in a 320 x 240 frame
        ("cxcywh", True, [0.15625, 0.375, 0.1875, 0.5]),
    ],
)
def test_box_formats_of_a_known_box(box_format: str, normalized: bool, expected: list[float]) -> None:
    samples = fs(demo_release(), box_format=box_format, normalized=normalized)
    got = samples.sample("clip", 10, IMAGE)["boxes"][0]
    assert got.tolist() == np.asarray(expected, np.float32).tolist()
    assert samples.box_format == box_format


def test_label_offset_shifts_labels_not_frame_labels() -> None:
    s = fs(demo_release(), label_offset=1).sample("clip", 10, IMAGE)
    assert s["labels"].tolist() == [1, 2]
    assert s["frame_labels"].tolist() == [0.0, 0.0, 1.0]


def test_labels_reorders_classes_and_drops_others() -> None:
    samples = fs(demo_release(), labels=["car", "person"])
    assert samples.class_names == ["car", "person"]
    s = samples.sample("clip", 10, IMAGE)
    assert s["annotation_ids"].tolist() == [1, 2]  # annotation order kept
    assert s["labels"].tolist() == [1, 0]  # person is now 1, car 0
    assert s["frame_labels"].tolist() == [0.0, 0.0]  # scene_change is not a class any more
    only_car = fs(demo_release(), labels=["car"]).sample("clip", 10, IMAGE)
    assert only_car["annotation_ids"].tolist() == [2] and only_car["labels"].tolist() == [0]
    markers = fs(demo_release(), labels=["scene_change"], kinds=("marker",))
    assert markers.index == [("clip", f) for f in range(8, 13)]
    assert markers.class_names == ["scene_change"]
    assert all(t["frame_labels"].tolist() == [1.0] and t["boxes"].shape == (0, 4) for t in markers.targets())


# -- markers ---------------------------------------------------------------------------------------


def overlapping_markers() -> Release:
    return make_release(
        [
            {"video": "v", "kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 15},
            {"video": "v", "kind": "marker", "label": "foul", "start_frame": 10, "end_frame": 20},
            {"video": "v", "kind": "marker", "label": "goal", "start_frame": 18, "end_frame": 25},
            {"video": "v", "kind": "box", "label": "ball", "start_frame": 12, "box": (1, 2, 3, 4)},
            {"video": "v", "kind": "box", "label": "ball", "start_frame": 40, "box": (1, 2, 3, 4)},
        ],
        labels=("ball", "goal", "foul"),
        videos={"v": (50, 64, 48)},
    )


def test_frame_labels_under_overlapping_markers() -> None:
    samples = fs(overlapping_markers(), kinds=("box", "marker"))
    # frames 5..25 covered by markers, plus the box frames 12 and 40
    assert samples.index == [("v", f) for f in range(5, 26)] + [("v", 40)]
    expected = {7: [0, 1, 0], 12: [0, 1, 1], 16: [0, 0, 1], 19: [0, 1, 1], 22: [0, 1, 0], 40: [0, 0, 0]}
    by_frame = {t["frame_index"]: t for t in samples.targets()}
    for frame, want in expected.items():
        assert by_frame[frame]["frame_labels"].tolist() == want
        assert samples.sample("v", frame, np.zeros((48, 64, 3), np.uint8))["frame_labels"].tolist() == want
    # a frame outside the index, and outside every marker
    assert samples.sample("v", 30, np.zeros((48, 64, 3), np.uint8))["frame_labels"].tolist() == [0, 0, 0]
    # markers never become boxes
    assert by_frame[12]["boxes"].shape == (1, 4) and by_frame[7]["boxes"].shape == (0, 4)


def test_markers_fill_frame_labels_without_adding_frames() -> None:
    samples = fs(overlapping_markers())  # kinds=("box", "mask")
    assert samples.index == [("v", 12), ("v", 40)]
    assert [t["frame_labels"].tolist() for t in samples.targets()] == [[0, 1, 1], [0, 0, 0]]


# -- filters ---------------------------------------------------------------------------------------


def filter_release() -> Release:
    return make_release(
        [
            {"video": "a", "kind": "box", "label": "x", "start_frame": 1, "box": (0, 0, 5, 5), "origin": "model",
             "confidence": 0.3},
            {"video": "a", "kind": "box", "label": "x", "start_frame": 1, "box": (1, 1, 5, 5), "origin": "model",
             "confidence": 0.5},
            {"video": "a", "kind": "box", "label": "x", "start_frame": 2, "box": (2, 2, 5, 5), "origin": "model",
             "confidence": 0.9},
            {"video": "a", "kind": "box", "label": "x", "start_frame": 3, "box": (3, 3, 5, 5), "origin": "model"},
            {"video": "a", "kind": "box", "label": "x", "start_frame": 4, "box": (4, 4, 5, 5), "origin": "human"},
            {"video": "a", "kind": "marker", "label": "m", "start_frame": 0, "end_frame": 9, "origin": "model",
             "confidence": 0.2},
            {"video": "a", "kind": "box", "label": "x", "start_frame": 5, "box": (0, 0, 1, 1), "status": "rejected"},
        ],
        labels=("x", "m"),
        videos={"a": (10, 16, 16)},
    )  # fmt: skip


def test_origins() -> None:
    human = fs(filter_release(), origins=["human"])
    assert human.index == [("a", 4)]
    assert [t["annotation_ids"].tolist() for t in human.targets()] == [[5]]
    assert human.sample("a", 4, np.zeros((16, 16, 3), np.uint8))["frame_labels"].tolist() == [0, 0]  # model marker gone
    model = fs(filter_release(), origins=("model",))
    assert model.index == [("a", 1), ("a", 2), ("a", 3)]
    assert model.sample("a", 2, np.zeros((16, 16, 3), np.uint8))["frame_labels"].tolist() == [0, 1]
    both = fs(filter_release(), origins=["human", "model"])
    assert both.index == fs(filter_release()).index


def test_min_confidence_keeps_rows_without_confidence() -> None:
    samples = fs(filter_release(), min_confidence=0.5)
    # 0.3 dropped, 0.5 kept (not below), 0.9 kept, no confidence kept (rows 4 and 5), rejected never
    assert [t["annotation_ids"].tolist() for t in samples.targets()] == [[2], [3], [4], [5]]
    assert samples.index == [("a", 1), ("a", 2), ("a", 3), ("a", 4)]
    # the marker (confidence 0.2) is dropped too
    assert all(t["frame_labels"].tolist() == [0, 0] for t in samples.targets())
    everything = fs(filter_release(), min_confidence=0.0)
    assert [t["annotation_ids"].tolist() for t in everything.targets()] == [[1, 2], [3], [4], [5]]


def test_min_confidence_drops_model_rows_only() -> None:
    # The spec: "drop model rows below this confidence". A human row with a confidence below the minimum was
    # dropped too: a person's label lost from training without a word.
    rows = [
        {"video": "a", "kind": "box", "label": "x", "start_frame": 1, "box": (0, 0, 5, 5), "origin": "human",
         "confidence": 0.1},
        {"video": "a", "kind": "box", "label": "x", "start_frame": 1, "box": (1, 1, 5, 5), "origin": "model",
         "confidence": 0.1},
        {"video": "a", "kind": "marker", "label": "m", "start_frame": 0, "end_frame": 9, "origin": "human",
         "confidence": 0.2},
    ]  # fmt: skip
    samples = fs(make_release(rows, labels=("x", "m"), videos={"a": (10, 16, 16)}), min_confidence=0.5)
    assert samples.index == [("a", 1)]
    [target] = samples.targets()
    assert target["annotation_ids"].tolist() == [1] and target["frame_labels"].tolist() == [0, 1]


def two_videos() -> Release:
    rows = [{"video": "a", "kind": "box", "label": "x", "start_frame": f, "box": (0, 0, 2, 2)} for f in range(10, 15)]
    rows += [{"video": "b", "kind": "box", "label": "x", "start_frame": f, "box": (0, 0, 2, 2)} for f in (3, 4)]
    return make_release(rows, labels=("x",), videos={"a": (20, 8, 8), "b": (5, 8, 8), "c": (4, 8, 8)})


def test_stride_keeps_every_nth_of_each_videos_list() -> None:
    samples = fs(two_videos(), stride=2)
    # a's list a10..a14 keeps positions 0, 2, 4; b's list b3, b4 keeps position 0
    assert samples.index == [("a", 10), ("a", 12), ("a", 14), ("b", 3)]
    # a dropped frame still has its targets when asked for
    assert samples.sample("a", 11, np.zeros((8, 8, 3), np.uint8))["annotation_ids"].tolist() == [2]
    # each video keeps its first selected frame whatever the stride
    assert fs(two_videos(), stride=100).index == [("a", 10), ("b", 3)]


def test_stride_of_a_video_does_not_depend_on_other_videos() -> None:
    rows = [{"video": "b", "kind": "box", "label": "x", "start_frame": f, "box": (0, 0, 2, 2)} for f in (2, 4, 6, 8)]
    alone = fs(make_release(rows, labels=("x",), videos={"b": (10, 8, 8)}), stride=2).index
    # a video whose id sorts earlier, with an odd number of selected frames, must not shift b's phase
    rows_a = [{"video": "a", "kind": "box", "label": "x", "start_frame": f, "box": (0, 0, 2, 2)} for f in (0, 1, 2)]
    both = fs(make_release(rows_a + rows, labels=("x",), videos={"a": (5, 8, 8), "b": (10, 8, 8)}), stride=2).index
    assert alone == [("b", 2), ("b", 6)]
    assert [k for k in both if k[0] == "b"] == alone
    assert [k for k in both if k[0] == "a"] == [("a", 0), ("a", 2)]


def test_frames_all_and_videos() -> None:
    samples = fs(two_videos(), frames="all")
    assert samples.index == [("a", f) for f in range(20)] + [("b", f) for f in range(5)] + [("c", f) for f in range(4)]
    by = {(t["video_id"], t["frame_index"]): t["annotation_ids"].tolist() for t in samples.targets()}
    assert by[("a", 0)] == [] and by[("a", 12)] == [3] and by[("b", 4)] == [7] and by[("c", 3)] == []
    assert fs(two_videos(), frames="all", stride=7).index == [("a", 0), ("a", 7), ("a", 14), ("b", 0), ("c", 0)]
    only = fs(two_videos(), videos=["c", "b"], frames="all")
    assert only.video_ids == ("b", "c") and len(only) == 9
    assert fs(two_videos(), videos=["b"]).index == [("b", 3), ("b", 4)]
    assert fs(two_videos(), videos=["c"]).index == []


def test_regions_in_annotation_id_order_whatever_the_row_order() -> None:
    rel = make_release(
        [
            {"id": 1, "video": "v", "kind": "box", "label": "x", "start_frame": 5, "box": (0, 0, 1, 1)},
            {"id": 2, "video": "v", "kind": "box", "label": "x", "start_frame": 3, "box": (0, 0, 2, 2)},
            {"id": 3, "video": "v", "kind": "box", "label": "x", "start_frame": 5, "box": (0, 0, 3, 3)},
            {"id": 4, "video": "w", "kind": "box", "label": "x", "start_frame": 0, "box": (0, 0, 4, 4)},
            {"id": 5, "video": "v", "kind": "box", "label": "x", "start_frame": 5, "box": (0, 0, 5, 5)},
        ],
        labels=("x",),
        videos={"v": (10, 8, 8), "w": (10, 8, 8)},
    )
    samples = fs(rel)
    assert samples.index == [("v", 3), ("v", 5), ("w", 0)]
    assert [t["annotation_ids"].tolist() for t in samples.targets()] == [[2], [1, 3, 5], [4]]
    assert [t["boxes"][:, 2].tolist() for t in samples.targets()] == [[2], [1, 3, 5], [4]]


# -- views, masks ----------------------------------------------------------------------------------

VIEW = View("lower", crop=(40, 20, 240, 220), output_size=(100, 50))  # 200 x 200 crop -> 100 x 50: sx 1/2, sy 1/4


def view_release() -> Release:
    mask = np.zeros((240, 320), np.uint8)
    mask[60:100, 80:120] = 1
    return make_release(
        [
            {"video": "v", "kind": "box", "label": "x", "start_frame": 0, "box": (60, 40, 140, 120), "view_id": "lower"},
            {"video": "v", "kind": "box", "label": "x", "start_frame": 0, "box": (220, 200, 300, 240), "view_id": "lower"},
            {"video": "v", "kind": "box", "label": "x", "start_frame": 0, "box": (0, 0, 10, 10)},  # full frame
            {"video": "v", "kind": "box", "label": "x", "start_frame": 1, "box": (0, 0, 10, 10), "view_id": "other"},
            {"video": "v", "kind": "mask", "label": "x", "start_frame": 0, "mask": mask, "view_id": "lower"},
            {"video": "v", "kind": "marker", "label": "m", "start_frame": 0, "end_frame": 3, "view_id": "lower"},
            {"video": "v", "kind": "marker", "label": "m", "start_frame": 4, "end_frame": 5},
        ],
        labels=("x", "m"),
        videos={"v": (10, 320, 240)},
        views=(VIEW, View("other", crop=(0, 0, 160, 120))),
    )  # fmt: skip


def test_view_crops_and_resizes_boxes_and_keeps_its_annotations() -> None:
    samples = fs(view_release(), view_id="lower")
    assert samples.view == VIEW and samples.image_size("v") == (100, 50)
    assert samples.index == [("v", 0)]
    s = samples.sample("v", 0, np.zeros((50, 100, 3), np.uint8))
    assert s["annotation_ids"].tolist() == [1, 2, 5] and s["view_id"] == "lower"
    # (60, 40, 140, 120) - (40, 20) = (20, 20, 100, 100); x / 2, y / 4 -> (10, 5, 50, 25)
    # (220, 200, 300, 240) - (40, 20) = (180, 180, 260, 220) -> (90, 45, 130, 55), clipped to 100 x 50
    # the mask's box (80, 60, 120, 100) -> (40, 40, 80, 80) -> (20, 10, 40, 20)
    assert s["boxes"].tolist() == [[10, 5, 50, 25], [90, 45, 100, 50], [20, 10, 40, 20]]
    assert s["frame_labels"].tolist() == [0, 1]
    assert samples.sample("v", 4, np.zeros((50, 100, 3), np.uint8))["frame_labels"].tolist() == [0, 0]
    normalized = fs(view_release(), view_id="lower", normalized=True, box_format="cxcywh")
    yolo = np.float32([0.3, 0.3, 0.4, 0.4]).tolist()  # (30, 15, 40, 20) / (100, 50)
    assert next(normalized.targets())["boxes"][0].tolist() == yolo
    assert (
        normalized.sample("v", 0, np.zeros((50, 100, 3), np.uint8))["boxes"][0].tolist()
        == np.float32([0.3, 0.3, 0.4, 0.4]).tolist()
    )


def test_no_view_means_full_frames_and_all_annotations() -> None:
    samples = fs(view_release())
    assert samples.index == [("v", 0), ("v", 1)]
    t = list(samples.targets())
    assert t[0]["annotation_ids"].tolist() == [1, 2, 3, 5] and t[1]["annotation_ids"].tolist() == [4]
    assert t[0]["boxes"][0].tolist() == [60, 40, 140, 120]
    assert t[0]["frame_labels"].tolist() == [0, 1]


def test_view_image_cropped_from_a_full_frame() -> None:
    ys, xs = np.mgrid[0:240, 0:320]
    full = np.stack([xs % 256, ys, (xs + ys) % 256], axis=2).astype(np.uint8)
    crop_only = make_release(
        [], labels=("x",), videos={"v": (3, 320, 240)}, views=(View("c", crop=(40, 20, 240, 220)),)
    )
    s = fs(crop_only, view_id="c", frames="all").sample("v", 0, full)
    assert np.array_equal(s["image"], full[20:220, 40:240])
    flat = np.full((240, 320, 3), 77, np.uint8)
    s = fs(view_release(), view_id="lower").sample("v", 0, flat)
    assert s["image"].shape == (50, 100, 3) and (s["image"] == 77).all()


def test_view_that_does_not_fit_a_video_is_refused() -> None:
    rel = make_release(
        [], labels=("x",), videos={"big": (3, 320, 240), "small": (3, 160, 120)},
        views=(View("c", crop=(40, 20, 240, 220)),),
    )  # fmt: skip
    with pytest.raises(
        OptionError, match=r"view 'c': crop \(40, 20, 240, 220\) does not fit inside video 'small' \(160x120\)"
    ):
        fs(rel, view_id="c", frames="all")
    assert fs(rel, view_id="c", frames="all", videos=["big"]).image_size("big") == (200, 200)
    assert fs(rel, frames="all").image_size("small") == (160, 120)


def test_masks_in_a_view_and_box_rows_get_empty_masks() -> None:
    samples = fs(view_release(), view_id="lower", with_masks=True)
    s = samples.sample("v", 0, np.zeros((50, 100, 3), np.uint8))
    masks = s["masks"]
    assert masks.shape == (3, 50, 100) and masks.dtype == np.uint8
    assert not masks[0].any() and not masks[1].any()  # box rows
    # full-frame rows 60:100, cols 80:120; crop -> rows 40:80, cols 40:80; nearest sampling of
    # source row 4i + 2 and column 2j + 1 -> rows 10..19, cols 20..39
    expected = np.zeros((50, 100), np.uint8)
    expected[10:20, 20:40] = 1
    assert np.array_equal(masks[2], expected)
    t = next(samples.targets())
    assert np.array_equal(t["masks"], masks)


def test_box_and_mask_rows_of_one_object_are_two_targets() -> None:
    mask = np.zeros((48, 64), np.uint8)
    mask[4:8, 10:20] = 1
    rel = make_release(
        [
            {"video": "v", "kind": "box", "label": "x", "start_frame": 2, "box": (10, 4, 20, 8), "track_id": 7},
            {"video": "v", "kind": "mask", "label": "x", "start_frame": 2, "mask": mask, "track_id": 7},
        ],
        labels=("x",),
        videos={"v": (5, 64, 48)},
    )
    both = fs(rel, with_masks=True).sample("v", 2, np.zeros((48, 64, 3), np.uint8))
    assert both["boxes"].tolist() == [[10, 4, 20, 8], [10, 4, 20, 8]]
    assert both["track_ids"].tolist() == [7, 7]
    assert both["masks"][0].sum() == 0 and np.array_equal(both["masks"][1], mask)
    assert fs(rel, kinds=("mask",)).sample("v", 2, np.zeros((48, 64, 3), np.uint8))["annotation_ids"].tolist() == [2]
    assert fs(rel, kinds=("box",)).sample("v", 2, np.zeros((48, 64, 3), np.uint8))["annotation_ids"].tolist() == [1]
    assert "masks" not in fs(rel).sample("v", 2, np.zeros((48, 64, 3), np.uint8))


# -- targets, describe, index, pickling -------------------------------------------------------------


def test_targets_equal_samples_without_image() -> None:
    for options in ({}, {"kinds": ("box", "marker"), "box_format": "cxcywh", "normalized": True, "label_offset": 2}):
        samples = fs(overlapping_markers(), **options)
        for (video_id, frame), t in zip(samples.index, samples.targets(), strict=True):
            s = samples.sample(video_id, frame, np.zeros((48, 64, 3), np.uint8))
            assert "image" not in t and set(t) == set(s) - {"image"}
            for key, value in t.items():
                if isinstance(value, np.ndarray):
                    assert value.dtype == s[key].dtype and np.array_equal(value, s[key]), key
                    assert not value.flags.writeable
                else:
                    assert value == s[key]


def test_describe() -> None:
    d = fs(overlapping_markers(), kinds=("box", "marker"), label_offset=1).describe()
    assert d["release"] == "r000000000001" and d["class_names"] == ["ball", "goal", "foul"]
    assert d["samples"] == 22 and d["videos"] == {"v": 22} and d["regions"] == 2
    assert d["regions_per_class"] == {"ball": 2, "goal": 0, "foul": 0}
    # goal on 5..15 and 18..25 (19 frames), foul on 10..20 (11 frames)
    assert d["marker_frames_per_class"] == {"ball": 0, "goal": 19, "foul": 11}
    assert d["samples_without_regions"] == 20
    assert d["options"]["kinds"] == ["box", "marker"] and d["options"]["label_offset"] == 1
    import json

    json.dumps(d)


def test_sample_index_is_list_like() -> None:
    samples = fs(two_videos())
    index = samples.index
    assert isinstance(index, SampleIndex) and len(index) == 7
    assert index[0] == ("a", 10) and index[-1] == ("b", 4) and index[5:] == [("b", 3), ("b", 4)]
    assert repr(index) == repr(list(index))
    assert index.frames.tolist() == [10, 11, 12, 13, 14, 3, 4] and index.video_codes.tolist() == [0] * 5 + [1, 1]
    with pytest.raises(IndexError, match=r"sample position 7 out of range \[0, 7\)"):
        index[7]
    for position in (1.5, np.float64(2.0), "1", True, np.bool_(False)):  # never rounded or parsed into a pair
        with pytest.raises(SampleIndexTypeError, match=r"sample position must be an integer in \[0, 7\)"):
            index[position]
    with pytest.raises(SampleOutOfRangeError, match=r"sample position -8 out of range \[0, 7\)"):
        index[-8]
    assert index[np.int64(1)] == ("a", 11)
    assert repr(fs(two_videos(), frames="all").index) == repr(list(fs(two_videos(), frames="all").index))  # 29
    big = make_release([], labels=("x",), videos={"a": (50, 8, 8)})
    assert (
        repr(fs(big, frames="all").index)
        == "[('a', 0), ('a', 1), ('a', 2), ..., ('a', 47), ('a', 48), ('a', 49)]  # 50 pairs"
    )


def test_pickle_round_trip() -> None:
    samples = fs(overlapping_markers(), kinds=("box", "marker"), with_masks=True)
    again = pickle.loads(pickle.dumps(samples))
    assert again.index == samples.index and again.class_names == samples.class_names
    a = [t["frame_labels"].tolist() for t in samples.targets()]
    assert a == [t["frame_labels"].tolist() for t in again.targets()]


def test_rows_outside_the_video_are_reported() -> None:
    rel = make_release(
        [
            {"video": "v", "kind": "box", "label": "x", "start_frame": 1, "box": (0, 0, 1, 1)},
            {"video": "v", "kind": "box", "label": "x", "start_frame": 9, "box": (0, 0, 1, 1)},
            {"video": "w", "kind": "box", "label": "x", "start_frame": -1, "box": (0, 0, 1, 1)},
            {"video": "w", "kind": "box", "label": "x", "start_frame": 0, "box": (0, 0, 1, 1)},
        ],
        labels=("x",),
        videos={"v": (5, 8, 8), "w": (5, 8, 8)},
    )
    with pytest.warns(
        VidlabelWarning,
        match=r"^left out 2 annotation rows lying outside the frames of their video \(e.g. annotation 2 of video 'v' "
        r"on frame 9, outside its frames 0..4\)$",
    ):
        samples = fs(rel)
    assert samples.index == [("v", 1), ("w", 0)] and samples.describe()["rows_outside_video"] == 2
    assert [t["annotation_ids"].tolist() for t in samples.targets()] == [[1], [4]]


def test_plan_reads_positions_and_pairs() -> None:
    samples = fs(two_videos())
    plan = samples.plan_reads([0, 0, 6, 2], seed=0)
    assert sorted(plan.iter_requests(0)) == [("a", 10), ("a", 10), ("a", 12), ("b", 4)]
    plan = samples.plan_reads(np.array([1, 5]), seed=0)
    assert sorted(plan.iter_requests(0)) == [("a", 11), ("b", 3)]
    plan = samples.plan_reads([("c", 2), ("a", 0)], seed=0)  # frames nobody annotated are allowed
    assert sorted(plan.iter_requests(0)) == [("a", 0), ("c", 2)]
    assert samples.plan_reads([], seed=0).summary()["samples"] == 0


def test_iter_plan_refuses_what_is_no_plan_of_these_samples_before_reading() -> None:
    train, val = fs(two_videos(), videos=["a"]), fs(two_videos(), videos=["b", "c"])
    plan = train.plan_reads([0, 3], seed=0)
    # was a generator that failed only when the epoch reached video 'a' (after reading every chunk before it)
    with pytest.raises(
        UnknownVideoError,
        match=r"the plan reads video 'a' \(1 of its 1 videos\), which these samples do not select "
        r"\(selected: b, c\): build the plan with these samples' plan_reads",
    ):
        val.iter_plan(plan)
    for wrong in ([0, 3], np.array([0, 3])):  # was AttributeError: 'list' object has no attribute 'shard'
        with pytest.raises(OptionError, match=r"iter_plan takes a ReadPlan, got (list|ndarray) \(.*plan_reads"):
            train.iter_plan(wrong)  # type: ignore[arg-type]


def test_plan_reads_refuses_requests_it_would_misread() -> None:
    samples = fs(two_videos())
    assert len(samples) == 7
    # (video code, frame) rows are no positions: flattened, they were read as 4 arbitrary samples
    with pytest.raises(
        OptionError, match=r"1-D array of positions in samples.index \(\[0, 7\)\), got .* shape \(2, 2\)"
    ):
        samples.plan_reads(np.array([[0, 3], [1, 4]]), seed=0)
    for one in (5, np.int64(5)):  # a single position was a raw TypeError ('int' object is not iterable)
        with pytest.raises(
            OptionError, match=r"requests must be a sequence of positions .* \(one position: pass \[5\]\)"
        ):
            samples.plan_reads(one, seed=0)  # type: ignore[arg-type]
    for huge in ([2**64], np.array([2**63 + 5], dtype=np.uint64)):  # were OverflowError / a negative position
        with pytest.raises(OptionError, match=r"sample position \d{19,} out of range \[0, 7\)"):
            samples.plan_reads(huge, seed=0)
    assert sorted(samples.plan_reads(np.array([1, 5], dtype=np.uint8), seed=0).iter_requests(0)) == [
        ("a", 11),
        ("b", 3),
    ]


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        (
            {"labels": ["person", "dog"]},
            OptionError,
            r"unknown label 'dog' in labels=\['person', 'dog'\]; the release's labels: person, car",
        ),
        ({"labels": []}, OptionError, r"labels=\[\] selects nothing"),
        ({"labels": ["car", "car"]}, OptionError, r"label 'car' appears twice in labels=\['car', 'car'\]"),
        (
            {"videos": ["clip", "nope"]},
            UnknownVideoError,
            r"unknown video 'nope' in videos=\['clip', 'nope'\]; release r000000000001 holds: clip",
        ),
        ({"view_id": "lower"}, OptionError, r"unknown view 'lower'; the release's views: \(none\)"),
        (
            {"kinds": ("box", "polygon")},
            OptionError,
            r"unknown kind 'polygon' in kinds=\['box', 'polygon'\]; allowed: box, mask, marker",
        ),
        ({"kinds": ()}, OptionError, "kinds must name at least one of box, mask, marker"),
        ({"origins": ["robot"]}, OptionError, r"unknown origin 'robot' in origins=\['robot'\]; allowed: human, model"),
        ({"min_confidence": 1.5}, OptionError, r"min_confidence must lie in \[0, 1\], got 1.5"),
        ({"min_confidence": "high"}, OptionError, "min_confidence must be a number"),
        ({"frames": "some"}, OptionError, "unknown frames mode 'some'; allowed: annotated, all"),
        ({"stride": 0}, OptionError, "stride must be an integer in \\[1, 2\\*\\*63\\), got 0"),
        ({"stride": 2**70}, OptionError, r"stride must be an integer in \[1, 2\*\*63\), got 1180591620717411303424"),
        ({"stride": 1.5}, OptionError, "stride must be an integer in \\[1, 2\\*\\*63\\), got 1.5"),
        ({"box_format": "yolo"}, OptionError, "unknown box_format 'yolo'; allowed: xyxy, xywh, cxcywh"),
        ({"label_offset": 0.5}, OptionError, "label_offset must be an integer, got 0.5"),
        ({"view_id": 3}, OptionError, "view_id must be a string or None"),
    ],
)
def test_option_errors(options: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        FrameSamples(FakeDataset(demo_release()), **options)


def test_release_argument_error() -> None:
    with pytest.raises(OptionError, match="release must be a release id, 'latest' or None, got 3"):
        FrameSamples(FakeDataset(demo_release()), release=3)  # type: ignore[arg-type]


def test_sample_errors() -> None:
    samples = fs(demo_release())
    with pytest.raises(UnknownVideoError, match="video 'other' is not in these samples; selected: clip"):
        samples.sample("other", 0, IMAGE)
    with pytest.raises(FrameOutOfRangeError, match=r"frame 300 out of range \[0, 300\) in video 'clip'"):
        samples.sample("clip", 300, IMAGE)
    with pytest.raises(OptionError, match=r"image must be \(H, W, 3\) uint8 RGB, got shape \(240, 320\)"):
        samples.sample("clip", 10, IMAGE[..., 0])
    with pytest.raises(OptionError, match=r"sample position 5 out of range \[0, 1\)"):
        samples.plan_reads([5], seed=0)
    with pytest.raises(UnknownVideoError, match="video 'x' is not in these samples"):
        samples.plan_reads([("x", 1)], seed=0)
    with pytest.raises(FrameOutOfRangeError, match=r"frame -2 out of range \[0, 300\)"):
        samples.plan_reads([("clip", -2)], seed=0)
    with pytest.raises(UnknownVideoError, match="video 'x' is not in these samples"):
        samples.reader("x")
