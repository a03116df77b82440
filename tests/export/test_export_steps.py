"""export()'s steps one at a time: checked options, the plan, units run on any executor, publishing."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import pickle
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tests.store_support import make_dataset, store_contents
from vidlabel import Dataset, FrameSamples, export
from vidlabel.export._options import check_options
from vidlabel.export._plan import plan_export, plan_units, select_frames
from vidlabel.export._pool import run_on_executor
from vidlabel.export._publish import Publisher, StoreSource, prepare_folder, write_root
from vidlabel.store._fs import StoreLock

DEFAULTS = dict(
    format="hdf5", codec=None, view_id=None, frames="annotated", kinds=("box", "mask"), stride=1,
    output_size=None, chunk_frames=None, workers=1, progress=False, roots="somewhere", frames_only=False,
)  # fmt: skip


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return make_dataset(tmp_path_factory.mktemp("steps"), videos=("a", "b", "c"), n_frames=12)


def test_options_are_checked_once_into_a_frozen_picklable_record(tmp_path: Path) -> None:
    opts = check_options(tmp_path / "out", None, **DEFAULTS)
    assert opts.chunk_frames == 1 and opts.roots == ("somewhere",) and opts.codec.spec == "none"
    assert opts.release is None and opts.out == str(tmp_path / "out")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.workers = 3  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(opts)) == opts
    assert opts.unit_chunk_frames(0) == 1 and dataclasses.replace(opts, chunk_frames=8).unit_chunk_frames(3) == 3


def test_units_run_on_any_executor_give_the_store_of_export(ds: Dataset, tmp_path: Path) -> None:
    opts = check_options(tmp_path / "pool", "latest", **{**DEFAULTS, "roots": ()})
    rel = ds.release("latest")
    selection = select_frames(rel, opts, str(ds.path))
    folder = tmp_path / "pool"
    with StoreLock(folder):
        backend, _ = prepare_folder(folder, "hdf5", StoreSource(str(ds.path), rel.release_id))
        plan = plan_export(selection, opts)
        work = plan_units(backend, plan, opts)
        assert [j.attrs["video_id"] for j in work.jobs] == ["a", "b", "c"]
        assert all(pickle.loads(pickle.dumps(j)).key == j.key for j in work.jobs)
        publisher = Publisher(backend, work.to_publish, {j.key for j in work.jobs})
        with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
            results = list(run_on_executor(pool, work.jobs, opts, bar=None))
        for result in results:
            publisher.unit_done(result.key)
        assert sorted(r.key for r in results) == sorted(j.key for j in work.jobs)
        assert sum(r.decoded for r in results) == len(FrameSamples(ds)) and all(r.copied == 0 for r in results)
        assert write_root(backend, plan, opts) == len(FrameSamples(ds))
    export(ds, tmp_path / "clean", progress=False)
    mine = store_contents(folder)
    assert mine == store_contents(tmp_path / "clean")
    assert sorted(mine["."]["videos"]) == ["a", "b", "c"] and all(v["frames"] for v in mine["."]["videos"].values())
