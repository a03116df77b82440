"""notebooks/explore.ipynb runs top to bottom (nbclient, no network) on a store the demo makes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from vidlabel.demo import demo_truth, run_demo

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explore.ipynb"


@pytest.mark.slow
def test_explore_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    truth = demo_truth(frame_count=60, annotate_every=3, marker=("lights_on", 12, 29))
    result = run_demo(tmp_path / "made", progress=False, epochs=1, num_workers=0, truth=truth, log=None)
    assert result["ok"], result["failures"]
    monkeypatch.setenv("VIDLABEL_STORE", str(result["store"]))
    # the kernel is started as "python -m ipykernel_launcher": make it this environment's python
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend (Agg underneath): no display needed
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    text, images = [], 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", out
            if out["output_type"] == "stream":
                text.append(out["text"])
            images += "image/png" in out.get("data", {})
    text = "".join(text)
    assert f"release {result['release_id']}" in text
    assert f"{len(truth.annotated_frames)} samples in 1 video(s); classes: car, person, ball, lights_on" in text
    assert "demo: marker 'lights_on' on frames 12..29 (18 frames, 0.60 s)" in text  # end frame inclusive, 30 fps
    assert "StoreFrames[i] (tensors)" in text and "FrameReader.read(n) on clip.mp4" in text
    assert images == 3  # frames with targets, the marker timeline, the access timings
    assert not list(tmp_path.glob("*.png"))  # it writes nothing next to itself


def test_explore_notebook_makes_a_new_temporary_folder_for_the_demo(tmp_path, monkeypatch):
    """Without a store, the notebook's ``find_store`` runs the demo into a fresh ``tempfile.mkdtemp`` folder."""
    import ast
    import tempfile

    import vidlabel.demo

    nb = nbformat.read(NOTEBOOK, as_version=4)
    source = next(c.source for c in nb.cells if c.cell_type == "code" and "def find_store" in c.source)
    tree = ast.parse(source)
    (func,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "find_store"]
    asked: list[Path] = []

    def fake_run_demo(folder, **_):
        asked.append(Path(folder))
        return {"store": Path(folder) / "store"}

    monkeypatch.setattr(vidlabel.demo, "run_demo", fake_run_demo)
    monkeypatch.delenv("VIDLABEL_STORE", raising=False)
    monkeypatch.chdir(tmp_path)  # no vidlabel_demo/store here nor above
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    space: dict = {"os": os, "tempfile": tempfile, "Path": Path}
    exec(compile(ast.Module(body=[func], type_ignores=[]), str(NOTEBOOK), "exec"), space)
    first, second = space["find_store"](), space["find_store"]()
    assert len(asked) == 2 and asked[0] != asked[1]  # a new folder each time, never a fixed path
    assert all(p.parent == tmp_path / "tmp" and p.is_dir() and not any(p.iterdir()) for p in asked)
    assert (first, second) == (asked[0] / "store", asked[1] / "store")
