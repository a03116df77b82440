"""Several processes at once, and processes killed mid-write: nothing lost, nothing half-written."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from vidlabel import Dataset, VideoMetadata
from vidlabel.dataset._dataset import DB_NAME

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")

# the batches here repeat their rows (the same boxes added again and again): what is tested is all or nothing
pytestmark = pytest.mark.filterwarnings("ignore:video .* just added:vidlabel.errors.VidlabelWarning")


def rows(n: int, label: str = "person", offset: int = 0) -> list[dict[str, Any]]:
    return [
        {"kind": "box", "label": label, "start_frame": (offset + i) % 100, "box": (1, 2, 11 + i % 7, 22)}
        for i in range(n)
    ]


def setup(path: Path) -> Dataset:
    ds = Dataset.create(path)
    for vid in ("a", "b"):
        ds.add_video(VideoMetadata(video_id=vid, frame_count=100, fps=25, width=64, height=48))
    ds.add_labels(["person", "car"])
    return ds


# Workers run in spawned children: module-level functions only.


def _adder(ds_or_path: Dataset | str, video_id: str, label: str, batches: int, size: int, start: Any) -> None:
    ds = ds_or_path if isinstance(ds_or_path, Dataset) else Dataset.open(ds_or_path)
    start.wait(120)
    for k in range(batches):
        ds.add_annotations(rows(size, label, k * size), video_id)


def _killed_before_commit(path: str, flag: str, n: int) -> None:
    import vidlabel.dataset._dataset as dataset_module

    def hold(operation: str) -> None:
        if operation == "add_annotations":
            Path(flag).write_text("inside the transaction, everything written, not committed")
            time.sleep(300)

    dataset_module._before_commit = hold
    Dataset.open(path).add_annotations(rows(n), "a")


def _killed_any_time(path: str, flag: str, n: int) -> None:
    batch = rows(n)
    ds = Dataset.open(path)
    Path(flag).write_text("about to add")
    ds.add_annotations(batch, "b")


def _killed_inside_or_after(path: str, flag: str, n: int, inside: bool) -> None:
    """Add ``n`` rows to video "b" and wait to be killed: inside the transaction before its commit, or after
    ``add_annotations`` returned."""
    import vidlabel.dataset._dataset as dataset_module

    def hold(operation: str) -> None:
        if operation == "add_annotations":
            Path(flag).write_text("inside the transaction, not committed")
            time.sleep(300)

    if inside:
        dataset_module._before_commit = hold
    Dataset.open(path).add_annotations(rows(n), "b")
    Path(flag).write_text("committed")
    time.sleep(300)


def wait_for(flag: Path, proc: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not flag.exists():
        assert proc.is_alive(), f"child exited early with {proc.exitcode}"
        assert time.monotonic() < deadline, "child never reached the flag"
        time.sleep(0.02)


def check_intact(path: Path) -> None:
    con = sqlite3.connect(path / DB_NAME)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_two_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    ds = setup(tmp_path / "ds")
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    batches, size = 12, 25
    procs = [
        ctx.Process(target=_adder, args=(ds, "a", "person", batches, size, start)),  # a pickled Dataset
        ctx.Process(target=_adder, args=(str(ds.path), "a", "car", batches, size, start)),  # same video
        ctx.Process(target=_adder, args=(str(ds.path), "b", "car", batches, size, start)),
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0
    got = ds.annotations()
    assert len(got) == 3 * batches * size
    ids = [r["annotation_id"] for r in got]
    assert ids == sorted(set(ids)) == list(range(1, len(got) + 1))
    by_video_label: dict[tuple[str, str], int] = {}
    for r in got:
        key = (r["video_id"], r["label"])
        by_video_label[key] = by_video_label.get(key, 0) + 1
    assert by_video_label == {("a", "person"): batches * size, ("a", "car"): batches * size, ("b", "car"): 300}
    check_intact(ds.path)


def test_killed_inside_the_transaction_leaves_none_of_the_batch(tmp_path: Path) -> None:
    ds = setup(tmp_path / "ds")
    before = ds.add_annotations(rows(5), "a")
    flag = tmp_path / "flag"
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=_killed_before_commit, args=(str(ds.path), str(flag), 5000))
    p.start()
    wait_for(flag, p)
    assert p.pid is not None
    os.kill(p.pid, signal.SIGKILL)
    p.join(60)
    assert p.exitcode == -signal.SIGKILL
    fresh = Dataset.open(ds.path)
    assert [r["annotation_id"] for r in fresh.annotations()] == before
    check_intact(ds.path)
    # Writing goes on; the killed batch's ids were never handed out.
    assert fresh.add_annotations(rows(2), "a") == [before[-1] + 1, before[-1] + 2]


@pytest.mark.slow
def test_killed_at_any_moment_leaves_all_or_none(tmp_path: Path) -> None:
    ds = setup(tmp_path / "ds")
    n = 60_000
    ctx = mp.get_context("spawn")
    outcomes = []
    # Three kills at moments left to the scheduler, then one just before the commit and one just after it.
    runs = [(_killed_any_time, (n,), delay) for delay in (0.0, 0.15, 0.4)]
    runs += [(_killed_inside_or_after, (n, True), 0.0), (_killed_inside_or_after, (n, False), 0.0)]
    for k, (target, args, delay) in enumerate(runs):
        flag = tmp_path / f"flag{k}"
        before = len(ds.annotations("b"))
        p = ctx.Process(target=target, args=(str(ds.path), str(flag), *args))
        p.start()
        wait_for(flag, p)
        time.sleep(delay)
        if p.pid is not None and p.is_alive():
            os.kill(p.pid, signal.SIGKILL)
        p.join(60)
        after = len(Dataset.open(ds.path).annotations("b"))
        outcomes.append(after - before)
        check_intact(ds.path)
    assert all(added in (0, n) for added in outcomes), f"rows added per killed batch: {outcomes}"
    assert outcomes[-2:] == [0, n], "killed before its commit: none of the batch; after it: all of it"
    Dataset.open(ds.path).add_annotations(rows(1), "b")


def test_fork_child_uses_its_own_connection(tmp_path: Path) -> None:
    ds = setup(tmp_path / "ds")
    ds.add_annotations(rows(3), "a")  # the parent's connection is open
    ctx = mp.get_context("fork")
    start = ctx.Event()
    start.set()
    p = ctx.Process(target=_adder, args=(ds, "b", "car", 2, 10, start))
    p.start()
    p.join(120)
    assert p.exitcode == 0
    assert len(ds.annotations()) == 23
    ds.add_annotations(rows(1), "a")
    assert len(ds.annotations("a")) == 4
    check_intact(ds.path)
