"""A full disk and a damaged database (issue 12, items 11 and 12): one clear line saying what failed, that nothing
was lost and how to resume; no traceback, nothing half written. The disk is filled by test hooks: SQLite's own
error raised just before COMMIT, ENOSPC from the release writer, a connection that cannot be opened."""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import struct
import zlib
from pathlib import Path

import pytest

from tests.media import encode_clip
from vidlabel import Dataset, VideoMetadata, probe
from vidlabel.cli import main
from vidlabel.dataset import _dataset, _db
from vidlabel.errors import AnnotationError, DatasetError, VideoDecodeError

META = json.dumps({"frame_count": 40, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48})
ROWS = [{"kind": "box", "label": "car", "start_frame": n, "box": [1, 2, 11, 22]} for n in range(5)]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "ds"
    assert main(["create", str(path)]) == 0
    assert main(["add-labels", str(path), "car"]) == 0
    assert main(["add-video", str(path), str(tmp_path / "cam1.mp4"), "--metadata", META]) == 0
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def fill_disk_at(operation: str):  # type: ignore[no-untyped-def]
    def hook(op: str) -> None:
        if op == operation:
            raise sqlite3.OperationalError("database or disk is full")

    return hook


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("vidlabel: error: ")
    return err


def test_disk_full_in_add_annotations(dataset: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    monkeypatch.setattr(_dataset, "_before_commit", fill_disk_at("add_annotations"))
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 1
    err = one_line_error(capsys)
    assert err == (
        f"vidlabel: error: cannot add-annotations in dataset {dataset}: the disk is full (database or disk is full). "
        "Nothing was lost: the change was rolled back and the dataset is as it was before the command; free space "
        "and run the same command again\n"
    )
    assert len(Dataset.open(dataset).snapshot().table) == 0
    with pytest.raises(DatasetError, match=r"cannot add-annotations .* the disk is full"):
        Dataset.open(dataset).add_annotations(ROWS, "cam1")
    monkeypatch.setattr(_dataset, "_before_commit", None)  # space freed: the same command resumes
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    assert len(Dataset.open(dataset).snapshot().table) == len(ROWS)


def test_disk_full_in_build(dataset: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    capsys.readouterr()

    def no_space(*args: object, **kwargs: object) -> bool:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_dataset, "write_release", no_space)
    assert main(["build", str(dataset)]) == 1
    err = one_line_error(capsys)
    assert f"cannot build in dataset {dataset}: writing the release file {dataset}/releases/r" in err
    assert "[Errno 28] No space left on device; the disk is full). Nothing was lost: the dataset is unchanged" in err
    assert err.endswith("free space and run `vidlabel build` again\n")
    assert Dataset.open(dataset).releases() == [] and list((dataset / "releases").iterdir()) == []
    monkeypatch.undo()

    monkeypatch.setattr(_dataset, "_before_commit", fill_disk_at("build"))  # the release file fits, its record not
    assert main(["build", str(dataset)]) == 1
    assert "cannot build in dataset" in one_line_error(capsys)
    assert Dataset.open(dataset).releases() == []
    monkeypatch.setattr(_dataset, "_before_commit", None)
    assert main(["build", str(dataset)]) == 0
    assert len(Dataset.open(dataset).releases()) == 1


def test_a_database_that_cannot_be_opened_is_not_called_not_a_dataset(dataset: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    real_connect = sqlite3.connect

    def full(*args: object, **kwargs: object) -> sqlite3.Connection:
        con = real_connect(*args, **kwargs)  # type: ignore[arg-type]
        con.close()
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_db.sqlite3, "connect", full)
    for command in ("releases", "build", "info"):
        assert main([command, str(dataset)]) == 1
        err = one_line_error(capsys)
        assert "is not a vidlabel dataset" not in err
        assert err.startswith(f"vidlabel: error: cannot read dataset {dataset}: SQLite could not open")
        assert "(disk I/O error). Nothing was changed; if the disk is full, free space and run the command again" in err


def damage(dataset: Path) -> None:
    """Overwrite every database page after the first two (the header and the meta table) with garbage."""
    Dataset.open(dataset).close()
    db = dataset / _db.DB_NAME
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[2 * page :] = b"\xa5" * (len(data) - 2 * page)
    db.write_bytes(bytes(data))


def test_a_damaged_database_gives_one_line_in_info_and_validate(dataset: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    damage(dataset)
    capsys.readouterr()
    for command in ("info", "validate", "build"):
        assert main([command, str(dataset)]) == 1
        err = one_line_error(capsys)
        assert f"the database of dataset {dataset} is damaged" in err and "malformed" in err
        assert "Restore vidlabel.sqlite from a backup" in err


# -- item 12: bad inputs refused at once, one line, nothing written ------------------------------------------


def test_a_300_character_video_id_is_refused_before_anything_is_written(dataset: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    long_id = "v" * 300
    assert main(["add-video", str(dataset), "/nowhere/x.mp4", "--video-id", long_id, "--metadata", META]) == 1
    err = one_line_error(capsys)
    assert f"video id '{long_id}' from --video-id is 300 bytes long; at most 200 (video ids name files" in err
    ds = Dataset.open(dataset)
    with pytest.raises(AnnotationError, match=r"video id 'v{300}' is 300 bytes long; at most 200 .*nothing was added"):
        ds.add_video(VideoMetadata(video_id=long_id, frame_count=3, fps={"num": 1, "den": 1}, width=4, height=4))
    assert [v.video_id for v in ds.videos()] == ["cam1"]


def test_a_file_name_that_is_not_utf8_needs_a_video_id(tmp_path: Path, dataset: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    clip = encode_clip(tmp_path / "plain.mp4", n_frames=6)
    odd = os.fsdecode(bytes(tmp_path) + b"/caf\xe9.mp4")  # a Latin-1 name: undecodable bytes become surrogates
    os.rename(clip.path, odd)
    capsys.readouterr()
    assert main(["add-video", str(dataset), odd, "--no-progress"]) == 1
    err = one_line_error(capsys)
    assert "video id 'caf\\udce9' from the file name of" in err
    assert "is not UTF-8 text (it comes from a file name with bytes that are not UTF-8)" in err
    assert err.endswith("(give one with --video-id)\n")
    assert [v.video_id for v in Dataset.open(dataset).videos()] == ["cam1"]
    assert main(["add-video", str(dataset), odd, "--video-id", "cafe", "--no-progress"]) == 0
    assert main(["info", str(dataset)]) == 0 and main(["validate", str(dataset)]) == 0


def test_json_nested_too_deeply_is_one_line(dataset: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    deep = tmp_path / "deep.jsonl"
    deep.write_text(json.dumps(ROWS[0]) + "\n" + "[" * 100000 + "\n")
    capsys.readouterr()
    assert main(["add-annotations", str(dataset), "cam1", str(deep)]) == 1
    assert one_line_error(capsys) == (
        f"vidlabel: error: {deep} line 2: JSON nested too deeply to read; expected one flat annotation object per "
        "line\n"
    )
    assert len(Dataset.open(dataset).snapshot().table) == 0
    with pytest.raises(SystemExit):  # argparse's own usage error (exit status 2) for --metadata
        main(["add-video", str(dataset), "/nowhere/y.mp4", "--metadata", "[" * 100000])
    assert "--metadata: JSON nested too deeply to read" in capsys.readouterr().err


def test_an_output_size_no_memory_holds_is_refused(dataset: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert (
        main(["add-view", str(dataset), "big", "--crop", "0", "0", "10", "10", "--output-size", "100000", "100000"])
        == 1
    )
    assert one_line_error(capsys) == (
        "vidlabel: error: view 'big': output_size 100000x100000 is larger than 16384 pixels a side (one such RGB "
        "image would take 27.9 GiB); choose a size up to 16384; nothing was added\n"
    )
    assert Dataset.open(dataset).views() == {}
    assert main(["export", str(dataset), str(tmp_path / "out"), "--output-size", "100000", "100000"]) == 1
    assert "output_size 100000x100000 is larger than 16384 pixels a side" in one_line_error(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_add_video_refuses_what_is_not_a_regular_file(dataset: Path, tmp_path: Path, capsys, special: str) -> None:  # type: ignore[no-untyped-def]
    path = special
    if special == "fifo":
        path = str(tmp_path / "pipe.mp4")
        os.mkfifo(path)
    capsys.readouterr()
    assert main(["add-video", str(dataset), path, "--no-progress"]) == 1  # returns: nothing read from it
    assert one_line_error(capsys) == (
        f"vidlabel: error: {path!r} is not a regular file (a device, pipe or socket); give a video file\n"
    )
    with pytest.raises(VideoDecodeError, match="is not a regular file"):
        probe(path)
    assert [v.video_id for v in Dataset.open(dataset).videos()] == ["cam1"]


@pytest.mark.parametrize("counts", [[99999999999999999999999], [10, 99999999999999999999999, 5]])
def test_rle_counts_beyond_int64_are_refused(dataset: Path, tmp_path: Path, capsys, counts: list[int]) -> None:  # type: ignore[no-untyped-def]
    rows = tmp_path / "masks.jsonl"
    row = {"kind": "mask", "label": "car", "start_frame": 0, "mask": {"size": [48, 64], "counts": counts}}
    rows.write_text(json.dumps(row) + "\n")
    capsys.readouterr()
    assert main(["add-annotations", str(dataset), "cam1", str(rows)]) == 1
    err = one_line_error(capsys)
    assert f"{rows} line 1" in err and "mask RLE counts are not valid COCO RLE (Python int too large" in err
    with pytest.raises(AnnotationError, match=r"row 0.*mask RLE counts are not valid COCO RLE"):
        Dataset.open(dataset).add_annotations([row], "cam1")
    assert len(Dataset.open(dataset).snapshot().table) == 0


@pytest.mark.parametrize("counts", [[2**63 - 1, 2**63 - 1, 2 + 48 * 64], [5, 2**63 - 1, 2**63 - 1, 48 * 64 - 3]])
def test_rle_counts_whose_int64_sum_wraps_to_the_mask_size_are_refused(dataset: Path, counts: list[int]) -> None:
    # before: the runs summed in int64 wrapped around to 48 * 64, so the check passed and decoding the runs
    # crashed the Python process (a segmentation fault in NumPy's repeat), from any file of masks
    row = {"kind": "mask", "label": "car", "start_frame": 0, "mask": {"size": [48, 64], "counts": counts}}
    with pytest.raises(AnnotationError, match=rf"row 0.*mask RLE counts cover {sum(counts)} pixels, but its size "
                       r"48x64 has 3072"):  # fmt: skip
        Dataset.open(dataset).add_annotations([row], "cam1")
    assert len(Dataset.open(dataset).snapshot().table) == 0


def _chunk_blob(con: sqlite3.Connection) -> bytes:
    (blob,) = con.execute("SELECT data FROM chunks").fetchone()
    return bytes(blob)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda blob: blob[:4], r"4 bytes, shorter than its 20-byte header"),  # was struct.error
        (lambda blob: blob[:20] + b"garbage", r"its columns are not zlib data"),  # was zlib.error
        # a header counting more rows than the columns hold: a raw ValueError (buffer is smaller than requested
        # size); 2**32 - 1 rows are refused before inflating anything
        (lambda blob: blob[:4] + struct.pack("<I", 6) + blob[8:], r"its columns hold 395 bytes, not the 474 its "
         r"header's 6 rows, 0 mask rows and 0 RLE bytes take"),
        (lambda blob: blob[:4] + struct.pack("<I", 2**32 - 1) + blob[8:], r"its header's 4294967295 rows, 0 mask "
         r"rows and 0 RLE bytes take 339302416305 bytes, more than its \d+ bytes of zlib data can hold"),
        # 2**63 RLE bytes: a raw OverflowError
        (lambda blob: blob[:12] + struct.pack("<Q", 2**63) + blob[20:], r"its header's 5 rows, 0 mask rows and "
         r"9223372036854775808 RLE bytes take \d+ bytes, more than its \d+ bytes of zlib data can hold"),
        # 200 MB of zeros (a zlib bomb) was inflated whole, and read as 5 boxes [0, 0, 0, 0] without an error
        (lambda blob: blob[:20] + zlib.compress(b"\0" * (200 * 2**20), 9), r"its columns hold more than \d+ bytes"),
    ],
)  # fmt: skip
def test_a_damaged_annotation_chunk_is_a_dataset_error_naming_it(
    dataset: Path, tmp_path: Path, damage, message
) -> None:  # type: ignore[no-untyped-def]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    con = sqlite3.connect(dataset / "vidlabel.sqlite")
    con.execute("UPDATE chunks SET data = ?", (damage(_chunk_blob(con)),))
    con.commit()
    con.close()
    where = re.escape(f"annotation chunk 1 of {dataset / 'vidlabel.sqlite'} is damaged (")
    for call in (lambda: Dataset.open(dataset).annotations("cam1"), lambda: Dataset.open(dataset).build()):
        with pytest.raises(DatasetError, match=where + message + r".*\): the file was edited or damaged; restore it"):
            call()


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        # before: raw JSONDecodeError, RecursionError and AttributeError on every read of the videos
        ("UPDATE videos SET metadata = 'x'", r"a video's metadata in {db} is not JSON \(JSONDecodeError: "),
        ("UPDATE videos SET metadata = '" + "[" * 100_000 + "]" * 100_000 + "'",
         r"a video's metadata in {db} is not JSON \(RecursionError: "),
        ("UPDATE videos SET metadata = '[1]'", r"a video's metadata in {db} is list, not a JSON object"),
        # before: a raw zlib.error
        ("UPDATE videos SET index_pts = X'0102', index_keyframes = X'0102', frame_index = '{{}}'",
         r"the frame index of video 'cam1' in {db} is damaged \(Error -3 while decompressing data"),
    ],
)  # fmt: skip
def test_a_damaged_video_record_is_a_dataset_error_naming_the_database(dataset: Path, sql: str, message: str) -> None:
    con = sqlite3.connect(dataset / "vidlabel.sqlite")
    con.execute(sql.format())
    con.commit()
    con.close()
    expected = message.format(db=re.escape(str(dataset / "vidlabel.sqlite"))) + r".*the file was edited or damaged"
    for call in (lambda: Dataset.open(dataset).videos(), lambda: Dataset.open(dataset).build()):
        with pytest.raises(DatasetError, match=expected):
            call()


#: The packed frame index of 40 frames (pts 0..39, keyframe 0), as the database holds one.
_PTS, _KEYFRAMES = _db.pack_ints(list(range(40))).hex(), _db.pack_ints([0]).hex()


@pytest.mark.parametrize(
    ("sql", "field", "message"),
    [
        ("UPDATE videos SET metadata = json_set(metadata, '$.frame_count', 'many')", "frame_count",
         r"the metadata of video 'cam1' in {db} is damaged \(frame_count of video 'cam1' must be an integer, got "
         r"'many'\)"),
        ("UPDATE videos SET metadata = json_set(metadata, '$.fps', 'fast')", "fps",
         r"the metadata of video 'cam1' in {db} is damaged \(fps of video 'cam1' must be an exact rational like "
         r"\{{'num': 30000, 'den': 1001\}}, got 'fast'\)"),
        ("UPDATE videos SET metadata = json_set(metadata, '$.untrusted_frames', 5)", "untrusted_frames",
         r"the metadata of video 'cam1' in {db} is damaged \(untrusted_frames of video 'cam1' must be a list of "
         r"\(first, last\) frame pairs, got 5\)"),
        (f"UPDATE videos SET index_pts = X'{_PTS}', index_keyframes = X'{_KEYFRAMES}', frame_index = '{{{{}}}}'",
         "timebase", r"the frame index of video 'cam1' in {db} is damaged \('timebase'\)"),  # the field missing
    ],
)  # fmt: skip
def test_wrong_typed_video_metadata_in_the_database_is_a_dataset_error_naming_file_video_and_field(
    dataset: Path, tmp_path: Path, capsys, sql: str, field: str, message: str
) -> None:  # type: ignore[no-untyped-def]
    # before: frame_count 'many' (a raw UPDATE) raised AnnotationError, as if the user's input were wrong, and an
    # untrusted_frames of 5 or a frame index without its timebase a bare TypeError or KeyError
    con = sqlite3.connect(dataset / "vidlabel.sqlite")
    con.execute(sql.format())
    con.commit()
    con.close()
    db = str(dataset / "vidlabel.sqlite")
    expected = message.format(db=re.escape(db)) + r": the file was edited or damaged; restore it from a backup"
    assert field in expected
    ds = Dataset.open(dataset)
    calls = [ds.videos, lambda: ds.video("cam1"), ds.validate, ds.build]
    if field != "timebase":  # rows are checked against the metadata (not the frame index)
        calls.append(lambda: ds.add_annotations(ROWS, "cam1"))
    for call in calls:
        with pytest.raises(DatasetError, match=expected) as got:
            call()
        assert got.value.video_id == "cam1" and got.value.path == db and not isinstance(got.value, AnnotationError)
    capsys.readouterr()
    assert main(["info", str(dataset)]) == 1
    err = one_line_error(capsys)
    assert re.search(expected, err) and "`vidlabel add-video DATASET FILE --video-id cam1 --replace`" in err
    # what the message says repairs it: the video registered again
    assert main(["add-video", str(dataset), str(tmp_path / "cam1.mp4"), "--metadata", META, "--replace"]) == 0
    assert Dataset.open(dataset).video("cam1").frame_count == json.loads(META)["frame_count"]
    assert main(["add-annotations", str(dataset), "cam1", str(tmp_path / "rows.jsonl")]) == 0
    assert len(Dataset.open(dataset).build()[0].table) == len(ROWS)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("frame_count", 10**12, r"frame_count of video 'cam1' must be at most 2147483647, got 1000000000000"),
        ("width", 2**31, r"width and height of video 'cam1' must be at most 65536 pixels \(the largest frame a codec "
         r"decodes\), got 2147483648x48"),
    ],
)  # fmt: skip
def test_absurd_video_sizes_are_refused_on_registration_and_when_read(
    dataset: Path, field: str, value: int, message: str
) -> None:
    # before: accepted and stored; FrameSamples(frames="all") of a frame_count of 10**12 was a raw MemoryError
    # (7.28 TiB), and a mask on a frame of 2**31 pixels a side asked as much of its decode
    with pytest.raises(AnnotationError, match=message.replace("cam1", "cam2")):
        Dataset.open(dataset).add_video({**json.loads(META), "video_id": "cam2", field: value})
    con = sqlite3.connect(dataset / "vidlabel.sqlite")
    con.execute(f"UPDATE videos SET metadata = json_set(metadata, '$.{field}', {value})")
    con.commit()
    con.close()
    db = re.escape(str(dataset / "vidlabel.sqlite"))  # read back, a damaged database: a DatasetError naming it
    with pytest.raises(DatasetError, match=rf"the metadata of video 'cam1' in {db} is damaged \({message}\)"):
        Dataset.open(dataset).videos()
    with pytest.raises(DatasetError, match=message):
        Dataset.open(dataset).build()
