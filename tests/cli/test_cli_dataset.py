"""The dataset commands of the ``vidlabel`` CLI, through ``vidlabel.cli.main``."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from tests.media import ClipTruth
from vidlabel import Dataset
from vidlabel.cli import main
from vidlabel.errors import DatasetCreateError, VidlabelWarning

META = json.dumps({"frame_count": 40, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48})


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "ds"
    assert run(capsys, "create", path)[0] == 0
    assert run(capsys, "add-labels", path, "person", "car", "goal")[0] == 0
    assert run(capsys, "add-video", path, tmp_path / "elsewhere" / "cam1.mp4", "--metadata", META)[0] == 0
    return path


def write_jsonl(path: Path, rows: list[object], blank_after: int | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_create_and_error_on_existing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "create", tmp_path / "new")
    assert code == 0 and "created dataset" in out and err == ""
    code, out, err = run(capsys, "create", tmp_path / "new")
    assert code == 1 and out == ""
    assert err.startswith("vidlabel: error: ") and "already holds a vidlabel dataset" in err
    assert "open it (Dataset.open, or any other `vidlabel` command) instead of creating it" in err
    assert err.count("\n") == 1


def test_create_says_which_folder_it_cannot_create(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("")
    code, out, err = run(capsys, "create", tmp_path / "f" / "sub" / "ds")
    assert code == 1 and out == ""
    assert err == (
        f"vidlabel: error: cannot create the dataset folder {tmp_path}/f/sub/ds: {tmp_path}/f is a file, "
        "not a folder; choose a writable location\n"
    )
    with pytest.raises(DatasetCreateError, match=r"cannot create the dataset folder .*/f/ds: .*/f is a file") as info:
        Dataset.create(tmp_path / "f" / "ds")
    assert isinstance(info.value, OSError) and info.value.path == str(tmp_path / "f" / "ds")
    if Path("/proc/self").is_dir():  # Linux: /proc takes no new folders, whoever asks
        code, _, err = run(capsys, "create", "/proc/x")
        assert code == 1 and err.startswith("vidlabel: error: cannot create the dataset folder /proc/x: /proc does not")
        assert "FileNotFoundError" not in err


def test_labels_view_and_video(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "add-labels", dataset, "car", "dog")
    assert code == 0 and out.strip() == "labels (4): person, car, goal, dog"
    code, out, _ = run(capsys, "add-view", dataset, "left", "--crop", 0, 0, 32, 48, "--output-size", 16, 24)
    assert code == 0 and "view 'left': crop (0, 0, 32, 48), resized to 16x24" in out
    ds = Dataset.open(dataset)
    v = ds.video("cam1")
    assert (v.frame_count, v.width, v.height, v.fps) == (40, 64, 48, {"num": 25, "den": 1})
    assert v.uri == str(tmp_path / "elsewhere" / "cam1.mp4")
    assert ds.views()["left"].output_size == (16, 24)


def test_add_view_refuses_a_crop_larger_than_a_video(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "add-view", dataset, "v1", "--crop", 0, 0, 700, 100)
    assert code == 1 and out == ""
    assert re.search(r"crop \(0, 0, 700, 100\) does not fit inside video 'cam1' \(64x48\)", err)
    assert Dataset.open(dataset).views() == {}


def test_add_video_metadata_needs_the_required_fields(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "add-video", dataset, "/nowhere/x.mp4", "--metadata", '{"frame_count": 3}')
    assert code == 1 and "--metadata needs frame_count, fps, width and height" in err
    with pytest.raises(SystemExit) as info:  # argparse refuses the argument (json kept the last, 25)
        run(capsys, "add-video", dataset, "/nowhere/x.mp4", "--metadata", '{"fps": 30, "fps": 25}')
    err = capsys.readouterr().err
    assert info.value.code == 2 and "argument --metadata: key 'fps' is given twice: give each key once" in err
    code, _, err = run(capsys, "add-video", dataset, "/nowhere/x.mp4", "--metadata", '{"colour": 1}')
    assert code == 1 and "unknown field(s) ['colour']" in err
    code, _, err = run(capsys, "add-video", dataset, "/nowhere/cam1.mp4", "--metadata", META)
    assert code == 1 and "'cam1' is already registered" in err
    assert "register the file under another id (video_id / `vidlabel add-video --video-id`)" in err


def test_add_video_probes_the_file(tmp_path: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ds"
    Dataset.create(path)
    code, out, err = run(capsys, "add-video", path, clip.path, "--video-id", "probed", "--metadata", '{"codec": "x"}')
    assert code == 0, err
    assert "added video 'probed': 48 frames, 64x48" in out
    meta = Dataset.open(path).video("probed")
    assert meta.frame_count == clip.frame_count and meta.content_hash and meta.codec == "x"
    assert meta.frame_index is not None and meta.frame_index.frame_count == clip.frame_count
    code, out, err = run(capsys, "add-video", path, clip.path, "--no-index")
    assert code == 0, err
    assert Dataset.open(path).video(clip.path.stem).frame_index is None


def test_add_video_refuses_metadata_that_contradicts_the_file(
    tmp_path: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12, item 6: a size or rotation the file does not have is refused, nothing registered."""
    path = tmp_path / "ds"
    Dataset.create(path)
    code, out, err = run(
        capsys, "add-video", path, clip.path, "--no-progress", "--metadata", '{"width": 500, "height": 900}'
    )
    assert code == 1 and out == ""
    assert err == (
        f"vidlabel: error: --metadata claims width 500 (the file has 64), height 900 (the file has 48) for "
        f"{str(clip.path)!r}: the size and rotation of a video whose file is given are what the file decodes to "
        "(64x48, rotation 0); drop those fields\n"
    )
    code, _, err = run(capsys, "add-video", path, clip.path, "--metadata", '{"rotation": 90}')
    assert code == 1 and "--metadata claims rotation 90 (the file has 0)" in err
    code, _, err = run(capsys, "add-video", path, tmp_path / "nofile.mp4", "--metadata",
                       json.dumps({**json.loads(META), "rotation": 45}))  # fmt: skip
    assert err == (
        "vidlabel: error: --metadata: rotation of video 'nofile' must be one of 0, 90, 180, 270, -90 "
        "(degrees counter-clockwise, as in the display matrix), got 45\n"
    )
    assert code == 1 and Dataset.open(path).videos() == []
    code, _, err = run(capsys, "add-video", path, clip.path, "--metadata", '{"width": 64, "rotation": 0}')
    assert code == 0, err  # what the file has is accepted


def test_add_annotations_from_jsonl(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"kind": "box", "label": "person", "start_frame": 3, "box": [1, 2, 11, 22], "track_id": 1},
        {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 9, "origin": "model", "confidence": 0.5},
        {"kind": "mask", "label": "car", "start_frame": 4, "mask": {"size": [48, 64], "counts": [100, 20, 2952]}},
    ]
    f = write_jsonl(tmp_path / "a.jsonl", rows, blank_after=1)
    code, out, err = run(capsys, "add-annotations", dataset, "cam1", f)
    assert code == 0, err
    assert out.strip() == "added 3 annotations to video 'cam1' (ids 1..3)"
    one = write_jsonl(tmp_path / "one.jsonl", rows[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        code, out, err = run(capsys, "add-annotations", dataset, "cam1", one)
    assert code == 0 and out.strip() == "added 1 annotation to video 'cam1' (id 4)"
    assert err == (  # the file's first row again: a file added twice is said at once, not only by validate
        "vidlabel: warning: video 'cam1': the row just added (annotation 4) equals annotation 1 already stored (same "
        "kind, label, view, frames, box and mask), as when one file is added twice; it is kept (validate warns "
        f"duplicate_annotation): remove it with Dataset.open({str(dataset.absolute())!r}).delete_annotations([4]) or "
        "leave it out of releases with set_status([4], 'rejected')\n"
    )
    Dataset.open(dataset).delete_annotations([4])
    got = Dataset.open(dataset).annotations()
    assert [r["kind"] for r in got] == ["box", "marker", "mask"]
    assert got[2]["box"] == (2.0, 4.0, 3.0, 24.0)
    clipped = write_jsonl(
        tmp_path / "c.jsonl", [{"kind": "box", "label": "car", "start_frame": 1, "box": [-5, 0, 9, 9]}]
    )
    assert run(capsys, "add-annotations", dataset, "cam1", clipped)[0] == 1
    assert run(capsys, "add-annotations", dataset, "cam1", clipped, "--clip")[0] == 0
    assert Dataset.open(dataset).annotations()[-1]["box"] == (0.0, 0.0, 9.0, 9.0)


def test_add_annotations_of_a_file_holding_a_row_twice_warns(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the file's third row repeats its first: it was added doubled without a word (only validate said it, later);
    # the warning named "rows 0 and 2 (0-based) of the input", not the file's lines (1 and 4: a blank line between)
    rows = [
        {"kind": "box", "label": "person", "start_frame": 3, "box": [1, 2, 11, 22], "track_id": 1},
        {"kind": "marker", "label": "goal", "start_frame": 5, "end_frame": 9},
    ]
    f = write_jsonl(tmp_path / "a.jsonl", [*rows, rows[0]], blank_after=1)
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        code, out, err = run(capsys, "add-annotations", dataset, "cam1", f)
    assert code == 0 and out.strip() == "added 3 annotations to video 'cam1' (ids 1..3)"
    assert err == (
        f"vidlabel: warning: video 'cam1': line 1 and line 4 of {f} are the same annotation: annotation 3 "
        "just added repeats annotation 1 (same kind, label, view, frames, box and mask); it is kept (validate warns "
        f"duplicate_annotation): remove it with Dataset.open({str(dataset.absolute())!r}).delete_annotations([3]) or "
        "leave it out of releases with set_status([3], 'rejected')\n"
    )
    assert [r["start_frame"] for r in Dataset.open(dataset).annotations()] == [3, 5, 3]


def test_add_annotations_errors_name_the_line(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"kind": "box", "label": "person", "start_frame": 3, "box": [1, 2, 11, 22]}
    bad = write_jsonl(tmp_path / "bad.jsonl", [good, good, {**good, "label": "prson"}], blank_after=1)
    code, out, err = run(capsys, "add-annotations", dataset, "cam1", bad)
    assert code == 1 and out == ""
    assert re.match(r"vidlabel: error: .*bad\.jsonl line 4, field 'label' \(video 'cam1'\): unknown label 'prson'", err)
    assert "row 2" not in err and "add-labels" in err
    assert err.count("\n") == 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(good) + "\n{not json\n")
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", broken)
    assert code == 1 and "broken.jsonl line 2: not valid JSON" in err
    listing = write_jsonl(tmp_path / "list.jsonl", [[1, 2]])
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", listing)
    assert code == 1 and "line 1: expected a JSON object" in err
    code, _, err = run(capsys, "add-annotations", dataset, "nope", write_jsonl(tmp_path / "g.jsonl", [good]))
    assert code == 1 and "unknown video 'nope'" in err
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", tmp_path / "missing.jsonl")
    assert code == 1 and err == f"vidlabel: error: annotation file {str(tmp_path / 'missing.jsonl')!r} not found\n"
    assert Dataset.open(dataset).annotations() == []


def test_a_cut_json_line_names_where_its_string_starts_once(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"kind": "box", "lab')  # a file cut while it was written
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", cut)
    assert code == 1
    assert "cut.jsonl line 1: not valid JSON (Unterminated string starting at column 17);" in err
    assert "at at" not in err


def test_add_annotations_refuses_a_file_that_is_not_utf8(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps({"kind": "box", "label": "person", "start_frame": 3, "box": [1, 2, 11, 22]}) + "\n"
    utf16 = tmp_path / "utf16.jsonl"
    utf16.write_bytes(good.encode("utf-16"))  # starts with the byte-order mark b"\xff\xfe"
    assert utf16.read_bytes()[:2] == b"\xff\xfe"
    code, out, err = run(capsys, "add-annotations", dataset, "cam1", utf16)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err == (
        f"vidlabel: error: {utf16} line 1, byte offset 0: not UTF-8 (byte 0xff: invalid start byte); "
        "JSON Lines files must be UTF-8; this file starts with a UTF-16 byte-order mark: save it as UTF-8\n"
    )
    latin = tmp_path / "latin.jsonl"
    second = '{"kind": "box", "label": "caf'
    latin.write_bytes(good.encode() + second.encode() + b'\xe9", "start_frame": 3, "box": [1, 2, 11, 22]}\n')
    code, out, err = run(capsys, "add-annotations", dataset, "cam1", latin)
    assert code == 1 and out == ""
    offset = len(good.encode()) + len(second)
    assert f"latin.jsonl line 2, byte offset {offset}: not UTF-8 (byte 0xe9: invalid continuation byte)" in err
    assert "JSON Lines files must be UTF-8" in err and "byte-order mark" not in err
    assert Dataset.open(dataset).annotations() == []  # nothing added, not even the good first line
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + good.encode())  # UTF-8 with a byte-order mark is UTF-8
    code, out, err = run(capsys, "add-annotations", dataset, "cam1", bom)
    assert code == 0 and out.strip() == "added 1 annotation to video 'cam1' (id 1)", err


@pytest.mark.parametrize(("text", "what"), [("", "is empty"), ("\n  \n\t\n", "holds only blank lines")])
def test_add_annotations_warns_on_a_file_without_rows(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, what: str
) -> None:
    import warnings

    f = tmp_path / "none.jsonl"
    f.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        code, out, err = run(capsys, "add-annotations", dataset, "cam1", f)
    assert code == 0 and out == "added 0 annotations to video 'cam1'\n"
    assert err == (f"vidlabel: warning: {f} {what}: no annotation rows to add (expected one JSON object per line)\n")
    assert Dataset.open(dataset).annotations() == []
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        code, _, err = run(capsys, "add-annotations", dataset, "nope", f)  # an unknown video is still an error
    assert code == 1 and "unknown video 'nope'" in err and "warning" not in err


def test_add_video_refuses_an_empty_id_or_one_with_a_slash(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for video_id, what in [("", "is empty"), ("  ", "is empty"), ("a/b", "contains '/'")]:
        code, out, err = run(
            capsys, "add-video", dataset, tmp_path / "x.mp4", "--video-id", video_id, "--metadata", META
        )
        assert code == 1 and out == ""
        assert err == (
            f"vidlabel: error: video id {video_id!r} from --video-id {what}; "
            "a video id is a non-empty name without '/', e.g. 'cam1'\n"
        )
    bad = json.dumps({**json.loads(META), "video_id": "x/y"})
    code, _, err = run(capsys, "add-video", dataset, tmp_path / "x.mp4", "--metadata", bad)
    assert code == 1 and "video id 'x/y' from --metadata's video_id contains '/'" in err
    assert "(give one with --video-id)" in err
    negative = json.dumps({**json.loads(META), "frame_count": -4})
    code, _, err = run(capsys, "add-video", dataset, tmp_path / "x.mp4", "--metadata", negative)
    assert code == 1 and err == "vidlabel: error: --metadata: frame_count must be >= 0 for video 'x', got -4\n"
    assert [v.video_id for v in Dataset.open(dataset).videos()] == ["cam1"]


def test_build_releases_validate_info(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "a.jsonl", [{"kind": "box", "label": "car", "start_frame": 3, "box": [1, 2, 11, 22]}])
    run(capsys, "add-annotations", dataset, "cam1", f)
    code, out, err = run(capsys, "releases", dataset)
    assert code == 0 and "no releases yet" in out
    code, out, err = run(capsys, "build", dataset)
    assert code == 0
    release_id = out.strip()
    assert re.fullmatch(r"r[0-9a-f]{12}", release_id)  # stdout holds only the id
    assert "new release" in err and "missing_video_file" in err
    assert re.search(r": new release; 1 row \(1 box\); 1 warning; ", err), err  # counts of 1 say so
    code, out, _ = run(capsys, "build", dataset)
    assert code == 0 and out.strip() == release_id
    code, out, _ = run(capsys, "releases", dataset)
    assert code == 0 and re.fullmatch(rf"{release_id}  \S+Z  1 row  \(latest\)\n", out)

    code, out, _ = run(capsys, "validate", dataset)
    assert code == 0
    assert "warning missing_video_file (video 'cam1')" in out and out.endswith("0 errors, 1 warning\n")
    code, out, _ = run(capsys, "validate", dataset, "--json")
    (line,) = out.splitlines()
    assert json.loads(line)["code"] == "missing_video_file"

    code, out, _ = run(capsys, "info", dataset)
    assert code == 0
    assert "videos: 1" in out and "cam1: 40 frames, 64x48, 25/1 fps, no index, " in out
    assert ", no index, None" not in out
    assert "labels (3): person, car, goal" in out
    assert "annotations: 1 (1 box, 0 masks, 0 markers; 1 unreviewed, 0 approved, 0 rejected)" in out
    assert f"releases: {release_id}" in out


def test_validate_exit_status_on_errors(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "a.jsonl", [{"kind": "box", "label": "car", "start_frame": 30, "box": [1, 2, 11, 22]}])
    run(capsys, "add-annotations", dataset, "cam1", f)
    ds = Dataset.open(dataset)
    with pytest.warns(
        VidlabelWarning, match=r"video 'cam1' .*: 1 annotation row past its last frame 19 \(up to frame 30\)"
    ):
        ds.update_video(ds.video("cam1").replace(frame_count=20))
    code, out, _ = run(capsys, "validate", dataset)
    assert code == 1 and "error frame_out_of_range" in out and "1 error," in out
    code, out, err = run(capsys, "build", dataset)
    assert code == 1 and out == "" and "refused" in err and err.count("\n") == 1


def test_validate_prints_at_most_20_problems_of_each_code(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"kind": "box", "label": "car", "start_frame": n, "box": [1, 2, 11, 22]} for n in range(10, 33)]
    assert run(capsys, "add-annotations", dataset, "cam1", write_jsonl(tmp_path / "a.jsonl", rows))[0] == 0
    ds = Dataset.open(dataset)
    with pytest.warns(VidlabelWarning, match=r"video 'cam1': 35 frames have no trustworthy picture \(5\.\.39"):
        ds.update_video(ds.video("cam1").replace(untrusted_frames=[(5, 39)]))  # all 23 boxes are on untrusted frames
    assert len(ds.validate()) == 24  # the Python API returns every problem
    code, out, _ = run(capsys, "validate", dataset)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1 + 20 + 1 + 1
    assert lines[0].startswith("warning missing_video_file (video 'cam1')")
    untrusted = [line for line in lines if line.startswith("warning untrusted_frame (video 'cam1', annotation ")]
    assert [int(re.findall(r"annotation (\d+)", line)[0]) for line in untrusted] == list(range(1, 21))
    assert lines[-2] == "... and 3 more untrusted_frame warnings (vidlabel validate --json lists every problem)"
    assert lines[-1] == "0 errors, 24 warnings"
    code, out, _ = run(capsys, "validate", dataset, "--json")
    assert code == 0 and [json.loads(line)["annotation_id"] for line in out.splitlines()] == [None, *range(1, 24)]


def test_missing_dataset_and_info_on_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["build", tmp_path / "none"], ["validate", tmp_path / "none"], ["releases", tmp_path / "none"]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "" and "does not exist" in err and err.count("\n") == 1
    code, _, err = run(capsys, "info", tmp_path / "none")
    assert code == 1 and "does not exist" in err
    # a folder that is neither said only "no vidlabel frame store", as if a dataset could not be meant
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    code, out, err = run(capsys, "info", tmp_path / "plain")
    assert (code, out) == (1, "") and err == (
        f"vidlabel: error: {str(tmp_path / 'plain')!r} is neither a vidlabel dataset (it has no vidlabel.sqlite) nor a "
        "frame store (no store in it, nor directly inside it); give a dataset folder or a store\n"
    )


@pytest.mark.parametrize(
    "command",
    ["create", "add-video", "add-labels", "add-view", "add-annotations", "build", "releases", "validate", "info"],
)
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "usage: vidlabel " + command in capsys.readouterr().out


def test_every_option_has_help_and_cache_speaks_to_users() -> None:
    import argparse

    from vidlabel.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [
        f"{name} {action.option_strings[-1]}"
        for name, command in sub.choices.items()
        for action in command._actions
        if action.option_strings and action.help is None
    ]
    assert missing == []
    cache_help = sub.choices["cache"].format_help()
    assert "spec" not in cache_help and "FrameSamples(cache=OUT)" in cache_help
    assert "counted per video" in sub.choices["export"].format_help()


def test_add_video_no_progress_reaches_probe(
    tmp_path: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    module = sys.modules["vidlabel.video._probe"]  # the package attribute vidlabel.probe is the function
    calls: list[bool] = []
    real = module.probe

    def spy(*args: object, progress: bool = True, **kw: object) -> object:
        calls.append(progress)
        return real(*args, progress=progress, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "probe", spy)
    Dataset.create(tmp_path / "ds")
    assert run(capsys, "add-video", tmp_path / "ds", clip.path, "--video-id", "a", "--no-progress")[0] == 0
    assert run(capsys, "add-video", tmp_path / "ds", clip.path, "--video-id", "b")[0] == 0
    assert calls == [False, True]


def test_add_video_refuses_a_registered_id_before_probing(
    dataset: Path, clip: ClipTruth, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    module = sys.modules["vidlabel.video._probe"]
    calls: list[object] = []
    real = module.probe

    def spy(*args: object, **kw: object) -> object:
        calls.append(args[0])
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "probe", spy)
    before = Dataset.open(dataset).video("cam1")
    for argv in (["--video-id", "cam1"], ["--metadata", '{"video_id": "cam1"}']):
        code, out, err = run(capsys, "add-video", dataset, clip.path, *argv)
        assert code == 1 and out == ""
        assert err == (
            f"vidlabel: error: video 'cam1' is already registered in {dataset.absolute()}; register the file under "
            "another id (video_id / `vidlabel add-video --video-id`) or replace its metadata with update_video "
            "(`vidlabel add-video --replace`)\n"
        )
    assert calls == [] and Dataset.open(dataset).video("cam1") == before  # the file was never opened
    code, out, err = run(capsys, "add-video", dataset, clip.path, "--video-id", "cam1", "--replace")
    assert code == 0 and out.startswith(f"replaced video 'cam1': {clip.frame_count} frames"), err
    assert calls == [str(clip.path)]


def test_add_annotations_names_a_pipe_as_not_a_regular_file_not_as_missing(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`vidlabel add-annotations DS cam1 /dev/stdin` said "'/dev/stdin' not found" of a path that is there."""
    import os

    fifo = tmp_path / "rows.fifo"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", fifo)
    assert code == 1 and "is not a regular file (a pipe or a device)" in err and "not found" not in err
    assert Dataset.open(dataset).annotations() == []


def test_check_video_refuses_negative_reads_as_an_option_error(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "check-video", dataset, "cam1", "--reads", "-1")
    assert code == 1 and err == "vidlabel: error: --reads must be >= 0, got -1\n"  # not 'ValueError: ...'


def test_add_annotations_refuses_a_field_given_twice_on_a_line(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON keeps the last of two equal keys: the row below was stored as a 'car' without a word."""
    good = json.dumps({"kind": "box", "label": "person", "start_frame": 3, "box": [1, 2, 11, 22]})
    twice = '{"kind": "box", "label": "person", "start_frame": 4, "box": [1, 2, 11, 22], "label": "car"}'
    path = tmp_path / "twice.jsonl"
    path.write_text(good + "\n" + twice + "\n")
    code, _, err = run(capsys, "add-annotations", dataset, "cam1", path)
    assert code == 1 and err == f"vidlabel: error: {path} line 2: field 'label' is given twice; give each field once\n"
    assert Dataset.open(dataset).annotations() == []


def test_add_video_replace_with_a_shorter_file_warns_of_the_rows_left_outside(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], clip: ClipTruth
) -> None:
    """`add-video --replace` with a shorter file (a trimmed re-encode given by mistake) said only "replaced" and
    left the rows past the new end for `validate` to find; it now says how many rows no longer fit, at once."""
    meta = json.dumps({"frame_count": 100, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48})
    assert run(capsys, "add-video", dataset, tmp_path / "elsewhere" / "cam2.mp4", "--metadata", meta)[0] == 0
    last = clip.frame_count - 1  # the file registered in its place ends at this frame
    rows = [
        {"kind": "box", "label": "car", "start_frame": last, "box": [1, 2, 11, 22]},  # fits
        {"kind": "box", "label": "car", "start_frame": last + 1, "box": [1, 2, 11, 22]},  # one past the end
        {"kind": "marker", "label": "goal", "start_frame": 2, "end_frame": 99},  # ends past it
    ]
    assert run(capsys, "add-annotations", dataset, "cam2", write_jsonl(tmp_path / "a.jsonl", rows))[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        code, out, err = run(
            capsys, "add-video", dataset, clip.path, "--video-id", "cam2", "--replace", "--no-progress"
        )
    assert code == 0 and out.startswith(f"replaced video 'cam2': {clip.frame_count} frames")
    assert err == (
        f"vidlabel: warning: video 'cam2' in {str(dataset.absolute())!r}: 2 annotation rows past its last frame "
        f"{last} (up to frame 99); the rows are kept: validate reports them as errors "
        "(frame_out_of_range, box_out_of_frame, mask_size_mismatch) and build() refuses a release until they are "
        "edited or deleted, or the right file is registered again\n"
    )
    ds = Dataset.open(dataset)
    assert len(ds.annotations("cam2")) == 3  # nothing dropped
    ds.delete_annotations([r["annotation_id"] for r in ds.annotations("cam2") if r["end_frame"] > last])
    with warnings.catch_warnings():  # the same file again: every row fits, nothing to say
        warnings.simplefilter("error", VidlabelWarning)
        code, _, err = run(capsys, "add-video", dataset, clip.path, "--video-id", "cam2", "--replace", "--no-progress")
    assert code == 0 and err == ""


def test_info_says_no_file_recorded_rather_than_none(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = json.dumps({"frame_count": 10, "fps": {"num": 25, "den": 1}, "width": 64, "height": 48, "sources": []})
    assert run(capsys, "add-video", dataset, "nothere.mp4", "--metadata", meta)[0] == 0
    code, out, _ = run(capsys, "info", dataset)
    assert code == 0 and "  nothere: 10 frames, 64x48, 25/1 fps, no index, no file recorded\n" in out
