"""Codec ``none``: a chunk stored as its own bytes (the default: the fastest to read)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec


class NoneCodec(Codec):
    """No compression: HDF5 declares no filter, Zarr ``bytes``; readers copy chunks straight out of the file."""

    name = "none"
    raw = True

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        return chunk

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        flat, raw = out.reshape(-1), np.frombuffer(data, dtype=np.uint8)
        if raw.size != flat.nbytes:
            raise ValueError(f"{raw.size} bytes for a chunk of {flat.nbytes}")
        flat[:] = raw

    def hdf5_filter(self) -> None:
        return None

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "bytes"}]
