"""A store changed after export never gives wrong pixels or a crash: a frames link edited to another unit, frames
of another size or shape, damaged HDF5 metadata, and a frames file truncated while it is mapped are vidlabel
errors naming the file (found by a fresh-user pass: silently wrong images, raw h5py errors, SIGBUS)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest
from torch.utils.data import DataLoader

from tests.media import read_frame_number
from tests.store_support import make_dataset, reference_frames
from vidlabel import export
from vidlabel.errors import StoreCorruptError, StoreError
from vidlabel.store import verify_store
from vidlabel.torch_data import StoreFrames, collate_frames


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tamper")
    ds = make_dataset(root, videos=("a", "b"), n_frames=12)
    export(ds, root / "s", frames="all", progress=False)
    return root


def copy_store(exported: Path, tmp_path: Path) -> Path:
    out = tmp_path / "s"
    shutil.copytree(exported / "s", out)
    return out


def frames_file(store: Path, video_id: str) -> Path:
    with h5py.File(store / "videos" / f"{video_id}.h5", "r") as f:
        return store / "frames" / Path(f.get("frames", getlink=True).filename).name


def relink(store: Path, video_id: str, target: Path, obj: str = "/frames") -> None:
    """Point the video file's ``frames`` (and ``frames_crc32c``) links at ``target``, as an edit would."""
    with h5py.File(store / "videos" / f"{video_id}.h5", "r+") as f:
        for name in ("frames", "frames_crc32c"):
            del f[name]
        f["frames"] = h5py.ExternalLink(f"../frames/{target.name}", obj)
        f["frames_crc32c"] = h5py.ExternalLink(f"../frames/{target.name}", "/frames_crc32c")


def positions_of(data: StoreFrames, video_id: str) -> list[int]:
    return [i for i, (v, _n) in enumerate(data.index) if v == video_id]


def test_the_untouched_store_reads_the_clips_frames(exported: Path) -> None:
    data = StoreFrames(exported / "s")
    for video_id in ("a", "b"):
        want = reference_frames(exported, video_id)
        for i in positions_of(data, video_id):
            image = data[i]["image"].permute(1, 2, 0).numpy()
            assert read_frame_number(image) == data.index[i][1]
            np.testing.assert_array_equal(image, want[data.index[i][1]])


def test_a_frames_link_to_another_videos_unit_is_refused(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    relink(store, "a", frames_file(store, "b"))
    data = StoreFrames(store)
    a = positions_of(data, "a")
    with pytest.raises(StoreCorruptError, match=r"video 'a' of store .*: its frames .*\.h5' are frames unit '[0-9a-f]+', not the video's own unit '[0-9a-f]+': the store was changed after export"):  # fmt: skip
        data[a[0]]
    # in DataLoader workers forked after construction too (they open the frames through the inherited opener)
    loader = DataLoader(StoreFrames(store), batch_size=4, num_workers=2, collate_fn=collate_frames)
    with pytest.raises(StoreCorruptError, match="not the video's own unit"):
        for _batch in loader:
            pass
    b = positions_of(data, "b")
    assert read_frame_number(data[b[0]]["image"].permute(1, 2, 0).numpy()) == data.index[b[0]][1]  # b is fine


def handmade_frames(path: Path, shape: tuple[int, ...], key: str, dtype: type = np.uint8) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("frames", data=np.zeros(shape, dtype), chunks=(1, *shape[1:]))
        f.create_dataset("frames_crc32c", data=np.zeros(shape[0], np.uint32))
        for name, value in (("chunk_frames", "1"), ("codec", '"none"'), ("key", f'"{key}"')):
            f.attrs[name] = value


def read_a_through(store: Path, frames: Path) -> None:
    """Link video a's frames to ``frames`` and read a's first sample."""
    relink(store, "a", frames)
    data = StoreFrames(store)
    data[positions_of(data, "a")[0]]


def test_frames_of_another_size_under_the_videos_own_key_are_refused(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    own = frames_file(store, "a")
    with h5py.File(own, "r") as f:
        key, rows = f.attrs["key"].strip('"'), f["frames"].shape[0]
    fake = store / "frames" / "fake.h5"
    handmade_frames(fake, (rows, 10, 12, 3), key)
    with pytest.raises(StoreCorruptError, match=rf"have shape \({rows}, 10, 12, 3\), not the video's \({rows}, \d+, \d+, 3\)"):  # fmt: skip
        read_a_through(store, fake)


def test_a_frames_array_that_is_not_frames_is_refused(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    fake = store / "frames" / "flat.h5"
    handmade_frames(fake, (12,), "k")
    with pytest.raises(StoreError, match=r"frames file .*flat\.h5': 'frames' is uint8 of shape \(12,\), not \(T, H, W, 3\) uint8 frames"):  # fmt: skip
        read_a_through(store, fake)


def test_a_frames_link_looping_back_to_the_video_file_is_refused(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    with h5py.File(store / "videos" / "a.h5", "r+") as f:
        del f["frames"]
        f["frames"] = h5py.ExternalLink("a.h5", "/frames")
    data = StoreFrames(store)
    with pytest.raises(StoreError, match=r"frames file .*videos/a\.h5': 'frames' is not an array \(missing, or a link that leads nowhere or back to itself\)"):  # fmt: skip
        data[positions_of(data, "a")[0]]


def clobber_btrees(path: Path, node_type: int) -> int:
    """Break the signature of every HDF5 v1 B-tree node of ``node_type`` (0: groups, 1: chunk index)."""
    data = bytearray(path.read_bytes())
    count, at = 0, data.find(b"TREE")
    while at >= 0:
        if data[at + 4] == node_type:
            data[at : at + 4] = b"XXXX"
            count += 1
        at = data.find(b"TREE", at + 1)
    path.write_bytes(bytes(data))
    return count


def test_a_damaged_chunk_index_is_a_store_corrupt_error_naming_the_file(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    target = frames_file(store, "a")
    assert clobber_btrees(target, 1) > 0
    data = StoreFrames(store)
    with pytest.raises(StoreCorruptError, match=rf"frames file '{target}' is damaged: its chunk index cannot be read"):
        data[positions_of(data, "a")[0]]


def test_damaged_group_metadata_of_a_video_file_is_a_store_corrupt_error(exported: Path, tmp_path: Path) -> None:
    store = copy_store(exported, tmp_path)
    target = store / "videos" / "a.h5"
    assert clobber_btrees(target, 0) > 0
    with pytest.raises(StoreCorruptError, match=rf"video file '{target}' is damaged: "):
        data = StoreFrames(store)
        for i in range(len(data)):
            data[i]


def test_a_frames_file_truncated_after_a_read_is_an_error_not_a_crash(exported: Path, tmp_path: Path) -> None:
    # the frames file is read through a memory map: a copy past a truncated end would kill the process (SIGBUS),
    # so it runs in a child process, which must exit normally and print the error
    store = copy_store(exported, tmp_path)
    target = frames_file(store, "a")
    code = textwrap.dedent(
        f"""
        import os
        from vidlabel.errors import StoreCorruptError
        from vidlabel.torch_data import StoreFrames
        data = StoreFrames({str(store)!r})
        a = [i for i, (v, _n) in enumerate(data.index) if v == "a"]
        data[a[0]]
        os.truncate({str(target)!r}, os.path.getsize({str(target)!r}) // 2)
        try:
            data[a[-1]]
        except StoreCorruptError as err:
            print("refused:", err)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused: video 'a', chunk ")
    assert f"frames file '{target}' changed since it was opened: it now has" in out.stdout
    assert "a store's files never change after export (`vidlabel verify` lists every damaged chunk" in out.stdout


def test_verify_reports_frames_of_another_unit_or_size(exported: Path, tmp_path: Path) -> None:
    # frames of the video's own row count, under another unit's key (a copy of b's file cut to a's rows), and
    # frames of another size under its own key: the checksums match their own files, so only the key and the
    # size tell
    store = copy_store(exported, tmp_path)
    own, other = frames_file(store, "a"), frames_file(store, "b")
    with h5py.File(own, "r") as f:
        key, rows = f.attrs["key"].strip('"'), f["frames"].shape[0]
    with h5py.File(other, "r") as f:
        other_key, images = f.attrs["key"].strip('"'), f["frames"][:rows]
    cut = store / "frames" / "cut.h5"
    handmade_frames(cut, images.shape, other_key)
    with h5py.File(cut, "r+") as f:
        f["frames"][...] = images
    relink(store, "a", cut)
    report = verify_store(store, progress=False)
    assert any(
        f"video 'a': its frames are frames unit '{other_key}', not its own unit '{key}'" in p
        for p in report["problems"]
    )
    fake = store / "frames" / "fake.h5"
    handmade_frames(fake, (rows, 10, 12, 3), key)
    relink(store, "a", fake)
    report = verify_store(store, progress=False)
    assert any(re.search(r"video 'a': frames are 12x10, the video \d+x\d+", p) for p in report["problems"])


def test_a_frames_file_cut_while_open_is_named_as_cut_not_as_a_damaged_chunk(exported: Path, tmp_path: Path) -> None:
    # HDF5 shares a file opened twice in one process: a store opened again after its frames file was cut still
    # sees the old size and reads the checksums past the cut as zeros; the error names the cut (found by a
    # fresh-user pass: "chunk 0 ... fails its CRC-32C checksum (stored 00000000)" for an intact chunk)
    store = copy_store(exported, tmp_path)
    target = frames_file(store, "a")
    first = StoreFrames(store)
    a = positions_of(first, "a")
    first[a[0]]  # opens the frames file in this process
    size = target.stat().st_size
    os.truncate(target, size // 2)
    again = StoreFrames(store)  # opens it again: HDF5 hands back the file it holds
    with pytest.raises(
        StoreCorruptError,
        match=rf"frames file '{target}' changed since it was opened: it has {size // 2} bytes of the {size} written",
    ):
        again[a[0]]
