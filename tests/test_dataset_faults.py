"""A full disk and a damaged database (issue 12, items 11 and 12): one clear line saying what failed, that nothing
was lost and how to resume; no traceback, nothing half written. The disk is filled by test hooks: SQLite's own
error raised just before COMMIT, ENOSPC from the release writer, a connection that cannot be opened."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest

from vidlabel import Dataset
from vidlabel.cli import main
from vidlabel.dataset import _dataset, _db
from vidlabel.errors import DatasetError

META = json.dumps({"frame_count": 40, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48})
ROWS = [{"kind": "box", "label": "car", "start_frame": n, "box": [1, 2, 11, 22]} for n in range(5)]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "ds"
    assert main(["create", str(path)]) == 0
    assert main(["add-labels", str(path), "car"]) == 0
    assert main(["add-video", str(path), str(tmp_path / "cam1.mp4"), "--metadata", META]) == 0
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def fill_disk_at(operation: str):  # type: ignore[no-untyped-def]
    def hook(op: str) -> None:
        if op == operation:
            raise sqlite3.OperationalError("database or disk is full")

    return hook


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("vidlabel: error: ")
    return err


def test_disk_full_in_add_annotations(dataset: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    monkeypatch.setattr(_dataset, "_before_commit", fill_disk_at("add_annotations"))
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 1
    err = one_line_error(capsys)
    assert err == (
        f"vidlabel: error: cannot add-annotations in dataset {dataset}: the disk is full (database or disk is full). "
        "Nothing was lost: the change was rolled back and the dataset is as it was before the command; free space "
        "and run the same command again\n"
    )
    assert len(Dataset.open(dataset).snapshot().table) == 0
    with pytest.raises(DatasetError, match=r"cannot add-annotations .* the disk is full"):
        Dataset.open(dataset).add_annotations(ROWS, "cam1")
    monkeypatch.setattr(_dataset, "_before_commit", None)  # space freed: the same command resumes
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    assert len(Dataset.open(dataset).snapshot().table) == len(ROWS)


def test_disk_full_in_build(dataset: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    capsys.readouterr()

    def no_space(*args: object, **kwargs: object) -> bool:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_dataset, "write_release", no_space)
    assert main(["build", str(dataset)]) == 1
    err = one_line_error(capsys)
    assert f"cannot build in dataset {dataset}: writing the release file {dataset}/releases/r" in err
    assert "[Errno 28] No space left on device; the disk is full). Nothing was lost: the dataset is unchanged" in err
    assert err.endswith("free space and run `vidlabel build` again\n")
    assert Dataset.open(dataset).releases() == [] and list((dataset / "releases").iterdir()) == []
    monkeypatch.undo()

    monkeypatch.setattr(_dataset, "_before_commit", fill_disk_at("build"))  # the release file fits, its record not
    assert main(["build", str(dataset)]) == 1
    assert "cannot build in dataset" in one_line_error(capsys)
    assert Dataset.open(dataset).releases() == []
    monkeypatch.setattr(_dataset, "_before_commit", None)
    assert main(["build", str(dataset)]) == 0
    assert len(Dataset.open(dataset).releases()) == 1


def test_a_database_that_cannot_be_opened_is_not_called_not_a_dataset(dataset: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    real_connect = sqlite3.connect

    def full(*args: object, **kwargs: object) -> sqlite3.Connection:
        con = real_connect(*args, **kwargs)  # type: ignore[arg-type]
        con.close()
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_db.sqlite3, "connect", full)
    for command in ("releases", "build", "info"):
        assert main([command, str(dataset)]) == 1
        err = one_line_error(capsys)
        assert "is not a vidlabel dataset" not in err
        assert err.startswith(f"vidlabel: error: cannot read dataset {dataset}: SQLite could not open")
        assert "(disk I/O error). Nothing was changed; if the disk is full, free space and run the command again" in err


def damage(dataset: Path) -> None:
    """Overwrite every database page after the first two (the header and the meta table) with garbage."""
    Dataset.open(dataset).close()
    db = dataset / _db.DB_NAME
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[2 * page :] = b"\xa5" * (len(data) - 2 * page)
    db.write_bytes(bytes(data))


def test_a_damaged_database_gives_one_line_in_info_and_validate(dataset: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    damage(dataset)
    capsys.readouterr()
    for command in ("info", "validate", "build"):
        assert main([command, str(dataset)]) == 1
        err = one_line_error(capsys)
        assert f"the database of dataset {dataset} is damaged" in err and "malformed" in err
        assert "Restore vidlabel.sqlite from a backup" in err
