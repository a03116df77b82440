"""Label formats are records in one registry: a format defined outside vidlabel (tests/formats/toy_format.py)
and registered in one line is read, written, offered by the command line and checked like the shipped ones;
the docs' table is the registry's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.formats.toy_format import FORMAT
from tests.formats_util import dataset
from vidlabel.cli import main
from vidlabel.errors import FormatError, VidlabelWarning
from vidlabel.formats import FORMATS, export_labels, import_labels
from vidlabel.formats._registry import format_table, register_format

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy_registered() -> Iterator[None]:
    register_format(FORMAT)
    yield
    FORMATS.pop(FORMAT.name)


def test_a_registered_format_imports_and_exports(tmp_path: Path, toy_registered: None) -> None:
    ds = dataset(tmp_path / "ds")
    src = tmp_path / "boxes.csv"
    src.write_text("3,person,1,2,11,12\n7,car,5,5,20,30.5\n")
    report = import_labels(ds, "boxes-csv", src, video_id="cam1")
    assert report.videos["cam1"].counts == {"box": 2}
    got = sorted((r["start_frame"], r["label"], tuple(r["box"])) for r in ds.annotations("cam1"))
    assert got == [(3, "person", (1.0, 2.0, 11.0, 12.0)), (7, "car", (5.0, 5.0, 20.0, 30.5))]
    ds.build()
    out = tmp_path / "out.csv"
    written = export_labels(ds, "boxes-csv", out)
    assert written.counts["box"] == 2 and out.read_text().splitlines() == ["3,person,1,2,11,12", "7,car,5,5,20,30.5"]


def test_a_registered_format_is_checked_as_the_others(tmp_path: Path, toy_registered: None) -> None:
    ds = dataset(tmp_path / "ds")
    src = tmp_path / "boxes.csv"
    src.write_text("3,person,1,2,11,12\n")
    with pytest.raises(FormatError, match=r"format 'boxes-csv' takes no option\(s\) frames \(its options: none"):
        import_labels(ds, "boxes-csv", src, video_id="cam1", frames="digits")
    src.write_text("3,bus,1,2,11,12\n")
    with pytest.raises(FormatError, match=r"label\(s\) 'bus' are not in the dataset"):
        import_labels(ds, "boxes-csv", src, video_id="cam1")
    src.write_text("99,person,1,2,11,12\n")
    with pytest.raises(FormatError, match=r"boxes.csv line 1: frame 99 \(0-based\) is outside video 'cam1'"):
        import_labels(ds, "boxes-csv", src, video_id="cam1")
    src.write_text("")
    with pytest.warns(VidlabelWarning, match=r"yields no rows: nothing to import; expected lines 'frame,label,x0"):
        import_labels(ds, "boxes-csv", src, video_id="cam1")
    assert ds.annotations() == []


def test_the_command_line_offers_a_registered_format(
    tmp_path: Path, toy_registered: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    assert "boxes-csv: a toy: one video's boxes" in capsys.readouterr().out
    dataset(tmp_path / "ds")
    src = tmp_path / "boxes.csv"
    src.write_text("3,person,1,2,11,12\n")
    assert main(["import", str(tmp_path / "ds"), "boxes-csv", str(src), "--video", "cam1"]) == 0
    assert main(["build", str(tmp_path / "ds")]) == 0
    out = tmp_path / "out.csv"
    assert main(["export-labels", str(tmp_path / "ds"), "boxes-csv", str(out)]) == 0
    assert out.read_text() == "3,person,1,2,11,12\n"


def test_an_unknown_format_names_the_registered_ones(tmp_path: Path, toy_registered: None) -> None:
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=r"unknown format 'csv'; known: boxes-csv, coco-vid, cvat-video, "):
        import_labels(ds, "csv", tmp_path / "x.csv")


def test_a_format_name_registered_twice_is_refused(toy_registered: None) -> None:
    from dataclasses import replace

    with pytest.raises(FormatError, match=r"label format 'boxes-csv' is registered already"):
        register_format(replace(FORMAT, summary="another"))
    assert register_format(FORMAT) is FORMAT  # the same record again: nothing changes


def test_the_docs_table_is_the_registry() -> None:
    text = (ROOT / "docs" / "reference" / "label-formats.md").read_text()
    table = re.search(r"<!-- formats table: start -->\n(.*)<!-- formats table: end -->", text, re.S)
    assert table is not None and table.group(1) == format_table()
    assert all(f"| `{name}` |" in table.group(1) for name in FORMATS)
