"""Real services for the tests, on 127.0.0.1 only: an S3 API server (moto) and a Dask cluster.

Each runs as its own subprocess, started by a session fixture in ``tests/conftest.py`` the first time a test
asks for it and stopped by PID at the end of the session (terminate, wait, kill). Nothing binds or reaches
a non-loopback address: moto and the Dask scheduler, workers and dashboards are all given ``127.0.0.1``.

- :class:`MotoServer` is a real S3 HTTP API (``moto_server``): reads and writes go through ``s3fs`` and
  ``obstore`` exactly as against AWS, with ``endpoint_url`` pointing here. It honours conditional writes
  (``If-None-Match: *`` on an existing key answers 412), which the exporter's create-only publish relies on.
- :class:`DaskCluster` is ``dask scheduler`` plus ``dask worker --nworkers 2 --nthreads 1`` (with nannies,
  so a SIGKILLed worker is restarted and its task rescheduled). Worker processes get ``PYTHONPATH`` with
  this checkout first, so they import the vidlabel under test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
#: Credentials moto accepts (any are accepted; these are the conventional test ones).
KEY = SECRET = "testing"
REGION = "us-east-1"
#: Bound of every wait for a service to come up (seconds); a slow shared machine can take a few.
START_TIMEOUT_S = 60.0


class ServiceError(RuntimeError):
    """A test service did not start (its log tail is in the message)."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


def _bin(name: str) -> str:
    """The console script ``name`` of the running interpreter's environment."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@dataclass
class _Process:
    """A started subprocess, its log file and its psutil handle (which guards against a reused PID)."""

    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def check_alive(self, what: str) -> None:
        if self.popen.poll() is not None:
            raise ServiceError(f"{what} exited with status {self.popen.returncode}:\n{_tail(self.log)}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """Terminate by PID, wait, then kill."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout_s)


def _start(args: list[str], log: Path, env: dict[str, str]) -> _Process:
    handle = log.open("wb")
    try:
        popen = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    finally:
        handle.close()  # the child holds its own descriptor
    return _Process(popen, log)


def _kill_pid(pid: int, created: float) -> None:
    """SIGKILL ``pid`` if it is still the process that was started at ``created`` (not a reused PID)."""
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - created) < 1e-3:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
    except (psutil.NoSuchProcess, psutil.TimeoutExpired):
        pass


# -- S3: moto -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """A bucket on the moto server, with the client options that reach it."""

    name: str
    endpoint_url: str

    def url(self, key: str = "") -> str:
        """``s3://bucket/key``."""
        return f"s3://{self.name}/{key.lstrip('/')}" if key else f"s3://{self.name}"

    @property
    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options: ``open_store(url, storage_options=...)``, ``upload(..., storage_options=...)``."""
        return {
            "key": KEY,
            "secret": SECRET,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": REGION},
        }

    @property
    def obstore_options(self) -> dict[str, Any]:
        """Keyword arguments of ``obstore.store.S3Store(bucket, **options)`` (or ``from_url(url, **options)``)."""
        return {
            "endpoint": self.endpoint_url,
            "access_key_id": KEY,
            "secret_access_key": SECRET,
            "region": REGION,
            "client_options": {"allow_http": True},
        }

    def obstore(self, prefix: str | None = None) -> Any:
        """An ``obstore.store.S3Store`` on this bucket (optionally under ``prefix``)."""
        from obstore.store import S3Store

        return S3Store(self.name, prefix=prefix, **self.obstore_options)

    def s3fs(self) -> Any:
        """An ``s3fs.S3FileSystem`` that reaches this server (paths are ``bucket/key``)."""
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options)


@dataclass
class MotoServer:
    """A running ``moto_server`` on 127.0.0.1."""

    endpoint_url: str
    process: _Process

    @property
    def pid(self) -> int:
        return self.process.pid

    def env(self) -> dict[str, str]:
        """Environment variables that point AWS clients (boto3, s3fs, obstore, a CLI subprocess) here."""
        return {
            "AWS_ACCESS_KEY_ID": KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ENDPOINT_URL_S3": self.endpoint_url,
            "AWS_ALLOW_HTTP": "true",
            "NO_PROXY": f"{HOST},localhost",
            "no_proxy": f"{HOST},localhost",
        }

    def make_bucket(self, name: str | None = None) -> Bucket:
        """Create a fresh bucket (a unique name unless given) and return it."""
        import boto3

        name = name or f"vidlabel-{uuid.uuid4().hex[:12]}"
        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=REGION,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
        )
        client.create_bucket(Bucket=name)
        return Bucket(name, self.endpoint_url)

    def stop(self) -> None:
        self.process.stop()


def _http_ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    try:
        with opener.open(url, timeout=2) as response:
            return int(response.status) < 500
    except urllib.error.HTTPError as err:
        return err.code < 500
    except OSError:
        return False


def start_moto(log_dir: Path) -> MotoServer:
    """Start ``moto_server -H 127.0.0.1 -p PORT`` on a free port and wait (bounded) until it answers HTTP."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": REGION})
    last = ""
    for attempt in range(3):  # a port picked free can be taken before the server binds it: pick another
        port = free_port()
        endpoint = f"http://{HOST}:{port}"
        proc = _start([_bin("moto_server"), "-H", HOST, "-p", str(port)], log_dir / f"moto-{attempt}.log", env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and proc.popen.poll() is None:
            if _http_ready(f"{endpoint}/moto-api/"):
                return MotoServer(endpoint, proc)
            time.sleep(0.1)
        last = _tail(proc.log)
        proc.stop()
    raise ServiceError(f"moto_server did not answer on {HOST} within {START_TIMEOUT_S} s:\n{last}")


# -- Dask ----------------------------------------------------------------------------------------------------------


def worker_env() -> dict[str, str]:
    """The environment of Dask processes: this checkout first on PYTHONPATH, no inherited sharding variables."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        env.pop(name, None)
    env["NO_PROXY"] = env["no_proxy"] = f"{HOST},localhost"
    return env


@dataclass
class DaskCluster:
    """A running ``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` (with nannies) on 127.0.0.1.

    ``worker_pids`` maps each worker's address to its PID as started; :meth:`current_worker_pids` asks the
    cluster again (a nanny restarts a killed worker under a new PID and address).
    """

    address: str
    n_workers: int
    scheduler: _Process
    workers: _Process
    worker_pids: dict[str, int]
    _children: list[tuple[int, float]] = field(default_factory=list)

    @contextmanager
    def client(self, **kwargs: Any) -> Iterator[Any]:
        """A ``distributed.Client`` connected to the scheduler, closed on exit."""
        from distributed import Client

        with Client(self.address, timeout=START_TIMEOUT_S, **kwargs) as client:
            yield client

    def current_worker_pids(self) -> dict[str, int]:
        """Worker address -> PID, asked of the running workers."""
        with self.client() as client:
            return {str(k): int(v) for k, v in client.run(os.getpid).items()}

    def wait_for_workers(self, n: int | None = None) -> None:
        """Block (bounded) until ``n`` (default: all) workers are connected again, e.g. after a kill."""
        with self.client() as client:
            client.wait_for_workers(self.n_workers if n is None else n, timeout=START_TIMEOUT_S)

    def stop(self) -> None:
        """Terminate the worker command (its nannies close their workers), then the scheduler; then SIGKILL any
        nanny or worker process of the cluster still alive, by PID."""
        self.workers.stop()
        self.scheduler.stop()
        for pid, created in self._children:
            _kill_pid(pid, created)


def start_dask(work_dir: Path, *, n_workers: int = 2) -> DaskCluster:
    """Start a scheduler and ``n_workers`` worker processes on 127.0.0.1; wait (bounded) until all connect."""
    work_dir.mkdir(parents=True, exist_ok=True)
    env = worker_env()
    scheduler_file = work_dir / "scheduler.json"
    scheduler = _start(
        [_bin("dask"), "scheduler", "--host", HOST, "--port", "0", "--dashboard-address", f"{HOST}:0",
         "--scheduler-file", str(scheduler_file), "--no-show"],
        work_dir / "scheduler.log", env,
    )  # fmt: skip
    workers: _Process | None = None
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        address = ""
        while not address:
            scheduler.check_alive("dask scheduler")
            if time.monotonic() > deadline:
                raise ServiceError(f"dask scheduler wrote no {scheduler_file} in {START_TIMEOUT_S} s")
            try:
                address = str(json.loads(scheduler_file.read_text())["address"])
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        if not address.startswith(f"tcp://{HOST}:"):
            raise ServiceError(f"dask scheduler listens on {address}, not on {HOST}")
        workers = _start(
            [_bin("dask"), "worker", address, "--nworkers", str(n_workers), "--nthreads", "1", "--host", HOST,
             "--dashboard-address", f"{HOST}:0", "--local-directory", str(work_dir / "workers"),
             "--memory-limit", "0", "--death-timeout", "60",
             # fsspec imported whole at worker start: a task thread importing it while the comm thread imports
             # a test module that does (client.run) sees a half-initialised fsspec ("no attribute 'utils'")
             "--preload", "fsspec", "--preload", "s3fs"],
            work_dir / "workers.log", env,
        )  # fmt: skip
        from distributed import Client

        with Client(address, timeout=START_TIMEOUT_S) as client:
            try:
                client.wait_for_workers(n_workers, timeout=START_TIMEOUT_S)
            except TimeoutError as err:
                workers.check_alive("dask worker")
                raise ServiceError(f"{n_workers} dask workers did not connect:\n{_tail(workers.log)}") from err
            pids = {str(k): int(v) for k, v in client.run(os.getpid).items()}
            nannies = {int(v) for v in client.run(os.getppid).values()}
        children = []
        for pid in [*pids.values(), *nannies]:
            try:
                children.append((pid, psutil.Process(pid).create_time()))
            except psutil.NoSuchProcess:
                pass
        return DaskCluster(address, n_workers, scheduler, workers, pids, children)
    except BaseException:
        if workers is not None:
            workers.stop()
        scheduler.stop()
        raise
