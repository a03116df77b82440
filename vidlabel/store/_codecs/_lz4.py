"""Codec ``lz4``: HDF5's LZ4 filter (hdf5plugin id 32004), Zarr ``blosc`` with cname lz4 and no shuffle."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec

#: hdf5plugin's filter id of LZ4.
LZ4_FILTER_ID = 32004


class Lz4Codec(Codec):
    """LZ4, no level."""

    name = "lz4"

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        if backend == "hdf5":
            return _h5_lz4_encode(chunk)
        from numcodecs import blosc

        return bytes(blosc.compress(chunk, b"lz4", 1, blosc.NOSHUFFLE, 0))

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        if backend == "hdf5":
            _h5_lz4_decode(data, out)
            return
        from numcodecs import blosc

        blosc.decompress(data, out)

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (LZ4_FILTER_ID, (0,), False)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        blosc = {"typesize": 1, "cname": "lz4", "clevel": 1, "shuffle": "noshuffle", "blocksize": 0}
        return [{"name": "bytes"}, {"name": "blosc", "configuration": blosc}]


# HDF5 LZ4 filter framing (hdf5plugin / H5Zlz4.c): >Q total size, >I block size, then per block >I compressed
# size + LZ4 block (stored raw when it would not shrink). One block per chunk here.


def _h5_lz4_encode(chunk: np.ndarray) -> bytes:
    from numcodecs import lz4

    total = int(chunk.nbytes)
    # numcodecs prefixes a 4-byte little-endian size
    compressed = memoryview(lz4.compress(chunk))[4:]
    if compressed.nbytes >= total:
        return b"".join((struct.pack(">QII", total, total, total), memoryview(chunk).cast("B")))  # type: ignore[arg-type]
    return b"".join((struct.pack(">QII", total, total, compressed.nbytes), compressed))


def _h5_lz4_decode(data: Any, out: np.ndarray) -> None:
    from numcodecs import lz4

    view = memoryview(data).cast("B")
    total, block_size = struct.unpack_from(">QI", view, 0)
    flat = out.reshape(-1)
    if total != flat.nbytes:
        raise ValueError(f"lz4 chunk of {total} bytes, expected {flat.nbytes}")
    pos, dst = 12, 0
    while dst < total:
        size = min(block_size, total - dst)
        (csize,) = struct.unpack_from(">I", view, pos)
        pos += 4
        if csize == size:
            flat[dst : dst + size] = np.frombuffer(view[pos : pos + csize], dtype=np.uint8)
        else:
            # numcodecs wants its 4-byte size prefix: one copy of the compressed bytes
            block = bytearray(4 + csize)
            block[:4] = struct.pack("<I", size)
            block[4:] = view[pos : pos + csize]
            lz4.decompress(block, flat[dst : dst + size])
        pos += csize
        dst += size
