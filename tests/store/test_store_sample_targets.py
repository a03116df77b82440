"""StoreSamples' targets, converted once per video: bit for bit what each stored row's own regions give, never
shared between samples, and normalized by a caller's image of another size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.store_support import make_dataset
from vidlabel import Dataset, export, open_store
from vidlabel.errors import SampleIndexTypeError, SampleOutOfRangeError
from vidlabel.geometry import boxes_from_xyxy
from vidlabel.store import StoreSamples
from vidlabel.torch_data import StoreFrames


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("store_targets")
    ds = make_dataset(root, videos=("a", "b"), n_frames=24)
    export(ds, root / "store", frames="all", codec="zstd", chunk_frames=4, progress=False)
    return root, ds


OPTIONS: list[dict[str, Any]] = [
    {},
    {"box_format": "cxcywh", "normalized": True},
    {"box_format": "xywh", "labels": ["person", "obj"], "label_offset": 2},
]


def expected_targets(store: Any, video_id: str, row: int, options: dict[str, Any]) -> dict[str, np.ndarray]:
    """A stored row's targets straight from the store's region arrays: its regions of a selected label, their
    xyxy boxes converted alone, in region order."""
    data = store.video_data(video_id)
    reg = data.regions
    names = options.get("labels") or list(store.class_names)
    picked = [
        r
        for r in range(int(reg["row_offsets"][row]), int(reg["row_offsets"][row + 1]))
        if store.class_names[int(reg["label_index"][r])] in names
    ]
    width, height = data.size
    xyxy = np.asarray(reg["bbox_xyxy"][picked], np.float64).reshape(-1, 4)
    boxes = boxes_from_xyxy(
        xyxy, options.get("box_format", "xyxy"), normalized=options.get("normalized", False), size=(width, height)
    )
    labels = [names.index(store.class_names[int(reg["label_index"][r])]) for r in picked]
    return {
        "boxes": boxes.astype(np.float32),
        "labels": np.array(labels, np.int64).reshape(-1) + options.get("label_offset", 0),
        "track_ids": np.asarray(reg["track_id"][picked], np.int64).reshape(-1),
        "annotation_ids": np.asarray(reg["annotation_id"][picked], np.int64).reshape(-1),
    }


@pytest.mark.parametrize("options", OPTIONS, ids=["default", "normalized", "labels"])
def test_every_sample_equals_its_rows_own_regions_bit_for_bit(
    world: tuple[Path, Dataset], options: dict[str, Any]
) -> None:
    root, _ = world
    store = open_store(root / "store")
    samples = StoreSamples(store, frames="stored", **options)
    assert len(samples) == len(store) > 40
    with_boxes = 0
    for j in range(len(samples)):
        video_id, row = samples.locate(j)
        got = samples.sample(j)
        for key, want in expected_targets(store, video_id, row, options).items():
            assert got[key].dtype == want.dtype and got[key].shape == want.shape, (key, j)
            assert got[key].tobytes() == want.tobytes(), (key, j)
        with_boxes += got["boxes"].shape[0] > 0
    assert with_boxes > 10


def test_batches_equal_single_reads_bit_for_bit(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    frames = StoreFrames(root / "store", box_format="cxcywh", normalized=True, label_offset=1)
    picks = [7, 0, 7, 30, 3, len(frames) - 1]
    for j, got in zip(picks, frames.__getitems__(picks)):
        one = frames[j]
        assert got.keys() == one.keys()
        for key, value in one.items():
            if hasattr(value, "numpy"):
                assert got[key].dtype == value.dtype and got[key].numpy().tobytes() == value.numpy().tobytes(), key
            else:
                assert got[key] == value, key


def test_changing_a_samples_targets_leaves_later_samples_alone(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    samples = StoreSamples(open_store(root / "store"), frames="stored", box_format="xywh")
    j = next(j for j in range(len(samples)) if samples.sample(j)["boxes"].shape[0] > 0)
    first = samples.sample(j)
    kept = {k: first[k].copy() for k in ("boxes", "labels", "track_ids", "annotation_ids")}
    for key in kept:
        first[key] += 7
    again = samples.sample(j)
    for key, want in kept.items():
        np.testing.assert_array_equal(again[key], want, err_msg=key)


def test_an_image_of_another_size_normalizes_by_its_own_size(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    samples = StoreSamples(open_store(root / "store"), frames="stored", normalized=True)
    j = next(j for j in range(len(samples)) if samples.sample(j)["boxes"].shape[0] > 0)
    video_id, row = samples.locate(j)
    stored = samples.sample(j)
    h, w = stored["image"].shape[:2]
    doubled = samples.sample_row(video_id, row, image=np.zeros((2 * h, 2 * w, 3), np.uint8))
    # halving is exact in binary floating point: the boxes of a twice-as-large image are exactly half
    assert doubled["boxes"].tobytes() == (stored["boxes"] / 2).astype(np.float32).tobytes()
    np.testing.assert_array_equal(doubled["labels"], stored["labels"])


def test_sample_indices_of_every_integer_kind_and_the_refused_ones(world: tuple[Path, Dataset]) -> None:
    root, _ = world
    samples = StoreSamples(open_store(root / "store"), frames="stored")
    n = len(samples)
    last = samples.sample(n - 1)["frame_index"]
    assert samples.sample(-1)["frame_index"] == samples.sample(np.int64(n - 1))["frame_index"] == last
    assert samples.locate(np.int32(0)) == samples.locate(-n) == samples.locate(0)
    with pytest.raises(SampleOutOfRangeError, match=rf"sample {n} out of range \[0, {n}\)"):
        samples.sample(n)
    with pytest.raises(SampleOutOfRangeError, match=rf"sample {-n - 1} out of range"):
        samples.locate(-n - 1)
    with pytest.raises(SampleIndexTypeError, match="must be an integer"):
        samples.sample(True)
    with pytest.raises(SampleIndexTypeError, match="must be an integer"):
        samples.sample(1.0)
