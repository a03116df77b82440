"""The how-to on clips: its Python examples run as written (blocks marked ``python notest`` need PyTorch and a
loop over epochs; the torch tests cover them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vidlabel.schema import CLIP

DOC = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "clips.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_how_to_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "6 clips"  # windows of span 29 every 30 frames in 180 frames: starts 0, 30, ..., 150
    assert out[1].startswith("lights_on [90, 92, ")
    assert namespace["spec"].span() == 29


def test_the_how_to_shows_the_clip_schema() -> None:
    page = DOC.read_text()
    assert CLIP.table() in page and CLIP.table(torch=True) in page
