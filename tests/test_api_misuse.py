"""Misuse of the public API is refused with a vidlabel error naming the value and what is allowed, never a
raw Python error or a silently wrong result; a refused call leaves the dataset unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.media import ClipTruth
from tests.store_support import make_dataset
from vidlabel import Dataset, FrameReader, FrameSamples, VideoMetadata, export, open_store
from vidlabel.errors import AnnotationError, OptionError, VidlabelWarning
from vidlabel.readplan import ReadPlan
from vidlabel.store import StoreSamples


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("misuse")
    ds = make_dataset(root, n_frames=12)
    export(ds, root / "store", progress=False)
    return root, ds


# -- label_offset ---------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [-1, -100])
def test_negative_label_offset_is_refused_everywhere(world: tuple[Path, Dataset], offset: int) -> None:
    # A negative offset turned class 0 into -1 (or -100: CrossEntropyLoss's ignore_index) without a word.
    root, ds = world
    store = open_store(root / "store")
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        FrameSamples(ds, label_offset=offset)
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        StoreSamples(store, label_offset=offset)
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        store.select(label_offset=offset)
    assert FrameSamples(ds, label_offset=0).describe()["options"]["label_offset"] == 0


# -- a Dataset where a path is expected -----------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 3, 2.5, b"ds"], ids=repr)
def test_dataset_open_create_is_dataset_refuse_what_is_no_path(world: tuple[Path, Dataset], bad: object) -> None:
    # Each was a raw TypeError from pathlib ("expected str, bytes or os.PathLike object").
    with pytest.raises(OptionError, match=rf"Dataset\.open takes a dataset folder path .*, got {re.escape(repr(bad))}"):
        Dataset.open(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Dataset\.open takes a dataset folder path"):
        Dataset(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Dataset\.create takes a dataset folder path"):
        Dataset.create(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Dataset\.is_dataset takes a dataset folder path"):
        Dataset.is_dataset(bad)  # type: ignore[arg-type]


def test_dataset_open_of_an_open_dataset_or_a_store_says_what_to_pass(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    with pytest.raises(OptionError, match=r"got Dataset\(.*\) \(this Dataset is already open: use it as it is"):
        Dataset.open(ds)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Dataset\.create takes a dataset folder path .*got Dataset\("):
        Dataset.create(ds)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"Dataset\.open takes a dataset folder path .*got FrameStore\("):
        Dataset.open(open_store(root / "store"))  # type: ignore[arg-type]
    assert Dataset.open(ds.path).labels() == ds.labels() and Dataset.is_dataset(ds.path)


# -- sizes and crops that are not integers --------------------------------------------------------


@pytest.mark.parametrize("size", [(True, 2), (1.5, 2), (32, 24.0), ("32", "24")], ids=repr)
def test_export_output_size_that_is_not_two_integers_is_refused(
    world: tuple[Path, Dataset], tmp_path: Path, size: tuple[object, object]
) -> None:
    # (True, 2) and (1.5, 2) wrote a store of 1-pixel-wide frames; ("32", "24") was taken as 32x24.
    _, ds = world
    with pytest.raises(
        OptionError, match=rf"output_size must be 2 integers \(width, height\), got {re.escape(repr(size))}"
    ):
        export(ds, tmp_path / "out", output_size=size, progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("crop", "output_size"), [((0, 0, 10.5, 10), None), ((True, 0, 10, 10), None), ((0, 0, 10, 10), (8.9, 8))], ids=repr
)
def test_add_view_with_a_crop_or_size_that_is_not_integers_is_refused(
    world: tuple[Path, Dataset], crop: tuple[object, ...], output_size: tuple[object, ...] | None
) -> None:
    # (0, 0, 10.5, 10) was stored as (0, 0, 10, 10) and (True, 0, 10, 10) as (1, 0, 10, 10), without a word.
    _, ds = world
    before = ds.views()
    with pytest.raises(AnnotationError, match=r"view 'odd': (crop must be 4 integers|output_size must be 2 integers)"):
        ds.add_view("odd", crop, output_size)  # type: ignore[arg-type]
    assert ds.views() == before


# -- annotation ids that are not integers ---------------------------------------------------------


@pytest.mark.parametrize("bad", [1.5, True, "1", np.float64(1.0)], ids=repr)
def test_set_status_and_delete_refuse_ids_that_are_not_integers(tmp_path: Path, bad: object) -> None:
    # int() took each of these for annotation 1: set_status([1.5], ...) approved it, delete deleted it.
    ds = make_dataset(tmp_path, n_frames=6)
    first = ds.annotations()[0]
    assert first["annotation_id"] == 1 and first["status"] == "unreviewed"
    before = ds.annotations()
    with pytest.raises(AnnotationError, match=rf"set_status: ids must be integers, got {re.escape(repr(bad))}"):
        ds.set_status([bad], "approved")  # type: ignore[list-item]
    with pytest.raises(AnnotationError, match=rf"delete_annotations: ids must be integers, got {re.escape(repr(bad))}"):
        ds.delete_annotations([2, bad])  # type: ignore[list-item]
    with pytest.raises(AnnotationError, match=r"set_status: ids must be a list of integer annotation ids, got '12'"):
        ds.set_status("12", "approved")  # type: ignore[arg-type]
    assert ds.annotations() == before
    ds.set_status(np.array([1]), "approved")
    assert ds.annotations()[0]["status"] == "approved"


# -- video metadata -------------------------------------------------------------------------------


def _meta(**changes: object) -> dict[str, object]:
    return {"video_id": "extra", "frame_count": 10, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48,
            "sources": [{"uri": "extra.mp4"}], **changes}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"frame_count": 1.5}, r"frame_count of video 'extra' must be an integer, got 1\.5"),
        ({"width": True}, r"width of video 'extra' must be an integer, got True"),
        (
            {"sources": "extra.mp4"},
            r"sources of video 'extra' must be a list of \{'uri': \.\.\.\} dicts, got 'extra.mp4'",
        ),
        ({"video_id": "a/b"}, r"video_id must be a non-empty string without '/', got 'a/b'"),
        ({"frame_count": -1}, r"frame_count must be >= 0 for video 'extra', got -1"),
        ({"fps": {"num": 0, "den": 1}}, r"fps of video 'extra' must be positive"),
    ],
    ids=repr,
)
def test_add_video_refuses_bad_metadata_with_a_vidlabel_error(
    world: tuple[Path, Dataset], changes: dict[str, object], match: str
) -> None:
    # frame_count=1.5 was stored as 1, width=True as 1 and sources="extra.mp4" as five one-letter files;
    # the rest were raw ValueErrors.
    _, ds = world
    before = [v.video_id for v in ds.videos()]
    with pytest.raises(AnnotationError, match=match):
        ds.add_video(_meta(**changes))
    with pytest.raises(AnnotationError, match=match):
        VideoMetadata(**_meta(**changes))  # type: ignore[arg-type]
    assert [v.video_id for v in ds.videos()] == before


def test_add_video_of_something_that_is_no_metadata_is_refused(world: tuple[Path, Dataset]) -> None:
    _, ds = world
    with pytest.raises(AnnotationError, match=r"expected a VideoMetadata or a dict of its fields, got NoneType"):
        ds.add_video(None)  # type: ignore[arg-type]
    with pytest.raises(AnnotationError, match=r"VideoMetadata fields \['frame_count'\] are missing"):
        ds.add_video({k: v for k, v in _meta().items() if k != "frame_count"})


# -- FrameSamples.sample with an image of another size or dtype -----------------------------------


@pytest.mark.parametrize(
    ("view_id", "image"),
    [
        (None, np.zeros((10, 10, 3), np.uint8)),
        (None, np.zeros((48, 64, 3), np.float32)),
        (None, np.zeros((64, 48, 3), np.uint8)),
        ("left", np.zeros((40, 40, 3), np.uint8)),
        ("left", np.zeros((20, 20, 3), np.int64)),
    ],
    ids=["10x10", "float32", "transposed", "view-40x40", "view-int64"],
)
def test_sample_refuses_an_image_that_is_not_the_videos_size_or_uint8(
    world: tuple[Path, Dataset], view_id: str | None, image: np.ndarray
) -> None:
    # A 10x10 or float32 image was taken as it was: boxes in 64x48 pixels on a 10x10 picture.
    _, ds = world
    samples = FrameSamples(ds, view_id=view_id)
    with pytest.raises(
        OptionError,
        match=rf"image must be \(H, W, 3\) uint8 RGB, got shape {re.escape(str(image.shape))} {image.dtype} "
        r"for video 'cam' frame 2; allowed: (48x64|20x20 or 48x64) uint8",
    ):
        samples.sample("cam", 2, image)
    width, height = samples.image_size("cam")
    for shape in [(48, 64, 3)] if view_id is None else [(20, 20, 3), (48, 64, 3)]:
        assert samples.sample("cam", 2, np.zeros(shape, np.uint8))["image"].shape == (height, width, 3)


# -- FrameReader(untrusted_frames=) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("ranges", "match"),
    [
        ([(5, 2)], r"untrusted_frames range \(5, 2\) of video 'clip' must satisfy 0 <= first <= last"),
        ([(-1, 2)], r"untrusted_frames range \(-1, 2\) of video 'clip' must satisfy 0 <= first <= last"),
        ([(85, 200)], r"untrusted_frames range \(85, 200\) of video 'clip' .* out of range: frames are \[0, 48\)"),
        ([(40, 48)], r"untrusted_frames range \(40, 48\) of video 'clip' .* out of range: frames are \[0, 48\)"),
        ([(1.5, 3)], r"untrusted_frames of video 'clip' must be \(first, last\) integer frame pairs, got \(1\.5, 3\)"),
        ([(True, 3)], r"must be \(first, last\) integer frame pairs, got \(True, 3\)"),
        ([4], r"must be \(first, last\) integer frame pairs, got 4"),
        ("12", r"untrusted_frames of video 'clip' must be \(first, last\) frame pairs, got '12'"),
    ],
    ids=repr,
)
def test_frame_reader_refuses_untrusted_ranges_that_are_inverted_or_outside_the_video(
    clip: ClipTruth, ranges: object, match: str
) -> None:
    # (5, 2) marked no frame and (85, 200) frames the video does not have, without a word.
    with pytest.raises(OptionError, match=match):
        FrameReader(clip.path, untrusted_frames=ranges)  # type: ignore[arg-type]
    with FrameReader(clip.path, untrusted_frames=[(2, 5), (47, 47)]) as reader:
        assert reader.untrusted_frames == ((2, 5), (47, 47))


# -- ReadPlan.from_arrays -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codes", "frames", "match"),
    [
        (
            np.array([0, 0]),
            np.array([1.7, 3.0]),
            r"frames must be a 1-D array of integers, got dtype float64 \(first value 1\.7\)",
        ),
        (np.array([0.0]), np.array([1]), r"video_codes must be a 1-D array of integers, got dtype float64"),
        (np.array([0]), np.array([True]), r"frames must be a 1-D array of integers, got dtype bool"),
        (np.array([0]), np.array(["3"]), r"frames must be a 1-D array of integers, got dtype <U1 \(first value '3'\)"),
        (
            np.zeros((2, 2), int),
            np.zeros((2, 2), int),
            r"video_codes must be a 1-D array of integers, got an array of shape \(2, 2\)",
        ),
        (
            np.array([0, 0]),
            np.array([[1], [2]]),
            r"frames must be a 1-D array of integers, got an array of shape \(2, 1\)",
        ),
        (np.array([0, 1]), np.array([1, 2]), r"video_codes must lie in \[0, 1\), got 1"),
    ],
    ids=["float-frames", "float-codes", "bool-frames", "str-frames", "2d-codes", "2d-frames", "code-range"],
)
def test_read_plan_from_arrays_refuses_non_integer_or_not_1d_columns(
    codes: np.ndarray, frames: np.ndarray, match: str
) -> None:
    # Frame 1.7 was read as frame 1 and 2-D arrays were flattened, without a word.
    with pytest.raises(OptionError, match=match):
        ReadPlan.from_arrays(("v",), codes, frames, indexes={}, seed=0)
    with pytest.raises(OptionError, match=r"video_ids must be a sequence of video ids, got the single string 'ab'"):
        ReadPlan.from_arrays("ab", np.array([0]), np.array([1]), indexes={}, seed=0)  # type: ignore[arg-type]
    plan = ReadPlan.from_arrays(("v",), np.array([0, 0], np.uint8), [3, 1], indexes={}, seed=0)  # type: ignore[arg-type]
    assert plan.chunks[0].frames.tolist() == [1, 3]
    assert ReadPlan.from_arrays(("v",), [], [], indexes={}, seed=0).summary()["samples"] == 0  # type: ignore[arg-type]


# -- roots: one folder alone, or a list of folders ------------------------------------------------


def test_one_root_given_alone_is_one_folder_everywhere(tmp_path: Path) -> None:
    # Dataset.validate(roots="/data") searched the folders '/', 'd', 'a', ... (one per letter).
    ds = make_dataset(tmp_path, n_frames=6)
    moved = tmp_path / "moved"
    moved.mkdir()
    (tmp_path / "cam.mp4").rename(moved / "cam.mp4")
    assert [p.code for p in ds.validate()] == ["missing_video_file"]
    for roots in (str(moved), moved, [str(moved)]):
        assert [p.code for p in ds.validate(roots=roots)] == []  # type: ignore[arg-type]
        samples = FrameSamples(ds, roots=roots)  # type: ignore[arg-type]
        assert samples.describe()["options"]["roots"] == [str(moved)]
        with samples.reader("cam") as reader:
            assert reader.read(0).shape == (48, 64, 3)
    export(ds, tmp_path / "store", roots=str(moved), progress=False)
    assert len(open_store(tmp_path / "store")) > 0


@pytest.mark.parametrize("bad", [None, 3, b"/data", ["/data", None], [Path("/data"), 3.5]], ids=repr)
def test_roots_that_are_no_folder_paths_are_refused_everywhere(
    world: tuple[Path, Dataset], tmp_path: Path, bad: object
) -> None:
    # [None] searched a folder named 'None'; None and 3 were raw TypeErrors.
    _, ds = world
    match = r"roots must be a folder path or a list of folder paths, got "
    with pytest.raises(OptionError, match=match):
        FrameSamples(ds, roots=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=match):
        ds.validate(roots=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=match):
        export(ds, tmp_path / "out", roots=bad, progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


# -- Dataset.annotations(start=, stop=) -----------------------------------------------------------


@pytest.mark.parametrize("bad", [True, 3.5, "a", "3", 2**70], ids=repr)
def test_annotations_refuses_start_or_stop_that_is_not_an_integer(world: tuple[Path, Dataset], bad: object) -> None:
    # start=True was frame 1 and 3.5 compared as 3.5; "a" was a NumPy UFuncTypeError.
    _, ds = world
    with pytest.raises(AnnotationError, match=r"annotations: start must (be an integer frame number or None|lie in)"):
        ds.annotations(start=bad)  # type: ignore[arg-type]
    with pytest.raises(AnnotationError, match=rf"annotations: stop must .*, got {re.escape(repr(bad))}"):
        ds.annotations(stop=bad)  # type: ignore[arg-type]


def test_annotations_takes_numpy_integers_for_start_and_stop(world: tuple[Path, Dataset]) -> None:
    # np.int64(3) reached sqlite as 8 bytes (a blob) and matched no row at all.
    _, ds = world
    want = [a["annotation_id"] for a in ds.annotations(start=3, stop=8)]
    assert want and [a["annotation_id"] for a in ds.annotations(start=np.int64(3), stop=np.int32(8))] == want


# -- labels with control characters ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "at"), [("a\nb", 1), ("car\tred", 3), ("x\x00", 1), ("a\rb", 1), ("a\u2028b", 1)], ids=repr
)
def test_add_labels_refuses_a_label_with_a_control_character(tmp_path: Path, name: str, at: int) -> None:
    # "a\nb" was stored, and split into two lines in the export formats' CSV/TXT label files.
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["car"])
    with pytest.raises(
        AnnotationError,
        match=rf"label 1 is {re.escape(repr(name))}, which holds the control character {re.escape(repr(name[at]))} "
        rf"at position {at}; allowed: a non-empty string without leading or trailing spaces or control characters",
    ):
        ds.add_labels(["person", name])
    assert ds.labels() == ["car"]
    assert ds.add_labels(["café", "a b"]) == ["car", "café", "a b"]


# -- one kind given alone -------------------------------------------------------------------------


def test_export_takes_one_kind_alone_as_frame_samples_does(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    # export(kinds="box") read the string letter by letter: "unknown kind 'b'".
    _, ds = world
    with pytest.warns(VidlabelWarning, match=r"1 mask annotations lie on frames .*kinds=\['box'\]"):
        export(ds, tmp_path / "box", kinds="box", progress=False)
    assert len(open_store(tmp_path / "box")) == len(FrameSamples(ds, kinds="box")) < len(FrameSamples(ds))
    with pytest.raises(OptionError, match=r"unknown kind 'boxes' in kinds=\['boxes'\]; allowed: box, mask, marker"):
        export(ds, tmp_path / "bad", kinds="boxes", progress=False)
    with pytest.raises(OptionError, match=r"unknown kind 'boxes'.*; allowed: box, mask, marker"):
        FrameSamples(ds, kinds="boxes")  # type: ignore[arg-type]
    assert not (tmp_path / "bad").exists()


# -- cache_bytes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, 1.5, "100", -1], ids=repr)
def test_cache_bytes_is_checked_alike_by_open_store_and_the_torch_datasets(
    world: tuple[Path, Dataset], bad: object
) -> None:
    # StoreFrames(cache_bytes=True) made a 1-byte cache (int(True)) where open_store refused True.
    from vidlabel.torch_data import StoreFrames, StoreStream

    root, _ = world
    match = rf"cache_bytes must be an integer >= 0, got {re.escape(repr(bad))}"
    with pytest.raises(OptionError, match=match):
        open_store(root / "store", cache_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=match):
        StoreFrames(root / "store", cache_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=match):
        StoreFrames(open_store(root / "store"), cache_bytes=bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=match):
        StoreStream(root / "store", cache_bytes=bad)  # type: ignore[arg-type]
    assert StoreFrames(root / "store", cache_bytes=np.int64(2**20)).store.cache_bytes == 2**20


# -- True/False options given anything else -------------------------------------------------------


def _flag_calls(root: Path, ds: Dataset, clip_path: Path) -> dict[str, Callable[[object], object]]:
    from vidlabel.probe import probe, read_frame_index

    plan = ReadPlan([("cam", 1), ("cam", 5)], indexes={}, seed=0)
    return {
        "clip": lambda v: ds.add_annotations([], "cam", clip=v),  # type: ignore[arg-type]
        "drop_last (iter_plan)": lambda v: FrameSamples(ds).iter_plan(plan, world_size=2, num_shards=2, drop_last=v),  # type: ignore[arg-type]
        "drop_last (shard)": lambda v: plan.shard(0, 0, 2, world_size=2, drop_last=v),  # type: ignore[arg-type]
        "drop_last (shard_sizes)": lambda v: plan.shard_sizes(0, 1, drop_last=v),  # type: ignore[arg-type]
        "check_hash": lambda v: FrameReader(clip_path, check_hash=v),  # type: ignore[arg-type]
        "with_index": lambda v: probe(clip_path, with_index=v),  # type: ignore[arg-type]
        "hash_file": lambda v: read_frame_index(clip_path, hash_file=v),  # type: ignore[arg-type]
        "all_rows": lambda v: StoreSamples(open_store(root / "store"), all_rows=v),  # type: ignore[arg-type]
    }


@pytest.mark.parametrize(
    "call",
    ["clip", "drop_last (iter_plan)", "drop_last (shard)", "drop_last (shard_sizes)", "check_hash", "with_index",
     "hash_file", "all_rows"],
)  # fmt: skip
@pytest.mark.parametrize("bad", ["no", 1, None], ids=repr)
def test_true_false_options_refuse_anything_else(
    world: tuple[Path, Dataset], clip: ClipTruth, call: str, bad: object
) -> None:
    # Each took its value's truth: clip="no" clipped, with_index="false" attached the index.
    root, ds = world
    name = call.split(" ")[0]
    before = ds.annotations()
    with pytest.raises(OptionError, match=rf"{name} must be True or False, got {re.escape(repr(bad))}"):
        _flag_calls(root, ds, clip.path)[call](bad)
    assert ds.annotations() == before
    _flag_calls(root, ds, clip.path)[call](False)


# -- readers and probe given something that is no path or no frame list ---------------------------


@pytest.mark.parametrize("bad", [None, 3, b"clip.mp4"], ids=repr)
def test_readers_and_probe_refuse_what_is_no_path(world: tuple[Path, Dataset], bad: object) -> None:
    # Each was a raw TypeError from pathlib ("expected str, bytes or os.PathLike object").
    from vidlabel.frames import CachedReader
    from vidlabel.probe import probe, read_frame_index

    got = re.escape(repr(bad))
    with pytest.raises(OptionError, match=rf"FrameReader takes a video file path \(str or os.PathLike\), got {got}"):
        FrameReader(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=rf"CachedReader takes a video file \(or a FrameReader\) path .*, got {got}"):
        CachedReader(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=rf"probe takes a video file path .*, got {got}"):
        probe(bad)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=rf"read_frame_index takes a video file path .*, got {got}"):
        read_frame_index(bad)  # type: ignore[arg-type]


def test_frame_reader_of_a_dataset_says_how_to_read_a_registered_video(world: tuple[Path, Dataset]) -> None:
    _, ds = world
    with pytest.raises(OptionError, match=r"got Dataset\(.*\) \(for a registered video: FrameReader\.for_video\("):
        FrameReader(ds)  # type: ignore[arg-type]


def test_probe_refuses_a_bad_video_id_and_method_before_reading(clip: ClipTruth) -> None:
    from vidlabel.probe import probe, read_frame_index

    with pytest.raises(AnnotationError, match=r"video_id must be a non-empty string without '/', got 'a/b'"):
        probe(clip.path, video_id="a/b")
    with pytest.raises(OptionError, match=r"method must be 'auto', 'demux' or 'decode', got 'nope'"):
        read_frame_index(clip.path, method="nope")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, 5, "12"], ids=repr)
def test_read_many_and_iter_frames_refuse_what_is_no_frame_list(clip: ClipTruth, bad: object) -> None:
    # read_many(None) / read_many(5) / iter_frames(5) were raw TypeErrors ("'int' object is not iterable").
    from vidlabel.errors import SampleIndexTypeError
    from vidlabel.frames import CachedReader

    hint = r" \(for one frame: read\(5\)\)" if bad == 5 else ""
    with FrameReader(clip.path) as reader, CachedReader(clip.path) as cached:
        for r in (reader, cached):
            with pytest.raises(
                SampleIndexTypeError,
                match=rf"read_many takes a sequence of frame numbers, got {re.escape(repr(bad))} for video 'clip'{hint}",
            ):
                r.read_many(bad)  # type: ignore[arg-type]
            if bad is not None:
                with pytest.raises(SampleIndexTypeError, match=r"iter_frames takes a sequence of frame numbers"):
                    list(r.iter_frames(bad))  # type: ignore[arg-type]
            with pytest.raises(SampleIndexTypeError, match=r"frame numbers must be integers, got 1\.5 \(float\)"):
                r.read_many([1, 1.5])  # type: ignore[list-item]
        assert len(reader.read_many(np.array([3, 1]))) == 2
    with pytest.raises(OptionError, match=r"capacity must be >= 1 \(an integer\), got 2\.5"):
        CachedReader(clip.path, capacity=2.5)  # type: ignore[arg-type]


# -- stores given something that is no store, rows that are no row numbers ------------------------


def test_store_functions_refuse_what_is_no_store_or_no_row(world: tuple[Path, Dataset]) -> None:
    # Each was a raw TypeError / AttributeError / IndexError; read_row(v, True) read row 1 and
    # targets_row(v, -1) the targets of the last row.
    from vidlabel.errors import FrameOutOfRangeError, SampleIndexTypeError
    from vidlabel.store import find_stores

    root, ds = world
    store = open_store(root / "store")
    n = len(store.video_data("cam").frame_number)
    with pytest.raises(OptionError, match=r"find_stores takes a store folder path .*, got None"):
        find_stores(None)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"StoreSamples takes a FrameStore, got None"):
        StoreSamples(None)
    with pytest.raises(OptionError, match=r"StoreSamples takes a FrameStore, got Dataset\(.*\) \(for a Dataset: "):
        StoreSamples(ds)
    with pytest.raises(OptionError, match=r"StoreSamples takes a FrameStore, got '.*store' \(open a store folder"):
        StoreSamples(str(root / "store"))
    samples = StoreSamples(store)
    for row in (n, -1):
        with pytest.raises(FrameOutOfRangeError, match=rf"row {row} out of range \[0, {n}\) of video 'cam' in store"):
            samples.targets_row("cam", row)
    with pytest.raises(SampleIndexTypeError, match=r"row numbers must be integers, got 1\.5 \(float\) for video 'cam'"):
        samples.targets_row("cam", 1.5)  # type: ignore[arg-type]
    with pytest.raises(SampleIndexTypeError, match=r"read_rows takes a sequence of row numbers, got None"):
        store.read_rows("cam", None)  # type: ignore[arg-type]
    with pytest.raises(SampleIndexTypeError, match=r"row numbers must be integers, got True \(bool\) for video 'cam'"):
        store.read_row("cam", True)
    with pytest.raises(SampleIndexTypeError, match=r"row numbers must be integers, got 1\.5"):
        store.read_rows("cam", [0, 1.5])  # type: ignore[list-item]
    assert np.array_equal(store.read_row("cam", np.int64(1)), store.read_rows("cam", [1])[0])
    assert store.get_frame("nope", 0) is None  # documented: None for a video the store does not hold


@pytest.mark.parametrize("bad", [1.5, np.float64(1.0), "1", True], ids=repr)
def test_get_frame_and_row_of_refuse_a_frame_number_that_is_not_an_integer(
    world: tuple[Path, Dataset], bad: object
) -> None:
    # get_frame("cam", 1.5) returned the stored frame 1 (and row_of its row): a float or string was cut to an int.
    from vidlabel.errors import SampleIndexTypeError

    root, _ = world
    store = open_store(root / "store")
    first = int(store.video_data("cam").frame_number[1])
    assert store.row_of("cam", first) == 1 and store.get_frame("cam", np.int64(first)) is not None
    for call in (store.get_frame, store.row_of):
        with pytest.raises(SampleIndexTypeError, match=r"frame numbers must be integers, got .* for video 'cam'"):
            call("cam", bad)  # type: ignore[arg-type]


# -- export(release=) and collate_frames given the wrong thing ------------------------------------


@pytest.mark.parametrize("bad", [3, 1.5, ["latest"]], ids=repr)
def test_export_refuses_a_release_that_is_no_release_id(
    world: tuple[Path, Dataset], tmp_path: Path, bad: object
) -> None:
    # release=3 was a raw AttributeError ("'int' object has no attribute 'release_id'").
    _, ds = world
    with pytest.raises(
        OptionError, match=rf"release must be a release id, 'latest', None or a Release, got {re.escape(repr(bad))}"
    ):
        export(ds, tmp_path / "out", release=bad, progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_collate_frames_refuses_what_is_no_list_of_samples(world: tuple[Path, Dataset]) -> None:
    # collate_frames(None) / collate_frames([3]) were raw TypeErrors ("object of type 'NoneType' has no len()").
    from vidlabel.torch_data import collate_frames

    with pytest.raises(OptionError, match=r"collate_frames takes a sequence of sample dicts, got NoneType"):
        collate_frames(None)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"collate_frames takes a sequence of sample dicts; sample 0 is 3 \(int\)"):
        collate_frames([3])  # type: ignore[list-item]
    with pytest.raises(OptionError, match=r"got dict \(wrap one sample in a list: \[sample\]\)"):
        collate_frames({"frame_index": 1})  # type: ignore[arg-type]
    assert collate_frames([{"frame_index": 1}, {"frame_index": 2}])["frame_index"].tolist() == [1, 2]
