"""Codec ``gzip``: HDF5's built-in deflate (zlib stream), Zarr ``gzip`` (gzip stream)."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec


class GzipCodec(Codec):
    """Deflate, level 0-9 (default 1)."""

    name = "gzip"
    default_level = 1
    level_range = (0, 9)

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        level = self.level if self.level is not None else 1
        if backend == "hdf5":
            return zlib.compress(chunk, level)  # type: ignore[arg-type]
        from numcodecs import GZip

        return bytes(GZip(level=level).encode(chunk))

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        inflated = zlib.decompress(data) if backend == "hdf5" else zlib.decompress(bytes(data), wbits=31)
        out.reshape(-1)[:] = np.frombuffer(inflated, dtype=np.uint8)

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (1, (self.level if self.level is not None else 1,), False)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": self.level or 1}}]
