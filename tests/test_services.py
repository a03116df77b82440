"""The real test services work: moto S3 through s3fs, obstore and boto3 (conditional writes included), a Dask
cluster running this checkout's vidlabel, and a Zarr store uploaded to s3:// read back with the right pixels."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import obstore
import psutil
import pytest
import torch
from botocore.exceptions import ClientError
from obstore.exceptions import AlreadyExistsError, PreconditionError
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.services import HOST, REPO, Bucket, DaskCluster, MotoServer
from tests.store_support import assert_same_sample, make_dataset
from vidlabel import export, open_store
from vidlabel.store import upload, verify_store
from vidlabel.torch_data import StoreFrames, collate_frames

EVERY = ("box", "mask", "marker")


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


# -- moto -------------------------------------------------------------------------------------------------------------


def test_moto_listens_on_loopback_only(moto_server: MotoServer) -> None:
    assert moto_server.endpoint_url.startswith(f"http://{HOST}:")
    ports = [c.laddr for c in psutil.Process(moto_server.pid).net_connections("tcp") if c.status == "LISTEN"]
    assert ports and all(addr.ip == HOST for addr in ports)


def test_s3fs_and_obstore_round_trip(s3_bucket: Bucket) -> None:
    fs = s3_bucket.s3fs()
    store = s3_bucket.obstore()
    payload = np.arange(1000, dtype=np.uint16).tobytes()
    fs.pipe(f"{s3_bucket.name}/a/by-s3fs", payload)
    assert bytes(obstore.get(store, "a/by-s3fs").bytes()) == payload
    obstore.put(store, "a/by-obstore", b"written by obstore")
    assert fs.cat(f"{s3_bucket.name}/a/by-obstore") == b"written by obstore"
    assert sorted(fs.ls(f"{s3_bucket.name}/a")) == [f"{s3_bucket.name}/a/by-obstore", f"{s3_bucket.name}/a/by-s3fs"]
    other = s3_bucket.obstore(prefix="a")  # a prefixed store sees the same objects under shorter keys
    assert bytes(obstore.get(other, "by-obstore").bytes()) == b"written by obstore"


def test_a_create_only_put_on_an_existing_key_is_refused_with_412(s3_bucket: Bucket) -> None:
    store = s3_bucket.obstore()
    obstore.put(store, "root/zarr.json", b"first", mode="create")
    with pytest.raises(AlreadyExistsError, match="412"):
        obstore.put(store, "root/zarr.json", b"second", mode="create")
    assert bytes(obstore.get(store, "root/zarr.json").bytes()) == b"first"
    # the same at the HTTP level: PUT with If-None-Match: * answers 412 Precondition Failed
    import boto3

    s3 = boto3.client("s3", region_name="us-east-1", **_boto_kwargs(s3_bucket))
    with pytest.raises(ClientError) as info:
        s3.put_object(Bucket=s3_bucket.name, Key="root/zarr.json", Body=b"third", IfNoneMatch="*")
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert info.value.response["Error"]["Code"] == "PreconditionFailed"
    assert bytes(obstore.get(store, "root/zarr.json").bytes()) == b"first"


def test_an_if_match_put_with_a_stale_etag_is_refused(s3_bucket: Bucket) -> None:
    store = s3_bucket.obstore()
    first = obstore.put(store, "root", b'{"complete": false}')
    second = obstore.put(store, "root", b'{"complete": true}', mode={"e_tag": first["e_tag"]})
    assert second["e_tag"] != first["e_tag"]
    with pytest.raises(PreconditionError, match="412"):
        obstore.put(store, "root", b'{"complete": "again"}', mode={"e_tag": first["e_tag"]})
    assert bytes(obstore.get(store, "root").bytes()) == b'{"complete": true}'


def _boto_kwargs(bucket: Bucket) -> dict[str, str]:
    options = bucket.storage_options
    return {
        "endpoint_url": options["client_kwargs"]["endpoint_url"],
        "aws_access_key_id": options["key"],
        "aws_secret_access_key": options["secret"],
    }


def test_s3_env_points_clients_at_moto(s3_env: MotoServer, s3_bucket: Bucket) -> None:
    import s3fs

    assert os.environ["AWS_ENDPOINT_URL"] == s3_env.endpoint_url
    fs = s3fs.S3FileSystem(skip_instance_cache=True)  # no options: everything from the environment
    fs.pipe(f"{s3_bucket.name}/k", b"from env")
    assert s3_bucket.s3fs().cat(f"{s3_bucket.name}/k") == b"from env"


# -- Dask ---------------------------------------------------------------------------------------------------------------


def where_am_i(x: int) -> tuple[int, int, str]:
    import vidlabel

    return x * x, os.getpid(), vidlabel.__file__


def test_dask_cluster_runs_tasks_with_this_checkouts_vidlabel(dask_cluster: DaskCluster) -> None:
    assert dask_cluster.address.startswith(f"tcp://{HOST}:")
    assert len(dask_cluster.worker_pids) == 2 and all(a.startswith(f"tcp://{HOST}:") for a in dask_cluster.worker_pids)
    with dask_cluster.client() as client:
        futures = [client.submit(where_am_i, x, pure=False) for x in range(6)]
        results = client.gather(futures)
    assert [r[0] for r in results] == [x * x for x in range(6)]
    assert {r[1] for r in results} <= set(dask_cluster.current_worker_pids().values())
    assert os.getpid() not in {r[1] for r in results}
    assert {Path(r[2]) for r in results} == {REPO / "vidlabel" / "__init__.py"}
    with dask_cluster.client() as client:
        executor = client.get_executor()  # the concurrent.futures face that export(executor=...) will take
        assert next(iter(executor.map(where_am_i, [3])))[0] == 9


# -- a Zarr store on S3 -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("s3_store")
    ds = make_dataset(root, videos=("a", "b"), n_frames=16)
    export(ds, root / "zarr", format="zarr", codec="zstd", chunk_frames=4, kinds=EVERY, progress=False)
    return root / "zarr"


def test_a_store_uploaded_to_s3_reads_like_the_local_one(local_store: Path, s3_bucket: Bucket) -> None:
    url = s3_bucket.url("stores/train")
    report = upload(local_store, url, storage_options=s3_bucket.storage_options)
    assert report.stores == [url] and report.uploaded == report.objects > 0
    remote, local = open_store(url, storage_options=s3_bucket.storage_options), open_store(local_store)
    assert len(remote) == len(local) > 0 and tuple(remote.video_ids) == tuple(local.video_ids) == ("a", "b")
    assert remote.index == local.index
    for i in range(len(local)):
        assert_same_sample(remote.sample(i, with_masks=True), local.sample(i, with_masks=True))
    assert verify_store(url, storage_options=s3_bucket.storage_options)["ok"]
    frames = StoreFrames(remote, kinds=EVERY)
    for i in (0, len(frames) - 1):
        sample = frames[i]
        assert read_frame_number(sample["image"].permute(1, 2, 0).numpy()) == sample["frame_index"]


def test_dataloader_workers_read_the_s3_store(local_store: Path, s3_bucket: Bucket) -> None:
    url = s3_bucket.url("store")
    upload(local_store, url, storage_options=s3_bucket.storage_options)
    frames = StoreFrames(open_store(url, storage_options=s3_bucket.storage_options), kinds=EVERY)
    loader = DataLoader(
        frames, batch_size=5, shuffle=True, num_workers=2, collate_fn=collate_frames,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    got = []
    for batch in loader:
        for k, frame in enumerate(batch["frame_index"].tolist()):
            assert read_frame_number(batch["image"][k].permute(1, 2, 0).numpy()) == frame
            got.append((batch["video_id"][k], frame))
    assert Counter(got) == Counter(frames.index)


def test_open_store_refuses_a_store_missing_on_s3(s3_bucket: Bucket) -> None:
    from vidlabel.errors import StoreError

    with pytest.raises(StoreError, match=r"s3://vidlabel-"):
        open_store(s3_bucket.url("nothing-here"), storage_options=s3_bucket.storage_options)
