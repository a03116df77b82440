"""An object-store endpoint that accepts connections and never answers: bounded timeouts, a message naming it."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from vidlabel.errors import StoreError, SwitchValueWarning
from vidlabel.store._remote import ObjectStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a socket that accepts every connection and never sends a byte."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)  # wakes the accept() under way
        server.close()
        for conn in held:
            conn.close()
        thread.join(10)


def test_cli_info_on_an_endpoint_that_never_answers_fails_naming_it(silent_endpoint: str) -> None:
    # before: botocore's defaults (60 s reads, retried by botocore and s3fs, nested): `vidlabel info` failed
    # after 7 minutes, an export into it was silent after 10; the guard below is far above the bound
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "FSSPEC_S3_ENDPOINT_URL": silent_endpoint,
        "FSSPEC_S3_KEY": "testing",
        "FSSPEC_S3_SECRET": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "VIDLABEL_OBJECT_STORE_TIMEOUT_S": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "vidlabel", "info", "s3://bucket/store"],
        env=env, capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip()
    assert re.fullmatch(
        r"vidlabel: error: cannot read 's3://bucket/store/zarr\.json': ReadTimeoutError: .*; the endpoint "
        + re.escape(silent_endpoint)
        + r" did not answer within 1 s \(connect and read timeout, 2 tries\): check that it is up, or allow more "
        r"time with VIDLABEL_OBJECT_STORE_TIMEOUT_S / VIDLABEL_OBJECT_STORE_TRIES or the storage option "
        r"config_kwargs=\{'read_timeout': \.\.\.\} \(docs/how-to/object-stores-timeouts\.md\)",
        said,
    ), said


def test_storage_options_naming_the_endpoint_and_a_timeout_are_honoured(silent_endpoint: str) -> None:
    options = {
        "key": "testing", "secret": "testing", "config_kwargs": {"read_timeout": 0.5, "connect_timeout": 0.5},
        "client_kwargs": {"endpoint_url": silent_endpoint, "region_name": "us-east-1"},
    }  # fmt: skip
    store = ObjectStore("s3://bucket/store", options)
    said = rf"cannot read 's3://bucket/store/zarr\.json': .*the endpoint {re.escape(silent_endpoint)} did not answer "
    with pytest.raises(StoreError, match=said + r"within 0\.5 s"):
        store.get("zarr.json")
    assert store.fs.retries == 2


def test_s3_options_get_bounded_timeouts_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from vidlabel.store._remote import DEFAULT_TIMEOUT_S, with_timeouts

    monkeypatch.delenv("VIDLABEL_OBJECT_STORE_TIMEOUT_S", raising=False)
    got = with_timeouts("s3://b/k", {"key": "x"})
    assert got == {"key": "x", "config_kwargs": {
        "connect_timeout": DEFAULT_TIMEOUT_S, "read_timeout": DEFAULT_TIMEOUT_S,
        "retries": {"max_attempts": 1, "mode": "standard"}}}  # fmt: skip
    mine = with_timeouts("s3://b/k", {"config_kwargs": {"read_timeout": 300, "retries": {"max_attempts": 9}}})
    assert mine["config_kwargs"] == {"connect_timeout": DEFAULT_TIMEOUT_S, "read_timeout": 300,
                                     "retries": {"max_attempts": 9}}  # fmt: skip
    assert with_timeouts("memory://k", {"a": 1}) == {"a": 1}
    monkeypatch.setenv("VIDLABEL_OBJECT_STORE_TIMEOUT_S", "2.5")
    assert with_timeouts("s3://b/k", {})["config_kwargs"]["read_timeout"] == 2.5
    monkeypatch.setenv("VIDLABEL_OBJECT_STORE_TIMEOUT_S", "soon")
    with pytest.warns(SwitchValueWarning, match=r"VIDLABEL_OBJECT_STORE_TIMEOUT_S='soon' is not a number of seconds"):
        assert with_timeouts("s3://b/k", {})["config_kwargs"]["read_timeout"] == DEFAULT_TIMEOUT_S
