"""Issue 13: exports on a Dask cluster, straight into an object store (moto S3 on 127.0.0.1), with the faults an
engine and a network bring: a worker SIGKILLed mid-unit, the driver killed, two exporters at once, a failing PUT.

The services are real (tests/services.py: ``moto_server``, a ``dask scheduler`` and two ``dask worker``
processes). Every store written here is compared with a local export of the same release, video by video and
array by array, pixels included.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from tests.services import Bucket
from tests.test_store_support import make_dataset
from vidlabel import Dataset, export, open_store
from vidlabel.errors import StoreError
from vidlabel.store import backend_for
from vidlabel.store._layout import REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS
from vidlabel.store._remote import ObjectStore, StoreConflict

EVERY = ("box", "mask", "marker")
VIDEOS = ("a", "b", "c", "d")


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset, Path]:
    """A four-video dataset and its local Zarr export (the reference every other export is compared with)."""
    root = tmp_path_factory.mktemp("scaleout")
    ds = make_dataset(root, videos=VIDEOS, n_frames=24)
    export(ds, root / "local", format="zarr", kinds=EVERY, progress=False)
    return root, ds, root / "local"


@pytest.fixture
def mem() -> Iterator[str]:
    prefix = f"memory://vidlabel-scaleout-{uuid.uuid4().hex[:8]}"
    yield prefix
    fs = fsspec.filesystem("memory")
    if fs.exists(prefix):
        fs.rm(prefix, recursive=True)


def file_url(path: Path) -> str:
    return "file://" + path.resolve().as_posix()


def store_arrays(url: str | Path, storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Root attributes (less ``created``) and index, and per video its attributes (less where its frames live),
    every array and every decoded frame."""
    backend = backend_for(url, storage_options=storage_options) if storage_options else backend_for(url)
    attrs, index = backend.read_root()
    out: dict[str, Any] = {"attrs": {k: v for k, v in attrs.items() if k != "created"}, "index": index.tolist()}
    for vid in attrs["video_ids"]:
        video = backend.open_video(vid)
        arrays = {}
        for name in [*VIDEO_ARRAYS, "frames_crc32c", *(f"regions/{n}" for n in REGION_FIELDS),
                     *(f"segments/{n}" for n in SEGMENT_FIELDS)]:  # fmt: skip
            arr = video.array(name)
            arrays[name] = (str(arr.dtype), arr.shape, np.nan_to_num(arr, nan=-7).tolist())
        frames = video.frames()
        pixels = [frames.read_chunk(c)[: frames.chunk_rows(c)].copy() for c in range(frames.n_chunks)]
        out[vid] = {
            "attrs": {k: v for k, v in video.attrs.items() if k != "frames_unit"},
            "arrays": arrays,
            "frames": np.concatenate(pixels) if pixels else np.zeros((0,), np.uint8),
        }
    return out


def assert_same_store(url: str | Path, local: Path, storage_options: dict[str, Any] | None = None) -> None:
    """The store at ``url`` holds what the local export holds: video by video, array by array, every pixel."""
    got, want = store_arrays(url, storage_options), store_arrays(local)
    got_attrs = {k: v for k, v in got["attrs"].items() if k != "export"}
    want_attrs = {k: v for k, v in want["attrs"].items() if k != "export"}
    assert got_attrs == want_attrs
    assert got["index"] == want["index"]
    assert want["attrs"]["video_ids"] == list(VIDEOS)
    for vid in VIDEOS:
        assert got[vid]["attrs"] == want[vid]["attrs"], vid
        assert got[vid]["arrays"] == want[vid]["arrays"], vid
        np.testing.assert_array_equal(got[vid]["frames"], want[vid]["frames"], err_msg=vid)


# -- conditional writes ------------------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "file", "s3"])
def target(request: pytest.FixtureRequest, tmp_path: Path, mem: str) -> tuple[str, dict[str, Any]]:
    """A fresh store URL of each kind with its storage options."""
    if request.param == "memory":
        return mem, {}
    if request.param == "file":
        return file_url(tmp_path / "bucket" / "store"), {}
    bucket: Bucket = request.getfixturevalue("s3_bucket")
    return bucket.url("store"), bucket.storage_options


def test_create_only_and_if_match_writes(target: tuple[str, dict[str, Any]]) -> None:
    url, options = target
    store = ObjectStore(url, options)
    assert store.conditional_kind() in ("memory", "file", "s3")
    assert store.put_new("units/k/zarr.json", b"first") is True
    assert store.put_new("units/k/zarr.json", b"second") is False  # left as it was
    assert store.get("units/k/zarr.json") == b"first"
    data, tag = store.get_tagged("units/k/zarr.json")
    assert data == b"first" and tag
    new_tag = store.put_if("units/k/zarr.json", b"third", tag)
    assert new_tag != tag and store.get("units/k/zarr.json") == b"third"
    with pytest.raises(StoreConflict, match="was changed by another writer"):
        store.put_if("units/k/zarr.json", b"fourth", tag)  # the tag read before the last write
    with pytest.raises(StoreConflict, match="was created by another writer"):
        store.put_if("units/k/zarr.json", b"fifth", None)  # "only if absent"
    assert store.get("units/k/zarr.json") == b"third"
    assert store.get_tagged("nothing/here") == (None, None)
    assert store.put_if("fresh", b"x", None) == store.get_tagged("fresh")[1]


# -- export straight into an object store (no engine) --------------------------------------------------------------


def test_export_into_each_kind_of_url_equals_the_local_export(
    world: tuple[Path, Dataset, Path], target: tuple[str, dict[str, Any]]
) -> None:
    _, ds, local = world
    url, options = target
    report = export(ds, url, format="zarr", kinds=EVERY, progress=False, storage_options=options or None)
    assert report.out == url and report.frames_decoded == len(open_store(local)) > 0  # every stored frame, once
    assert_same_store(url, local, options or None)
    store = ObjectStore(url, options)
    root = json.loads(store.get("zarr.json") or b"{}")["attributes"]
    assert root["complete"] is True and "export_token" not in root
    units = store.list_dirs("units")
    assert len(units) == len(VIDEOS)  # one unit per video, keyed by what the pixels depend on
    for vid in VIDEOS:
        group = json.loads(store.get(f"videos/{vid}/zarr.json") or b"{}")["attributes"]
        assert group["frames_unit"] == f"units/{group['frames_key']}" and group["frames_key"] in units
    again = export(ds, url, format="zarr", kinds=EVERY, progress=False, storage_options=options or None)
    assert again.frames_decoded == 0 and again.videos_up_to_date == len(VIDEOS)
    assert_same_store(url, local, options or None)


def test_hdf5_to_a_url_and_a_url_without_conditional_writes_are_refused(world: tuple[Path, Dataset, Path]) -> None:
    _, ds, _ = world
    from vidlabel.errors import OptionError

    with pytest.raises(OptionError, match=r"cannot export to 'memory://x' with format='hdf5': HDF5 stores are local"):
        export(ds, "memory://x", format="hdf5", progress=False)
    with pytest.raises(OptionError, match=r"exporting straight into an object store needs conditional writes"):
        export(ds, "http://127.0.0.1:9/store", format="zarr", progress=False)
    with pytest.raises(OptionError, match=r"storage_options apply to URLs only"):
        export(ds, "local-folder", format="zarr", progress=False, storage_options={"key": "k"})
    with pytest.raises(OptionError, match=r"memory:// stores live in one process"):
        export(ds, "memory://x", format="zarr", workers=2, progress=False)
    with pytest.raises(OptionError, match=r"executor must be a concurrent.futures.Executor"):
        export(ds, "memory://x", format="zarr", executor="tcp://127.0.0.1:1", progress=False)  # type: ignore[arg-type]
