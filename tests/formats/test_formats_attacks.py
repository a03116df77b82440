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


# -- numbers only where the format writes them, values echoed cut short --------------------------------------------


def _ytvis(names: list[str], video_id: object = 1) -> str:
    import json

    return json.dumps({
        "videos": [{"id": 1, "width": 64, "height": 48, "length": len(names), "file_names": names}],
        "categories": [{"id": 1, "name": "car"}],
        "annotations": [{"video_id": video_id, "category_id": 1, "id": 1,
                         "bboxes": [[1, 2, 5, 5]] + [None] * (len(names) - 1)}],
    })  # fmt: skip


def test_a_ytvis_file_name_of_5000_digits_is_a_format_error_naming_it(tmp_path: Path) -> None:
    # before: Python's "Exceeds the limit (4300 digits) for integer string conversion" ValueError, naming nothing
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "vis.json"
    f.write_text(_ytvis(["cam1/00000.jpg", "cam1/" + "7" * 5000 + ".jpg"]))
    said = (
        rf"^{re.escape(str(f))} videos\[0\]\.file_names\[1\]: 'cam1/7{{31}}\.\.\. ends in a number of 5000 digits: "
        r"no frame number has more than 18$"
    )
    with pytest.raises(FormatError, match=said):
        import_labels(ds, "ytvis", f, video_id="cam1")
    assert ds.annotations() == []


def test_ytvis_file_names_in_other_scripts_digits_are_no_frame_numbers(tmp_path: Path) -> None:
    # before: '\u0665.jpg' (Arabic-Indic five) read as frame 5
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "vis.json"
    f.write_text(_ytvis(["cam1/\u0660.jpg", "cam1/\u0665.jpg"]))
    with pytest.raises(FormatError, match=r"frames='digits' but the file names' digits are missing or not increasing"):
        import_labels(ds, "ytvis", f, frames="digits")
    f.write_text(_ytvis(["cam1/0.jpg", "cam1/5.jpg"]))
    import_labels(ds, "ytvis", f, frames="digits")
    assert [r["start_frame"] for r in ds.annotations()] == [0]


def test_a_ytvis_video_id_true_is_no_number(tmp_path: Path) -> None:
    # before: true keyed the same video as 1, so the annotation went to video 1
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "vis.json"
    f.write_text(_ytvis(["cam1/0.jpg", "cam1/1.jpg"], video_id=True))
    with pytest.raises(FormatError, match=r"annotations\[0\]: video_id is True; expected a number or a string$"):
        import_labels(ds, "ytvis", f, video_id="cam1")
    assert ds.annotations() == []


def test_a_coco_vid_bbox_holding_true_is_refused(tmp_path: Path) -> None:
    # before: [true, 1, 5, 5] was the box (1, 1, 6, 6)
    import json

    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "coco.json"
    f.write_text(json.dumps({
        "videos": [{"id": 1}], "categories": [{"id": 1, "name": "car"}],
        "images": [{"id": 1, "video_id": 1, "frame_id": 0, "width": 64, "height": 48}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 5, 5]},
                        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [True, 1, 5, 5]}],
    }))  # fmt: skip
    with pytest.raises(FormatError, match=r"annotations\[1\]: bbox is True; expected a finite number$"):
        import_labels(ds, "coco-vid", f, video_id="cam1")
    assert ds.annotations() == []


@pytest.mark.parametrize("cell", ["\u0661", "\u0661\u0662"])
def test_mot_cells_in_other_scripts_digits_are_refused(tmp_path: Path, cell: str) -> None:
    # before: '\u0661' (Arabic-Indic one) read as 1
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text(f"1,1,10,20,5,6,1,1,1\n{cell},1,11,20,5,6,1,1,1\n", encoding="utf-8")
    with pytest.raises(
        FormatError, match=rf"gt\.txt line 2: not a number in '{cell},1,11.*' \(a character that is not"
    ):
        import_labels(ds, "mot", gt, video_id="cam1", label="car")
    assert ds.annotations() == []


def test_a_mot_value_of_5000_digits_is_echoed_cut_short(tmp_path: Path, capsys) -> None:
    # before: both cells were echoed whole, a message of 10,126 characters
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    big = "9" * 5000
    gt.write_text(f"{big},{big},10,20,5,6,1,1,1\n")
    with pytest.raises(FormatError, match=r"frame '9{36}\.\.\. and id '9{36}\.\.\. \(columns 1, 2\)") as info:
        import_labels(ds, "mot", gt, video_id="cam1", label="car")
    assert len(str(info.value)) < 400


def _cvat(frame: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
        "<meta><task><size>30</size><original_size><width>64</width><height>48</height></original_size></task></meta>"
        f'<track id="0" label="car"><box frame="{frame}" keyframe="1" outside="0" occluded="0" '
        'xtl="1" ytl="2" xbr="5" ybr="6"/></track></annotations>\n'
    )


@pytest.mark.parametrize(("frame", "said"), [("\u0660", "'\u0660'"), ("3" * 5000, "'3{36}\\.\\.\\.")])
def test_a_cvat_frame_in_other_scripts_digits_or_of_5000_digits_is_refused(
    tmp_path: Path, frame: str, said: str
) -> None:
    # before: frame="\u0660" (Arabic-Indic zero) read as frame 0; 5000 digits were echoed whole
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "a.xml"
    f.write_text(_cvat(frame), encoding="utf-8")
    with pytest.raises(FormatError, match=rf"frame={said}; expected an integer \(ASCII digits\)$"):
        import_labels(ds, "cvat-video", f, video_id="cam1")
    assert ds.annotations() == []


def test_cvat_xml_in_utf16_is_read(tmp_path: Path) -> None:
    # before: refused as "not UTF-8", though its byte order mark and declaration say UTF-16
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    f = tmp_path / "a.xml"
    f.write_bytes(_cvat("3").replace('encoding="utf-8"', 'encoding="utf-16"').encode("utf-16"))
    import_labels(ds, "cvat-video", f, video_id="cam1")
    # one keyframe at frame 3 persists to the task's last frame (29), as CVAT defines a track
    assert [(r["start_frame"], r["box"]) for r in ds.annotations()] == [(f, (1.0, 2.0, 5.0, 6.0)) for f in range(3, 30)]


@pytest.mark.parametrize(
    ("label", "said"),
    [("x" * 100_000, r"'x{36}\.\.\., longer than 256 characters"),
     ("\u202eraC", r"'\\u202eraC', which holds the bidirectional control U\+202E at position 0")],
)  # fmt: skip
def test_a_label_too_long_or_with_a_bidi_control_is_refused_naming_the_row(
    tmp_path: Path, label: str, said: str
) -> None:
    # before: labels of 100,000 characters or starting with U+202E (shown right to left) were accepted
    from vidlabel.formats import import_labels

    ds = dataset(tmp_path / "ds")
    gt = tmp_path / "gt.txt"
    gt.write_text("1,1,10,20,5,6,1,1,1\n2,1,10,20,5,6,1,2,1\n")
    with pytest.raises(FormatError, match=rf"gt\.txt line 2: label is {said}.*; a label is a non-empty string"):
        import_labels(ds, "mot", gt, video_id="cam1", label_map={1: "car", 2: label}, add_labels=True)
    assert ds.annotations() == [] and label not in ds.labels()
