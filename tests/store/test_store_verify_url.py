"""``verify_store`` / ``vidlabel verify`` over an S3 URL: stray objects listed, damaged groups named as damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services import Bucket
from tests.store_support import make_dataset
from vidlabel import Dataset, export
from vidlabel.store import upload, verify_store


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("verify_url")
    ds = make_dataset(root, videos=("a", "b"), n_frames=8)
    export(ds, root / "zarr", format="zarr", progress=False)
    return root / "zarr", ds


def test_a_stray_object_under_a_dot_dot_key_is_listed_and_the_store_checked(
    local_store: tuple[Path, Dataset], s3_bucket: Bucket
) -> None:
    # before: verify aborted with "key 'videos/../zarr.json' ... leaves the store" and checked nothing
    url = s3_bucket.url("stray")
    upload(local_store[0], url, storage_options=s3_bucket.storage_options)
    fs = s3_bucket.s3fs()
    fs.pipe(f"{s3_bucket.name}/stray/videos/../junk", b"planted")
    report = verify_store(url, storage_options=s3_bucket.storage_options, progress=False)
    assert report["problems"] == [
        f"{url}: stray objects under 'videos/../' (a key with a '', '.' or '..' part: no part of the store, not "
        "read): remove them"
    ]
    assert report["chunks"] == report["chunks_total"] > 0 and report["videos"] == 2


def test_a_damaged_video_group_is_reported_damaged_not_missing(
    local_store: tuple[Path, Dataset], s3_bucket: Bucket
) -> None:
    # before: "video 'a' is listed in the root but has no group", though its group is there with damaged metadata
    url = s3_bucket.url("damaged")
    upload(local_store[0], url, storage_options=s3_bucket.storage_options)
    fs = s3_bucket.s3fs()
    key = f"{s3_bucket.name}/damaged/videos/a/zarr.json"
    fs.pipe(key, fs.cat(key)[:-20])
    report = verify_store(url, storage_options=s3_bucket.storage_options, progress=False)
    problems = [p for p in report["problems"] if "'a'" in p]
    assert problems == [
        f"{url}: video 'a': cannot be read: frame store {url!r}: the group of video 'a' is damaged: its metadata "
        f"{url + '/videos/a/zarr.json'!r} is not a JSON object of Zarr metadata: the store was changed after "
        "export; restore it, or export again into an empty folder"
    ], report["problems"]
    assert not [p for p in report["problems"] if "'b'" in p]
