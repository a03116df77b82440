"""The sample schema (vidlabel.schema): its builder, its checker and its documentation of every key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vidlabel.errors import SampleSchemaError
from vidlabel.schema import FRAME, SCHEMAS, SampleKey, SampleSchema, check_sample, frame_sample


def _frame(n: int = 2, h: int = 6, w: int = 8, c: int = 3, **changes: Any) -> dict[str, Any]:
    """A frame sample of ``n`` regions built by the schema's builder."""
    values: dict[str, Any] = {
        "image": np.zeros((h, w, 3), np.uint8),
        "boxes": np.arange(n * 4, dtype=np.float32).reshape(n, 4),
        "labels": np.arange(n, dtype=np.int64),
        "track_ids": np.full(n, -1, np.int64),
        "annotation_ids": np.arange(1, n + 1, dtype=np.int64),
        "frame_labels": np.zeros(c, np.float32),
        "video_id": "v",
        "view_id": None,
        "frame_index": 7,
    }
    values.update(changes)
    return frame_sample(**values)


def test_frame_sample_holds_the_schema_keys_in_order() -> None:
    sample = _frame(masks=np.ones((2, 6, 8), np.uint8), attributes=np.zeros((2, 1), np.float32))
    assert list(sample) == list(FRAME.names)
    check_sample(sample, dims={"C": 3, "H": 6, "W": 8}, optional=True)
    assert list(_frame()) == [k for k in FRAME.names if k not in ("masks", "attributes")]
    assert "image" not in frame_sample(**{k: v for k, v in _frame().items() if k != "image"}, image=None)


def test_frame_sample_converts_dtypes_and_keeps_arrays_of_the_right_dtype() -> None:
    labels = np.array([3, 4], np.int64)
    sample = _frame(labels=labels, track_ids=[5, 6], boxes=[[1, 2, 3, 4], [5, 6, 7, 8]], frame_index=np.int64(9))
    assert sample["labels"] is labels
    assert sample["track_ids"].dtype == np.int64 and sample["track_ids"].tolist() == [5, 6]
    assert sample["boxes"].dtype == np.float32 and sample["boxes"].shape == (2, 4)
    assert type(sample["frame_index"]) is int and sample["frame_index"] == 9
    empty = _frame(n=0)
    assert empty["boxes"].shape == (0, 4) and empty["labels"].shape == (0,)
    check_sample(empty)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"boxes": np.zeros((2, 5), np.float32)}, r"'boxes' has shape \(2, 5\), expected \('N', 4\)"),
        ({"labels": np.zeros(3, np.int64)}, r"'labels' has shape \(3,\): N = 3, but N = 2 in boxes"),
        ({"labels": np.zeros(2, np.int32)}, r"'labels' has dtype int32, expected int64"),
        ({"image": np.zeros((6, 8), np.uint8)}, r"'image' has 2 dimensions \(6, 8\), expected 3"),
        ({"video_id": 3}, r"'video_id' is 3 \(int\), expected str"),
        ({"frame_index": True}, r"'frame_index' is True \(bool\), expected int"),
        ({"frame_labels": [0.0]}, r"'frame_labels' is list, expected an array"),
    ],
)
def test_check_sample_names_the_problem(change: dict[str, Any], message: str) -> None:
    sample = _frame()
    sample.update(change)
    with pytest.raises(SampleSchemaError, match=message):
        check_sample(sample)


def test_check_sample_refuses_missing_unknown_and_unexpected_keys() -> None:
    sample = _frame()
    del sample["track_ids"]
    sample["extra"] = 1
    with pytest.raises(SampleSchemaError, match=r"unknown key 'extra'; missing key 'track_ids'"):
        check_sample(sample)
    with pytest.raises(SampleSchemaError, match=r"missing key 'masks' \(expected with_masks=True\)"):
        check_sample(_frame(attributes=np.zeros((2, 1), np.float32)), optional=True)
    with pytest.raises(SampleSchemaError, match=r"key 'masks' is there, expected only with_masks=True"):
        check_sample(_frame(masks=np.zeros((2, 6, 8), np.uint8)), optional=False)
    with pytest.raises(SampleSchemaError, match=r"'frame_labels' has shape \(3,\): C = 3, but C = 4 in given"):
        check_sample(_frame(), dims={"C": 4})
    with pytest.raises(SampleSchemaError, match=r"unknown sample schema 'film'; known: frame"):
        check_sample(_frame(), "film")
    with pytest.raises(SampleSchemaError, match=r"a frame sample is a dict, got list"):
        check_sample([1, 2])  # type: ignore[arg-type]


def test_check_sample_in_the_torch_layout_wants_channels_first() -> None:
    sample = _frame()
    with pytest.raises(SampleSchemaError, match=r"'image' has shape \(6, 8, 3\), expected \(3, 'H', 'W'\)"):
        check_sample(sample, torch=True, dims={"H": 6, "W": 8})
    sample["image"] = np.zeros((3, 6, 8), np.uint8)
    check_sample(sample, torch=True, dims={"H": 6, "W": 8})


def test_a_clip_schema_is_one_more_entry() -> None:
    """A schema with per-frame ragged targets checks each frame's array, T included."""
    clip = SampleSchema(
        "clip",
        (
            SampleKey("image", ("T", "H", "W", 3), "uint8", "RGB", "frames", layout="image"),
            SampleKey("boxes", ("N", 4), "float32", "pixels", "per frame", layout="ragged", per_frame=True),
            SampleKey("frame_indices", ("T",), "int64", "frame number", "frames of the clip"),
        ),
    )
    assert clip["image"].torch_dims == ("T", 3, "H", "W") and clip.ragged == {"boxes"}
    good = {
        "image": np.zeros((2, 4, 5, 3), np.uint8),
        "boxes": [np.zeros((1, 4), np.float32), np.zeros((3, 4), np.float32)],
        "frame_indices": np.array([4, 5]),
    }
    check_sample(good, clip)
    with pytest.raises(SampleSchemaError, match=r"'boxes' holds 1 arrays, expected T = 2"):
        check_sample({**good, "boxes": good["boxes"][:1]}, clip)
    with pytest.raises(SampleSchemaError, match=r"'boxes\[1\]' has dtype float64"):
        check_sample({**good, "boxes": [good["boxes"][0], np.zeros((3, 4))]}, clip)


def test_schema_definitions_are_checked() -> None:
    with pytest.raises(SampleSchemaError, match=r"image key 'image' needs dims \(\.\.\., H, W, 3\)"):
        SampleKey("image", ("H", "W"), "uint8", "RGB", "x", layout="image")
    with pytest.raises(SampleSchemaError, match=r"scalar key 'v' has no dims"):
        SampleKey("v", ("N",), "str", "id", "x", layout="scalar")
    key = SampleKey("a", ("N",), "int64", "id", "x")
    with pytest.raises(SampleSchemaError, match=r"schema 'twice' names a key twice"):
        SampleSchema("twice", (key, key))


def test_every_key_is_documented() -> None:
    for schema in SCHEMAS.values():
        for key in schema.keys:
            assert key.meaning.strip() and key.unit.strip() and key.dtype.strip(), key.name
        table = schema.table()
        assert all(f"| `{name}` |" in table for name in schema.names)
    assert "| `masks` | (N, H, W) | uint8 |" in FRAME.table()
    assert "| `image` | (3, H, W) | uint8 |" in FRAME.table(torch=True)


def test_the_reference_page_shows_the_schema() -> None:
    """docs/reference/samples.md holds the tables the schema writes (regenerate them from FRAME.table())."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "samples.md").read_text()
    assert FRAME.table() in page and FRAME.table(torch=True) in page


def test_check_sample_takes_the_optional_keys_by_name() -> None:
    with_masks = _frame(masks=np.zeros((2, 6, 8), np.uint8))
    check_sample(with_masks, optional=["masks"])
    with pytest.raises(SampleSchemaError, match=r"missing key 'attributes' \(expected with_attributes\)"):
        check_sample(with_masks, optional=["masks", "attributes"])
    with pytest.raises(SampleSchemaError, match=r"key 'masks' is there, expected only with_masks=True"):
        check_sample(with_masks, optional=["attributes"])
