"""A dataset on a read-only mount (issue 12, item 10): readable (info, validate, releases, FrameSamples, export from
it), every change refused with DatasetReadOnlyError, nothing written.

Tests run as root, which ignores permission bits, so the folder is made read-only by a read-only bind mount where
the test may mount; otherwise (and always, in the second variant) by making ``writable`` answer False, the
``os.access`` check that chooses how the database is opened.
"""

from __future__ import annotations

import gc
import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.media import read_frame_number
from tests.store_support import make_dataset
from vidlabel import Dataset, FrameReader, FrameSamples, export, open_store
from vidlabel.cli import main
from vidlabel.dataset import _db
from vidlabel.errors import DatasetReadOnlyError, VidlabelError


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*")
            if p.is_file()}  # fmt: skip


def mount_read_only(source: Path, target: Path) -> bool:
    """Bind-mount ``source`` read-only at ``target``; False where this process may not mount."""
    target.mkdir()
    if shutil.which("mount") is None:
        return False
    bind = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if bind.returncode != 0:
        return False
    ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], capture_output=True)
    if ro.returncode != 0:
        subprocess.run(["umount", str(target)], capture_output=True)
        return False
    return True


@pytest.fixture(params=["mount", "access"])
def ro_dataset(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A built dataset (videos beside it) seen through a read-only folder; yields that folder."""
    ds = make_dataset(tmp_path / "src", videos=("a", "b"), n_frames=12)
    ds.close()  # the last connection checkpoints the write-ahead log into the database
    source = ds.path
    if request.param == "mount":
        target = tmp_path / "ro"
        if not mount_read_only(source, target):
            pytest.skip("this process may not bind-mount (the 'access' variant covers the same code)")
        with pytest.raises(OSError, match="Read-only file system"):
            (target / "probe").write_text("x")
        try:
            yield target
        finally:
            gc.collect()  # datasets the test dropped close their database files
            if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(target)], check=True)  # detached once the last file closes
    else:
        monkeypatch.setattr(_db, "writable", lambda path: False)
        yield source


def test_a_read_only_dataset_can_be_read_and_exported_from(
    ro_dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_digest(ro_dataset)
    ds = Dataset.open(ro_dataset)
    assert ds.read_only
    assert main(["info", str(ro_dataset)]) == 0
    assert "videos" in capsys.readouterr().out
    assert main(["validate", str(ro_dataset)]) == 0
    assert main(["releases", str(ro_dataset)]) == 0
    release_id = ds.releases()[0]
    assert release_id in capsys.readouterr().out
    assert len(ds.release(release_id).table) > 0 and ds.validate() == []
    samples = FrameSamples(ds, release="latest", kinds=("box",))
    video_id, frame = samples.index[3]
    with FrameReader.for_video(samples.video(video_id)) as reader:
        image = reader.read(frame)
        assert read_frame_number(image) == frame
        assert len(samples.sample(video_id, frame, image)["boxes"]) > 0
    report = export(ds, tmp_path / "store", progress=False)
    assert report.videos == 2
    store = open_store(tmp_path / "store")
    assert all(read_frame_number(store.frame(i)) == n for i, (_, n) in enumerate(store.index))
    store.close()
    assert tree_digest(ro_dataset) == before  # nothing written into the read-only folder


def test_a_read_only_dataset_refuses_every_change(ro_dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(ro_dataset)
    ds = Dataset.open(ro_dataset)
    readonly = r"it is read-only \(its folder or vidlabel.sqlite is not writable, e.g. a read-only mount\); nothing was changed"
    with pytest.raises(DatasetReadOnlyError, match=rf"cannot add-labels in dataset {ro_dataset}: {readonly}") as info:
        ds.add_labels(["new"])
    assert isinstance(info.value, VidlabelError) and isinstance(info.value, PermissionError)
    with pytest.raises(DatasetReadOnlyError, match=rf"cannot build in dataset {ro_dataset}: {readonly}"):
        ds.build()
    with pytest.raises(DatasetReadOnlyError, match="cannot add-annotations"):
        ds.add_annotations([{"kind": "marker", "label": "event", "start_frame": 0, "end_frame": 1}], "a")
    with pytest.raises(DatasetReadOnlyError, match="cannot set-status"):
        ds.set_status([1], "approved")
    with pytest.raises(DatasetReadOnlyError, match="cannot update-video"):
        ds.update_video(ds.video("a"))
    assert main(["add-labels", str(ro_dataset), "other"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"vidlabel: error: cannot add-labels in dataset {ro_dataset}: it is read-only")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ds.labels() == ["obj", "person", "event"]
    assert tree_digest(ro_dataset) == before


def test_open_mode_follows_what_is_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = Dataset.create(tmp_path / "ds")
    db = ds.path / _db.DB_NAME
    assert _db.open_mode(db) == "rw" and not ds.read_only
    ds.add_labels(["x"])  # a write leaves a write-ahead log while the connection is open
    wal = db.with_name(db.name + "-wal")
    monkeypatch.setattr(_db, "writable", lambda path: path != ds.path)
    assert _db.open_mode(db) == ("ro" if wal.exists() and wal.stat().st_size else "immutable")
    ds.close()
    assert not wal.exists() or wal.stat().st_size == 0
    assert _db.open_mode(db) == "immutable"  # folder not writable, no log: SQLite creates nothing
    monkeypatch.setattr(_db, "writable", lambda path: path != db)
    assert _db.open_mode(db) == "ro"  # the file alone is read-only
    assert Dataset.open(ds.path).labels() == ["x"]


def test_a_write_ahead_log_without_its_index_on_a_read_only_mount_says_what_to_do(tmp_path: Path) -> None:
    """A dataset copied while open (its -wal, not its -shm) and mounted read-only: SQLite cannot open it. Before, the
    message blamed a full disk or the permissions; it names the log and says to open the dataset once writable."""
    src = Dataset.create(tmp_path / "src")
    src.add_labels(["x"])  # the connection stays open: the write sits in the write-ahead log
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in (_db.DB_NAME, _db.DB_NAME + "-wal"):
        shutil.copy2(src.path / name, copy / name)
    assert (copy / (_db.DB_NAME + "-wal")).stat().st_size > 0
    target = tmp_path / "ro"
    if not mount_read_only(copy, target):
        pytest.skip("this process may not bind-mount: SQLite could make the index file, so there is nothing to refuse")
    try:
        with pytest.raises(
            VidlabelError,
            match=rf"^cannot read dataset {target}: it holds a write-ahead log \(vidlabel.sqlite-wal, \d+ bytes: "
            r"writes not yet folded into vidlabel.sqlite\) without its index file \(vidlabel.sqlite-shm\), and the "
            r"folder is read-only, .*open the dataset once where it is writable",
        ):
            Dataset.open(target).labels()
        assert sorted(p.name for p in target.iterdir()) == [_db.DB_NAME, _db.DB_NAME + "-wal"]
    finally:
        gc.collect()
        if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], check=True)
    assert Dataset.open(copy).labels() == ["x"]  # where it is writable the log is read (and folded in)
