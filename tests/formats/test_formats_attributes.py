"""Attributes through every format that carries them: export then import gives each row its attributes back."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.formats_util import dataset, meta, random_tracks
from vidlabel.formats import export_labels, import_labels

_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " -_", min_size=1, max_size=12)
_NUMBER = st.floats(-1e6, 1e6, allow_nan=False)

#: What each format carries: the schema of the rows' attributes, and a strategy of one row's attributes.
CARRIED: dict[str, tuple[dict[str, str], Any]] = {
    # MOT's visibility column is on every gt line (a row without reads back as 1)
    "mot": ({"visibility": "number"}, st.fixed_dictionaries({"visibility": st.floats(0, 1)})),
    "coco-vid": (
        {"occluded": "bool", "truncated": "bool", "visibility": "number", "pose": "text", "size": "number"},
        st.fixed_dictionaries(
            {},
            optional={
                "occluded": st.booleans(),
                "truncated": st.booleans(),
                "visibility": st.floats(0, 1),
                "pose": _TEXT,
                "size": _NUMBER,
            },
        ),
    ),
    # CVAT's occluded flag is on every shape (a row without reads back as not occluded)
    "cvat-video": (
        {"occluded": "bool", "parked": "bool", "pose": "text", "size": "number"},
        st.fixed_dictionaries(
            {"occluded": st.booleans()}, optional={"parked": st.booleans(), "pose": _TEXT, "size": _NUMBER}
        ),
    ),
    # constant text and numbers as per-region results, bools and changing values per keyframe
    "label-studio": (
        {"occluded": "bool", "pose": "text", "size": "number"},
        st.fixed_dictionaries({}, optional={"occluded": st.booleans(), "pose": _TEXT, "size": _NUMBER}),
    ),
    "ytvis": ({"occlusion": "number"}, st.fixed_dictionaries({}, optional={"occlusion": st.sampled_from([0, 1, 2])})),
}
OUT = {"mot": "out", "cvat-video": "out", "coco-vid": "out.json", "ytvis": "out.json", "label-studio": "out.json"}


def _unmatched(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``want`` that no row of ``got`` matches: same video, frame, label and attributes, the box
    within 1e-3 pixels (percent coordinates round); each row of ``got`` matches once. Track ids may be
    renumbered."""
    left = list(got)
    missing = []
    for w in want:
        same = (w["video_id"], w["start_frame"], w["label"], w.get("attributes", {}))
        for k, g in enumerate(left):
            close = all(abs(a - b) <= 1e-3 for a, b in zip(g["box"], w["box"]))
            if close and (g["video_id"], g["start_frame"], g["label"], g.get("attributes", {})) == same:
                del left[k]
                break
        else:
            missing.append(w)
    return missing + left


@pytest.mark.parametrize("fmt", sorted(CARRIED))
@pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")  # drawn rows may repeat
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_attributes_round_trip_exactly(tmp_path_factory, fmt: str, data) -> None:
    schema, values = CARRIED[fmt]
    rows = data.draw(random_tracks(frame_count=20))
    for r in rows:
        r["attributes"] = data.draw(values)
    tmp = tmp_path_factory.mktemp("attrs")
    ds = dataset(tmp / "a", videos=[meta(frame_count=20)])
    for label in ("person", "car"):
        ds.set_attribute_schema(label, schema)
    ds.add_annotations(rows, "cam1")
    ds.build()
    export_labels(ds, fmt, tmp / OUT[fmt])
    ds2 = dataset(tmp / "b", videos=[meta(frame_count=20)])
    report = import_labels(ds2, fmt, tmp / OUT[fmt], video_id="cam1")
    assert len(ds2.annotations()) == len(ds.annotations())
    assert _unmatched(ds2.annotations(), ds.annotations()) == []
    used = {k for r in rows for k in r["attributes"]}
    assert all(set(names) <= set(schema) for names in report.attributes_added.values())
    assert used <= {k for names in ds2.attribute_schema().values() for k in names}
