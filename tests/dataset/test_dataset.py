"""Dataset: create/open, videos, labels, views, annotations, review, queries, snapshots, pickling."""

from __future__ import annotations

import json
import pickle
import re
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pycocotools import mask as mask_utils

from vidlabel import Dataset, FrameIndex, VideoMetadata, View
from vidlabel.dataset._chunks import concat, decode_chunk, encode_chunk, take
from vidlabel.dataset._dataset import DB_NAME, SCHEMA_VERSION
from vidlabel.errors import (
    AnnotationError,
    DatasetError,
    DatasetExistsError,
    DatasetNotFoundError,
    SchemaVersionError,
    UnknownVideoError,
    VidlabelWarning,
)
from vidlabel.spec import KINDS, ORIGINS, STATUSES

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")


def meta(video_id: str = "clip", frame_count: int = 100, width: int = 64, height: int = 48, **kw) -> VideoMetadata:
    return VideoMetadata(
        video_id=video_id,
        frame_count=frame_count,
        fps={"num": 30, "den": 1},
        width=width,
        height=height,
        sources=[{"uri": f"/videos/{video_id}.mp4"}],
        **kw,
    )


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    d = Dataset.create(tmp_path / "ds")
    d.add_video(meta())
    d.add_labels(["person", "car", "goal"])
    return d


def test_spec_train_demo_construction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The spec's train_demo construction, unchanged (run in a fresh folder).
    monkeypatch.chdir(tmp_path)

    ds = Dataset.create("train_demo")
    ds.add_video(VideoMetadata(video_id="clip", frame_count=300, fps={"num": 30, "den": 1}, width=320, height=240,
                               sources=[{"uri": "/path/to/clip.mp4"}]))  # fmt: skip
    ds.add_labels(["person", "car", "scene_change"])
    ds.add_annotations([
        {"kind": "box", "label": "person", "start_frame": 10, "box": (20, 30, 80, 150), "track_id": 1, "origin": "model"},
        {"kind": "box", "label": "car", "start_frame": 10, "box": (100, 60, 220, 140), "origin": "human"},
        {"kind": "marker", "label": "scene_change", "start_frame": 8, "end_frame": 12, "origin": "human"},
    ], "clip")  # fmt: skip
    release, _ = ds.build()

    assert release.release_id is not None and len(release.release_id) == 13
    t = release.table
    assert list(release.labels) == ["person", "car", "scene_change"]
    assert t.annotation_id.tolist() == [1, 2, 3]
    assert [KINDS[k] for k in t.kind] == ["box", "box", "marker"]
    assert t.label.tolist() == [0, 1, 2]
    assert t.start_frame.tolist() == [10, 10, 8] and t.end_frame.tolist() == [10, 10, 12]
    assert t.box[:2].tolist() == [[20, 30, 80, 150], [100, 60, 220, 140]]
    assert np.isnan(t.box[2]).all()
    assert t.track_id.tolist() == [1, -1, -1]
    assert [ORIGINS[o] for o in t.origin] == ["model", "human", "human"]
    assert np.isnan(t.confidence).all()
    assert [STATUSES[s] for s in t.status] == ["unreviewed"] * 3
    assert t.view.tolist() == [-1, -1, -1]
    assert t.video_ids == ("clip",) and t.video.tolist() == [0, 0, 0]
    assert release.videos["clip"].frame_count == 300
    assert (tmp_path / "train_demo" / "releases" / f"{release.release_id}.h5").is_file()


# -- create / open ---------------------------------------------------------------------------------


def test_create_then_open(tmp_path: Path) -> None:
    created = Dataset.create(tmp_path / "a" / "b")
    assert created.path == (tmp_path / "a" / "b").absolute()
    assert (created.path / DB_NAME).is_file()
    opened = Dataset.open(tmp_path / "a" / "b")
    assert opened.labels() == [] and opened.videos() == [] and opened.releases() == []
    assert Dataset(tmp_path / "a" / "b").path == created.path
    mode = sqlite3.connect(created.path / DB_NAME).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_create_in_empty_existing_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    Dataset.create(tmp_path / "empty")
    assert Dataset.is_dataset(tmp_path / "empty")


def test_create_refuses_existing_dataset(tmp_path: Path) -> None:
    Dataset.create(tmp_path / "ds")
    with pytest.raises(DatasetExistsError, match="already holds a vidlabel dataset"):
        Dataset.create(tmp_path / "ds")


def test_create_refuses_non_empty_folder_and_file(tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(DatasetExistsError, match="not empty"):
        Dataset.create(tmp_path / "busy")
    (tmp_path / "file").write_text("x")
    with pytest.raises(DatasetExistsError, match="is a file"):
        Dataset.create(tmp_path / "file")


def test_open_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        Dataset.open(tmp_path / "nope")


def test_open_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(DatasetNotFoundError, match=r"not a vidlabel dataset \(it has no vidlabel.sqlite\)$"):
        Dataset.open(tmp_path / "plain")
    for root in ("store.h5", "zarr.json"):  # a frame store's folder, given where a dataset is asked for
        (tmp_path / root).mkdir()
        (tmp_path / root / root).write_bytes(b"")
        with pytest.raises(DatasetNotFoundError, match=rf"it has no vidlabel.sqlite\): it holds {root}, as a frame "
                           r"store does: read it with vidlabel.open_store or StoreFrames"):  # fmt: skip
            Dataset.open(tmp_path / root)
    (tmp_path / "plain" / DB_NAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatasetNotFoundError, match="not a vidlabel dataset"):
        Dataset.open(tmp_path / "plain")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DatasetNotFoundError, match="is a file"):
        Dataset.open(tmp_path / "afile")


def test_open_other_sqlite_database(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    con = sqlite3.connect(tmp_path / "other" / DB_NAME)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(DatasetNotFoundError, match="not a vidlabel dataset"):
        Dataset.open(tmp_path / "other")


def test_open_newer_schema_version(tmp_path: Path) -> None:
    Dataset.create(tmp_path / "ds")
    con = sqlite3.connect(tmp_path / "ds" / DB_NAME)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    con.commit()
    con.close()
    with pytest.raises(SchemaVersionError, match=f"schema version {SCHEMA_VERSION + 1}.*newer vidlabel"):
        Dataset.open(tmp_path / "ds")


@pytest.mark.parametrize("version", ["1.1", "abc", ""])
def test_open_a_schema_version_that_is_no_whole_number(tmp_path: Path, version: str) -> None:
    # before: a bare ValueError from int() ("invalid literal for int() with base 10: '1.1'"), naming no dataset
    Dataset.create(tmp_path / "ds")
    con = sqlite3.connect(tmp_path / "ds" / DB_NAME)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    con.commit()
    con.close()
    words = rf"dataset .*ds records schema version '{re.escape(version)}', which is not a whole number: its"
    with pytest.raises(DatasetError, match=words + r" vidlabel.sqlite was edited or damaged"):
        Dataset.open(tmp_path / "ds")


# -- videos ----------------------------------------------------------------------------------------


def test_videos_round_trip_with_frame_index(tmp_path: Path) -> None:
    d = Dataset.create(tmp_path / "ds")
    n = 120_000
    pts = np.cumsum(np.random.default_rng(0).integers(1000, 1003, n)).astype(np.int64)
    index = FrameIndex(
        timebase={"num": 1, "den": 90000}, pts=pts, keyframes=np.arange(0, n, 250), content_hash="sha256:ab"
    )
    full = meta(
        "b_long",
        frame_count=n,
        content_hash="sha256:ab",
        rotation=90,
        codec="h264",
        pix_fmt="yuv420p",
        color_range="tv",
        color_space="bt709",
        bit_depth=8,
        frame_index=index,
    )
    d.add_video(full)
    d.add_video(meta("a_short"))
    assert [v.video_id for v in d.videos()] == ["a_short", "b_long"]
    got = d.video("b_long")
    assert got == full
    assert got.frame_index == index and got.frame_index is not None
    assert got.frame_index.pts.dtype == np.int64
    assert d.video("a_short").frame_index is None
    # Stored compactly: far less than 8 bytes per frame.
    assert (d.path / DB_NAME).stat().st_size < 8 * n / 4


def test_add_video_twice_and_update(ds: Dataset) -> None:
    with pytest.raises(DatasetError, match=r"'clip' is already registered.*update_video"):
        ds.add_video(meta())
    ds.update_video(meta(frame_count=50, content_hash="sha256:01"))
    assert ds.video("clip").frame_count == 50
    assert ds.video("clip").content_hash == "sha256:01"
    with pytest.raises(UnknownVideoError, match=r"unknown video 'other'.*known: clip"):
        ds.update_video(meta("other"))


def test_add_video_from_dict(ds: Dataset) -> None:
    ds.add_video(meta("d2").to_dict())
    assert ds.video("d2") == meta("d2")


def test_unknown_video_lists_known(ds: Dataset) -> None:
    with pytest.raises(UnknownVideoError, match=r"unknown video 'nope'.*known: clip"):
        ds.video("nope")


# -- labels and views ------------------------------------------------------------------------------


def test_labels_keep_order_and_are_idempotent(tmp_path: Path) -> None:
    d = Dataset.create(tmp_path / "ds")
    assert d.add_labels(["b", "a"]) == ["b", "a"]
    assert d.add_labels(["a", "c", "b", "c"]) == ["b", "a", "c"]
    assert d.add_labels("d") == ["b", "a", "c", "d"]
    assert d.labels() == ["b", "a", "c", "d"]


@pytest.mark.parametrize("bad", ["", " padded", 3, None])
def test_bad_label_names(ds: Dataset, bad: object) -> None:
    with pytest.raises(AnnotationError, match=r"label 1 is .*non-empty string"):
        ds.add_labels(["ok", bad])  # type: ignore[list-item]
    assert ds.labels() == ["person", "car", "goal"]


def test_views(ds: Dataset) -> None:
    v = ds.add_view("left", crop=(0, 0, 32, 48), output_size=(16, 24))
    assert v == View("left", (0, 0, 32, 48), (16, 24))
    assert ds.add_view("left", crop=(0, 0, 32, 48), output_size=(16, 24)) == v
    ds.add_view("a_top", crop=(0, 0, 64, 20))
    assert list(ds.views()) == ["a_top", "left"]
    assert ds.views()["a_top"].output_size is None
    with pytest.raises(AnnotationError, match="view 'left' already exists with crop"):
        ds.add_view("left", crop=(0, 0, 30, 48))
    with pytest.raises(AnnotationError, match="crop must satisfy"):
        ds.add_view("bad", crop=(10, 0, 5, 48))


def test_add_view_refuses_a_crop_outside_a_registered_video(ds: Dataset) -> None:
    ds.add_video(meta("small", width=40, height=30))
    with pytest.raises(AnnotationError, match=r"crop \(0, 0, 700, 10\) does not fit inside video 'clip' \(64x48\)"):
        ds.add_view("wide", crop=(0, 0, 700, 10))
    with pytest.raises(
        AnnotationError, match=r"view 'mid': crop \(0, 0, 50, 30\) does not fit inside video 'small' \(40x30\)"
    ):
        ds.add_view("mid", crop=(0, 0, 50, 30))
    assert ds.views() == {}
    assert ds.add_view("fits", crop=(0, 0, 40, 30)).crop == (0, 0, 40, 30)


# -- annotations -----------------------------------------------------------------------------------


def box(frame: int, label: str = "person", **kw) -> dict:
    return {"kind": "box", "label": label, "start_frame": frame, "box": (1, 2, 11, 22), **kw}


def test_add_annotations_returns_new_ids_and_defaults(ds: Dataset) -> None:
    ids = ds.add_annotations([box(1), box(2, "car")], "clip")
    assert ids == [1, 2]
    assert ds.add_annotations([box(3)], "clip") == [3]
    assert ds.add_annotations([], "clip") == []
    rows = ds.annotations()
    assert [r["annotation_id"] for r in rows] == [1, 2, 3]
    assert rows[0] == {
        "annotation_id": 1,
        "video_id": "clip",
        "kind": "box",
        "label": "person",
        "start_frame": 1,
        "end_frame": 1,
        "box": (1.0, 2.0, 11.0, 22.0),
        "mask": None,
        "track_id": None,
        "origin": "human",
        "confidence": None,
        "status": "unreviewed",
        "view_id": None,
    }


def test_annotations_round_trip_all_fields(ds: Dataset) -> None:
    ds.add_view("left", crop=(0, 0, 32, 48))
    row = {
        "kind": "box",
        "label": "car",
        "start_frame": 7,
        "end_frame": 7,
        "box": (0.5, 1.25, 30.75, 47.5),
        "track_id": 12,
        "origin": "model",
        "confidence": 0.9,
        "status": "approved",
        "view_id": "left",
        "video_id": "clip",
    }
    (i,) = ds.add_annotations([row], "clip")
    (got,) = ds.annotations()
    assert got == {**row, "annotation_id": i, "mask": None}
    # A row read back can be added again (to this or another dataset).
    again = {k: v for k, v in got.items() if k != "annotation_id"}
    again["start_frame"] = again["end_frame"] = 8
    ds.add_annotations([again], "clip")


def test_numpy_values_are_accepted(ds: Dataset) -> None:
    ds.add_annotations(
        [
            {
                "kind": "box",
                "label": "car",
                "start_frame": np.int64(4),
                "box": np.array([1, 2, 3, 4], np.float32),
                "track_id": np.int32(3),
                "confidence": np.float32(0.5),
            }
        ],
        "clip",
    )
    (got,) = ds.annotations()
    assert got["start_frame"] == 4 and got["box"] == (1, 2, 3, 4) and got["track_id"] == 3
    assert got["confidence"] == 0.5


def test_mask_from_array_fills_the_box(ds: Dataset) -> None:
    m = np.zeros((48, 64), bool)
    m[10:20, 5:9] = True
    m[30, 40] = True
    (i,) = ds.add_annotations([{"kind": "mask", "label": "car", "start_frame": 3, "mask": m}], "clip")
    (row,) = ds.annotations(kind="mask")
    assert row["annotation_id"] == i
    assert row["box"] == (5.0, 10.0, 41.0, 31.0)
    decoded = mask_utils.decode(row["mask"])
    assert np.array_equal(decoded.astype(bool), m)


@pytest.mark.parametrize("form", ["bytes", "str", "list"])
def test_mask_from_coco_rle(ds: Dataset, form: str) -> None:
    m = np.zeros((48, 64), np.uint8)
    m[0:5, 60:64] = 1  # touches the right edge
    m[47, 0] = 1  # and the bottom-left corner
    rle = mask_utils.encode(np.asfortranarray(m))
    if form == "str":
        rle = {"size": rle["size"], "counts": rle["counts"].decode()}
    elif form == "list":
        flat = m.T.reshape(-1)
        change = np.flatnonzero(np.diff(flat)) + 1
        bounds = np.concatenate([[0], change, [flat.size]])
        runs = np.diff(bounds).tolist()
        if flat[0] == 1:
            runs = [0, *runs]
        rle = {"size": [48, 64], "counts": runs}
    ds.add_annotations([{"kind": "mask", "label": "car", "start_frame": 3, "mask": rle}], "clip")
    (row,) = ds.annotations()
    assert row["box"] == (0.0, 0.0, 64.0, 48.0)
    assert np.array_equal(mask_utils.decode(row["mask"]), m)


def test_mask_given_at_the_view_crop_size(ds: Dataset) -> None:
    ds.add_view("right", crop=(32, 8, 64, 40))
    crop_mask = np.zeros((32, 32), np.uint8)
    crop_mask[2:4, 3:6] = 1
    ds.add_annotations(
        [{"kind": "mask", "label": "car", "start_frame": 0, "mask": crop_mask, "view_id": "right"}], "clip"
    )
    (row,) = ds.annotations()
    full = mask_utils.decode(row["mask"])
    assert full.shape == (48, 64)
    assert np.array_equal(full[8:40, 32:64], crop_mask) and full.sum() == crop_mask.sum()
    assert row["box"] == (35.0, 10.0, 38.0, 12.0)


def test_markers_and_box_clipping(ds: Dataset) -> None:
    ds.add_annotations(
        [
            {"kind": "marker", "label": "goal", "start_frame": 20, "end_frame": 29},
            {"kind": "marker", "label": "goal", "start_frame": 40},
            {"kind": "box", "label": "car", "start_frame": 5, "box": (-5, -1, 70, 20)},
        ],
        "clip",
        clip=True,
    )
    rows = ds.annotations()
    assert rows[0]["box"] is None and (rows[0]["start_frame"], rows[0]["end_frame"]) == (20, 29)
    assert (rows[1]["start_frame"], rows[1]["end_frame"]) == (40, 40)
    assert rows[2]["box"] == (0.0, 0.0, 64.0, 20.0)


def test_query_filters(tmp_path: Path) -> None:
    d = Dataset.create(tmp_path / "ds")
    d.add_video(meta("a"))
    d.add_video(meta("b"))
    d.add_labels(["person", "car", "goal"])
    a = d.add_annotations([box(f, "person" if f % 2 else "car") for f in range(10)], "a")
    b = d.add_annotations([box(f) for f in range(5)], "b")
    m = d.add_annotations([{"kind": "marker", "label": "goal", "start_frame": 2, "end_frame": 6}], "a")
    ids = lambda rows: [r["annotation_id"] for r in rows]  # noqa: E731
    assert ids(d.annotations()) == a + b + m
    assert ids(d.annotations("b")) == b
    assert ids(d.annotations("a", start=3, stop=5)) == [a[3], a[4], *m]
    assert ids(d.annotations("a", start=7)) == a[7:]
    assert ids(d.annotations(stop=1)) == [a[0], b[0]]
    assert ids(d.annotations(label="car")) == a[0::2]
    assert ids(d.annotations(kind="marker")) == m
    assert ids(d.annotations("a", label="person", kind="box", start=0, stop=4)) == [a[1], a[3]]
    with pytest.raises(UnknownVideoError, match="unknown video 'c'"):
        d.annotations("c")
    with pytest.raises(AnnotationError, match="unknown label 'dog'; known: person, car, goal"):
        d.annotations(label="dog")
    with pytest.raises(AnnotationError, match="unknown kind 'polygon'; allowed: box, mask, marker"):
        d.annotations(kind="polygon")


def test_set_status_and_delete(ds: Dataset) -> None:
    ids = ds.add_annotations([box(f) for f in range(6)], "clip")
    ds.set_status(ids[:2], "approved")
    ds.set_status([ids[2]], "rejected")
    assert [r["status"] for r in ds.annotations()] == ["approved"] * 2 + ["rejected"] + ["unreviewed"] * 3
    ds.delete_annotations([ids[0], ids[5]])
    assert [r["annotation_id"] for r in ds.annotations()] == ids[1:5]
    with pytest.raises(AnnotationError, match="unknown status 'done'; allowed: unreviewed, approved, rejected"):
        ds.set_status(ids[1:2], "done")
    with pytest.raises(AnnotationError, match=r"set_status: 1 unknown annotation id\(s\): 999; nothing was changed"):
        ds.set_status([ids[1], 999], "approved")
    assert ds.annotations()[0]["status"] == "approved"
    with pytest.raises(AnnotationError, match=r"delete_annotations: 1 unknown annotation id\(s\): 1;"):
        ds.delete_annotations([ids[0], ids[1]])  # ids[0] is gone already: nothing deleted
    assert len(ds.annotations()) == 4
    # Ids are never reused.
    assert ds.add_annotations([box(9)], "clip") == [ids[-1] + 1]


def test_delete_frees_a_track_for_another_label(ds: Dataset) -> None:
    (i,) = ds.add_annotations([box(1, "person", track_id=5)], "clip")
    with pytest.raises(AnnotationError, match="track 5 has label 'car' here but 'person'"):
        ds.add_annotations([box(2, "car", track_id=5)], "clip")
    ds.delete_annotations([i])
    ds.add_annotations([box(2, "car", track_id=5)], "clip")


def test_a_batch_added_twice_warns_at_once_and_keeps_the_rows(ds: Dataset) -> None:
    # adding one file twice (a walkthrough step or an import run again) doubled its rows without a word: only
    # validate and build said duplicate_annotation, later; the add now says it, naming the rows and how to remove them
    ds.add_video(meta("other"))
    mask = np.zeros((48, 64), np.uint8)
    mask[10:20, 5:15] = 1
    batch = [box(1), box(2, "car", track_id=4), {"kind": "mask", "label": "car", "start_frame": 3, "mask": mask},
             {"kind": "marker", "label": "goal", "start_frame": 4, "end_frame": 9}]  # fmt: skip
    first = ds.add_annotations(batch, "clip")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: other video, rows that differ in a box, a frame, a mask pixel
        ds.add_annotations(batch, "other")
        ds.add_annotations([dict(box(1), box=(1, 2, 11, 23)), box(5)], "clip")
        ds.add_annotations([dict(batch[2], mask=np.roll(mask, 1, axis=1))], "clip")
    with pytest.warns(VidlabelWarning, match=r"rows 0 and 1 \(0-based\) of the input are the same annotation"):
        ds.add_annotations([box(7), box(7)], "clip")  # twice within one batch: said too, as a repeat of the input
    with pytest.warns(VidlabelWarning) as caught:
        again = ds.add_annotations([box(8), *batch], "clip")
    (w,) = caught
    assert str(w.message) == (
        f"video 'clip': 4 of the 5 rows just added equal rows already stored (row 1 (0-based), annotation "
        f"{again[1]}, equals annotation {first[0]}: same kind, label, view, frames, box and mask), as when one file "
        f"is added twice; they are kept (validate warns duplicate_annotation): remove them with "
        f"Dataset.open({str(ds.path)!r}).delete_annotations([{', '.join(map(str, again[1:]))}]) or leave them out "
        f"of releases with set_status([{', '.join(map(str, again[1:]))}], 'rejected')"
    )
    assert len(ds.annotations("clip")) == 4 + 2 + 1 + 2 + 5  # kept: the warning changes nothing
    ds.delete_annotations(again[1:])
    ds.set_status([first[0]], "rejected")  # a rejected row is not one to warn of (validate skips it too)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.add_annotations([box(1)], "clip")


def test_rows_repeated_within_one_batch_warn_at_once_naming_the_rows(ds: Dataset) -> None:
    # a file (or list) holding one annotation twice was added doubled without a word: only validate and build said
    # duplicate_annotation, later; the add now says it, naming the rows of the input, and keeps them
    mask = np.zeros((48, 64), np.uint8)
    mask[10:20, 5:15] = 1
    distinct = [box(1), box(2, "car", track_id=4), {"kind": "mask", "label": "car", "start_frame": 3, "mask": mask},
                {"kind": "marker", "label": "goal", "start_frame": 4, "end_frame": 9}]  # fmt: skip
    order = [0, 1, 2, 0, 3, 2, 0]  # rows 3 and 6 repeat row 0, row 5 repeats row 2
    repeats = [(i, order.index(k)) for i, k in enumerate(order) if order.index(k) < i]
    with pytest.warns(VidlabelWarning) as caught:
        ids = ds.add_annotations([dict(distinct[k]) for k in order], "clip")
    (w,) = caught
    (row, first), later = repeats[0], ", ".join(str(ids[i]) for i, _ in repeats)
    assert str(w.message) == (
        f"video 'clip': {len(repeats)} of the {len(order)} rows just added repeat an earlier row of the input (rows "
        f"{first} and {row} (0-based) of the input are the same annotation, annotations {ids[first]} and {ids[row]}: "
        f"same kind, label, view, frames, box and mask); they are kept (validate warns duplicate_annotation): remove "
        f"them with Dataset.open({str(ds.path)!r}).delete_annotations([{later}]) or leave them out of releases with "
        f"set_status([{later}], 'rejected')"
    )
    assert len(ds.annotations("clip")) == len(order)  # kept: the warning changes nothing
    said = sorted(p.annotation_id for p in ds.validate(check_files=False) if p.code == "duplicate_annotation")
    assert said == [ids[i] for i, _ in repeats]  # the rows validate reports later
    ds.delete_annotations(ids)
    with pytest.warns(VidlabelWarning) as caught:
        two = ds.add_annotations([box(5), box(6), box(5, status="approved")], "clip")
    (w,) = caught
    assert str(w.message).startswith(
        f"video 'clip': rows 0 and 2 (0-based) of the input are the same annotation: annotation {two[2]} just added "
        f"repeats annotation {two[0]} (same kind, label, view, frames, box and mask); it is kept (validate warns "
        f"duplicate_annotation): remove it with Dataset.open({str(ds.path)!r}).delete_annotations([{two[2]}])"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: rows that differ in a box, a frame or a label; a rejected row
        ds.add_annotations([box(7), dict(box(7), box=(1, 2, 11, 23)), box(8), box(7, "car")], "clip")
        ds.add_annotations([box(9), box(9, status="rejected"), *[box(10, status="rejected")] * 2], "clip")


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # rows repeat on purpose
def test_many_batches_and_big_batches_across_chunks(ds: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    import vidlabel.dataset._dataset as dataset_module

    monkeypatch.setattr(dataset_module, "CHUNK_ROWS", 7)
    all_ids: list[int] = []
    for k in range(5):
        all_ids += ds.add_annotations([box(f % 100) for f in range(k * 3 + 1)], "clip")
    all_ids += ds.add_annotations([box(f) for f in range(40)], "clip")
    rows = ds.annotations()
    assert [r["annotation_id"] for r in rows] == all_ids == list(range(1, len(all_ids) + 1))
    ds.set_status(all_ids[::3], "rejected")
    ds.delete_annotations(all_ids[1::3])
    kept = ds.annotations()
    assert [r["annotation_id"] for r in kept] == [i for j, i in enumerate(all_ids) if j % 3 != 1]
    assert [r["status"] for r in kept].count("rejected") == len(all_ids[::3])
    snap = ds.snapshot()
    assert snap.table.annotation_id.tolist() == all_ids[2::3]


def test_snapshot_statuses_and_codes(ds: Dataset) -> None:
    ds.add_video(meta("another"))
    ds.add_view("v1", crop=(0, 0, 32, 32))
    ds.add_view("v0", crop=(0, 0, 16, 16))
    ids = ds.add_annotations([box(1), box(2, view_id="v1"), box(3, view_id="v0")], "clip")
    ids += ds.add_annotations([box(4, "car", confidence=0.25, origin="model")], "another")
    ds.set_status([ids[0]], "rejected")
    ds.set_status([ids[3]], "approved")
    snap = ds.snapshot()
    assert snap.release_id is None
    t = snap.table
    assert t.annotation_id.tolist() == ids[1:]
    assert t.video_ids == ("another", "clip") and t.video.tolist() == [1, 1, 0]
    assert t.view_ids == ("v0", "v1") and t.view.tolist() == [1, 0, -1]
    assert t.confidence[2] == np.float32(0.25)
    assert [STATUSES[s] for s in t.status] == ["unreviewed", "unreviewed", "approved"]
    everything = ds.snapshot(statuses=STATUSES)
    assert everything.table.annotation_id.tolist() == ids
    assert ds.snapshot(statuses=("approved",)).table.annotation_id.tolist() == [ids[3]]
    # one status alone: before, its letters ("unknown status(es) ['a', 'p', 'p', ...]")
    assert ds.snapshot(statuses="approved").table.annotation_id.tolist() == [ids[3]]
    assert ds.snapshot(statuses="rejected").info["statuses"] == ["rejected"]
    assert ds.release(None).table.annotation_id.tolist() == ids[1:]
    with pytest.raises(AnnotationError, match="unknown status"):
        ds.snapshot(statuses=("maybe",))


def test_summary(ds: Dataset) -> None:
    ids = ds.add_annotations([box(1), {"kind": "marker", "label": "goal", "start_frame": 1}], "clip")
    ds.set_status(ids[:1], "rejected")
    s = ds.summary()
    assert s["videos"] == 1 and s["annotations"] == 2
    assert s["by_kind"] == {"box": 1, "mask": 0, "marker": 1}
    assert s["by_status"] == {"unreviewed": 1, "approved": 0, "rejected": 1}


def test_pickle_round_trip(ds: Dataset) -> None:
    ds.add_annotations([box(1)], "clip")
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.path == ds.path
    assert clone.labels() == ds.labels()
    assert clone.add_annotations([box(2)], "clip") == [2]
    assert len(ds.annotations()) == 2
    assert repr(clone) == f"Dataset({str(ds.path)!r})"


def test_close_and_reconnect(ds: Dataset) -> None:
    ds.close()
    assert ds.labels() == ["person", "car", "goal"]


# -- properties ------------------------------------------------------------------------------------


def _random_cols(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    lengths = np.where(rng.random(n) < 0.3, rng.integers(1, 9, n), 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # some chunks hold attributes (format VLC2), some none (VLC1)
    with_attrs = rng.random() < 0.5
    attrs = [json.dumps({"v": int(k)}).encode() if with_attrs and rng.random() < 0.5 else b"" for k in range(n)]
    attr_offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(a) for a in attrs], out=attr_offsets[1:])
    return {
        "annotation_id": np.sort(rng.choice(10**6, n, replace=False)).astype(np.int64),
        "kind": rng.integers(0, 3, n).astype(np.uint8),
        "label": rng.integers(0, 50, n).astype(np.int32),
        "start_frame": rng.integers(0, 10**5, n),
        "end_frame": rng.integers(0, 10**5, n),
        "box": rng.normal(size=(n, 4)) * 100,
        "track_id": rng.integers(-1, 30, n),
        "origin": rng.integers(0, 2, n).astype(np.uint8),
        "confidence": rng.random(n).astype(np.float32),
        "status": rng.integers(0, 3, n).astype(np.uint8),
        "view": rng.integers(-1, 3, n).astype(np.int32),
        "mask_size": np.where(lengths[:, None] > 0, rng.integers(1, 99, (n, 2)), 0).astype(np.int32),
        "mask_offsets": offsets,
        "mask_counts": rng.integers(48, 112, int(offsets[-1])).astype(np.uint8),
        "attr_offsets": attr_offsets,
        "attr_bytes": np.frombuffer(b"".join(attrs), np.uint8),
    }


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(0, 40), min_size=1, max_size=4))
def test_chunks_round_trip_concat_and_take(seed: int, sizes: list[int]) -> None:
    rng = np.random.default_rng(seed)
    parts = [_random_cols(rng, n) for n in sizes]
    decoded = [decode_chunk(encode_chunk(p)) for p in parts]
    for p, d in zip(parts, decoded):
        assert p.keys() == d.keys()
        for k in p:
            assert np.array_equal(p[k], d[k]), k
    whole = concat(decoded)
    n = sum(sizes)
    assert whole["annotation_id"].shape == (n,) and whole["mask_offsets"].shape == (n + 1,)
    rows = rng.permutation(n)[: n // 2]
    sub = take(whole, rows)
    for j, r in enumerate(rows.tolist()):
        a, b = whole["mask_offsets"][r], whole["mask_offsets"][r + 1]
        c, d = sub["mask_offsets"][j], sub["mask_offsets"][j + 1]
        assert np.array_equal(whole["mask_counts"][a:b], sub["mask_counts"][c:d])
        assert sub["annotation_id"][j] == whole["annotation_id"][r]
        a, b = whole["attr_offsets"][r], whole["attr_offsets"][r + 1]
        c, d = sub["attr_offsets"][j], sub["attr_offsets"][j + 1]
        assert whole["attr_bytes"][a:b].tobytes() == sub["attr_bytes"][c:d].tobytes()


row_strategy = st.fixed_dictionaries(
    {
        "kind": st.just("box"),
        "label": st.sampled_from(["person", "car"]),
        "start_frame": st.integers(0, 99),
        "box": st.tuples(
            st.floats(0, 30, allow_nan=False),
            st.floats(0, 20, allow_nan=False),
            st.floats(31, 64, allow_nan=False),
            st.floats(21, 48, allow_nan=False),
        ),
    },
    optional={
        "origin": st.sampled_from(["human", "model"]),
        "confidence": st.floats(0, 1, width=32),
        "status": st.sampled_from(["unreviewed", "approved", "rejected"]),
    },
)


_ROW = {"kind": "box", "label": "person", "start_frame": 0, "box": (0.0, 0.0, 31.0, 21.0)}


@settings(max_examples=15, deadline=None)
@given(rows=st.lists(row_strategy, max_size=30))
@example(rows=[_ROW, _ROW])  # a repeat: warned, both kept
@example(rows=[_ROW, {**_ROW, "status": "rejected"}])  # a rejected repeat: not warned
def test_rows_round_trip(tmp_path_factory: pytest.TempPathFactory, rows: list[dict]) -> None:
    d = Dataset.create(tmp_path_factory.mktemp("prop") / "ds")
    d.add_video(meta())
    d.add_labels(["person", "car"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = d.add_annotations(rows, "clip")
    # drawn rows may repeat: a repeat (as stored: float32 corners) among the rows not rejected is warned, and kept
    keys = [
        (r["label"], r["start_frame"], *np.float32(r["box"]).tolist()) for r in rows if r.get("status") != "rejected"
    ]
    said = [str(w.message) for w in caught if "the same annotation" in str(w.message)]
    assert bool(said) == (len(set(keys)) < len(keys)) and len(caught) == len(said)
    got = d.annotations()
    assert [g["annotation_id"] for g in got] == ids
    for row, g in zip(rows, got):
        assert g["box"] == tuple(float(x) for x in row["box"])
        assert g["start_frame"] == row["start_frame"] and g["label"] == row["label"]
        assert g["origin"] == row.get("origin", "human") and g["status"] == row.get("status", "unreviewed")
        if "confidence" in row:
            assert np.float32(g["confidence"]) == np.float32(row["confidence"])
    snap = d.snapshot()
    kept = [i for i, r in zip(ids, rows) if r.get("status") != "rejected"]
    assert snap.table.annotation_id.tolist() == kept


def test_update_video_to_a_larger_frame_warns_that_boxes_keep_the_old_pixels(ds: Dataset) -> None:
    """A larger re-encode registered with update_video (or add-video --replace) kept every box in the old
    frame's pixel grid without a word: every row still fits, so validate has nothing to say. It now warns."""
    ds.add_annotations(
        [
            {"kind": "box", "label": "car", "start_frame": 3, "box": (1, 2, 11, 22)},
            {"kind": "box", "label": "car", "start_frame": 4, "box": (40, 2, 60, 22)},
            {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 9},
        ],
        "clip",
    )
    with pytest.warns(
        VidlabelWarning,
        match=r"^video 'clip' in .*: its frame size changed from 64x48 to 128x96, and its 2 box or mask rows keep "
        r"their pixels of the old frame \(vidlabel cannot tell whether the new file is the old one resized\): if it "
        r"is, scale them, or register the new file as a new video$",
    ):
        ds.update_video(ds.video("clip").replace(width=128, height=96))
    assert [r["box"] for r in ds.annotations() if r["kind"] == "box"] == [
        (1.0, 2.0, 11.0, 22.0),
        (40.0, 2.0, 60.0, 22.0),
    ]
    with warnings.catch_warnings():  # the same size again, or another video without boxes: nothing to say
        warnings.simplefilter("error", VidlabelWarning)
        ds.update_video(ds.video("clip").replace(frame_count=90))
        ds.add_video(meta("empty"))
        ds.update_video(ds.video("empty").replace(width=640, height=480))


@pytest.mark.parametrize(
    ("view_id", "what"),
    [(" left", "has leading or trailing spaces"), ("left\n", "holds the control character '\\\\n'"),
     ("le\nft", "holds the control character '\\\\n'"), ("a\tb", "holds the control character '\\\\t'")],
)  # fmt: skip
def test_a_view_id_with_spaces_around_or_a_control_character_is_refused(ds: Dataset, view_id: str, what: str) -> None:
    """View ids took a newline or a leading space, which labels refuse: `vidlabel info` printed a broken line."""
    with pytest.raises(AnnotationError, match=rf"^view id {re.escape(repr(view_id))} {what}; .*nothing was added$"):
        ds.add_view(view_id, crop=(0, 0, 32, 48))
    assert ds.views() == {}


@pytest.mark.parametrize("video_id", [" ", "\u3000", "  \u00a0"])
def test_a_video_id_of_white_space_only_is_refused(ds: Dataset, video_id: str) -> None:
    """The API took the video id ' ', which the CLI refuses as empty."""
    with pytest.raises(AnnotationError, match=rf"^video id {re.escape(repr(video_id))} is only white space; nothing"):
        ds.add_video(meta(video_id))
    assert [v.video_id for v in ds.videos()] == ["clip"]
