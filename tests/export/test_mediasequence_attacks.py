"""Hostile MediaSequence records: a mask PNG of a hostile size, a view id that is no text."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.export.test_mediasequence import H, W, good_record, make_dataset, write_record
from tests.media import ClipTruth
from vidlabel.errors import FormatError
from vidlabel.formats import import_labels


def png(width: int, height: int) -> bytes:
    """A valid 8-bit grey PNG of ``width`` x ``height`` pixels whose left half is set (a few KB for any size)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\xff" * (width // 2) + b"\x00" * (width - width // 2)
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * height, 9))
        + chunk(b"IEND", b"")
    )  # fmt: skip


def _masked_record(mask: bytes) -> tuple[dict, dict]:
    context, features = good_record()
    features["INSTANCE_SEGMENTATION/image/multi_encoded"] = ([[mask], []], "byte")
    return context, features


def test_a_mask_png_declaring_a_hostile_size_is_refused_before_decoding(tmp_path: Path, clip: ClipTruth) -> None:
    # before: a PNG was decoded at whatever size it declared (a 2 MB record of one 16000x16000 16-bit PNG for a
    # 64x48 video took 2.8 GB, on a dry run too); its header is read first now (this one is 4096x3072, 12 MB)
    ds = make_dataset(tmp_path / "ds", clip, [])
    path = write_record(tmp_path / "m.tfrecord", *_masked_record(png(4096, 3072)))
    said = (
        r"m\.tfrecord record 0.*: an INSTANCE_SEGMENTATION PNG declares 4096x3072 pixels, more than 4 times the "
        rf"video's {W}x{H}: refused before decoding"
    )
    for dry_run in (True, False):
        with pytest.raises(FormatError, match=said):
            import_labels(ds, "mediasequence", path, dry_run=dry_run)
    assert ds.annotations() == []


def test_a_mask_png_of_a_smaller_video_is_scaled(tmp_path: Path, clip: ClipTruth) -> None:
    # a record of the video at twice the size is read, its mask scaled to the registered video's size
    ds = make_dataset(tmp_path / "ds", clip, [])
    import_labels(ds, "mediasequence", write_record(tmp_path / "m.tfrecord", *_masked_record(png(2 * W, 2 * H))))
    (row,) = ds.annotations()
    from vidlabel.geometry import decode_rle

    mask = decode_rle(row["mask"])
    assert row["kind"] == "mask" and mask.shape == (H, W)
    assert mask[:, : W // 2].all() and not mask[:, W // 2 :].any()


def test_a_view_id_that_is_not_utf8_is_a_format_error(tmp_path: Path, clip: ClipTruth) -> None:
    # before: a raw UnicodeDecodeError naming no file or record
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    context["vidlabel/view_id"] = (b"left\xff\xfe", "byte")
    path = write_record(tmp_path / "v.tfrecord", context, features)
    with pytest.raises(
        FormatError, match=r"v\.tfrecord record 0.*: was exported with view b'left\\xff\\xfe' \(not UTF-8\): its boxes"
    ):
        import_labels(ds, "mediasequence", path)
    assert ds.annotations() == [] and np.asarray(ds.labels()).size == 3
