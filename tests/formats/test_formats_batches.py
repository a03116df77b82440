"""Label import in batches: a file written through several ``add_annotations`` batches inside one transaction
gives what one batch gives (rows, warnings, errors, track numbering), and a refused row anywhere leaves the
dataset unchanged."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.formats_util import dataset, meta
from vidlabel.errors import FormatError, VidlabelWarning
from vidlabel.formats import _api, import_labels
from vidlabel.formats._videorows import VideoRows

LABELS = {1: "person", 2: "car"}


def _mot(path: Path, lines: list[tuple[int, int, float, float, float, float, int, float]]) -> Path:
    """A 9-column MOT gt file: (1-based frame, id, x, y, w, h, class, visibility) a line."""
    path.write_text("".join(f"{f},{t},{x},{y},{w},{h},1,{c},{v}\n" for f, t, x, y, w, h, c, v in lines))
    return path


def _lines(n: int) -> list[tuple[int, int, float, float, float, float, int, float]]:
    """``n`` lines over 30 frames: tracks 1..4 (track 4 a car), boxes derived from frame and track."""
    out = []
    for i in range(n):
        f, t = i // 4 + 1, i % 4 + 1
        out.append((f, t, 2.0 * t, 1.0 * f, 5.0 + t, 4.0, 2 if t == 4 else 1, 0.25 * t))
    return out


def _import(tmp_path: Path, name: str, file: Path, batch: int, monkeypatch: pytest.MonkeyPatch, **kw):
    monkeypatch.setattr(_api, "_BATCH_ROWS", batch)
    ds = dataset(tmp_path / name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = import_labels(ds, "mot", file, video_id="cam1", label_map=LABELS, **kw)
    return ds, report, [str(w.message) for w in caught if issubclass(w.category, VidlabelWarning)]


def test_a_file_in_several_batches_gives_the_rows_of_one_batch(tmp_path, monkeypatch):
    lines = _lines(40)
    lines.append(lines[2])  # line 41 repeats line 3: the warning names both, batches apart
    file = _mot(tmp_path / "gt.txt", lines)
    one, rep_one, warn_one = _import(tmp_path, "one", file, 10_000, monkeypatch)
    many, rep_many, warn_many = _import(tmp_path, "many", file, 3, monkeypatch)
    assert many.annotations() == one.annotations()
    assert rep_many.videos["cam1"].annotation_ids == rep_one.videos["cam1"].annotation_ids
    assert rep_many.videos["cam1"].counts == {"box": 41}
    got = many.annotations()
    assert len(got) == 41
    for r, (f, t, x, y, w, h, c, v) in zip(got, lines):
        assert (r["start_frame"], r["track_id"], r["label"]) == (f - 1, t - 1, LABELS[c])  # MOT ids are 1-based
        assert r["box"] == pytest.approx((x, y, x + w, y + h))
        assert r["attributes"] == {"visibility": v}
    assert warn_many == [w.replace("/one'", "/many'") for w in warn_one]
    assert len(warn_many) == 1 and "line 3 and line 41" in warn_many[0]


def test_a_bad_row_in_the_last_batch_leaves_the_dataset_unchanged(tmp_path, monkeypatch):
    lines = _lines(20)
    # the last line gives track 1 (a person in the first batch) the label car
    lines.append((30, 1, 1.0, 1.0, 4.0, 4.0, 2, 1.0))
    file = _mot(tmp_path / "gt.txt", lines)
    messages = []
    for batch in (10_000, 4):
        monkeypatch.setattr(_api, "_BATCH_ROWS", batch)
        ds = dataset(tmp_path / f"b{batch}", labels=("person",))
        ds.add_annotations([{"kind": "box", "label": "person", "start_frame": 0, "box": (1, 1, 5, 5)}], "cam1")
        before = ds.annotations()
        with pytest.raises(FormatError, match=r"gt\.txt line 21: .*track 0 has label 'car' here but 'person'") as err:
            import_labels(ds, "mot", file, video_id="cam1", label_map=LABELS, add_labels=True)
        assert ds.annotations() == before
        assert ds.labels() == ["person"]
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "the whole batch of 21 rows was refused" in messages[1]


def test_a_row_the_dataset_refuses_in_a_later_batch_is_named_by_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(_api, "_BATCH_ROWS", 5)
    ds = dataset(tmp_path / "ds")
    vr = VideoRows(meta())
    for i in range(12):
        vr.add({"kind": "box", "label": "person", "start_frame": i, "box": (1.0, 1.0, 5.0, 5.0)}, i + 1)
    vr.add({"kind": "box", "label": "person", "start_frame": 3, "box": (1.0, 1.0, 5.0, 5.0), "origin": "robot"}, 13)
    parsed = _api.Parsed(videos={"cam1": vr})
    report = _api.ImportReport(format="mot", path="f.txt", dry_run=False, skipped=parsed.skipped, notes=[])
    report.videos["cam1"] = _api.VideoImport("cam1", vr.kind_counts())
    with pytest.raises(FormatError, match=r"f\.txt line 13: field 'origin' .*'robot'.*whole batch of 13 rows"):
        _api._write(ds, Path("f.txt"), parsed, report, clip=True, track_ids="new")
    assert ds.annotations() == []


def test_track_numbering_and_dry_run_across_batches(tmp_path, monkeypatch):
    file = _mot(tmp_path / "gt.txt", _lines(16))
    monkeypatch.setattr(_api, "_BATCH_ROWS", 3)
    ds = dataset(tmp_path / "ds")
    ds.add_annotations(
        [{"kind": "box", "label": "person", "start_frame": 0, "box": (1, 1, 5, 5), "track_id": 6}], "cam1"
    )
    import_labels(ds, "mot", file, video_id="cam1", label_map=LABELS)
    tracks = sorted({r["track_id"] for r in ds.annotations()[1:]})
    assert tracks == [7, 8, 9, 10]  # the file's 0..3 (MOT ids 1..4) after the stored 6
    dry = import_labels(ds, "mot", file, video_id="cam1", label_map=LABELS, dry_run=True, track_ids="keep")
    assert len(dry.duplicates) == 1 and "16 rows equal annotations already stored" in dry.duplicates[0]
    assert "line 1 equals annotation 2 already stored"  # 1 is the row added first in dry.duplicates[0]
    assert len(ds.annotations()) == 17


def _persisting_cvat(path: Path, tracks: int, frames: int) -> Path:
    """CVAT tracks of one keyframe each at frame ``t``: each persists to the task's last frame."""
    body = "".join(
        f'<track id="{t}" label="person"><box frame="{t}" keyframe="1" outside="0" occluded="0" '
        f'xtl="{t}" ytl="2" xbr="{t + 10}" ybr="12"/></track>'
        for t in range(tracks)
    )
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?><annotations><version>1.1</version><meta><task>'
        f"<size>{frames}</size><original_size><width>64</width><height>48</height></original_size></task></meta>"
        f"{body}</annotations>"
    )
    return path


def test_persistence_expanded_across_batches(tmp_path, monkeypatch):
    file = _persisting_cvat(tmp_path / "a.xml", 5, 30)
    monkeypatch.setattr(_api, "_BATCH_ROWS", 7)
    ds = dataset(tmp_path / "ds")
    report = import_labels(ds, "cvat-video", file, video_id="cam1")
    got = {(r["track_id"], r["start_frame"]): r for r in ds.annotations()}
    want = {(t, f) for t in range(5) for f in range(t, 30)}
    assert set(got) == want
    assert report.videos["cam1"].counts == {"box": len(want)}
    for (t, _), r in got.items():
        assert r["box"] == pytest.approx((t, 2, t + 10, 12))
        assert r["attributes"] == {"occluded": False}


def test_video_rows_give_back_the_rows_added():
    rows = [
        {"kind": "box", "label": "person", "start_frame": 3, "box": (1.0, 2.0, 3.0, 4.0), "track_id": None},
        {"kind": "box", "label": "car", "start_frame": 4, "box": [1, 2, 3, 4], "attributes": {"a": True, "b": 1.0}},
        {"kind": "mask", "label": "person", "start_frame": 5, "mask": {"size": [2, 2], "counts": b"04"}},
        {"kind": "marker", "label": "goal", "start_frame": 1, "end_frame": 2**70, "origin": "model", "x": "?"},
        {"kind": "box", "label": 7, "start_frame": "3", "box": [1.0, 2.0, 3.0, 4.0], "confidence": 0.5},
        {"kind": "box", "label": "car", "start_frame": 4, "box": [1, 2, 3, 4], "attributes": {"a": 1, "b": 1.0}},
    ]
    wheres = [1, '<track id="1"><box frame="3">', ("annotations", 2), ("annotations", 10**20), "a.xml line 07", 2**63]
    vr = VideoRows(meta())
    for r, w in zip(rows, wheres):
        vr.add(r, w)
    assert len(vr) == len(rows)
    assert vr.rows == rows
    for i in range(len(rows)):
        assert vr.row(i) == rows[i]
        assert type(vr.row(i)["box"] if "box" in rows[i] else None) is type(rows[i].get("box"))
        assert vr.where[i] == wheres[i]
    # the attributes {"a": 1} and {"a": True} are told apart
    assert type(vr.row(5)["attributes"]["a"]) is int and type(vr.row(1)["attributes"]["a"]) is bool
    assert [r for _, b in vr.batches(4) for r in b] == rows
    assert vr.labels() == {"person": 0, "car": 1, "goal": 3, 7: 4}
    assert vr.kind_counts() == {"box": 4, "mask": 1, "marker": 1}
    vr.shift_tracks(5)
    assert vr.row(0)["track_id"] is None
    assert np.array_equal(vr.frame_columns()[2], [3, 4])
    with pytest.raises(IndexError):
        vr.where[len(rows)]
    for where in ("gt/gt.txt line 12", "x line \u0661", "<a>", 'f.xml <track id="1"><box frame="3">', "line 5",
                  "annotations[3] frame index 17", "s[0]", "s[07]", "x 9" + "0" * 18, "x 9" + "0" * 17, "7", "<a>7",
                  "x]", "a\nb[2]", "x \u0665", "s[3]]"):  # fmt: skip
        vr.add(rows[0], where)
        assert vr.where[len(vr) - 1] == where


def test_video_rows_hold_one_text_for_the_places_of_an_items_frames():
    # a JSON item's per-frame places differ only in their number: each row holds the number, not a text
    vr = VideoRows(meta())
    row = {"kind": "box", "label": "person", "start_frame": 3, "box": (1.0, 2.0, 3.0, 4.0)}
    places = [f"annotations[{a}] frame index {k}" for a in range(2) for k in range(500)]
    places += [f"tasks[0].annotations[0].result[{r}].value.sequence[{k}]" for r in range(3) for k in range(500)]
    for where in places:
        vr.add(row, where)
    assert [vr.where[i] for i in range(len(vr))] == places
    assert len(vr._where_values) == 5


@pytest.mark.parametrize("batch", [1, 3, 7, 1000])
def test_duplicates_over_batches_are_those_of_one_call(tmp_path, batch):
    from vidlabel.dataset._batches import annotation_duplicates_batches

    rng = np.random.default_rng(batch)

    def draw(n):
        out = []
        for _ in range(n):
            x = float(rng.integers(0, 3))
            row = {
                "kind": "box",
                "label": ["person", "car"][rng.integers(0, 2)],
                "start_frame": int(rng.integers(0, 3)),
            }
            row["box"] = (x, 1.0, x + 4.0, 5.0)
            row["status"] = ["unreviewed", "approved", "rejected"][rng.integers(0, 3)]
            out.append(row)
        return out

    ds = dataset(tmp_path / "ds")
    with warnings.catch_warnings():
        # the stored rows may repeat each other: that warning is not what is tested
        warnings.simplefilter("ignore", VidlabelWarning)
        ds.add_annotations(draw(15), "cam1")
    rows = draw(40)
    want = ds.annotation_duplicates(rows, "cam1")
    assert want[0] and want[1]  # the draw holds both kinds of duplicates
    batches = ((i, rows[i : i + batch]) for i in range(0, len(rows), batch))
    assert annotation_duplicates_batches(ds, batches, "cam1", clip=False) == want


def test_cvat_shapes_before_meta_are_read_once_the_task_is_known(tmp_path):
    first = _persisting_cvat(tmp_path / "a.xml", 3, 30)
    text = first.read_text()
    head, rest = text.split("<meta>", 1)
    meta_el, body = rest.split("</meta>", 1)
    tracks, tail = body.rsplit("</annotations>", 1)
    later = tmp_path / "b.xml"
    later.write_text(f"{head}{tracks}<meta>{meta_el}</meta></annotations>{tail}")
    got = []
    for name, file in (("a", first), ("b", later)):
        ds = dataset(tmp_path / name)
        import_labels(ds, "cvat-video", file, video_id="cam1")
        got.append([(r["track_id"], r["start_frame"], r["box"]) for r in ds.annotations()])
    assert got[0] == got[1]
    assert len(got[0]) == 30 + 29 + 28


def test_cvat_root_other_than_annotations_is_refused(tmp_path):
    file = tmp_path / "a.xml"
    file.write_text('<?xml version="1.0"?><tasks><track id="0" label="person"/></tasks>')
    with pytest.raises(FormatError, match=r"a\.xml <tasks>: the root element of a CVAT file is <annotations>"):
        import_labels(dataset(tmp_path / "ds"), "cvat-video", file, video_id="cam1")
