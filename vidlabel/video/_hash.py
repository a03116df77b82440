"""The content hash of a video file: SHA-256 of its bytes, once per file per process.

The hash ties a registered video, its frame index and a store's frames to the
bytes they were read from.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from vidlabel.errors import VideoNotFoundError
from vidlabel.video._scan import check_regular

__all__ = ["content_hash"]

_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def content_hash(path: str | os.PathLike[str]) -> str:
    """``"sha256:<hex>"`` of a file's bytes, read in 1 MiB blocks.

    The result is cached per process by (real path, size, modification time),
    so readers opened many times on one file hash it once.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    str
        ``"sha256:"`` followed by 64 hex digits.

    Raises
    ------
    VideoNotFoundError
        If the file does not exist.
    VideoDecodeError
        If the path is a folder, a device, a pipe or a socket (not a regular file).
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError as err:
        raise VideoNotFoundError(f"video file not found: {str(p)!r}", path=str(p)) from err
    check_regular(p)
    key = (os.path.realpath(p), st.st_size, st.st_mtime_ns)
    cached = _HASH_CACHE.get(key)
    if cached is not None:
        return cached
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    digest = "sha256:" + h.hexdigest()
    _HASH_CACHE[key] = digest
    return digest
