"""``vidlabel export-labels DS FMT OUT`` then ``vidlabel import DS2 FMT OUT``: every format, no path editing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.formats_util import assert_same_rows, dataset
from tests.media import ClipTruth
from vidlabel.cli import main
from vidlabel.formats import FORMATS
from vidlabel.video import probe

#: Where export-labels is told to write: a folder for the formats that write one (MOT, CVAT, MediaSequence), a
#: JSON file for the others; import is given the same path.
OUT = {"mot": "out", "cvat-video": "out", "mediasequence": "out", "coco-vid": "out.json", "ytvis": "out.json",
       "label-studio": "out.json"}  # fmt: skip


def _rows() -> list[dict]:
    """Two tracks of two labels (a gap in one) and a second video's track: boxes every format holds."""
    rows = [
        {"kind": "box", "label": "person", "start_frame": f, "box": (2.0 + f, 3.0, 12.5 + f, 20.25), "track_id": 0}
        for f in (0, 1, 2, 5, 6)
    ]
    rows += [
        {"kind": "box", "label": "car", "start_frame": f, "box": (30.0, 10.0 + f, 40.0, 30.0), "track_id": 1}
        for f in (3, 4)
    ]
    return rows


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_export_labels_then_import_round_trips_with_the_same_path(tmp_path: Path, fmt: str, clip: ClipTruth) -> None:
    # probed videos: MediaSequence places rows by timestamp, through the frame index
    videos = [probe(clip.path, video_id="cam1"), probe(clip.path, video_id="cam2")]
    ds = dataset(tmp_path / "a", videos=videos)
    ds.add_annotations(_rows(), "cam1")
    ds.add_annotations(_rows()[:3], "cam2")
    ds.build()
    out = tmp_path / OUT[fmt]
    assert main(["export-labels", str(tmp_path / "a"), fmt, str(out)]) == 0
    ds2 = dataset(tmp_path / "b", videos=videos)
    assert main(["import", str(tmp_path / "b"), fmt, str(out)]) == 0
    assert_same_rows(ds2.annotations(), ds.annotations())
