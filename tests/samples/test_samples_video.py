"""FrameSamples over a real dataset of generated clips: pixels, boxes from the generator, iter_plan, roots."""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.media import encode_clip, object_box, read_frame_number
from vidlabel import Dataset, FrameSamples, probe
from vidlabel.errors import VideoNotFoundError

# video id -> (frames, keyframe interval); 64 x 48 pixels each
CLIPS = {"v0": (30, 10), "v1": (24, 8), "v2": (36, 12), "v3": (20, 5), "v4": (28, 7)}
WIDTH, HEIGHT = 64, 48
TOP = (0, 0, 64, 40)  # the "top" view keeps the frame-number blocks in place


@dataclass(frozen=True)
class VideoDataset:
    path: Path
    release_id: str
    media: Path


def build_video_dataset(root: Path) -> VideoDataset:
    """A dataset of five small clips; a box on every frame (the generator's moving box), a marker on 5..9,
    and in v0 a "top" view with its own boxes on every third frame."""
    media = root / "media"
    media.mkdir()
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object", "event"])
    ds.add_view("top", crop=TOP)
    for video_id, (n, gop) in CLIPS.items():
        truth = encode_clip(media / f"{video_id}.mp4", n_frames=n, width=WIDTH, height=HEIGHT, gop=gop)
        ds.add_video(probe(truth.path, video_id=video_id))
        rows = [
            {"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, WIDTH, HEIGHT), "track_id": 1}
            for f in range(n)
        ]
        rows.append({"kind": "marker", "label": "event", "start_frame": 5, "end_frame": 9})
        if video_id == "v0":
            rows += [
                {"kind": "box", "label": "object", "start_frame": f, "box": object_box(f, WIDTH, HEIGHT),
                 "view_id": "top", "track_id": 2}
                for f in range(0, n, 3)
            ]  # fmt: skip
        ds.add_annotations(rows, video_id, clip=True)
    release, _ = ds.build()
    assert release.release_id is not None
    return VideoDataset(root / "ds", release.release_id, media)


@pytest.fixture(scope="module")
def vds(tmp_path_factory: pytest.TempPathFactory) -> VideoDataset:
    return build_video_dataset(tmp_path_factory.mktemp("samples_video"))


def check_sample(s: dict, *, view: tuple[int, int, int, int] | None = None, boxes: bool = True) -> None:
    """The image shows the frame it claims to be, and the first box is the generator's box there."""
    image = s["image"]
    assert image.dtype == np.uint8 and image.shape == ((HEIGHT, WIDTH, 3) if view is None else (view[3], view[2], 3))
    assert read_frame_number(image) == s["frame_index"]
    if not boxes:
        return
    x0, y0, x1, y1 = object_box(s["frame_index"], WIDTH, HEIGHT)
    if view is not None:
        y1 = min(y1, view[3])
    assert s["boxes"][0].tolist() == [x0, y0, x1, y1]


def test_index_samples_decode_to_the_frame_asked(vds: VideoDataset) -> None:
    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id, kinds=("box",))
    assert len(samples) == sum(n for n, _ in CLIPS.values())
    for position in (0, 10, 29, 30, 100, len(samples) - 1):
        video_id, frame = samples.index[position]
        with samples.reader(video_id) as reader:
            sample = samples.sample(video_id, frame, reader.read(frame))
        check_sample(sample)
        assert sample["frame_labels"].tolist() == ([0.0, 1.0] if 5 <= frame <= 9 else [0.0, 0.0])
        assert sample["labels"].tolist() == [0] * sample["boxes"].shape[0]


def test_view_pixels_and_boxes(vds: VideoDataset) -> None:
    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id, view_id="top")
    assert samples.index == [("v0", f) for f in range(0, 30, 3)]
    with samples.reader("v0") as reader:
        assert (reader.width, reader.height) == (64, 40)
        for frame in (0, 9, 27):
            s = samples.sample("v0", frame, reader.read(frame))
            check_sample(s, view=TOP)
            assert s["track_ids"].tolist() == [2] and s["view_id"] == "top"
            assert s["frame_labels"].tolist() == [0.0, 0.0]  # the marker is not the view's


def test_iter_plan_every_request_once_with_pixels(vds: VideoDataset) -> None:
    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id)
    rng = np.random.default_rng(1)
    positions = rng.choice(len(samples), size=60, replace=True)
    plan = samples.plan_reads(positions, seed=3)
    assert plan.summary()["videos_without_index"] == 0  # the frame indexes from probe are used
    want = Counter(samples.index[int(p)] for p in positions)
    for shuffle_buffer in (0, 16):
        got = Counter()
        for s in samples.iter_plan(plan, epoch=1, shuffle_buffer=shuffle_buffer):
            check_sample(s)
            got[(s["video_id"], s["frame_index"])] += 1
        assert got == want
    # shards of an epoch partition the requests
    parts = [
        Counter((s["video_id"], s["frame_index"]) for s in samples.iter_plan(plan, shard=k, num_shards=3))
        for k in range(3)
    ]
    assert sum(parts, Counter()) == want


def test_iter_plan_order_by_chunk_and_frames_nobody_annotated(vds: VideoDataset) -> None:
    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id, videos=["v3"], kinds=("marker",))
    assert samples.index == [("v3", f) for f in range(5, 10)]
    plan = samples.plan_reads([("v3", 19), ("v3", 2), ("v3", 19), ("v3", 7)], seed=0)
    out = list(samples.iter_plan(plan, epoch=0))
    for s in out:
        check_sample(s, boxes=False)
    order = [s["frame_index"] for s in out]
    # keyframes every 5: chunks {2}, {7}, {19 x2}; inside a chunk frames come in increasing order
    assert sorted(order) == [2, 7, 19, 19] and order[order.index(19) + 1] == 19  # repeats: one decode, in a row
    assert len({c.interval for c in plan.chunks}) == 3
    # targets of frames not in this selection: kinds=("marker",) has no boxes
    assert all(s["boxes"].shape == (0, 4) for s in out)
    assert [s["frame_labels"].tolist() for s in out if s["frame_index"] == 7] == [[0.0, 1.0]]


def test_roots_find_moved_videos(vds: VideoDataset, tmp_path: Path) -> None:
    # Copy the dataset and move its videos: the recorded paths are stale, roots= finds them.
    ds_copy = tmp_path / "ds"
    shutil.copytree(vds.path, ds_copy)
    moved = tmp_path / "moved"
    moved.mkdir()
    for video_id in CLIPS:
        shutil.copy(vds.media / f"{video_id}.mp4", moved / f"{video_id}.mp4")
    ds = Dataset.open(ds_copy)
    found = FrameSamples(ds, release=vds.release_id, videos=["v1"], roots=[moved])
    assert found.describe()["options"]["roots"] == [str(moved)]
    meta = found.video("v1")
    assert meta.uri is not None and Path(meta.uri).parent == vds.media
    # the original files still exist, so to prove roots is used, look at a dataset whose uri is gone
    hidden = tmp_path / "hidden"
    vds.media.rename(hidden)
    try:
        with pytest.raises(VideoNotFoundError, match="v1"):
            FrameSamples(ds, release=vds.release_id, videos=["v1"]).reader("v1")
        with found.reader("v1") as reader:
            assert read_frame_number(reader.read(13)) == 13
    finally:
        hidden.rename(vds.media)


def test_release_choice_and_pickling_with_a_real_dataset(vds: VideoDataset, tmp_path: Path) -> None:
    import pickle

    from vidlabel.errors import ReleaseNotFoundError

    ds = Dataset.open(vds.path)
    latest = FrameSamples(ds)  # release="latest"
    assert latest.release_id == vds.release_id
    again = pickle.loads(pickle.dumps(latest))  # holds the dataset path, no connection
    assert again.index == latest.index and again.describe()["dataset"] == str(vds.path)
    with again.reader("v2") as reader:
        assert read_frame_number(reader.read(17)) == 17
    live = FrameSamples(ds, release=None)
    assert live.release_id is None and live.index == latest.index
    with pytest.raises(ReleaseNotFoundError, match="r000000000000"):
        FrameSamples(ds, release="r000000000000")
    with pytest.raises(ReleaseNotFoundError):
        FrameSamples(Dataset.create(tmp_path / "empty"))
