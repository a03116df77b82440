"""``vidlabel attributes DATASET show | declare | set``: the attribute schema and the rows' attributes from the shell."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.formats_util import dataset
from vidlabel import Dataset
from vidlabel.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _box(frame: int, label: str = "person") -> dict:
    return {"kind": "box", "label": label, "start_frame": frame, "box": (1.0, 2.0, 11.0, 12.0)}


@pytest.fixture
def ds_path(tmp_path: Path) -> Path:
    ds = dataset(tmp_path / "ds")
    ds.add_annotations([_box(0), _box(1), _box(2, "car")], "cam1")
    return tmp_path / "ds"


def test_declare_then_show_gives_the_schema(ds_path: Path, capsys) -> None:
    code, out, err = run(capsys, "attributes", ds_path, "declare", "person", "occluded", "truncated", "--type", "bool")
    assert code == 0 and err == "" and "label 'person': declared 2 new attributes" in out
    assert run(capsys, "attributes", ds_path, "declare", "person", "visibility", "--type", "number")[0] == 0
    assert run(capsys, "attributes", ds_path, "declare", "car", "colour", "--type", "text")[0] == 0
    assert Dataset.open(ds_path).attribute_schema() == {
        "person": {"occluded": "bool", "truncated": "bool", "visibility": "number"},
        "car": {"colour": "text"},
    }
    code, out, _ = run(capsys, "attributes", ds_path, "show")
    assert out.splitlines() == ["car: colour (text)", "person: occluded (bool), truncated (bool), visibility (number)"]


def test_set_reads_each_value_as_its_declared_type_and_remove_drops_one(ds_path: Path, capsys) -> None:
    ds = Dataset.open(ds_path)
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number", "pose": "text"})
    ids = [r["annotation_id"] for r in ds.annotations() if r["label"] == "person"]
    code, out, err = run(
        capsys, "attributes", ds_path, "set", "--ids", ",".join(map(str, ids)), "occluded=yes", "visibility=0.25",
        "pose=walking left",
    )  # fmt: skip
    assert code == 0 and err == "" and "on 2 annotations" in out
    got = {r["annotation_id"]: r.get("attributes") for r in Dataset.open(ds_path).annotations()}
    assert [got[i] for i in ids] == [{"occluded": True, "visibility": 0.25, "pose": "walking left"}] * 2
    assert run(capsys, "attributes", ds_path, "set", "--ids", str(ids[0]), "--remove", "pose", "occluded=0")[0] == 0
    got = {r["annotation_id"]: r.get("attributes") for r in Dataset.open(ds_path).annotations()}
    assert got[ids[0]] == {"occluded": False, "visibility": 0.25}
    assert got[ids[1]] == {"occluded": True, "visibility": 0.25, "pose": "walking left"}


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["set", "--ids", "{person}", "occluded=maybe"], r"attribute 'occluded' is a bool: 'maybe' is none of true"),
        (
            ["set", "--ids", "{person}", "visibility=high"],
            r"attribute 'visibility' is a number: 'high' is not a finite",
        ),
        (
            ["set", "--ids", "{person}", "ocluded=true"],
            r"no label declares attribute 'ocluded'; declared: occluded, vis",
        ),
        (["set", "--ids", "{person}", "occluded"], r"'occluded' is not NAME=VALUE"),
        (["set", "--ids", "{person}"], r"nothing to set: give NAME=VALUE pairs or --remove NAME"),
        (
            ["set", "--ids", "{car}", "occluded=true"],
            r"annotation \d+: attribute 'occluded' = True: is not in the sche",
        ),
        (["set", "--ids", "999", "occluded=true"], r"set_attributes: .*999"),
        (["declare", "person", "occluded", "--type", "text"], r"attribute 'occluded' of label 'person' is 'bool'"),
        (["declare", "dog", "x", "--type", "bool"], r"unknown label 'dog'; known: person, car, goal"),
    ],
)
def test_errors_are_one_line_and_change_nothing(ds_path: Path, capsys, argv: list[str], match: str) -> None:
    ds = Dataset.open(ds_path)
    ds.set_attribute_schema("person", {"occluded": "bool", "visibility": "number"})
    ids = {
        lab: str(next(r["annotation_id"] for r in ds.annotations() if r["label"] == lab)) for lab in ("person", "car")
    }
    before = ds.annotations()
    code, out, err = run(capsys, "attributes", ds_path, *[a.format(**ids) for a in argv])
    assert code == 1 and out == "" and len(err.splitlines()) == 1 and err.startswith("vidlabel: error: ")
    assert re.search(match, err), err
    assert Dataset.open(ds_path).annotations() == before


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["declare", "person", "x", "--type", "float"], r"argument --type: invalid choice: 'float'"),
        (["set", "--ids", "a,b", "x=1"], r"argument --ids: 'a,b' is not a comma-separated list of annotation ids"),
        (["set", "x=1"], r"the following arguments are required: --ids"),
        ([], r"the following arguments are required: ACTION"),
    ],
)
def test_bad_arguments_exit_2(ds_path: Path, capsys, argv: list[str], match: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["attributes", str(ds_path), *argv])
    assert info.value.code == 2 and re.search(match, capsys.readouterr().err)


def test_help_names_the_actions_and_the_value_syntax(capsys) -> None:
    for argv, words in [
        (["attributes", "--help"], ["show", "declare", "set", "DATASET"]),
        (["attributes", "ds", "set", "--help"], ["NAME=VALUE", "--remove", "--ids", "true/false", "number"]),
        (["attributes", "ds", "declare", "--help"], ["LABEL", "NAME", "{bool,number,text}"]),
    ]:
        with pytest.raises(SystemExit) as info:
            main(argv)
        text = capsys.readouterr().out
        assert info.value.code == 0 and all(w in text for w in words), text


def test_a_huge_value_is_echoed_cut_short(ds_path: Path, capsys) -> None:
    ds = Dataset.open(ds_path)
    ds.set_attribute_schema("person", {"pose": "text", "visibility": "number", "occluded": "bool"})
    ids = [r["annotation_id"] for r in ds.annotations() if r["label"] == "person"]
    for pair in ("pose=" + "x" * 100_000, "visibility=" + "9" * 100_000, "occluded=" + "y" * 100_000):
        code, out, err = run(capsys, "attributes", ds_path, "set", "--ids", ids[0], pair)
        assert code != 0 and out == ""
        assert re.search(r"attribute '\w+' (= |is (a \w+: )?)'" + pair[pair.index("=") + 1] * 10, err), err
        assert max(len(line) for line in err.splitlines()) < 400
    assert all("attributes" not in r or r["attributes"] == {} for r in Dataset.open(ds_path).annotations())


def test_removing_an_attribute_no_label_declares_is_refused(ds_path: Path, capsys) -> None:
    ds = Dataset.open(ds_path)
    ds.set_attribute_schema("person", {"pose": "text"})
    code, out, err = run(capsys, "attributes", ds_path, "set", "--ids", 1, "--remove", "nosuch")
    assert code != 0 and out == ""
    assert "no label declares attribute 'nosuch'; declared: pose" in err


@pytest.mark.parametrize("name", ["a=b", "a,b", "two words", "tab\there", "bell\x07", "n" * 65])
def test_declare_refuses_a_name_set_and_show_cannot_read(ds_path: Path, capsys, name: str) -> None:
    code, out, err = run(capsys, "attributes", ds_path, "declare", "person", name, "--type", "text")
    assert code != 0 and out == "" and "allowed: a non-empty string of at most 64 characters" in err
    assert Dataset.open(ds_path).attribute_schema() == {}
