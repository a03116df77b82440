"""COCO-VID, YouTube-VIS and Label Studio files read one list item at a time: the same rows, notes and errors as a
whole read, with sections in any order and items cut anywhere by the read buffer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import vidlabel.formats._jsonstream as jsonstream
from tests.formats_util import dataset
from vidlabel.errors import FormatError
from vidlabel.formats import import_labels
from vidlabel.formats._common import read_json


def coco(n: int = 12) -> dict[str, Any]:
    """A COCO-VID document of ``n`` box annotations on frames 0..n-1, track k % 2, one carrying a non-ASCII text."""
    return {
        "categories": [{"id": 7, "name": "car"}, {"id": 1, "name": "person"}],
        "videos": [{"id": 5, "name": "cam1"}],
        "images": [{"id": 100 + f, "video_id": 5, "frame_id": f, "width": 64, "height": 48} for f in range(30)],
        "annotations": [
            {"id": k, "image_id": 100 + k, "category_id": 7 if k % 2 else 1, "instance_id": k % 2,
             "bbox": [k + 0.5, 2, 3, 4], **({"attributes": {"note": "café ✓"}} if k == 4 else {})}
            for k in range(n)
        ],
    }  # fmt: skip


def ytvis() -> dict[str, Any]:
    """A YouTube-VIS document of one video (30 file names) and two instances."""
    n = 30
    return {
        "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "car"}],
        "videos": [{"id": 1, "width": 64, "height": 48, "length": n, "file_names": [f"cam1/é{f:05d}.jpg" for f in range(n)]}],
        "annotations": [
            {"id": 1, "video_id": 1, "category_id": 2, "bboxes": [[f, 1, 5, 6] if f % 4 else None for f in range(n)]},
            {"id": 2, "video_id": 1, "category_id": 1, "bboxes": [[1, f / 2, 7, 8] if f < 9 else None for f in range(n)]},
        ],
    }  # fmt: skip


def labelstudio() -> list[dict[str, Any]]:
    """Two Label Studio tasks of video cam1, each a region of two keyframes."""

    def region(rid: str, first: int, label: str) -> dict[str, Any]:
        seq = [{"frame": first, "enabled": True, "x": 10, "y": 10, "width": 20, "height": 30},
               {"frame": first + 4, "enabled": False, "x": 30, "y": 20, "width": 20, "height": 30}]  # fmt: skip
        return {"id": rid, "type": "videorectangle", "value": {"framesCount": 30, "sequence": seq, "labels": [label]}}

    return [
        {"id": t, "data": {"video_id": "cam1", "video": "/data/cam1.mp4"},
         "annotations": [{"id": t, "result": [region(f"r{t}", 3 * t + 1, "car"), region("é", 10 * t - 8, "person")]}]}
        for t in (1, 2)
    ]  # fmt: skip


DOCS = {"coco-vid": coco, "ytvis": ytvis, "label-studio": labelstudio}


def rows(ds) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(
        (r["start_frame"], r["label"], r["box"], r["track_id"], r.get("attributes") or {}) for r in ds.annotations()
    )


def whole_read_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any whole read of a file fail, so that an import that passes read it item by item."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the file was read whole")

    monkeypatch.setattr(jsonstream, "read_json", refused)


def imported(tmp_path: Path, name: str, fmt: str, text: str, **options: Any):  # type: ignore[no-untyped-def]
    ds = dataset(tmp_path / name)
    f = tmp_path / f"{name}.json"
    f.write_text(text, encoding="utf-8")
    # a Label Studio file of two tasks names its video in each task's data.video_id
    report = import_labels(ds, fmt, f, video_id=None if fmt == "label-studio" else "cam1", **options)
    return ds, report


@pytest.mark.parametrize("fmt", ["coco-vid", "ytvis"])
def test_sections_in_any_order_import_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    doc = DOCS[fmt]()
    want, _ = imported(tmp_path, "usual", fmt, json.dumps(doc))
    whole_read_refused(monkeypatch)
    reverse = dict(reversed(list(doc.items())))  # annotations first, categories last
    assert next(iter(reverse)) == "annotations"
    got, _ = imported(tmp_path, "reversed", fmt, json.dumps(reverse, indent=2))
    assert rows(got) == rows(want) and len(rows(want)) >= 12


@pytest.mark.parametrize("fmt", ["coco-vid", "ytvis", "label-studio"])
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_items_cut_anywhere_by_the_buffer_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, chunk: int
) -> None:
    # a chunk of 1 byte cuts every number, every key and each byte of "é" and "✓" from the next
    doc = DOCS[fmt]()
    want, want_report = imported(tmp_path, "whole", fmt, json.dumps(doc, ensure_ascii=False))
    whole_read_refused(monkeypatch)
    monkeypatch.setattr(jsonstream, "_CHUNK", chunk)
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    assert not text.isascii()  # characters of 2 and 3 bytes, cut between their bytes
    got, report = imported(tmp_path, "cut", fmt, "\ufeff" + text)
    assert rows(got) == rows(want) and report.notes == want_report.notes


def test_a_key_repeated_with_another_value_in_a_late_item_is_refused_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonstream, "_CHUNK", 16)
    text = json.dumps(coco(40), indent=1).replace('"id": 39,', '"id": 39, "bbox": [9, 9, 9, 9],')
    f = tmp_path / "a.json"
    f.write_text(text)
    with pytest.raises(FormatError) as whole:
        read_json(f, dict)
    assert re.search(
        r"key 'bbox' is given twice in the object opening at column \d+ \(\[9, 9, 9, 9\] and", str(whole.value)
    )
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=f"^{re.escape(str(whole.value))}$"):
        import_labels(ds, "coco-vid", f, video_id="cam1")
    assert ds.annotations() == []


def test_keys_repeated_with_the_same_value_are_read_once_and_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = coco(6)
    text = json.dumps(doc).replace('"instance_id": 1,', '"instance_id": 1, "instance_id": 1,')
    whole_read_refused(monkeypatch)
    monkeypatch.setattr(jsonstream, "_CHUNK", 8)
    ds, report = imported(tmp_path, "ds", "coco-vid", text)
    # instance 1 is annotations 1, 3 and 5: each repeats its key once
    assert report.notes[0] == "keys repeated with the same value in one object, read once: 'instance_id' (3)"
    assert len(ds.annotations()) == 6


def test_a_top_level_key_given_twice_reads_as_a_whole_read(tmp_path: Path) -> None:
    doc = coco(3)
    body = json.dumps(doc)[1:-1]
    same = '{"categories": ' + json.dumps(doc["categories"]) + ", " + body + "}"
    ds, report = imported(tmp_path, "same", "coco-vid", same)
    assert "keys repeated with the same value in one object, read once: 'categories' (1)" in report.notes
    assert len(ds.annotations()) == 3
    other = '{"categories": [{"id": 7, "name": "person"}], ' + body + "}"
    with pytest.raises(FormatError, match=r"line 1: key 'categories' is given twice in the object opening at column 1"):
        imported(tmp_path, "other", "coco-vid", other)


@pytest.mark.parametrize("fmt", ["coco-vid", "ytvis", "label-studio"])
def test_a_number_of_5000_digits_late_in_the_file_is_the_same_format_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    monkeypatch.setattr(jsonstream, "_CHUNK", 256)
    text = json.dumps(DOCS[fmt]())
    at = text.rindex('"id": 1') + len('"id": 1')  # the last id 1... of the file, far past the first buffer
    f = tmp_path / "a.json"
    f.write_text(text[:at] + "0" * 5000 + text[at:])
    ds = dataset(tmp_path / "ds")
    with pytest.raises(
        FormatError,
        match=rf"^{re.escape(str(f))}: a number in the JSON is too long to read \(Exceeds the limit \(4300 digits\) "
        r"for integer string conversion: value has 500\d digits\)$",
    ):
        import_labels(ds, fmt, f, video_id=None if fmt == "label-studio" else "cam1")
    assert ds.annotations() == []


@pytest.mark.parametrize(
    ("fmt", "old", "new", "said"),
    [
        ("coco-vid", '"bbox": [11.5, 2, 3, 4]', '"bbox": [true, 2, 3, 4]',
         r"annotations\[11\]: bbox is True; expected a finite number"),
        ("ytvis", '"id": 2, "video_id": 1', '"id": 2, "video_id": true',
         r"annotations\[1\]: video_id is True; expected a number or a string"),
    ],
)  # fmt: skip
def test_a_boolean_is_no_number_when_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, old: str, new: str, said: str
) -> None:
    monkeypatch.setattr(jsonstream, "_CHUNK", 32)
    text = json.dumps(DOCS[fmt]())
    assert text.count(old) == 1
    f = tmp_path / "a.json"
    f.write_text(text.replace(old, new))
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=rf"^{re.escape(str(f))} {said}$"):
        import_labels(ds, fmt, f, video_id="cam1")
    assert ds.annotations() == []


def test_a_syntax_error_is_said_before_a_fault_of_an_earlier_item(tmp_path: Path) -> None:
    doc = coco(5)
    doc["annotations"][0]["category_id"] = 99  # unknown, in the first item
    f = tmp_path / "a.json"
    f.write_text(json.dumps(doc, indent=1)[:-3])  # cut at its end
    ds = dataset(tmp_path / "ds")
    with pytest.raises(FormatError, match=rf"^{re.escape(str(f))} line \d+: not valid JSON"):
        import_labels(ds, "coco-vid", f, video_id="cam1")


def test_a_label_studio_task_of_no_video_says_how_many_tasks_the_file_holds(tmp_path: Path) -> None:
    doc = labelstudio() * 2  # four tasks
    for t in doc:
        t["data"] = {"video": "/data/elsewhere.mp4"}
    with pytest.raises(FormatError, match=r"ls\.json \[0\]: video .* the file holds 4 videos: pass videos="):
        imported(tmp_path, "ls", "label-studio", json.dumps(doc))
    one = labelstudio()[:1]
    one[0]["data"] = {"video": "/data/elsewhere.mp4"}
    ds = dataset(tmp_path / "one")
    f = tmp_path / "one.json"
    f.write_text(json.dumps(one))
    import_labels(ds, "label-studio", f, video_id="cam1")  # one task: video_id names its video
    assert len(ds.annotations()) > 0


def test_the_cycle_collector_runs_again_after_an_import_read_or_refused(tmp_path: Path) -> None:
    import gc

    assert gc.isenabled()
    imported(tmp_path, "good", "coco-vid", json.dumps(coco(3)))
    assert gc.isenabled()
    with pytest.raises(FormatError, match=r"not valid JSON"):
        imported(tmp_path, "bad", "coco-vid", json.dumps(coco(3))[:-2])
    assert gc.isenabled()
