"""Codec ``png``: one PNG picture per chunk, through PyAV's encoder (exact pixels, no further dependency)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.store._codecs._base import Codec

#: HDF5 filter id of the private PNG filter (256-511 is HDF5's range for unregistered filters).
PNG_FILTER_ID = 307


class PngCodec(Codec):
    """PNG, lossless; HDF5 declares the optional private filter 307, Zarr the codec ``vidlabel.png``."""

    name = "png"
    per_frame = True
    picture_format = "PNG"

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        import av

        image = chunk[0]
        ctx = av.CodecContext.create("png", "w")
        ctx.width, ctx.height, ctx.pix_fmt = int(image.shape[1]), int(image.shape[0]), "rgb24"
        ctx.options = {"compression_level": "3"}
        packets = list(ctx.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")))  # type: ignore[attr-defined]
        packets += list(ctx.encode(None))
        return b"".join(bytes(p) for p in packets)

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        import av

        ctx = av.CodecContext.create("png", "r")
        frames = ctx.decode(av.Packet(bytes(data)))  # type: ignore[attr-defined]
        if not frames:
            raise ValueError("no picture in PNG data")
        img = frames[0].to_ndarray(format="rgb24")  # type: ignore[union-attr]
        out.reshape(img.shape)[:] = img

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool]:
        return (PNG_FILTER_ID, (), True)

    def zarr_codecs(self) -> list[dict[str, Any]]:
        return [{"name": "vidlabel.png", "configuration": {}}]
