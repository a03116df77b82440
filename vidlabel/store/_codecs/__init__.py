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

Each codec is one class in a module of this package (:class:`Codec` in ``_base``); adding one is a new module
and one :func:`register_codec` line below.
"""

from __future__ import annotations

from vidlabel.errors import OptionError
from vidlabel.store._codecs._base import Codec, codec_class, codec_names, register_codec
from vidlabel.store._codecs._gzip import GzipCodec
from vidlabel.store._codecs._jpeg import JpegCodec
from vidlabel.store._codecs._lz4 import Lz4Codec
from vidlabel.store._codecs._none import NoneCodec
from vidlabel.store._codecs._png import PngCodec
from vidlabel.store._codecs._zstd import ZstdCodec

__all__ = ["CODECS", "DEFAULT_CODEC", "Codec", "codec_names", "get_codec", "register_codec"]

register_codec(NoneCodec)
register_codec(Lz4Codec)
register_codec(ZstdCodec)
register_codec(GzipCodec)
register_codec(PngCodec)
register_codec(JpegCodec)

#: The codecs vidlabel ships, in the order ``--codec`` lists them (:func:`codec_names` adds any registered since).
CODECS: tuple[str, ...] = codec_names()
#: The default: lossless and the fastest to read (docs/how-to/frame-store.md compares the codecs).
DEFAULT_CODEC = "none"


def get_codec(codec: str | Codec | None) -> Codec:
    """Parse ``"name"`` or ``"name:level"`` (None: the default codec).

    Parameters
    ----------
    codec : str, Codec or None
        The name of a registered codec (``"none"``, ``"lz4"``, ``"zstd"``, ``"gzip"``, ``"png"``,
        ``"jpeg"``...), optionally ``":level"``; a Codec is returned as it is.

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
    cls = codec_class(name)
    if cls is None:
        raise OptionError(f"unknown codec {name!r}; allowed: {', '.join(codec_names())} (optionally 'name:level')")
    if not level_text:
        return cls(cls.default_level)
    if cls.level_range is None:
        raise OptionError(f"codec {name!r} takes no level, got {codec!r}")
    lo, hi = cls.level_range
    try:
        level: int | None = int(level_text)
    except ValueError:
        level = None
    if level is None or not lo <= level <= hi:
        raise OptionError(f"{cls.level_word} of codec {name!r} must be an integer in [{lo}, {hi}], got {level_text!r}")
    return cls(level)
