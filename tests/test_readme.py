"""The README as a new user reads it: the two commands at the top, and the walkthrough, run in a temporary folder.

Packages are not reinstalled: the commands after the set-up part run with this
environment's ``vidlabel`` and ``python``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.formats_util import dataset
from vidlabel import FrameReader, open_store
from vidlabel.dataset._rows import KIND_FIELDS
from vidlabel.demo import demo_truth, encode_demo_clip
from vidlabel.errors import AnnotationError, FormatError, VidlabelWarning
from vidlabel.formats import import_labels
from vidlabel.store._layout import REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = ("python3 -m venv", ". .venv/bin/activate", "pip install")


def _section(title: str) -> str:
    """The README's text from the heading ``## title`` to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def _blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced code block of ``text``, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def _top_commands() -> list[str]:
    head = README.split("\n## ", 1)[0]
    return [body.strip() for lang, body in _blocks(head) if lang == "bash"]


def _after_setup(command: str) -> str:
    """What a command runs once the environment is set up: its ``&&`` parts that are not set-up steps."""
    parts = [p.strip() for p in command.split("&&")]
    assert parts[: len(parts) - 1] and all(p.startswith(SETUP) for p in parts[:-1]), parts
    assert not parts[-1].startswith(SETUP)
    return parts[-1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("VIDLABEL_STORE", None)
    return env


def _run(command: str | list[str], cwd: Path, *, timeout: int = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout,
        shell=isinstance(command, str), executable="/bin/bash" if isinstance(command, str) else None,
    )  # fmt: skip
    assert done.returncode == 0, f"{command!r} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_the_readme_opens_with_the_two_commands():
    demo, tests = _top_commands()
    assert _after_setup(demo) == "vidlabel demo"
    assert _after_setup(tests) == "pytest"
    # the same set-up, the test command adding the dev extra
    assert demo.rsplit("&&", 1)[0].replace('".[torch]"', '".[torch,dev]"') == tests.rsplit("&&", 1)[0]


def test_ci_installs_as_the_readme_says_and_runs_its_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    _, tests = _top_commands()
    for step in tests.split("&&")[2:-1]:  # the pip installs
        words = shlex.split(step)
        assert any(shlex.split(line)[:2] == words[:2] and shlex.split(line)[-1] == words[-1] for line in
                   ci.splitlines() if line.startswith("pip install")), step  # fmt: skip
    assert ci.strip().splitlines()[-1] == _after_setup(tests)


@pytest.mark.slow
def test_the_demo_command_runs_as_a_new_user_would(tmp_path):
    demo, _ = _top_commands()
    done = _run(_after_setup(demo), tmp_path)
    assert "checks    all passed" in done.stdout, done.stdout
    assert (tmp_path / "vidlabel_demo" / "store" / "store.h5").is_file()
    store = open_store(tmp_path / "vidlabel_demo" / "store")
    assert len(store) == len(demo_truth().annotated_frames)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Run every command block of the walkthrough, in order, in a folder with a generated ``my_video.mp4``."""
    folder = tmp_path_factory.mktemp("walkthrough")
    encode_demo_clip(folder / "my_video.mp4", demo_truth(frame_count=90, marker=("lights_on", 30, 59)))
    outputs: dict[str, str] = {}
    for lang, body in _blocks(_section("Walkthrough: your own video")):
        if lang == "python":
            name = body.splitlines()[0].removeprefix("#").strip()
            assert re.fullmatch(r"\w+\.py", name), f"a Python block must start with '# NAME.py', got {name!r}"
            (folder / name).write_text(body)
        elif lang == "bash":
            outputs[body] = _run("set -euo pipefail\n" + body, folder).stdout
        else:
            pytest.fail(f"walkthrough block in language {lang!r}: the test does not know how to run it")
    return folder, outputs


@pytest.mark.slow
def test_the_walkthrough_runs_end_to_end(walkthrough):
    folder, outputs = walkthrough
    text = "\n".join(outputs.values())
    assert "added 5 annotations to video 'my_video'" in text
    assert "0 errors" in text
    release_id = re.search(r"^(r[0-9a-f]{12})$", text, re.M)
    assert release_id, text
    store = open_store(folder / "my_store")
    assert store.release_id == release_id.group(1)
    assert store.class_names == ["person", "car", "ball", "lights_on"]
    assert [frame for _, frame in store.index] == [0, 10, 20]  # the frames the annotation file annotates
    assert re.search(r"epoch 1: last batch \(3, 3, 240, 320\)", text), text
    frames = re.search(r"^epoch 1: frames \[(\d+), (\d+)\]$", text, re.M)  # the two frames with boxes
    assert frames and sorted(map(int, frames.groups())) == [0, 10], text


@pytest.mark.slow
def test_the_vtest_example_adds_the_shipped_annotation_file(tmp_path):
    """The vtest section's commands, run on a generated 768x576 ``vtest.avi``, with the shipped annotation file."""
    encode_demo_clip(
        tmp_path / "vtest.avi", demo_truth(width=768, height=576, frame_count=64, marker=("lights_on", 30, 60))
    )
    (tmp_path / "scripts").mkdir()
    shipped = ROOT / "scripts" / "vtest_annotations.jsonl"
    (tmp_path / "scripts" / shipped.name).write_bytes(shipped.read_bytes())
    rows = [line for line in shipped.read_text().splitlines() if line.strip()]
    (block,) = [body for lang, body in _blocks(_section("A real example: OpenCV's vtest.avi")) if lang == "bash"]
    text = _run("set -euo pipefail\n" + block, tmp_path).stdout
    assert f"added {len(rows)} annotations to video 'vtest'" in text
    assert "0 errors" in text and re.search(r"^r[0-9a-f]{12}$", text, re.M), text


def test_the_walkthrough_store_holds_the_readers_frames_and_the_file_rows(walkthrough):
    folder, _ = walkthrough
    store = open_store(folder / "my_store")
    with FrameReader(folder / "my_video.mp4") as reader:
        for i, (_, frame) in enumerate(store.index):
            sample = store.sample(i, with_masks=True)
            assert np.array_equal(sample["image"], reader.read(frame))
    rows = {s["frame_index"]: s for s in (store.sample(i, with_masks=True) for i in range(len(store)))}
    assert rows[0]["boxes"].tolist() == [[60, 24, 76, 64]] and rows[0]["track_ids"].tolist() == [1]
    assert sorted(rows[10]["labels"].tolist()) == [0, 1]
    ball = rows[20]
    assert ball["labels"].tolist() == [2] and ball["track_ids"].tolist() == [3]
    ys, xs = np.nonzero(ball["masks"][0])
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (200, 100, 216, 112)  # the RLE in the README
    assert ball["boxes"].tolist() == [[200, 100, 216, 112]]
    assert all(s["frame_labels"].tolist() == [0, 0, 0, 0] for s in rows.values())  # the marker is on 30..59


def test_the_sample_table_lists_the_keys_of_a_real_sample(walkthrough):
    folder, _ = walkthrough
    sample = open_store(folder / "my_store").sample(0, with_masks=True)
    table = _section("What a sample contains")
    documented = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?(?:, `(\w+)`)?", table, re.M))
    keys = {k for row in documented for k in row if k}
    assert keys == set(sample)


def test_the_sample_section_code_runs_in_the_walkthrough_folder(walkthrough):
    folder, _ = walkthrough
    (code,) = [body for lang, body in _blocks(_section("What a sample contains")) if lang == "python"]
    out = _run([sys.executable, "-c", code], folder).stdout
    assert out.strip() == "10 (2, 4) 0 (240, 320, 3)"  # the walkthrough file has 2 boxes on frame 10; store starts at 0


def test_the_walkthrough_says_how_to_remove_rows_added_twice(tmp_path):
    # validate and build refuse or warn "until they are edited or deleted", and step 2 run twice doubles the
    # rows, but the README named no way to delete one
    step2 = " ".join(_section("Walkthrough: your own video").split("**3.")[0].split())
    assert 'Dataset.open("my_dataset").delete_annotations(ids)' in step2
    assert "Adding the same file twice adds its rows twice" in step2 and 'set_status(ids, "rejected")' in step2
    ds = dataset(tmp_path / "ds")
    row = {"kind": "box", "label": "car", "start_frame": 1, "box": [1, 2, 11, 12]}
    first = ds.add_annotations([row], "cam1")
    with pytest.warns(VidlabelWarning, match=r"video 'cam1': the row just added \(annotation 2\) equals annotation 1 "
                      r"already stored .*remove it with Dataset.open\(.*\).delete_annotations\(\[2\]\) or leave it out of "
                      r"releases with set_status\(\[2\], 'rejected'\)"):  # fmt: skip
        second = ds.add_annotations([row], "cam1")
    assert [p.code for p in ds.validate(check_files=False)] == ["duplicate_annotation"]
    ds.delete_annotations(second)
    assert ds.validate(check_files=False) == [] and [r["annotation_id"] for r in ds.annotations("cam1")] == first
    with pytest.raises(AnnotationError, match=r"delete_annotations: 1 unknown annotation id\(s\): 99; nothing"):
        ds.delete_annotations([99])


def test_the_annotation_table_documents_every_field():
    table = _section("The annotation file (JSON Lines)")
    documented = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    fields = set().union(*KIND_FIELDS.values())
    assert documented == fields


@pytest.mark.parametrize(
    ("fmt", "name", "content", "match"),
    [
        ("coco-vid", "empty.json", b"", r"empty\.json line 1: not valid JSON"),
        ("ytvis", "empty.json", b"", r"empty\.json line 1: not valid JSON"),
        ("label-studio", "empty.json", b"", r"empty\.json line 1: not valid JSON"),
        ("cvat-video", "empty.xml", b"", r"empty\.xml line 1: not well-formed XML"),
        ("coco-vid", "other.json", b'{"a": 1}', r"other\.json videos: a COCO-VID file needs a list 'videos'"),
        ("ytvis", "other.json", b'{"a": 1}', r"other\.json videos: a YouTube-VIS file needs a list 'videos'"),
        ("cvat-video", "other.xml", b"<a/>", r"other\.xml <a>: the root element of a CVAT file is <annotations>"),
    ],
)
def test_the_formats_section_says_which_files_without_rows_are_errors(tmp_path, fmt, name, content, match):
    # the README said every empty file and all "JSON of another shape" only warn
    every = _section("Labels in and out: MOT, CVAT, YouTube-VIS, COCO-VID, Label Studio").split("### ")[0]
    said = " ".join(every.split())
    assert "(an empty file, or JSON of another shape)" not in said
    assert "An empty JSON or XML file is not valid JSON or XML: a `FormatError`" in said
    assert "COCO-VID or YouTube-VIS JSON without a `videos` list" in said
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(FormatError, match=match):
        import_labels(dataset(tmp_path / "ds"), fmt, f, video_id="cam1")


def test_the_store_layout_names_every_stored_array():
    layout = _section("The frame store")
    for name in [*VIDEO_ARRAYS, *REGION_FIELDS, *SEGMENT_FIELDS, "frames", "frames_crc32c", "/index"]:
        if name.endswith("_timestamp_us"):
            name = "start/end_timestamp_us"
        assert re.search(rf"(?<![\w/]){re.escape(name)}\b", layout), name


def test_the_readme_glossary_defines_its_terms():
    glossary = _section("Glossary")
    for term in ("pts", "timebase", "keyframe interval", "release", "view", "chunk"):
        assert f"**{term}" in glossary, term


def test_every_test_the_guarantees_name_exists() -> None:
    """'What vidlabel guarantees' backs each point with named tests: each must be a test function of that file."""
    text = _section("What vidlabel guarantees")
    named: list[tuple[str, str]] = []
    current = None
    for ref in re.findall(r"`([^`]+)`", text):
        match = re.fullmatch(r"(tests/(?:\w+/)?test_\w+\.py)::(test_\w+)(\[.*\])?", ref)
        if match:
            current = match.group(1)
            named.append((current, match.group(2)))
        elif re.fullmatch(r"test_\w+", ref):
            assert current, f"{ref} is named before any tests/ file"
            named.append((current, ref))
    assert len(named) >= 20, named
    missing = [f"{f}::{n}" for f, n in named if not re.search(rf"^def {n}\(", (ROOT / f).read_text(), re.M)]
    assert not missing, f"the guarantees name tests that do not exist: {missing}"
