"""The chunked frame store (HDF5 or Zarr): layout, backends, codecs, LRU chunk cache, FrameStore.

``vidlabel.export`` writes a store; :func:`open_store` reads one (or a folder
of them) as a :class:`FrameStore`; ``vidlabel.torch_data.StoreFrames`` and
``StoreStream`` train from it; :func:`upload` puts a Zarr store on an object
store, from which all of these read by URL.

Private modules, lowest first: ``_layout`` (names, dtypes, format version),
``_codecs``, ``_cache`` (chunk cache bounded in bytes), ``_fs`` and ``_remote``
(with ``_remote_writes``: local and object-store file access), ``_backend`` (the
backend interface), ``_hdf5`` / ``_zarr`` (the backends; ``_zarr_codecs``, the
picture codecs Zarr loads by entry point), ``_writer``, ``_discovery``,
``_process``, ``_store_checks``, ``_chunk_reads``, ``_framestore`` (reading),
``_selection`` (StoreSamples), ``_verify``, ``_upload``. Imports only
layer 1: :mod:`vidlabel.errors`, :mod:`vidlabel.spec`, :mod:`vidlabel.geometry`,
:mod:`vidlabel.schema` and its private helpers (``vidlabel._lru`` for the open
frames readers of a process).
"""

from __future__ import annotations

from vidlabel.store._cache import DEFAULT_CACHE_BYTES, ChunkCache
from vidlabel.store._codecs import CODECS, DEFAULT_CODEC, Codec, get_codec
from vidlabel.store._framestore import BACKENDS, FrameStore, VideoData, backend_for, find_stores, open_store
from vidlabel.store._selection import StoreSamples
from vidlabel.store._upload import UploadReport, upload
from vidlabel.store._verify import verify_store

__all__ = [
    "BACKENDS",
    "CODECS",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_CODEC",
    "ChunkCache",
    "Codec",
    "FrameStore",
    "StoreSamples",
    "UploadReport",
    "VideoData",
    "backend_for",
    "find_stores",
    "get_codec",
    "open_store",
    "upload",
    "verify_store",
]
