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


def test_cli_export_labels_over_a_fifo_or_device_node_is_refused(tmp_path: Path, capsys) -> None:
    # as root a device node at OUT was replaced by a JSON file; the node is made in the test's own folder
    _built(tmp_path)
    fifo, device = tmp_path / "fifo.json", tmp_path / "device.json"
    os.mkfifo(fifo)
    targets = [(fifo, "a FIFO", stat.S_ISFIFO)]
    try:
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append((device, "a character device", stat.S_ISCHR))
    except PermissionError:
        pass  # making a device node needs root: the FIFO is checked alone
    for target, words, is_kind in targets:
        assert main(["export-labels", str(tmp_path / "ds"), "coco-vid", str(target)]) == 1
        assert f"{target}: the output path is {words}, not a regular file" in capsys.readouterr().err
        assert is_kind(os.lstat(target).st_mode)


def test_a_label_export_over_a_regular_file_replaces_it_with_the_usual_mode(tmp_path: Path) -> None:
    ds = _built(tmp_path)
    out = tmp_path / "out.json"
    out.write_text("old")
    export_labels(ds, "coco-vid", out)
    assert '"bbox"' in out.read_text()
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o666 & ~umask


def test_two_imports_at_once_number_their_tracks_apart(tmp_path: Path, monkeypatch) -> None:
    # before: the tracks a video held were read before the import's write transaction opened, so two imports
    # running at once both kept the file's ids 0..2 and each track held two objects; the interleaving that
    # lost is forced: the second import runs to its write transaction while the first holds its numbering
    import threading

    import vidlabel.formats._api as api
    from vidlabel import Dataset
    from vidlabel.formats import import_labels

    dataset(tmp_path / "ds")
    files = []
    for k in range(2):
        gt = tmp_path / f"gt{k}.txt"
        gt.write_text("".join(f"{f},{t},{10 + k},{t * 10},5,5,1,1,1\n" for t in (1, 2, 3) for f in (1, 2)))
        files.append(gt)
    numbered, second_at_its_write = threading.Event(), threading.Event()
    number, one_write = api._number_tracks_after_existing, Dataset._one_write
    errors: list[BaseException] = []
    seconds: list[threading.Thread] = []

    def second_import() -> None:
        try:
            import_labels(Dataset.open(tmp_path / "ds"), "mot", files[1], video_id="cam1", label_map={1: "car"})
        except BaseException as err:
            errors.append(err)
            second_at_its_write.set()

    def numbering(ds, parsed) -> None:
        number(ds, parsed)
        if not numbered.is_set():
            numbered.set()
            seconds.append(threading.Thread(target=second_import, daemon=True))
            seconds[0].start()
            assert second_at_its_write.wait(60)

    def watched_write(self, operation):
        if numbered.is_set():
            second_at_its_write.set()
        return one_write(self, operation)

    monkeypatch.setattr(api, "_number_tracks_after_existing", numbering)
    monkeypatch.setattr(Dataset, "_one_write", watched_write)
    first = threading.Thread(
        target=import_labels,
        args=(Dataset.open(tmp_path / "ds"), "mot", files[0]),
        kwargs={"video_id": "cam1", "label_map": {1: "car"}},
    )
    first.start()
    first.join(120)
    monkeypatch.undo()
    seconds[0].join(120)
    assert not errors and not first.is_alive() and not seconds[0].is_alive()
    rows = Dataset.open(tmp_path / "ds").annotations("cam1")
    assert len(rows) == 12
    # each track holds one object: one x position (the file's k) and one y position (the file's t)
    objects: dict[int, set[tuple[float, float]]] = {}
    for r in rows:
        objects.setdefault(r["track_id"], set()).add((r["box"][0], r["box"][1]))
    assert sorted(len(v) for v in objects.values()) == [1] * 6
