"""The frame codec interface and the registry of codecs by name."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from vidlabel.errors import OptionError, StoreError

__all__ = ["Codec", "codec_class", "codec_names", "register_codec"]


@dataclass(frozen=True)
class Codec:
    """A frame codec: how one chunk of frames becomes bytes on disk in each backend, and back.

    A codec is one subclass that sets :attr:`name` and implements :meth:`_encode`, :meth:`_decode`,
    :meth:`hdf5_filter` and :meth:`zarr_codecs`; :func:`register_codec` makes :func:`get_codec` know it by
    name. Instances are frozen and picklable (export workers receive them).

    Parameters
    ----------
    level : int, optional
        The codec's level (or quality), in :attr:`level_range`; None for codecs without one.
    """

    #: The name stores record (``"zstd"``) and ``codec=`` takes.
    name: ClassVar[str] = ""
    #: The level a bare name gives, and the range ``"name:level"`` may ask (None: the codec takes no level).
    default_level: ClassVar[int | None] = None
    level_range: ClassVar[tuple[int, int] | None] = None
    #: What the level is called in messages ("level", "quality").
    level_word: ClassVar[str] = "level"
    #: False for a lossy codec.
    lossless: ClassVar[bool] = True
    #: True for codecs that hold one picture per chunk (``chunk_frames`` must be 1).
    per_frame: ClassVar[bool] = False
    #: True where a chunk is stored as its own bytes, so that a reader may copy it straight out of the file.
    raw: ClassVar[bool] = False
    #: The ``image/format`` a MediaSequence export records for pictures of this codec; None: not a picture codec.
    picture_format: ClassVar[str | None] = None

    level: int | None = None

    @property
    def spec(self) -> str:
        """The canonical string form, e.g. ``"zstd:1"``, as recorded in the store."""
        return self.name if self.level is None else f"{self.name}:{self.level}"

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
            Exactly what the backend's declared filter/codec chain stores (for a :attr:`raw` codec, the
            contiguous chunk itself: no copy).

        Raises
        ------
        StoreError
            If a :attr:`per_frame` codec is given a chunk of more than one frame.
        """
        chunk = np.ascontiguousarray(chunk, dtype=np.uint8)
        if self.per_frame and chunk.shape[0] != 1:
            raise StoreError(
                f"codec {self.name!r} stores one picture per chunk; got a chunk of {chunk.shape[0]} frames"
            )
        return self._encode(chunk, backend)

    def decode(self, data: Any, out: np.ndarray, backend: str) -> np.ndarray:
        """Decode one chunk's bytes (any bytes-like object) into ``out`` ((n, H, W, 3) uint8, C-contiguous).

        Returns ``out``.

        Raises
        ------
        StoreError
            If the bytes do not decode to the chunk's size.
        """
        try:
            self._decode(data, out, backend)
        except (ValueError, RuntimeError, zlib.error) as err:
            raise StoreError(f"cannot decode a {self.spec} chunk of shape {out.shape}: {err}") from err
        return out

    def _encode(self, chunk: np.ndarray, backend: str) -> bytes | np.ndarray:
        raise NotImplementedError

    def _decode(self, data: Any, out: np.ndarray, backend: str) -> None:
        raise NotImplementedError

    def hdf5_filter(self) -> tuple[int, tuple[int, ...], bool] | None:
        """``(filter id, cd_values, optional)`` declared on an HDF5 ``frames`` dataset, or None (no filter).
        Filter id 1 is HDF5's deflate; an optional filter lets plain h5py open the file without it."""
        raise NotImplementedError

    def zarr_codecs(self) -> list[dict[str, Any]]:
        """The ``codecs`` a Zarr ``frames`` array declares (``zarr.json``), which plain ``zarr`` decodes."""
        raise NotImplementedError


_REGISTRY: dict[str, type[Codec]] = {}


def register_codec(cls: type[Codec]) -> type[Codec]:
    """Make ``cls`` known to :func:`get_codec` under ``cls.name`` (returns ``cls``, so it may decorate).

    Raises
    ------
    OptionError
        If another class is registered under that name already.
    """
    if not cls.name or cls.name != cls.name.lower() or ":" in cls.name:
        raise OptionError(f"a codec name is a lower-case word without ':', got {cls.name!r}")
    if _REGISTRY.get(cls.name, cls) is not cls:
        raise OptionError(f"codec {cls.name!r} is registered already ({_REGISTRY[cls.name].__qualname__})")
    _REGISTRY[cls.name] = cls
    return cls


def codec_names() -> tuple[str, ...]:
    """The names of the registered codecs, in the order they were registered."""
    return tuple(_REGISTRY)


def codec_class(name: str) -> type[Codec] | None:
    """The codec class registered under ``name``, or None."""
    return _REGISTRY.get(name)
