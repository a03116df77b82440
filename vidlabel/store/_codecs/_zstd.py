"""Codec ``zstd``: Zstandard, HDF5 filter id 32015 (hdf5plugin), Zarr ``zstd``."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec

#: hdf5plugin's filter id of Zstandard.
ZSTD_FILTER_ID = 32015


class ZstdCodec(Codec):
    """Zstandard, level 1-22 (default 1); the same bytes in both backends."""

    name = "zstd"
    default_level = 1
    level_range = (1, 22)

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        from numcodecs import Zstd

        return bytes(Zstd(level=self.level or 1).encode(chunk))

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        from numcodecs import Zstd

        Zstd().decode(data, out=out.reshape(-1))

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (ZSTD_FILTER_ID, (self.level or 1,), False)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": self.level or 1, "checksum": False}}]
