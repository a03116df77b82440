"""A toy label format, ``boxes-csv``: one video's boxes as lines ``frame,label,x0,y0,x1,y1`` (0-based frames,
pixel corners). What adding a format takes: this module and one ``register_format(FORMAT)`` line
(tests/formats/test_formats_registry.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vidlabel.dataset import Release
from vidlabel.formats._common import BOX, ImportContext, Parsed, VideoRows, fail, video_tables
from vidlabel.formats._registry import LabelFormat
from vidlabel.formats._report import ExportLabelsReport


def import_boxes_csv(ctx: ImportContext) -> Parsed:
    """Every line a box of the one video the file belongs to (``video_id=``)."""
    meta = ctx.resolve([], 1, None)
    vr = VideoRows(meta)
    for number, line in enumerate(ctx.path.read_text().splitlines(), 1):
        fields = line.split(",")
        if len(fields) != 6:
            raise fail(ctx.path, number, f"expected 6 comma-separated fields, got {len(fields)}")
        box = tuple(float(v) for v in fields[2:])
        vr.add({"kind": "box", "label": fields[1], "start_frame": int(fields[0]), "box": box}, number)
    return Parsed(videos={meta.video_id: vr})


def export_boxes_csv(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """The boxes of a release of one video (or the one of ``videos``) at ``out``."""
    (video,) = video_tables(release, videos)
    t = release.table
    report = ExportLabelsReport(format="boxes-csv", release_id=release.release_id)
    lines = []
    for i in video.rows.tolist():
        if t.kind[i] != BOX:
            report.not_written["not a box (boxes-csv holds boxes only)"] += 1
            continue
        box = ",".join(f"{v:g}" for v in t.box[i])
        lines.append(f"{t.start_frame[i]},{t.labels[t.label[i]]},{box}\n")
        report.counts["box"] += 1
    out.write_text("".join(lines))
    report.paths.append(str(out))
    return report


FORMAT = LabelFormat(
    "boxes-csv", import_boxes_csv, export_boxes_csv,
    summary="a toy: one video's boxes as frame,label,x0,y0,x1,y1 lines",
    files="one `.csv` file",
    rows_in="lines 'frame,label,x0,y0,x1,y1'",
)  # fmt: skip
