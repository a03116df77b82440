"""What ``--help`` tells a new user: the annotation row format and the demo's default folder."""

from __future__ import annotations

import re

import pytest

from vidlabel.cli import main
from vidlabel.dataset._rows import KIND_FIELDS


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


def test_add_annotations_help_describes_the_row_format(capsys):
    text = _help("add-annotations", capsys)
    fields = set().union(*KIND_FIELDS.values())
    assert not [f for f in fields if not re.search(rf"\b{f}\b", text)], text
    assert set(re.findall(r'^  \{"kind": "(\w+)"', text, re.M)) == set(KIND_FIELDS), text
    assert "encode_rle" in text and "docs/reference/annotation-file.md" in text
    assert "inclusive" in text and "One bad row refuses the whole file" in text


def test_demo_help_names_the_default_folder(capsys):
    assert "(default: ./vidlabel_demo)" in " ".join(_help("demo", capsys).split())
