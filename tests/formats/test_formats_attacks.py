"""Hostile label files and output paths: what an attacker plants or writes is refused, never followed."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from tests.formats_util import dataset
from vidlabel.cli import main
from vidlabel.errors import FormatError
from vidlabel.formats import export_labels

#: Each label format's export target for a release of one video, and the file it writes there.
EXPORT_TARGETS = {
    "mot": ("out", "out/cam1/gt/gt.txt"),
    "cvat-video": ("out.xml", "out.xml"),
    "ytvis": ("out.json", "out.json"),
    "coco-vid": ("out.json", "out.json"),
    "label-studio": ("out.json", "out.json"),
}


def _built(tmp_path: Path):
    ds = dataset(tmp_path / "ds")
    ds.add_annotations(
        [{"kind": "box", "label": "car", "start_frame": f, "box": (1, 2, 9, 9), "track_id": 0} for f in (0, 1)], "cam1"
    )
    ds.build()
    return ds


@pytest.mark.parametrize("fmt", sorted(EXPORT_TARGETS))
def test_a_symlink_planted_at_the_old_temporary_name_is_not_followed(tmp_path: Path, fmt: str) -> None:
    # before: the export wrote OUT + ".partial" with a plain open, so a symlink planted there made it
    # overwrite the link's target outside the folder, and OUT was left a symlink to it
    ds = _built(tmp_path)
    out, written = (tmp_path / "shared" / p for p in EXPORT_TARGETS[fmt])
    written.parent.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (written.parent / (written.name + ".partial")).symlink_to(victim)
    export_labels(ds, fmt, out)
    assert victim.read_text() == "precious"
    assert stat.S_ISREG(os.lstat(written).st_mode) and "car" in written.read_text() + (
        (written.parent / "labels.txt").read_text() if fmt == "mot" else ""
    )
    leftovers = sorted(p.name for p in written.parent.iterdir() if p.name.startswith(f".{written.name}."))
    assert leftovers == []


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
@pytest.mark.parametrize("fmt", sorted(EXPORT_TARGETS))
def test_an_output_path_that_is_no_regular_file_is_refused_naming_it(tmp_path: Path, fmt: str, kind: str) -> None:
    # before: whatever sat at OUT was replaced by a regular file (a FIFO, and as root a device node)
    ds = _built(tmp_path)
    out, written = (tmp_path / "shared" / p for p in EXPORT_TARGETS[fmt])
    written.parent.mkdir(parents=True, exist_ok=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    if kind == "symlink":
        written.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(written)
    else:
        written.mkdir()
    words = {"symlink": "a symlink", "fifo": "a FIFO", "folder": "a folder"}[kind]
    said = f"{written}: the output path is {words}, not a regular file"
    with pytest.raises(FormatError, match=f"^{re.escape(said)}"):
        export_labels(ds, fmt, out)
    assert victim.read_text() == "precious"
    assert {"symlink": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "folder": stat.S_ISDIR}[kind](os.lstat(written).st_mode)
    assert [p.name for p in written.parent.iterdir() if p.name.startswith(".")] == []


def test_cli_export_labels_over_a_device_node_is_refused(tmp_path: Path, capsys) -> None:
    # /dev/null is a character device every test machine has; as root it was replaced by a JSON file
    _built(tmp_path)
    assert main(["export-labels", str(tmp_path / "ds"), "coco-vid", "/dev/null"]) == 1
    assert "/dev/null: the output path is a character device, not a regular file" in capsys.readouterr().err
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_label_export_over_a_regular_file_replaces_it_with_the_usual_mode(tmp_path: Path) -> None:
    ds = _built(tmp_path)
    out = tmp_path / "out.json"
    out.write_text("old")
    export_labels(ds, "coco-vid", out)
    assert '"bbox"' in out.read_text()
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask
