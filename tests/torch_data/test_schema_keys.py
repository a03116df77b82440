"""A sample key is one entry of the schema: a toy key added to the schema table (and nothing else) reaches
every frame and clip dataset, the PyTorch conversion and the collate; and every clip dataset's samples
check against the clip schema, with the true frames.

The toy key ``box_areas`` (N,) float32 is derived from ``boxes`` (xyxy pixels); its truth is the area of the
generator's moving box (tests/media.py), worked out here.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.media import object_box, read_frame_number
from tests.store_support import H, W, make_dataset
from vidlabel import Dataset, FrameSamples, export
from vidlabel.clip import ClipSpec
from vidlabel.errors import OptionError, SampleSchemaError
from vidlabel.samples import SlidingClips
from vidlabel.schema import CLIP, SCHEMAS, SampleKey, build_sample, check_sample, clip_sample, frame_sample
from vidlabel.torch_data import (
    ClipStream,
    StoreClips,
    StoreClipStream,
    StoreFrames,
    VideoClips,
    VideoFrames,
    collate_clips,
    collate_frames,
    to_torch_clip,
)
from vidlabel.torch_data._collate import to_torch_sample

SPEC = ClipSpec(4)
N_FRAMES = 24


def _areas(sample: Mapping[str, Any]) -> np.ndarray:
    boxes = sample["boxes"]
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


TOY = SampleKey("box_areas", ("N",), "float32", "pixels^2", "Area of each box.", layout="ragged", derive=_areas)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("schema_keys")
    ds = make_dataset(root, videos=("a",), n_frames=N_FRAMES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(ds, root / "store", clip=SPEC, progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy key added to the frame schema and, per frame, to the clip schema: the only change made."""
    per_frame = SampleKey(TOY.name, TOY.dims, TOY.dtype, TOY.unit, TOY.meaning, layout="ragged", per_frame=True)
    monkeypatch.setitem(SCHEMAS, "frame", SCHEMAS["frame"].with_keys(TOY))
    monkeypatch.setitem(SCHEMAS, "clip", SCHEMAS["clip"].with_keys(per_frame))


def _np(value: Any) -> np.ndarray:
    return value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def _check_toy_areas(frame: int, boxes: Any, labels: Any, tracks: Any, areas: Any) -> None:
    """``areas`` has one float32 entry per box, the moving object's the generator's box area."""
    boxes, labels, tracks, areas = _np(boxes), _np(labels), _np(tracks), _np(areas)
    assert areas.dtype == np.float32 and areas.shape == (len(boxes),)
    moving = (tracks == 1) & (labels == 0)
    if moving.any():
        x0, y0, x1, y1 = object_box(frame, W, H)
        assert float(areas[moving][0]) == pytest.approx((x1 - x0) * (y1 - y0))


@pytest.mark.usefixtures("toy")
def test_a_key_added_to_the_schema_reaches_frame_samples_tensors_and_batches(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    samples = FrameSamples(ds)
    with samples.reader("a") as reader:
        numpy_samples = [samples.sample("a", n, reader.read(n)) for n in (0, 2)]
    frames = VideoFrames(samples)
    store_frames = StoreFrames(root / "store")
    tensors = [frames[0], frames[1], store_frames[0], store_frames[1]]
    for sample in numpy_samples + tensors:
        check_sample(sample, SCHEMAS["frame"], torch=isinstance(sample["image"], torch.Tensor), optional=False)
        _check_toy_areas(sample["frame_index"], sample["boxes"], sample["labels"], sample["track_ids"],
                         sample["box_areas"])  # fmt: skip
    assert isinstance(frames[0]["box_areas"], torch.Tensor)
    # both samples hold one box, so only the schema's "ragged" keeps them apart in a batch
    assert [len(s["boxes"]) for s in numpy_samples] == [1, 1]
    for batch in (collate_frames(numpy_samples), collate_frames([to_torch_sample(s) for s in numpy_samples])):
        assert isinstance(batch["box_areas"], list) and len(batch["box_areas"]) == 2
        for got, sample in zip(batch["box_areas"], numpy_samples):
            np.testing.assert_array_equal(got.numpy(), sample["box_areas"])


@pytest.mark.usefixtures("toy")
def test_a_key_added_to_the_schema_reaches_clip_samples_tensors_and_batches(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    clips = FrameSamples(ds).clips(SPEC, SlidingClips(4))
    numpy_clips = [clips.read(0), clips.read(1)]
    found = [*numpy_clips, VideoClips(clips)[0], StoreClips(root / "store")[0]]
    for clip in found:
        torch_layout = isinstance(clip["image"], torch.Tensor)
        check_sample(clip, SCHEMAS["clip"], torch=torch_layout, dims={"T": 4}, optional=False)
        assert isinstance(clip["box_areas"], list) and len(clip["box_areas"]) == 4
        for t, frame in enumerate(_np(clip["frame_indices"]).tolist()):
            _check_toy_areas(frame, clip["boxes"][t], clip["labels"][t], clip["track_ids"][t], clip["box_areas"][t])
    assert all(isinstance(a, torch.Tensor) for a in to_torch_clip(numpy_clips[0])["box_areas"])
    batch = collate_clips(numpy_clips)
    assert len(batch["box_areas"]) == 2 and all(len(per_clip) == 4 for per_clip in batch["box_areas"])
    for per_clip, clip in zip(batch["box_areas"], numpy_clips):
        for got, want in zip(per_clip, clip["box_areas"]):
            np.testing.assert_array_equal(got.numpy(), want)


def _clip_datasets(root: Path, ds: Dataset) -> dict[str, list[dict[str, Any]]]:
    clips = FrameSamples(ds).clips(SPEC, SlidingClips(4))
    video_clips = VideoClips(clips)
    store_clips = StoreClips(root / "store")
    return {
        "ClipSamples.read": [clips.read(i) for i in range(len(clips))],
        "ClipSamples.iter_clips": list(clips.iter_clips()),
        "ClipStream": list(ClipStream(clips, seed=1)),
        "VideoClips": [video_clips[i] for i in range(len(video_clips))],
        "VideoClips.__getitems__": video_clips.__getitems__(list(range(len(video_clips)))),
        "StoreClips": [store_clips[i] for i in range(len(store_clips))],
        "StoreClipStream": list(StoreClipStream(root / "store", seed=1)),
    }


def test_every_clip_dataset_gives_clip_schema_samples_of_the_true_frames(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    class_names = FrameSamples(ds).class_names
    for name, clips in _clip_datasets(root, ds).items():
        assert clips, name
        for clip in clips:
            torch_layout = isinstance(clip["image"], torch.Tensor)
            dims = {"T": SPEC.frames_per_clip, "C": len(class_names), "H": H, "W": W}
            try:
                check_sample(clip, CLIP, torch=torch_layout, dims=dims, optional=False)
            except SampleSchemaError as err:
                raise AssertionError(f"{name}: {err}") from err
            images = _np(clip["image"])
            images = images.transpose(0, 2, 3, 1) if torch_layout else images
            frames = _np(clip["frame_indices"]).tolist()
            assert [read_frame_number(im) for im in images] == frames, name
            assert frames == list(range(frames[0], frames[0] + SPEC.frames_per_clip)), name
            for t, frame in enumerate(frames):
                _check_box_of(frame, clip["boxes"][t], clip["labels"][t], clip["track_ids"][t])


def _check_box_of(frame: int, boxes: Any, labels: Any, tracks: Any) -> None:
    moving = (_np(tracks) == 1) & (_np(labels) == 0)
    if frame % 2 == 0 and not 14 <= frame <= 17:
        np.testing.assert_allclose(_np(boxes)[moving][0], object_box(frame, W, H), atol=1e-5)
    else:
        assert not moving.any()


def test_the_builder_refuses_an_unknown_or_missing_key() -> None:
    targets = {"boxes": [], "labels": [], "track_ids": [], "annotation_ids": [], "frame_labels": [0.0]}
    with pytest.raises(SampleSchemaError, match=r"frame sample: unknown key 'areas'; known: image, boxes"):
        frame_sample(image=None, video_id="v", view_id=None, frame_index=0, areas=[1.0], **targets)
    with pytest.raises(SampleSchemaError, match=r"frame sample: no value for key 'video_id'"):
        build_sample(SCHEMAS["frame"], {"view_id": None, "frame_index": 0, **targets})
    sample = frame_sample(image=None, video_id="v", view_id=None, frame_index=0, **targets)
    assert sample["boxes"].shape == (0, 4) and sample["boxes"].dtype == np.float32


def test_collate_clips_refuses_clips_of_other_shapes_and_names_itself() -> None:
    def clip(t: int) -> dict[str, Any]:
        image = np.zeros((t, H, W, 3), np.uint8)
        frames = [frame_sample(image=image[k], boxes=[], labels=[], track_ids=[], annotation_ids=[],
                               frame_labels=[0.0], video_id="v", view_id=None, frame_index=k) for k in range(t)]  # fmt: skip
        return clip_sample(
            image=image, frames=frames, frame_indices=np.arange(t), timestamps_us=np.arange(t), clip_index=0
        )

    with pytest.raises(OptionError, match=r"collate_clips: 'image' differs in shape across the batch"):
        collate_clips([clip(2), clip(3)])
    with pytest.raises(OptionError, match=r"collate_frames: 'image' differs in shape across the batch"):
        collate_frames([clip(2), clip(3)])
    assert collate_frames([clip(2), clip(2)])["image"].shape == (2, 2, 3, H, W)
