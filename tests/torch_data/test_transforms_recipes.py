"""The transforms recipes in examples/ run as the docs show them, at a tiny size."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest

from tests.store_support import make_dataset
from vidlabel import export

pytestmark = pytest.mark.vision
pytest.importorskip("torchvision")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_detection_recipe_trains_a_step_over_a_store(tmp_path: Path) -> None:
    ds = make_dataset(tmp_path, n_frames=12)
    export(ds, tmp_path / "store", progress=False)
    losses = load("train_detection").main(
        [str(tmp_path / "store"), "--steps", "2", "--batch-size", "2", "--workers", "0", "--min-size", "64"]
    )
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)


def test_the_clip_recipe_trains_a_step_over_augmented_clips(tmp_path: Path) -> None:
    ds = make_dataset(tmp_path, n_frames=24, gop=8)
    losses = load("train_clips_v2").main(
        [str(ds.path), "--steps", "3", "--batch-size", "2", "--workers", "0", "--size", "32"]
    )
    assert len(losses) == 3 and all(math.isfinite(x) and x > 0 for x in losses)
