"""Codec ``jpeg``: one JPEG picture per chunk (lossy, opt-in), through simplejpeg."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec

#: The JPEG filter id registered with the HDF Group.
JPEG_FILTER_ID = 32019


class JpegCodec(Codec):
    """JPEG, quality 1-100 (default 90); HDF5 declares the optional filter 32019, Zarr ``vidlabel.jpeg``."""

    name = "jpeg"
    default_level = 90
    level_range = (1, 100)
    level_word = "quality"
    lossless = False
    per_frame = True
    picture_format = "JPEG"

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        import simplejpeg

        return bytes(simplejpeg.encode_jpeg(chunk[0], quality=self.level or 90, colorspace="RGB"))

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        import simplejpeg

        simplejpeg.decode_jpeg(data, colorspace="RGB", buffer=out)

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (JPEG_FILTER_ID, (self.level or 90,), True)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "vidlabel.jpeg", "configuration": {"quality": self.level}}]
