"""Conditional writes for :class:`~vidlabel.store._remote.ObjectStore`: the conflict a write raises when another
writer changed the object, reading S3's answers (412 Precondition Failed, an HTTP status), and create-if-absent
and replace-if-unchanged on a local folder (``file://``).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid

__all__ = ["StoreConflict"]


class StoreConflict(Exception):
    """A conditional write found the object changed (or created) by another writer (HTTP 412 on S3)."""


_MEMORY_LOCK = threading.Lock()


def _digest_tag(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _precondition_failed(err: BaseException) -> bool:
    """True if an s3fs error is S3's 412 Precondition Failed (s3fs turns it into a plain OSError)."""
    seen: BaseException | None = err
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = str(response.get("Error", {}).get("Code", ""))
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code == "PreconditionFailed" or status == 412:
                return True
        if "pre-conditions you specified did not hold" in str(seen) or "PreconditionFailed" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _http_status(err: BaseException) -> str | None:
    """``"500 InternalError"`` from the botocore error behind an s3fs one, if there is one."""
    seen: BaseException | None = err
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = response.get("Error", {}).get("Code", "")
            return f"{status} {code}".strip()
        seen = seen.__cause__ or seen.__context__
    return None


def _file_create(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if absent: write a temporary file, then hard-link it into place."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


def _file_replace_if(path: str, data: bytes, tag: str) -> str:
    """Replace ``path`` with ``data`` if its content digest is still ``tag``, under an OS lock of its folder."""
    import contextlib

    from vidlabel.store._fs import _lock, _unlock

    folder = os.path.dirname(path)
    with open(os.path.join(folder, ".vidlabel-cas"), "a+", encoding="utf-8") as lock:
        deadline = time.monotonic() + 30.0
        while True:
            try:
                _lock(lock)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        try:
            try:
                with open(path, "rb") as fh:
                    current = fh.read()
            except FileNotFoundError:
                current = None
            if current is None or _digest_tag(current) != tag:
                raise StoreConflict(f"{path!r} was changed by another writer")
            tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                _unlock(lock)
    return _digest_tag(data)
