"""StoreFrames and StoreStream deliver each target's attributes (``with_attributes=``) as FrameSamples does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tests.media import encode_clip
from vidlabel import Dataset, FrameSamples, export, probe
from vidlabel.errors import OptionError
from vidlabel.torch_data import StoreFrames, StoreStream, collate_frames

NAMES = ["occluded", "visibility"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("torch_attrs")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["person"])
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number"})
    encode_clip(root / "cam.mp4", n_frames=10, width=64, height=48, gop=5)
    ds.add_video(probe(root / "cam.mp4", video_id="cam"))
    rows = []
    for f in range(10):
        # frame f: one box occluded on odd frames with visibility f / 10, one box without attributes
        rows.append({"kind": "box", "label": "person", "start_frame": f, "box": (1.0, 1.0, 20.0, 20.0),
                     "attributes": {"occluded": f % 2 == 1, "visibility": f / 10}})  # fmt: skip
        rows.append({"kind": "box", "label": "person", "start_frame": f, "box": (30.0, 5.0, 50.0, 40.0)})
    ds.add_annotations(rows, "cam")
    ds.build()
    export(ds, root / "store", progress=False)
    return root, ds


def _truth(frame: int) -> list[list[float]]:
    return [[float(frame % 2 == 1), frame / 10], [float("nan"), float("nan")]]


@pytest.mark.parametrize("cls", [StoreFrames, StoreStream])
def test_store_datasets_deliver_attributes_equal_to_frame_samples(world: tuple[Path, Dataset], cls: type) -> None:
    root, ds = world
    dataset = cls(root / "store", with_attributes=NAMES)
    items = [dataset[i] for i in range(len(dataset))] if cls is StoreFrames else list(dataset)
    by_frame = {int(s["frame_index"]): s["attributes"] for s in items}
    assert sorted(by_frame) == list(range(10))
    fs = {int(t["frame_index"]): t["attributes"] for t in FrameSamples(ds, with_attributes=NAMES).targets()}
    for frame, values in by_frame.items():
        assert isinstance(values, torch.Tensor) and values.dtype == torch.float32
        np.testing.assert_allclose(values.numpy(), fs[frame], rtol=0, atol=0)
        np.testing.assert_allclose(values.numpy(), _truth(frame), rtol=1e-6)
    batch = next(iter(DataLoader(dataset, batch_size=4, collate_fn=collate_frames)))
    assert len(batch["attributes"]) == 4 and batch["attributes"][0].shape == (2, 2)


def test_store_frames_refuses_a_filter_value_of_another_type_or_an_undeclared_name(
    world: tuple[Path, Dataset],
) -> None:
    root, ds = world
    match = r"'occluded': value 'true' is text, but attribute 'occluded' is bool on label 'person'"
    with pytest.raises(OptionError, match=match):
        StoreFrames(root / "store", attributes={"occluded": "true"})
    with pytest.raises(OptionError, match=r"value True is bool, but attribute 'visibility' is number"):
        FrameSamples(ds, attributes={"visibility": True})
    with pytest.raises(OptionError, match=r"with_attributes: no label declares attribute 'vis'; declared: occluded"):
        StoreFrames(root / "store", with_attributes="vis")
