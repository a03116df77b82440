"""StoreSamples(attributes=...) keeps the same rows as FrameSamples' attribute filter on the same release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import encode_clip
from vidlabel import Dataset, FrameSamples, export, open_store, probe
from vidlabel.errors import OptionError
from vidlabel.store import FrameStore, StoreSamples, backend_for

N_FRAMES = 10
CONDITIONS: list[dict[str, Any]] = [
    {"occluded": False},
    {"occluded": True},
    {"visibility": (">=", 0.5)},
    {"occluded": False, "visibility": (">=", 0.5)},
    {"visibility": ("<", 0.3)},
    {"pose": "left"},
    {"pose": ("!=", "left")},
]


def _person_rows(seed: int) -> list[dict[str, Any]]:
    """1 to 3 person boxes a frame with attributes drawn at random (some rows have none)."""
    rng = np.random.default_rng(seed)
    rows = []
    for frame in range(N_FRAMES):
        for k in range(int(rng.integers(1, 4))):
            attrs: dict[str, Any] = {}
            if rng.random() < 0.7:
                attrs["occluded"] = bool(rng.random() < 0.5)
            if rng.random() < 0.7:
                attrs["visibility"] = round(float(rng.random()), 3)
            if rng.random() < 0.4:
                attrs["pose"] = str(rng.choice(["left", "right"]))
            row = {"kind": "box", "label": "person", "start_frame": frame, "box": (2.0 + 5 * k, 3.0, 20.0, 30.0)}
            if attrs:
                row["attributes"] = attrs
            rows.append(row)
    return rows


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("store_attr_filter")
    ds = Dataset.create(root / "ds")
    ds.add_labels(["person", "car", "bike"])
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number", "pose": "text"})
    # bike declares visibility but no bike row gives one: a visibility condition drops every bike
    ds.set_attribute_schema("bike", {"visibility": "number"})
    for i, vid in enumerate(("cam1", "cam2")):
        encode_clip(root / f"{vid}.mp4", n_frames=N_FRAMES, width=64, height=48, gop=5)
        ds.add_video(probe(root / f"{vid}.mp4", video_id=vid))
        others = [{"kind": "box", "label": "car", "start_frame": f, "box": (30.0, 5.0, 50.0, 25.0)} for f in (1, 6)]
        others.append({"kind": "box", "label": "bike", "start_frame": 8, "box": (40.0, 5.0, 60.0, 25.0)})
        ds.add_annotations(_person_rows(i) + others, vid)
    ds.build()
    export(ds, root / "store", progress=False)
    return root, ds


def _frame_rows(items: Any) -> dict[tuple[str, int], list[int]]:
    return {(s["video_id"], int(s["frame_index"])): s["annotation_ids"].tolist() for s in items}


def _by_hand(ds: Dataset, conditions: dict[str, Any], declaring: dict[str, set[str]]) -> dict[tuple[str, int], list]:
    """The kept rows per frame, from the annotation table filtered in plain Python."""
    ops = {"==": np.equal, "!=": np.not_equal, "<": np.less, ">=": np.greater_equal}
    out: dict[tuple[str, int], list[int]] = {}
    for vid in ("cam1", "cam2"):
        for row in ds.annotations(vid):
            ok = True
            for name, cond in conditions.items():
                op, want = cond if isinstance(cond, tuple) else ("==", cond)
                if row["label"] in declaring[name]:
                    value = row.get("attributes", {}).get(name)
                    ok &= value is not None and bool(ops[op](value, want))
            if ok:
                out.setdefault((vid, row["start_frame"]), []).append(row["annotation_id"])
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.parametrize("conditions", CONDITIONS, ids=str)
def test_store_filter_keeps_the_rows_frame_samples_keeps(world: tuple[Path, Dataset], conditions: dict) -> None:
    root, ds = world
    samples = StoreSamples(open_store(root / "store"), attributes=conditions)
    got = _frame_rows(samples.targets_row(*samples.locate(j)) for j in range(len(samples)))
    want = _frame_rows(FrameSamples(ds, attributes=conditions).targets())
    assert got == want
    declaring = {"occluded": {"person"}, "visibility": {"person", "bike"}, "pose": {"person"}}
    assert got == _by_hand(ds, conditions, declaring)
    assert 0 < len(samples) < len(StoreSamples(open_store(root / "store")))


def test_store_filter_with_every_stored_frame_keeps_the_frames(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    everything = StoreSamples(open_store(root / "store"), frames="stored")
    kept = StoreSamples(open_store(root / "store"), frames="stored", attributes={"occluded": True})
    assert len(kept) == len(everything)
    want = _frame_rows(FrameSamples(ds, attributes={"occluded": True}).targets())
    got = _frame_rows(kept.targets_row(*kept.locate(j)) for j in range(len(kept)))
    assert {k: v for k, v in got.items() if v} == want


def test_a_store_without_the_recorded_schema_uses_the_labels_holding_each_attribute(
    world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ds = world
    attrs, _ = backend_for(root / "store").read_root()
    assert attrs["attribute_schema"]["bike"] == {"visibility": "number"}
    original = FrameStore.attrs.fget
    assert original is not None
    # as a store exported before the schema was recorded
    monkeypatch.setattr(FrameStore, "attrs", property(lambda s: {k: v for k, v in original(s).items()
                                                                    if k != "attribute_schema"}))  # fmt: skip
    samples = StoreSamples(open_store(root / "store"), attributes={"visibility": (">=", 0.5)})
    got = _frame_rows(samples.targets_row(*samples.locate(j)) for j in range(len(samples)))
    # no bike row holds visibility, so the condition concerns people only and bikes stay
    want = _by_hand(ds, {"visibility": (">=", 0.5)}, {"visibility": {"person"}})
    assert got == want
    assert any(8 == frame for (_vid, frame) in got)


def test_store_filter_refuses_an_undeclared_attribute(world: tuple[Path, Dataset]) -> None:
    root, ds = world
    match = r"no label declares attribute 'ocluded'; declared: occluded, pose, visibility"
    with pytest.raises(OptionError, match=match):
        StoreSamples(open_store(root / "store"), attributes={"ocluded": False})
    with pytest.raises(OptionError, match=match):
        FrameSamples(ds, attributes={"ocluded": False})


@pytest.mark.parametrize("bad", [{"occluded": (">", True)}, {"visibility": ("~", 1)}, ["occluded"]], ids=str)
def test_store_filter_refuses_a_malformed_condition(world: tuple[Path, Dataset], bad: Any) -> None:
    root, _ds = world
    with pytest.raises(OptionError, match=r"attributes"):
        StoreSamples(open_store(root / "store"), attributes=bad)


def test_describe_records_the_filter(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    samples = StoreSamples(open_store(root / "store"), attributes={"visibility": (">=", 0.5)})
    assert samples.describe()["options"]["attributes"] == {"visibility": [">=", 0.5]}


@pytest.mark.parametrize(
    ("conditions", "match"),
    [
        (
            {"visibility": "high"},
            r"'visibility': value 'high' is text, but attribute 'visibility' is number on label 'bike', number on label 'person'",
        ),
        ({"visibility": True}, r"value True is bool, but attribute 'visibility' is number on label 'bike'"),
        ({"visibility": ("!=", "x")}, r"value 'x' is text, but attribute 'visibility' is number"),
        ({"occluded": "true"}, r"'occluded': value 'true' is text, but attribute 'occluded' is bool on label 'person'"),
        ({"occluded": 1}, r"'occluded': value 1 is number, but attribute 'occluded' is bool on label 'person'"),
        ({"pose": 0.5}, r"'pose': value 0.5 is number, but attribute 'pose' is text on label 'person'"),
    ],
    ids=str,
)
def test_filter_refuses_a_value_of_another_type_than_declared(
    world: tuple[Path, Dataset], conditions: dict[str, Any], match: str
) -> None:
    root, ds = world
    with pytest.raises(OptionError, match=match):
        FrameSamples(ds, attributes=conditions)
    with pytest.raises(OptionError, match=match):
        StoreSamples(open_store(root / "store"), attributes=conditions)


def test_filter_types_come_from_the_rows_without_a_recorded_schema(
    world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ds = world
    original = FrameStore.attrs.fget
    assert original is not None
    monkeypatch.setattr(FrameStore, "attrs", property(lambda s: {k: v for k, v in original(s).items()
                                                                    if k != "attribute_schema"}))  # fmt: skip
    with pytest.raises(OptionError, match=r"value 1 is number, but attribute 'occluded' is bool on label 'person'"):
        StoreSamples(open_store(root / "store"), attributes={"occluded": 1})


@pytest.mark.parametrize("names", [["nope"], "vis", ["visibility", "ocluded"]], ids=str)
def test_with_attributes_refuses_an_undeclared_attribute(world: tuple[Path, Dataset], names: Any) -> None:
    root, ds = world
    bad = names if isinstance(names, str) else names[-1]
    match = rf"with_attributes: no label declares attribute '{bad}'; declared: occluded, pose, visibility"
    with pytest.raises(OptionError, match=match):
        FrameSamples(ds, with_attributes=names)
    with pytest.raises(OptionError, match=match):
        StoreSamples(open_store(root / "store"), with_attributes=names)
