"""Without torchvision, plain transforms work and V2Transform names the extra to install."""

from __future__ import annotations

import sys

import pytest

from vidlabel.errors import MissingExtraError, VidlabelError
from vidlabel.torch_data import V2Transform


def test_without_torchvision_the_bridge_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)
    with pytest.raises(MissingExtraError, match=r'V2Transform needs torchvision: pip install "vidlabel\[vision\]"'):
        V2Transform(lambda d: d)
    assert isinstance(MissingExtraError("x"), (VidlabelError, ImportError))
