"""MediaSequence export and import: records any SequenceExample reader takes, and back into a dataset.

The records are read here with the ``tfrecord`` package's own reader and its ``example_pb2`` protos
(never vidlabel's reader); the expected key names are written out from MediaPipe's MediaSequence
reference, not taken from vidlabel's key table. Truth comes from the generated clips (frame numbers in
the pixels, boxes from the generator, timestamps from PyAV's own demuxing).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tfrecord import example_pb2  # the tfrecord package's own protos and reader: not vidlabel's
from tfrecord.reader import tfrecord_iterator
from tfrecord.writer import TFRecordWriter

from tests.conftest import VFR_PTS_MS
from tests.formats_util import canonical, random_tracks
from tests.media import ClipTruth, encode_clip, read_frame_number
from vidlabel import Dataset, export, open_store, probe
from vidlabel.cli import main
from vidlabel.errors import FormatError, OptionError, StoreError, VidlabelWarning
from vidlabel.formats import export_labels, import_labels
from vidlabel.geometry import decode_rle
from vidlabel.spec import FrameIndex

LABELS = ["person", "car", "goal"]
W, H = 64, 48

# MediaSequence's keys and types (media_sequence.py), written out independently of vidlabel's table.
CONTEXT_TYPES = {
    "example/id": "bytes_list", "example/dataset_name": "bytes_list", "clip/data_path": "bytes_list",
    "clip/media_id": "bytes_list", "clip/start/timestamp": "int64_list", "clip/end/timestamp": "int64_list",
    "clip/label/index": "int64_list", "clip/label/string": "bytes_list", "clip/label/confidence": "float_list",
    "segment/start/timestamp": "int64_list", "segment/end/timestamp": "int64_list",
    "segment/start/index": "int64_list", "segment/end/index": "int64_list", "segment/label/index": "int64_list",
    "segment/label/string": "bytes_list", "segment/label/confidence": "float_list", "image/format": "bytes_list",
    "image/channels": "int64_list", "image/height": "int64_list", "image/width": "int64_list",
    "image/frame_rate": "float_list", "INSTANCE_SEGMENTATION/image/format": "bytes_list",
    "INSTANCE_SEGMENTATION/image/height": "int64_list", "INSTANCE_SEGMENTATION/image/width": "int64_list",
    "vidlabel/release_id": "bytes_list", "vidlabel/clip/label/start/timestamp": "int64_list",
    "vidlabel/clip/label/end/timestamp": "int64_list", "vidlabel/clip/label/origin": "bytes_list",
    "vidlabel/segment/origin": "bytes_list",
}  # fmt: skip
FEATURE_TYPES = {
    "image/encoded": "bytes_list", "image/timestamp": "int64_list", "region/bbox/ymin": "float_list",
    "region/bbox/xmin": "float_list", "region/bbox/ymax": "float_list", "region/bbox/xmax": "float_list",
    "region/label/index": "int64_list", "region/label/string": "bytes_list", "region/label/confidence": "float_list",
    "region/track/string": "bytes_list", "region/is_annotated": "int64_list", "region/timestamp": "int64_list",
    "INSTANCE_SEGMENTATION/image/multi_encoded": "bytes_list", "INSTANCE_SEGMENTATION/image/timestamp": "int64_list",
    "vidlabel/region/kind": "bytes_list", "vidlabel/region/origin": "bytes_list", "region/is_generated": "int64_list",
}  # fmt: skip
ONE_VALUE = {"image/encoded", "image/timestamp", "region/is_annotated", "region/timestamp",
             "INSTANCE_SEGMENTATION/image/timestamp"}  # fmt: skip
PER_REGION = [k for k in FEATURE_TYPES if k.startswith(("region/bbox", "region/label", "region/track", "vidlabel/"))]


def read_all(out: Path) -> list[Any]:
    """Every SequenceExample under ``out`` (shards in name order), with the tfrecord package's reader."""
    records = []
    for f in sorted(out.glob("part-*.tfrecord")):
        for raw in tfrecord_iterator(str(f)):
            records.append(example_pb2.SequenceExample.FromString(bytes(raw)))
    return records


def ctx(se: Any, key: str) -> list[Any]:
    f = se.context.feature[key]
    return list(getattr(f, f.WhichOneof("kind")).value)


def fl(se: Any, key: str) -> list[list[Any]]:
    return [list(getattr(f, f.WhichOneof("kind")).value) for f in se.feature_lists.feature_list[key].feature]


def pts_us(path: Path) -> list[int]:
    """Presentation times of every displayed frame in microseconds, by PyAV's own demuxing."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        pts = sorted(p.pts for p in c.demux(s) if p.pts is not None and p.size)
        return [int(Fraction(p) * s.time_base * 1_000_000) for p in pts]


def decode_png(data: bytes, fmt: str) -> np.ndarray:
    ctx_ = av.CodecContext.create("png", "r")
    return ctx_.decode(av.Packet(data))[0].to_ndarray(format=fmt)


def decode_image(data: bytes) -> np.ndarray:
    import simplejpeg

    return simplejpeg.decode_jpeg(data) if data[:2] == b"\xff\xd8" else decode_png(data, "rgb24")


def make_dataset(path: Path, truth: ClipTruth, rows: list[dict[str, Any]], vid: str = "v") -> Dataset:
    ds = Dataset.create(path)
    ds.add_labels(LABELS)
    ds.add_video(probe(truth.path, video_id=vid))
    ds.add_annotations(rows, vid)
    ds.build()
    return ds


def fresh_like(path: Path, ds: Dataset) -> Dataset:
    new = Dataset.create(path)
    new.add_labels(LABELS)
    for m in ds.videos():
        new.add_video(m)
    return new


def mask_at(x0: int, y0: int, w: int, h: int) -> np.ndarray:
    m = np.zeros((H, W), np.uint8)
    m[y0 : y0 + h, x0 : x0 + w] = 1
    return m


def sample_rows(truth: ClipTruth) -> list[dict[str, Any]]:
    """Tracked boxes on the generator's moving box, an untracked box, model boxes, masks, markers."""
    rows: list[dict[str, Any]] = [
        {"kind": "box", "label": "person", "start_frame": n, "box": truth.box(n), "track_id": 4}
        for n in range(1, truth.frame_count, 3)
    ]
    rows.append({"kind": "box", "label": "car", "start_frame": 7, "box": (1.5, 2.25, 30.0, 40.5)})
    rows.append({"kind": "box", "label": "car", "start_frame": 7, "box": (3, 4, 20, 21), "origin": "model",
                 "confidence": 0.625, "track_id": 9})  # fmt: skip
    rows.append({"kind": "box", "label": "car", "start_frame": 10, "box": (3, 5, 20, 22), "origin": "model",
                 "track_id": 9})  # fmt: skip
    rows.append({"kind": "mask", "label": "car", "start_frame": 10, "mask": mask_at(5, 20, 9, 7), "track_id": 2})
    rows.append({"kind": "mask", "label": "car", "start_frame": 13, "mask": mask_at(6, 21, 9, 6), "track_id": 2})
    rows.append({"kind": "marker", "label": "goal", "start_frame": 0, "end_frame": truth.frame_count - 1})
    rows.append({"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 11, "origin": "model",
                 "confidence": 0.5})  # fmt: skip
    rows.append({"kind": "marker", "label": "person", "start_frame": 2, "end_frame": 2})  # between stored frames
    return rows


def assert_rows_equal(got: list[dict[str, Any]], want: list[dict[str, Any]], atol: float = 0.5) -> None:
    """Same rows (boxes within ``atol`` px, masks equal), same track partition."""
    g, w = canonical(got), canonical(want)
    assert g[0] == w[0]
    assert g[1] == w[1]
    assert g[2].shape == w[2].shape
    assert np.allclose(g[2], w[2], atol=atol, rtol=0, equal_nan=True), np.nanmax(np.abs(g[2] - w[2]))


@pytest.fixture(scope="module")
def ms_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mediasequence")


@pytest.fixture(scope="module")
def exported(ms_dir: Path, clip: ClipTruth) -> tuple[Dataset, Path]:
    ds = make_dataset(ms_dir / "ds", clip, sample_rows(clip))
    out = ms_dir / "out"
    report = export(ds, out, format="mediasequence", codec="png", clip_frames=5, shard_frames=7, progress=False)
    assert report.records == len(read_all(out)) and report.shards == len(list(out.glob("part-*.tfrecord")))
    return ds, out


# -- round trip ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("clip_frames", [None, 5])
@pytest.mark.parametrize("codec", ["png", "jpeg:80"])
def test_round_trip_into_a_fresh_dataset_gives_the_same_rows(
    tmp_path: Path, clip: ClipTruth, clip_frames: int | None, codec: str
) -> None:
    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    export(ds, tmp_path / "out", format="mediasequence", codec=codec, clip_frames=clip_frames, progress=False)
    new = fresh_like(tmp_path / "new", ds)
    report = import_labels(new, "mediasequence", tmp_path / "out")
    assert report.videos["v"].counts == {"box": 19, "mask": 2, "marker": 3}
    assert_rows_equal(new.annotations(), ds.annotations())


@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=random_tracks(masks=True, markers=True, untracked=True),
    clip_frames=st.sampled_from([None, 1, 3]),
    shard_frames=st.sampled_from([1, 4, 1024]),
    frames=st.sampled_from(["annotated", "all"]),
)
def test_round_trip_property(
    ms_dir: Path, rows: list[dict[str, Any]], clip_frames: int | None, shard_frames: int, frames: str
) -> None:
    truth = _clip20(ms_dir)
    with tempfile.TemporaryDirectory() as tmp:
        ds = make_dataset(Path(tmp) / "ds", truth, rows)
        export(ds, Path(tmp) / "out", format="mediasequence", codec="png", clip_frames=clip_frames,
               shard_frames=shard_frames, frames=frames, progress=False)  # fmt: skip
        new = fresh_like(Path(tmp) / "new", ds)
        import_labels(new, "mediasequence", Path(tmp) / "out")
        assert_rows_equal(new.annotations(), ds.annotations())


_CLIP20: dict[str, ClipTruth] = {}


def _clip20(folder: Path) -> ClipTruth:
    if "c" not in _CLIP20:
        _CLIP20["c"] = encode_clip(folder / "clip20.mp4", n_frames=20, gop=5)
    return _CLIP20["c"]


def test_labels_only_export_labels_round_trip(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    report = export_labels(ds, "mediasequence", tmp_path / "labels")
    records = read_all(tmp_path / "labels")
    assert report.counts["records"] == len(records) == 1 and report.paths
    assert "image/encoded" not in records[0].feature_lists.feature_list
    assert "image/format" not in records[0].context.feature
    new = fresh_like(tmp_path / "new", ds)
    import_labels(new, "mediasequence", tmp_path / "labels")
    assert_rows_equal(new.annotations(), ds.annotations())


# -- the records, read by an independent reader -----------------------------------------------------------------


def test_every_key_name_type_and_length_per_frame(exported: tuple[Dataset, Path], clip: ClipTruth) -> None:
    ds, out = exported
    records = read_all(out)
    rel = ds.release()
    times = pts_us(clip.path)
    rows = ds.annotations()
    stored = sorted({r["start_frame"] for r in rows if r["kind"] != "marker"})
    assert [len(fl(se, "image/timestamp")) for se in records] == [5, 5, 5, 1]
    assert sorted(p.name for p in out.glob("part-*")) == [
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    position = 0
    for se in records:
        for key, f in se.context.feature.items():
            assert key in CONTEXT_TYPES, key
            assert f.WhichOneof("kind") == CONTEXT_TYPES[key], key
        n = len(se.feature_lists.feature_list["image/encoded"].feature)
        for key, flist in se.feature_lists.feature_list.items():
            assert key in FEATURE_TYPES, key
            assert len(flist.feature) == n, key
            for f in flist.feature:
                assert f.WhichOneof("kind") == FEATURE_TYPES[key], key
                if key in ONE_VALUE:
                    assert len(getattr(f, FEATURE_TYPES[key]).value) == 1, key
        frames = stored[position : position + n]
        position += n
        assert ctx(se, "clip/media_id") == [b"v"] and ctx(se, "clip/data_path") == [str(clip.path).encode()]
        assert ctx(se, "example/id") == [f"v/{frames[0]}-{frames[-1]}".encode()]
        assert ctx(se, "vidlabel/release_id") == [rel.release_id.encode()]
        assert ctx(se, "image/format") == [b"PNG"] and ctx(se, "image/channels") == [3]
        assert ctx(se, "image/height") == [H] and ctx(se, "image/width") == [W]
        assert [t for (t,) in fl(se, "image/timestamp")] == [times[f] for f in frames]
        assert fl(se, "region/timestamp") == fl(se, "image/timestamp")
        assert ctx(se, "clip/start/timestamp") == [times[frames[0]]] and ctx(se, "clip/end/timestamp") == [
            times[frames[-1]]
        ]
        assert [read_frame_number(decode_image(b)) for (b,) in fl(se, "image/encoded")] == frames
        assert fl(se, "region/is_annotated") == [[1]] * n
        for j, f in enumerate(frames):
            here = sorted((r for r in rows if r["start_frame"] == f and r["kind"] != "marker"),
                          key=lambda r: r["annotation_id"])  # fmt: skip
            for key in PER_REGION:
                if key in se.feature_lists.feature_list:
                    assert len(fl(se, key)[j]) == len(here), (key, f)
            want = np.array([r["box"] for r in here], np.float64).reshape(-1, 4)
            got = np.array([fl(se, f"region/bbox/{c}")[j] for c in ("xmin", "ymin", "xmax", "ymax")]).T
            assert np.allclose(got * [W, H, W, H], want, atol=1e-4), f  # normalized, y first in the keys
            assert fl(se, "region/label/string")[j] == [r["label"].encode() for r in here]
            assert fl(se, "region/label/index")[j] == [rel.labels.index(r["label"]) for r in here]
            assert fl(se, "vidlabel/region/kind")[j] == [r["kind"].encode() for r in here]
            assert fl(se, "region/is_generated")[j] == [int(r["origin"] == "model") for r in here]
            tracks = fl(se, "region/track/string")[j]
            assert [t != b"" for t in tracks] == [r["track_id"] is not None for r in here]
            if "region/label/confidence" in se.feature_lists.feature_list:
                conf = fl(se, "region/label/confidence")[j]
                for c, r in zip(conf, here):
                    assert (math.isnan(c) and r["confidence"] is None) or c == pytest.approx(r["confidence"])
            if "INSTANCE_SEGMENTATION/image/multi_encoded" in se.feature_lists.feature_list:
                pngs = fl(se, "INSTANCE_SEGMENTATION/image/multi_encoded")[j]
                masks = [r for r in here if r["kind"] == "mask"]
                assert len(pngs) == len(masks)
                for png, r in zip(pngs, masks):
                    np.testing.assert_array_equal(decode_png(png, "gray")[:, :], decode_rle(r["mask"]))
    assert position == len(stored)
    # frames 10 and 13 hold the masks: only the first record (frames 1..13) has masks
    assert ["INSTANCE_SEGMENTATION/image/multi_encoded" in se.feature_lists.feature_list for se in records] == [
        True, False, False, False,
    ]  # fmt: skip


def test_markers_are_clip_labels_when_they_cover_the_record_else_segments(
    exported: tuple[Dataset, Path], clip: ClipTruth
) -> None:
    _, out = exported
    records = read_all(out)
    times = pts_us(clip.path)
    first = records[0]  # frames 1, 4, 7, 10, 13
    assert ctx(first, "clip/label/string") == [b"goal"]  # the marker over the whole video
    assert ctx(first, "vidlabel/clip/label/start/timestamp") == [times[0]]
    assert ctx(first, "vidlabel/clip/label/end/timestamp") == [times[clip.frame_count - 1]]
    assert ctx(first, "segment/label/string") == [b"goal", b"person"]
    assert ctx(first, "segment/start/timestamp") == [times[5], times[2]]
    assert ctx(first, "segment/end/timestamp") == [times[11], times[2]]
    # first frame at or after the start, last at or before the end (inclusive): 5..11 -> frames 7, 10
    assert ctx(first, "segment/start/index") == [2, 1] and ctx(first, "segment/end/index") == [3, 0]
    assert ctx(first, "segment/label/confidence") == [0.5, pytest.approx(float("nan"), nan_ok=True)]
    assert ctx(first, "vidlabel/segment/origin") == [b"model", b"human"]
    assert "segment/label/string" not in records[2].context.feature  # frames 31..46 overlap no short marker
    assert ctx(records[2], "clip/label/string") == [b"goal"]


def test_vfr_clip_keeps_exact_per_frame_timestamps(tmp_path: Path, clip_vfr: ClipTruth) -> None:
    rows = [{"kind": "box", "label": "person", "start_frame": n, "box": clip_vfr.box(n)} for n in (0, 4, 12, 29)]
    ds = make_dataset(tmp_path / "ds", clip_vfr, rows)
    export(ds, tmp_path / "out", format="mediasequence", frames="all", progress=False)
    (se,) = read_all(tmp_path / "out")
    assert [t for (t,) in fl(se, "image/timestamp")] == [ms * 1000 for ms in VFR_PTS_MS]
    assert [read_frame_number(decode_image(b)) for (b,) in fl(se, "image/encoded")] == list(range(30))
    assert fl(se, "region/is_annotated") == [[int(n in (0, 4, 12, 29))] for n in range(30)]
    new = fresh_like(tmp_path / "new", ds)
    import_labels(new, "mediasequence", tmp_path / "out")
    assert_rows_equal(new.annotations(), ds.annotations())


def test_a_frame_under_a_marker_alone_is_not_annotated_for_regions(tmp_path: Path, clip: ClipTruth) -> None:
    """region/is_annotated = 1 with no boxes reads as "annotated, no objects": frames annotated only by a marker
    were written so (before), which would teach a detector that they hold nothing; and with kinds=("marker",) the
    boxes written on frame 0 (a store holds every region of its frames) sat under a 0, read as padding."""
    rows = [{"kind": "box", "label": "person", "start_frame": n, "box": clip.box(n)} for n in (0, 4, 6)]
    rows.append({"kind": "marker", "label": "goal", "start_frame": 4, "end_frame": 9})
    ds = make_dataset(tmp_path / "ds", clip, rows)
    for kinds, name in ((("box", "marker"), "both"), (("marker",), "markers")):
        export(ds, tmp_path / name, format="mediasequence", frames="all", kinds=kinds, progress=False)
        (se,) = read_all(tmp_path / name)
        assert fl(se, "region/is_annotated") == [[int(n in (0, 4, 6))] for n in range(clip.frame_count)], kinds
        assert [len(b) for b in fl(se, "region/bbox/xmin")] == [int(n in (0, 4, 6)) for n in range(clip.frame_count)]
    export(ds, tmp_path / "annotated", format="mediasequence", kinds=("box", "marker"), progress=False)
    (se,) = read_all(tmp_path / "annotated")  # frames 0 and 4..9: the marker's 5, 7, 8, 9 hold no box
    assert fl(se, "region/is_annotated") == [[int(n in (0, 4, 6))] for n in (0, 4, 5, 6, 7, 8, 9)]
    assert [len(b) for b in fl(se, "region/bbox/xmin")] == [int(n in (0, 4, 6)) for n in (0, 4, 5, 6, 7, 8, 9)]
    store = tmp_path / "store"  # the frame store keeps the spec's meaning: a frame with a selected annotation
    export(ds, store, frames="all", kinds=("box", "marker"), progress=False)
    assert open_store(store).video_data("v").is_annotated.tolist() == [
        4 <= n <= 9 or n == 0 for n in range(clip.frame_count)
    ]


def test_start_offset_clip_keeps_absolute_timestamps(tmp_path: Path, clip_start_offset: ClipTruth) -> None:
    truth = clip_start_offset
    rows = [{"kind": "box", "label": "person", "start_frame": n, "box": truth.box(n)} for n in (0, 9, 35)]
    ds = make_dataset(tmp_path / "ds", truth, rows)
    export(ds, tmp_path / "out", format="mediasequence", progress=False)
    (se,) = read_all(tmp_path / "out")
    times = pts_us(truth.path)
    assert times[0] >= 200_000  # the stream starts 7 frames in: absolute, not shifted to 0
    assert [t for (t,) in fl(se, "image/timestamp")] == [times[0], times[9], times[35]]
    assert ctx(se, "clip/start/timestamp") == [times[0]] and ctx(se, "clip/end/timestamp") == [times[35]]
    assert [read_frame_number(decode_image(b)) for (b,) in fl(se, "image/encoded")] == [0, 9, 35]


def test_frame_selection_stride_output_size_and_view_are_the_stores(tmp_path: Path, clip: ClipTruth) -> None:
    rows = [{"kind": "box", "label": "person", "start_frame": n, "box": clip.box(n)} for n in range(0, 20, 2)]
    ds = make_dataset(tmp_path / "ds", clip, rows)
    with pytest.warns(VidlabelWarning, match="do(es)? not store"):
        export(ds, tmp_path / "out", format="mediasequence", stride=2, output_size=(32, 24), progress=False)
    (se,) = read_all(tmp_path / "out")
    assert [read_frame_number(np.kron(decode_image(b), np.ones((2, 2, 1), np.uint8)))
            for (b,) in fl(se, "image/encoded")] == [0, 4, 8, 12, 16]  # fmt: skip
    assert ctx(se, "image/width") == [32] and ctx(se, "image/height") == [24]
    got = np.array([fl(se, f"region/bbox/{c}") for c in ("xmin", "ymin", "xmax", "ymax")])[..., 0].T
    want = np.array([clip.box(n) for n in (0, 4, 8, 12, 16)]) / [W, H, W, H]
    assert np.allclose(got, want, atol=1e-6)
    ds.add_view("left", crop=(0, 0, 32, 48))
    ds.build()
    export(ds, tmp_path / "view", format="mediasequence", view_id="left", frames="all", progress=False)
    (se,) = read_all(tmp_path / "view")
    assert ctx(se, "image/width") == [32] and ctx(se, "vidlabel/view_id") == [b"left"]
    new = fresh_like(tmp_path / "new", ds)
    with pytest.raises(FormatError, match="exported with view 'left'"):
        import_labels(new, "mediasequence", tmp_path / "view")


# -- resume ----------------------------------------------------------------------------------------------------


def records_content(out: Path) -> list[tuple[Any, ...]]:
    """Every record with its images decoded (PNG bytes need not be identical between runs; pixels are)."""
    result = []
    for se in read_all(out):
        images = [decode_image(b) for (b,) in fl(se, "image/encoded")]
        se.feature_lists.feature_list["image/encoded"].Clear()
        result.append((se.SerializeToString(deterministic=True), [im.tobytes() for im in images]))
    return result


def test_resumed_export_equals_a_clean_one(tmp_path: Path, clip: ClipTruth, monkeypatch: pytest.MonkeyPatch) -> None:
    ms = importlib.import_module("vidlabel.export._mediasequence")  # vidlabel.export is also the function

    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    options = {"format": "mediasequence", "codec": "png", "clip_frames": 5, "shard_frames": 7, "progress": False}
    export(ds, tmp_path / "clean", **options)
    real, calls = ms.encode_image, []

    def dies_at_frame_16(image: np.ndarray, opts: Any) -> bytes:  # records 0, 1 in shard 0; 2 written, 3 not
        calls.append(1)
        if len(calls) == 16:
            raise KeyboardInterrupt("killed")
        return real(image, opts)

    monkeypatch.setattr(ms, "encode_image", dies_at_frame_16)
    with pytest.raises(KeyboardInterrupt):
        export(ds, tmp_path / "out", **options)
    monkeypatch.setattr(ms, "encode_image", real)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "part-00000-of-00002.tfrecord" in names and "part-00001-of-00002.tfrecord" not in names
    assert "_SUCCESS" not in names and "part-00001-of-00002.tfrecord.partial" in names
    first = (tmp_path / "out" / "part-00000-of-00002.tfrecord").stat()
    report = export(ds, tmp_path / "out", **options)
    again = (tmp_path / "out" / "part-00000-of-00002.tfrecord").stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)  # kept, not rewritten
    assert report.frames_reused == 10 and report.frames_decoded == 6
    assert records_content(tmp_path / "out") == records_content(tmp_path / "clean")
    assert not list((tmp_path / "out").glob("*.partial")) and (tmp_path / "out" / "_SUCCESS").is_file()
    assert export(ds, tmp_path / "out", **options).frames_decoded == 0  # a finished export has nothing to do
    with pytest.raises(StoreError, match="another release or other options"):
        export(ds, tmp_path / "out", **{**options, "clip_frames": 4})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"not this MediaSequence export's \(notes.txt\)"):
        export(ds, tmp_path / "other", **options)


_EXPORT_SCRIPT = r"""
import sys
from vidlabel import Dataset, export
export(Dataset.open(sys.argv[1]), sys.argv[2], format="mediasequence", codec="png", clip_frames=5, progress=False)
"""


def test_the_same_export_in_two_processes_writes_the_same_bytes(tmp_path: Path, clip: ClipTruth) -> None:
    """Protobuf writes a map's entries (the context and feature-list keys) in an order that changes from one
    process to the next unless asked to be deterministic: the shards of one release must not."""
    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    for out in ("a", "b"):
        proc = subprocess.run([sys.executable, "-c", _EXPORT_SCRIPT, str(ds.path), str(tmp_path / out)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
    shards = sorted(p.name for p in (tmp_path / "a").glob("part-*.tfrecord"))
    assert shards and shards == sorted(p.name for p in (tmp_path / "b").glob("part-*.tfrecord"))
    for name in shards:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


# -- errors ----------------------------------------------------------------------------------------------------


def test_bad_options_are_refused(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    out = tmp_path / "out"
    with pytest.raises(OptionError, match="codec must be 'jpeg\\[:quality\\]' or 'png', got 'zstd:1'"):
        export(ds, out, format="mediasequence", codec="zstd", progress=False)
    with pytest.raises(OptionError, match="clip_frames must be an integer >= 1, got 0"):
        export(ds, out, format="mediasequence", clip_frames=0, progress=False)
    with pytest.raises(OptionError, match="workers must be 1, got 2"):
        export(ds, out, format="mediasequence", workers=2, progress=False)
    with pytest.raises(OptionError, match="clip_frames applies to format='mediasequence' only, not 'hdf5'"):
        export(ds, out, format="hdf5", clip_frames=4, progress=False)
    with pytest.raises(OptionError, match="unknown store format 'tfrecord'; allowed: hdf5, zarr, mediasequence"):
        export(ds, out, format="tfrecord", progress=False)


def write_record(path: Path, context: dict[str, Any], features: dict[str, Any]) -> Path:
    w = TFRecordWriter(str(path))
    w.write(context, features)
    w.close()
    return path


def good_record() -> tuple[dict[str, Any], dict[str, Any]]:
    context = {"clip/media_id": (b"v", "byte"), "clip/data_path": (b"elsewhere.mp4", "byte")}
    features = {
        "region/timestamp": ([0, 33333], "int"), "region/bbox/ymin": ([[0.1], []], "float"),
        "region/bbox/xmin": ([[0.2], []], "float"), "region/bbox/ymax": ([[0.5], []], "float"),
        "region/bbox/xmax": ([[0.6], []], "float"), "region/label/string": ([[b"car"], []], "byte"),
    }  # fmt: skip
    return context, features


def test_a_foreign_record_imports_by_media_id_or_data_path(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    import_labels(ds, "mediasequence", write_record(tmp_path / "a.tfrecord", context, features))
    (row,) = ds.annotations()
    assert row["start_frame"] == 0 and row["origin"] == "human" and row["track_id"] is None
    assert np.allclose(row["box"], (0.2 * W, 0.1 * H, 0.6 * W, 0.5 * H))
    by_path = {"clip/media_id": (b"cam-7", "byte"), "clip/data_path": (str(clip.path).encode(), "byte")}
    features["region/timestamp"] = ([66666, 100000], "int")
    import_labels(ds, "mediasequence", write_record(tmp_path / "b.tfrecord", by_path, features))
    assert sorted(r["start_frame"] for r in ds.annotations()) == [0, 2]


def test_integer_track_ids_make_tracks(tmp_path: Path, clip: ClipTruth) -> None:
    # MediaSequence has two track keys: region/track/string and region/track/index (int64 list per frame, what
    # media_sequence.py's add_bbox_track_index writes); the index was ignored, so every box came in untracked
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    features = {**features, "region/bbox/ymin": ([[0.1, 0.2], [0.3]], "float"),
                "region/bbox/xmin": ([[0.1, 0.2], [0.3]], "float"), "region/bbox/ymax": ([[0.5, 0.6], [0.7]], "float"),
                "region/bbox/xmax": ([[0.5, 0.6], [0.7]], "float"),
                "region/label/string": ([[b"car", b"person"], [b"car"]], "byte"),
                "region/track/index": ([[0, 5], [0]], "int")}  # fmt: skip
    import_labels(ds, "mediasequence", write_record(tmp_path / "t.tfrecord", context, features))
    rows = sorted(ds.annotations(), key=lambda r: (r["start_frame"], r["label"]))
    assert [(r["start_frame"], r["label"]) for r in rows] == [(0, "car"), (0, "person"), (1, "car")]
    assert None not in [r["track_id"] for r in rows]
    assert rows[0]["track_id"] == rows[2]["track_id"] != rows[1]["track_id"]


def test_predicted_regions_are_model_rows(tmp_path: Path, clip: ClipTruth) -> None:
    # media_sequence.py's add_predicted_bbox* write the region keys under the PREDICTED prefix
    # (PREDICTED/region/bbox/ymin ...): a record of ground truth and predictions imported the truth alone
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    features["region/track/string"] = ([[b"id_0"], []], "byte")
    predicted = {
        "PREDICTED/region/timestamp": ([33333], "int"), "PREDICTED/region/bbox/ymin": ([[0.25, 0.5]], "float"),
        "PREDICTED/region/bbox/xmin": ([[0.25, 0.5]], "float"), "PREDICTED/region/bbox/ymax": ([[0.75, 1.0]], "float"),
        "PREDICTED/region/bbox/xmax": ([[0.5, 0.75]], "float"),
        "PREDICTED/region/label/string": ([[b"person", b"car"]], "byte"),
        "PREDICTED/region/label/confidence": ([[0.75, 0.5]], "float"),
        "PREDICTED/region/track/string": ([[b"id_0", b""]], "byte"),
    }  # fmt: skip
    import_labels(ds, "mediasequence", write_record(tmp_path / "p.tfrecord", context, {**features, **predicted}))
    rows = sorted(ds.annotations(), key=lambda r: (r["start_frame"], r["label"]))
    assert [(r["start_frame"], r["label"], r["origin"], r["confidence"]) for r in rows] == [
        (0, "car", "human", None), (1, "car", "model", 0.5), (1, "person", "model", 0.75)]  # fmt: skip
    assert np.allclose(rows[2]["box"], (0.25 * W, 0.25 * H, 0.5 * W, 0.75 * H))
    assert rows[0]["track_id"] is not None and rows[1]["track_id"] is None
    assert rows[2]["track_id"] not in (None, rows[0]["track_id"])  # the prediction's id_0 is not the truth's
    new = make_dataset(tmp_path / "new", clip, [])
    wrong = {**predicted, "PREDICTED/region/bbox/ymin": ([[1, 2]], "int")}
    with pytest.raises(
        FormatError, match=r"p2\.tfrecord record 0 frame 0: PREDICTED/region/bbox/ymin holds a int64_list"
    ):
        import_labels(new, "mediasequence", write_record(tmp_path / "p2.tfrecord", context, {**features, **wrong}))
    uneven = {**predicted, "PREDICTED/region/label/string": ([[b"person"]], "byte")}
    with pytest.raises(FormatError, match=r"frame 0: PREDICTED/region/label/string holds 1 values; the frame has 2"):
        import_labels(new, "mediasequence", write_record(tmp_path / "p3.tfrecord", context, {**features, **uneven}))
    assert new.annotations() == []


def test_image_labels_are_markers_of_their_frame(tmp_path: Path, clip: ClipTruth) -> None:
    # image/label/string (add_image_label_string: "if an image at a specific timestamp should have a label") was
    # not read: a record of frame labels imported nothing, and said nothing
    ds = make_dataset(tmp_path / "ds", clip, [])
    context = {"clip/media_id": (b"v", "byte")}
    features = {
        "image/timestamp": ([33333, 100000, 133333], "int"),
        "image/label/string": ([[b"goal"], [], [b"goal", b"person"]], "byte"),
        "image/label/index": ([[2], [], [2, 0]], "int"),
    }  # fmt: skip
    import_labels(ds, "mediasequence", write_record(tmp_path / "i.tfrecord", context, features))
    got = sorted((r["kind"], r["label"], r["start_frame"], r["end_frame"], r["origin"]) for r in ds.annotations())
    assert got == [("marker", "goal", 1, 1, "human"), ("marker", "goal", 4, 4, "human"),
                   ("marker", "person", 4, 4, "human")]  # fmt: skip
    new = make_dataset(tmp_path / "new", clip, [])
    scored = {**features, "image/label/confidence": ([[0.5], [], [0.25, 0.75]], "float")}
    import_labels(new, "mediasequence", write_record(tmp_path / "c.tfrecord", context, scored))
    assert sorted((r["label"], r["start_frame"], r["origin"], r["confidence"]) for r in new.annotations()) == [
        ("goal", 1, "model", 0.5), ("goal", 4, "model", 0.25), ("person", 4, "model", 0.75)]  # fmt: skip
    other = make_dataset(tmp_path / "other", clip, [])
    short = {**features, "image/timestamp": ([33333, 100000], "int")}
    with pytest.raises(
        FormatError, match=r"s\.tfrecord record 0: image/timestamp has 2 entries; image/label/string has 3"
    ):
        import_labels(other, "mediasequence", write_record(tmp_path / "s.tfrecord", context, short))
    untimed = {k: v for k, v in features.items() if k != "image/timestamp"}
    with pytest.raises(FormatError, match=r"has image/label/string but no image/timestamp"):
        import_labels(other, "mediasequence", write_record(tmp_path / "u.tfrecord", context, untimed))
    assert other.annotations() == []


@pytest.mark.parametrize(
    ("extra_features", "reason", "n"),
    [
        ({"region/point/x": ([[0.5, 0.25], [0.75]], "float"),
          "region/point/y": ([[0.5, 0.25], [0.75]], "float")},
         "region/point (points: vidlabel has no point annotations)", 3),
        ({"GT/region/bbox/ymin": ([[0.5], [0.25, 0.5]], "float"),
          "GT/region/label/string": ([[b"car"], [b"car", b"car"]], "byte")},
         "GT/region/* (regions under the prefix 'GT': vidlabel reads region/* and PREDICTED/region/*)", 3),
        ({"INSTANCE_SEGMENTATION/image/encoded": ([[b"png"], []], "byte")},
         "INSTANCE_SEGMENTATION/image/encoded (one image of instance ids per frame", 1),
        ({"CLASS_SEGMENTATION/image/encoded": ([[b"png"], [b"png"]], "byte")},
         "CLASS_SEGMENTATION/image/encoded (class segmentation images", 2),
    ],
)  # fmt: skip
def test_labels_the_import_has_no_rows_for_are_counted_not_imported(
    tmp_path: Path, clip: ClipTruth, extra_features: dict[str, Any], reason: str, n: int
) -> None:
    # MediaSequence keys holding labels vidlabel has no rows for (keypoints, another prefix's regions, segmentation
    # images) were skipped: the rest imported and nothing said so; they are counted, as CVAT's points are
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    path = write_record(tmp_path / "x.tfrecord", context, {**features, **extra_features})
    report = import_labels(ds, "mediasequence", path)
    (key,) = report.skipped
    assert key.startswith(reason)
    assert report.skipped[key] == n
    assert f"not imported: {key}: {n}" in str(report)
    # the rest of the record is imported: the one box of good_record(), as without those keys
    (row,) = ds.annotations()
    assert row["start_frame"] == 0 and row["label"] == "car"
    assert np.allclose(row["box"], (0.2 * W, 0.1 * H, 0.6 * W, 0.5 * H))


@pytest.mark.parametrize(
    ("extra_context", "extra_features", "match"),
    [
        ({}, {"PREDICTED/region/label/string": ([[b"car"]], "byte")},
         r"PREDICTED/region/label/string without PREDICTED/region/bbox/\* \(labels of no region\)"),
        ({}, {"PREDICTED/region/bbox/ymin": ([[0.5]], "float"), "PREDICTED/region/bbox/xmax": ([[0.5]], "float")},
         r"PREDICTED/region/bbox/ymin, PREDICTED/region/bbox/xmax without PREDICTED/region/bbox/xmin, "
         r"PREDICTED/region/bbox/ymax"),
        ({"clip/label/index": ([2], "int")}, {}, r"clip/label/index without clip/label/string \(labels are imported"),
        ({"segment/label/index": ([2], "int")}, {}, r"segment/label/index without segment/label/string"),
        ({}, {"image/timestamp": ([0, 33333], "int"), "image/label/index": ([[2], []], "int")},
         r"image/label/index without image/label/string"),
    ],
)  # fmt: skip
def test_labels_the_import_cannot_read_are_refused_by_key(
    tmp_path: Path, clip: ClipTruth, extra_context: dict[str, Any], extra_features: dict[str, Any], match: str
) -> None:
    # labels with no box, or label indices with no names, cannot be read as MediaSequence writes them
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    path = write_record(tmp_path / "x.tfrecord", {**context, **extra_context}, {**features, **extra_features})
    with pytest.raises(FormatError, match=r"x\.tfrecord record 0: holds labels the import cannot read, so nothing is "
                       r"imported: .*" + match + r".*; remove those keys from the records to import the rest"):  # fmt: skip
        import_labels(ds, "mediasequence", path)
    assert ds.annotations() == []


def test_masks_without_boxes_are_refused(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, [])
    features = {"region/timestamp": ([0], "int"), "INSTANCE_SEGMENTATION/image/multi_encoded": ([[b"png"]], "byte")}
    path = write_record(tmp_path / "m.tfrecord", {"clip/media_id": (b"v", "byte")}, features)
    with pytest.raises(FormatError, match=r"INSTANCE_SEGMENTATION/image/multi_encoded without region/bbox/\*"):
        import_labels(ds, "mediasequence", path)


@pytest.mark.parametrize(
    ("key", "values", "match"),
    [
        ("segment/label/confidence", ([0.5, 0.25], "float"), "segment/label/confidence holds 2 values; "
         "segment/label/string holds 1"),
        ("segment/label/index", ([2, 2], "int"), "segment/label/index holds 2 values"),
        ("vidlabel/segment/origin", ([], "byte"), "vidlabel/segment/origin holds 0 values"),
        ("clip/label/confidence", ([0.5, 0.25], "float"), "clip/label/confidence holds 2 values; clip/label/string "
         "holds 1"),
        ("vidlabel/clip/label/origin", ([], "byte"), "vidlabel/clip/label/origin holds 0 values"),
    ],
)  # fmt: skip
def test_a_marker_list_of_another_length_is_refused(tmp_path: Path, clip: ClipTruth, key: str, values, match) -> None:
    # one confidence (index, origin) per segment / clip label: a longer list was read up to the labels' count and a
    # shorter origin list stopped on a bare IndexError
    ds = make_dataset(tmp_path / "ds", clip, [])
    context = {
        "clip/media_id": (b"v", "byte"),
        "clip/start/timestamp": (0, "int"),
        "clip/end/timestamp": (100000, "int"),
    }
    group = key.split("/")[1] if key.startswith("vidlabel/") else key.split("/")[0]
    if group == "segment":
        context.update({"segment/start/timestamp": ([0], "int"), "segment/end/timestamp": ([66666], "int"),
                        "segment/label/string": ([b"goal"], "byte")})  # fmt: skip
    else:
        context["clip/label/string"] = ([b"goal"], "byte")
    with pytest.raises(FormatError, match=r"l\.tfrecord record 0: " + match):
        import_labels(ds, "mediasequence", write_record(tmp_path / "l.tfrecord", {**context, key: values}, {}))
    assert ds.annotations() == []


def test_a_folder_of_tensorflow_shard_names_is_read_whole(tmp_path: Path, clip: ClipTruth) -> None:
    # TensorFlow and MediaPipe name shards NAME-00000-of-00010 (MediaPipe's datasets without an extension) or
    # *.tfrecords: only *.tfrecord files were read, so such shards next to one were left out unsaid, and a folder
    # of them alone was "no *.tfrecord file"
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    folder = tmp_path / "shards"
    folder.mkdir()
    for name, ts in [("a.tfrecord", 0), ("kinetics-00000-of-00002", 1), ("kinetics-00001-of-00002", 2),
                     ("b.tfrecords", 3), ("c.tfrecord-00000-of-00001", 4)]:  # fmt: skip
        write_record(folder / name, context, {**features, "region/timestamp": ([times_us(clip, ts), 0], "int")})
    (folder / "label_map.txt").write_text("car\n")
    import_labels(ds, "mediasequence", folder)
    assert sorted(r["start_frame"] for r in ds.annotations()) == [0, 1, 2, 3, 4]


def times_us(clip: ClipTruth, n: int) -> int:
    return int(clip.seconds(n) * 1_000_000)


def test_an_export_that_did_not_finish_is_refused(exported: tuple[Dataset, Path], tmp_path: Path) -> None:
    # a killed export leaves a .partial shard (or no _SUCCESS): its finished shards were imported as if whole
    ds, out = exported
    new = fresh_like(tmp_path / "new", ds)
    killed = tmp_path / "killed"
    shutil.copytree(out, killed)
    last = sorted(killed.glob("part-*.tfrecord"))[-1]
    last.rename(last.with_name(last.name + ".partial"))
    with pytest.raises(FormatError, match=rf"killed: is a MediaSequence export that did not finish \({last.name}\.partial "
                       r"half written\): its records are not all there; rerun the export to finish it, then import"):  # fmt: skip
        import_labels(new, "mediasequence", killed)
    last.with_name(last.name + ".partial").unlink()
    (killed / "_SUCCESS").unlink()
    with pytest.raises(FormatError, match=r"did not finish \(_plan\.json without _SUCCESS\)"):
        import_labels(new, "mediasequence", killed)
    assert new.annotations() == []


def test_generated_regions_are_model_rows(tmp_path: Path, clip: ClipTruth) -> None:
    # region/is_generated (1: generated, 0: annotated by hand) was not read: generated boxes without a confidence
    # came in as human annotations
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, _ = good_record()
    two = {"region/timestamp": ([0], "int"), "region/bbox/ymin": ([[0.1, 0.2]], "float"),
           "region/bbox/xmin": ([[0.1, 0.2]], "float"), "region/bbox/ymax": ([[0.5, 0.6]], "float"),
           "region/bbox/xmax": ([[0.5, 0.6]], "float"), "region/label/string": ([[b"car", b"person"]], "byte"),
           "region/is_generated": ([[1, 0]], "int")}  # fmt: skip
    import_labels(ds, "mediasequence", write_record(tmp_path / "g.tfrecord", context, two))
    got = sorted((r["label"], r["origin"], r["confidence"]) for r in ds.annotations())
    assert got == [("car", "model", None), ("person", "human", None)]
    bad = {**two, "region/is_generated": ([[1]], "int")}
    with pytest.raises(FormatError, match=r"frame 0: region/is_generated holds 1 values; the frame has 2 regions"):
        import_labels(make_dataset(tmp_path / "b", clip, []), "mediasequence",
                      write_record(tmp_path / "b.tfrecord", context, bad))  # fmt: skip


def test_a_region_in_records_of_overlapping_clips_is_imported_once(tmp_path: Path, clip: ClipTruth) -> None:
    # MediaPipe pipelines cut a video into clips that overlap (sliding windows); a box on a frame two records share
    # was imported once per record, so every such box came in twice
    ds = make_dataset(tmp_path / "ds", clip, [])
    context = {"clip/media_id": (b"v", "byte")}

    def window(frames: list[int], boxes: list[list[float]]) -> dict[str, Any]:
        return {"region/timestamp": ([times_us(clip, f) for f in frames], "int"),
                **{f"region/bbox/{c}": ([[b[i] for b in bs] for bs in boxes], "float")
                   for i, c in enumerate(("ymin", "xmin", "ymax", "xmax"))},
                "region/label/string": ([[b"car"] * len(bs) for bs in boxes], "byte"),
                "region/track/string": ([[b"t1"] * len(bs) for bs in boxes], "byte")}  # fmt: skip

    a, b = [0.1, 0.1, 0.5, 0.5], [0.2, 0.2, 0.6, 0.6]
    folder = tmp_path / "clips"
    folder.mkdir()
    write_record(folder / "c-00000-of-00002", context, window([0, 1], [[a, a], [b]]))  # twice on frame 0: both kept
    write_record(folder / "c-00001-of-00002", context, window([1, 2], [[b], [a]]))  # frame 1 is in both records
    with pytest.warns(
        VidlabelWarning,
        match=r"c-00000-of-00002 record 0 frame 0 region 0 and c-00000-of-00002 record 0 frame 0 region 1 of .*clips "
        r"are the same annotation",
    ):
        import_labels(ds, "mediasequence", folder)  # the box held twice by one record is kept, and said
    rows = ds.annotations()
    assert sorted(r["start_frame"] for r in rows) == [0, 0, 1, 2]
    assert len({r["track_id"] for r in rows}) == 1


def corrupt(path: Path, offset: int) -> Path:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("length", [2**62, 2**64 - 1, 1 << 20])
def test_a_record_length_past_the_end_of_the_file_is_a_cut_file(tmp_path: Path, clip: ClipTruth, length) -> None:
    """A header whose length CRC matches but whose length runs past the file is refused as cut short,
    before any read of that many bytes (2**62 raised MemoryError, 2**64 - 1 OverflowError)."""
    ds = make_dataset(tmp_path / "ds", clip, [])
    path = tmp_path / "long.tfrecord"
    head = struct.pack("<Q", length)
    path.write_bytes(head + TFRecordWriter.masked_crc(head) + b"\x00" * 10)
    with pytest.raises(FormatError, match=rf"long\.tfrecord record 0: cut short: the header gives {length} record "
                       r"bytes and a 4-byte CRC, 10 bytes are left \(10 of \d+ record bytes, 0 of 4 CRC bytes\)"):  # fmt: skip
        import_labels(ds, "mediasequence", path)
    assert ds.annotations() == []


def test_a_record_without_its_crc_says_the_crc_is_missing(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, [])
    good = write_record(tmp_path / "good.tfrecord", *good_record())
    cut = tmp_path / "nocrc.tfrecord"
    cut.write_bytes(good.read_bytes()[:-4])
    length = good.stat().st_size - 16
    with pytest.raises(FormatError, match=rf"record 0: cut short: .*\({length} of {length} record bytes, 0 of 4 CRC"):
        import_labels(ds, "mediasequence", cut)


def test_bad_records_are_format_errors(tmp_path: Path, clip: ClipTruth) -> None:
    ds = make_dataset(tmp_path / "ds", clip, [])
    context, features = good_record()
    good = write_record(tmp_path / "good.tfrecord", context, features)
    size = good.stat().st_size

    def refused(path: Path, match: str) -> None:
        with pytest.raises(FormatError, match=match):
            import_labels(ds, "mediasequence", path)
        assert ds.annotations() == []

    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(good.read_bytes()[: size - 10])
    refused(cut, r"cut\.tfrecord record 0: cut short")
    shutil.copy(good, tmp_path / "flip.tfrecord")
    refused(corrupt(tmp_path / "flip.tfrecord", 20), "record 0: data CRC does not match")
    (tmp_path / "text.tfrecord").write_text("frame,id,x,y\n1,2,3,4\n")
    refused(tmp_path / "text.tfrecord", "length CRC does not match: not a TFRecord file")
    junk = tmp_path / "junk.tfrecord"
    with open(junk, "wb") as fh:
        payload = b"\xff\xff\xff\xff"
        head = struct.pack("<Q", len(payload))
        fh.write(head + TFRecordWriter.masked_crc(head) + payload + TFRecordWriter.masked_crc(payload))
    refused(junk, "record 0: not a tf.train.SequenceExample")
    wrong = {**features, "region/bbox/ymin": ([[1], []], "int")}
    refused(write_record(tmp_path / "t.tfrecord", context, wrong), "region/bbox/ymin holds a int64_list; .* float_list")
    unknown = {"clip/media_id": (b"cam-7", "byte"), "clip/data_path": (b"/nowhere.mp4", "byte")}
    refused(write_record(tmp_path / "u.tfrecord", unknown, features), "names no registered video; known ids: v")
    late = {**features, "region/timestamp": ([0, 50_000_000], "int")}
    refused(write_record(tmp_path / "l.tfrecord", context, late), "timestamp 50000000 us .* is no frame of video 'v'")
    for far in (2**63 - 1, -(2**63), 2**62):  # wrapped around int64 and landed on the first or last frame
        huge = {**features, "region/timestamp": ([0, far], "int")}
        refused(write_record(tmp_path / "h.tfrecord", context, huge), f"timestamp {far} us .* is no frame of video 'v'")
    short = {**features, "region/label/string": ([[], []], "byte")}
    refused(write_record(tmp_path / "s.tfrecord", context, short), "frame 0: region/label/string holds 0 values")
    unlabeled = {k: v for k, v in features.items() if k != "region/label/string"}
    refused(write_record(tmp_path / "n.tfrecord", context, unlabeled), "labels are imported by name")
    seg = {**context, "segment/start/timestamp": ([10], "int"), "segment/end/timestamp": ([20], "int"),
           "segment/label/string": ([b"goal"], "byte")}  # fmt: skip
    refused(write_record(tmp_path / "g.tfrecord", seg, features), r"segment 0 \(10\.\.20 us\) holds no frame")
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty", r"holds no TFRecord file \(\*\.tfrecord, \*\.tfrecords, NAME-00000-of-00010\)")
    refused(tmp_path / "absent.tfrecord", "file not found")


def test_a_timestamp_two_frames_share_is_refused(tmp_path: Path, clip: ClipTruth) -> None:
    # What vidlabel recorded for a raw H.264 stream before it timed such frames by the frame rate: positions in
    # the demuxer's 1/1200000 s time base, so frames 0 and 1 are both at 0 us, 6 and 7 at 5 us (n * 10**6 // 1200000)
    meta = probe(clip.path, video_id="v")
    index = meta.frame_index
    assert index is not None
    old = FrameIndex({"num": 1, "den": 1_200_000}, np.arange(index.frame_count), index.keyframes, method="decode",
                     content_hash=index.content_hash)  # fmt: skip
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(LABELS)
    ds.add_video(dataclasses.replace(meta, frame_index=old))
    context, features = good_record()
    for ts, first in ((0, 0), (5, 6)):
        record = write_record(
            tmp_path / f"t{ts}.tfrecord", context, {**features, "region/timestamp": ([ts, 39], "int")}
        )
        with pytest.raises(FormatError, match=rf"timestamp {ts} us \(entry 0\) is the time of frames {first} and "
                           rf"{first + 1} of video 'v'.* --replace"):  # fmt: skip
            import_labels(ds, "mediasequence", record)
        assert ds.annotations() == []


# -- command line ----------------------------------------------------------------------------------------------


def test_cli_export_and_import(tmp_path: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str]) -> None:
    ds = make_dataset(tmp_path / "ds", clip, sample_rows(clip))
    out = tmp_path / "out"
    args = ["export", str(tmp_path / "ds"), str(out), "--format", "mediasequence", "--clip-frames", "4"]
    assert main([*args, "--codec", "jpeg:70", "--no-progress"]) == 0
    assert "4 SequenceExamples in 1 TFRecord shard\n" in capsys.readouterr().out
    records = read_all(out)
    assert [len(fl(se, "image/timestamp")) for se in records] == [4, 4, 4, 4]  # 16 stored frames
    assert all(ctx(se, "image/format") == [b"JPEG"] for se in records)
    new = fresh_like(tmp_path / "new", ds)
    assert main(["import", str(tmp_path / "new"), "mediasequence", str(out)]) == 0
    assert "video 'v': 19 box, 2 mask, 3 marker" in capsys.readouterr().out
    assert_rows_equal(new.annotations(), ds.annotations())


def test_store_readers_info_and_verify_say_what_a_mediasequence_export_is(
    exported: tuple[Dataset, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # a user who runs the walkthrough's `vidlabel verify` / `info` on it was told only "no vidlabel frame store"
    from vidlabel.store import verify_store

    _, out = exported
    said = r"holds a MediaSequence export \(TFRecord shards of tf.train.SequenceExample\), which frame store readers, info and verify do not read: read it with tf.data"
    with pytest.raises(StoreError, match=rf"no vidlabel frame store at .*out'; .*out' {said}"):
        open_store(out)
    with pytest.raises(StoreError, match=rf"no vidlabel frame store at .*out'; .*out' {said}"):
        verify_store(out)
    assert main(["verify", str(out)]) == 1
    assert main(["info", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("`vidlabel import DATASET mediasequence FOLDER`") == 2
    with pytest.raises(StoreError, match=r"no vidlabel frame store at .*nowhere'$"):
        open_store(out.parent / "nowhere")


# -- TensorFlow ------------------------------------------------------------------------------------------------


_TF_SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
files = sys.argv[1:]
S, I, F = tf.string, tf.int64, tf.float32
one, many, seq = tf.io.FixedLenFeature, tf.io.VarLenFeature, tf.io.FixedLenSequenceFeature
# media_sequence.py's parsers: a single context value FixedLenFeature((), type), a context list VarLenFeature,
# one value per frame FixedLenSequenceFeature((), type), a list per frame VarLenFeature
context_spec = {
    "example/id": one((), S), "example/dataset_name": one((), S), "clip/data_path": one((), S),
    "clip/media_id": one((), S), "clip/start/timestamp": one((), I), "clip/end/timestamp": one((), I),
    "clip/label/index": many(I), "clip/label/string": many(S), "clip/label/confidence": many(F),
    "segment/start/timestamp": many(I), "segment/end/timestamp": many(I), "segment/start/index": many(I),
    "segment/end/index": many(I), "segment/label/index": many(I), "segment/label/string": many(S),
    "segment/label/confidence": many(F), "image/format": one((), S), "image/channels": one((), I),
    "image/height": one((), I), "image/width": one((), I), "image/frame_rate": one((), F),
}
sequence_spec = {
    "image/encoded": seq((), S), "image/timestamp": seq((), I), "region/timestamp": seq((), I),
    "region/is_annotated": seq((), I), "region/bbox/ymin": many(F), "region/bbox/xmin": many(F),
    "region/bbox/ymax": many(F), "region/bbox/xmax": many(F), "region/label/index": many(I),
    "region/label/string": many(S), "region/label/confidence": many(F), "region/track/string": many(S),
    "INSTANCE_SEGMENTATION/image/multi_encoded": many(S),
}

def number(image):  # tests/media.py's read_frame_number
    gray = image.astype(np.float32).mean(axis=2)
    return sum(1 << k for k in range(16)
               if gray[(k // 8) * 8 + 2 : (k // 8) * 8 + 6, (k % 8) * 8 + 2 : (k % 8) * 8 + 6].mean() > 128)

def ragged(sparse, n, decode=True):
    rows = [[] for _ in range(n)]
    for (j, _), v in zip(sparse.indices.numpy().tolist(), sparse.values.numpy().tolist()):
        rows[j].append(v.decode() if isinstance(v, bytes) and decode else v)
    return rows

out = []
for raw in tf.data.TFRecordDataset(files):
    c, s = tf.io.parse_single_sequence_example(raw, context_features=context_spec, sequence_features=sequence_spec)
    n = int(s["image/timestamp"].shape[0])
    out.append({
        "media_id": c["clip/media_id"].numpy().decode(),
        "clip": [int(c["clip/start/timestamp"].numpy()), int(c["clip/end/timestamp"].numpy())],
        "size": [int(c["image/width"].numpy()), int(c["image/height"].numpy()), int(c["image/channels"].numpy())],
        "format": c["image/format"].numpy().decode(),
        "timestamps": s["image/timestamp"].numpy().tolist(), "region_ts": s["region/timestamp"].numpy().tolist(),
        "numbers": [number(tf.io.decode_image(e, channels=3).numpy()) for e in s["image/encoded"]],
        "annotated": s["region/is_annotated"].numpy().tolist(),
        "regions": [list(zip(*rows)) for rows in zip(*(ragged(s[k], n) for k in (
            "region/label/string", "region/bbox/ymin", "region/bbox/xmin", "region/bbox/ymax", "region/bbox/xmax",
            "region/label/index", "region/track/string")))],
        "masks": [[tf.io.decode_png(p).numpy()[..., 0].sum().item() for p in row]
                  for row in ragged(s["INSTANCE_SEGMENTATION/image/multi_encoded"], n, decode=False)],
        "segments": c["segment/label/string"].values.numpy().tolist() and [
            c["segment/start/index"].values.numpy().tolist(), c["segment/end/index"].values.numpy().tolist()],
    })
print(json.dumps(out, default=lambda b: b.decode()))
"""


def test_tensorflow_parses_the_records(exported: tuple[Dataset, Path], clip: ClipTruth, tmp_path: Path) -> None:
    # In a fresh interpreter: this module imports the tfrecord package's own protos (the independent reader),
    # which cannot share a process with TensorFlow's (both define tensorflow.BytesList in protobuf's pool).
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not a vidlabel dependency; this check runs where it is installed")
    ds, out = exported
    files = sorted(str(p) for p in out.glob("part-*.tfrecord"))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", _TF_SCRIPT, *files], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(proc.stdout.strip().splitlines()[-1])
    times = pts_us(clip.path)
    stored = list(range(1, clip.frame_count, 3))  # the frames of sample_rows' boxes and masks
    assert len(records) == 4 and {r["media_id"] for r in records} == {"v"}
    assert [t for r in records for t in r["timestamps"]] == [times[f] for f in stored]
    for r in records:  # the pixels TensorFlow decodes are the frames the timestamps name
        assert r["numbers"] == [times.index(t) for t in r["timestamps"]] and r["region_ts"] == r["timestamps"]
        assert r["clip"] == [r["timestamps"][0], r["timestamps"][-1]]
        assert r["size"] == [W, H, 3] and r["format"] == "PNG" and set(r["annotated"]) == {1}
    rows = [a for a in ds.annotations() if a["kind"] != "marker"]
    for r in records:
        for t, regions, masks in zip(r["timestamps"], r["regions"], r["masks"]):
            frame = times.index(t)
            want = sorted(
                (a["label"], a["box"][1] / H, a["box"][0] / W, a["box"][3] / H, a["box"][2] / W, LABELS.index(a["label"]))
                for a in rows if a["start_frame"] == frame
            )  # fmt: skip
            got = sorted(tuple(g[:6]) for g in regions)
            assert [g[0] for g in got] == [w[0] for w in want] and [g[5] for g in got] == [w[5] for w in want]
            assert np.allclose([g[1:5] for g in got], [w[1:5] for w in want], atol=1e-6), (frame, got, want)
            want_masks = [int(a["mask"] is not None and decode_rle(a["mask"]).sum()) for a in rows
                          if a["start_frame"] == frame and a["kind"] == "mask"]  # fmt: skip
            assert sorted(masks) == sorted(want_masks)
    # first frame at or after the start, last at or before the end (positions in the record's frames 1, 4, 7, 10, 13):
    # goal 5..11 is frames 7..10, person 2..2 lies between frames 1 and 4 (end before start)
    assert [r["segments"] for r in records] == [[[2, 1], [3, 0]], [], [], []]


_TF_LIKE_POOL = r"""
import sys
from google.protobuf import descriptor_pb2, descriptor_pool
# What importing TensorFlow does: tensorflow.BytesList ... in the default pool, under TensorFlow's file name.
fdp = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/feature.proto", package="tensorflow",
                                         syntax="proto3")
msg = fdp.message_type.add(name="BytesList")
msg.field.add(name="value", number=1, label=3, type=12)
descriptor_pool.Default().Add(fdp)
from vidlabel import Dataset
from vidlabel.formats import import_labels
report = import_labels(Dataset.open(sys.argv[1]), "mediasequence", sys.argv[2])
print(report)
"""


def test_records_are_read_in_a_process_that_has_tensorflow_protos(
    exported: tuple[Dataset, Path], tmp_path: Path
) -> None:
    """A TensorFlow user's process already holds tensorflow.BytesList: reading (and writing) records must not
    register those names again (the tfrecord package's example_pb2 does, and fails with 'duplicate symbol')."""
    ds, out = exported
    fresh = fresh_like(tmp_path / "new", ds)
    proc = subprocess.run([sys.executable, "-c", _TF_LIKE_POOL, str(fresh.path), str(out)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(fresh.annotations()) == len(ds.annotations())


os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
warnings.filterwarnings("ignore", "Protobuf gencode version", UserWarning)


def test_without_protobuf_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from vidlabel.export import _tfrecord
    from vidlabel.formats._mediasequence import read_records

    _tfrecord.messages.cache_clear()
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    for name in [m for m in sys.modules if m == "google.protobuf" or m.startswith("google.protobuf.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "google.protobuf", None)  # what an environment without it gives
    try:
        with pytest.raises(OptionError, match=r"need the protobuf package: pip install 'vidlabel\[tf\]'"):
            _tfrecord.messages()
        # the import reads records through the same messages: the same one-line error, not an ImportError
        (tmp_path / "x.tfrecord").write_bytes(b"garbage")
        with pytest.raises(OptionError, match=r"need the protobuf package: pip install 'vidlabel\[tf\]'"):
            list(read_records(tmp_path / "x.tfrecord"))
    finally:
        _tfrecord.messages.cache_clear()


def test_markers_of_a_video_without_a_stored_frame_are_reported_not_written(tmp_path: Path, clip: ClipTruth) -> None:
    # video 'w' holds a marker and no box or mask: no frame of it is stored, so no record holds its marker
    ds = make_dataset(tmp_path / "ds", clip, [{"kind": "box", "label": "person", "start_frame": 3, "box": clip.box(3)}])
    ds.add_video(probe(clip.path, video_id="w"))
    ds.add_annotations([{"kind": "marker", "label": "goal", "start_frame": 2, "end_frame": 5}], "w")
    ds.build()
    labels = export_labels(ds, "mediasequence", tmp_path / "labels")
    assert labels.counts["records"] == 1
    assert labels.not_written == {
        "marker of a video with no box or mask (MediaSequence records hold a video's annotated frames)": 1
    }
    with pytest.warns(VidlabelWarning, match=r"1 marker of video 'w': no frame of it is stored .* --frames all"):
        report = export(ds, tmp_path / "out", format="mediasequence", progress=False)
    assert report.markers_not_written == {"w": 1} and report.markers_without_stored_frames == 0
    assert "NOT WRITTEN: 1 marker of video 'w'" in report.summary()
    assert [ctx(se, "clip/media_id") for se in read_all(tmp_path / "out")] == [[b"v"]]  # indeed no record of 'w'


def test_labels_only_export_counts_boxes_on_untrusted_frames(tmp_path: Path, clip_corrupt: ClipTruth) -> None:
    # frames 15..23 of the clip have no trustworthy picture: never stored, so no record holds their boxes
    bad = clip_corrupt.extra["untrusted"]
    rows = [
        {"kind": "box", "label": "person", "start_frame": n, "box": clip_corrupt.box(n)} for n in (3, bad[0], bad[-1])
    ]
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(LABELS)
    with pytest.warns(VidlabelWarning, match="no trustworthy picture"):
        ds.add_video(probe(clip_corrupt.path, video_id="v"))
    ds.add_annotations(rows, "v")
    ds.build()
    labels = export_labels(ds, "mediasequence", tmp_path / "labels")
    assert labels.counts["frames"] == 1
    assert labels.not_written == {"box on a frame without a trustworthy picture (no record holds it)": 2}


def test_regions_and_markers_a_second_record_repeats_are_imported_once_and_said(
    tmp_path: Path, clip: ClipTruth
) -> None:
    # a record given twice (two shards of one clip, a file concatenated to itself) imported its rows once, as
    # overlapping clips are, but the report said nothing of the rows left out
    rows = [
        {"kind": "box", "label": "car", "start_frame": 3, "box": [1, 2, 20, 20], "track_id": 0},
        {"kind": "marker", "label": "car", "start_frame": 5, "end_frame": 9},
    ]
    ds = make_dataset(tmp_path / "ds", clip, rows)
    export_labels(ds, "mediasequence", tmp_path / "ms")
    (shard,) = (tmp_path / "ms").glob("*.tfrecord")
    doubled = tmp_path / "doubled.tfrecord"
    doubled.write_bytes(shard.read_bytes() * 2)
    ds2 = make_dataset(tmp_path / "ds2", clip, [])
    rep = import_labels(ds2, "mediasequence", doubled)
    assert len(ds2.annotations()) == 2
    assert any(
        re.fullmatch(
            r"video 'v': 1 marker and 1 region that another record of the video holds too \(a marker spanning clips, "
            r"clips that overlap, or a record given twice\) imported once",
            note,
        )
        for note in rep.notes
    ), rep.notes
