"""A store whose small arrays were edited after export never gives silently wrong targets (found by a fresh-user
pass): a label index outside the vocabulary, arrays of disagreeing lengths, and edits that keep every invariant
(CSR offsets shifted, a box moved, a marker turned inside out) are refused at a video's first read with a
StoreCorruptError naming the video and the store, and ``vidlabel verify`` lists them."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from tests.store_support import LABELS, make_dataset
from vidlabel import export, open_store
from vidlabel.cli import main
from vidlabel.errors import StoreCorruptError
from vidlabel.store import upload, verify_store
from vidlabel.store._layout import LABELS_KEY_ATTRS, labels_key
from vidlabel.torch_data import StoreFrames

N_FRAMES = 16  # video a: 16 stored rows (frames="all"), 14 regions, one marker (frames 10..15)
CHANGED = (
    r"the store was changed after export; restore it, or export again into an empty folder "
    r"\(`vidlabel verify` lists the damage\)"
)
LABELS_KEY = r"its arrays, attributes or the store's class names differ from those exported \(labels_key\)"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store_edits")
    ds = make_dataset(root, videos=("a", "b"), n_frames=N_FRAMES)
    for fmt in ("hdf5", "zarr"):
        export(ds, root / fmt, format=fmt, frames="all", kinds=("box", "mask", "marker"), progress=False)
    return root


def copy_store(stores: Path, fmt: str, tmp_path: Path) -> Path:
    """A private copy (real copies, no hard links) of a fixture store, to edit."""
    return Path(shutil.copytree(stores / fmt, tmp_path / fmt))


def edit(store: Path, video_id: str, name: str, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace a video's array ``name`` (``regions/...`` for one of a group) by ``change(array)``, with h5py or
    zarr-python as a user would (each rewrites its own checksum of the array)."""
    if (store / "store.h5").exists():
        with h5py.File(store / "videos" / f"{video_id}.h5", "r+") as f:
            new = change(f[name][()])
            del f[name]
            f[name] = new
        return
    import zarr

    arr = zarr.open_array(str(store / "videos" / video_id / name), mode="r+")
    new = change(arr[...])
    assert new.shape == arr.shape, "zarr edits here keep the shape"
    arr[...] = new


def drop_labels_key(store: Path, video_id: str) -> None:
    """Delete the video's ``labels_key`` attribute, as an editor who wants the check off would."""
    with h5py.File(store / "videos" / f"{video_id}.h5", "r+") as f:
        del f.attrs["labels_key"]


def positions(store: str | Path, video_id: str) -> list[int]:
    """The store's sample positions of ``video_id`` (from the index alone, no video's arrays read)."""
    fs = open_store(store)
    return np.flatnonzero(fs.rows[:, 0] == fs.video_ids.index(video_id)).tolist()


def assert_refused(store: str | Path, message: str) -> None:
    """Video a is refused on every path with ``message`` (a regex); video b still reads."""
    where = rf"video 'a' of store '{re.escape(str(store))}': (.*; )?"
    a, b = positions(store, "a"), positions(store, "b")
    with pytest.raises(StoreCorruptError, match=where + message + r".*" + CHANGED):
        open_store(store).sample(a[0])
    with pytest.raises(StoreCorruptError, match=where + message):
        StoreFrames(store)[a[-1]]
    with pytest.raises(StoreCorruptError, match=where + message):
        StoreFrames(store, frames="annotated")  # reads every video's arrays
    assert open_store(store).sample(b[0])["video_id"] == "b"


def assert_verify_names(store: str | Path, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(store)]) == 1
    out = capsys.readouterr().out
    assert re.search(rf"^problem: {re.escape(str(store))}: video 'a': {message}$", out, re.M), out
    assert "video 'b'" not in out


# -- 1: a label index outside the vocabulary -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "entry"), [("regions/label_index", 99, 0), ("segments/label_index", -1, 0)])
def test_a_label_index_outside_the_vocabulary_is_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, value: int, entry: int
) -> None:
    # before: numpy's IndexError from the sample's label lookup (99), or the marker silently dropped (-1,
    # which indexes the lookup's last entry), and verify said ok
    store = copy_store(stores, "hdf5", tmp_path)
    edit(store, "a", name, lambda arr: np.where(np.arange(arr.size) == entry, value, arr))
    message = (
        rf"{name} has 1 value outside \[0, {len(LABELS)}\) \(the store has {len(LABELS)} class names\), "
        rf"the first {value} at entry {entry}"
    )
    assert_refused(store, message)
    assert_verify_names(store, message, capsys)
    drop_labels_key(store, "a")  # found without the labels key too
    assert_refused(store, message)


# -- 2: arrays whose lengths disagree are named, not the arrays they disagree with -----------------------------


@pytest.mark.parametrize(
    ("name", "group", "length"),
    [
        ("timestamp_us", "per-row", N_FRAMES),
        ("frame_number", "per-row", N_FRAMES),
        ("regions/track_id", "per-region", 14),
        ("segments/start_frame", "segment", 1),
    ],
)
def test_a_shortened_array_is_named_and_no_other(
    stores: Path, tmp_path: Path, name: str, group: str, length: int
) -> None:
    store = copy_store(stores, "hdf5", tmp_path)
    edit(store, "a", name, lambda arr: arr[:-1])
    with pytest.raises(StoreCorruptError) as err:
        open_store(store).video_data("a")
    message = str(err.value)
    shape = rf"\({length - 1},\)"
    assert re.search(rf"{name} has shape {shape}: {length - 1} entries, the other {group} arrays {length}", message)
    assert message.count(" has shape ") == 1, message  # before: the 7 other segment arrays, not start_frame
    assert any(re.search(rf"video 'a': {name} has shape {shape}", p) for p in verify_store(store)["problems"])


def test_lengths_that_disagree_with_no_majority_are_all_listed(stores: Path, tmp_path: Path) -> None:
    store = copy_store(stores, "hdf5", tmp_path)
    edit(store, "a", "timestamp_us", lambda arr: arr[:-1])
    edit(store, "a", "is_annotated", lambda arr: arr[:-2])
    with pytest.raises(
        StoreCorruptError,
        match=r"video 'a' of store .*: the per-row arrays' lengths disagree \(frame_number \(16,\), "
        r"timestamp_us \(15,\), is_annotated \(14,\)\)",
    ):
        open_store(store).video_data("a")


# -- 3: edits that keep every invariant ------------------------------------------------------------------------


def shift_offsets(offsets: np.ndarray) -> np.ndarray:
    """Move the first region from row 0 to row 1: still a CSR offset array over the same rows and regions."""
    assert offsets[0] == 0 and offsets[1] == 1, offsets[:3]
    out = offsets.copy()
    out[1] = 0
    return out


def move_box(boxes: np.ndarray) -> np.ndarray:
    out = boxes.copy()
    out[3] += 5
    return out


def turn_inside_out(start: np.ndarray) -> np.ndarray:
    return start + N_FRAMES  # after the end frame


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("regions/row_offsets", shift_offsets),
        ("regions/bbox_xyxy", move_box),
        ("segments/start_frame", turn_inside_out),
    ],
    ids=["offsets", "box", "segment"],
)
def test_an_edit_that_keeps_the_invariants_is_refused(
    stores: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    change: Callable[[np.ndarray], np.ndarray],
) -> None:
    # before: every sample of the video read other boxes, or its frames lost their marker, and verify said ok
    store = copy_store(stores, "hdf5", tmp_path)
    edit(store, "a", name, change)
    assert_refused(store, LABELS_KEY)
    assert_verify_names(store, rf"(.*; )?{LABELS_KEY}", capsys)


def test_a_segment_that_ends_before_it_starts_is_refused_without_the_labels_key(stores: Path, tmp_path: Path) -> None:
    store = copy_store(stores, "hdf5", tmp_path)
    edit(store, "a", "segments/start_frame", turn_inside_out)
    drop_labels_key(store, "a")
    message = r"segments/start_frame is after segments/end_frame in 1 segment, the first \(entry 0\) frames 26\.\.15"
    assert_refused(store, message)
    assert any(re.search(message, p) for p in verify_store(store)["problems"])
    edit(store, "a", "segments/start_frame", lambda start: start - N_FRAMES)  # back
    edit(store, "a", "segments/end_index", lambda end: end + N_FRAMES)  # a row past the video's 16
    assert_refused(store, r"segments/start_index\.\.end_index is neither a range of rows in \[0, 16\) nor -1\.\.-1 "
                   r"\(none\) in 1 segment, the first \(entry 0\) rows 10\.\.31")  # fmt: skip


def test_a_moved_box_is_refused_in_a_zarr_store_and_at_a_url(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mem: str
) -> None:
    store = copy_store(stores, "zarr", tmp_path)
    url = f"{mem}/s"
    upload(store, url)
    b = positions(url, "b")
    assert open_store(url).sample(positions(url, "a")[0])["video_id"] == "a"  # untouched: the key is reproduced
    edit(store, "a", "regions/bbox_xyxy", move_box)
    assert_refused(store, LABELS_KEY)
    assert_verify_names(store, LABELS_KEY, capsys)
    upload(store, f"{mem}/edited")
    assert_refused(f"{mem}/edited", LABELS_KEY)
    assert_verify_names(f"{mem}/edited", LABELS_KEY, capsys)
    assert open_store(url).sample(b[0])["video_id"] == "b"


# -- what stays readable ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_the_labels_key_covers_every_attribute_the_export_gives_a_video(stores: Path, fmt: str) -> None:
    fs = open_store(stores / fmt)
    for video_id in fs.video_ids:
        attrs = fs.video_data(video_id).attrs
        # region_attributes only where the release's rows carry attributes (these carry none)
        assert set(attrs) - {"labels_key", "complete", "frames_unit"} == set(LABELS_KEY_ATTRS) - {"region_attributes"}
    assert verify_store(stores / fmt)["ok"]


def test_a_video_whose_labels_key_was_deleted_is_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: deleting the key turned the check off, so a box moved after that read silently (found by a
    # fresh-user pass); every export gives each video a labels_key, so a video without one was changed
    store = copy_store(stores, "hdf5", tmp_path)
    drop_labels_key(store, "a")
    edit(store, "a", "regions/bbox_xyxy", lambda boxes: boxes + 5)
    message = r"it has no labels_key attribute, which every export gives a video"
    assert_refused(store, message)
    assert_verify_names(store, message, capsys)


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_class_names_renamed_in_the_root_are_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: swapping two class names in the store's root relabelled every region of every video, and every
    # read and verify said nothing (found by a fresh-user pass); the labels key now covers the class names
    store = copy_store(stores, fmt, tmp_path)
    swapped = [LABELS[1], LABELS[0], *LABELS[2:]]
    if fmt == "hdf5":
        with h5py.File(store / "store.h5", "r+") as f:
            assert json.loads(f.attrs["class_names"]) == list(LABELS)
            f.attrs["class_names"] = json.dumps(swapped)
    else:
        meta_path = store / "zarr.json"
        meta = json.loads(meta_path.read_text())
        assert meta["attributes"]["class_names"] == list(LABELS)
        meta["attributes"]["class_names"] = swapped
        meta_path.write_text(json.dumps(meta))
    assert open_store(store).class_names == swapped
    for video_id in ("a", "b"):
        where = rf"video '{video_id}' of store '{re.escape(str(store))}': (.*; )?"
        with pytest.raises(StoreCorruptError, match=where + LABELS_KEY + r".*" + CHANGED):
            open_store(store).sample(positions(store, video_id)[0])
        with pytest.raises(StoreCorruptError, match=where + LABELS_KEY):
            StoreFrames(store)[positions(store, video_id)[0]]
    assert main(["verify", str(store)]) == 1
    out = capsys.readouterr().out
    assert all(re.search(rf"^problem: .*: video '{v}': {LABELS_KEY}$", out, re.M) for v in ("a", "b")), out


def test_a_video_keyed_as_before_the_class_names_were_covered_still_reads(stores: Path, tmp_path: Path) -> None:
    # stores exported before 2026-12-03 have keys made without the class names: they read as before, and an
    # edit of their arrays is still refused
    store = copy_store(stores, "hdf5", tmp_path)
    fs = open_store(store)
    data = fs.video_data("a")
    arrays = {"frame_number": data.frame_number, "timestamp_us": data.timestamp_us, "is_annotated": data.is_annotated}
    arrays.update({f"regions/{k}": v for k, v in data.regions.items()})
    arrays.update({f"segments/{k}": v for k, v in data.segments.items()})
    old_key = labels_key(data.attrs, arrays)
    assert old_key != data.attrs["labels_key"] == labels_key(data.attrs, arrays, LABELS)
    with h5py.File(store / "videos" / "a.h5", "r+") as f:
        f.attrs["labels_key"] = json.dumps(old_key)
    with h5py.File(store / "store.h5", "r+") as f:  # nor did their roots record the videos' keys
        summary = json.loads(f.attrs["videos"])
        for entry in summary.values():
            del entry["labels_key"]
        f.attrs["videos"] = json.dumps(summary)
    sample = open_store(store).sample(positions(store, "a")[0])
    assert sample["video_id"] == "a" and verify_store(store)["ok"]
    edit(store, "a", "regions/bbox_xyxy", lambda boxes: boxes + 5)
    assert_refused(store, LABELS_KEY)


def test_a_width_that_is_not_a_number_is_named_by_verify(stores: Path, tmp_path: Path) -> None:
    # before: verify said "cannot be read: invalid literal for int() with base 10: 'abc'" and left the video's
    # frames and chunks out of its count (found by a fresh-user pass)
    store = copy_store(stores, "hdf5", tmp_path)
    with h5py.File(store / "videos" / "a.h5", "r+") as f:
        f.attrs["width"] = json.dumps("abc")
    report = verify_store(store)
    problems = [p for p in report["problems"] if "video 'a'" in p]
    assert any(re.search(LABELS_KEY, p) for p in problems), problems
    assert any(re.search(r"video 'a': its width and height attributes are 'abc' and \d+, not whole numbers$", p)
               for p in problems), problems  # fmt: skip
    assert not any("cannot be read" in p for p in problems) and report["videos"] == 2, report


def set_root_attr(store: Path, fmt: str, name: str, value: object) -> None:
    """Write the store root's attribute ``name`` as each backend keeps it (HDF5: a JSON string; Zarr: zarr.json)."""
    if fmt == "hdf5":
        with h5py.File(store / "store.h5", "r+") as f:
            f.attrs[name] = json.dumps(value)
        return
    meta = json.loads((store / "zarr.json").read_text())
    meta["attributes"][name] = value
    (store / "zarr.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@pytest.mark.parametrize("names", ["person", [0, 1, 2], {"a": 1}])
def test_class_names_that_are_not_a_list_of_names_are_refused(
    stores: Path, tmp_path: Path, fmt: str, names: object
) -> None:
    # before: a string became a list of its characters, a dict its keys, and numbers crashed `vidlabel info`
    # with a Python TypeError (found by a fresh-user pass)
    store = copy_store(stores, fmt, tmp_path)
    set_root_attr(store, fmt, "class_names", names)
    message = (
        rf"frame store '{re.escape(str(store))}': its class_names {re.escape(repr(names))} are not a list of names"
    )
    with pytest.raises(StoreCorruptError, match=message + ": the store was changed after export"):
        open_store(store)
    with pytest.raises(StoreCorruptError, match=message):
        StoreFrames(store)
    assert any(
        p.endswith(f"its class_names {names!r} are not a list of names") for p in verify_store(store)["problems"]
    )


ROOT_VIDEOS_EDITS = {
    "frames-abc": (lambda videos: videos["b"].update(frames="abc"), "its videos entry of video 'b' has frames 'abc'"),
    "frames-none": (lambda videos: videos["b"].update(frames=None), "its videos entry of video 'b' has frames None"),
    "width-half": (lambda videos: videos["b"].update(width=2.5), "its videos entry of video 'b' has width 2.5"),
    "height-negative": (lambda videos: videos["a"].update(height=-3), "its videos entry of video 'a' has height -3"),
}


def assert_root_refused(store: Path, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Opening ``store`` (open_store, StoreFrames) and `vidlabel info` refuse its edited root with one message
    naming the store and ``problem``; `vidlabel verify` lists the problem."""
    message = (
        f"frame store '{store}': {problem}: the store was changed after export; restore it, or export again into "
        "an empty folder"
    )
    for call in (lambda: open_store(store), lambda: StoreFrames(store)):
        with pytest.raises(StoreCorruptError, match=f"^{re.escape(message)}$"):
            call()
    assert main(["info", str(store)]) == 1
    assert capsys.readouterr() == ("", f"vidlabel: error: {message}\n")
    assert f"{store}: {problem}" in verify_store(store)["problems"]


def edit_summary(
    stores: Path, fmt: str, tmp_path: Path, edit: tuple[Callable[[dict[str, Any]], object], str]
) -> tuple[Path, str]:
    """A copy of a fixture store whose root ``videos`` summary ``edit``'s function changed; and ``edit``'s phrase."""
    store = copy_store(stores, fmt, tmp_path)
    videos = open_store(store).describe()["videos"]
    change, phrase = edit
    change(videos)
    set_root_attr(store, fmt, "videos", videos)
    return store, phrase


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@pytest.mark.parametrize("case", list(ROOT_VIDEOS_EDITS))
def test_a_root_videos_count_that_is_not_a_number_is_refused_naming_the_video_and_field(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, case: str
) -> None:
    # before: `vidlabel info` summed the root's per-video counts with a bare int(): "frames": "abc" printed
    # "vidlabel: error: ValueError: invalid literal for int() with base 10: 'abc'" (no store, video or field),
    # None was a TypeError traceback, 2.5 and -3 were printed as counts; verify said nothing (an adversarial pass)
    store, phrase = edit_summary(stores, fmt, tmp_path, ROOT_VIDEOS_EDITS[case])
    problem = f"{phrase}, not a whole number >= 0"
    assert_root_refused(store, problem, capsys)


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_a_root_videos_attribute_that_is_not_a_mapping_is_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: `vidlabel info` died with an AttributeError traceback ('list' object has no attribute 'values')
    store = copy_store(stores, fmt, tmp_path)
    set_root_attr(store, fmt, "videos", ["a", "b"])
    assert_root_refused(store, "its videos attribute is list ['a', 'b'], not a mapping of video ids", capsys)


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@pytest.mark.parametrize("version", ["abc", None, 1.5, -1])
def test_a_format_version_that_is_not_a_number_is_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, version: object
) -> None:
    # before: open_store and verify read it with a bare int(): "abc" raised Python's ValueError ("invalid literal
    # for int()"), None a TypeError, and 1.5 was taken for version 1 (found by the adversarial pass of 2026-12-03)
    store = copy_store(stores, fmt, tmp_path)
    set_root_attr(store, fmt, "format_version", version)
    problem = f"its format_version {version!r} is not a whole number >= 0"
    assert_root_refused(store, problem, capsys)


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@pytest.mark.parametrize("columns", [1, 3, 4])
def test_an_index_that_is_not_n_by_2_is_refused(stores: Path, tmp_path: Path, fmt: str, columns: int) -> None:
    # before: numpy's "cannot reshape array" ValueError for 3 columns, and 4 columns read as twice the samples
    # with no error (found by a fresh-user pass)
    store = copy_store(stores, fmt, tmp_path)
    n = len(open_store(store))
    wide = np.zeros((n, columns), np.int64)
    if fmt == "hdf5":
        with h5py.File(store / "store.h5", "r+") as f:
            del f["index"]
            f["index"] = wide
    else:
        import zarr

        zarr.create_array(str(store / "index"), shape=wide.shape, dtype="int64", overwrite=True)[...] = wide
    message = (
        rf"/index of store '{re.escape(str(store))}' is int64 of shape \({n}, {columns}\), not \(N, 2\) integers "
        r"\(video, row\): the store was changed after export"
    )
    for call in (lambda: open_store(store), lambda: StoreFrames(store), lambda: verify_store(store)):
        with pytest.raises(StoreCorruptError, match=message):
            call()


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_another_videos_file_copied_in_its_place_is_refused(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: with videos/b copied over videos/a, every read of video 'a' returned b's frames and boxes labelled
    # as a's, and `vidlabel info` and `vidlabel verify` passed the store (the copy is consistent in itself: its
    # labels key, frames key and frames unit are b's own); found by a fresh-user pass
    store = copy_store(stores, fmt, tmp_path)
    if fmt == "hdf5":
        shutil.copyfile(store / "videos" / "b.h5", store / "videos" / "a.h5")
    else:
        shutil.rmtree(store / "videos" / "a")
        shutil.copytree(store / "videos" / "b", store / "videos" / "a")
    problem = "its file is the file of video 'b', not of video 'a'"
    with pytest.raises(StoreCorruptError, match=rf"^video 'a' of store '{re.escape(str(store))}': {problem}: "):
        open_store(store).video_data("a")
    assert open_store(store).video_data("b").video_id == "b"  # the other video still reads
    data = StoreFrames(store)
    with pytest.raises(StoreCorruptError, match=problem):
        [data[i] for i in range(len(data))]  # every sample: those of video 'a' among them
    assert main(["info", str(store)]) == 1
    assert problem in capsys.readouterr().err
    assert f"{store}: video 'a': {problem}" in verify_store(store)["problems"]


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_the_videos_file_of_another_release_copied_in_its_place_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: video 'a''s file from the export of a later release (one more box on frame 4) copied into the
    # store gave that box under this store's release, and info and verify passed the store: the copy is sound
    # in itself (its own labels key, the same frames unit, the same rows)
    ds = make_dataset(tmp_path / "data", videos=("a", "b"), n_frames=6)
    store = tmp_path / fmt
    export(ds, store, format=fmt, frames="all", progress=False)
    extra = (1.0, 2.0, 9.0, 11.0)
    ds.add_annotations([{"kind": "box", "label": "obj", "start_frame": 4, "box": extra}], "a")
    ds.build()
    later = tmp_path / "later"
    export(ds, later, format=fmt, frames="all", progress=False)
    position = positions(store, "a")[4]  # frames="all": row 4 is frame 4
    assert extra in [tuple(b) for b in open_store(later).sample(position)["boxes"].tolist()]
    assert extra not in [tuple(b) for b in open_store(store).sample(position)["boxes"].tolist()]
    if fmt == "hdf5":
        shutil.copyfile(later / "videos" / "a.h5", store / "videos" / "a.h5")
    else:
        shutil.rmtree(store / "videos" / "a")
        shutil.copytree(later / "videos" / "a", store / "videos" / "a")
    problem = r"its file holds labels '\w+', not the '\w+' the store's root records for it"
    with pytest.raises(
        StoreCorruptError, match=rf"^video 'a' of store '{re.escape(str(store))}': {problem}.*{CHANGED[:40]}"
    ):
        open_store(store).sample(position)
    assert open_store(store).video_data("b").video_id == "b"  # the other video still reads
    with pytest.raises(StoreCorruptError, match=problem):
        StoreFrames(store)[position]
    assert main(["info", str(store)]) == 1
    assert re.search(problem, capsys.readouterr().err)
    summary = r"its videos summary says video 'a' has labels_key '\w+', its file says '\w+'"
    assert any(re.search(summary, p) for p in verify_store(store)["problems"])


SUMMARY_EDITS = {
    "frames": (lambda videos: videos["b"].update(frames=1000), "its videos summary says video 'b' has frames 1000"),
    "width": (lambda videos: videos["a"].update(width=7), "its videos summary says video 'a' has width 7"),
    "hash": (
        lambda videos: videos["b"].update(content_hash="sha256:" + "0" * 64),
        "its videos summary says video 'b' has content_hash 'sha256:000",
    ),
    "no entry": (lambda videos: videos.pop("a"), "its videos summary has no entry for video 'a'"),
    "extra": (
        lambda videos: videos.update(c=dict(videos["a"])),
        "its videos summary lists video 'c', which the store does not hold",
    ),
}


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@pytest.mark.parametrize("case", list(SUMMARY_EDITS))
def test_a_root_summary_that_disagrees_with_the_videos_is_refused_by_info_and_verify(
    stores: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, case: str
) -> None:
    # before: `vidlabel info` printed the edited summary ("frames: 1030 stored", "videos: 0") and exited 0, and
    # verify said ok: the summary was only checked for its types (a fresh-user pass)
    store, phrase = edit_summary(stores, fmt, tmp_path, SUMMARY_EDITS[case])
    assert main(["info", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"vidlabel: error: frame store '{store}': {phrase}"), err
    assert err.endswith(": the store was changed after export; restore it, or export again into an empty folder\n")
    assert any(p.startswith(f"{store}: {phrase}") for p in verify_store(store)["problems"])
