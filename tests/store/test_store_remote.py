"""Zarr frame stores at fsspec URLs: reading through ``memory://`` and ``file://`` equals reading the local
folder, DataLoader workers (fork and spawn), pickling, the upload's order and resume, the CLI, and the errors."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.export.test_scaleout import FaultyRelay
from tests.services import Bucket
from tests.store_support import assert_same_sample, make_dataset
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.cli import main
from vidlabel.errors import OptionError, StoreError, StoreIncompleteError
from vidlabel.export._run import cache
from vidlabel.store import _upload as remote_mod
from vidlabel.store import backend_for, upload, verify_store
from vidlabel.store._remote import ObjectStore, is_url
from vidlabel.torch_data import StoreFrames, StoreStream, collate_frames

EVERY = ("box", "mask", "marker")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("remote_store")
    ds = make_dataset(root, videos=("a", "b"), n_frames=16)
    export(ds, root / "zarr-none", format="zarr", kinds=EVERY, progress=False)
    export(ds, root / "zarr-zstd4", format="zarr", codec="zstd", chunk_frames=4, kinds=EVERY, progress=False)
    export(ds, root / "zarr-all", format="zarr", frames="all", kinds=EVERY, progress=False)
    export(ds, root / "hdf5-none", format="hdf5", kinds=EVERY, progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def file_url(path: Path) -> str:
    return "file://" + path.resolve().as_posix()


def assert_same_store(url: str, local: Path, **options: Any) -> None:
    a, b = open_store(url), open_store(local)
    assert len(a) == len(b) > 0 and a.video_ids == b.video_ids and a.index == b.index
    for i in range(len(b)):
        assert_same_sample(a.sample(i, with_masks=True, **options), b.sample(i, with_masks=True, **options))


# -- reading ------------------------------------------------------------------------------------------------------


def test_is_url() -> None:
    assert is_url("s3://bucket/store") and is_url("memory://x") and is_url("file:///data/s")
    assert is_url("simplecache::s3://bucket/store")
    assert not is_url("store") and not is_url("/data/store") and not is_url(r"C:\data\store")
    assert not is_url(Path("s3://bucket"))  # a Path is always local


@pytest.mark.parametrize("name", ["zarr-none", "zarr-zstd4"])
def test_memory_url_round_trip_equals_the_local_store(world: tuple[Path, Dataset], mem: str, name: str) -> None:
    root, _ = world
    report = upload(root / name, f"{mem}/{name}")
    assert report.stores == [f"{mem}/{name}"] and report.uploaded == report.objects > 0 and report.skipped == 0
    assert_same_store(f"{mem}/{name}", root / name)
    assert_same_store(f"{mem}/{name}/", root / name, box_format="cxcywh", normalized=True)
    assert verify_store(f"{mem}/{name}")["ok"]


def test_file_url_reads_the_local_folder_through_fsspec(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    url = file_url(root / "zarr-zstd4")
    store = open_store(url)
    assert store.path == url and store.stores == [url]
    backend = store._backend(store._process(), "a")
    assert type(backend).__name__ == "ZarrURLBackend"
    assert_same_store(url, root / "zarr-zstd4")
    report = verify_store(url)
    assert report["ok"] and report["videos"] == 2 and report["chunks"] > 0


def test_a_prefix_of_several_stores_reads_as_one(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    folder = root / "two"
    folder.mkdir(exist_ok=True)
    (folder / "left").mkdir(exist_ok=True)
    export(Dataset.open(root / "ds"), folder / "left", format="zarr", kinds=EVERY, progress=False)
    report = upload(folder, f"{mem}/two")
    assert report.stores == [f"{mem}/two/left"]
    assert open_store(f"{mem}/two").stores == [f"{mem}/two/left"]


def test_a_batch_fetches_its_chunks_in_one_call(world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = world
    url = file_url(root / "zarr-zstd4")
    frames, plain = StoreFrames(url, kinds=EVERY), StoreFrames(root / "zarr-zstd4", kinds=EVERY)
    assert frames.index == frames.store.index  # every stored row is a sample, in store order
    frames[0]  # loads video a's arrays
    calls: list[list[str]] = []
    real = ObjectStore.get_many

    def spy(self: ObjectStore, keys: Any) -> dict[str, bytes | None]:
        keys = list(keys)
        calls.append(keys)
        return real(self, keys)

    monkeypatch.setattr(ObjectStore, "get_many", spy)
    rows_a = {r: i for i in range(len(frames)) for v, r in [frames.store.locate(i)] if v == "a"}
    idx = [rows_a[9], rows_a[0], rows_a[5], rows_a[1]]  # chunks of 4 rows: 2, 0, 1 and 0 again
    rows = [frames.store.locate(i) for i in idx]
    frames.store.cache.clear()
    batch = frames.__getitems__(idx)
    chunk_calls = [c for c in calls if any("/frames/c." in k for k in c)]
    wanted = sorted({r // 4 for _, r in rows})
    assert len(chunk_calls) == 1 and sorted(int(k.split("/c.")[1].split(".")[0]) for k in chunk_calls[0]) == wanted
    for i, sample in zip(idx, batch):
        assert_same_sample(sample, plain[i])


def test_frame_samples_cache_url(world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch) -> None:
    root, ds = world
    cache(ds, root / "cache-png", codec="png", format="zarr", progress=False)
    fetched: list[str] = []
    real = ObjectStore.get

    def spy(self: ObjectStore, key: str) -> bytes | None:
        fetched.append(key)
        return real(self, key)

    monkeypatch.setattr(ObjectStore, "get", spy)
    with_cache = FrameSamples(ds, cache=file_url(root / "cache-png"))
    plain = FrameSamples(ds)
    assert list(with_cache.index) == list(plain.index)
    for video_id in ("a", "b"):
        wanted = [n for v, n in with_cache.index if v == video_id][::3]
        with with_cache.reader(video_id) as cached, plain.reader(video_id) as decoded:
            for x, y in zip(cached.read_many(wanted), decoded.read_many(wanted), strict=True):
                assert np.array_equal(x, y)
    assert any("/frames/c." in key for key in fetched)  # the frames came from the URL


PROCESS_LOCAL = (
    r"memory:// stores live in one process; spawned workers .*cannot see them: use file:// or a real object store"
)


def test_a_memory_store_is_not_seen_by_spawned_workers_and_the_error_says_so(
    world: tuple[Path, Dataset], mem: str
) -> None:
    root, _ = world
    url = f"{mem}/s"
    upload(root / "zarr-none", url)
    frames = StoreFrames(url)
    assert frames[0]["image"].shape == (3, 48, 64)  # this process sees it
    loader = DataLoader(frames, batch_size=2, num_workers=1, multiprocessing_context="spawn", collate_fn=collate_frames)
    with pytest.raises(StoreError, match=rf"has no group for video 'a' .*{PROCESS_LOCAL}"):
        next(iter(loader))


def test_a_memory_store_gone_from_this_process_says_why(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    url = f"{mem}/s"
    upload(root / "zarr-zstd4", url)
    pickled = pickle.dumps(open_store(url))
    fsspec.filesystem("memory").rm(mem, recursive=True)  # what a spawned process sees: nothing there
    store = pickle.loads(pickled)
    with pytest.raises(StoreError, match=rf"has no group for video 'a' .*{PROCESS_LOCAL}"):
        store.sample(0)
    with pytest.raises(
        StoreError, match=rf"no vidlabel frame store at '{url}': nothing is stored at .*{PROCESS_LOCAL}"
    ):
        open_store(url)
    # A file:// URL with nothing there, and a memory URL that holds objects, are told apart from this.
    assert ObjectStore(file_url(root / "nothing-here")).absent_from_process() is None
    fsspec.filesystem("memory").pipe(f"{url}/other/x", b"1")
    assert ObjectStore(url).absent_from_process() is None


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_store_frames_over_a_file_url_workers_see_every_sample_once(world: tuple[Path, Dataset], context: str) -> None:
    root, _ = world
    frames = StoreFrames(file_url(root / "zarr-zstd4"))
    loader = DataLoader(
        frames, batch_size=5, shuffle=True, num_workers=2, multiprocessing_context=context,
        collate_fn=collate_frames, generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    got = []
    for batch in loader:
        assert batch["image"].dtype == torch.uint8 and batch["image"].shape[1:] == (3, 48, 64)
        got.extend(zip(batch["video_id"], batch["frame_index"].tolist()))
    assert Counter(got) == Counter(frames.index) and len(got) == len(frames)


def test_store_stream_over_a_url(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    upload(root / "zarr-zstd4", f"{mem}/s")
    stream, plain = StoreStream(f"{mem}/s", seed=4), StoreStream(root / "zarr-zstd4", seed=4)
    got, want = list(stream), list(plain)
    assert [(s["video_id"], int(s["frame_index"])) for s in got] == [
        (s["video_id"], int(s["frame_index"])) for s in want
    ]
    for a, b in zip(got, want):
        assert_same_sample(a, b)


def test_pickling_drops_the_filesystem_and_reopens_it(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    upload(root / "zarr-none", f"{mem}/p")
    store = open_store(f"{mem}/p", cache_bytes=2**20)
    first = store.frame(3)
    objects = ObjectStore(f"{mem}/p")
    assert objects.fs is not None and objects._pid == os.getpid()  # opened in this process
    again = pickle.loads(pickle.dumps(objects))
    assert again._fs is None and again.url == f"{mem}/p" and again.get("zarr.json") == objects.get("zarr.json")
    clone = pickle.loads(pickle.dumps(store))
    assert clone._state is None and clone.path == f"{mem}/p" and clone.cache_bytes == 2**20
    assert np.array_equal(clone.frame(3), first)
    frames, plain = pickle.loads(pickle.dumps(StoreFrames(store))), StoreFrames(root / "zarr-none")
    assert len(frames) == len(plain) and torch.equal(frames[3]["image"], plain[3]["image"])


def test_storage_options_reach_the_filesystem(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    url = file_url(root / "zarr-none")
    store = open_store(url, storage_options={"auto_mkdir": False})
    assert store.storage_options == {"auto_mkdir": False}
    frames = StoreFrames(store, kinds=EVERY, cache_bytes=0)  # a new FrameStore keeps the options
    assert frames.store.storage_options == {"auto_mkdir": False} and len(frames) == len(store)
    with pytest.raises(OptionError, match=r"storage_options apply to URLs only; '.*zarr-none' is a local path"):
        open_store(root / "zarr-none", storage_options={"anon": True})
    with pytest.raises(StoreError, match=r"cannot open 'nosuchproto://bucket/x' with fsspec: .*nosuchproto"):
        open_store("nosuchproto://bucket/x")
    if importlib.util.find_spec("s3fs") is None:  # the filesystem's package is missing: fsspec's advice comes through
        with pytest.raises(StoreError, match=r"cannot open 's3://bucket/store' with fsspec: .*s3fs"):
            open_store("s3://bucket/store")


# -- upload: order, interruption, resume ---------------------------------------------------------------------------


def _keys_in_order(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    order: list[str] = []
    real_put, real_files = ObjectStore.put, ObjectStore.put_files

    def put(self: ObjectStore, key: str, data: bytes, **kwargs: Any) -> None:
        order.append(key)
        real_put(self, key, data, **kwargs)

    def put_files(self: ObjectStore, pairs: Any) -> None:
        order.extend(k for _, k in pairs)
        real_files(self, pairs)

    monkeypatch.setattr(ObjectStore, "put", put)
    monkeypatch.setattr(ObjectStore, "put_files", put_files)
    return order


def test_upload_puts_data_first_each_group_after_its_arrays_and_the_root_last(
    world: tuple[Path, Dataset], mem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = world
    order = _keys_in_order(monkeypatch)
    report = upload(root / "zarr-zstd4", f"{mem}/o")
    assert order[0] == "zarr.json" and order[-1] == "zarr.json" and order.count("zarr.json") == 2
    assert len(order) - 1 == report.objects == report.uploaded
    for video in ("a", "b"):
        group = order.index(f"videos/{video}/zarr.json")
        inside = [i for i, k in enumerate(order) if k.startswith(f"videos/{video}/")]
        assert group == max(inside)  # the group (its 'complete') after all its arrays and chunks
    assert order.index("videos/a/zarr.json") < min(i for i, k in enumerate(order) if k.startswith("videos/b/"))
    local = {p.relative_to(root / "zarr-zstd4").as_posix() for p in (root / "zarr-zstd4").rglob("*") if p.is_file()}
    assert set(order) == {k for k in local if not k.startswith(".")}  # no lock, no .partial


def test_an_interrupted_upload_is_refused_and_a_rerun_completes_it(
    world: tuple[Path, Dataset], mem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = world
    url = f"{mem}/cut"
    calls = {"n": 0}
    real = remote_mod._put_files

    def cut(dest: ObjectStore, pairs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 4:  # index etc., video a's data, video a's group, then video b's data: cut here
            raise OSError("connection reset (simulated)")
        real(dest, pairs)

    monkeypatch.setattr(remote_mod, "_put_files", cut)
    with pytest.raises(OSError, match=r"connection reset \(simulated\)"):
        upload(root / "zarr-none", url)
    with pytest.raises(StoreIncompleteError, match=rf"frame store '{url}' is incomplete: its upload .* rerun the same"):
        open_store(url)
    report = verify_store(url)
    assert not report["ok"] and any("root is not marked complete" in p for p in report["problems"])
    assert main(["info", url]) == 1

    monkeypatch.setattr(remote_mod, "_put_files", real)
    again = upload(root / "zarr-none", url)
    assert again.skipped > 0 and again.uploaded < again.objects  # video a's objects were there already
    assert_same_store(url, root / "zarr-none")
    assert verify_store(url)["ok"]
    once_more = upload(root / "zarr-none", url)
    assert once_more.uploaded == 0 and once_more.skipped == once_more.objects


def test_a_store_whose_root_is_gone_is_refused_and_the_rerun_restores_it(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    url = f"{mem}/noroot"
    upload(root / "zarr-zstd4", url)
    fsspec.filesystem("memory").rm(f"{url}/zarr.json")
    with pytest.raises(StoreIncompleteError, match=rf"'{url}' has no root yet: its upload \(vidlabel upload\) did not"):
        open_store(url)
    report = upload(root / "zarr-zstd4", url)
    video_objects = sum(1 for k in ObjectStore(url).sizes() if k.startswith("videos/") and k.count("/") > 2)
    assert report.skipped == video_objects  # every video's data was trusted (their groups equal the local ones)
    assert_same_store(url, root / "zarr-zstd4")


def test_uploading_another_store_over_one_replaces_chunks_of_equal_size(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    url = f"{mem}/over"
    upload(root / "zarr-none", url)  # annotated frames: 0, 2, 4, ...
    report = upload(root / "zarr-all", url)  # every frame: chunk 1 is frame 1 now, the same size as frame 2
    assert report.uploaded > 0
    assert_same_store(url, root / "zarr-all")


def test_upload_refuses_incomplete_hdf5_and_non_url(world: tuple[Path, Dataset], tmp_path: Path, mem: str) -> None:
    root, _ = world
    with pytest.raises(StoreError, match=r"'.*hdf5-none' is an HDF5 store: only Zarr stores go to object stores"):
        upload(root / "hdf5-none", f"{mem}/h")
    with pytest.raises(OptionError, match=r"upload needs a URL such as 's3://bucket/store'.*got '/data/x'"):
        upload(root / "zarr-none", "/data/x")
    with pytest.raises(StoreError, match=r"no vidlabel frame store at '.*nothing'"):
        upload(tmp_path / "nothing", f"{mem}/h")
    copy = tmp_path / "copy"
    shutil.copytree(root / "zarr-none", copy)
    meta = json.loads((copy / "zarr.json").read_text())
    meta["attributes"]["complete"] = False
    (copy / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreIncompleteError, match=r"frame store '.*copy' is incomplete: its export"):
        upload(copy, f"{mem}/h")
    meta["attributes"]["complete"] = True
    (copy / "zarr.json").write_text(json.dumps(meta))
    group = copy / "videos" / "b" / "zarr.json"
    gmeta = json.loads(group.read_text())
    gmeta["attributes"]["complete"] = False
    group.write_text(json.dumps(gmeta))
    with pytest.raises(StoreIncompleteError, match=r"video 'b' of store '.*copy' is not complete; rerun the export"):
        upload(copy, f"{mem}/h")
    assert not fsspec.filesystem("memory").exists(f"{mem}/h/zarr.json")  # nothing was put


def test_opening_a_store_in_a_bucket_that_does_not_exist_says_so(
    world: tuple[Path, Dataset], s3_bucket: Bucket
) -> None:
    """Before: only "no vidlabel frame store at 's3://...'", as for an empty prefix of a bucket that exists."""
    missing = f"s3://{s3_bucket.name}-missing/store"
    with pytest.raises(
        StoreError,
        match=rf"^no vidlabel frame store at '{missing}': the bucket '{s3_bucket.name}-missing' does not exist "
        r"\(or these credentials cannot see it\)$",
    ):
        open_store(missing, storage_options=s3_bucket.storage_options)
    with pytest.raises(StoreError, match=rf"^no vidlabel frame store at '{s3_bucket.url('empty')}'$"):  # bucket there
        open_store(s3_bucket.url("empty"), storage_options=s3_bucket.storage_options)


def test_an_upload_that_cannot_write_names_the_object_and_a_rerun_completes_it(
    world: tuple[Path, Dataset], s3_bucket: Bucket
) -> None:
    root, _ = world
    missing = f"s3://{s3_bucket.name}-missing/store"
    gone = (
        rf"cannot write '{missing}/zarr.json': .* \(the bucket '{s3_bucket.name}-missing' does not exist \(or these "
        r"credentials cannot see it\)\); create the bucket, or check the URL and the credentials, then rerun the "
        r"upload$"  # not "to resume": nothing can be written there
    )
    with pytest.raises(StoreError, match=gone):
        upload(root / "zarr-none", missing, storage_options=s3_bucket.storage_options)  # was a bare FileNotFoundError
    url = s3_bucket.url("store")
    relay = FaultyRelay(s3_bucket.endpoint_url)
    try:
        options = relay.storage_options(s3_bucket)
        relay.fail = "/videos/b/frames/"  # the server fails mid-upload (a bare OSError before)
        failed = rf"cannot write '{url}/videos/b/frames/.*\(HTTP 500 InternalError\); rerun the upload"
        with pytest.raises(StoreError, match=failed):
            upload(root / "zarr-none", url, storage_options=options)
        assert relay.refused
        with pytest.raises(StoreIncompleteError):
            open_store(url, storage_options=s3_bucket.storage_options)
        relay.fail = None
        assert upload(root / "zarr-none", url, storage_options=options).skipped > 0
    finally:
        relay.close()
    there, here = open_store(url, storage_options=s3_bucket.storage_options), open_store(root / "zarr-none")
    assert len(there) == len(here) > 0 and there.index == here.index
    for i in range(len(here)):
        assert_same_sample(there.sample(i, with_masks=True), here.sample(i, with_masks=True))


# -- errors -----------------------------------------------------------------------------------------------------


def test_hdf5_and_urls(world: tuple[Path, Dataset], mem: str) -> None:
    root, ds = world
    with pytest.raises(StoreError, match=r"HDF5 frame stores are local only, and 'memory://x' is a URL"):
        backend_for("memory://x", "hdf5")
    with pytest.raises(
        OptionError,
        match=r"cannot export to 'memory://x' with format='hdf5': HDF5 stores are local only; export to a URL "
        r"with format='zarr'",
    ):
        export(ds, "memory://x", format="hdf5", progress=False)
    with pytest.raises(StoreError, match=r"'file://.*hdf5-none' holds an HDF5 frame store \(store.h5\)"):
        open_store(file_url(root / "hdf5-none"))
    assert not Path("memory:").exists() and not Path("s3:").exists()  # nothing written locally


def test_missing_objects_name_the_url_video_and_rows(world: tuple[Path, Dataset], mem: str) -> None:
    root, _ = world
    url = f"{mem}/miss"
    with pytest.raises(StoreError, match=rf"no vidlabel frame store at '{url}'"):
        open_store(url)
    upload(root / "zarr-none", url)
    fs = fsspec.filesystem("memory")
    fs.rm(f"{url}/videos/a/frames/c.3.0.0.0")
    store = open_store(url)
    chunk_url = re.escape(f"{url}/videos/a/frames/c.3.0.0.0")
    with pytest.raises(StoreError, match=rf"chunk 3 \(rows 3..3\) of video 'a' is missing at '{chunk_url}'"):
        store.read_row("a", 3)
    with pytest.raises(StoreError, match=r"chunk 3 \(rows 3..3\) of video 'a' is missing"):
        store.read_rows("a", [0, 3, 5])  # through the batch fetch
    report = verify_store(url)
    missing = [p for p in report["problems"] if "video 'a': chunk 3 (rows 3..3): " in p]  # each chunk, the rest checked
    assert not report["ok"] and len(missing) == 1 and f"is missing at '{url}/videos/a/frames/c.3.0.0.0'" in missing[0]

    group = f"{url}/videos/b/zarr.json"
    meta = json.loads(fs.cat_file(group))
    meta["attributes"]["complete"] = False
    fs.pipe_file(group, json.dumps(meta).encode())
    with pytest.raises(
        StoreIncompleteError, match=rf"video 'b' of store '{url}' was not completely written; rerun the upload"
    ):
        open_store(url).video_data("b")
    fs.rm(group)
    with pytest.raises(StoreError, match=rf"frame store '{url}' has no group for video 'b'"):
        open_store(url).video_data("b")
    fs.rm(f"{url}/videos/a/regions/bbox_xyxy/zarr.json")
    with pytest.raises(StoreError, match=rf"no Zarr array 'regions/bbox_xyxy' in video 'a' at '{url}/videos/a"):
        open_store(url).video_data("a")


def test_an_uploaded_url_store_lists_its_videos_and_no_frames_units(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    backend = backend_for(file_url(root / "zarr-none"))
    # an uploaded store keeps each video's frames under its group: nothing under units/ for an export to reuse
    assert backend.frames_units() == {}
    assert backend.video_ids() == ["a", "b"] and backend.size_on_disk() > 0


# -- command line --------------------------------------------------------------------------------------------


def test_cli_upload_info_verify_on_a_url(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = world
    url = file_url(tmp_path / "bucket" / "store")
    assert main(["upload", str(root / "zarr-zstd4"), url, "--no-progress"]) == 0
    assert f"uploaded 1 store to {url}:" in capsys.readouterr().out
    assert main(["info", url]) == 0
    out = capsys.readouterr().out
    assert f"frame store {url} (zarr)" in out and "videos:    2" in out
    assert main(["verify", url]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 store, 2 videos")
    assert main(["upload", str(root / "zarr-zstd4"), url, "--no-progress", "--storage-options", "[1]"]) == 1
    assert "storage_options must be a mapping" in capsys.readouterr().err
    assert main(["verify", url + "-missing"]) == 1
    assert f"no vidlabel frame store at '{url}-missing'" in capsys.readouterr().err


def test_cli_upload_refuses_an_hdf5_store_before_drawing_a_progress_bar(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str], mem: str
) -> None:
    root, _ = world
    folder = tmp_path / "both"
    folder.mkdir()
    shutil.copytree(root / "zarr-none", folder / "a-zarr")
    shutil.copytree(root / "hdf5-none", folder / "b-hdf5")
    for store in (root / "hdf5-none", folder):  # one HDF5 store, or a folder of stores holding one
        assert main(["upload", str(store), f"{mem}/h"]) == 1  # with the progress bar on
        out, err = capsys.readouterr()
        hdf5 = root / "hdf5-none" if store == root / "hdf5-none" else folder / "b-hdf5"
        assert out == "" and err == (
            f"vidlabel: error: {str(hdf5)!r} is an HDF5 store: only Zarr stores go to object stores; "
            "export it again with format='zarr' (vidlabel export ... --format zarr)\n"
        )
    assert not fsspec.filesystem("memory").exists(f"{mem}/h")  # nothing was put, not even the Zarr store


def test_an_export_into_a_bucket_that_does_not_exist_says_so_not_to_resume(
    world: tuple[Path, Dataset], s3_bucket: Bucket
) -> None:
    """Ended "...NoSuchBucket; rerun the export to resume", which cannot help."""
    _, ds = world
    missing = f"s3://{s3_bucket.name}-missing/store"
    with pytest.raises(StoreError) as info:
        export(ds, missing, format="zarr", storage_options=s3_bucket.storage_options, progress=False)
    message = str(info.value)
    assert f"the bucket '{s3_bucket.name}-missing' does not exist (or these credentials cannot see it)" in message
    assert "create the bucket, or check the URL and the credentials" in message and "to resume" not in message
