"""Stores are untrusted input (a store someone sent you): metadata crafted to make a read allocate what it
declares, or to read one way for vidlabel and another for a careful reader, is refused when the store is
opened, before anything is allocated, with a StoreCorruptError naming the store, the file or array and the
valid range. Each store is made by the project's own export and then edited so that it passes every other
check (the video's width and height, its labels key, the root's summary agree with the edit)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import h5py
import hdf5plugin
import numpy as np
import pytest

from tests.services import Bucket
from tests.store_support import make_dataset
from vidlabel import export, open_store
from vidlabel.errors import StoreCorruptError
from vidlabel.spec import MAX_FRAME_COUNT, MAX_VIDEO_SIDE
from vidlabel.store import backend_for, upload, verify_store
from vidlabel.store._layout import REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS, labels_key

N_FRAMES = 16
CHUNK = 4
CHANGED = r"the store was changed after export; restore it, or export again into an empty folder"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store_crafted")
    ds = make_dataset(root, videos=("a",), n_frames=N_FRAMES)
    for fmt in ("hdf5", "zarr"):  # compressed, CHUNK frames a chunk: 4 chunks of 64x48 frames
        export(ds, root / fmt, format=fmt, frames="all", codec="zstd", chunk_frames=CHUNK, progress=False)
    export(ds, root / "hdf5-none", format="hdf5", frames="all", progress=False)  # uncompressed, a frame a chunk
    return root


def copy_store(exported: Path, fmt: str, tmp_path: Path) -> Path:
    """A private copy (real copies, no hard links) of a fixture store, to edit."""
    return Path(shutil.copytree(exported / fmt, tmp_path / fmt))


def _edit_json(path: Path, change: Any) -> None:
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta))


def agree(store: Path, video_id: str, height: int, width: int) -> None:
    """Make video ``video_id``'s width and height attributes, its labels key (recomputed with the store's own
    function) and the root's summary of it say ``width`` x ``height``: a crafted store that passes every check
    but the one under test."""
    backend = backend_for(store)
    root_attrs, _ = backend.read_root()
    video = backend.open_video(video_id)
    try:
        names = [*VIDEO_ARRAYS, *(f"regions/{n}" for n in REGION_FIELDS), *(f"segments/{n}" for n in SEGMENT_FIELDS)]
        arrays = {name: video.array(name) for name in names}
        attrs = {**video.attrs, "width": width, "height": height}
    finally:
        video.close()
    key = labels_key(attrs, arrays, root_attrs["class_names"])
    changes = {"width": width, "height": height, "labels_key": key}
    if (store / "store.h5").exists():
        with h5py.File(store / "videos" / f"{video_id}.h5", "r+") as f:
            for name, value in changes.items():
                f.attrs[name] = json.dumps(value)
        with h5py.File(store / "store.h5", "r+") as f:
            videos = json.loads(f.attrs["videos"])
            videos[video_id].update(changes)
            f.attrs["videos"] = json.dumps(videos)
        return
    _edit_json(store / "videos" / video_id / "zarr.json", lambda m: m["attributes"].update(changes))
    _edit_json(store / "zarr.json", lambda m: m["attributes"]["videos"][video_id].update(changes))


def hdf5_frames_file(store: Path, video_id: str) -> Path:
    with h5py.File(store / "videos" / f"{video_id}.h5", "r") as f:
        return (store / "videos" / f.get("frames", getlink=True).filename).resolve()


def claim_frames(store: Path, shape: tuple[int, int, int, int], chunk_frames: int = CHUNK) -> None:
    """Edit video a's frames array to declare ``shape`` in chunks of ``chunk_frames`` frames (no pixel
    written: a read allocates a chunk before it decodes one), and the rest of the store to agree."""
    if (store / "store.h5").exists():
        with h5py.File(hdf5_frames_file(store, "a"), "r+") as f:
            del f["frames"]
            f.create_dataset(
                "frames", shape=shape, dtype="uint8", chunks=(chunk_frames, *shape[1:]), maxshape=(None, *shape[1:]),
                **hdf5plugin.Zstd(),
            )  # fmt: skip
            f.attrs["chunk_frames"] = json.dumps(chunk_frames)
    else:

        def change(meta: dict[str, Any]) -> None:
            meta["shape"] = list(shape)
            meta["chunk_grid"]["configuration"]["chunk_shape"] = [chunk_frames, *shape[1:]]

        _edit_json(store / "videos" / "a" / "frames" / "zarr.json", change)
    agree(store, "a", shape[1], shape[2])


def place(store: Path, where: str, s3_bucket: Bucket | None) -> tuple[str, dict[str, Any] | None]:
    """The store to open: the folder itself, or for ``where`` "url" its upload to a fresh S3 bucket (moto)."""
    if where != "url":
        return str(store), None
    assert s3_bucket is not None
    url = s3_bucket.url("store")
    upload(store, url, storage_options=s3_bucket.storage_options)
    return url, s3_bucket.storage_options


def frames_name(fmt: str, store: Path, opened: str) -> str:
    """The frames file or array an error names (a regex)."""
    if fmt == "hdf5":
        return rf"frames file '{re.escape(str(hdf5_frames_file(store, 'a')))}': 'frames' \(\d+, \d+, \d+, 3\)"
    return rf"frames array '{re.escape(opened)}/videos/a/frames'"


SIDES = rf"each side must be in \[1, {MAX_VIDEO_SIDE}\] \(the largest frame a video may have\)"


@pytest.mark.parametrize(
    ("fmt", "where", "shape", "problem"),
    [
        # HDF5 keeps a chunk under 4 GiB: one side past the limit
        ("hdf5", "folder", (N_FRAMES, MAX_VIDEO_SIDE + 1, 64, 3),
         rf"its frames are {MAX_VIDEO_SIDE + 1} pixels high and 64 wide: {SIDES}"),
        ("zarr", "folder", (N_FRAMES, MAX_VIDEO_SIDE + 1, MAX_VIDEO_SIDE + 1, 3),
         rf"its frames are {MAX_VIDEO_SIDE + 1} pixels high and {MAX_VIDEO_SIDE + 1} wide: {SIDES}"),
        ("zarr", "url", (N_FRAMES, 48, 2**20, 3), rf"its frames are 48 pixels high and {2**20} wide: {SIDES}"),
        ("zarr", "folder", (MAX_FRAME_COUNT + 1, 48, 64, 3),
         rf"it holds {MAX_FRAME_COUNT + 1} frames: at most {MAX_FRAME_COUNT} \(the most a video may have\)"),
    ],
)  # fmt: skip
def test_frames_larger_than_any_video_are_refused_when_opened(
    exported: Path, tmp_path: Path, request: pytest.FixtureRequest, fmt: str, where: str, shape: Any, problem: str
) -> None:
    # before: a read allocated (chunk_frames, H, W, 3) bytes for its first chunk: 48 GiB for the zarr case, a raw
    # MemoryError here, allocated where the machine has the memory
    store = copy_store(exported, fmt, tmp_path)
    claim_frames(store, shape)
    opened, options = place(store, where, request.getfixturevalue("s3_bucket") if where == "url" else None)
    message = rf"{frames_name(fmt, store, opened)}: {problem}: {CHANGED}"
    video = backend_for(opened, storage_options=options).open_video("a")
    try:
        with pytest.raises(StoreCorruptError, match=message):
            video.frames()  # refused when opened: nothing read, nothing allocated
    finally:
        video.close()
    with pytest.raises(StoreCorruptError, match=rf"^video 'a' of store '{re.escape(opened)}': {message}"):
        open_store(opened, storage_options=options).get_frame("a", 0)


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_frames_as_large_as_a_video_may_be_open(exported: Path, tmp_path: Path, fmt: str) -> None:
    """The limit itself is no refusal: opening reads no chunk, so this allocates nothing either."""
    store = copy_store(exported, fmt, tmp_path)
    side = (N_FRAMES, MAX_VIDEO_SIDE, 64, 3) if fmt == "hdf5" else (N_FRAMES, MAX_VIDEO_SIDE, MAX_VIDEO_SIDE, 3)
    claim_frames(store, side)
    video = backend_for(store).open_video("a")
    try:
        frames = video.frames()
        assert frames.shape == side and frames.chunk_frames == CHUNK
        frames.close()
    finally:
        video.close()


@pytest.mark.parametrize(
    ("chunk_frames", "problem"),
    [
        (10**9, r"its chunks of 1000000000 frames are not in \[1, 16\] \(1 to its 16 frames\)"),  # was 9 TiB
        (0, r"its chunks of 0 frames are not in \[1, 16\] \(1 to its 16 frames\)"),  # was a raw ZeroDivisionError
        (2, r"its chunks are \(4, 48, 64, 3\), not the \(2, H, W, 3\) of whole frames its chunk_frames attribute "
            r"\(2\) says"),  # read another chunk's bytes as this one's
        ([4], r"its chunk_frames attribute \[4\] is not a whole number"),  # was a raw TypeError
    ],
)  # fmt: skip
def test_an_hdf5_frames_file_whose_chunk_frames_no_export_writes_is_refused_when_opened(
    exported: Path, tmp_path: Path, chunk_frames: Any, problem: str
) -> None:
    # a Zarr frames array's chunk_frames is its chunk shape, checked already; an HDF5 frames file's is an
    # attribute beside the array's own chunks, and a read allocated what it said
    store = copy_store(exported, "hdf5", tmp_path)
    with h5py.File(hdf5_frames_file(store, "a"), "r+") as f:
        f.attrs["chunk_frames"] = json.dumps(chunk_frames)
    message = rf"{frames_name('hdf5', store, str(store))}: {problem}: {CHANGED}"
    with pytest.raises(StoreCorruptError, match=rf"^video 'a' of store '{re.escape(str(store))}': {message}"):
        open_store(store).get_frame("a", 0)


@pytest.mark.parametrize(
    ("rel", "shape", "dtype"),
    [
        ("index", [10**12, 2], "int64"),
        ("videos/a/frame_number", [10**12], "int64"),
        ("videos/a/regions/mask_counts", [10**13], "uint8"),
    ],
)
def test_an_array_at_a_url_that_declares_far_more_than_its_objects_hold_is_refused_before_reading(
    exported: Path, s3_bucket: Bucket, rel: str, shape: list[int], dtype: str
) -> None:
    # before: a local store refused it (test_store_faults), the same store uploaded was read through Zarr, which
    # allocated the declared shape (a raw MemoryError of terabytes; what fits in memory was allocated)
    url, options = place(exported / "zarr", "url", s3_bucket)
    s3 = s3_bucket.s3fs()
    meta = json.loads(s3.cat_file(f"{s3_bucket.name}/store/{rel}/zarr.json"))
    meta["shape"] = shape  # its chunk shape kept: chunks never written
    s3.pipe_file(f"{s3_bucket.name}/store/{rel}/zarr.json", json.dumps(meta).encode())
    listed = s3.find(f"{s3_bucket.name}/store/{rel}/", detail=True)
    stored = sum(int(info["size"]) for info in listed.values())
    declared = math.prod(shape) * np.dtype(dtype).itemsize
    message = (
        rf"Zarr array '{re.escape(url)}/{rel}' declares shape {re.escape(str(shape))} {dtype} \({declared} bytes\), "
        rf"more than 1024 times the {stored} bytes its objects hold: refused before reading: {CHANGED}"
    )
    with pytest.raises(StoreCorruptError, match=message):
        open_store(url, storage_options=options).video_data("a")


def test_an_uncompressed_hdf5_frames_file_declaring_far_more_than_it_holds_is_refused_when_opened(
    exported: Path, tmp_path: Path
) -> None:
    # before: opening it listed every chunk it declared, a few bytes each (a 160 KB file declaring 10**8 frames
    # took 860 MB, 2**31 frames 19 GB), before the frames were compared with the video's
    store = copy_store(exported, "hdf5-none", tmp_path)
    frames_file = hdf5_frames_file(store, "a")
    shape = (10**6, 48, 64, 3)
    with h5py.File(frames_file, "r+") as f:
        del f["frames"]
        f.create_dataset("frames", shape=shape, dtype="uint8", chunks=(1, 48, 64, 3), maxshape=(None, 48, 64, 3))
    size = frames_file.stat().st_size
    message = (
        rf"frames file '{re.escape(str(frames_file))}' declares uncompressed frames {re.escape(str(shape))} "
        rf"\({math.prod(shape)} bytes\), more than 1024 times the {size} bytes the file holds: refused before "
        rf"reading: {CHANGED}"
    )
    video = backend_for(store).open_video("a")
    try:
        with pytest.raises(StoreCorruptError, match=message):
            video.frames()
    finally:
        video.close()
    with pytest.raises(StoreCorruptError, match=rf"^video 'a' of store '{re.escape(str(store))}': {message}"):
        open_store(store).get_frame("a", 0)


def given_twice(text: str, inside: str, key: str, value: Any) -> str:
    """JSON text ``text`` with ``"key": value`` put first in the object that starts at ``inside`` (``{`` for the
    document, ``"attributes": {`` for a group's attributes): ``key`` is then given twice there, and ``json`` keeps
    the one that was there (the last)."""
    assert text.count(inside) >= 1
    return text.replace(inside, f"{inside}{json.dumps(key)}: {json.dumps(value)}, ", 1)


def test_given_twice_keeps_the_store_reading_as_it_was_for_json() -> None:
    text = json.dumps({"shape": [16, 48, 64, 3], "attributes": {"width": 64}})
    edited = given_twice(given_twice(text, "{", "shape", [10**9, 48, 64, 3]), '"attributes": {', "width", 2**20)
    assert json.loads(edited) == json.loads(text)  # what the library read before: the edit unseen
    assert edited.count('"shape"') == edited.count('"width"') == 2


@pytest.mark.parametrize(
    ("where", "rel", "inside", "key", "value", "first", "last"),
    [
        ("folder", "videos/a/frames", "{", "shape", [10**9, 48, 64, 3], r"\[1000000000, 48, 64, 3\]",
         r"\[16, 48, 64, 3\]"),
        ("folder", "", '"attributes": {', "class_names", ["x"], r"\['x'\]", r"\['obj', 'person', 'event'\]"),
        ("url", "videos/a", '"attributes": {', "width", 2**20, str(2**20), "64"),
    ],
)  # fmt: skip
def test_zarr_metadata_that_gives_a_key_twice_is_refused(
    exported: Path, tmp_path: Path, request: pytest.FixtureRequest, where: str, rel: str, inside: str, key: str,
    value: Any, first: str, last: str,
) -> None:  # fmt: skip
    # before: json kept the last value without a word, so the store read as exported while a reader keeping the
    # first (or refusing) saw 10**9 frames, other class names, another width
    store = copy_store(exported, "zarr", tmp_path)
    bucket = request.getfixturevalue("s3_bucket") if where == "url" else None
    opened, options = place(store, where, bucket)
    meta_key = f"{rel}/zarr.json" if rel else "zarr.json"
    if bucket is not None:  # edited there: an upload reads the local root
        s3, path = bucket.s3fs(), f"{bucket.name}/store/{meta_key}"
        s3.pipe_file(path, given_twice(s3.cat_file(path).decode(), inside, key, value).encode())
    else:
        path = str(store / meta_key)
        Path(path).write_text(given_twice(Path(path).read_text(), inside, key, value))
    message = (
        rf"Zarr metadata '{re.escape(f'{opened}/{meta_key}')}' gives key '{key}' twice in one object \({first}, then "
        rf"{last}\): each key must be given once: {CHANGED}"
    )
    with pytest.raises(StoreCorruptError, match=message):
        read = open_store(opened, storage_options=options)
        read.video_data("a")
        read.get_frame("a", 0)


@pytest.mark.parametrize(
    ("rel", "attribute", "inside", "key", "value", "first", "last"),
    [
        ("store.h5", "videos", '"a": {', "frames", 10**9, "1000000000", "16"),
        ("videos/a.h5", "fps", "{", "num", 60, "60", "30"),  # the labels key saw 30, as the export wrote it
    ],
)  # fmt: skip
def test_an_hdf5_attribute_that_gives_a_key_twice_is_refused(
    exported: Path, tmp_path: Path, rel: str, attribute: str, inside: str, key: str, value: Any, first: str,
    last: str,
) -> None:  # fmt: skip
    store = copy_store(exported, "hdf5", tmp_path)
    with h5py.File(store / rel, "r+") as f:
        f.attrs[attribute] = given_twice(f.attrs[attribute], inside, key, value)
    message = (
        rf"attribute '{attribute}' of '/' in HDF5 file '{re.escape(str(store / rel))}' gives key '{key}' twice in one "
        rf"object \({first}, then {last}\): each key must be given once: {CHANGED}"
    )
    with pytest.raises(StoreCorruptError, match=message):
        open_store(store).video_data("a")


def test_an_upload_replaces_a_root_at_the_url_that_gives_a_key_twice(exported: Path, s3_bucket: Bucket) -> None:
    """The repair of such a store: uploading the store again over it (its root is not taken for this store's)."""
    url, options = place(exported / "zarr", "url", s3_bucket)
    s3, path = s3_bucket.s3fs(), f"{s3_bucket.name}/store/zarr.json"
    s3.pipe_file(path, given_twice(s3.cat_file(path).decode(), '"attributes": {', "class_names", ["x"]).encode())
    with pytest.raises(StoreCorruptError, match="gives key 'class_names' twice"):
        open_store(url, storage_options=options)
    upload(exported / "zarr", url, storage_options=options)
    assert open_store(url, storage_options=options).class_names == open_store(exported / "zarr").class_names


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_a_frames_codec_attribute_other_than_the_videos_is_refused(exported: Path, tmp_path: Path, fmt: str) -> None:
    # the frames' codec attribute, which a read decodes by, was trusted: rewritten from 'zstd' to 'jpeg', vidlabel
    # verify said ok (4 chunks checked) and every read failed to decode; the codec is part of the video's unit
    store = copy_store(exported, fmt, tmp_path)
    if fmt == "hdf5":
        with h5py.File(hdf5_frames_file(store, "a"), "r+") as f:
            f.attrs["codec"] = json.dumps("jpeg")
    else:
        _edit_json(store / "videos" / "a" / "frames" / "zarr.json", lambda m: m["attributes"].update(codec="jpeg"))
    problems = verify_store(store, progress=False)["problems"]
    assert [p for p in problems if "codec" in p] == [
        f"{store}: video 'a': its frames say codec 'jpeg:90', not the video's 'zstd:1'"
    ]
    with pytest.raises(
        StoreCorruptError,
        match=rf"^video 'a' of store '{re.escape(str(store))}': its frames .* say codec 'jpeg:90', not the video's "
        rf"codec 'zstd:1': {CHANGED}$",
    ):
        open_store(store).get_frame("a", 0)
