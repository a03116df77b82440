"""The README and the docs as a new user reads them: the two commands at the top, and every code block.

Every ``bash`` and ``python`` block of the README's quickstart and of every page under ``docs/`` runs, in
order, in a fresh folder per page (the conventions are in ``docs/development.md``):

- ``<!-- docs-test: folder=NAME -->`` anywhere in a page picks the folder it starts from: ``video`` (a
  generated ``my_video.mp4``), ``tutorial`` (a copy of the folder the tutorial leaves), ``vtest`` (a
  generated 768x576 ``vtest.avi``, the tutorial's ``train.py`` and ``VIDLABEL_CLONE`` set); else empty;
- ``<!-- docs-test: skip REASON -->`` on the line before a block leaves it out, with its reason (or
  ``notest`` in the block's info string);
- a ``python`` block whose first line is ``# NAME.py`` is saved as that file; others run with ``python -c``;
- ``text`` blocks and blocks without a language are not run.

Packages are not reinstalled: the commands after the set-up part run with this environment's ``vidlabel``
and ``python``.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
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
from vidlabel.store._layout import REGION_ATTRIBUTE_FIELDS, REGION_FIELDS, SEGMENT_FIELDS, VIDEO_ARRAYS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = ("python3 -m venv", ". .venv/bin/activate", "pip install")
RUN_LANGS = ("bash", "python")
TEXT_LANGS = ("text", "")
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
# what a page's run must print, beyond every block exiting 0
EXPECT = {
    "README.md": ["torch.Size([1, 3, 240, 320])", "added 1 annotation to video 'my_video'"],
    "how-to/object-stores.md": ["ok: 1 store, ", "uploaded 1 store to memory://bucket/store_zarr"],
    "how-to/label-formats.md": ["mot_out", "video 'my_video'"],
    "how-to/tensorflow.md": ["1 SequenceExample in 1 TFRecord shard", "added 5 rows"],
    "how-to/many-machines.md": ["rank 0: epoch 1", "rank 1: epoch 1"],
    "how-to/vtest.md": ["added 11 annotations to video 'vtest'", "0 errors", "epoch 1: last batch (3, 3, 576, 768)"],
}


def _page(name: str) -> str:
    return (ROOT / name if name == "README.md" else DOCS / name).read_text(encoding="utf-8")


def _section(text: str, title: str) -> str:
    """The text from the heading ``## title`` to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section '## {title}'"
    return match.group(1)


def _blocks(text: str) -> list[tuple[str, str, str | None]]:
    """(language, body, skip reason or None) of each fenced code block of ``text``, in order.

    A block whose info string says ``notest`` (```` ```python notest ````) is skipped too.
    """
    found = re.findall(r"(?:^<!-- docs-test: skip (.+?) -->\n)?^```(\w*)([^\n]*)\n(.*?)^```", text, re.S | re.M)
    return [
        (lang, body, reason or ("marked notest in its info string" if "notest" in info.split() else None))
        for reason, lang, info, body in found
    ]


def _folder_kind(text: str) -> str:
    kinds = re.findall(r"<!-- docs-test: folder=(\w+) -->", text)
    assert len(set(kinds)) <= 1, kinds
    return kinds[0] if kinds else "empty"


def _top_commands() -> list[str]:
    head = README.split("\n## ", 1)[0]
    return [body.strip() for lang, body, _ in _blocks(head) if lang == "bash"]


def _after_setup(command: str) -> str:
    """What a command runs once the environment is set up: its ``&&`` parts that are not set-up steps."""
    parts = [p.strip() for p in command.split("&&")]
    assert parts[: len(parts) - 1] and all(p.startswith(SETUP) for p in parts[:-1]), parts
    assert not parts[-1].startswith(SETUP)
    return parts[-1]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("VIDLABEL_STORE", None)
    return env


def _run(
    command: str | list[str], cwd: Path, *, timeout: int = 280, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout,
        shell=isinstance(command, str), executable="/bin/bash" if isinstance(command, str) else None,
    )  # fmt: skip
    assert done.returncode == 0, f"{command!r} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _run_blocks(blocks: list[tuple[str, str, str | None]], folder: Path, env: dict[str, str]) -> str:
    """Run the blocks in order in ``folder``; their standard output, joined."""
    out = []
    for lang, body, skip in blocks:
        if skip or lang in TEXT_LANGS:
            continue
        if lang == "python":
            first = body.splitlines()[0]
            if re.fullmatch(r"# \w+\.py", first):
                (folder / first[2:]).write_text(body)
                continue
            out.append(_run([sys.executable, "-c", body], folder, env=env).stdout)
        else:
            out.append(_run("set -euo pipefail\n" + body, folder, env=env).stdout)
    return "\n".join(out)


def _video_folder(folder: Path, *, width: int = 320, height: int = 240) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    truth = demo_truth(width=width, height=height, frame_count=90, marker=("lights_on", 30, 59))
    encode_demo_clip(folder / "my_video.mp4", truth)
    return folder


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory) -> tuple[Path, str]:
    """Every block of the tutorial, run in order in a folder with a generated 320x240 ``my_video.mp4``."""
    folder = _video_folder(tmp_path_factory.mktemp("tutorial"))
    return folder, _run_blocks(_blocks(_page("tutorial.md")), folder, _env())


def _start_folder(kind: str, folder: Path, tutorial: tuple[Path, str] | None) -> dict[str, str]:
    """Make the folder a page starts from; the environment its blocks run with."""
    if kind == "video":
        _video_folder(folder)
    elif kind == "tutorial":
        assert tutorial is not None
        shutil.copytree(tutorial[0], folder)
    elif kind == "vtest":
        folder.mkdir()
        truth = demo_truth(width=768, height=576, frame_count=64, marker=("lights_on", 30, 60))
        encode_demo_clip(folder / "vtest.avi", truth)
        assert tutorial is not None
        shutil.copy(tutorial[0] / "train.py", folder / "train.py")
        return _env(VIDLABEL_CLONE=str(ROOT))
    else:
        assert kind == "empty", kind
        folder.mkdir()
    return _env()


# -- the two commands ----------------------------------------------------------------------------------------


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


def test_the_readme_is_short_and_its_links_lead_somewhere():
    assert len(README.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


# -- every block of the README's quickstart and of the docs --------------------------------------------------


def test_every_block_is_run_or_says_why_not():
    """A block is bash or python (run), text (not code), or skipped with a reason; no other kind slips by."""
    for name in ["README.md", *PAGES]:
        for lang, body, skip in _blocks(_page(name)):
            assert lang in RUN_LANGS + TEXT_LANGS, f"{name}: a block in {lang!r}: mark it text, or bash/python"
            assert skip is None or len(skip) > 10, f"{name}: skip without a reason: {body[:60]!r}"


@pytest.mark.slow
def test_the_readme_quickstart_runs(tmp_path):
    folder = _video_folder(tmp_path / "q")
    text = _run_blocks(_blocks(_section(README, "Quickstart")), folder, _env())
    for expected in EXPECT["README.md"]:
        assert expected in text, text


_RUN_PAGES = [
    p
    for p in PAGES
    if p != "tutorial.md" and any(lang in RUN_LANGS and not skip for lang, _, skip in _blocks(_page(p)))
]


@pytest.mark.slow
@pytest.mark.parametrize("name", _RUN_PAGES)
def test_the_blocks_of_a_docs_page_run(name, walkthrough, tmp_path):
    text = _page(name)
    folder = tmp_path / "page"
    env = _start_folder(_folder_kind(text), folder, walkthrough)
    out = _run_blocks(_blocks(text), folder, env)
    for expected in EXPECT.get(name, []):
        assert expected in out, out


def test_pages_that_print_what_is_expected_are_run():
    assert set(EXPECT) - {"README.md"} <= set(_RUN_PAGES)


# -- the tutorial --------------------------------------------------------------------------------------------


def _tutorial_box(w: int, h: int, x0: float, y0: float, x1: float, y1: float) -> list[int]:
    return [round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h)]


@pytest.mark.slow
def test_the_tutorial_runs_end_to_end(walkthrough):
    folder, text = walkthrough
    assert "added 5 annotations to video 'my_video'" in text
    assert "0 errors" in text
    release_id = re.search(r"^(r[0-9a-f]{12})$", text, re.M)
    assert release_id, text
    store = open_store(folder / "my_store")
    assert store.release_id == release_id.group(1)
    assert store.class_names == ["person", "car", "ball", "lights_on"]
    assert [frame for _, frame in store.index] == [0, 10, 20]  # the frames the annotation file annotates
    assert len(open_store(folder / "my_store_lz4")) == 3
    assert re.search(r"epoch 1: last batch \(3, 3, 240, 320\)", text), text
    frames = re.search(r"^epoch 1: frames \[(\d+), (\d+)\]$", text, re.M)  # the two frames with boxes
    assert frames and sorted(map(int, frames.groups())) == [0, 10], text


@pytest.mark.slow
def test_the_tutorial_rows_fit_a_video_of_another_size(tmp_path):
    # the rows were written for 320x240: on any other size add-annotations refused the whole file
    folder = _video_folder(tmp_path / "small", width=200, height=150)
    blocks = [b for b in _blocks(_page("tutorial.md")) if "my_store_lz4" not in b[1]]
    text = _run_blocks(blocks, folder, _env())
    assert "wrote 5 rows for 200x150" in text and "added 5 annotations to video 'my_video'" in text
    assert re.search(r"epoch 1: last batch \(3, 3, 150, 200\)", text), text
    rows = {s["frame_index"]: s for s in (open_store(folder / "my_store").sample(i, with_masks=True) for i in range(3))}
    assert rows[0]["boxes"].tolist() == [_tutorial_box(200, 150, 0.2, 0.1, 0.3, 0.3)]


def test_the_tutorial_store_holds_the_readers_frames_and_the_file_rows(walkthrough):
    folder, _ = walkthrough
    store = open_store(folder / "my_store")
    with FrameReader(folder / "my_video.mp4") as reader:
        for i, (_, frame) in enumerate(store.index):
            sample = store.sample(i, with_masks=True)
            assert np.array_equal(sample["image"], reader.read(frame))
    rows = {s["frame_index"]: s for s in (store.sample(i, with_masks=True) for i in range(len(store)))}
    assert rows[0]["boxes"].tolist() == [_tutorial_box(320, 240, 0.2, 0.1, 0.3, 0.3)]
    assert rows[0]["track_ids"].tolist() == [1]
    assert sorted(rows[10]["labels"].tolist()) == [0, 1]
    ball = rows[20]
    assert ball["labels"].tolist() == [2] and ball["track_ids"].tolist() == [3]
    ys, xs = np.nonzero(ball["masks"][0])
    # make_rows.py fills rows h//2 .. h//2 + h//5 and columns w//2 .. w//2 + w//5 of a 320x240 frame
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (160, 120, 224, 168)
    assert ball["boxes"].tolist() == [[160, 120, 224, 168]]
    assert all(s["frame_labels"].tolist() == [0, 0, 0, 0] for s in rows.values())  # the marker is on 30..59


def test_the_sample_table_lists_the_keys_of_a_real_sample(walkthrough):
    folder, _ = walkthrough
    sample = open_store(folder / "my_store").sample(0, with_masks=True)
    documented = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?(?:, `(\w+)`)?", _page("reference/samples.md"), re.M))
    keys = {k for row in documented for k in row if k}
    # a store's samples hold every key but the rows' attributes, which FrameSamples' with_attributes gives
    assert keys - {"attributes"} == set(sample)


def test_the_tutorial_says_how_to_remove_rows_added_twice(tmp_path):
    # validate and build refuse or warn "until they are edited or deleted", and step 2 run twice doubles the
    # rows, but the README named no way to delete one
    step2 = " ".join(_page("tutorial.md").split("## 3.")[0].split())
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


# -- reference pages -----------------------------------------------------------------------------------------


def test_the_annotation_table_documents_every_field():
    documented = set(re.findall(r"^\| `(\w+)` \|", _page("reference/annotation-file.md"), re.M))
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
def test_the_formats_page_says_which_files_without_rows_are_errors(tmp_path, fmt, name, content, match):
    # the README said every empty file and all "JSON of another shape" only warn
    every = _page("how-to/label-formats.md").split("### ")[0]
    said = " ".join(every.split())
    assert "(an empty file, or JSON of another shape)" not in said
    assert "An empty JSON or XML file is not valid JSON or XML: a `FormatError`" in said
    assert "COCO-VID or YouTube-VIS JSON without a `videos` list" in said
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(FormatError, match=match):
        import_labels(dataset(tmp_path / "ds"), fmt, f, video_id="cam1")


def test_the_store_layout_names_every_stored_array():
    layout = _page("concepts/store-layout.md")
    names = [*VIDEO_ARRAYS, *REGION_FIELDS, *REGION_ATTRIBUTE_FIELDS, *SEGMENT_FIELDS, "frames", "frames_crc32c"]
    for name in [*names, "/index"]:
        assert re.search(rf"(?<![\w/]){re.escape(name)}\b", layout), name


def test_the_store_layout_is_described_once():
    # it was in the README, ARCHITECTURE.md and the layout module, and the README's copy had drifted
    for path in [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "vidlabel" / "store" / "_layout.py"]:
        text = path.read_text(encoding="utf-8")
        assert "row_offsets (T" not in text and "mask_offsets (N" not in text, path
        assert path.name == "README.md" or "docs/concepts/store-layout.md" in text, path


def test_the_glossary_defines_its_terms():
    glossary = _page("glossary.md")
    for term in ("pts", "timebase", "keyframe interval", "release", "view", "chunk"):
        assert f"**{term}" in glossary, term


def test_every_test_the_guarantees_name_exists() -> None:
    """The guarantees page backs each point with named tests: each must be a test function of that file."""
    named: list[tuple[str, str]] = []
    current = None
    for ref in re.findall(r"`([^`]+)`", _page("guarantees.md")):
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


# -- the site ------------------------------------------------------------------------------------------------


def _nav_pages() -> list[str]:
    return re.findall(r"^\s+- (?:[^:\n]+: )?([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)


def test_the_site_nav_holds_every_page_once():
    nav = _nav_pages()
    assert len(nav) == len(set(nav)), nav
    assert sorted(nav) == PAGES


def _documented() -> dict[str, object]:
    """Every ``::: path`` entry of the API reference pages, with the object it names."""
    entries: dict[str, object] = {}
    for page in (DOCS / "reference" / "api").glob("*.md"):
        for path in re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M):
            module, _, name = path.rpartition(".")
            try:
                entries[path] = getattr(importlib.import_module(module), name)
            except ImportError:
                entries[path] = importlib.import_module(path)
    return entries


def test_every_public_name_has_a_reference_entry():
    entries = _documented()
    by_id = {id(obj) for obj in entries.values() if not isinstance(obj, (int, float, str, bytes, tuple, bool))}
    missing = []
    for line in (ROOT / "tests" / "public_api.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        module, name = line.split(":")
        obj = getattr(importlib.import_module(module), name)
        if isinstance(obj, type(sys)) and hasattr(obj, name):
            # importing the module vidlabel.probe rebinds the package's attribute probe to it
            obj = getattr(obj, name)
        # a re-exported class or function is documented once, where it is defined; a plain value by its path
        if f"{module}.{name}" not in entries and id(obj) not in by_id:
            missing.append(line)
    assert not missing, f"public names without an entry in docs/reference/api/: {missing}"


def test_the_benchmark_page_and_the_readme_table_are_what_bench_out_gives():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        page = importlib.import_module("make_bench_page")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    records = page.load()
    assert {"bench_store", "bench_reader"} <= set(records), sorted(records)
    assert _page("benchmarks.md") == page.render_page(records)
    assert README == page.render_readme(README, records)
    assert _page("how-to/frame-store.md") == page.render_codecs(_page("how-to/frame-store.md"), records)
    for rec in records.values():
        assert rec["machine"] in _page("benchmarks.md")
