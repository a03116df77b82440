"""scripts/export_release.py on a small generated dataset: the store it writes holds what the release says."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from vidlabel import open_store
from vidlabel.demo import demo_truth, make_demo_dataset, read_frame_number
from vidlabel.errors import VidlabelWarning

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "export_release.py"
TRUTH = demo_truth(frame_count=30, annotate_every=2, marker=("lights_on", 4, 9))


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("export_release", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return make_demo_dataset(tmp_path_factory.mktemp("export_script"), TRUTH)


def test_export_script_writes_the_release(script, made, tmp_path, capsys):
    out = tmp_path / "store"
    status = script.main([str(made["dataset"].path), str(out), "--no-progress"])
    text = capsys.readouterr().out
    assert status == 0, text
    release_id = made["release"].release_id
    assert f"release {release_id}" in text
    assert f"{len(TRUTH.annotated_frames)} stored from 1 videos" in text
    assert "every box and mask of the release lies on a stored frame" in text
    n_chunks = 0  # from the frames files themselves: rows over rows a chunk, rounded up
    for frames_file in (out / "frames").glob("*.h5"):
        with h5py.File(frames_file, "r") as f:
            n_chunks += -(-f["frames"].shape[0] // f["frames"].chunks[0])
    assert n_chunks > 0 and f"verify       ok: {n_chunks} of {n_chunks} chunks checked" in text
    store = open_store(out)
    assert store.release_id == release_id and store.class_names == list(TRUTH.labels)
    assert [frame for _, frame in store.index] == TRUTH.annotated_frames
    sample = store.sample(3)
    assert read_frame_number(sample["image"]) == sample["frame_index"] == TRUTH.annotated_frames[3]
    want = [o.box for o in TRUTH.objects(sample["frame_index"])]
    assert sorted(map(tuple, sample["boxes"].tolist())) == sorted(want)


def test_export_script_options_reach_the_export(script, made, tmp_path, capsys):
    out = tmp_path / "store_lz4"
    args = [str(made["dataset"].path), str(out), "--no-progress", "--codec", "lz4", "--stride", "3"]
    args += ["--release", made["release"].release_id, "--output-size", "160", "120"]
    with pytest.warns(VidlabelWarning, match="annotations lie on frames this export does not store"):
        status = script.main(args)
    text = capsys.readouterr().out
    assert status == 0, text
    kept = TRUTH.annotated_frames[::3]
    lost_frames = [f for f in TRUTH.annotated_frames if f not in kept]
    lost_boxes = sum(o.kind == "box" for f in lost_frames for o in TRUTH.objects(f))
    assert f"NOT STORED   {lost_boxes} boxes and {len(lost_frames)} masks" in text
    assert "codec lz4" in text
    store = open_store(out)
    assert [frame for _, frame in store.index] == kept
    sample = store.sample(1)
    assert sample["image"].shape == (120, 160, 3)
    full = np.array([o.box for o in TRUTH.objects(kept[1])], np.float32)
    assert np.allclose(np.sort(sample["boxes"], axis=0), np.sort(full / 2, axis=0))


def test_export_script_names_an_unknown_release(script, made, tmp_path, capsys):
    status = script.main([str(made["dataset"].path), str(tmp_path / "x"), "--release", "r000000000000"])
    err = capsys.readouterr().err
    assert status == 1
    assert "r000000000000" in err and made["release"].release_id in err


def test_export_script_help_runs_standalone():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "--codec" in done.stdout and "--view" in done.stdout and "--release" in done.stdout
