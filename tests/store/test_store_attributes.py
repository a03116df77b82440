"""Attributes in a frame store: exported per region, checked like every other array, delivered as FrameSamples does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from tests.media import encode_clip
from vidlabel import Dataset, FrameSamples, export, open_store, probe
from vidlabel.errors import OptionError, SchemaVersionError, StoreCorruptError
from vidlabel.store import StoreSamples, backend_for, find_stores, verify_store

N_FRAMES = 12
NAMES = ["visibility", "occluded"]


def _rows(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Boxes of two labels on every frame, with attributes drawn at random (some rows have none); a few rows
    of a label whose schema declares none."""
    rng = np.random.default_rng(seed)
    rows = []
    for frame in range(N_FRAMES):
        for k in range(int(rng.integers(1, 4))):
            attrs: dict[str, Any] = {}
            if rng.random() < 0.7:
                attrs["occluded"] = bool(rng.random() < 0.5)
            if rng.random() < 0.7:
                attrs["visibility"] = round(float(rng.random()), 3)
            if rng.random() < 0.3:
                attrs["pose"] = str(rng.choice(["left", "right"]))
            row = {
                "kind": "box",
                "label": "person",
                "start_frame": frame,
                "box": (2.0 + 5 * k, 3.0, 20.0 + 5 * k, 30.0),
            }
            if attrs:
                row["attributes"] = attrs
            rows.append(row)
    cars = [{"kind": "box", "label": "car", "start_frame": f, "box": (30.0, 5.0, 50.0, 25.0)} for f in (1, 4)]
    return rows, cars


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store_attrs")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["person", "car"])
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number", "pose": "text"})
    for i, vid in enumerate(("cam1", "cam2")):
        encode_clip(root / f"{vid}.mp4", n_frames=N_FRAMES, width=64, height=48, gop=6)
        ds.add_video(probe(root / f"{vid}.mp4", video_id=vid))
        people, cars = _rows(i)
        ds.add_annotations(people + cars, vid)
    ds.build()
    plain = Dataset.create(root / "plain")
    plain.add_labels(["person"])
    plain.add_video(probe(root / "cam1.mp4", video_id="cam1"))
    plain.add_annotations([{"kind": "box", "label": "person", "start_frame": 2, "box": (1.0, 1.0, 9.0, 9.0)}], "cam1")
    plain.build()
    return root


def _by_annotation(targets: Any) -> dict[int, list[float]]:
    out = {}
    for t in targets:
        values = np.asarray(t["attributes"])
        assert values.dtype == np.float32 and values.shape == (len(t["annotation_ids"]), len(NAMES))
        for ann, row in zip(np.asarray(t["annotation_ids"]).tolist(), values.tolist()):
            out[int(ann)] = [-1.0 if v != v else v for v in row]
    return out


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
def test_store_samples_deliver_the_attributes_frame_samples_deliver(world: Path, tmp_path: Path, fmt: str) -> None:
    ds = Dataset.open(world / "ds")
    export(ds, tmp_path / "out", format=fmt, progress=False)
    store = open_store(tmp_path / "out")
    got = _by_annotation(StoreSamples(store, with_attributes=NAMES).sample(j) for j in range(len(store)))
    want = _by_annotation(FrameSamples(ds, with_attributes=NAMES).targets())
    assert got == want and len(want) == len(ds.annotations())
    # the truth from the rows themselves: NaN (here -1) where a row has none, cars have none
    for r in ds.annotations():
        attrs = r.get("attributes", {})
        expected = [float(attrs[n]) if n in attrs else -1.0 for n in NAMES]
        assert got[r["annotation_id"]] == pytest.approx(expected)
    assert any(v[1] == 1.0 for v in got.values()) and any(v[0] == -1.0 for v in got.values())
    # asked for nothing, no key (the sample contract is unchanged)
    assert "attributes" not in StoreSamples(store).sample(0)
    assert StoreSamples(store, with_attributes=NAMES).describe()["options"]["with_attributes"] == NAMES


def test_a_store_with_attributes_is_version_2_verifies_and_refuses_an_edit(world: Path, tmp_path: Path) -> None:
    export(Dataset.open(world / "ds"), tmp_path / "out", progress=False)
    (folder,) = find_stores(tmp_path / "out")
    attrs, _ = backend_for(folder).read_root()
    assert attrs["format_version"] == 2
    assert verify_store(tmp_path / "out")["ok"]
    video = backend_for(folder).open_video("cam1")
    assert video.attrs["region_attributes"] is True
    raw = bytes(video.array("regions/attr_bytes"))
    video.close()
    assert b'"occluded":true' in raw.replace(b" ", b"")

    (path,) = (folder / "videos").glob("cam1*.h5")
    with h5py.File(path, "r+") as f:
        # one digit of a visibility changed in place: every length and offset still fits
        data = f["regions/attr_bytes"][...]
        i = next(i for i, c in enumerate(data.tolist()) if chr(c) in "12345678")
        data[i] += 1
        f["regions/attr_bytes"][...] = data
    with pytest.raises(StoreCorruptError, match=r"video 'cam1'.*differ from those exported \(labels_key\)"):
        StoreSamples(open_store(tmp_path / "out"), with_attributes=NAMES).sample(0)


def test_a_store_without_attributes_stays_version_1_and_delivers_nan(world: Path, tmp_path: Path) -> None:
    export(Dataset.open(world / "plain"), tmp_path / "out", progress=False)
    (folder,) = find_stores(tmp_path / "out")
    attrs, _ = backend_for(folder).read_root()
    assert attrs["format_version"] == 1
    video = backend_for(folder).open_video("cam1")
    assert "region_attributes" not in video.attrs
    video.close()
    sample = StoreSamples(open_store(tmp_path / "out"), with_attributes=["occluded"]).sample(0)
    assert sample["attributes"].shape == (1, 1) and np.isnan(sample["attributes"]).all()


def test_store_samples_refuse_a_text_attribute_and_bad_names(world: Path, tmp_path: Path) -> None:
    export(Dataset.open(world / "ds"), tmp_path / "out", progress=False)
    store = open_store(tmp_path / "out")
    with pytest.raises(OptionError, match=r"with_attributes must be distinct attribute names"):
        StoreSamples(store, with_attributes=["occluded", "occluded"])
    samples = StoreSamples(store, with_attributes=["pose"])
    with pytest.raises(
        OptionError, match=r"with_attributes: 'pose' is a text attribute \('(left|right)' on annotation"
    ):
        for j in range(len(samples)):
            samples.sample(j)


def test_a_reader_of_version_1_refuses_a_store_with_attributes_by_its_version(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vidlabel.store._discovery as discovery

    export(Dataset.open(world / "ds"), tmp_path / "attrs", progress=False)
    export(Dataset.open(world / "plain"), tmp_path / "plain", progress=False)
    # as a vidlabel from before store attributes: it said the unknown arrays were damage; now it names the version
    monkeypatch.setattr(discovery, "FORMAT_VERSION", 1)
    with pytest.raises(SchemaVersionError, match=r"has format version 2; this vidlabel reads up to 1"):
        open_store(tmp_path / "attrs")
    assert len(open_store(tmp_path / "plain")) == 1
