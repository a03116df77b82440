"""ExportReport.summary: what the command line shows after an export."""

from __future__ import annotations

from vidlabel._words import plural
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


def test_counts_of_one_are_singular() -> None:
    # before: "1 markers have no stored frame", "1 videos, 1 frames stored", "1 damaged frames units", ...
    one = ExportReport(out="st", format="mediasequence", codec="none", release_id="r0", videos=1, samples=1)
    one.videos_up_to_date, one.records, one.shards, one.untrusted_frames = 1, 1, 1, 1
    one.markers_without_stored_frames, one.damaged_units = 1, ["frames unit k of video 'cam1'"]
    text = one.summary()
    for phrase in (
        "1 SequenceExample in 1 TFRecord shard\n",
        "1 video, 1 frame stored; decoded 0, copied 0, reused 0; 1 video up to date",
        "1 frame without a trustworthy picture left out",
        "1 damaged frames unit written again: frames unit k of video 'cam1'",
        "1 marker has no stored frame (kept as segments)",
    ):
        assert phrase in text, text
    two = ExportReport(out="st", format="hdf5", codec="none", release_id="r0", videos=2, samples=2)
    two.videos_up_to_date, two.untrusted_frames, two.markers_without_stored_frames = 2, 2, 2
    two.damaged_units = ["u1", "u2"]
    text = two.summary()
    for phrase in (
        "2 videos, 2 frames stored; decoded 0, copied 0, reused 0; 2 videos up to date",
        "2 frames without a trustworthy picture left out",
        "2 damaged frames units written again: u1; u2",
        "2 markers have no stored frame (kept as segments)",
    ):
        assert phrase in text, text


def test_plural() -> None:
    assert [plural(n, "box") for n in (0, 1, 2)] == ["0 boxes", "1 box", "2 boxes"]
    assert [plural(n, "frames unit") for n in (1, 3)] == ["1 frames unit", "3 frames units"]
