"""TFRecord files of ``tf.train.SequenceExample`` records, without TensorFlow and without touching its protos.

The framing is TFRecord's: for each record, its length (uint64, little-endian),
the masked CRC-32C of those 8 bytes, the record, the masked CRC-32C of the
record (TensorFlow's ``core/lib/io/record_writer.cc``; the CRC from
``google_crc32c``, which the Zarr store already uses).

The messages are TensorFlow's ``example.proto`` / ``feature.proto`` (package
``tensorflow``), built by the ``protobuf`` runtime. Why not the ``tfrecord``
package's ready-made ``example_pb2``: it registers ``tensorflow.BytesList`` and
the rest in protobuf's *default* descriptor pool under another file name than
TensorFlow's, so a process that uses it and then imports TensorFlow (or the
other way round) fails with "duplicate symbol 'tensorflow.BytesList'" — exactly
the process of a TensorFlow user exporting or importing MediaSequence records;
importing it also imports torch. So: when TensorFlow is already imported, its
own ``example_pb2`` is used; otherwise the same messages are built in a private
descriptor pool that no later ``import tensorflow`` can collide with. The bytes
on disk are the same either way (same field numbers and types).
"""

from __future__ import annotations

import functools
import os
import struct
import sys
from collections.abc import Iterator, Mapping
from typing import IO, Any

__all__ = ["TFRecordWriter", "iter_records", "masked_crc", "messages", "sequence_example"]

_MASK_DELTA = 0xA282EAD8
_FIELD_OF = {"byte": "bytes_list", "float": "float_list", "int": "int64_list"}


def masked_crc(data: bytes) -> bytes:
    """TFRecord's masked CRC-32C of ``data``: 4 bytes, little-endian."""
    import google_crc32c

    crc = google_crc32c.value(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF)


@functools.cache
def messages() -> Any:
    """The ``example_pb2``-like namespace: ``Feature``, ``Features``, ``FeatureList``, ``FeatureLists``,
    ``Example``, ``SequenceExample`` (TensorFlow's own when it is imported, else a private pool's).

    Raises
    ------
    OptionError
        When the ``protobuf`` package is not installed (extra ``tf``).
    """
    if "tensorflow" in sys.modules:
        from tensorflow.core.example import example_pb2  # type: ignore[import-not-found]

        return example_pb2
    from types import SimpleNamespace

    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError as err:
        from vidlabel.errors import OptionError

        raise OptionError(
            "MediaSequence records need the protobuf package: pip install 'vidlabel[tf]' (no TensorFlow needed)"
        ) from err

    fdp = descriptor_pb2.FileDescriptorProto(name="vidlabel/tf_example.proto", package="tensorflow", syntax="proto3")
    f = descriptor_pb2.FieldDescriptorProto
    rep, opt = f.LABEL_REPEATED, f.LABEL_OPTIONAL

    def message(name: str, *fields: tuple[str, int, int, int, str | None], oneof: str | None = None) -> Any:
        msg = fdp.message_type.add(name=name)
        if oneof:
            msg.oneof_decl.add(name=oneof)
        for fname, number, label, ftype, type_name in fields:
            field = msg.field.add(name=fname, number=number, label=label, type=ftype)
            if type_name:
                field.type_name = type_name
            if oneof:
                field.oneof_index = 0
        return msg

    def map_of(msg: Any, field: str, value_type: str) -> None:
        entry = msg.nested_type.add(name="".join(p.title() for p in field.split("_")) + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, label=opt, type=f.TYPE_STRING)
        entry.field.add(name="value", number=2, label=opt, type=f.TYPE_MESSAGE, type_name=value_type)
        msg.field.add(name=field, number=1, label=rep, type=f.TYPE_MESSAGE,
                      type_name=f".tensorflow.{msg.name}.{entry.name}")  # fmt: skip

    message("BytesList", ("value", 1, rep, f.TYPE_BYTES, None))
    message("FloatList", ("value", 1, rep, f.TYPE_FLOAT, None))
    message("Int64List", ("value", 1, rep, f.TYPE_INT64, None))
    message("Feature", ("bytes_list", 1, opt, f.TYPE_MESSAGE, ".tensorflow.BytesList"),
            ("float_list", 2, opt, f.TYPE_MESSAGE, ".tensorflow.FloatList"),
            ("int64_list", 3, opt, f.TYPE_MESSAGE, ".tensorflow.Int64List"), oneof="kind")  # fmt: skip
    map_of(message("Features"), "feature", ".tensorflow.Feature")
    message("FeatureList", ("feature", 1, rep, f.TYPE_MESSAGE, ".tensorflow.Feature"))
    map_of(message("FeatureLists"), "feature_list", ".tensorflow.FeatureList")
    message("Example", ("features", 1, opt, f.TYPE_MESSAGE, ".tensorflow.Features"))
    message("SequenceExample", ("context", 1, opt, f.TYPE_MESSAGE, ".tensorflow.Features"),
            ("feature_lists", 2, opt, f.TYPE_MESSAGE, ".tensorflow.FeatureLists"))  # fmt: skip
    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(fdp)
    names = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists",
             "Example", "SequenceExample")  # fmt: skip
    return SimpleNamespace(**{n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{n}"))
                              for n in names}, DESCRIPTOR=file)  # fmt: skip


def _fill(feature: Any, value: Any, dtype: str) -> None:
    values = value if isinstance(value, (list, tuple)) or hasattr(value, "tolist") else [value]
    if hasattr(values, "tolist"):
        values = values.tolist()
    getattr(feature, _FIELD_OF[dtype]).value.extend(values)


def sequence_example(
    context: Mapping[str, tuple[Any, str]], feature_lists: Mapping[str, tuple[list[Any], str]]
) -> bytes:
    """One serialized ``tf.train.SequenceExample``.

    Parameters
    ----------
    context : mapping of str to (value, dtype)
        Context features; ``dtype`` is ``"byte"``, ``"int"`` or ``"float"``; a value is one item or a
        list / array of them.
    feature_lists : mapping of str to (list of values, dtype)
        Feature lists, one value (item or list) per time step.

    Returns
    -------
    bytes
        The serialized message.
    """
    pb = messages()
    seq = pb.SequenceExample()
    for key, (value, dtype) in context.items():
        _fill(seq.context.feature[key], value, dtype)
    for key, (steps, dtype) in feature_lists.items():
        flist = seq.feature_lists.feature_list[key]
        for value in steps:
            _fill(flist.feature.add(), value, dtype)
    # deterministic: map entries (the keys) in sorted order, not one that changes from process to process
    return bytes(seq.SerializeToString(deterministic=True))


class TFRecordWriter:
    """Writes records to one TFRecord file (TFRecord framing, see the module docstring).

    Parameters
    ----------
    path : path-like
        The file, created or truncated.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file: IO[bytes] = open(path, "wb")

    def write(self, context: Mapping[str, tuple[Any, str]], feature_lists: Mapping[str, tuple[list[Any], str]]) -> None:
        """Append one SequenceExample built by :func:`sequence_example`."""
        self.write_record(sequence_example(context, feature_lists))

    def write_record(self, record: bytes) -> None:
        """Append one already serialized record."""
        head = struct.pack("<Q", len(record))
        self._file.write(head + masked_crc(head) + record + masked_crc(record))

    def close(self) -> None:
        """Flush and close the file."""
        self._file.close()


def _bytes_left(fh: IO[bytes]) -> int | None:
    """Bytes from ``fh``'s position to its end, or None where it cannot seek (a pipe)."""
    try:
        here = fh.tell()
        end = fh.seek(0, os.SEEK_END)
        fh.seek(here)
    except (OSError, ValueError):
        return None
    return end - here


def iter_records(fh: IO[bytes]) -> Iterator[tuple[int, bytes | None, str | None]]:
    """``(record number, data, problem)`` for each record of an open TFRecord file, both CRCs checked.

    ``problem`` is None for a good record; otherwise ``data`` is None, ``problem`` says what is wrong
    (cut short, a CRC that does not match) and the iteration ends. A record's length is checked against
    the bytes left in the file before it is read: a header that claims more (a damaged or hostile file
    whose length CRC matches) is a file cut short, never a read of that many bytes.
    """
    number = 0
    while True:
        head = fh.read(12)
        if not head:
            return
        if len(head) < 12:
            yield number, None, f"cut short: {len(head)} bytes of a 12-byte record header"
            return
        if masked_crc(head[:8]) != head[8:]:
            yield number, None, "length CRC does not match: not a TFRecord file, or damaged"
            return
        (length,) = struct.unpack("<Q", head[:8])
        left = _bytes_left(fh)
        if left is not None and left < length + 4:
            got = min(left, length)
            problem = (
                f"cut short: the header gives {length} record bytes and a 4-byte CRC, {left} bytes are left "
                f"({got} of {length} record bytes, {left - got} of 4 CRC bytes)"
            )
            yield number, None, problem
            return
        data = fh.read(length)
        tail = fh.read(4)
        if len(data) < length or len(tail) < 4:
            yield number, None, f"cut short: {len(data)} of {length} record bytes, {len(tail)} of 4 CRC bytes"
            return
        if masked_crc(data) != tail:
            yield number, None, "data CRC does not match: the record is damaged"
            return
        yield number, data, None
        number += 1
