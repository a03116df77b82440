"""A toy frame codec, ``xor``: every byte XOR 0x5A. What adding a codec takes: this module and one
``register_codec(XorCodec)`` line (tests/store/test_store_codec_registry.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.store._codecs import Codec


class XorCodec(Codec):
    """Each byte XOR 0x5A; HDF5 declares an optional private filter, Zarr a codec of its own name."""

    name = "xor"

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        return (chunk ^ 0x5A).tobytes()

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        raw = np.frombuffer(data, dtype=np.uint8)
        if raw.size != out.size:
            raise ValueError(f"{raw.size} bytes for a chunk of {out.size}")
        np.bitwise_xor(raw, 0x5A, out=out.reshape(-1))

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (309, (), True)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "test.xor", "configuration": {}}]
