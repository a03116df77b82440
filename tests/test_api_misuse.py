"""Misuse of the public API is refused with a vidlabel error naming the value and what is allowed, never a
raw Python error or a silently wrong result; a refused call leaves the dataset unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_store_support import make_dataset
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.errors import OptionError
from vidlabel.store import StoreSamples


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("misuse")
    ds = make_dataset(root, n_frames=12)
    export(ds, root / "store", progress=False)
    return root, ds


# -- label_offset ---------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [-1, -100])
def test_negative_label_offset_is_refused_everywhere(world: tuple[Path, Dataset], offset: int) -> None:
    # A negative offset turned class 0 into -1 (or -100: CrossEntropyLoss's ignore_index) without a word.
    root, ds = world
    store = open_store(root / "store")
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        FrameSamples(ds, label_offset=offset)
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        StoreSamples(store, label_offset=offset)
    with pytest.raises(OptionError, match=rf"label_offset must be an integer >= 0, got {offset}"):
        store.select(label_offset=offset)
    assert FrameSamples(ds, label_offset=0).describe()["options"]["label_offset"] == 0
