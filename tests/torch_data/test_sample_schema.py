"""Every dataset's samples match the sample schema (vidlabel.schema), with the right values.

The clips' pixels encode their frame number, the moving object's box comes from the generator
(tests/media.py), the marker and the mask from tests/store_support.py: each sample is checked against the
schema (keys, dtypes, shapes, one size per dimension name) and against that truth, from every path that
hands out samples. Also: one SampleOptions gives the same samples as the keywords it holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import object_box, read_frame_number
from tests.store_support import (
    EMPTY_MARKER_FRAME,
    MARKER,
    MASK_FRAME,
    H,
    W,
    assert_same_sample,
    disc_mask,
    make_dataset,
)
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.errors import OptionError
from vidlabel.schema import FRAME, SampleOptions, check_sample
from vidlabel.store import StoreSamples
from vidlabel.torch_data import PlannedStream, StoreFrames, StoreStream, VideoFrames, VideoStream, collate_frames

#: Plain pixel boxes; and every target kind with masks, YOLO boxes and a label offset.
OPTIONS: list[dict[str, Any]] = [
    {},
    {"kinds": ("box", "mask", "marker"), "with_masks": True, "box_format": "cxcywh", "normalized": True,
     "label_offset": 1},
]  # fmt: skip
OPTION_IDS = ["pixels", "yolo_masks"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("sample_schema")
    ds = make_dataset(root, videos=("a", "b"), n_frames=24)
    export(ds, root / "store", kinds=("box", "mask", "marker"), progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def _numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def _truth_box(frame: int, options: dict[str, Any]) -> np.ndarray:
    """The generator's box of the moving object on ``frame``, written as ``options`` ask (worked out here)."""
    x0, y0, x1, y1 = object_box(frame, W, H)
    if options.get("box_format") == "cxcywh":
        box = np.array([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0])
    else:
        box = np.array([x0, y0, x1, y1])
    return box / np.array([W, H, W, H]) if options.get("normalized") else box


def check_frame(sample: dict[str, Any], options: dict[str, Any], class_names: list[str], *, torch: bool) -> None:
    """``sample`` matches the schema and the truth of its frame."""
    with_masks = bool(options.get("with_masks"))
    # masks exactly when asked; attributes never (only FrameSamples' with_attributes gives them)
    optional = ["masks"] if with_masks else False
    check_sample(sample, torch=torch, dims={"C": len(class_names), "H": H, "W": W}, optional=optional)
    f = sample["frame_index"]
    image = _numpy(sample["image"])
    assert read_frame_number(image.transpose(1, 2, 0) if torch else image) == f
    boxes, labels, tracks, anns = (_numpy(sample[k]) for k in ("boxes", "labels", "track_ids", "annotation_ids"))
    offset = options.get("label_offset", 0)
    moving = (tracks == 1) & (labels == class_names.index("obj") + offset)
    if f % 2 == 0 and not 14 <= f <= 17:  # the generator's object is annotated on these frames
        assert moving.sum() == 1
        np.testing.assert_allclose(boxes[moving][0], _truth_box(f, options), rtol=0, atol=1e-5)
    else:
        assert not moving.any()
    assert np.all(np.diff(anns) > 0), "targets are ordered by annotation id"
    active = _numpy(sample["frame_labels"])
    assert active.tolist() == [float(name == "event" and MARKER[0] <= f <= MARKER[1]) for name in class_names]
    if with_masks:
        masks = _numpy(sample["masks"])
        is_mask = labels == class_names.index("person") + offset
        is_mask &= masks.reshape(len(masks), H * W).any(axis=1)
        assert is_mask.sum() == (f == MASK_FRAME)
        if f == MASK_FRAME:
            np.testing.assert_array_equal(masks[is_mask][0], disc_mask())


def _video_samples(samples: FrameSamples) -> dict[str, list[dict[str, Any]]]:
    """The samples of every video path, by dataset name."""
    out: dict[str, list[dict[str, Any]]] = {"FrameSamples.sample": [], "FrameSamples.targets": []}
    for video_id, n in samples.index:
        with samples.reader(video_id) as reader:
            out["FrameSamples.sample"].append(samples.sample(video_id, n, reader.read(n)))
    for (video_id, n), targets in zip(samples.index, samples.targets()):
        with samples.reader(video_id) as reader:  # the targets with the frame they belong to
            out["FrameSamples.targets"].append({"image": reader.read(n), **targets})
    plan = samples.plan_reads(range(len(samples)), seed=3)
    out["FrameSamples.iter_plan"] = list(samples.iter_plan(plan))
    frames = VideoFrames(samples)
    out["VideoFrames"] = [frames[i] for i in range(len(frames))]
    out["VideoFrames.__getitems__"] = frames.__getitems__(list(range(len(frames))))
    frames.close()
    out["VideoStream"] = list(VideoStream(samples, seed=1))
    out["PlannedStream"] = list(PlannedStream(samples, plan))
    return out


def _store_samples(root: Path, options: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    store = open_store(root / "store")
    selected = StoreSamples(store, **options)
    frames = StoreFrames(store, **options)
    every = list(range(len(frames)))
    return {
        "StoreSamples.sample": [selected.sample(j) for j in range(len(selected))],
        "StoreSamples.samples": selected.samples(list(range(len(selected)))),
        "FrameStore.sample": [store.sample(i, **options) for i in range(len(store))],
        "StoreFrames": [frames[i] for i in every],
        "StoreFrames.__getitems__": frames.__getitems__(every),
        "StoreStream": list(StoreStream(store, seed=2, **options)),
    }


TORCH = {"VideoFrames", "VideoFrames.__getitems__", "VideoStream", "PlannedStream", "StoreFrames",
         "StoreFrames.__getitems__", "StoreStream"}  # fmt: skip


def every_dataset(root: Path, ds: Dataset, options: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    samples = FrameSamples(ds, **options)
    return {**_video_samples(samples), **_store_samples(root, options)}


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_every_dataset_gives_schema_samples_with_the_true_values(
    world: tuple[Path, Dataset], options: dict[str, Any]
) -> None:
    root, ds = world
    class_names = FrameSamples(ds, **options).class_names
    found = every_dataset(root, ds, options)
    assert len(found) == 13
    want = sorted(FrameSamples(ds, **options).index)
    for name, samples in found.items():
        where = [(s["video_id"], s["frame_index"]) for s in samples]
        if name == "FrameStore.sample":  # every stored frame, whatever the options select
            assert set(want) <= set(where), name
        else:
            assert sorted(where) == want, name
        for sample in samples:
            try:
                check_frame(sample, options, class_names, torch=name in TORCH)
            except Exception as err:
                raise AssertionError(f"{name}, {sample['video_id']} frame {sample['frame_index']}: {err}") from err
    # a frame with only the marker is a sample when "marker" is among the kinds
    marker_only = EMPTY_MARKER_FRAME in {s["frame_index"] for s in found["StoreFrames"]}
    assert marker_only == ("marker" in options.get("kinds", ()))


def test_the_schema_documents_every_key_a_dataset_emits(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    emitted: set[str] = set()
    for options in OPTIONS:
        for samples in every_dataset(root, ds, options).values():
            for sample in samples:
                emitted |= set(sample)
            batch = collate_frames(samples[:4])
            emitted |= set(batch)
    # attributes per target: FrameSamples' with_attributes (the dataset's rows carry none: NaN)
    with_attributes = FrameSamples(ds, with_attributes=["visibility"])
    first = next(with_attributes.targets())
    assert np.isnan(first["attributes"]).all() and first["attributes"].shape == (len(first["boxes"]), 1)
    emitted |= set(first)
    assert emitted == set(FRAME.names)


def _same(a: Iterable[dict[str, Any]], b: Iterable[dict[str, Any]]) -> None:
    a, b = list(a), list(b)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b):
        assert_same_sample(x, y)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
def test_one_sample_options_object_gives_what_its_keywords_give(
    world: tuple[Path, Dataset], options: dict[str, Any]
) -> None:
    root, ds = world
    by_keywords = FrameSamples(ds, **options)
    by_object = FrameSamples(ds, options=SampleOptions(**options))
    assert by_object.options == by_keywords.options == SampleOptions(**options)
    assert by_object.describe()["options"] == by_keywords.describe()["options"]
    _same(VideoFrames(by_object), VideoFrames(by_keywords))
    store = open_store(root / "store")
    _same(StoreFrames(store, options=by_keywords.options), StoreFrames(store, **options))
    _same(StoreStream(store, options=by_keywords.options), StoreStream(store, **options))
    assert StoreSamples(store, options=by_keywords.options).positions.tolist() == (
        StoreSamples(store, **options).positions.tolist()
    )


def test_sample_options_normalise_and_refuse(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    opts = SampleOptions(kinds="box", labels=["obj"], origins=["human"], min_confidence=1, label_offset=np.int64(2),
                         with_masks=np.bool_(True))  # type: ignore[arg-type]  # fmt: skip
    assert (opts.kinds, opts.labels, opts.origins) == (("box",), ("obj",), ("human",))
    assert type(opts.min_confidence) is float and type(opts.label_offset) is int and opts.with_masks is True
    with pytest.raises(OptionError, match=r"unknown origin 'robot' in origins=\['robot'\]; allowed: human, model"):
        SampleOptions(origins=["robot"])
    with pytest.raises(OptionError, match=r"min_confidence must lie in \[0, 1\], got 2"):
        SampleOptions(min_confidence=2)
    with pytest.raises(OptionError, match=r"normalized must be True or False"):
        SampleOptions(normalized="yes")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"FrameSamples: box_format='xywh' given together with options="):
        FrameSamples(ds, box_format="xywh", options=SampleOptions())
    with pytest.raises(OptionError, match=r"StoreFrames: kinds=\['box'\] given together with options="):
        StoreFrames(root / "store", kinds=["box"], options=SampleOptions())
    with pytest.raises(OptionError, match=r"StoreStream: options must be a vidlabel.schema.SampleOptions"):
        StoreStream(root / "store", options={"kinds": ["box"]})  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"StoreSamples: options=.* selects by origins or min_confidence"):
        StoreSamples(open_store(root / "store"), options=SampleOptions(origins=["model"]))
    FrameSamples(ds, kinds=["box", "mask"], options=SampleOptions(kinds=("box",)))  # the default, as a list
