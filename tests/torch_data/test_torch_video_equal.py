"""The video datasets' fast paths give exactly the samples FrameSamples.sample gives, bit for bit.

VideoStream, VideoFrames and PlannedStream build each sample from per-region arrays computed once
(issue 15: per-sample cost); whatever the options, every sample must equal
``to_torch_sample(samples.sample(video, frame, reader.read(frame)))``: same keys, dtypes, shapes and bytes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import decode_all, encode_clip, object_box, read_frame_number
from vidlabel import Dataset, FrameSamples, probe
from vidlabel.geometry import encode_rle
from vidlabel.torch_data import PlannedStream, VideoFrames, VideoStream, collate_frames
from vidlabel.torch_data._common import to_torch_sample
from vidlabel.video._readplan import STREAM_SHUFFLE_BUFFER, STREAM_VIDEO_ORDER, epoch_rng

WIDTH, HEIGHT = 64, 48
CLIPS = {"a": 26, "b": 18, "c": 12}  # frames per video


def _mask(f: int) -> np.ndarray:
    m = np.zeros((HEIGHT, WIDTH), np.uint8)
    m[20 + f % 7 : 30 + f % 7, 5 + f : 17 + f] = 1
    return m


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """Three clips; on each frame 0 to 3 boxes (the generator's box and two more), a mask on every
    third frame, a marker, and a cropped "top" view with its own boxes."""
    root = tmp_path_factory.mktemp("video_equal")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object", "other", "mark"])
    ds.add_view("top", crop=(8, 0, 48, 40), output_size=(32, 24))
    for video_id, n in CLIPS.items():
        truth = encode_clip(root / f"{video_id}.mp4", n_frames=n, width=WIDTH, height=HEIGHT, gop=5)
        ds.add_video(probe(truth.path, video_id=video_id))
        rows: list[dict[str, Any]] = []
        for f in range(n):
            k = (f * 7 + len(video_id)) % 4  # 0..3 regions on this frame
            if k >= 1:
                rows.append({"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, WIDTH, HEIGHT),
                             "track_id": 1})  # fmt: skip
            for j in range(1, k):
                rows.append({"kind": "box", "label": "other", "start_frame": f,
                             "box": (1.5 * j, 2.25 * j, 20.0 + j, 30.5 + f % 5), "confidence": 0.5 + j / 10,
                             "origin": "model"})  # fmt: skip
            if f % 3 == 0:
                rows.append({"kind": "mask", "label": "other", "start_frame": f, "mask": encode_rle(_mask(f)),
                             "track_id": 7})  # fmt: skip
            if f % 4 == 1:
                for j in range(2):
                    rows.append({"kind": "box", "label": "object", "start_frame": f, "view_id": "top",
                                 "box": (9.0 + j, 3.0, 41.0, 33.0 - 3.5 * j)})  # fmt: skip
        rows.append({"kind": "marker", "label": "mark", "start_frame": 3, "end_frame": n // 2})
        ds.add_annotations(rows, video_id, clip=True)
    ds.build()
    return ds


OPTIONS = [
    {},
    {"frames": "all", "box_format": "xywh", "label_offset": 1},
    {"frames": "all", "box_format": "cxcywh", "normalized": True, "with_masks": True},
    {"kinds": ("box",), "normalized": True, "stride": 2},
    {"view_id": "top", "frames": "all", "with_masks": True, "box_format": "xywh"},
    {"kinds": ("box", "mask", "marker"), "labels": ["other", "object"], "with_masks": True, "videos": ["a", "c"]},
]


def reference(samples: FrameSamples, video_id: str, frame: int) -> dict[str, Any]:
    """The sample as FrameSamples.sample builds it from the reader's frame, as tensors."""
    with samples.reader(video_id) as reader:
        return to_torch_sample(samples.sample(video_id, frame, reader.read(frame)))


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for key, w in want.items():
        g = got[key]
        if isinstance(w, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.dtype == w.dtype and g.shape == w.shape, key
            assert g.contiguous().numpy().tobytes() == w.contiguous().numpy().tobytes(), key
        else:
            assert type(g) is type(w) and g == w, key


@pytest.mark.parametrize("options", OPTIONS, ids=[str(i) for i in range(len(OPTIONS))])
def test_video_datasets_equal_sample_bit_for_bit(dataset: Dataset, options: dict[str, Any]) -> None:
    samples = FrameSamples(dataset, **options)
    assert len(samples) > 0
    refs = {pair: reference(samples, *pair) for pair in samples.index}
    assert any(r["boxes"].shape[0] >= 2 for r in refs.values())  # several regions on some frames
    for ref in refs.values():
        if samples.view is None:
            assert read_frame_number(ref["image"].permute(1, 2, 0).numpy()) == ref["frame_index"]

    stream = VideoStream(samples, shuffle_videos=True, shuffle_buffer=5, seed=3)
    seen = []
    for s in stream:
        assert_same(s, refs[(s["video_id"], s["frame_index"])])
        seen.append((s["video_id"], s["frame_index"]))
    assert sorted(seen) == sorted(refs)

    frames = VideoFrames(samples)
    rng = np.random.default_rng(len(samples))
    positions = rng.integers(0, len(samples), size=min(40, 3 * len(samples))).tolist()
    for got, p in zip(frames.__getitems__(positions), positions):
        assert_same(got, refs[samples.index[p]])
    assert_same(frames[-1], refs[samples.index[len(samples) - 1]])

    draws = rng.integers(0, len(samples), size=2 * len(samples))
    plan = samples.plan_reads(draws, seed=1)
    planned = list(PlannedStream(samples, plan, shuffle_buffer=4))
    assert Counter((s["video_id"], s["frame_index"]) for s in planned) == Counter(samples.index[int(p)] for p in draws)
    for s in planned:
        assert_same(s, refs[(s["video_id"], s["frame_index"])])
    # a repeated frame yields own arrays: changing one sample leaves its repeats alone
    twice = [s for s in planned if (s["video_id"], s["frame_index"]) == samples.index[int(draws[0])]]
    twice[0]["image"][:] = 0
    twice[0]["boxes"][:] = -1
    for s in twice[1:]:
        assert_same(s, refs[(s["video_id"], s["frame_index"])])


def test_frames_outside_the_index_and_full_frames_with_a_view(dataset: Dataset) -> None:
    samples = FrameSamples(dataset, view_id="top")
    # a frame nobody annotated in the view: empty targets, as sample() gives them
    plan = samples.plan_reads([("a", 2), ("a", 2)], seed=0)
    out = list(PlannedStream(samples, plan))
    assert len(out) == 2 and out[0]["boxes"].shape == (0, 4)
    for s in out:
        assert_same(s, reference(samples, "a", 2))
    # a full displayed frame given where the view's image is expected is cropped and resized as sample() does
    full = FrameSamples(dataset, frames="all")
    with full.reader("b") as reader:
        image = reader.read(5)
    code = samples._codes["b"]
    want = samples.sample("b", 5, image)
    got = samples._sample_of(code, 5, 0, 0, 0, image)
    assert got["image"].shape == (24, 32, 3) and np.array_equal(got["image"], want["image"])


def test_loader_batches_equal_the_samples(dataset: Dataset) -> None:
    samples = FrameSamples(dataset, frames="all", with_masks=True)
    loader = DataLoader(VideoFrames(samples), batch_size=7, shuffle=True, collate_fn=collate_frames,
                        generator=torch.Generator().manual_seed(0))  # fmt: skip
    n = 0
    for batch in loader:
        for i, (video_id, frame) in enumerate(zip(batch["video_id"], batch["frame_index"].tolist())):
            want = reference(samples, video_id, frame)
            assert torch.equal(batch["image"][i], want["image"])
            for key in ("boxes", "labels", "track_ids", "annotation_ids", "masks"):
                assert torch.equal(batch[key][i], want[key]), key
            assert torch.equal(batch["frame_labels"][i], want["frame_labels"])
            n += 1
    assert n == len(samples)


# ---- every VideoStream sample against truth derived from the generator, not from vidlabel ----

TRUTH_CLIPS = {"p": 30, "q": 21}  # frames per video, 64x48, B-frames
SAMPLE_KEYS = ["image", "boxes", "labels", "track_ids", "annotation_ids", "frame_labels", "video_id", "view_id",
               "frame_index"]  # fmt: skip


@pytest.fixture(scope="module")
def truth_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, dict[tuple[str, int], dict[str, Any]]]:
    """Two clips with 1 to 3 boxes on every frame (the generator's moving box with track 1, then fixed boxes
    without a track) and a marker on p; and each frame's truth: pixels by plain PyAV decoding, targets as added."""
    root = tmp_path_factory.mktemp("video_truth")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object", "other", "mark"])
    truth: dict[tuple[str, int], dict[str, Any]] = {}
    for video_id, n in TRUTH_CLIPS.items():
        clip = encode_clip(root / f"{video_id}.mp4", n_frames=n, width=WIDTH, height=HEIGHT, gop=7, bframes=2)
        ds.add_video(probe(clip.path, video_id=video_id))
        rows: list[dict[str, Any]] = []
        regions: list[tuple[tuple[str, int], tuple[float, ...], int, int]] = []  # (key, box, label, track) per row
        for f in range(n):
            box = object_box(f, WIDTH, HEIGHT)
            rows.append({"kind": "box", "label": "object", "start_frame": f, "box": box, "track_id": 1})
            regions.append(((video_id, f), box, 0, 1))
            for j in range(f % 3):
                extra = (1.0 + j, 2.5 + j, 20.0 + j + f % 4, 30.0)
                rows.append({"kind": "box", "label": "other", "start_frame": f, "box": extra})
                regions.append(((video_id, f), extra, 1, -1))
        marked = range(3, 10) if video_id == "p" else range(0)
        if video_id == "p":
            rows.append({"kind": "marker", "label": "mark", "start_frame": 3, "end_frame": 9})
        ids = ds.add_annotations(rows, video_id)
        pictures = decode_all(clip.path)
        assert len(pictures) == n
        for f in range(n):
            mine = [(r, a) for r, a in zip(regions, ids) if r[0] == (video_id, f)]
            truth[(video_id, f)] = {
                "image": pictures[f],
                "boxes": np.array([r[1] for r, _ in mine], np.float32).reshape(-1, 4),
                "labels": np.array([r[2] for r, _ in mine], np.int64),
                "track_ids": np.array([r[3] for r, _ in mine], np.int64),
                "annotation_ids": np.array([a for _, a in mine], np.int64),
                "frame_labels": np.array([0, 0, 1 if f in marked else 0], np.float32),
            }
    ds.build()
    return ds, truth


def _buffer_order(items: list[Any], size: int, rng: np.random.Generator) -> list[Any]:
    """The shuffle buffer as VideoStream documents it, written out here: each incoming item replaces a
    uniformly drawn item of the full buffer, which comes out; the rest in random order at the end."""
    if size <= 1:
        return list(items)
    out: list[Any] = []
    buf: list[Any] = []
    for item in items:
        if len(buf) < size:
            buf.append(item)
            continue
        j = int(rng.integers(size))
        out.append(buf[j])
        buf[j] = item
    return out + [buf[int(j)] for j in rng.permutation(len(buf))]


@pytest.mark.parametrize(("shuffle_videos", "shuffle_buffer", "seed"), [(False, 0, 0), (True, 5, 3), (True, 2, 11)])
def test_video_stream_samples_equal_generator_truth(
    truth_dataset: tuple[Dataset, dict[tuple[str, int], dict[str, Any]]],
    shuffle_videos: bool,
    shuffle_buffer: int,
    seed: int,
) -> None:
    """Every sample of every epoch, in order: keys, dtypes, shapes and bytes as derived from the generator."""
    ds, truth = truth_dataset
    samples = FrameSamples(ds, frames="all")
    assert samples.class_names == ["object", "other", "mark"]
    stream = VideoStream(samples, shuffle_videos=shuffle_videos, shuffle_buffer=shuffle_buffer, seed=seed)
    for epoch in (0, 1):
        stream.set_epoch(epoch)
        videos = sorted(TRUTH_CLIPS)
        if shuffle_videos:
            videos = [videos[i] for i in epoch_rng(seed, epoch, STREAM_VIDEO_ORDER).permutation(len(videos))]
        keys = [(v, f) for v in videos for f in range(TRUTH_CLIPS[v])]
        order = _buffer_order(keys, shuffle_buffer, epoch_rng(seed, epoch, STREAM_SHUFFLE_BUFFER, 0))
        got = list(stream)
        assert [(s["video_id"], s["frame_index"]) for s in got] == order
        for s in got:
            key = (s["video_id"], s["frame_index"])
            want = truth[key]
            assert list(s) == SAMPLE_KEYS
            assert type(s["frame_index"]) is int and s["view_id"] is None
            image = s["image"]
            assert image.dtype == torch.uint8 and image.shape == (3, HEIGHT, WIDTH)
            assert read_frame_number(image.permute(1, 2, 0).numpy()) == key[1]
            assert np.array_equal(image.permute(1, 2, 0).numpy(), want["image"]), key
            for name in ("boxes", "labels", "track_ids", "annotation_ids", "frame_labels"):
                t = s[name]
                assert isinstance(t, torch.Tensor) and t.dtype == torch.from_numpy(want[name]).dtype, (key, name)
                assert t.shape == want[name].shape and t.numpy().tobytes() == want[name].tobytes(), (key, name)
