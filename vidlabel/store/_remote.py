"""Frame stores on object stores (S3, GCS, Azure, HTTP, ``memory://``, ``file://``): read a Zarr store from a
URL, and upload a local one so that no reader ever sees a partial store as complete.

Reading: :func:`vidlabel.open_store` (and everything built on it: ``StoreFrames``,
``StoreStream``, ``FrameSamples(cache=...)``, ``vidlabel info`` / ``verify``)
accepts any fsspec URL. A plain local path keeps the fast local reader (direct
file reads); a URL (``file://`` included) is read through :class:`ObjectStore`,
a small key -> bytes layer over fsspec (``cat_file``, and ``cat`` of several
keys at once, which fetches them concurrently on S3, GCS, Azure and HTTP). The
fsspec filesystem opens lazily in each process, so stores read from URLs
pickle into DataLoader workers under fork and spawn. The ``complete`` markers
are checked as for local stores. Only Zarr stores can be read from URLs: HDF5
needs a local file.

Writing: an export with ``format="zarr"`` writes straight into an object store
(:class:`vidlabel.store._zarr_url.ZarrURLBackend`). Object stores have no rename and
no locks, so it relies on conditional writes instead (:meth:`ObjectStore.put_new`,
:meth:`ObjectStore.put_if`): create-only PUTs (``If-None-Match: *``) for every
object of a frames unit, and ``If-Match`` on the root's ETag to publish. A store
already on disk goes up with :mod:`vidlabel.store._upload`.


fsspec (a small pure-Python dependency) is imported only when a URL is used,
so ``import vidlabel`` and local stores never load it; the filesystem packages
(``s3fs``, ``gcsfs``, ``adlfs``, ...) are the user's to install. Credentials
come from ``storage_options`` or, for the command line, from fsspec's
configuration (e.g. the ``FSSPEC_S3_*`` environment variables).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidlabel.errors import OptionError, StoreError
from vidlabel.store._fs import load_store_json
from vidlabel.store._remote_writes import (
    _MEMORY_LOCK,
    StoreConflict,
    _digest_tag,
    _file_create,
    _file_replace_if,
    _http_status,
    _precondition_failed,
)

__all__ = ["ObjectStore", "StoreConflict", "find_url_stores", "is_url", "parse_json", "refuse_url_output"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+(://|::)")


def is_url(path: Any) -> bool:
    """True for an fsspec URL (``s3://...``, ``memory://...``, ``file://...``, ``simplecache::s3://...``).

    A plain path (also ``C:\\...`` on Windows) is not a URL.
    """
    return isinstance(path, str) and _URL.match(path) is not None


def refuse_url_output(out: Any, *, format: str, what: str = "export") -> None:
    """Raise :class:`OptionError` if an export's ``out`` is a URL and ``format`` is not ``"zarr"``.

    Zarr stores are written straight into object stores (:class:`vidlabel.store._zarr_url.ZarrURLBackend`);
    HDF5 needs a local file, and a MediaSequence export writes a local folder of shards.

    Raises
    ------
    OptionError
        If ``out`` is a URL and the format is not Zarr; the message says to use ``format='zarr'``.
    """
    if not is_url(out) or format == "zarr":
        return
    why = "HDF5 stores are local only" if format == "hdf5" else f"format={format!r} writes a local folder"
    raise OptionError(
        f"cannot {what} to {out!r} with format={format!r}: {why}; {what} to a URL with "
        "format='zarr' (written straight into the object store), or to a local folder"
    )


def _hdf5_error(url: str) -> StoreError:
    return StoreError(
        f"{url!r} holds an HDF5 frame store (store.h5): HDF5 stores are read from local folders only. "
        "Copy it to a local folder, or export with format='zarr' and upload that (vidlabel upload)",
        path=url,
    )


_OPEN_LOCK = threading.Lock()


#: Seconds an S3 request waits to connect, and for each read of its answer, unless told otherwise.
DEFAULT_TIMEOUT_S = 10.0
#: How many times s3fs tries an S3 request that failed on the network or timed out, unless told otherwise.
DEFAULT_TRIES = 2
_TIMEOUT_ENV = "VIDLABEL_OBJECT_STORE_TIMEOUT_S"
_TRIES_ENV = "VIDLABEL_OBJECT_STORE_TRIES"
_TIMEOUT_DOC = "docs/how-to/object-stores-timeouts.md"


def _env_number(name: str, default: float, what: str, *, whole: bool = False) -> float:
    """The number above 0 environment variable ``name`` holds (a whole one if ``whole``), else ``default`` (a
    value that is no such number warns, a :class:`~vidlabel.errors.SwitchValueWarning`)."""
    import math
    import warnings

    from vidlabel.errors import SwitchValueWarning

    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw) if not whole or (raw.isascii() and raw.isdigit()) else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        warnings.warn(f"{name}={raw[:40]!r} is not {what}: {default:g} is used", SwitchValueWarning, stacklevel=3)
        return default
    return value


def _timeout_s() -> float:
    """``VIDLABEL_OBJECT_STORE_TIMEOUT_S`` (seconds, > 0), else :data:`DEFAULT_TIMEOUT_S`."""
    return _env_number(_TIMEOUT_ENV, DEFAULT_TIMEOUT_S, "a number of seconds above 0")


def _tries() -> int:
    """``VIDLABEL_OBJECT_STORE_TRIES`` (a whole number >= 1), else :data:`DEFAULT_TRIES`."""
    return int(_env_number(_TRIES_ENV, DEFAULT_TRIES, "a whole number of tries from 1 up", whole=True))


def with_timeouts(url: str, storage_options: Mapping[str, Any]) -> dict[str, Any]:
    """``storage_options`` for ``url`` with bounded request timeouts and retries added where none are given.

    For S3 (s3fs, through botocore's ``config_kwargs``): ``connect_timeout`` and ``read_timeout`` of
    ``VIDLABEL_OBJECT_STORE_TIMEOUT_S`` seconds (default :data:`DEFAULT_TIMEOUT_S`) and one botocore attempt
    per s3fs try (``retries={"max_attempts": 1, "mode": "standard"}``: s3fs tries again itself, see
    :func:`_bound_tries`). Keys the caller gives in ``config_kwargs`` (or fsspec's configuration, e.g.
    ``FSSPEC_S3``) win. Other protocols are returned as given (their own storage options set their timeouts).
    """
    options = dict(storage_options)
    if url.split(":", 1)[0].lower() not in ("s3", "s3a"):
        return options
    try:
        from fsspec.config import conf
    except ImportError:  # pragma: no cover - fsspec is a dependency
        conf = {}
    configured = dict(conf.get("s3", {}).get("config_kwargs") or {})
    given = {**configured, **dict(options.get("config_kwargs") or {})}
    timeout = _timeout_s()
    defaults = {
        "connect_timeout": timeout,
        "read_timeout": timeout,
        "retries": {"max_attempts": 1, "mode": "standard"},
    }
    options["config_kwargs"] = {**defaults, **given}
    return options


def _bound_tries(fs: Any) -> None:
    """Let s3fs try a request ``VIDLABEL_OBJECT_STORE_TRIES`` times (default :data:`DEFAULT_TRIES`), not its own 5:
    it nests its tries (a read is tried 5 times, each of them a request tried 5 times), so an endpoint that never
    answers took 25 timeouts to report."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if {"s3", "s3a"} & set(protocols) and isinstance(getattr(fs, "retries", None), int):
        fs.retries = _tries()


def _timed_out(err: BaseException) -> bool:
    """True if ``err`` (or an error behind it) is a connect or read timeout of a request."""
    import asyncio
    import socket

    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        names = {c.__name__ for c in type(cause).__mro__}
        if isinstance(cause, (TimeoutError, socket.timeout, asyncio.TimeoutError)) or names & {
            "ConnectTimeoutError", "ReadTimeoutError", "FSTimeoutError", "ServerTimeoutError",
        }:  # fmt: skip
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _endpoint(fs: Any, storage_options: Mapping[str, Any]) -> str:
    """The endpoint an S3 filesystem sends its requests to, for messages."""
    client = dict(storage_options.get("client_kwargs") or {})
    for value in (
        storage_options.get("endpoint_url"),
        client.get("endpoint_url"),
        getattr(fs, "endpoint_url", None),
        (getattr(fs, "client_kwargs", None) or {}).get("endpoint_url"),
        os.environ.get("AWS_ENDPOINT_URL_S3"),
        os.environ.get("AWS_ENDPOINT_URL"),
    ):
        if value:
            return str(value)
    return "the default AWS S3 endpoint"


def _url_to_fs(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError as err:  # pragma: no cover - fsspec is a dependency
        raise StoreError(f"reading {url!r} needs fsspec: pip install fsspec") from err
    try:
        fs, root = url_to_fs(url, **with_timeouts(url, storage_options))
        _bound_tries(fs)
    except (ImportError, ValueError, TypeError) as err:
        raise StoreError(f"cannot open {url!r} with fsspec: {err}", path=url) from err
    return fs, str(root).rstrip("/")


class ObjectStore:
    """The objects under one URL, as keys (``"videos/cam/zarr.json"``) to bytes, through fsspec.

    Holds only the URL and the storage options: the fsspec filesystem is
    opened lazily, once per process, so an ObjectStore pickles into
    DataLoader workers (fork and spawn).

    Parameters
    ----------
    url : str
        An fsspec URL; a trailing ``/`` is dropped.
    storage_options : mapping, optional
        Keyword arguments of the fsspec filesystem (credentials, endpoint, ...).
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        if not is_url(url):
            raise OptionError(f"expected a URL such as 's3://bucket/store' or 'file:///data/store', got {url!r}")
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise OptionError(f"storage_options must be a mapping of fsspec options, got {storage_options!r}")
        self.url = url.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self._fs: Any = None
        self._root = ""
        self._pid = -1

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "storage_options": self.storage_options, "_fs": None, "_root": "", "_pid": -1}

    @property
    def fs(self) -> Any:
        """The fsspec filesystem of this process."""
        return self._open()[0]

    def _open(self) -> tuple[Any, str]:
        if self._fs is None or self._pid != os.getpid():
            # one thread at a time: the first use may import fsspec (and s3fs), and two threads importing it at
            # once see a partially initialised module ("fsspec has no attribute 'utils'": an export's PUT threads)
            with _OPEN_LOCK:
                if self._fs is None or self._pid != os.getpid():
                    self._fs, self._root = _url_to_fs(self.url, self.storage_options)
                    self._pid = os.getpid()
        return self._fs, self._root

    def path(self, key: str) -> str:
        """The filesystem path of ``key`` (what fsspec calls it).

        Raises
        ------
        StoreError
            If ``key`` would leave the URL: an absolute key, or one with an empty, ``.`` or ``..`` part
            (keys are built from names a store holds; none may lead outside it).
        """
        if key and (key.startswith("/") or any(part in ("", ".", "..") for part in key.split("/"))):
            raise StoreError(
                f"key {key!r} under {self.url!r} leaves the store (an absolute key, or a '', '.' or '..' part): refused",
                path=self.url,
            )
        root = self._open()[1]
        return f"{root}/{key}" if key else root

    def url_of(self, key: str) -> str:
        """The URL of ``key``, for messages."""
        return f"{self.url}/{key}" if key else self.url

    def missing_bucket(self) -> str | None:
        """Why nothing is found, where the URL's bucket (S3, GCS) or container (Azure) itself does not exist, or
        these credentials cannot see it: its first path part, asked of the filesystem; else None (also when the
        filesystem cannot tell)."""
        try:
            fs, root = self._open()
        except StoreError:
            return None
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if not {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss"} & set(protocols):
            return None
        bucket = fs._strip_protocol(root).strip("/").split("/", 1)[0]
        try:
            if not bucket or fs.exists(bucket):
                return None
        except Exception:  # the filesystem cannot tell: no hint
            return None
        return f"the bucket {bucket!r} does not exist (or these credentials cannot see it)"

    def absent_from_process(self) -> str | None:
        """Why nothing is found, for a ``memory://`` URL with nothing under it in this process; else None.

        fsspec's memory filesystem lives in one process: a store put there is
        invisible to spawned processes (DataLoader workers with the spawn start
        method, export workers). Other URLs, and a memory URL holding objects,
        give None.
        """
        try:
            fs = self.fs
        except StoreError:
            return None
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if "memory" not in protocols:
            return None
        try:
            if fs.exists(self.path("")):
                return None
        except Exception:  # the filesystem cannot tell: no hint
            return None
        return (
            f"nothing is stored at {self.url!r} in this process (pid {os.getpid()}): memory:// stores live in one "
            "process; spawned workers (DataLoader workers, export workers) cannot see them: use file:// or a real "
            "object store (s3://, gs://, ...)"
        )

    def _timeout_text(self, err: BaseException) -> str:
        """What to say of a request that timed out: the endpoint, the bound, how to change it; "" otherwise."""
        if not _timed_out(err):
            return ""
        fs = self._fs
        options = with_timeouts(self.url, self.storage_options).get("config_kwargs", {})
        bound = options.get("read_timeout", _timeout_s())
        return (
            f"; the endpoint {_endpoint(fs, self.storage_options)} did not answer within {bound:g} s (connect and "
            f"read timeout, {getattr(fs, 'retries', 1)} tries): check that it is up, or allow more time with "
            f"{_TIMEOUT_ENV} / {_TRIES_ENV} or the storage option config_kwargs={{'read_timeout': ...}} "
            f"({_TIMEOUT_DOC})"
        )

    def _error(self, key: str, err: BaseException) -> StoreError:
        return StoreError(
            f"cannot read {self.url_of(key)!r}: {type(err).__name__}: {err}{self._timeout_text(err)}",
            path=self.url_of(key),
        )

    def get(self, key: str) -> bytes | None:
        """The bytes of object ``key``, or None if there is none.

        Raises
        ------
        StoreError
            If the object cannot be read for another reason (permissions, network).
        """
        try:
            return bytes(self.fs.cat_file(self.path(key)))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except StoreError:
            raise
        except Exception as err:
            raise self._error(key, err) from err

    def get_json(self, key: str) -> dict[str, Any] | None:
        """Object ``key`` as a JSON object document (a ``zarr.json``), as :func:`parse_json` reads it (None where
        it is missing or not one).

        Raises
        ------
        StoreCorruptError
            If an object in it gives one key twice (names the object's URL and the key).
        StoreError
            As :meth:`get`.
        """
        return parse_json(self.get(key), self.url_of(key))

    def get_many_json(self, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        """Several objects as :meth:`get_json` reads each, fetched as :meth:`get_many` fetches them."""
        return {key: parse_json(data, self.url_of(key)) for key, data in self.get_many(keys).items()}

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes | None]:
        """The bytes of several objects, fetched concurrently where the filesystem can (None where missing).

        Raises
        ------
        StoreError
            As :meth:`get`.
        """
        keys = list(dict.fromkeys(keys))
        if len(keys) <= 1:
            return {k: self.get(k) for k in keys}
        fs = self.fs
        paths = {fs._strip_protocol(self.path(k)): k for k in keys}
        try:
            got = fs.cat(list(paths), on_error="return")
        except Exception as err:
            raise self._error(keys[0], err) from err
        out: dict[str, bytes | None] = {}
        for path, key in paths.items():
            value = got.get(path)
            if value is None or isinstance(value, (FileNotFoundError, NotADirectoryError)):
                out[key] = None
            elif isinstance(value, BaseException):
                raise self._error(key, value) from value
            else:
                out[key] = bytes(value)
        return out

    def exists(self, key: str) -> bool:
        """True if object ``key`` exists."""
        try:
            return bool(self.fs.exists(self.path(key)))
        except StoreError:
            raise
        except Exception as err:
            raise self._error(key, err) from err

    def list_dirs(self, key: str = "") -> list[str]:
        """Names of the "folders" (common prefixes) directly under ``key``, sorted."""
        fs = self.fs
        try:
            entries = fs.ls(self.path(key), detail=True)
        except FileNotFoundError:
            return []
        except Exception as err:
            raise self._error(key, err) from err
        return sorted(str(e["name"]).rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")

    def sizes(self, key: str = "") -> dict[str, int]:
        """Size in bytes of every object under the URL, or under its "folder" ``key``, by key (relative to the
        URL): listed, no object read (on S3 one LIST request per 1,000 objects)."""
        fs = self.fs
        try:
            found = fs.find(self.path(key), detail=True)
        except FileNotFoundError:
            return {}
        except Exception as err:
            raise self._error(key, err) from err
        root = fs._strip_protocol(self.path("")).rstrip("/") + "/"
        under = fs._strip_protocol(self.path(key)).rstrip("/") + "/"  # not the objects of "<key>x/"
        out = {}
        for path, info in found.items():
            path = fs._strip_protocol(path)
            if path.startswith(under) and info.get("type", "file") != "directory":
                out[path[len(root) :]] = int(info.get("size") or 0)
        return out

    def total_size(self) -> int:
        """Bytes of all objects under the URL."""
        return sum(self.sizes().values())

    def _make_parents(self, keys: Iterable[str]) -> None:
        fs = self.fs  # first: fsspec imported whole, under the lock, before any other fsspec import here
        from fsspec.implementations.local import LocalFileSystem

        if isinstance(fs, LocalFileSystem):  # a local folder needs its folders; object stores have none
            for parent in sorted({self.path(k).rsplit("/", 1)[0] for k in keys}):
                self.fs.makedirs(parent, exist_ok=True)

    def put(self, key: str, data: bytes, *, rerun: str = "export") -> None:
        """Write object ``key`` (one PUT: readers see the old bytes or the new, never a mix, on object stores).

        Raises
        ------
        StoreError
            If the write fails (no such bucket, no permission, the server gone), naming the object and saying
            to rerun ``rerun`` (the export or the upload that writes it).
        """
        try:
            self._make_parents([key])
            self.fs.pipe_file(self.path(key), data)
        except StoreError:
            raise
        except Exception as err:
            raise self._write_error(key, err, rerun) from err

    # -- conditional writes (exporting straight into an object store) ---------------------------------------------

    def conditional_kind(self) -> str | None:
        """How this URL does create-only and If-Match writes: ``"s3"``, ``"memory"``, ``"file"``, or None.

        S3 (and S3-compatible servers) get real conditional PUTs (``If-None-Match: *``, ``If-Match: ETag``,
        answered 412 when the condition fails); ``memory://`` lives in one process, so a process lock makes
        its check and write one step; ``file://`` creates by hard link (which refuses an existing name) and
        compares-and-swaps under an OS lock. Other filesystems: None (an export refuses them).
        """
        fs = self.fs  # first: fsspec imported whole, under the lock
        from fsspec.implementations.local import LocalFileSystem

        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if "s3" in protocols or "s3a" in protocols:
            return "s3"
        if "memory" in protocols:
            return "memory"
        if isinstance(fs, LocalFileSystem):
            return "file"
        return None

    def put_new(self, key: str, data: bytes) -> bool:
        """Create object ``key`` only if there is none (one atomic step); False if one exists (left as it is).

        Raises
        ------
        StoreError
            If the write fails for another reason, or the URL has no create-only write.
        """
        return self._create(key, data) is not None

    def _create(self, key: str, data: bytes) -> str | None:
        """:meth:`put_new`, giving the tag of the object it created (from the write itself, never read back: another
        writer may change it at once), or None if one existed."""
        kind = self.conditional_kind()
        path = self.path(key)
        try:
            if kind == "s3":
                try:
                    out = self.fs.pipe_file(path, data, mode="create")
                except FileExistsError:
                    return None
                return str(out["ETag"])
            if kind == "memory":
                with _MEMORY_LOCK:
                    if self.fs.exists(path):
                        return None
                    self.fs.pipe_file(path, data)
                return _digest_tag(data)
            if kind == "file":
                return _digest_tag(data) if _file_create(path, data) else None
        except StoreError:
            raise
        except Exception as err:
            raise self._write_error(key, err) from err
        raise StoreError(f"cannot write {self.url_of(key)!r}: no create-only writes on this filesystem", path=self.url)

    def get_tagged(self, key: str) -> tuple[bytes | None, str | None]:
        """The bytes of object ``key`` and its tag (the S3 ETag; a content digest elsewhere), or (None, None).

        The tag is read before the bytes: if the object changes in between, a later :meth:`put_if` with this
        tag fails (never the other way round).
        """
        kind = self.conditional_kind()
        path = self.path(key)
        try:
            if kind == "s3":
                self.fs.invalidate_cache(path)
                try:
                    tag = str(self.fs.info(path)["ETag"])
                except FileNotFoundError:
                    return None, None
                return self.get(key), tag
            data = self.get(key)
            return data, None if data is None else _digest_tag(data)
        except StoreError:
            raise
        except Exception as err:
            raise self._error(key, err) from err

    def put_if(self, key: str, data: bytes, tag: str | None) -> str:
        """Write ``key`` only if it still has ``tag`` (None: only if there is none); returns the new tag.

        Raises
        ------
        StoreConflict
            If the object changed (or appeared) since ``tag`` was read.
        StoreError
            If the write fails for another reason.
        """
        kind = self.conditional_kind()
        path = self.path(key)
        if tag is None:
            created = self._create(key, data)
            if created is None:
                raise StoreConflict(f"{self.url_of(key)!r} was created by another writer")
            return created
        try:
            if kind == "s3":
                try:
                    out = self.fs.pipe_file(path, data, IfMatch=tag)
                except OSError as err:
                    if _precondition_failed(err):
                        raise StoreConflict(f"{self.url_of(key)!r} was changed by another writer") from err
                    raise
                return str(out["ETag"])
            if kind == "memory":
                with _MEMORY_LOCK:
                    current = self.get(key)
                    if current is None or _digest_tag(current) != tag:
                        raise StoreConflict(f"{self.url_of(key)!r} was changed by another writer")
                    self.fs.pipe_file(path, data)
                return _digest_tag(data)
            if kind == "file":
                return _file_replace_if(path, data, tag)
        except (StoreError, StoreConflict):
            raise
        except Exception as err:
            raise self._write_error(key, err) from err
        raise StoreError(f"cannot write {self.url_of(key)!r}: no conditional writes on this filesystem", path=self.url)

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Write several objects (overwriting), concurrently where the filesystem can.

        Raises
        ------
        StoreError
            If a write fails (naming the first key that did).
        """
        if not items:
            return
        self._make_parents(list(items))
        fs = self.fs
        try:
            fs.pipe({self.path(k): v for k, v in items.items()})
        except Exception as err:
            raise self._write_error(next(iter(items)), err) from err

    def delete(self, keys: Iterable[str]) -> None:
        """Delete objects (missing ones are fine)."""
        keys = list(keys)
        paths = [self.path(k) for k in keys]
        if not paths:
            return
        try:
            self.fs.rm(paths)
        except FileNotFoundError:
            pass
        except Exception as err:
            raise self._write_error(keys[0], err) from err

    def delete_prefix(self, key: str) -> None:
        """Delete every object under ``key/`` (and ``key`` itself).

        Raises
        ------
        StoreError
            If the objects cannot be listed or deleted (the server gone, no permission), naming ``key``.
        """
        try:
            found = list(self.fs.find(self.path(key)))
        except FileNotFoundError:
            return
        except StoreError:
            raise
        except Exception as err:
            raise self._write_error(key, err) from err
        if found:
            try:
                self.fs.rm(found)
            except FileNotFoundError:
                pass
            except Exception as err:
                raise self._write_error(key, err) from err

    def refresh(self) -> None:
        """Forget cached listings (s3fs caches them): the next listing asks the store."""
        self.fs.invalidate_cache()

    def _write_error(self, key: str, err: BaseException, rerun: str = "export") -> StoreError:
        status = _http_status(err)
        remedy = f"; rerun the {rerun} to resume"
        if isinstance(err, FileNotFoundError) or "NoSuchBucket" in str(err) or (status or "").startswith("404"):
            missing = self.missing_bucket()  # resuming cannot help there: nothing can be written
            if missing is not None:
                remedy = (
                    f" ({missing}); create the bucket, or check the URL and the credentials, then rerun the {rerun}"
                )
        return StoreError(
            f"cannot write {self.url_of(key)!r}: {type(err).__name__}: {err}"
            + ("" if status is None else f" (HTTP {status})")
            + self._timeout_text(err)
            + remedy,
            path=self.url_of(key),
        )

    def put_files(self, pairs: Sequence[tuple[Path, str]]) -> None:
        """Upload local files to keys (concurrently where the filesystem can).

        Raises
        ------
        StoreError
            If a write fails, naming the first object that could not be written and saying to rerun the upload.
        """
        if not pairs:
            return
        fs = self.fs
        try:
            self._make_parents([k for _, k in pairs])
        except StoreError:
            raise
        except Exception as err:
            raise self._write_error(pairs[0][1], err, "upload") from err
        jobs = [(str(p), self.path(k)) for p, k in pairs]
        errors: list[BaseException | None]
        if getattr(fs, "async_impl", False):
            # s3fs, gcsfs, ...: several at once through the public put_file, each failure kept with its key
            from concurrent.futures import ThreadPoolExecutor

            def put(job: tuple[str, str]) -> BaseException | None:
                try:
                    fs.put_file(*job)
                except Exception as err:
                    return err
                return None

            with ThreadPoolExecutor(min(_PUT_THREADS, len(jobs)), thread_name_prefix="vidlabel-put") as pool:
                errors = list(pool.map(put, jobs))
        else:
            errors = []
            for src, dst in jobs:
                try:
                    fs.put_file(src, dst)
                except Exception as err:
                    errors.append(err)
                    break
                errors.append(None)
        for (_, key), failed in zip(pairs, errors):
            if failed is not None:
                raise self._write_error(key, failed, "upload") from failed


#: Uploads in flight at once to an object store.
_PUT_THREADS = 16


# -- finding stores at a URL -----------------------------------------------------------------------------------


def _is_store_root(data: bytes | None, where: str) -> bool:
    meta = parse_json(data, where)
    return bool(meta and meta.get("node_type") == "group" and meta.get("attributes", {}).get("format"))


def parse_json(data: bytes | None, where: str) -> dict[str, Any] | None:
    """A JSON object document (``zarr.json``; ``where`` its file or URL, for messages), or None for missing,
    unreadable or non-object bytes, and for an object whose ``attributes`` are not an object (readers take them
    for a mapping).

    Raises
    ------
    StoreCorruptError
        If an object in it gives one key twice (:func:`~vidlabel.store._fs.load_store_json`), naming ``where``.
    """
    if data is None:
        return None
    try:
        meta = load_store_json(data, f"Zarr metadata {where!r}", where)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("attributes", {}), dict):
        return None
    return meta


def find_url_stores(url: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """The Zarr stores at ``url``: itself if it is one, else the stores directly under it.

    A URL holding store objects but no root ``zarr.json`` (an upload cut
    short before its first step) counts as a store, so that opening it says
    it is incomplete.

    Raises
    ------
    StoreError
        If ``url`` holds an HDF5 store (HDF5 stores are read locally only), or is a
        ``memory://`` URL with nothing under it in this process (memory stores
        live in one process).
    """
    store = ObjectStore(url, storage_options)
    if _is_store_root(store.get("zarr.json"), store.url_of("zarr.json")):
        return [store.url]
    if store.exists("store.h5"):
        raise _hdf5_error(store.url)
    children = store.list_dirs()
    metas = store.get_many(f"{c}/zarr.json" for c in children)
    found = [
        store.url_of(c) for c in children if _is_store_root(metas[f"{c}/zarr.json"], store.url_of(f"{c}/zarr.json"))
    ]
    if not found and ("videos" in children or "index" in children):
        return [store.url]
    if not found:
        absent = store.absent_from_process() or store.missing_bucket()
        if absent is not None:
            raise StoreError(f"no vidlabel frame store at {store.url!r}: {absent}", path=store.url)
    return found


# -- upload --------------------------------------------------------------------------------------------------
