"""A small array rewritten with the same values but a huge chunk shape is refused before it is read.

Reading one chunk allocates all of it: an HDF5 store's ``frame_number`` (or a release's table column) rewritten
with a chunk of 2**29 - 1 elements and gzip kept its labels key and release id, and the first sample took
4.2 GB. The chunks here are 2**22 elements (32 MiB), past the bound, so the code before the bound reads them
without harm."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.store_support import make_dataset
from vidlabel import Dataset, export, open_store
from vidlabel.dataset._release import read_release
from vidlabel.errors import ReleaseCorruptError, StoreCorruptError

HUGE = 2**22


def rechunk(path: Path, name: str) -> np.ndarray:
    """Rewrite dataset ``name`` of HDF5 file ``path`` with its values, attributes and dtype, chunked by HUGE."""
    with h5py.File(path, "r+") as f:
        old = f[name]
        values, attrs = old[()], dict(old.attrs)
        del f[name]
        new = f.create_dataset(
            name, data=values, chunks=(HUGE, *values.shape[1:]), maxshape=(None, *values.shape[1:]),
            compression="gzip",
        )  # fmt: skip
        new.attrs.update(attrs)
    return values


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("chunk_bound")
    return root, make_dataset(root, videos=("a",), n_frames=8)


def test_an_hdf5_store_array_chunked_past_its_size_is_refused_before_reading(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    _, ds = world
    store = tmp_path / "store"
    export(ds, store, format="hdf5", progress=False)
    assert open_store(store).sample(0)["frame_index"] >= 0
    values = rechunk(store / "videos" / "a.h5", "frame_number")
    assert values.size < 100
    said = rf"array 'frame_number' of '.*a\.h5': its chunks \({HUGE},\) \({8 * HUGE} bytes each\) are larger than"
    with pytest.raises(StoreCorruptError, match=said):
        open_store(store).sample(0)


def test_a_release_column_chunked_past_its_size_is_refused_before_reading(world: tuple[Path, Dataset]) -> None:
    _, ds = world
    rel, report = ds.build()
    rechunk(Path(report.path), "table/start_frame")
    said = rf"'/table/start_frame': its chunks \({HUGE},\) \({8 * HUGE} bytes each\) are larger than the array"
    with pytest.raises(ReleaseCorruptError, match=said):
        read_release(report.path)
    with pytest.raises(ReleaseCorruptError, match=said):
        Dataset.open(ds.path).release(rel.release_id)
