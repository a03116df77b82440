"""Attributes of annotation rows: the per-label schema, checked on the way in, stored, released, chosen by."""

from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.formats_util import dataset
from vidlabel import FrameSamples
from vidlabel.errors import AnnotationError, OptionError

SCHEMA = {"occluded": "bool", "visibility": "number", "pose": "text"}


def _box(frame: int, attributes: dict | None = None, label: str = "person", x: float = 1.0) -> dict:
    row = {"kind": "box", "label": label, "start_frame": frame, "box": (x, 2.0, x + 10.0, 12.0)}
    if attributes is not None:
        row["attributes"] = attributes
    return row


def _ds(path: Path):
    ds = dataset(path)
    ds.set_attribute_schema("person", SCHEMA)
    return ds


def test_schema_is_per_label_grows_and_keeps_its_types(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    assert ds.set_attribute_schema("car", {"truncated": "bool"}) == {"truncated": "bool"}
    assert ds.set_attribute_schema("person", {"age": "text"}) == {**SCHEMA, "age": "text"}
    assert ds.attribute_schema() == {"person": {**SCHEMA, "age": "text"}, "car": {"truncated": "bool"}}
    with pytest.raises(AnnotationError, match=r"attribute 'visibility' of label 'person' is 'number': a schema keeps"):
        ds.set_attribute_schema("person", {"visibility": "text"})
    with pytest.raises(AnnotationError, match=r"unknown label 'dog'; known: person, car, goal"):
        ds.set_attribute_schema("dog", {"x": "bool"})
    with pytest.raises(AnnotationError, match=r"has type 'float'; allowed: bool, number, text"):
        ds.set_attribute_schema("car", {"x": "float"})
    assert ds.attribute_schema()["car"] == {"truncated": "bool"}


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("a=b", r"is 'a=b', which holds '=' at position 1"),
        ("a,b", r"is 'a,b', which holds ',' at position 1"),
        (" pose", r"is ' pose', which holds ' ' at position 0"),
        ("po\u2028se", r"is 'po\\u2028se', which holds '\\u2028' at position 2"),
        ("po\x00se", r"is 'po\\x00se', which holds '\\x00' at position 2"),
        ("", r"is ''"),
        ("n" * 65, r"is 'nnnnnnnn.*\.\.\."),
        (3, r"is 3"),
    ],
)
def test_an_attribute_name_set_and_show_cannot_read_is_refused(tmp_path: Path, name: object, why: str) -> None:
    ds = _ds(tmp_path / "ds")
    with pytest.raises(
        AnnotationError, match=r"attribute name of label 'car' " + why + r"; allowed: .*at most 64"
    ) as info:
        ds.set_attribute_schema("car", {name: "bool"})
    assert isinstance(info.value, ValueError) and len(str(info.value)) < 400
    assert ds.set_attribute_schema("car", {"n" * 64: "bool"}) == {"n" * 64: "bool"}
    assert ds.attribute_schema() == {"person": SCHEMA, "car": {"n" * 64: "bool"}}


def test_a_schema_that_is_not_a_mapping_is_refused_naming_the_types(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    with pytest.raises(
        AnnotationError, match=r"schema of label 'person' is 'occluded'; expected a mapping .* bool, number, text"
    ):
        ds.set_attribute_schema("person", "occluded")  # type: ignore[arg-type]
    assert ds.attribute_schema() == {"person": SCHEMA}


def test_a_huge_value_is_echoed_cut_short(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    ids = ds.add_annotations([_box(0)], "cam1")
    with pytest.raises(AnnotationError, match=r"attribute 'pose' = 'xxxxxxxxxx.*\.\.\.: expected a string") as info:
        ds.set_attributes(ids, {"pose": "x" * 100_000})
    assert len(str(info.value)) < 400


def test_rows_carry_attributes_and_rows_without_keep_the_spec_keys(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    ds.add_annotations([_box(0, {"occluded": True, "visibility": 0.25, "pose": "left"}), _box(1), _box(2, {})], "cam1")
    rows = ds.annotations()
    assert rows[0]["attributes"] == {"occluded": True, "visibility": 0.25, "pose": "left"}
    assert "attributes" not in rows[1] and "attributes" not in rows[2]
    # an integer number is stored as the number it is
    ds.add_annotations([_box(3, {"visibility": 1, "occluded": None})], "cam1")
    assert ds.annotations()[-1]["attributes"] == {"visibility": 1.0}


@pytest.mark.parametrize(
    ("attributes", "label", "match"),
    [
        ({"visibility": "high"}, "person", r"attribute 'visibility' is 'high': expected a finite number"),
        ({"visibility": math.nan}, "person", r"attribute 'visibility' is nan: expected a finite number"),
        ({"occluded": 1}, "person", r"attribute 'occluded' is 1: expected true or false"),
        ({"visibility": True}, "person", r"attribute 'visibility' is True: expected a finite number"),
        ({"pose": "x" * 201}, "person", r"attribute 'pose' is 'xxx.*expected a string of at most 200 characters"),
        ({"colour": "red"}, "person", r"attribute 'colour' is not in the schema"),
        ({"occluded": True}, "car", r"attribute 'occluded' is not in the schema \(label 'car' has attributes \(none\)"),
        (["occluded"], "person", r"\['occluded'\] is not a mapping of attribute name -> value"),
    ],
)
def test_bad_attribute_values_are_refused_naming_row_field_value_and_schema(
    tmp_path: Path, attributes, label: str, match: str
) -> None:
    ds = _ds(tmp_path / "ds")
    rows = [_box(0, {"occluded": False}), _box(1, attributes, label=label)]
    with pytest.raises(
        AnnotationError, match=r"row 1 \(0-based\), field 'attributes' \(video 'cam1'\): " + match
    ) as info:
        ds.add_annotations(rows, "cam1")
    if label == "person":
        assert "label 'person' has attributes occluded: bool, pose: text, visibility: number" in str(info.value)
    assert ds.annotations() == []


def test_a_release_keeps_attributes_and_its_id_changes_with_one(tmp_path: Path) -> None:
    ids = []
    for k, vis in enumerate((0.5, 0.5, 0.75)):
        ds = _ds(tmp_path / f"ds{k}")
        ds.add_annotations([_box(0, {"visibility": vis}), _box(1, {"occluded": True})], "cam1")
        rel, _ = ds.build()
        ids.append(rel.release_id)
        reread = ds.release(rel.release_id)
        assert [reread.table.attributes(i) for i in range(2)] == [{"visibility": vis}, {"occluded": True}]
        with h5py.File(tmp_path / f"ds{k}" / "releases" / f"{rel.release_id}.h5") as f:
            assert int(f.attrs["format_version"]) == 2 and "attr_bytes" in f["table"]
    assert ids[0] == ids[1] != ids[2]
    plain = dataset(tmp_path / "plain")
    plain.add_annotations([_box(0)], "cam1")
    rel, _ = plain.build()
    with h5py.File(tmp_path / "plain" / "releases" / f"{rel.release_id}.h5") as f:
        # a release without attributes keeps the layout (and id) older vidlabels write and read
        assert int(f.attrs["format_version"]) == 1 and "attr_bytes" not in f["table"]


_values = st.fixed_dictionaries(
    {},
    optional={
        "occluded": st.booleans(),
        "visibility": st.floats(-1e6, 1e6, allow_nan=False),
        "pose": st.text(max_size=20),
    },
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_values, min_size=1, max_size=8))
def test_attributes_round_trip_through_the_dataset_and_its_release(tmp_path_factory, values: list[dict]) -> None:
    ds = _ds(tmp_path_factory.mktemp("attrs") / "ds")
    ds.add_annotations([_box(k, v) for k, v in enumerate(values)], "cam1")
    stored = [r.get("attributes", {}) for r in ds.annotations()]
    assert stored == values
    rel, _ = ds.build()
    table = ds.release(rel.release_id).table
    assert [table.attributes(i) for i in range(len(table))] == values


def test_frame_samples_filter_by_attributes_equals_filtering_the_table_by_hand(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    rng = np.random.default_rng(3)
    rows = []
    for k in range(40):
        attrs = {}
        if rng.random() < 0.8:
            attrs["occluded"] = bool(rng.random() < 0.5)
        if rng.random() < 0.8:
            attrs["visibility"] = round(float(rng.random()), 2)
        rows.append(_box(int(rng.integers(0, 30)), attrs or None, label="person", x=k))
    rows += [_box(int(f), label="car", x=j) for j, f in enumerate(rng.integers(0, 30, 5))]
    ds.add_annotations(rows, "cam1")
    ds.build()
    fs = FrameSamples(ds, attributes={"occluded": False, "visibility": (">=", 0.5)}, with_attributes=["visibility"])
    got = sorted(int(a) for t in fs.targets() for a in t["annotation_ids"])

    def passes(r: dict) -> bool:
        if r["label"] != "person":  # the condition concerns labels whose schema has the attributes
            return True
        a = r.get("attributes", {})
        return a.get("occluded") is False and a.get("visibility") is not None and a["visibility"] >= 0.5

    want = sorted(r["annotation_id"] for r in ds.annotations() if passes(r))
    assert got == want and 0 < len(want) < len(ds.annotations())
    by_id = {r["annotation_id"]: r for r in ds.annotations()}
    for t in fs.targets():
        for ann, vis in zip(t["annotation_ids"].tolist(), t["attributes"][:, 0].tolist()):
            expected = by_id[ann].get("attributes", {}).get("visibility")
            assert (math.isnan(vis) and expected is None) or vis == pytest.approx(expected)


def test_frame_samples_attribute_options_are_checked(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    ds.add_annotations([_box(0, {"pose": "left"})], "cam1")
    ds.build()
    with pytest.raises(OptionError, match=r"attributes: condition 'pose': \('<', 'left'\); expected a value"):
        FrameSamples(ds, attributes={"pose": ("<", "left")})
    with pytest.raises(OptionError, match=r"with_attributes: 'pose' is a text attribute \('left' on annotation"):
        FrameSamples(ds, with_attributes=["pose"])
    with pytest.raises(OptionError, match=r"with_attributes must be distinct attribute names"):
        FrameSamples(ds, with_attributes=["pose", "pose"])
    assert len(FrameSamples(ds, attributes={"pose": "left"})) == 1
    assert len(FrameSamples(ds, attributes={"pose": "right"})) == 0


def test_validate_shows_each_labels_attributes_and_how_many_rows_give_them(tmp_path: Path, capsys) -> None:
    from vidlabel.cli import main

    ds = _ds(tmp_path / "ds")
    ds.add_annotations([_box(0, {"occluded": True}), _box(1, {"occluded": False, "visibility": 0.5}), _box(2)], "cam1")
    assert main(["validate", str(tmp_path / "ds")]) == 0
    out = capsys.readouterr().out
    assert "attributes: person (3 rows): occluded (bool) on 2, pose (text) on 0, visibility (number) on 1" in out


def test_an_attribute_schema_moves_the_dataset_to_schema_version_2_and_a_new_one_stays_at_1(tmp_path: Path) -> None:
    import sqlite3

    from vidlabel.dataset._dataset import DB_NAME, SCHEMA_VERSION

    ds = dataset(tmp_path / "ds")

    def version() -> int:
        con = sqlite3.connect(tmp_path / "ds" / DB_NAME)
        try:
            return int(con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
        finally:
            con.close()

    # a dataset without attributes stays readable by a vidlabel that reads version 1
    assert version() == 1
    ds.set_attribute_schema("person", {"occluded": "bool"})
    assert version() == SCHEMA_VERSION == 2


def test_a_filter_on_an_attribute_no_label_declares_is_refused_naming_the_declared_ones(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    ds.add_annotations([_box(0, {"occluded": True}), _box(1, {"occluded": False})], "cam1")
    ds.build()
    # a misspelt name used to keep every row without a word
    with pytest.raises(
        OptionError, match=r"no label declares attribute 'ocluded'; declared: occluded, pose, visibility"
    ):
        FrameSamples(ds, attributes={"ocluded": False})
    assert len(FrameSamples(ds, attributes={"occluded": False})) == 1


def test_a_filter_on_a_release_without_attributes_says_none_are_declared(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    ds.add_annotations([_box(0)], "cam1")
    ds.build()
    with pytest.raises(OptionError, match=r"no label declares attribute 'occluded'; declared: none"):
        FrameSamples(ds, attributes={"occluded": False})


def test_set_attributes_merges_checks_and_changes_nothing_on_a_bad_value(tmp_path: Path) -> None:
    ds = _ds(tmp_path / "ds")
    ids = ds.add_annotations([_box(0, {"occluded": True, "pose": "left"}), _box(1), _box(2, label="car")], "cam1")
    ds.set_attributes(ids[:2], {"visibility": 0.5, "pose": None})
    got = {r["annotation_id"]: r.get("attributes") for r in ds.annotations()}
    assert got == {ids[0]: {"occluded": True, "visibility": 0.5}, ids[1]: {"visibility": 0.5}, ids[2]: None}
    before = ds.annotations()
    with pytest.raises(AnnotationError, match=rf"annotation {ids[0]}: attribute 'visibility' = 'high': expected a fin"):
        ds.set_attributes(ids[:2], {"visibility": "high"})
    with pytest.raises(AnnotationError, match=rf"annotation {ids[2]}: attribute 'occluded' = True: is not in the sch"):
        ds.set_attributes(ids, {"occluded": True})
    with pytest.raises(AnnotationError, match=r"set_attributes: values must be a mapping of attribute names"):
        ds.set_attributes(ids, ["occluded"])  # type: ignore[arg-type]
    assert ds.annotations() == before
