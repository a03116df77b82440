"""Zarr codecs ``vidlabel.png`` and ``vidlabel.jpeg``: the per-frame picture codecs of
:mod:`vidlabel.store._codecs`, so that plain ``zarr.open_array`` reads the frames of a png/jpeg store.

Zarr finds them through the ``zarr.codecs`` entry points of the installed package (``setup.py``), loading
this module only when an array names one; importing it registers them as well (what
:mod:`vidlabel.store._zarr` does before it reads an array with Zarr, for a source checkout without
entry points). Imports Zarr: nothing on an HDF5 path imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from zarr.abc.codec import ArrayBytesCodec
from zarr.registry import register_codec

from vidlabel.store._codecs import Codec, get_codec

__all__ = ["JpegCodec", "PngCodec"]


@dataclass(frozen=True)
class _PictureCodec(ArrayBytesCodec):
    is_fixed_size = False
    codec_name: ClassVar[str] = ""
    quality: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        conf = dict(data.get("configuration") or {})
        return cls(quality=conf.get("quality"))

    def to_dict(self) -> dict[str, Any]:
        conf = {} if self.quality is None else {"quality": self.quality}
        return {"name": f"vidlabel.{self.codec_name}", "configuration": conf}

    def _codec(self) -> Codec:
        return get_codec(self.codec_name if self.quality is None else f"{self.codec_name}:{self.quality}")

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        out = np.empty(chunk_spec.shape, dtype=np.uint8)
        self._codec().decode(chunk_bytes.to_bytes(), out, "zarr")
        return chunk_spec.prototype.nd_buffer.from_numpy_array(out)

    async def _encode_single(self, chunk_array: Any, chunk_spec: Any) -> Any:
        data = self._codec().encode(chunk_array.as_numpy_array(), "zarr")
        return chunk_spec.prototype.buffer.from_bytes(data)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        raise NotImplementedError


class PngCodec(_PictureCodec):
    """Zarr codec ``vidlabel.png``: one PNG picture per (1, H, W, 3) uint8 chunk."""

    codec_name = "png"


class JpegCodec(_PictureCodec):
    """Zarr codec ``vidlabel.jpeg``: one JPEG picture per (1, H, W, 3) uint8 chunk (lossy)."""

    codec_name = "jpeg"


register_codec("vidlabel.png", PngCodec)
register_codec("vidlabel.jpeg", JpegCodec)
