"""Releases: content-derived ids, idempotent builds, immutability, "latest", refusal, the frozen file."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from vidlabel import Dataset, FrameIndex, Release, VideoMetadata
from vidlabel.dataset._release import FORMAT_VERSION, read_release, release_id_of
from vidlabel.errors import (
    BuildError,
    ReleaseCorruptError,
    ReleaseNotFoundError,
    SchemaVersionError,
    VidlabelError,
    VidlabelWarning,
)
from vidlabel.spec import AnnotationTable

pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

ID = re.compile(r"^r[0-9a-f]{12}$")


def video(video_id: str = "clip", **kw) -> VideoMetadata:
    fields = {
        "video_id": video_id,
        "frame_count": 50,
        "fps": {"num": 30000, "den": 1001},
        "width": 64,
        "height": 48,
        "sources": [{"uri": f"/nowhere/{video_id}.mp4"}],
        "content_hash": "sha256:" + "ab" * 32,
        **kw,
    }
    return VideoMetadata(**fields)


def fill(ds: Dataset) -> list[int]:
    index = FrameIndex(
        timebase={"num": 1, "den": 30000},
        pts=np.arange(50) * 1001,
        keyframes=[0, 25],
        content_hash="sha256:" + "ab" * 32,
    )
    ds.add_video(video(frame_index=index))
    ds.add_labels(["person", "car", "goal"])
    ds.add_view("left", crop=(0, 0, 32, 48), output_size=(16, 24))
    m = np.zeros((48, 64), np.uint8)
    m[5:10, 20:30] = 1
    return ds.add_annotations(
        [
            {"kind": "box", "label": "person", "start_frame": 3, "box": (1, 2, 11, 22), "track_id": 4},
            {"kind": "mask", "label": "car", "start_frame": 3, "mask": m, "origin": "model", "confidence": 0.75},
            {"kind": "marker", "label": "goal", "start_frame": 10, "end_frame": 19, "status": "approved"},
            {"kind": "box", "label": "car", "start_frame": 4, "box": (2, 2, 12, 12), "view_id": "left"},
        ],
        "clip",
    )


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    d = Dataset.create(tmp_path / "ds")
    fill(d)
    return d


def tables_equal(a: AnnotationTable, b: AnnotationTable) -> bool:
    names = (*AnnotationTable.COLUMNS, "mask_offsets", "mask_counts")
    same = all(np.array_equal(getattr(a, n), getattr(b, n), equal_nan=getattr(a, n).dtype.kind == "f") for n in names)
    return same and (a.labels, a.video_ids, a.view_ids) == (b.labels, b.video_ids, b.view_ids)


def test_build_freezes_everything(ds: Dataset) -> None:
    release, report = ds.build()
    assert isinstance(release, Release) and ID.match(release.release_id or "")
    assert report.new and report.release_id == release.release_id and report.rows == 4
    assert report.counts == {"box": 2, "mask": 1, "marker": 1}
    assert [p.code for p in report.warnings] == ["missing_video_file"]
    assert Path(report.path) == ds.path / "releases" / f"{release.release_id}.h5"
    assert release.labels == ("person", "car", "goal")
    assert release.views["left"].output_size == (16, 24)
    assert release.videos["clip"] == ds.video("clip")
    assert release.videos["clip"].frame_index == ds.video("clip").frame_index
    assert release.info["statuses"] == ["unreviewed", "approved"]
    t = release.table
    assert t.annotation_id.tolist() == [1, 2, 3, 4]
    assert t.box[1].tolist() == [20, 5, 30, 10]  # the mask's bbox
    rle = t.mask_rle(1)
    assert rle is not None and mask_utils.decode(rle)[5:10, 20:30].all() and mask_utils.decode(rle).sum() == 50
    assert t.mask_rle(0) is None
    assert t.confidence[1] == np.float32(0.75)
    assert t.view.tolist() == [-1, -1, -1, 0]
    assert not t.box.flags.writeable


def test_release_loads_equal_from_a_fresh_dataset(ds: Dataset) -> None:
    built, _ = ds.build()
    loaded = Dataset.open(ds.path).release(built.release_id)
    assert loaded.release_id == built.release_id and loaded.created == built.created
    assert tables_equal(loaded.table, built.table)
    assert loaded.videos == built.videos and loaded.views == built.views and loaded.labels == built.labels
    assert loaded.info == built.info
    assert "rows=4" in repr(loaded)
    assert loaded.describe()["counts"] == {"box": 2, "mask": 1, "marker": 1}


def test_same_content_same_id_no_new_release(ds: Dataset) -> None:
    first, rep1 = ds.build()
    path = Path(rep1.path)
    stat = path.stat()
    second, rep2 = ds.build()
    assert second.release_id == first.release_id and not rep2.new
    assert second.created == first.created
    assert ds.releases() == [first.release_id]
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and path.stat().st_ino == stat.st_ino
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]


def test_same_content_in_another_folder_has_the_same_id(tmp_path: Path) -> None:
    a = Dataset.create(tmp_path / "a")
    b = Dataset.create(tmp_path / "b")
    fill(a)
    fill(b)
    assert a.build()[0].release_id == b.build()[0].release_id


@pytest.mark.parametrize(
    "change",
    [
        "add_annotation",
        "approve",
        "reject",
        "delete",
        "add_label",
        "add_view",
        "update_video",
        "add_video",
    ],
)
def test_any_change_gives_a_new_id(ds: Dataset, change: str) -> None:
    old, _ = ds.build()
    if change == "add_annotation":
        ds.add_annotations([{"kind": "marker", "label": "goal", "start_frame": 0}], "clip")
    elif change == "approve":
        ds.set_status([1], "approved")
    elif change == "reject":
        ds.set_status([2], "rejected")
    elif change == "delete":
        ds.delete_annotations([4])
    elif change == "add_label":
        ds.add_labels(["dog"])
    elif change == "add_view":
        ds.add_view("top", crop=(0, 0, 64, 10))
    elif change == "update_video":
        ds.update_video(ds.video("clip").replace(content_hash="sha256:" + "cd" * 32))
    elif change == "add_video":
        ds.add_video(video("other"))
    new, report = ds.build()
    assert report.new and new.release_id != old.release_id
    assert ds.releases() == [old.release_id, new.release_id]


def test_immutability_after_edits(ds: Dataset) -> None:
    old, _ = ds.build()
    frozen = Dataset.open(ds.path).release(old.release_id)
    ds.set_status([1, 2], "rejected")
    ds.delete_annotations([3])
    ds.add_annotations([{"kind": "box", "label": "car", "start_frame": 9, "box": (0, 0, 5, 5)}], "clip")
    ds.add_labels(["dog"])
    ds.update_video(ds.video("clip").replace(frame_count=40, frame_index=None))
    new, _ = ds.build()
    assert new.table.annotation_id.tolist() == [4, 5]
    for again in (ds.release(old.release_id), Dataset.open(ds.path).release(old.release_id)):
        assert tables_equal(again.table, frozen.table)
        assert again.labels == ("person", "car", "goal")
        assert again.videos["clip"].frame_count == 50 and again.videos["clip"].frame_index is not None
    # What a caller does to the returned dicts does not leak into later calls.
    got = ds.release(old.release_id)
    got.videos.clear()
    got.info["x"] = 1
    assert "clip" in ds.release(old.release_id).videos and "x" not in ds.release(old.release_id).info


def test_changing_a_returned_videos_fps_or_sources_leaves_the_release_as_built(ds: Dataset) -> None:
    # before: the videos' fps and sources dicts were the ones Dataset.release keeps, so a caller pointing a video
    # at a moved file changed that release for every later release() (and FrameSamples) in the process
    built, _ = ds.build()
    got = ds.release(built.release_id)
    got.videos["clip"].sources[0]["uri"] = "/elsewhere/clip.mp4"
    got.videos["clip"].fps["num"] = 25
    again = ds.release(built.release_id)
    assert again.videos["clip"].sources == ({"uri": "/nowhere/clip.mp4"},)
    assert again.videos["clip"].fps == {"num": 30000, "den": 1001}
    assert again.videos["clip"] == Dataset.open(ds.path).release(built.release_id).videos["clip"]


def test_latest_follows_the_newest_build(ds: Dataset) -> None:
    with pytest.raises(ReleaseNotFoundError, match="has no release yet"):
        ds.release("latest")
    with pytest.raises(ReleaseNotFoundError, match="has no release yet"):
        ds.release()
    first, _ = ds.build()
    assert ds.release("latest").release_id == first.release_id
    ds.set_status([1], "rejected")
    second, _ = ds.build()
    assert ds.release().release_id == second.release_id
    ds.set_status([1], "unreviewed")  # back to the first content
    again, report = ds.build()
    assert again.release_id == first.release_id and not report.new
    assert ds.releases() == [first.release_id, second.release_id]
    assert ds.release("latest").release_id == first.release_id
    records = ds.release_records()
    assert [(r["release_id"], r["latest"], r["rows"]) for r in records] == [
        (first.release_id, True, 4),
        (second.release_id, False, 3),
    ]


def test_unknown_release_lists_known(ds: Dataset) -> None:
    rel, _ = ds.build()
    with pytest.raises(ReleaseNotFoundError, match=rf"unknown release 'r000000000000'.*known: {rel.release_id}"):
        ds.release("r000000000000")


def test_missing_release_file(ds: Dataset) -> None:
    rel, report = ds.build()
    Path(report.path).unlink()
    with pytest.raises(ReleaseNotFoundError, match=r"its file .* is missing"):
        Dataset.open(ds.path).release(rel.release_id)
    # Building the same content again writes the file back.
    again, rep = ds.build()
    assert again.release_id == rel.release_id and not rep.new and Path(rep.path).is_file()
    assert len(Dataset.open(ds.path).release(rel.release_id).table) == 4


def test_build_refused_on_errors_writes_nothing(ds: Dataset) -> None:
    with pytest.warns(VidlabelWarning, match=r"video 'clip' .*: 1 box outside its 20x48 frame \(up to x 30, y 10\)"):
        ds.update_video(ds.video("clip").replace(width=20, frame_index=None))  # the mask's box now leaves the frame
    with pytest.raises(BuildError, match=r"refused: validate\(\) found \d+ error\(s\): error box_out_of_frame"):
        ds.build()
    assert ds.releases() == []
    assert list((ds.path / "releases").iterdir()) == []


def test_rejected_rows_are_not_released(ds: Dataset) -> None:
    ds.set_status([2, 3], "rejected")
    rel, _ = ds.build()
    assert rel.table.annotation_id.tolist() == [1, 4]


def test_empty_dataset_builds(tmp_path: Path) -> None:
    d = Dataset.create(tmp_path / "empty")
    rel, report = d.build()
    assert ID.match(rel.release_id or "") and report.rows == 0 and len(rel.table) == 0
    assert len(d.release("latest").table) == 0


def test_release_id_of_depends_on_content_only(ds: Dataset) -> None:
    snap = ds.snapshot()
    rid = release_id_of(snap.labels, snap.views, snap.videos, snap.table)
    assert rid == ds.build()[0].release_id
    shifted = snap.table.take(np.array([0, 1, 2]))
    assert release_id_of(snap.labels, snap.views, snap.videos, shifted) != rid


def test_read_release_refuses_other_files(tmp_path: Path, ds: Dataset) -> None:
    import h5py

    with pytest.raises(ReleaseNotFoundError, match="does not exist"):
        read_release(tmp_path / "none.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["format"] = "something else"
    with pytest.raises(ReleaseNotFoundError, match="is not a vidlabel release file"):
        read_release(tmp_path / "other.h5")
    _, report = ds.build()
    newer = tmp_path / "newer.h5"
    newer.write_bytes(Path(report.path).read_bytes())
    with h5py.File(newer, "a") as f:
        f.attrs["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(SchemaVersionError, match="format version"):
        read_release(newer)


@pytest.mark.parametrize("edit", ["box", "label", "video"])
def test_a_release_file_edited_on_disk_is_refused(ds: Dataset, edit: str) -> None:
    """Issue 12, item 4: the content is checked against its content-derived id on every load."""
    import h5py

    rel, report = ds.build()
    with h5py.File(report.path, "r+") as f:
        if edit == "box":
            f["table"]["box"][0, 2] += 1.0
        elif edit == "label":
            f.attrs["labels"] = '["person","bus","goal"]'
        else:
            f["videos"]["pts"][3] += 1
    message = rf"release file .*{rel.release_id}\.h5 was changed after it was built: it records id '{rel.release_id}'"
    with pytest.raises(ReleaseCorruptError, match=message) as caught:
        Dataset.open(ds.path).release(rel.release_id)
    assert isinstance(caught.value, VidlabelError) and isinstance(caught.value, ValueError)
    with pytest.raises(ReleaseCorruptError, match="was changed after it was built"):
        read_release(report.path)
    with pytest.raises(ReleaseCorruptError, match="was changed after it was built"):
        ds.build()  # the same content again: the edited file is not passed off as this release
    assert read_release(report.path, verify=False).release_id == rel.release_id  # opt-out for forensics


def test_a_release_file_renamed_or_damaged_is_refused(ds: Dataset) -> None:
    rel, report = ds.build()
    ds.add_labels(["extra"])
    other, other_report = ds.build()
    Path(other_report.path).unlink()
    Path(other_report.path).write_bytes(Path(report.path).read_bytes())  # another release under this name
    with pytest.raises(ReleaseCorruptError, match=rf"records id '{rel.release_id}', not '{other.release_id}'"):
        Dataset.open(ds.path).release(other.release_id)
    data = bytearray(Path(report.path).read_bytes())
    Path(report.path).write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(ReleaseCorruptError, match=r"is damaged and cannot be read"):
        Dataset.open(ds.path).release(rel.release_id)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_building_the_same_content_again_repairs_a_damaged_release_file(ds: Dataset, damage: str) -> None:
    """A damaged release file's message says to build it again: that build writes it again, it is not refused."""
    from vidlabel.errors import VidlabelWarning

    rel, report = ds.build()
    path = Path(report.path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"\0" * 4096)
    with pytest.raises(ReleaseCorruptError, match=r"is damaged and cannot be read.*`vidlabel build`"):
        Dataset.open(ds.path).release(rel.release_id)
    again = Dataset.open(ds.path)
    with pytest.warns(VidlabelWarning, match=rf"release file .*{rel.release_id}\.h5 was damaged .* written again"):
        rebuilt, rebuilt_report = again.build()
    assert rebuilt.release_id == rel.release_id and not rebuilt_report.new and rebuilt.created == rel.created
    loaded = Dataset.open(ds.path).release(rel.release_id)  # reads, and its content gives its id
    assert tables_equal(loaded.table, rel.table) and loaded.labels == rel.labels and loaded.videos == rel.videos
    assert again.releases() == [rel.release_id] and not list(path.parent.glob("*.partial"))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        # a shape of 10**12 with no chunk written: a raw MemoryError of 7.28 TiB
        ("huge_column", r"ValueError: array '/table/start_frame' of shape \(1000000000000,\) declares 976562500 "
         r"chunks, the file holds 0"),
        ("huge_index", r"ValueError: array '/videos/pts' of shape \(1000000000000,\) declares 976562500 chunks"),
        # raw RecursionError and AttributeError
        ("deep_labels", r"RecursionError: maximum recursion depth exceeded"),
        ("views_list", r"AttributeError: 'list' object has no attribute 'items'"),
    ],
)  # fmt: skip
def test_a_release_file_declaring_what_it_does_not_hold_is_damaged(ds: Dataset, damage: str, message: str) -> None:
    import h5py

    rel, report = ds.build()
    with h5py.File(report.path, "r+") as f:
        if damage.startswith("huge"):
            name = "table/start_frame" if damage == "huge_column" else "videos/pts"
            del f[name]
            f.create_dataset(name, shape=(10**12,), dtype="int64", chunks=(1024,))
        elif damage == "deep_labels":
            f.attrs["labels"] = "[" * 100_000 + "]" * 100_000
        else:
            f.attrs["views"] = "[1]"
    with pytest.raises(ReleaseCorruptError, match=rf"release file .*{rel.release_id}\.h5 is damaged and cannot be "
                       rf"read \({message}.*\); build the release again"):  # fmt: skip
        Dataset.open(ds.path).release(rel.release_id)
