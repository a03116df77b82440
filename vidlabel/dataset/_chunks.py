"""Annotation chunks: up to ``CHUNK_ROWS`` annotations of one video as compressed NumPy columns.

A chunk is one BLOB in the dataset's ``chunks`` table: a 20-byte header
(magic, rows, mask rows, mask bytes) and zlib-compressed little-endian
columns: annotation id, kind, label, start and end frame, box (float64 xyxy),
track id, origin, confidence (float32), status, view code; then, for mask
rows only, their row, size, RLE length, and the concatenated COCO RLE bytes.
In memory a chunk is a dict of columns (``Cols``) with masks in CSR form
(``mask_offsets`` (N + 1,), ``mask_counts``, ``mask_size`` (N, 2)), as in
``AnnotationTable``, and the rows' attributes in CSR form too (``attr_offsets``
(N + 1,), ``attr_bytes``: each row's canonical JSON object, empty for none).
A chunk with attributes is written as format ``VLC2``: the ``VLC1`` header and
payload followed by the attribute bytes' total (8 bytes, in the header) and, in
the payload, each row's attribute length (int32) then the bytes. A chunk
without attributes is written as ``VLC1``, as before, so older datasets and
vidlabels read each other's chunks of rows without attributes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import numpy as np

from vidlabel.dataset._rows import RowColumns
from vidlabel.errors import DatasetError
from vidlabel.spec import AnnotationTable, take_csr

__all__ = [
    "ChunkDamagedError",
    "Cols",
    "concat",
    "cols_from_rows",
    "decode_chunk",
    "empty_cols",
    "encode_chunk",
    "pack_ints",
    "take",
    "unpack_ints",
]

# name, little-endian dtype, trailing shape, from AnnotationTable's columns (``video`` is the chunk's, not a
# column). The order is the chunk format: the row columns in AnnotationTable's order, then the masks.
_TRAILING_SHAPE = {"box": (4,), "mask_size": (2,)}
_MASK_COLUMNS = ("mask_size", "mask_offsets", "mask_counts")
_CHUNK_COLUMNS: tuple[tuple[str, str, tuple[int, ...]], ...] = tuple(
    (name, np.dtype(AnnotationTable.DTYPES[name]).newbyteorder("<").str, _TRAILING_SHAPE.get(name, ()))
    for name in (*(n for n in AnnotationTable.DTYPES if n != "video" and n not in _MASK_COLUMNS), *_MASK_COLUMNS)
)
_ROW_COLUMNS = _CHUNK_COLUMNS[: -len(_MASK_COLUMNS)]  # one value per row; masks are stored for mask rows only
_MAGIC = b"VLC1"
_MAGIC_ATTRS = b"VLC2"
_HEAD = struct.Struct("<4sIIQ")  # magic, rows, mask rows, mask bytes
_ATTR_HEAD = struct.Struct("<Q")  # VLC2: attribute bytes, after the VLC1 header
Cols = dict[str, np.ndarray]


def encode_chunk(cols: Cols) -> bytes:
    """Compressed bytes of a column set: row columns, then (mask row, size, length) of mask rows, then RLE bytes."""
    n = int(cols["annotation_id"].shape[0])
    offsets = cols["mask_offsets"]
    lengths = np.diff(offsets)
    mrows = np.flatnonzero(lengths)
    parts = [np.ascontiguousarray(cols[name], dtype=dt).tobytes() for name, dt, _ in _ROW_COLUMNS]
    parts += [
        mrows.astype("<i4").tobytes(),
        np.ascontiguousarray(cols["mask_size"][mrows], dtype="<i4").tobytes(),
        lengths[mrows].astype("<i8").tobytes(),
        np.ascontiguousarray(cols["mask_counts"], dtype="u1").tobytes(),
    ]
    attr_offsets = cols.get("attr_offsets")
    attrs = int(attr_offsets[-1]) if attr_offsets is not None and attr_offsets.size else 0
    if not attrs:
        head = _HEAD.pack(_MAGIC, n, mrows.size, int(offsets[-1]))
        return head + zlib.compress(b"".join(parts), 1)
    assert attr_offsets is not None
    parts += [np.diff(attr_offsets).astype("<i4").tobytes(), np.ascontiguousarray(cols["attr_bytes"], "u1").tobytes()]
    head = _HEAD.pack(_MAGIC_ATTRS, n, mrows.size, int(offsets[-1])) + _ATTR_HEAD.pack(attrs)
    return head + zlib.compress(b"".join(parts), 1)


#: Bytes of one row's columns in a chunk's payload, and of one mask row's (row, size, RLE length).
_ROW_BYTES = sum(np.dtype(dt).itemsize * int(np.prod(shape, dtype=np.int64)) for _, dt, shape in _ROW_COLUMNS)
_MASK_ROW_BYTES = 4 + 2 * 4 + 8


#: zlib inflates at most about 1032 bytes per byte it reads.
_ZLIB_MAX_RATIO = 1100


class ChunkDamagedError(ValueError):
    """An annotation chunk's bytes are not what :func:`encode_chunk` writes; the message says how."""


def _inflate(blob: bytes, head: int, want: int, counts: str) -> bytes:
    """The ``want`` bytes of zlib data after the ``head`` bytes of header of chunk ``blob``, whose header
    counts ``counts`` (in words); decompressed no further than ``want`` bytes.

    Raises
    ------
    ChunkDamagedError
        If the counts take more bytes than the zlib data can hold, the data is not zlib, or it holds another
        number of bytes than ``want``.
    """
    if want > _ZLIB_MAX_RATIO * len(blob):
        raise ChunkDamagedError(
            f"its header's {counts} take {want} bytes, more than its {len(blob)} bytes of zlib data can hold"
        )
    inflate = zlib.decompressobj()
    try:
        payload = inflate.decompress(memoryview(blob)[head:], want + 1)
    except zlib.error as err:
        raise ChunkDamagedError(f"its columns are not zlib data ({err})") from err
    if len(payload) != want or not inflate.eof:
        got = f"{len(payload)}" if len(payload) <= want else f"more than {want}"
        raise ChunkDamagedError(f"its columns hold {got} bytes, not the {want} its header's {counts} take")
    return payload


def decode_chunk(blob: bytes) -> Cols:
    """Inverse of :func:`encode_chunk` (arrays are read-only views of the decompressed bytes).

    Raises
    ------
    DatasetError
        If the chunk is of another format (its magic).
    ChunkDamagedError
        If its bytes are not those of a chunk: cut, not zlib, a payload of another size than its header's
        counts give (decompressed no further than that size, so a zlib bomb is not inflated), mask rows out of
        order or outside the chunk, RLE lengths that do not add up to its RLE bytes.
    """
    if len(blob) < _HEAD.size:
        raise ChunkDamagedError(f"{len(blob)} bytes, shorter than its {_HEAD.size}-byte header")
    magic, n, k, m = _HEAD.unpack_from(blob, 0)
    if magic not in (_MAGIC, _MAGIC_ATTRS):
        raise DatasetError("an annotation chunk in the database is not in a format this vidlabel reads")
    if k > n:
        raise ChunkDamagedError(f"its header counts {k} mask rows in {n} rows")
    head, attrs = _HEAD.size, 0
    if magic == _MAGIC_ATTRS:
        if len(blob) < head + _ATTR_HEAD.size:
            raise ChunkDamagedError(f"{len(blob)} bytes, shorter than its {head + _ATTR_HEAD.size}-byte header")
        (attrs,) = _ATTR_HEAD.unpack_from(blob, head)
        head += _ATTR_HEAD.size
    want = n * _ROW_BYTES + k * _MASK_ROW_BYTES + m + (4 * n + attrs if magic == _MAGIC_ATTRS else 0)
    payload = _inflate(blob, head, want, f"{n} rows, {k} mask rows and {m} RLE bytes")
    out: Cols = {}
    pos = 0

    def read(dt: str, count: int, shape: tuple[int, ...] = ()) -> np.ndarray:
        nonlocal pos
        arr = np.frombuffer(payload, dt, count * int(np.prod(shape, dtype=np.int64)), pos).reshape((-1, *shape))
        pos += arr.nbytes
        return arr

    for name, dt, shape in _ROW_COLUMNS:
        out[name] = read(dt, n, shape)
    mrows = read("<i4", k)
    msize = read("<i4", k, (2,))
    mlen = read("<i8", k)
    out["mask_counts"] = read("u1", m)
    if k and (mrows[0] < 0 or mrows[-1] >= n or np.any(np.diff(mrows) <= 0)):
        raise ChunkDamagedError(f"its mask rows are not increasing rows in [0, {n})")
    if np.any(mlen <= 0) or np.any(msize <= 0) or sum(mlen.tolist()) != m:
        raise ChunkDamagedError(
            f"its masks' sizes or RLE lengths are not positive or do not add up to its {m} RLE bytes"
        )
    size = np.zeros((n, 2), np.int32)
    size[mrows] = msize
    lengths = np.zeros(n, np.int64)
    lengths[mrows] = mlen
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out["mask_size"] = size
    out["mask_offsets"] = offsets
    attr_offsets = np.zeros(n + 1, np.int64)
    if magic == _MAGIC_ATTRS:
        alen = read("<i4", n)
        out["attr_bytes"] = read("u1", attrs)
        if np.any(alen < 0) or sum(alen.tolist()) != attrs:
            raise ChunkDamagedError(f"its attribute lengths are negative or do not add up to its {attrs} bytes")
        np.cumsum(alen, out=attr_offsets[1:])
    else:
        out["attr_bytes"] = np.zeros(0, np.uint8)
    out["attr_offsets"] = attr_offsets
    return out


def concat(parts: Sequence[Cols]) -> Cols:
    """Column sets one after another (mask offsets shifted)."""
    if len(parts) == 1:
        return dict(parts[0])
    out: Cols = {}
    for name in (*(c for c, _, _ in _CHUNK_COLUMNS), "attr_offsets", "attr_bytes"):
        if name in ("mask_offsets", "attr_offsets"):
            pieces = [parts[0][name]]
            base = int(parts[0][name][-1])
            for p in parts[1:]:
                pieces.append(p[name][1:] + base)
                base += int(p[name][-1])
            out[name] = np.concatenate(pieces)
        else:
            out[name] = np.concatenate([p[name] for p in parts])
    return out


def take(cols: Cols, rows: np.ndarray) -> Cols:
    """Rows (int index array) of a column set, masks carried along."""
    new_offsets, counts = take_csr(cols["mask_offsets"], cols["mask_counts"], rows)
    out = {
        k: v[rows] for k, v in cols.items() if k not in ("mask_offsets", "mask_counts", "attr_offsets", "attr_bytes")
    }
    out["mask_offsets"] = new_offsets
    out["mask_counts"] = counts
    out["attr_offsets"], out["attr_bytes"] = take_csr(cols["attr_offsets"], cols["attr_bytes"], rows)
    return out


def empty_cols() -> Cols:
    """A column set with no rows."""
    out: Cols = {}
    for name, dt, shape in _CHUNK_COLUMNS:
        out[name] = np.zeros((1 if name == "mask_offsets" else 0, *shape), dt)
    out["attr_offsets"] = np.zeros(1, np.int64)
    out["attr_bytes"] = np.zeros(0, np.uint8)
    return out


def cols_from_rows(ids: np.ndarray, rc: RowColumns) -> Cols:
    """The column set of a validated batch, with its new annotation ids and its rows' attributes."""
    attrs = rc.attributes or [b""] * rc.n_rows
    offsets = np.zeros(len(attrs) + 1, np.int64)
    np.cumsum([len(a) for a in attrs], out=offsets[1:])
    data = np.frombuffer(b"".join(attrs), np.uint8)
    return {"annotation_id": ids, **rc, "attr_offsets": offsets, "attr_bytes": data}


def pack_ints(arr: np.ndarray) -> bytes:
    """Compact bytes of an int64 sequence (delta-encoded, zlib): frame index pts and keyframes."""
    return zlib.compress(np.diff(np.asarray(arr, np.int64), prepend=0).astype("<i8").tobytes(), 6)


def unpack_ints(blob: bytes) -> np.ndarray:
    """Inverse of :func:`pack_ints`: (N,) int64."""
    return np.cumsum(np.frombuffer(zlib.decompress(blob), "<i8")).astype(np.int64)
