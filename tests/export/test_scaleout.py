"""Issue 13: exports on a Dask cluster, straight into an object store (moto S3 on 127.0.0.1), with the faults an
engine and a network bring: a worker SIGKILLed mid-unit, the driver killed, two exporters at once, a failing PUT.

The services are real (tests/services.py: ``moto_server``, a ``dask scheduler`` and two ``dask worker``
processes). Every store written here is compared with a local export of the same release, video by video and
array by array, pixels included.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from tests.services import HOST, Bucket, DaskCluster, MotoServer, free_port, worker_env
from tests.store_support import assert_same_sample, make_dataset
from vidlabel import Dataset, export, open_store
from vidlabel.cli import main
from vidlabel.errors import StoreError, StoreLockedError
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


def test_a_create_taken_over_at_once_leaves_the_creator_with_a_stale_tag(
    target: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # two exports starting on one empty URL: the first creates the root, the second takes it over (If-Match on
    # the tag it reads) before the first learns its tag; the first must not get the second's tag (both would own
    # the root, and the first's later If-Match writes would overwrite the second's root without a word)
    url, options = target
    mine, theirs = ObjectStore(url, options), ObjectStore(url, options)
    real = ObjectStore.get_tagged
    taken: list[str] = []

    def take_over() -> None:
        theirs.put_if("zarr.json", b"theirs", real(theirs, "zarr.json")[1])
        taken.append("zarr.json")

    def get_tagged(self: ObjectStore, key: str) -> tuple[bytes | None, str | None]:
        if self is mine and not taken:  # right after the create, before the creator reads its tag back
            take_over()
        return real(self, key)

    monkeypatch.setattr(ObjectStore, "get_tagged", get_tagged)
    tag = mine.put_if("zarr.json", b"mine", None)
    if not taken:
        take_over()
    with pytest.raises(StoreConflict, match="was changed by another writer"):
        mine.put_if("zarr.json", b"mine again", tag)
    assert mine.get("zarr.json") == b"theirs"


def test_deleting_under_a_prefix_of_a_server_that_is_gone_names_the_prefix() -> None:
    # an export's clean-up (a discarded unit, a video removed, old units collected) on a server gone away was
    # botocore's EndpointConnectionError, naming no store
    url = f"s3://bucket-{free_port()}/store"
    options = {"key": "k", "secret": "s", "client_kwargs": {
        "endpoint_url": f"http://{HOST}:{free_port()}", "region_name": "us-east-1"},
        "config_kwargs": {"retries": {"max_attempts": 1, "mode": "standard"}}}  # fmt: skip
    gone = rf"cannot write '{url}/units/abc': EndpointConnectionError: .*rerun the export"
    with pytest.raises(StoreError, match=gone):
        ObjectStore(url, options).delete_prefix("units/abc")


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
    # refused from its scheme, before any connection (an ftp filesystem connects as it is made)
    with pytest.raises(OptionError, match=r"cannot export to 'ftp://127.0.0.1:1/y'.*conditional writes.*s3://"):
        export(ds, "ftp://127.0.0.1:1/y", format="zarr", progress=False)
    with pytest.raises(OptionError, match=r"storage_options apply to URLs only"):
        export(ds, "local-folder", format="zarr", progress=False, storage_options={"key": "k"})
    with pytest.raises(OptionError, match=r"memory:// stores live in one process"):
        export(ds, "memory://x", format="zarr", workers=2, progress=False)
    with pytest.raises(OptionError, match=r"executor must be a concurrent.futures.Executor"):
        export(ds, "memory://x", format="zarr", executor="tcp://127.0.0.1:1", progress=False)  # type: ignore[arg-type]


# -- on the Dask cluster ---------------------------------------------------------------------------------------------


def test_dask_export_into_s3_equals_the_local_export_and_verify_passes(
    world: tuple[Path, Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket, s3_env: MotoServer,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _, ds, local = world
    url = s3_bucket.url("stores/train")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # bars show on a terminal only: be one
    with dask_cluster.client() as client:
        report = export(
            ds, url, format="zarr", kinds=EVERY, executor=client.get_executor(),
            storage_options=s3_bucket.storage_options,
        )  # fmt: skip
    total = len(open_store(local))
    assert report.frames_decoded == total and report.videos == len(VIDEOS)
    bar = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert bar.startswith("export train: 100%") and f"{total}/{total}" in bar  # fed from the task results
    assert_same_store(url, local, s3_bucket.storage_options)
    assert main(["verify", url]) == 0  # credentials and endpoint from the AWS_* variables
    assert capsys.readouterr().out.startswith("ok: 1 store, 4 videos")
    # the StoreFrames of the bucket hand out the local store's samples
    remote, here = open_store(url, storage_options=s3_bucket.storage_options), open_store(local)
    for i in (0, len(here) // 2, len(here) - 1):
        assert_same_sample(remote.sample(i, with_masks=True), here.sample(i, with_masks=True))


def _clip_dataset(root: Path, n_videos: int, n_frames: int) -> Dataset:
    """Long clips (every frame stored) so that a unit takes many PUTs: a fault can land in the middle of one."""
    ds = make_dataset(root, videos=tuple(f"v{i}" for i in range(n_videos)), n_frames=n_frames, gop=30)
    export(ds, root / "local", format="zarr", frames="all", kinds=EVERY, progress=False)
    return ds


@pytest.fixture(scope="module")
def long_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Path]:
    root = tmp_path_factory.mktemp("scaleout_long")
    return _clip_dataset(root, 3, 120), root / "local"


def _unit_keys(local: Path) -> dict[str, str]:
    backend = backend_for(local)
    return {vid: str(backend.video_attrs(vid)["frames_key"]) for vid in backend.video_ids()}  # type: ignore[index]


def _published_units(fs: Any, url: str) -> set[str]:
    fs.invalidate_cache()
    bucket_path = url[len("s3://") :]
    found = fs.glob(f"{bucket_path}/units/*/zarr.json")
    return {p.rsplit("/", 2)[-2] for p in found}


def _started_units(fs: Any, url: str) -> set[str]:
    fs.invalidate_cache()
    return {p.rsplit("/", 3)[-3] for p in fs.glob(f"{url[len('s3://') :]}/units/*/frames/c.0.0.0.0")}


def _assert_same_long_store(url: str, local: Path, options: dict[str, Any]) -> None:
    got, want = store_arrays(url, options), store_arrays(local)
    assert {k: v for k, v in got["attrs"].items() if k != "export"} == {
        k: v for k, v in want["attrs"].items() if k != "export"
    }
    assert got["index"] == want["index"] and want["attrs"]["video_ids"]
    for vid in want["attrs"]["video_ids"]:
        assert got[vid]["attrs"] == want[vid]["attrs"] and got[vid]["arrays"] == want[vid]["arrays"], vid
        np.testing.assert_array_equal(got[vid]["frames"], want[vid]["frames"], err_msg=vid)


def test_a_worker_killed_mid_unit_the_export_still_completes_and_equals_a_clean_one(
    long_world: tuple[Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket
) -> None:
    ds, local = long_world
    url = s3_bucket.url("killed-worker")
    fs = s3_bucket.s3fs()
    keys = _unit_keys(local)
    outcome: dict[str, Any] = {}

    with dask_cluster.client() as client:
        pids = {str(k): int(v) for k, v in client.run(os.getpid).items()}

        def run() -> None:
            try:
                outcome["report"] = export(
                    ds, url, format="zarr", frames="all", kinds=EVERY, progress=False,
                    executor=client.get_executor(), storage_options=s3_bucket.storage_options,
                )  # fmt: skip
            except BaseException as err:  # pragma: no cover - reported below
                outcome["error"] = err

        thread = threading.Thread(target=run)
        thread.start()
        victim, deadline = None, time.monotonic() + 60
        while victim is None and time.monotonic() < deadline and thread.is_alive():
            done = _published_units(fs, url)
            started = {k for k in keys.values() if fs.exists(f"{url[5:]}/units/{k}/frames/c.3.0.0.0")}
            if started - done:  # a unit with chunks but not complete: its worker is in the middle of it
                busy = [w for w, tasks in client.processing().items() if tasks]
                if busy:
                    victim = busy[0]
                    os.kill(pids[victim], signal.SIGKILL)
                    break
            time.sleep(0.02)
        thread.join(120)
    assert victim is not None, "no worker was seen in the middle of a unit"
    assert "error" not in outcome, outcome.get("error")
    dask_cluster.wait_for_workers()  # the nanny restarted it
    assert pids[victim] not in dask_cluster.current_worker_pids().values()
    _assert_same_long_store(url, local, s3_bucket.storage_options)
    assert outcome["report"].frames_decoded >= len(open_store(local))  # the killed unit was decoded again


_DRIVER = """
import sys
from distributed import Client
from vidlabel import Dataset, export

ds_path, url, scheduler, endpoint = sys.argv[1:5]
options = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
with Client(scheduler) as client:
    export(Dataset.open(ds_path), url, format="zarr", frames="all", kinds=("box", "mask", "marker"), progress=False,
           executor=client.get_executor(), storage_options=options)
print("finished")
"""


def _executing(dask_worker: Any) -> int:
    return len(dask_worker.state.executing)  # a released task whose thread still runs is counted until it ends


def _wait_idle(dask_cluster: DaskCluster) -> None:
    """Until no task runs on any worker: a killed driver's tasks are released by the scheduler, but those
    already running go on to their end (zombies, still writing) and are waited for."""
    with dask_cluster.client() as client:
        deadline = time.monotonic() + 60
        while any(client.run(_executing).values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(client.run(_executing).values())


def test_the_driver_killed_mid_export_a_rerun_resumes_decoding_only_the_units_left(
    long_world: tuple[Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket, tmp_path: Path
) -> None:
    ds, local = long_world
    url = s3_bucket.url("killed-driver")
    fs = s3_bucket.s3fs()
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    log = tmp_path / "driver.log"
    with log.open("wb") as out:
        driver = subprocess.Popen(
            [sys.executable, str(script), str(ds.path), url, dask_cluster.address, s3_bucket.endpoint_url],
            stdout=out, stderr=subprocess.STDOUT, env=worker_env(),
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not _started_units(fs, url) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert driver.poll() is None, log.read_text()
        # SIGKILL while the first units are being written: the driver gets no chance to clean up; the units
        # running go on to their end (zombies), those queued are released by the scheduler
        driver.kill()
        driver.wait(10)
    finally:
        if driver.poll() is None:
            driver.kill()
    with pytest.raises(StoreError, match=r"is incomplete: its export was interrupted or is still running"):
        open_store(url, storage_options=s3_bucket.storage_options)
    _wait_idle(dask_cluster)
    keys = _unit_keys(local)
    frames_of = {keys[vid]: len(backend_for(local).open_video(vid).array("frame_number")) for vid in keys}
    published = _published_units(fs, url)
    assert published and published < set(frames_of)  # mid-export: some units complete, not all
    with dask_cluster.client() as client:
        report = export(
            ds, url, format="zarr", frames="all", kinds=EVERY, progress=False, executor=client.get_executor(),
            storage_options=s3_bucket.storage_options,
        )  # fmt: skip
    left = sum(n for key, n in frames_of.items() if key not in published)
    assert report.frames_decoded == left  # every unit left decoded once; none of those published again
    assert report.frames_reused == sum(frames_of.values()) - left
    _assert_same_long_store(url, local, s3_bucket.storage_options)


class GatedExecutor(Executor):
    """Submits to ``inner`` once ``gate`` is set; ``entered`` is set when the first submit arrives (the export
    has taken the root over and planned by then)."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        assert self.gate.wait(60)
        return self.inner.submit(fn, *args, **kwargs)


def test_two_exporters_at_once_one_publishes_the_other_fails_clearly_and_the_store_is_whole(
    world: tuple[Path, Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket
) -> None:
    _, ds, local = world
    url = s3_bucket.url("contended")
    outcome: dict[str, Any] = {}
    with dask_cluster.client() as client:
        first, second = GatedExecutor(client.get_executor()), GatedExecutor(client.get_executor())

        def run(name: str, executor: Executor) -> None:
            try:
                outcome[name] = export(
                    ds, url, format="zarr", kinds=EVERY, progress=False, executor=executor,
                    storage_options=s3_bucket.storage_options,
                )  # fmt: skip
            except BaseException as err:
                outcome[name] = err

        threads = [threading.Thread(target=run, args=("first", first))]
        threads[0].start()
        assert first.entered.wait(60)  # the first export has started, taken the root and planned
        threads.append(threading.Thread(target=run, args=("second", second)))
        threads[1].start()
        assert second.entered.wait(60)  # so has the second, over the first
        first.gate.set()
        second.gate.set()
        for thread in threads:
            thread.join(120)
    assert isinstance(outcome["first"], StoreLockedError), outcome["first"]
    assert re.search(rf"frame store '{url}': publishing .*: another export is writing it", str(outcome["first"]))
    assert "this one stops without publishing" in str(outcome["first"])
    assert not isinstance(outcome["second"], BaseException), outcome["second"]
    assert_same_store(url, local, s3_bucket.storage_options)


class FaultyRelay:
    """An HTTP relay on 127.0.0.1 in front of the moto server that answers ``500 InternalError`` to every PUT
    whose path contains ``fail`` (set or cleared while it runs); everything else goes through unchanged."""

    def __init__(self, upstream: str) -> None:
        import http.client
        import http.server
        from urllib.parse import urlsplit

        self.fail: str | None = None
        self.refused: list[str] = []
        target = urlsplit(upstream)
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "PUT" and relay.fail is not None and relay.fail in self.path:
                    relay.refused.append(self.path)
                    error = b"<Error><Code>InternalError</Code><Message>injected</Message></Error>"
                    self.send_response(500)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(error)))
                    self.end_headers()
                    self.wfile.write(error)
                    return
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = target.netloc
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self.server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.endpoint_url = f"http://{HOST}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def storage_options(self, bucket: Bucket) -> dict[str, Any]:
        """``bucket``'s storage options with the endpoint at this relay and one attempt per request (a PUT the
        relay refuses is not retried)."""
        return {**bucket.storage_options, "client_kwargs": {
            "endpoint_url": self.endpoint_url, "region_name": "us-east-1"},
            "config_kwargs": {"retries": {"max_attempts": 1, "mode": "standard"}}}  # fmt: skip

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_put_failing_mid_unit_gives_a_clear_error_and_a_rerun_completes(
    long_world: tuple[Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket
) -> None:
    ds, local = long_world
    url = s3_bucket.url("faulty")
    relay = FaultyRelay(s3_bucket.endpoint_url)
    try:
        options = relay.storage_options(s3_bucket)
        key = _unit_keys(local)["v1"]
        relay.fail = f"/units/{key}/frames/c.40.0.0.0"  # the middle of video v1's unit
        with dask_cluster.client() as client:
            with pytest.raises(StoreError) as info:
                export(
                    ds, url, format="zarr", frames="all", kinds=EVERY, progress=False,
                    executor=client.get_executor(), storage_options=options,
                )  # fmt: skip
            message = str(info.value)
            assert re.search(
                rf"export to '{url}' stopped: 1 of 3 frames units failed \(videos 'v1'\); the others "
                r"are written\. Video 'v1': StoreError: cannot write .*c\.40\.0\.0\.0'.*\(HTTP 500 InternalError\)\. Rerun",
                message,
            )
            assert message.endswith("Rerun the export to resume (the videos written are kept)")
            assert relay.refused and all(key in path for path in relay.refused)
            with pytest.raises(StoreError, match=r"is incomplete: its export failed: .*1 of 3 frames units failed"):
                open_store(url, storage_options=s3_bucket.storage_options)
            root = json.loads(s3_bucket.s3fs().cat(f"{url[5:]}/zarr.json"))["attributes"]
            assert list(root["failed_videos"]) == ["v1"] and "InternalError" in root["failed_videos"]["v1"]
            published = _published_units(s3_bucket.s3fs(), url)
            assert key not in published and len(published) == 2  # the other units went on
            relay.fail = None
            report = export(
                ds, url, format="zarr", frames="all", kinds=EVERY, progress=False,
                executor=client.get_executor(), storage_options=options,
            )  # fmt: skip
        assert report.frames_decoded == len(backend_for(local).open_video("v1").array("frame_number"))
    finally:
        relay.close()
    _assert_same_long_store(url, local, s3_bucket.storage_options)


def test_cli_export_on_the_dask_scheduler_into_s3(
    world: tuple[Path, Dataset, Path], dask_cluster: DaskCluster, s3_bucket: Bucket,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    _, ds, local = world
    url = s3_bucket.url("from-cli")
    options = json.dumps(s3_bucket.storage_options)
    code = main(["export", str(ds.path), url, "--format", "zarr", "--dask-scheduler", dask_cluster.address,
                 "--storage-options", options, "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and url in out
    # the same store as a local export of the command's default kinds (box, mask)
    default_kinds = local.parent / "local-default-kinds"
    export(ds, default_kinds, format="zarr", progress=False)
    remote = open_store(url, storage_options=s3_bucket.storage_options)
    there = open_store(default_kinds)
    assert remote.index == there.index and len(there) > 0
    for i in range(len(there)):
        assert_same_sample(remote.sample(i, with_masks=True), there.sample(i, with_masks=True))


def test_cli_dask_scheduler_errors(
    world: tuple[Path, Dataset, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dask

    from tests.services import free_port

    _, ds, _ = world
    address = f"tcp://{HOST}:{free_port()}"  # nothing listens there
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        assert main(["export", str(ds.path), "memory://x", "--format", "zarr", "--dask-scheduler", address]) == 1
    assert f"cannot reach the Dask scheduler at '{address}'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if Dask were not installed
    assert main(["export", str(ds.path), "memory://x", "--format", "zarr", "--dask-scheduler", address]) == 1
    assert "needs Dask's distributed scheduler: pip install 'vidlabel[dask]'" in capsys.readouterr().err


def test_dask_export_to_a_local_folder_equals_the_local_pool(
    world: tuple[Path, Dataset, Path], dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    _, ds, local = world
    with dask_cluster.client() as client:
        report = export(ds, tmp_path / "out", format="zarr", kinds=EVERY, progress=False,
                        executor=client.get_executor())  # fmt: skip
    assert report.frames_decoded == len(open_store(local))
    assert_same_store(tmp_path / "out", local)
    assert not (tmp_path / "out" / ".partial").exists()


def test_two_attempts_at_one_local_zarr_unit_write_apart_and_the_first_to_finish_publishes(tmp_path: Path) -> None:
    from vidlabel.store import get_codec
    from vidlabel.store._zarr import PARTIAL, ZarrBackend

    backend = ZarrBackend(tmp_path / "store")
    frames = np.arange(4 * 6 * 8 * 3, dtype=np.uint8).reshape(4, 6, 8, 3)
    codec, shape = get_codec("none"), (4, 6, 8, 3)
    first = backend.frames_writer("k", shape=shape, chunk_frames=2, codec=codec, attrs={"pixel_key": "p"})
    second = backend.frames_writer("k", shape=shape, chunk_frames=2, codec=codec, attrs={"pixel_key": "p"})
    assert first.dir != second.dir  # type: ignore[attr-defined]
    for writer in (first, second):
        for c in range(2):
            writer.write_chunk(c, frames[2 * c : 2 * c + 2].tobytes())
    import google_crc32c

    numbers = np.arange(4, dtype=np.int64)
    crc = np.array([google_crc32c.value(frames[2 * c : 2 * c + 2].tobytes()) for c in range(2)], np.uint32)
    first.commit(frame_number=numbers, crc32c=crc)
    second.commit(frame_number=numbers, crc32c=crc)  # finds the unit published and drops its own files
    assert sorted(p.name for p in (tmp_path / "store" / PARTIAL).iterdir()) == ["frames-k"]
    reader = backend.open_frames_unit("k")
    np.testing.assert_array_equal(np.concatenate([reader.read_chunk(c) for c in range(2)]), frames)
    assert backend.unit_published("k") and not backend.unit_published("other")


def test_an_export_into_a_url_writes_units_then_groups_after_their_arrays_and_the_root_last(
    world: tuple[Path, Dataset, Path], mem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, ds, _ = world
    order: list[tuple[str, str]] = []  # (how, key) of every write, in order
    lock = threading.Lock()
    real = {name: getattr(ObjectStore, name) for name in ("put", "put_new", "put_if", "put_many")}

    depth = threading.local()

    def spy(name: str) -> Any:
        def write(self: ObjectStore, key: Any, *args: Any) -> Any:
            if not getattr(depth, "n", 0):  # a write made by another write (put_if of a new key) counts once
                with lock:
                    order.extend((name, k) for k in (list(key) if name == "put_many" else [key]))
            depth.n = getattr(depth, "n", 0) + 1
            try:
                return real[name](self, key, *args)
            finally:
                depth.n -= 1

        return write

    for name in real:
        monkeypatch.setattr(ObjectStore, name, spy(name))
    export(ds, mem, format="zarr", kinds=EVERY, progress=False)
    keys = [k for _, k in order]
    assert order[0] == ("put_if", "zarr.json") and order[-1] == ("put_if", "zarr.json")  # conditional, first/last
    assert keys.count("zarr.json") == 2 and max(i for i, k in enumerate(keys) if k.startswith("index/")) < len(keys) - 1
    units = {k.split("/")[1] for k in keys if k.startswith("units/") and k != "units/zarr.json"}
    assert len(units) == len(VIDEOS)
    for unit in units:
        inside = [i for i, k in enumerate(keys) if k.startswith(f"units/{unit}/")]
        assert keys.index(f"units/{unit}/zarr.json") == max(inside)  # 'complete' after all its objects
        assert all(how == "put_new" for how, k in order if k.startswith(f"units/{unit}/"))  # create-only
    for vid in VIDEOS:
        group = keys.index(f"videos/{vid}/zarr.json")
        inside = [i for i, k in enumerate(keys) if k.startswith(f"videos/{vid}/")]
        assert group == max(inside)  # the group after its arrays
        unit = json.loads(fsspec.filesystem("memory").cat(f"{mem}/videos/{vid}/zarr.json"))["attributes"]["frames_key"]
        assert keys.index(f"units/{unit}/zarr.json") < group  # and after its frames unit is complete


def test_when_every_video_fails_on_the_workers_the_refusal_says_none_was_written(
    tmp_path: Path, dask_cluster: DaskCluster, s3_bucket: Bucket
) -> None:
    """Before: "2 of 2 frames units failed ...; the others are written", when there were none."""
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path, videos=("a", "b"), n_frames=6)
    for vid in ("a", "b"):
        (tmp_path / f"{vid}.mp4").rename(tmp_path / f"{vid}.moved")
    url, options = s3_bucket.url("none"), s3_bucket.storage_options
    with dask_cluster.client() as client:
        with pytest.raises(
            VideoNotFoundError, match=r"2 of 2 frames units failed \(videos '[ab]', '[ab]'\); none was written"
        ):
            export(ds, url, format="zarr", progress=False, executor=client.get_executor(), storage_options=options)


def test_a_video_failing_on_a_worker_is_named_the_others_are_written_and_the_store_says_which(
    tmp_path: Path, dask_cluster: DaskCluster, s3_bucket: Bucket
) -> None:
    import shutil

    from tests.media import encode_clip
    from tests.store_support import H, W
    from vidlabel.errors import StoreIncompleteError, VideoChangedError, VideoNotFoundError

    ds = make_dataset(tmp_path, videos=("a", "b", "c"), n_frames=12)
    export(ds, tmp_path / "local", format="zarr", progress=False)
    keep = tmp_path / "keep"
    keep.mkdir()
    shutil.copy2(tmp_path / "a.mp4", keep / "a.mp4")
    encode_clip(tmp_path / "a.mp4", n_frames=20, width=W, height=H, gop=5)  # 'a': same name, other bytes
    (tmp_path / "c.mp4").rename(keep / "c.mp4")  # 'c': gone from where it was registered
    url, options = s3_bucket.url("failing"), s3_bucket.storage_options
    with dask_cluster.client() as client:
        with pytest.raises((VideoChangedError, VideoNotFoundError)) as info:
            export(ds, url, format="zarr", progress=False, executor=client.get_executor(), storage_options=options)
        message = str(info.value)
        assert re.search(r"2 of 3 frames units failed \(videos '[ac]', '[ac]'\); the other is written", message)
        # the file was read where the worker runs: on a cluster that may not be the file this machine sees
        assert message.endswith(
            ". The file was read on an executor's worker: if the file on this machine is the registered one, the "
            "workers see another file (or none) at that path: another machine or mount"
        )
        if isinstance(info.value, VideoChangedError):  # the first failure to come back is raised, as without Dask
            assert info.value.video_id == "a" and re.search(r"video 'a' changed on disk", message)
        else:
            assert info.value.video_id == "c" and "'c'" in message
        with pytest.raises(StoreIncompleteError, match=r"its export failed: .*2 of 3 frames units failed"):
            open_store(url, storage_options=options)
        root = json.loads(s3_bucket.s3fs().cat(f"{url[5:]}/zarr.json"))["attributes"]
        assert sorted(root["failed_videos"]) == ["a", "c"]
        assert "VideoChangedError" in root["failed_videos"]["a"] and "VideoNotFoundError" in root["failed_videos"]["c"]
        assert backend_for(url, storage_options=options).video_ids() == ["b"]  # the video that worked is published
        shutil.copy2(keep / "a.mp4", tmp_path / "a.mp4")
        report = export(ds, url, format="zarr", progress=False, executor=client.get_executor(),
                        storage_options=options, roots=[keep])  # fmt: skip
    assert report.videos_up_to_date == 1
    remote, here = open_store(url, storage_options=options), open_store(tmp_path / "local")
    assert remote.index == here.index
    for i in range(len(here)):
        assert_same_sample(remote.sample(i, with_masks=True), here.sample(i, with_masks=True))


def test_a_thread_pool_may_export_into_memory(world: tuple[Path, Dataset, Path], mem: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    _, ds, local = world
    with ThreadPoolExecutor(2) as pool:
        report = export(ds, mem, format="zarr", kinds=EVERY, progress=False, executor=pool)
    assert report.frames_decoded == len(open_store(local))
    assert_same_store(mem, local)
