"""export() under faults (issue 12): another dataset's store, a killed driver's workers, a huge chunk_frames,
a damaged unit on rerun, a full disk. Each test fails on the export before these fixes."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import encode_clip, read_frame_number
from tests.store_support import H, W, make_dataset, store_contents
from vidlabel import Dataset, export, open_store
from vidlabel.cli import main
from vidlabel.errors import StoreError, StoreIncompleteError, VidlabelWarning
from vidlabel.store import backend_for, verify_store
from vidlabel.video import probe

BACKENDS = ["hdf5", "zarr"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Dataset]:
    """Dataset A (videos cam: 30 frames, cam2: 31) and dataset B (video left: 20 frames)."""
    root = tmp_path_factory.mktemp("faults")
    return make_dataset(root / "A", videos=("cam", "cam2"), n_frames=30), make_dataset(root / "B", videos=("left",))


# -- item 7: a store of another dataset is not replaced unless asked ----------------------------------------------


def test_a_store_of_another_dataset_is_refused_unless_overwrite(
    two: tuple[Dataset, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two
    out = tmp_path / "store_of_a"
    export(a, out, progress=False)
    before = store_contents(out)
    refused = (
        rf"^'{out}' holds a frame store exported from dataset '{a.path}' \(release \w+\), not from this export's "
        rf"dataset '{b.path}' \(release \w+\): not replacing it\. Export to another folder, or pass overwrite=True "
        r"\(`vidlabel export \.\.\. --overwrite`\) to replace that store$"
    )
    with pytest.raises(StoreError, match=refused):
        export(b, out, progress=False)
    assert main(["export", str(b.path), str(out), "--no-progress"]) == 1
    assert "not replacing it" in capsys.readouterr().err
    assert store_contents(out) == before and open_store(out).release_id == a.release("latest").release_id

    assert main(["export", str(b.path), str(out), "--no-progress", "--overwrite"]) == 0
    export(b, tmp_path / "clean_b", progress=False)
    assert store_contents(out) == store_contents(tmp_path / "clean_b")
    with pytest.raises(StoreError, match=r"exported from dataset '.*B.*not replacing it"):
        export(a, out, progress=False)
    report = export(a, out, progress=False, overwrite=True)
    assert report.videos == 2 and open_store(out).release_id == a.release("latest").release_id


def test_an_interrupted_store_still_belongs_to_its_dataset(
    two: tuple[Dataset, Dataset], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = two
    out = tmp_path / "interrupted"
    _fill_the_disk_after(monkeypatch, "hdf5", chunks=0, error=OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(StoreError, match=r"no space left on the device"):
        export(a, out, progress=False)
    monkeypatch.undo()
    with pytest.raises(
        StoreError, match=rf"^'{out}' holds a frame store exported from dataset '{a.path}'.*not replacing"
    ):
        export(b, out, progress=False)
    assert export(a, out, progress=False).videos == 2  # its own dataset resumes it


def test_a_store_of_the_same_dataset_is_updated_as_before(two: tuple[Dataset, Dataset], tmp_path: Path) -> None:
    a, _ = two
    out = tmp_path / "store"
    export(a, out, progress=False)
    # the same dataset moved elsewhere (its releases are the store's), and a release given alone, still update it
    moved = Dataset.open(shutil.copytree(a.path, tmp_path / "moved_ds"))
    assert export(moved, out, progress=False).videos_up_to_date == 2
    assert export(a.release("latest"), out, progress=False).videos_up_to_date == 2
    assert open_store(out).release_id == a.release("latest").release_id


# -- item 13: a chunk never holds more rows than its unit's frames ------------------------------------------------


@pytest.mark.parametrize("fmt", BACKENDS)
def test_chunk_frames_is_capped_at_the_frames_a_unit_holds(
    two: tuple[Dataset, Dataset], tmp_path: Path, fmt: str
) -> None:
    a, _ = two
    out = tmp_path / "big_chunks"
    with pytest.warns(VidlabelWarning, match=r"lie on frames this export does not store \(stride=1000"):
        report = export(a, out, format=fmt, chunk_frames=2000, stride=1000, progress=False)  # one frame per video
    backend = backend_for(out, fmt)
    store = open_store(out)
    for vid in ("cam", "cam2"):
        video = backend.open_video(vid)
        frames = video.frames()
        assert (frames.shape, frames.chunk_frames, frames.n_chunks) == ((1, H, W, 3), 1, 1)
        assert video.attrs["chunk_frames"] == 1
        frames.close()
        video.close()
    assert open_store(out).release_id == a.release("latest").release_id
    first_annotated = int(store.video_data("cam").frame_number[0])
    assert read_frame_number(store.read_row("cam", 0)) == first_annotated
    # two frames of 64x48x3 bytes and the files' own overhead; a 2000-frame chunk alone would be 18 MB
    assert report.size_bytes < 2000 * W * H * 3 // 20


# -- item 3 (export half): a damaged unit is noticed on rerun and written again ------------------------------------


def _flip_a_byte_of_chunk(out: Path, fmt: str, video_id: str, chunk: int) -> None:
    if fmt == "zarr":
        path, offset = out / "videos" / video_id / "frames" / f"c.{chunk}.0.0.0", 100
    else:
        import h5py

        key = backend_for(out, fmt).video_attrs(video_id)["frames_key"]  # type: ignore[index]
        path = out / "frames" / f"{key}.h5"
        with h5py.File(path, "r") as f:
            offset = f["frames"].id.get_chunk_info(chunk).byte_offset + 100
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("fmt", BACKENDS)
def test_a_rerun_rewrites_a_damaged_unit_instead_of_calling_it_up_to_date(
    two: tuple[Dataset, Dataset], tmp_path: Path, fmt: str
) -> None:
    a, _ = two
    out = tmp_path / "damaged"
    export(a, out, format=fmt, progress=False)
    _flip_a_byte_of_chunk(out, fmt, "cam", 2)
    assert not verify_store(out)["ok"]
    damaged = r"1 stored frames unit is damaged and is written again instead of reused \(frames unit \w+ of "
    with pytest.warns(VidlabelWarning, match=damaged + r"video 'cam': chunks 2 fail their CRC-32C\)"):
        report = export(a, out, format=fmt, progress=False)
    cam_frames = len(open_store(out).video_data("cam").frame_number)
    assert report.videos_up_to_date == 1 and report.frames_decoded == cam_frames and report.frames_copied == 0
    assert len(report.damaged_units) == 1 and "1 damaged frames unit written again" in report.summary()
    assert verify_store(out)["ok"]
    export(a, tmp_path / "clean", format=fmt, progress=False)
    assert store_contents(out) == store_contents(tmp_path / "clean")
    again = export(a, out, format=fmt, progress=False)  # sound now: nothing to redo
    assert again.videos_up_to_date == 2 and again.frames_decoded == 0 and again.damaged_units == []


# -- item 11 (export half): a full disk ends with one line saying what is kept and how to resume ------------------

HDF5_ENOSPC = (
    "[Errno 28] Can't write data (file write failed: time = Thu Jan  1 00:00:00 2026, filename = 'x.h5.partial', "
    "file descriptor = 7, errno = 28, error message = 'No space left on device', buf = 0x55d0, total write size = "
    "9216, bytes this sub-write = 9216, bytes actually written = 18446744073709551615, offset = 0)"
)


def _fill_the_disk_after(monkeypatch: pytest.MonkeyPatch, fmt: str, chunks: int, error: OSError) -> None:
    """Every frames chunk written after the first ``chunks`` fails with ``error`` (as a full disk does)."""
    if fmt == "hdf5":
        from vidlabel.store._hdf5 import HDF5FramesWriter as writer
    else:
        from vidlabel.store._zarr import ZarrFramesWriter as writer  # type: ignore[assignment]
    real = writer.write_chunk
    written = [0]

    def write_chunk(self: Any, index: int, data: Any) -> None:
        written[0] += 1
        if written[0] > chunks:
            raise error
        real(self, index, data)

    monkeypatch.setattr(writer, "write_chunk", write_chunk)


@pytest.mark.parametrize(
    "fmt, error",
    [("hdf5", OSError(HDF5_ENOSPC)), ("zarr", OSError(errno.ENOSPC, "No space left on device"))],
    ids=["hdf5-h5py-words", "zarr-errno"],
)
def test_a_full_disk_says_what_failed_that_nothing_published_is_lost_and_how_to_resume(
    two: tuple[Dataset, Dataset], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, error: OSError
) -> None:
    a, _ = two
    out = tmp_path / "full"
    _fill_the_disk_after(monkeypatch, fmt, chunks=35, error=error)  # cam (30 frames) fits, cam2 (31) does not
    full = (
        rf"^export to '{out}' stopped: no space left on the device while writing frames of video 'cam2' "
        r"\(31 frames, frames unit \w{12}\)\. Nothing already published was lost: the 1 videos published so far "
        r"are kept and the store is left incomplete\. Free some space \(or export to a disk with room\) and rerun "
        r"the same command to resume$"
    )
    with pytest.raises(StoreError, match=full) as caught:
        export(a, out, format=fmt, frames="all", progress=False)
    assert "errno" not in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(StoreIncompleteError, match=r"incomplete"):
        open_store(out)
    backend = backend_for(out, fmt)
    assert backend.video_ids() == ["cam"] and backend.video_attrs("cam")["complete"] is True  # type: ignore[index]
    monkeypatch.undo()  # space again: the same command resumes
    resumed = export(a, out, format=fmt, frames="all", progress=False)
    assert resumed.videos_up_to_date == 1 and resumed.frames_decoded == 31
    export(a, tmp_path / "clean", format=fmt, frames="all", progress=False)
    assert store_contents(out) == store_contents(tmp_path / "clean")


#: Runs an export in a child process whose files may not grow past argv[3] bytes (RLIMIT_FSIZE: Python ignores
#: SIGXFSZ, so a write past it fails with EFBIG, and HDF5 then cannot flush the file when it closes it, as on a
#: full disk); prints the error's class names.
FILE_SIZE_LIMITED_EXPORT = textwrap.dedent(
    """
    import resource, sys
    from vidlabel import Dataset, export
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
    try:
        chunk_frames = int(sys.argv[4]) if len(sys.argv) > 4 else None
        export(Dataset.open(sys.argv[1]), sys.argv[2], frames="all", chunk_frames=chunk_frames, progress=False)
    except BaseException as err:
        print(" ".join(c.__name__ for c in type(err).__mro__))
        print(err)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_unit_that_cannot_be_written_leaves_no_partial_file_and_the_rerun_completes(
    two: tuple[Dataset, Dataset], tmp_path: Path
) -> None:
    a, _ = two
    out = tmp_path / "limited"
    limit = W * H * 3 * 10  # a third of a unit (30 frames): the root file fits, no frames file does
    run = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMITED_EXPORT, str(a.path), str(out), str(limit)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    classes, message = run.stdout.split("\n", 1)
    assert run.returncode == 0 and "OSError" in classes.split(), run.stdout + run.stderr  # the write's error
    # said as a limit on the file's size (not a raw "[Errno 27] File too large" with HDF5's lines): what to do
    assert classes.split()[:2] == ["StoreError", "VidlabelError"], run.stdout
    assert message.startswith(f"export to {str(out)!r} stopped: a file of the store reached the largest size allowed")
    assert "(EFBIG: the process's file size limit, `ulimit -f`" in message and "rerun the same command" in message
    assert [p.name for p in (out / "frames").iterdir() if p.name.endswith(".partial")] == []  # its space is free
    export(a, out, frames="all", progress=False)
    export(a, tmp_path / "clean", frames="all", progress=False)
    assert store_contents(out) == store_contents(tmp_path / "clean")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_size_limit_below_a_partial_last_chunks_room_is_a_store_error_without_a_partial_file(tmp_path: Path) -> None:
    """HDF5 reserves whole chunks: 5 frames of 640x480 in chunks of 4 take 8 frames' room (7.4 MB), more than the
    frames' bytes plus 1 MiB (5.7 MB). The limit check counted the frames' bytes, so a limit in between let HDF5
    extend the file past it at its flush: a RuntimeError, a segfault at exit and a partial file left behind."""
    encode_clip(tmp_path / "v.mp4", n_frames=5, width=640, height=480)
    ds = Dataset.create(tmp_path / "ds")
    ds.add_video(probe(tmp_path / "v.mp4", video_id="v"))
    ds.build()
    out = tmp_path / "limited"
    run = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMITED_EXPORT, str(ds.path), str(out), "6500000", "4"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    classes, message = run.stdout.split("\n", 1)
    assert classes.split()[:2] == ["StoreError", "VidlabelError"], run.stdout + run.stderr
    assert "(EFBIG: the process's file size limit, `ulimit -f`" in message
    assert [p.name for p in (out / "frames").iterdir() if p.name.endswith(".partial")] == []
    export(ds, out, frames="all", chunk_frames=4, progress=False)  # no limit: the rerun completes
    store = open_store(out)
    assert [read_frame_number(store.read_row("v", row)) for row in range(5)] == list(range(5))
    store.close()


def test_a_full_disk_is_one_line_on_the_command_line(
    two: tuple[Dataset, Dataset], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = two
    _fill_the_disk_after(monkeypatch, "hdf5", chunks=0, error=OSError(HDF5_ENOSPC))
    assert main(["export", str(a.path), str(tmp_path / "full"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vidlabel: error: export to ") and "errno" not in err
    assert "the 0 videos published so far are kept" in err and "rerun the same command to resume" in err


# -- item 8: the local pool's workers die with the driver; the store resumes --------------------------------------

# Imported at start-up by every Python process of the export under test (driver, workers): each worker, once it
# has handed its unit's first frame to the writer, records its pid and then holds (mid-export) for an hour.
HOLD_HOOK = textwrap.dedent(
    """
    import os
    import signal
    # Ctrl-C reaches the driver as a terminal's would, however pytest was started: a run started in the
    # background by a non-interactive shell ignores SIGINT, and its children inherit that (Python then installs
    # no KeyboardInterrupt handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if os.environ.get("VIDLABEL_TEST_HOLD"):
        import importlib, time
        units = importlib.import_module("vidlabel.export._units")  # vidlabel.export is also the function
        real = units.write_frames
        def write_frames(*args, **kwargs):
            report = kwargs.get("on_frame")
            def on_frame(k):
                if report is not None:
                    report(k)
                open(os.path.join(os.environ["VIDLABEL_TEST_HOLD"], str(os.getpid())), "w").close()
                time.sleep(3600)
            kwargs["on_frame"] = on_frame
            return real(*args, **kwargs)
        units.write_frames = write_frames
    """
)


def _proc_stat(pid: int) -> tuple[str, int, str] | None:
    """(state, parent pid, start time) of a process from /proc, None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), fields[19]


def _children(pid: int) -> dict[int, str]:
    """The children of ``pid``, each with its start time (so a reused pid is not mistaken for it)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat is not None and stat[1] == pid:
                found[int(entry.name)] = stat[2]
    return found


def _alive(pid: int, start: str) -> bool:
    stat = _proc_stat(pid)
    return stat is not None and stat[0] != "Z" and stat[2] == start


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill-9", "term", "int"])
def test_a_killed_driver_leaves_no_worker_and_a_resumable_store(
    two: tuple[Dataset, Dataset], tmp_path: Path, sig: int
) -> None:
    a, _ = two
    hook, held, out = tmp_path / "hook", tmp_path / "held", tmp_path / "out"
    hook.mkdir()
    held.mkdir()
    (hook / "sitecustomize.py").write_text(HOLD_HOOK)
    command = [sys.executable, "-m", "vidlabel", "export", str(a.path), str(out), "--workers", "2", "--frames", "all"]
    env = {**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "VIDLABEL_TEST_HOLD": str(held)}
    driver = subprocess.Popen([*command, "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 180
        while len(list(held.iterdir())) < 2:  # both workers are inside their unit
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "the workers did not start writing"
            time.sleep(0.1)
        started = _children(driver.pid)  # the workers and multiprocessing's resource tracker
        assert {int(p.name) for p in held.iterdir()} <= set(started)
        os.kill(driver.pid, sig)
        driver.wait(timeout=60)
        assert driver.returncode == (130 if sig == signal.SIGINT else -sig)
        deadline = time.monotonic() + 30
        while any(_alive(pid, start) for pid, start in started.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid, start in started.items() if _alive(pid, start)] == []
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for pid, start in started.items():  # only on failure: the processes this test started
            if _alive(pid, start):
                os.kill(pid, signal.SIGKILL)
    with pytest.raises(StoreIncompleteError, match=r"incomplete: its export was interrupted .* rerun the same"):
        open_store(out)
    rerun = subprocess.run(
        [*command, "--no-progress"], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    export(a, tmp_path / "clean", frames="all", progress=False)
    assert store_contents(out) == store_contents(tmp_path / "clean")
    assert not [p for p in out.rglob("*") if "partial" in p.name]
    assert np.all(open_store(out).video_data("cam2").frame_number == np.arange(31))


@pytest.mark.parametrize("fmt", BACKENDS)
def test_a_store_folder_that_cannot_be_created_is_a_store_error_naming_it(
    two: tuple[Dataset, Dataset], tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # under a file (NotADirectoryError) and on a file system with no room for it (/proc): a vidlabel error that
    # names the folder and the OS's reason, from the API and the CLI, and nothing is written
    a, _ = two
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    for target in (a_file / "store", Path("/proc") / f"vidlabel-{os.getpid()}" / "store"):
        with pytest.raises(StoreError, match=rf"cannot write the frame store folder '{target}': .*; give a folder"):
            export(a, target, format=fmt, frames="all", progress=False)
        assert not target.exists()
    target = a_file / "store"
    assert main(["export", str(a.path), str(target), "--format", fmt, "--frames", "all", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"cannot write the frame store folder '{target}': Not a directory (NotADirectoryError)" in err
    assert "Traceback" not in err
