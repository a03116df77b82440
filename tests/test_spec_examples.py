"""The spec's code examples (docs/training.md), run as written.

Changes from the spec's text, and only these: a small generated dataset
stands in where the spec points at "my_dataset" and release "r3fa91c0b2d44";
the loop bodies written ``...`` record what they see so the test
can check it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import object_box, read_frame_number
from tests.samples.test_samples_video import CLIPS, HEIGHT, WIDTH, VideoDataset, build_video_dataset


@pytest.fixture(scope="module")
def vds(tmp_path_factory: pytest.TempPathFactory) -> VideoDataset:
    return build_video_dataset(tmp_path_factory.mktemp("spec_examples"))


MINIMAL_LOOP = """
from torch.utils.data import DataLoader
from vidlabel import Dataset, FrameSamples
from vidlabel.torch_data import VideoStream, collate_frames

if __name__ == "__main__":                      # required on Windows and macOS when num_workers > 0
    ds = Dataset.open("my_dataset")
    samples = FrameSamples(ds, release="r3fa91c0b2d44", kinds=("box",), label_offset=1)   # 0 = background
    loader = DataLoader(VideoStream(samples, shuffle_buffer=256), batch_size=8, num_workers=4,
                        collate_fn=collate_frames)
    for epoch in range(10):
        loader.dataset.set_epoch(epoch)         # a different video order each epoch
        for batch in loader:
            images = batch["image"]             # uint8 (B, 3, H, W) if the frames share a size
            boxes, labels = batch["boxes"], batch["labels"]    # one array per sample: boxes differ in count
            ...
"""


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_minimal_pytorch_loop(vds: VideoDataset) -> None:
    seen: list[tuple[int, Any, Any, Any, Any]] = []
    code = MINIMAL_LOOP.replace('"my_dataset"', repr(str(vds.path))).replace('"r3fa91c0b2d44"', repr(vds.release_id))
    code = code.replace("            ...\n", "            seen.append((epoch, images, boxes, labels, batch))\n")
    exec(compile(code, "training.md", "exec"), {"__name__": "__main__", "seen": seen})

    n_samples = sum(n for n, _ in CLIPS.values())
    per_epoch: dict[int, list[tuple[str, int]]] = {}
    for epoch, images, boxes, labels, batch in seen:
        assert images.dtype.is_floating_point is False and images.shape[1:] == (3, HEIGHT, WIDTH)
        assert isinstance(boxes, list) and isinstance(labels, list)
        for i, (video_id, frame) in enumerate(zip(batch["video_id"], batch["frame_index"].tolist())):
            assert read_frame_number(images[i].permute(1, 2, 0).numpy()) == frame
            # the box on every frame (v0 also has the "top" view's box on every third frame: view_id=None keeps all)
            assert boxes[i][0].tolist() == list(object_box(frame, WIDTH, HEIGHT))
            assert labels[i].tolist() == [1] * boxes[i].shape[0]  # class 0 ("object") + label_offset 1
            per_epoch.setdefault(epoch, []).append((video_id, frame))
    assert sorted(per_epoch) == list(range(10))
    expected = Counter((v, f) for v, (n, _) in CLIPS.items() for f in range(n))
    for pairs in per_epoch.values():
        assert len(pairs) == n_samples and Counter(pairs) == expected  # every sample once per epoch
    assert per_epoch[0] != per_epoch[1]  # a different order each epoch


def test_train_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    # --- the spec's code ---
    import numpy as np

    from vidlabel import Dataset, FrameSamples, VideoMetadata

    ds = Dataset.create("train_demo")
    ds.add_video(
        VideoMetadata(
            video_id="clip",
            frame_count=300,
            fps={"num": 30, "den": 1},
            width=320,
            height=240,
            sources=[{"uri": "/path/to/clip.mp4"}],
        )
    )
    ds.add_labels(["person", "car", "scene_change"])
    ds.add_annotations(
        [
            {"kind": "box", "label": "person", "start_frame": 10, "box": (20, 30, 80, 150), "track_id": 1,
             "origin": "model"},
            {"kind": "box", "label": "car", "start_frame": 10, "box": (100, 60, 220, 140), "origin": "human"},
            {"kind": "marker", "label": "scene_change", "start_frame": 8, "end_frame": 12, "origin": "human"},
        ],
        "clip",
    )  # fmt: skip
    release, _ = ds.build()

    samples = FrameSamples(ds, release=release.release_id, kinds=("box",))
    print(len(samples), samples.index)  # 1 [('clip', 10)]   (only frames with a box)
    print(samples.class_names)  # ['person', 'car', 'scene_change']

    image = np.zeros((240, 320, 3), np.uint8)  # normally samples.reader("clip").read(10)
    s = samples.sample("clip", 10, image)
    print(s["boxes"].tolist(), s["labels"].tolist(), s["frame_labels"].tolist())
    assert sorted(s["labels"].tolist()) == [0, 1] and s["frame_labels"].tolist() == [
        0.0,
        0.0,
        1.0,
    ]  # (box order can vary)

    yolo = FrameSamples(ds, release=release.release_id, box_format="cxcywh", normalized=True).sample("clip", 10, image)
    print(np.round(yolo["boxes"], 3).tolist())  # centre x, centre y, width, height as fractions
    # --- end of the spec's code ---

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1 [('clip', 10)]"
    assert lines[1] == "['person', 'car', 'scene_change']"
    assert lines[2] == "[[20.0, 30.0, 80.0, 150.0], [100.0, 60.0, 220.0, 140.0]] [0, 1] [0.0, 0.0, 1.0]"
    # person: centre (50, 90), size (60, 120); car: centre (160, 100), size (120, 80); frame 320 x 240
    yolo_expected = [[50 / 320, 90 / 240, 60 / 320, 120 / 240], [160 / 320, 100 / 240, 120 / 320, 80 / 240]]
    assert np.allclose(eval(lines[3]), np.round(yolo_expected, 3), atol=1e-6)


def test_reading_one_sample_without_pytorch(vds: VideoDataset) -> None:
    from vidlabel import Dataset, FrameSamples

    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id)
    # --- the spec's code ---
    video_id, frame = samples.index[10]
    with samples.reader(video_id) as reader:  # a FrameReader (or CachedReader), cropped to the view
        sample = samples.sample(video_id, frame, reader.read(frame))
    # --- end ---
    assert (video_id, frame) == ("v0", 10)
    assert read_frame_number(sample["image"]) == 10
    assert sample["boxes"][0].tolist() == list(object_box(10, WIDTH, HEIGHT))


def test_readplan_example(capsys: pytest.CaptureFixture[str]) -> None:
    # --- the spec's code, verbatim ---
    import numpy as np

    from vidlabel.readplan import ReadPlan
    from vidlabel_spec import FrameIndex

    # A video of 600 frames with a keyframe every 100 (normally read from the file by `vidlabel index`).
    index = FrameIndex(
        timebase={"num": 1, "den": 1000}, pts=[i * 40 for i in range(600)], keyframes=list(range(0, 600, 100))
    )

    rng = np.random.default_rng(0)
    requests = [("clip", int(f)) for f in rng.integers(0, 600, 200)]  # any list you like, in any order, repeats allowed
    plan = ReadPlan(requests, indexes={"clip": index}, seed=0)

    summary = plan.summary()
    print(summary)
    assert summary["samples"] == 200 and summary["chunks"] == 6
    assert (
        summary["est_decoded_frames"] <= 600 < summary["est_decoded_frames_one_by_one"]
    )  # each interval once, not once per request

    first, second = plan.shard(epoch=0, shard=0, num_shards=2), plan.shard(epoch=0, shard=1, num_shards=2)
    assert sum(c.n_samples for c in first + second) == 200  # every sample goes to exactly one worker
    assert plan.order(0) != plan.order(1)  # a new chunk order every epoch
    # --- end ---
    assert "'samples': 200" in capsys.readouterr().out


def test_plan_reads_example(vds: VideoDataset, capsys: pytest.CaptureFixture[str]) -> None:
    from vidlabel import Dataset, FrameSamples
    from vidlabel.torch_data import PlannedStream

    samples = FrameSamples(Dataset.open(vds.path), release=vds.release_id)
    weights = np.linspace(1.0, 3.0, len(samples))
    positions = np.random.default_rng(0).choice(len(samples), 50, p=weights / weights.sum())
    seen, streamed = [], []
    epoch = 1
    # --- the spec's code ---
    plan = samples.plan_reads(positions, seed=0)  # positions drawn however you like
    print(plan.summary())  # estimated frames decoded: this plan vs reading one at a time

    for sample in samples.iter_plan(plan, epoch=0, shuffle_buffer=64):  # NumPy samples, no framework needed
        seen.append(sample)

    stream = PlannedStream(samples, plan, shuffle_buffer=64)  # PyTorch: an IterableDataset for a DataLoader
    stream.set_epoch(epoch)  # a new chunk order each epoch, reproducible from seed and epoch
    # --- end ---
    streamed = list(stream)
    want = Counter(samples.index[int(p)] for p in positions)
    assert Counter((s["video_id"], s["frame_index"]) for s in seen) == want
    assert Counter((s["video_id"], s["frame_index"]) for s in streamed) == want
    for s in seen:
        assert read_frame_number(s["image"]) == s["frame_index"]
    assert "est_decoded_frames_one_by_one" in capsys.readouterr().out
