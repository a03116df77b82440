"""Clip samples carry each frame's attributes (``with_attributes=``), equal to the frame datasets' arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import encode_clip
from vidlabel import ClipSpec, Dataset, FrameSamples, export, probe
from vidlabel.errors import OptionError
from vidlabel.schema import CLIP, check_sample
from vidlabel.torch_data import (
    ClipStream,
    StoreClips,
    StoreClipStream,
    StoreFrames,
    StoreStream,
    VideoClips,
    collate_clips,
)

NAMES = ["visibility", "occluded"]
SPEC = ClipSpec(3, step=2)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("clip_attrs")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["person", "car"])
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number"})
    encode_clip(root / "cam.mp4", n_frames=12, width=64, height=48, gop=4)
    ds.add_video(probe(root / "cam.mp4", video_id="cam"))
    rows = []
    for f in range(12):
        # frame f: a person occluded on odd frames with visibility f / 12, and a car without attributes
        rows.append({"kind": "box", "label": "person", "start_frame": f, "box": (1.0, 1.0, 20.0, 20.0),
                     "attributes": {"occluded": f % 2 == 1, "visibility": f / 12}})  # fmt: skip
        rows.append({"kind": "box", "label": "car", "start_frame": f, "box": (30.0, 5.0, 50.0, 40.0)})
    ds.add_annotations(rows, "cam")
    ds.build()
    export(ds, root / "store", clip=SPEC, progress=False)
    return root, ds


def _truth(frame: int) -> np.ndarray:
    """The (2, 2) attributes of a frame's targets (person, then car), from the generator."""
    return np.array([[frame / 12, float(frame % 2 == 1)], [np.nan, np.nan]], np.float32)


def _check_clip(attributes: list, frames: list[int], frame_arrays: dict[int, np.ndarray]) -> None:
    assert len(attributes) == len(frames) == SPEC.frames_per_clip
    for values, frame in zip(attributes, frames):
        values = values.numpy() if isinstance(values, torch.Tensor) else values
        assert values.dtype == np.float32 and values.shape == (2, 2)
        np.testing.assert_array_equal(values, frame_arrays[frame])
        np.testing.assert_allclose(values, _truth(frame), rtol=1e-6)


def test_numpy_clips_carry_the_frame_samples_attributes(world: tuple[Path, Dataset]) -> None:
    _root, ds = world
    fs = FrameSamples(ds, with_attributes=NAMES)
    by_frame = {int(t["frame_index"]): t["attributes"] for t in fs.targets()}
    clips = list(fs.clips(SPEC))
    assert len(clips) == 12
    for clip in clips:
        check_sample(clip, CLIP)
        _check_clip(clip["attributes"], clip["frame_indices"].tolist(), by_frame)
    assert "attributes" not in next(iter(FrameSamples(ds).clips(SPEC)))


def test_video_clips_and_clip_stream_deliver_attributes(world: tuple[Path, Dataset]) -> None:
    _root, ds = world
    fs = FrameSamples(ds, with_attributes=NAMES)
    by_frame = {int(t["frame_index"]): t["attributes"] for t in fs.targets()}
    clips = fs.clips(SPEC)
    mapped = VideoClips(clips)
    streamed = list(ClipStream(clips))
    assert len(streamed) == len(mapped) == 12
    for clip in [mapped[i] for i in range(len(mapped))] + streamed:
        assert all(isinstance(v, torch.Tensor) for v in clip["attributes"])
        _check_clip(clip["attributes"], clip["frame_indices"].tolist(), by_frame)
    batch = next(iter(DataLoader(mapped, batch_size=4, collate_fn=collate_clips)))
    assert len(batch["attributes"]) == 4 and all(len(per_clip) == 3 for per_clip in batch["attributes"])
    for b in range(4):
        _check_clip(batch["attributes"][b], batch["frame_indices"][b].tolist(), by_frame)


@pytest.mark.parametrize("cls", [StoreClips, StoreClipStream])
def test_store_clips_deliver_the_frame_datasets_attributes(world: tuple[Path, Dataset], cls: type) -> None:
    root, ds = world
    by_frame = {int(t["frame_index"]): t["attributes"] for t in FrameSamples(ds, with_attributes=NAMES).targets()}
    dataset = cls(root / "store", with_attributes=NAMES)
    items = [dataset[i] for i in range(len(dataset))] if cls is StoreClips else list(dataset)
    assert len(items) == 12
    for clip in items:
        _check_clip(clip["attributes"], clip["frame_indices"].tolist(), by_frame)
    batch = next(iter(DataLoader(dataset, batch_size=3, collate_fn=collate_clips)))
    assert len(batch["attributes"]) == 3 and batch["attributes"][0][0].shape == (2, 2)
    assert "attributes" not in next(iter(cls(root / "store")))


def test_store_clips_refuse_repeated_attribute_names(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    with pytest.raises(ValueError, match="visibility"):
        StoreClips(root / "store", with_attributes=["visibility", "visibility"])


@pytest.mark.parametrize("cls", [StoreFrames, StoreStream, StoreClips, StoreClipStream])
def test_store_datasets_filter_by_attribute_as_frame_samples(world: tuple[Path, Dataset], cls: type) -> None:
    root, ds = world
    conditions = {"occluded": False, "visibility": (">=", 0.25)}
    want = {
        int(t["frame_index"]): t["annotation_ids"].tolist() for t in FrameSamples(ds, attributes=conditions).targets()
    }
    # the even frames from 4 on keep their person; every frame keeps its car (car declares no attribute)
    assert [f for f, ids in want.items() if len(ids) == 2] == [4, 6, 8, 10]
    dataset = cls(root / "store", attributes=conditions, with_attributes=NAMES)
    items = [dataset[i] for i in range(len(dataset))] if cls in (StoreFrames, StoreClips) else list(dataset)
    assert len(items) == 12
    for item in items:
        if "frame_indices" in item:
            frames, per_frame = item["frame_indices"].tolist(), item["annotation_ids"]
        else:
            frames, per_frame = [int(item["frame_index"])], [item["annotation_ids"]]
        for frame, ids in zip(frames, per_frame):
            assert ids.tolist() == want[frame]
    with pytest.raises(OptionError, match="no label declares attribute 'visibilty'"):
        cls(root / "store", attributes={"visibilty": (">=", 0.5)})
