"""CVAT box tracks read shape by shape: long tracks, keyframes out of order, tracks found not to be imported."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.formats.test_formats_cvat import box, cvat
from tests.formats_util import dataset, meta
from vidlabel.errors import FormatError
from vidlabel.formats import import_labels

START, STOP, STEP = 3, 601, 2
LABELS = """<labels><label><name>car</name><attributes>
  <attribute><name>moving</name><input_type>checkbox</input_type></attribute>
  <attribute><name>colour</name><input_type>text</input_type></attribute>
</attributes></label></labels>"""


def keyframes(seed: int, n: int) -> list[dict[str, Any]]:
    """``n`` keyframes on distinct task frames, in frame order: box, outside, occluded and two attributes."""
    rng = random.Random(seed)
    frames = sorted(rng.sample(range(START, STOP + 1, STEP), n))
    corners = [(float(rng.randint(0, 40)), float(rng.randint(0, 18))) for _ in frames]
    return [
        {
            "frame": f,
            "box": (x + 0.5, y + 1.0, x + 20.25, y + 30.0),
            "outside": rng.random() < 0.2,
            "occluded": rng.random() < 0.5,
            "moving": rng.random() < 0.5,
            "colour": rng.choice(["red", "blue"]),
        }
        for f, (x, y) in zip(frames, corners)
    ]


def shapes(keys: list[dict[str, Any]]) -> list[str]:
    """Each keyframe as a ``<box>`` with its attributes, followed by a non-keyframe shape (to be ignored)."""
    out = []
    for k in keys:
        attrs = (
            f'<attribute name="moving">{"true" if k["moving"] else "false"}</attribute>'
            f'<attribute name="colour">{k["colour"]}</attribute>'
        )
        el = box(k["frame"], *k["box"], outside=int(k["outside"]))
        el = el.replace('occluded="0"', f'occluded="{int(k["occluded"])}"')
        out.append(el[:-2] + ">" + attrs + "</box>")
        out.append(box(k["frame"] + 1, 999, 999, 1000, 1000, keyframe=0))
    return out


def expected(keys: list[dict[str, Any]], track: int) -> dict[tuple[int, int], tuple]:
    """(track, frame) -> (box, attributes) as CVAT defines them: linear towards the next keyframe, hidden
    after an outside one, persisting after the last visible one to the task's end, on task frames only."""
    out = {}
    for f in range(START, STOP + 1, STEP):
        before = [k for k in keys if k["frame"] <= f]
        if not before or before[-1]["outside"]:
            continue
        k = before[-1]
        later = [n for n in keys if n["frame"] > f]
        b = k["box"]
        if later and f != k["frame"]:
            n = later[0]
            t = (f - k["frame"]) / (n["frame"] - k["frame"])
            b = tuple(a + (z - a) * t for a, z in zip(k["box"], n["box"]))
        attrs = {"occluded": k["occluded"], "moving": k["moving"], "colour": k["colour"]}
        out[(track, f)] = (b, attrs)
    return out


def load(tmp_path: Path, body: str) -> tuple[Any, Any]:
    ds = dataset(tmp_path / "ds", videos=[meta(frame_count=STOP + 10)])
    f = tmp_path / "annotations.xml"
    xml = cvat(body, start=START, stop=STOP, step=f"step={STEP}")
    f.write_text(xml.replace("</original_size>", "</original_size>" + LABELS))
    return ds, import_labels(ds, "cvat-video", f)


def got_rows(ds: Any) -> dict[tuple[int, int], tuple]:
    rows = [r for r in ds.annotations() if r["kind"] == "box"]
    out = {(r["track_id"], r["start_frame"]): (tuple(r["box"]), r.get("attributes")) for r in rows}
    assert len(out) == len(rows)
    return out


def assert_rows(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, (b, attrs) in want.items():
        assert got[key][0] == pytest.approx(b, abs=1e-3), key
        assert got[key][1] == attrs, key


def test_long_tracks_give_the_rows_of_their_keyframes(tmp_path: Path) -> None:
    first, second = keyframes(1, 120), keyframes(2, 90)
    shuffled = shapes(second)
    random.Random(3).shuffle(shuffled)
    body = (
        '<track id="5" label="car">' + "".join(shapes(first)) + "</track>"
        # keyframes out of frame order: the track is read again whole
        '<track id="6" label="car">' + "".join(shuffled) + "</track>"
    )
    ds, rep = load(tmp_path, body)
    assert_rows(got_rows(ds), {**expected(first, 0), **expected(second, 1)})
    assert rep.skipped == {}


def test_tracks_found_not_imported_take_back_their_rows(tmp_path: Path) -> None:
    keys = keyframes(4, 60)
    mixed = [*shapes(keys), '<points frame="601" outside="0" occluded="0" keyframe="1" points="1,2" z_order="0"/>']
    rotated = shapes(keys)
    rotated[-2] = rotated[-2].replace("<box ", '<box rotation="30" ')
    tagged = [s.replace('"colour"', '"wheels"') for s in rotated]
    body = (
        '<track id="1" label="car">' + "".join(mixed) + "</track>"
        '<track id="2" label="car">' + "".join(tagged) + "</track>"
        '<track id="3" label="car">' + "".join(shapes(keys)) + "</track>"
    )
    ds, rep = load(tmp_path, body)
    # the skipped tracks leave no rows, no track id and no attribute of theirs ("wheels") behind
    assert_rows(got_rows(ds), expected(keys, 0))
    assert rep.skipped == {"unsupported shape type: points (track)": 1, "rotated box (track)": 1}
    assert "wheels" not in ds.attribute_schema().get("car", {})


def test_a_rotation_decides_before_a_bad_number_after_it(tmp_path: Path) -> None:
    keys = keyframes(5, 8)
    els = shapes(keys)
    els[2] = els[2].replace('xtl="', 'xtl="x')
    els[6] = els[6].replace("<box ", '<box rotation="5" ')
    _, rep = load(tmp_path, '<track id="1" label="car">' + "".join(els) + "</track>")
    assert rep.skipped == {"rotated box (track)": 1}


def test_a_bad_flag_is_named_before_an_earlier_bad_number(tmp_path: Path) -> None:
    keys = keyframes(6, 8)
    els = shapes(keys)
    els[2] = els[2].replace('xtl="', 'xtl="x')
    els[6] = els[6].replace('outside="0"', 'outside="yes"').replace('outside="1"', 'outside="yes"')
    frame = keys[3]["frame"]
    with pytest.raises(FormatError, match=rf'<box frame="{frame}">: attribute outside=\'yes\'; allowed'):
        load(tmp_path, '<track id="1" label="car">' + "".join(els) + "</track>")


def test_a_bad_number_is_named_before_a_repeated_frame(tmp_path: Path) -> None:
    keys = keyframes(7, 8)
    els = shapes(keys)
    els[4] = els[4].replace('xtl="', 'xtl="x')
    bad = keys[2]["frame"]
    # the first keyframe twice, then a keyframe whose xtl is no number
    with pytest.raises(FormatError, match=rf'<box frame="{bad}">: attribute xtl=.*expected a number'):
        load(tmp_path, '<track id="1" label="car">' + "".join([els[0], *els]) + "</track>")


def test_a_repeated_keyframe_frame_is_named_with_the_first(tmp_path: Path) -> None:
    keys = keyframes(8, 8)
    els = shapes(keys)
    frame = keys[3]["frame"]
    with pytest.raises(FormatError, match=rf"a second keyframe of the track on video frame {frame}"):
        load(tmp_path, '<track id="1" label="car">' + "".join([*els[:7], els[6], *els[7:]]) + "</track>")


def test_a_file_changed_before_a_track_is_read_again_is_refused(tmp_path: Path, monkeypatch) -> None:
    from vidlabel.formats import _cvat

    keys = keyframes(9, 6)
    body = '<track id="1" label="car">' + "".join(reversed(shapes(keys))) + "</track>"
    # the track (after <version> and <meta>) is out of frame order: the second reading of the file finds
    # no elements, as if it had been emptied meanwhile
    monkeypatch.setattr(_cvat, "children", lambda path: iter(()))
    with pytest.raises(FormatError, match=r"changed while being read: element 3 of <annotations> is gone"):
        load(tmp_path, body)
