"""ExportReport.summary: what the command line shows after an export."""

from __future__ import annotations

from vidlabel.export._report import ExportReport


def report(box: int, mask: int, untrusted: int, ids: list[int]) -> ExportReport:
    r = ExportReport(out="st", format="hdf5", codec="lz4", release_id="r0123456789ab", videos=1, samples=5)
    r.not_stored.update(
        box=box, mask=mask, untrusted=untrusted, untrusted_by_video={"cam1": untrusted} if untrusted else {}
    )
    r.not_stored["by_video"] = {"cam1": box + mask}
    r.not_stored["annotation_ids"] = ids
    return r


def test_summary_names_the_annotations_not_stored() -> None:
    lines = report(2, 1, 0, [9, 4, 7]).summary().splitlines()
    assert lines[-2] == (
        "NOT STORED: 2 box and 1 mask annotations lie on frames this export does not store (stride / frames / kinds)"
    )
    assert lines[-1] == "  not stored: annotation ids 4, 7, 9"


def test_summary_names_the_first_ten_and_counts_the_rest() -> None:
    ids = list(range(1000, 0, -1))  # the report keeps the first 1000 of 1500
    text = report(1400, 100, 1500, ids).summary()
    assert "1500 on frames without a trustworthy picture in video 'cam1'" in text
    assert text.splitlines()[-1] == (
        "  not stored: annotation ids 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 1490 more "
        "(ExportReport.not_stored['annotation_ids'] in Python)"
    )


def test_summary_without_lost_annotations_names_none() -> None:
    assert "not stored" not in report(0, 0, 0, []).summary().lower()
