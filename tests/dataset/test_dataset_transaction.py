"""``Dataset.transaction()``: the public block whose writes are one transaction (label importers use it)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.formats_util import dataset


def test_a_block_that_raises_writes_nothing(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    with pytest.raises(RuntimeError, match="stop"), ds.transaction():
        ds.add_labels(["bus"])
        ds.add_annotations([{"kind": "box", "label": "bus", "start_frame": 0, "box": (1, 1, 5, 5)}], "cam1")
        raise RuntimeError("stop")
    assert "bus" not in ds.labels() and ds.annotations() == []


def test_a_block_commits_every_write_at_its_end_and_a_block_inside_joins_it(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    with ds.transaction():
        ds.add_labels(["bus"])
        with ds.transaction():
            ids = ds.add_annotations([{"kind": "box", "label": "bus", "start_frame": 2, "box": (1, 1, 5, 5)}], "cam1")
        ds.add_annotations([{"kind": "box", "label": "car", "start_frame": 3, "box": (1, 1, 5, 5)}], "cam1")
    assert "bus" in ds.labels()
    assert sorted(r["start_frame"] for r in ds.annotations("cam1")) == [2, 3] and len(ids) == 1
    with pytest.raises(RuntimeError, match="stop"), ds.transaction():
        with ds.transaction():
            ds.add_labels(["tram"])
        raise RuntimeError("stop")  # the inner block's writes go with the outer block
    assert "tram" not in ds.labels()


def test_warnings_of_rows_name_their_source_and_the_callers_line(tmp_path: Path) -> None:
    ds = dataset(tmp_path / "ds")
    row = {"kind": "box", "label": "car", "start_frame": 3, "box": (1, 1, 5, 5)}
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ds.add_annotations([row, dict(row)], "cam1", source=("boxes.csv", lambda i: f"line {i + 10}"))
    (w,) = got
    assert "line 10 and line 11 of boxes.csv are the same annotation" in str(w.message)
    assert w.filename == __file__  # the user's call, not vidlabel's inside
