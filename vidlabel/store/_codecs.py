"""Frame codecs of the store: how one chunk of frames becomes bytes on disk, and back.

Every codec is applied by vidlabel itself (chunks are written and read
directly, bypassing the HDF5/Zarr filter pipelines, which hold the GIL and
add copies) but the bytes are exactly what the standard filter would write,
and each frames array declares that filter, so plain ``h5py`` + ``hdf5plugin``
or plain ``zarr`` read the frames of every lossless codec:

==========  ==================================================  ==============================================
codec       HDF5 (filter declared on ``frames``)                Zarr (codecs declared on ``frames``)
==========  ==================================================  ==============================================
``none``    none                                                ``bytes``
``lz4``     LZ4, hdf5plugin id 32004                            ``blosc`` (cname lz4, no shuffle)
``zstd``    Zstandard, hdf5plugin id 32015                      ``zstd``
``gzip``    deflate (HDF5 built-in)                             ``gzip``
``png``     one PNG per frame, optional filter id 307 (private)  ``vidlabel.png`` (registered by vidlabel)
``jpeg``    one JPEG per frame, optional filter id 32019 (JPEG)  ``vidlabel.jpeg`` (registered by vidlabel)
==========  ==================================================  ==============================================

``png`` and ``jpeg`` hold one picture per chunk (``chunk_frames`` is 1).
``jpeg`` is lossy and opt-in (quality 90 unless ``"jpeg:Q"``). A level is
given as ``"zstd:3"``, ``"gzip:6"``, ``"lz4"`` has none.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.errors import OptionError, StoreError

__all__ = ["CODECS", "DEFAULT_CODEC", "Codec", "get_codec"]

#: Codec names, in the order ``--codec`` lists them.
CODECS: tuple[str, ...] = ("none", "lz4", "zstd", "gzip", "png", "jpeg")
#: The default: lossless and the fastest to read (docs/how-to/frame-store.md compares the codecs).
DEFAULT_CODEC = "none"

_DEFAULT_LEVEL = {"none": None, "lz4": None, "zstd": 1, "gzip": 1, "png": None, "jpeg": 90}
_LEVEL_RANGE = {"zstd": (1, 22), "gzip": (0, 9), "jpeg": (1, 100)}
#: HDF5 filter id of the private PNG filter (256-511 is HDF5's range for unregistered filters).
PNG_FILTER_ID = 307
JPEG_FILTER_ID = 32019
LZ4_FILTER_ID = 32004
ZSTD_FILTER_ID = 32015


@dataclass(frozen=True)
class Codec:
    """A frame codec: name and level, with its encoder and decoder per backend.

    Parameters
    ----------
    name : {"none", "lz4", "zstd", "gzip", "png", "jpeg"}
    level : int, optional
        zstd level (1-22), gzip level (0-9) or jpeg quality (1-100).
    """

    name: str
    level: int | None = None

    @property
    def spec(self) -> str:
        """The canonical string form, e.g. ``"zstd:1"``, as recorded in the store."""
        return self.name if self.level is None else f"{self.name}:{self.level}"

    @property
    def lossless(self) -> bool:
        """False only for jpeg."""
        return self.name != "jpeg"

    @property
    def per_frame(self) -> bool:
        """True for the image codecs (png, jpeg): one picture per chunk."""
        return self.name in ("png", "jpeg")

    # -- encoding -----------------------------------------------------------------------------------------

    def encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        """Encode one chunk.

        Parameters
        ----------
        chunk : (n, H, W, 3) uint8
            A whole chunk (the last one padded to ``chunk_frames`` rows).
        backend : {"hdf5", "zarr"}

        Returns
        -------
        bytes or ndarray
            Exactly what the backend's declared filter/codec chain stores
            (for ``none``, the contiguous chunk itself: no copy).
        """
        chunk = np.ascontiguousarray(chunk, dtype=np.uint8)
        name = self.name
        if name == "none":
            return chunk
        if name == "lz4":
            if backend == "hdf5":
                return _h5_lz4_encode(chunk)
            from numcodecs import blosc

            return bytes(blosc.compress(chunk, b"lz4", 1, blosc.NOSHUFFLE, 0))
        if name == "zstd":
            from numcodecs import Zstd

            return bytes(Zstd(level=self.level or 1).encode(chunk))
        if name == "gzip":
            if backend == "hdf5":
                return zlib.compress(chunk, self.level if self.level is not None else 1)  # type: ignore[arg-type]
            from numcodecs import GZip

            return bytes(GZip(level=self.level if self.level is not None else 1).encode(chunk))
        if chunk.shape[0] != 1:
            raise StoreError(f"codec {name!r} stores one picture per chunk; got a chunk of {chunk.shape[0]} frames")
        if name == "jpeg":
            import simplejpeg

            return bytes(simplejpeg.encode_jpeg(chunk[0], quality=self.level or 90, colorspace="RGB"))
        if name == "png":
            return _png_encode(chunk[0])
        raise OptionError(f"unknown codec {name!r}; allowed: {', '.join(CODECS)}")

    def decode(self, data: Any, out: np.ndarray, backend: str) -> np.ndarray:
        """Decode one chunk's bytes (any bytes-like object) into ``out`` ((n, H, W, 3) uint8, C-contiguous).

        Returns ``out``.

        Raises
        ------
        StoreError
            If the bytes do not decode to the chunk's size.
        """
        name = self.name
        try:
            if name == "none":
                flat, raw = out.reshape(-1), np.frombuffer(data, dtype=np.uint8)
                if raw.size != flat.nbytes:
                    raise ValueError(f"{raw.size} bytes for a chunk of {flat.nbytes}")
                flat[:] = raw
            elif name == "lz4":
                if backend == "hdf5":
                    _h5_lz4_decode(data, out)
                else:
                    from numcodecs import blosc

                    blosc.decompress(data, out)
            elif name == "zstd":
                from numcodecs import Zstd

                Zstd().decode(data, out=out.reshape(-1))
            elif name == "gzip":
                inflated = zlib.decompress(data) if backend == "hdf5" else _gunzip(data)
                out.reshape(-1)[:] = np.frombuffer(inflated, dtype=np.uint8)
            elif name == "jpeg":
                import simplejpeg

                simplejpeg.decode_jpeg(data, colorspace="RGB", buffer=out)
            elif name == "png":
                img = _png_decode(data)
                out.reshape(img.shape)[:] = img
            else:
                raise OptionError(f"unknown codec {name!r}; allowed: {', '.join(CODECS)}")
        except (ValueError, RuntimeError, zlib.error) as err:
            if isinstance(err, OptionError):
                raise
            raise StoreError(f"cannot decode a {self.spec} chunk of shape {out.shape}: {err}") from err
        return out

    # -- declarations --------------------------------------------------------------------------------------

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool] | None:
        """``(filter id, cd_values, optional)`` declared on an HDF5 ``frames`` dataset, or None."""
        if self.name == "none":
            return None
        if self.name == "lz4":
            return (LZ4_FILTER_ID, (0,), False)
        if self.name == "zstd":
            return (ZSTD_FILTER_ID, (self.level or 1,), False)
        if self.name == "gzip":
            return (1, (self.level if self.level is not None else 1,), False)
        if self.name == "jpeg":
            return (JPEG_FILTER_ID, (self.level or 90,), True)
        return (PNG_FILTER_ID, (), True)


def get_codec(codec: str | Codec | None) -> Codec:
    """Parse ``"name"`` or ``"name:level"`` (None: the default codec).

    Parameters
    ----------
    codec : str, Codec or None
        ``"none"``, ``"lz4"``, ``"zstd"``, ``"gzip"``, ``"png"`` or ``"jpeg"``, optionally
        ``":level"``; a Codec is returned as it is.

    Raises
    ------
    OptionError
        On an unknown name or a level outside the codec's range.
    """
    if isinstance(codec, Codec):
        return codec
    if codec is None:
        codec = DEFAULT_CODEC
    if not isinstance(codec, str):
        raise OptionError(f"codec must be a string like 'zstd' or 'jpeg:90', got {codec!r}")
    name, _, level_text = codec.strip().lower().partition(":")
    if name not in CODECS:
        raise OptionError(f"unknown codec {name!r}; allowed: {', '.join(CODECS)} (optionally 'name:level')")
    level = _DEFAULT_LEVEL[name]
    if level_text:
        if name not in _LEVEL_RANGE:
            raise OptionError(f"codec {name!r} takes no level, got {codec!r}")
        lo, hi = _LEVEL_RANGE[name]
        try:
            level = int(level_text)
        except ValueError:
            level = None
        if level is None or not lo <= level <= hi:
            what = "quality" if name == "jpeg" else "level"
            raise OptionError(f"{what} of codec {name!r} must be an integer in [{lo}, {hi}], got {level_text!r}")
    return Codec(name, level)


# -- HDF5 LZ4 filter framing (hdf5plugin / H5Zlz4.c): >Q total size, >I block size, then per block
# -- >I compressed size + LZ4 block (stored raw when it would not shrink). One block per chunk here.


def _h5_lz4_encode(chunk: np.ndarray) -> bytes:
    from numcodecs import lz4

    total = int(chunk.nbytes)
    compressed = memoryview(lz4.compress(chunk))[4:]  # numcodecs prefixes a 4-byte little-endian size
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
            block = bytearray(4 + csize)  # numcodecs wants its 4-byte size prefix: one copy of the compressed bytes
            block[:4] = struct.pack("<I", size)
            block[4:] = view[pos : pos + csize]
            lz4.decompress(block, flat[dst : dst + size])
        pos += csize
        dst += size


def _gunzip(data: bytes | memoryview) -> bytes:
    return zlib.decompress(bytes(data), wbits=31)


def _png_encode(image: np.ndarray) -> bytes:
    import av  # PyAV's PNG encoder: exact pixels, no further dependency

    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = int(image.shape[1]), int(image.shape[0]), "rgb24"
    ctx.options = {"compression_level": "3"}
    packets = list(ctx.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")))  # type: ignore[attr-defined]
    packets += list(ctx.encode(None))
    return b"".join(bytes(p) for p in packets)


def _png_decode(data: bytes | memoryview) -> np.ndarray:
    import av

    ctx = av.CodecContext.create("png", "r")
    frames = ctx.decode(av.Packet(bytes(data)))  # type: ignore[attr-defined]
    if not frames:
        raise ValueError("no picture in PNG data")
    return frames[0].to_ndarray(format="rgb24")  # type: ignore[union-attr]
