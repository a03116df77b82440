"""export(): layout, targets in stored pixels, segments, is_annotated, views, reuse, resume, lock, errors; both backends."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import read_frame_number
from tests.store_support import (
    EMPTY_MARKER_FRAME,
    LABELS,
    MARKER,
    MASK_FRAME,
    VIEW,
    assert_same_sample,
    disc_mask,
    make_dataset,
    reference_frames,
    store_contents,
)
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    StoreError,
    StoreIncompleteError,
    StoreLockedError,
    VidlabelWarning,
)
from vidlabel.geometry import resize_image, view_image
from vidlabel.store import backend_for, verify_store
from vidlabel.store._fs import StoreLock

BACKENDS = ["hdf5", "zarr"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("export")
    return root, make_dataset(root, videos=("cam", "cam2"), n_frames=30)


def fs_targets(samples: FrameSamples) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items()} for t in samples.targets()]


@pytest.mark.parametrize("fmt", BACKENDS)
def test_layout_and_attributes(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    root, ds = world
    report = export(ds, tmp_path / "out", format=fmt, progress=False)
    store = open_store(tmp_path / "out")
    fs = FrameSamples(ds)
    assert store.index == list(fs.index) and report.samples == len(fs) and report.videos == 2
    assert store.class_names == LABELS and store.release_id == ds.releases()[-1]
    attrs = store.attrs
    # an HDF5 root holds the video table (version 3); this Zarr store has neither table nor region attributes
    assert attrs["format"] == "vidlabel-store" and attrs["format_version"] == (3 if fmt == "hdf5" else 1)
    assert attrs["complete"] is True
    assert attrs["export"]["codec"] == "none" and attrs["export"]["chunk_frames"] == 1
    assert attrs["video_ids"] == ["cam", "cam2"] and attrs["dataset"] == str(ds.path)
    v = store.video_attrs("cam")
    meta = ds.video("cam")
    assert v["content_hash"] == meta.content_hash and v["fps"] == {"num": 30, "den": 1}
    assert (v["width"], v["height"], v["view_id"], v["crop"], v["output_size"]) == (64, 48, None, None, None)
    assert v["source_uri"] == meta.uri and v["complete"] is True
    data = store.video_data("cam")
    assert data.frame_number.dtype == np.int64 and data.is_annotated.all()
    np.testing.assert_array_equal(data.timestamp_us, data.frame_number * 1_000_000 // 30)
    ref = reference_frames(root, "cam")
    for row, n in enumerate(data.frame_number.tolist()):
        image = store.read_row("cam", row)
        np.testing.assert_array_equal(image, ref[n])
        assert read_frame_number(image) == n
    assert "NOT STORED" not in report.summary() and report.frames_decoded == len(fs)


@pytest.mark.parametrize("fmt", BACKENDS)
def test_regions_csr_ordered_and_equal_to_frame_samples(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    export(ds, tmp_path / "out", format=fmt, progress=False)
    store = open_store(tmp_path / "out")
    data = store.video_data("cam")
    reg = data.regions
    assert reg["row_offsets"].shape == (data.frame_number.size + 1,) and reg["row_offsets"][0] == 0
    assert reg["bbox_xyxy"].dtype == np.float32 and reg["label_index"].dtype == np.int64
    for row in range(data.frame_number.size):
        a, b = reg["row_offsets"][row], reg["row_offsets"][row + 1]
        assert np.all(np.diff(reg["annotation_id"][a:b]) > 0)  # ordered by annotation id
    # without a view, every annotation is stored, those made in a view too (full-frame pixels)
    row3 = data.row_of(3)
    assert row3 is not None
    a, b = reg["row_offsets"][row3], reg["row_offsets"][row3 + 1]
    assert reg["bbox_xyxy"][a:b].tolist() == [[4.0, 12.0, 24.0, 30.0]]
    fs = FrameSamples(ds, kinds=("box", "mask"))
    sel = store.select(kinds=("box", "mask"))
    assert sel.index == list(fs.index)
    for j, target in enumerate(fs.targets()):
        got = sel.targets_row(*sel.locate(j))
        assert_same_sample(
            {k: v for k, v in got.items()},
            {k: np.asarray(v) if isinstance(v, np.ndarray) else v for k, v in target.items()},
        )
    # model box: origin and confidence kept; human boxes have NaN confidence
    row = data.row_of(7)
    a, b = reg["row_offsets"][row], reg["row_offsets"][row + 1]
    assert sorted(
        zip(reg["origin"][a:b].tolist(), [round(float(c), 3) for c in np.nan_to_num(reg["confidence"][a:b], nan=-1)])
    ) == [(0, -1.0), (1, 0.8)]


@pytest.mark.parametrize("fmt", BACKENDS)
def test_masks_round_trip_full_frame_and_view(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    export(ds, tmp_path / "full", format=fmt, progress=False)
    store = open_store(tmp_path / "full")
    sample = store.select(kinds=("mask",), with_masks=True).sample(0)
    assert sample["frame_index"] == MASK_FRAME and sample["masks"].shape == (1, 48, 64)
    np.testing.assert_array_equal(sample["masks"][0], disc_mask())
    # box rows of the same frame get empty masks, as in FrameSamples
    both = store.select(with_masks=True)
    j = both.index.index(("cam", MASK_FRAME))
    got = both.sample(j)
    want = FrameSamples(ds, with_masks=True).sample("cam", MASK_FRAME, got["image"])
    assert_same_sample(got, want)
    assert [int(m.sum()) for m in got["masks"]].count(0) == len(got["masks"]) - 1


@pytest.mark.parametrize("fmt", BACKENDS)
def test_view_export_equals_frame_samples_with_view(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    root, ds = world
    report = export(ds, tmp_path / "v", format=fmt, view_id=VIEW[0], progress=False)
    store = open_store(tmp_path / "v")
    fs = FrameSamples(ds, view_id=VIEW[0])
    assert store.index == list(fs.index) == [("cam", 3), ("cam", 7), ("cam2", 3), ("cam2", 7)]
    assert report.samples == 4
    ref = reference_frames(root, "cam")
    sel = store.select()
    for j in range(len(sel)):
        s = sel.sample(j)
        assert s["image"].shape == (20, 20, 3) and s["view_id"] == VIEW[0]
        if s["video_id"] == "cam":
            np.testing.assert_array_equal(s["image"], view_image(ref[s["frame_index"]], fs.view))
        assert_same_sample(s, fs.sample(s["video_id"], s["frame_index"], s["image"]))
    attrs = store.video_attrs("cam")
    assert attrs["crop"] == list(VIEW[1]) and attrs["view_output_size"] == list(VIEW[2]) and attrs["width"] == 20
    assert store.get_frame("cam", 3) is None  # not a full frame: useless as a frame cache


@pytest.mark.parametrize("fmt", BACKENDS)
def test_output_size_resizes_frames_boxes_and_masks(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    root, ds = world
    export(ds, tmp_path / "o", format=fmt, output_size=(32, 24), progress=False)
    store = open_store(tmp_path / "o")
    ref = reference_frames(root, "cam")
    full = FrameSamples(ds, with_masks=True)
    sel = store.select(with_masks=True)
    for j in range(0, len(sel), 5):
        s = sel.sample(j)
        if s["video_id"] != "cam":
            continue
        n = s["frame_index"]
        np.testing.assert_array_equal(s["image"], resize_image(ref[n], (32, 24)))
        t = full.sample("cam", n, ref[n])
        np.testing.assert_allclose(s["boxes"], t["boxes"] / 2, atol=1e-5)
    m = store.select(kinds=("mask",), with_masks=True).sample(0)["masks"][0]
    assert m.shape == (24, 32) and abs(int(m.sum()) - int(disc_mask().sum()) // 4) <= 8


@pytest.mark.parametrize("fmt", BACKENDS)
def test_is_annotated_tells_an_annotated_empty_frame_from_an_unannotated_one(
    world: tuple[Path, Dataset], tmp_path: Path, fmt: str
) -> None:
    _, ds = world
    export(ds, tmp_path / "all", format=fmt, frames="all", kinds=("box", "mask", "marker"), progress=False)
    store = open_store(tmp_path / "all")
    data = store.video_data("cam")
    assert data.frame_number.tolist() == list(range(30))
    offsets = data.regions["row_offsets"]
    n_regions = np.diff(offsets)
    # frame 15: inside the marker, no box -> annotated, empty; frame 25 has a box; frame 27: nothing at all
    assert data.is_annotated[EMPTY_MARKER_FRAME] and n_regions[EMPTY_MARKER_FRAME] == 0
    assert not data.is_annotated[27] and n_regions[27] == 0
    assert data.is_annotated[26] and n_regions[26] == 1
    expected = {f for _, f in FrameSamples(ds, kinds=("box", "mask", "marker"), videos=["cam"]).index}
    assert {i for i in range(30) if data.is_annotated[i]} == expected
    # a frames="all" store samples every frame, as FrameSamples(frames="all")
    assert store.select().index == list(FrameSamples(ds, frames="all").index)
    assert store.select(frames="annotated", kinds=("box", "mask", "marker")).index == list(
        FrameSamples(ds, kinds=("box", "mask", "marker")).index
    )


@pytest.mark.parametrize("fmt", BACKENDS)
def test_markers_become_segments_and_frame_labels(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    with pytest.warns(VidlabelWarning, match=r"lie on frames this export does not store \(stride=3"):
        export(ds, tmp_path / "s", format=fmt, stride=3, progress=False, kinds=("box", "mask", "marker"))
    store = open_store(tmp_path / "s")
    data = store.video_data("cam")
    seg = data.segments
    assert seg["start_frame"].tolist() == [MARKER[0]] and seg["end_frame"].tolist() == [MARKER[1]]
    assert seg["label_index"].tolist() == [LABELS.index("event")]
    stored = data.frame_number
    inside = np.flatnonzero((stored >= MARKER[0]) & (stored <= MARKER[1]))
    assert (seg["start_index"][0], seg["end_index"][0]) == (inside[0], inside[-1])
    assert seg["start_timestamp_us"][0] == MARKER[0] * 1_000_000 // 30
    assert seg["end_timestamp_us"][0] == MARKER[1] * 1_000_000 // 30
    sel = store.select(kinds=("box", "mask", "marker"))
    for j in range(len(sel)):
        s = sel.sample(j)
        assert s["frame_labels"].tolist() == [0.0, 0.0, float(MARKER[0] <= s["frame_index"] <= MARKER[1])]
        assert "event" not in [LABELS[k] for k in s["labels"].tolist()]  # markers never become boxes


@pytest.mark.parametrize("fmt", BACKENDS)
def test_stride_reports_annotations_not_stored(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    with pytest.warns(VidlabelWarning, match=r"box and .* mask annotations lie on frames this export does not store"):
        report = export(ds, tmp_path / "st", format=fmt, stride=2, progress=False)
    fs_all, fs = FrameSamples(ds), FrameSamples(ds, stride=2)
    kept = set(fs.index)
    lost = [t for t in fs_all.targets() if (t["video_id"], t["frame_index"]) not in kept]
    n_lost = sum(len(t["annotation_ids"]) for t in lost)
    assert report.not_stored["box"] + report.not_stored["mask"] == n_lost > 0
    assert sorted(report.not_stored["annotation_ids"]) == sorted(int(a) for t in lost for a in t["annotation_ids"])
    assert "NOT STORED" in report.summary() and open_store(tmp_path / "st").index == list(fs.index)


@pytest.mark.parametrize("fmt", BACKENDS)
def test_new_release_reuses_stored_frames_and_decodes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    import vidlabel.frames

    ds = make_dataset(tmp_path / "d", n_frames=24)
    out = tmp_path / "out"
    first = export(ds, out, format=fmt, frames="all", progress=False)
    assert first.frames_decoded == 24
    before = store_contents(out)["."]["videos"]["cam"]["frames"]
    decodes: list[str] = []
    real = vidlabel.frames.FrameReader.for_video

    def counting(meta, **kw):  # type: ignore[no-untyped-def]
        decodes.append(meta.video_id)
        return real(meta, **kw)

    monkeypatch.setattr(vidlabel.frames.FrameReader, "for_video", staticmethod(counting))
    ids = ds.add_annotations([{"kind": "box", "label": "person", "start_frame": 11, "box": (1, 2, 10, 12)}], "cam")
    release2, _ = ds.build()
    second = export(ds, out, format=fmt, frames="all", progress=False)
    assert decodes == [] and second.frames_decoded == 0 and second.frames_reused == 24
    store = open_store(out)
    assert store.release_id == release2.release_id
    assert store_contents(out)["."]["videos"]["cam"]["frames"] == before
    assert ids[0] in store.select().sample(11)["annotation_ids"].tolist()
    # a release needing fewer frames copies them from the stored ones: still no decoding; the store shrinks,
    # which the export says (the frames given up, from FrameSamples' own count)
    annotated = len(FrameSamples(ds))
    with pytest.warns(VidlabelWarning, match=rf"held 24 frames exported with frames='all'; this export \(frames="
                      rf"'annotated'\) stores {annotated}, and {24 - annotated} of the frames it held leave the store"):  # fmt: skip
        third = export(ds, out, format=fmt, frames="annotated", progress=False)
    assert decodes == [] and third.frames_decoded == 0 and third.frames_copied == third.samples == annotated > 0
    # exporting again changes nothing
    again = export(ds, out, format=fmt, frames="annotated", progress=False)
    assert again.videos_up_to_date == 1 and again.frames_copied == 0
    # a frame no stored unit holds is decoded, and only that video is opened
    ds.add_annotations([{"kind": "box", "label": "person", "start_frame": 15, "box": (1, 2, 10, 12)}], "cam")
    ds.build()
    fourth = export(ds, out, format=fmt, frames="annotated", progress=False)
    assert decodes == ["cam"] and fourth.frames_decoded == 1 and fourth.frames_copied == fourth.samples - 1


def test_an_export_that_leaves_out_frames_a_store_held_says_so_and_one_that_keeps_them_does_not(
    tmp_path: Path,
) -> None:
    ds = make_dataset(tmp_path / "d", n_frames=12, box_every=3)
    out = tmp_path / "out"
    annotated_frames = {f for _, f in FrameSamples(ds).index}
    annotated = len(annotated_frames)
    assert 3 < annotated < 12  # boxes on frames 0, 3, 6 and 9 at least, not on every frame
    export(ds, out, progress=False)  # a new store: nothing to compare with (warnings are errors here)
    export(ds, out, frames="all", progress=False)  # grows: no warning
    export(ds, out, frames="all", progress=False)  # the same options: no warning
    with pytest.warns(VidlabelWarning) as caught:  # this one also says which annotations stride=4 leaves out
        report = export(ds, out, frames="all", stride=4, output_size=(32, 24), progress=False)
    said = [str(w.message) for w in caught]
    assert any("annotations lie on frames this export does not store" in m for m in said)
    (shrink,) = [m for m in said if "leave the store" in m]  # the size changed too, but drops no frame: not named
    assert (
        "held 12 frames exported with stride=1; this export (stride=4) stores 3, and 9 of the frames it held" in shrink
    )
    assert "Export with stride=1 (`vidlabel export ... --stride 1`) to keep them" in shrink
    assert "output_size" not in shrink
    assert report.samples == 3 and [f for _, f in open_store(out).index] == [0, 4, 8]  # the update replaced it
    # more frames than the 3 held, but not all of them: the held frames the annotated selection lacks leave
    leaving = {0, 4, 8} - annotated_frames
    assert leaving and len(leaving) < 3  # frame 4 has no annotation in the generator's rows, frames 0 and 8 have
    with pytest.warns(VidlabelWarning) as caught:
        report = export(ds, out, progress=False)
    (shrink,) = [str(w.message) for w in caught if "leave the store" in str(w.message)]
    assert (
        f"held 3 frames exported with frames='all', stride=4; this export (frames='annotated', stride=1) stores "
        f"{annotated}, and {len(leaving)} of the frames it held leave the store" in shrink
    )
    assert report.samples == annotated and len(open_store(out).index) == annotated
    masked = len(FrameSamples(ds, kinds=("mask",)))
    with pytest.warns(VidlabelWarning) as caught:  # fewer kinds: fewer frames (no command-line flag for kinds)
        export(ds, out, kinds=("mask",), progress=False)
    (shrink,) = [str(w.message) for w in caught if "leave the store" in str(w.message)]
    assert (
        f"held {annotated} frames exported with kinds=['box', 'mask']; this export (kinds=['mask']) stores {masked}, "
        f"and {annotated - masked} of the frames it held leave the store" in shrink
    )
    assert "Export with kinds=['box', 'mask'] to keep them" in shrink and 0 < masked < annotated


KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    import vidlabel.store._writer as w
    from vidlabel import Dataset, export
    seen = [0]
    real = w.write_frames
    def write_frames(*a, **kw):
        def on_frame(k):
            seen[0] += k
            if seen[0] >= {kill_after}:
                os.kill(os.getpid(), signal.SIGKILL)
        kw["on_frame"] = on_frame
        return real(*a, **kw)
    sys.modules["vidlabel.export._units"].write_frames = write_frames
    export(Dataset.open({ds!r}), {out!r}, format={fmt!r}, frames="all", chunk_frames=4, codec="zstd", progress=False)
    """
)


@pytest.mark.parametrize("fmt", BACKENDS)
def test_export_killed_midway_resumes_to_an_equal_store(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    out = tmp_path / "killed"
    script = KILL_SCRIPT.format(root=str(ROOT), kill_after=45, ds=str(ds.path), out=str(out), fmt=fmt)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with pytest.raises(StoreIncompleteError, match=r"incomplete: its export was interrupted .* rerun the same"):
        open_store(out)
    published = backend_for(out, fmt).video_ids()
    assert published == ["cam"]  # the first video (30 frames) was published before the kill
    resumed = export(ds, out, format=fmt, frames="all", chunk_frames=4, codec="zstd", progress=False)
    assert resumed.videos_up_to_date == 1 and resumed.frames_decoded == 31  # only cam2 was redone
    clean = tmp_path / "clean"
    export(ds, clean, format=fmt, frames="all", chunk_frames=4, codec="zstd", progress=False)
    assert store_contents(out) == store_contents(clean)
    assert not [p for p in out.rglob("*") if "partial" in p.name or p.name == ".trash"]


@pytest.mark.parametrize("fmt", BACKENDS)
def test_incomplete_store_and_video_are_refused(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    out = tmp_path / "inc"
    export(ds, out, format=fmt, progress=False)
    backend = backend_for(out, fmt)
    attrs, index = backend.read_root()
    backend.mark_incomplete(attrs)
    with pytest.raises(StoreIncompleteError, match=r"frame store .*inc' is incomplete"):
        open_store(out)
    backend.write_root({k: v for k, v in attrs.items() if k != "complete"}, index, attrs["video_ids"])
    video_attrs = backend.video_attrs("cam")
    assert video_attrs is not None
    video = backend.open_video("cam")
    arrays = {"frame_number": video.array("frame_number"), "timestamp_us": video.array("timestamp_us"),
              "is_annotated": video.array("is_annotated")}  # fmt: skip
    video.close()
    backend.write_video("cam", attrs=video_attrs, arrays=arrays, frames_key=video_attrs["frames_key"])
    # simulate a video group whose complete marker never got written
    if fmt == "zarr":
        from vidlabel.store._zarr import _set_attrs

        _set_attrs(out / "videos" / "cam", {"complete": False})
    else:
        import h5py

        with h5py.File(out / "videos" / "cam.h5", "r+") as f:
            f.attrs["complete"] = "false"
    store = open_store(out)
    with pytest.raises(StoreIncompleteError, match=r"video 'cam' of store .* was not completely written"):
        store.video_data("cam")
    assert store.video_data("cam2").frame_number.size > 0


@pytest.mark.parametrize("fmt", BACKENDS)
def test_single_writer_lock(world: tuple[Path, Dataset], tmp_path: Path, fmt: str) -> None:
    _, ds = world
    out = tmp_path / "locked"
    with StoreLock(out):
        with pytest.raises(StoreLockedError, match=r"is being written by pid \d+ .*one writer at a time"):
            export(ds, out, format=fmt, progress=False)
    export(ds, out, format=fmt, progress=False)  # released


def test_export_errors(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _, ds = world
    with pytest.raises(OptionError, match=r"unknown store format 'tiff'; allowed: hdf5, zarr"):
        export(ds, tmp_path / "x", format="tiff")
    with pytest.raises(OptionError, match=r"unknown codec 'bmp'"):
        export(ds, tmp_path / "x", codec="bmp")
    with pytest.raises(OptionError, match=r"codec 'jpeg' stores one picture per chunk: chunk_frames must be 1, got 4"):
        export(ds, tmp_path / "x", codec="jpeg", chunk_frames=4)
    with pytest.raises(OptionError, match=r"chunk_frames must be an integer >= 1, got 0"):
        export(ds, tmp_path / "x", chunk_frames=0)
    with pytest.raises(OptionError, match=r"workers must be an integer >= 1, got 0"):
        export(ds, tmp_path / "x", workers=0)
    with pytest.raises(OptionError, match=r"stride must be an integer in \[1, 2\*\*63\), got 0"):
        export(ds, tmp_path / "x", stride=0)
    with pytest.raises(OptionError, match=r"output_size must be positive, got \(0, 10\)"):
        export(ds, tmp_path / "x", output_size=(0, 10))
    with pytest.raises(OptionError, match=r"unknown view 'nope'"):
        export(ds, tmp_path / "x", view_id="nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match=r"export target .*file' is a file"):
        export(ds, tmp_path / "file", progress=False)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match=r"is not empty and holds no vidlabel frame store \(found notes.txt\)"):
        export(ds, tmp_path / "busy", progress=False)
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]  # refused: no lock file left in it
    with pytest.raises(StoreError, match=r"holds files that are not this MediaSequence export's \(notes.txt\)"):
        export(ds, tmp_path / "busy", format="mediasequence", progress=False)
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["notes.txt"]  # the same for MediaSequence
    export(ds, tmp_path / "h", format="hdf5", progress=False)
    with pytest.raises(StoreError, match=r"holds a hdf5 frame store; export with format='hdf5' or to another folder"):
        export(ds, tmp_path / "h", format="zarr", progress=False)
    assert (tmp_path / "h" / ".vidlabel-lock").exists()  # the store's own lock file is kept
    with pytest.raises(StoreError, match=r"no vidlabel frame store at .*nowhere"):
        open_store(tmp_path / "nowhere")


@pytest.mark.parametrize("fmt", BACKENDS)
def test_folder_of_stores_reads_as_one(tmp_path: Path, fmt: str) -> None:
    a = make_dataset(tmp_path / "a", videos=("left_cam",), n_frames=12)
    b = make_dataset(tmp_path / "b", videos=("right_cam",), n_frames=12)
    export(a, tmp_path / "stores" / "part1", format=fmt, progress=False)
    export(b, tmp_path / "stores" / "part2", format=fmt, progress=False)
    store = open_store(tmp_path / "stores")
    assert len(store.stores) == 2 and store.video_ids == ("left_cam", "right_cam")
    assert store.index == list(FrameSamples(a).index) + list(FrameSamples(b).index)
    assert store.sample(len(store) - 1)["video_id"] == "right_cam"
    export(a, tmp_path / "stores" / "part3", format=fmt, progress=False)
    with pytest.raises(StoreError, match=r"video 'left_cam' is in two stores"):
        open_store(tmp_path / "stores")


def test_verify_finds_what_keeps_a_folder_of_stores_from_opening(tmp_path: Path) -> None:
    # verify said "ok: 2 stores" of a folder that open_store and info refuse
    a = make_dataset(tmp_path / "a", videos=("left_cam",), n_frames=12)
    export(a, tmp_path / "stores" / "part1", progress=False)
    export(a, tmp_path / "stores" / "part2", progress=False)
    report = verify_store(tmp_path / "stores")
    assert not report["ok"] and len(report["problems"]) == 1
    assert re.match(
        r"video 'left_cam' is in two stores of .*stores': .*part1' and .*part2'; open_store refuses",
        report["problems"][0],
    )
    b = make_dataset(tmp_path / "b", videos=("right_cam",), n_frames=12)
    b.add_labels(["bicycle"])
    b.build()
    shutil.rmtree(tmp_path / "stores" / "part2")
    export(b, tmp_path / "stores" / "part2", progress=False)
    with pytest.raises(StoreError, match=r"have different class names"):
        open_store(tmp_path / "stores")
    (problem,) = verify_store(tmp_path / "stores")["problems"]
    assert re.match(
        r"the stores under .*stores' have different class names: .*part1': \[.*\]; .*part2': \[.*'bicycle'\]", problem
    )
    assert verify_store(tmp_path / "stores" / "part1")["ok"]


def test_workers_export_equals_single_process(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _, ds = world
    one = export(ds, tmp_path / "one", codec="lz4", chunk_frames=2, progress=False)
    two = export(ds, tmp_path / "two", codec="lz4", chunk_frames=2, workers=2, progress=True)
    assert one.samples == two.samples and two.frames_decoded == one.frames_decoded
    assert store_contents(tmp_path / "one") == store_contents(tmp_path / "two")


def test_verify_finds_a_corrupt_chunk(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    from vidlabel.store import verify_store

    _, ds = world
    out = tmp_path / "ver"
    export(ds, out, format="zarr", progress=False)
    report = verify_store(out)
    assert report["ok"] and report["videos"] == 2 and report["chunks"] == report["frames"] == len(open_store(out))
    chunk = out / "videos" / "cam" / "frames" / "c.2.0.0.0"
    data = bytearray(chunk.read_bytes())
    data[100] ^= 0xFF
    chunk.write_bytes(bytes(data))
    report = verify_store(out)
    assert not report["ok"] and any(  # the chunk file named (a fresh-user pass asked)
        f"video 'cam': chunk 2 (rows 2..2): the stored bytes of chunk file {str(chunk)!r} fail their CRC-32C checksum"
        in p
        for p in report["problems"]
    )


def test_a_chunk_that_does_not_decode_names_video_and_rows(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _, ds = world
    out = tmp_path / "lz4"
    export(ds, out, format="zarr", codec="lz4", progress=False)
    chunk = out / "videos" / "cam" / "frames" / "c.2.0.0.0"
    chunk.write_bytes(chunk.read_bytes()[:40])  # cut short: no longer decodes
    store = open_store(out)
    with pytest.raises(StoreError, match=r"^video 'cam', chunk 2 \(rows 2\.\.2\) of store .*lz4.*: .*vidlabel verify"):
        store.read_rows("cam", [2])


def test_hdf5_verify_and_readers_see_identical_bytes(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    import h5py

    from vidlabel.store import verify_store

    _, ds = world
    out = tmp_path / "hv"
    export(ds, out, format="hdf5", codec="gzip", chunk_frames=3, progress=False)
    assert verify_store(out)["ok"]
    store = open_store(out)
    with h5py.File(out / "store.h5", "r") as f:  # plain h5py sees the same frames through the links
        np.testing.assert_array_equal(f["videos/cam/frames"][4], store.read_row("cam", 4))
        assert f["index"].shape == (len(store), 2)


def test_frames_only_cache_serves_frame_samples(
    world: tuple[Path, Dataset], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vidlabel.export._run import cache

    root, ds = world
    report = cache(ds, tmp_path / "fc", codec="png", progress=False)
    store = open_store(tmp_path / "fc")
    assert store.frames_only and report.samples == len(FrameSamples(ds))
    assert store.video_content_hash("cam") == ds.video("cam").content_hash
    assert store.video_content_hash("other") is None and store.get_frame("other", 0) is None
    ref = reference_frames(root, "cam")
    np.testing.assert_array_equal(store.get_frame("cam", 0), ref[0])
    assert store.get_frame("cam", 1) is None  # not a sampled frame
    import vidlabel.frames

    def no_video(*a: Any, **kw: Any) -> Any:
        raise AssertionError("the video was opened although the cache holds the frame")

    monkeypatch.setattr(vidlabel.frames.FrameReader, "for_video", staticmethod(no_video))
    cached = FrameSamples(ds, cache=tmp_path / "fc", view_id=None)
    with cached.reader("cam") as reader:
        np.testing.assert_array_equal(reader.read(4), ref[4])
    monkeypatch.undo()
    with FrameSamples(ds, cache=tmp_path / "fc").reader("cam") as reader:  # frame 1 is not cached: from the video
        np.testing.assert_array_equal(reader.read(1), ref[1])


def test_cli_export_info_verify_cache(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vidlabel.cli import main

    _, ds = world
    out = tmp_path / "cli"
    assert main(["export", str(ds.path), str(out), "--codec", "lz4", "--chunk-frames", "2", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "2 videos" in text and "codec lz4" in text
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "release:" in text and "codec:     lz4" in text and "2 frames per chunk" in text and "MiB" in text
    assert "classes:   3: obj, person, event" in text
    assert main(["verify", str(out)]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 store, 2 videos")
    assert main(["cache", str(ds.path), str(tmp_path / "c"), "--format", "jpeg", "--no-progress"]) == 0
    assert "codec jpeg:90" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "nothing")]) == 1
    assert "no vidlabel frame store" in capsys.readouterr().err
    assert main(["export", str(ds.path), str(out), "--format", "zarr", "--no-progress"]) == 1
    assert "holds a hdf5 frame store" in capsys.readouterr().err


def test_open_frame_files_are_bounded(
    world: tuple[Path, Dataset], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vidlabel.store._framestore import _ProcessState

    root, ds = world
    export(ds, tmp_path / "lru", progress=False)
    monkeypatch.setattr(_ProcessState, "MAX_OPEN", 1)
    store = open_store(tmp_path / "lru")
    refs = {v: reference_frames(root, v) for v in ("cam", "cam2")}
    for i in [0, len(store) - 1, 1, len(store) - 2, 0]:  # alternate videos: each read reopens a file
        video_id, row = store.locate(i)
        n = store.video_data(video_id).frame_number[row]
        np.testing.assert_array_equal(store.frame(i), refs[video_id][n])
        assert len(store._process().frames) == 1
    store.close()


def test_a_failing_video_leaves_a_resumable_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=12)
    moved = tmp_path / "d" / "moved"
    moved.mkdir()
    (tmp_path / "d" / "b.mp4").rename(moved / "b.mp4")
    out = tmp_path / "out"
    with pytest.raises(VideoNotFoundError, match=r"'b'"):  # found missing before anything is written
        export(ds, out, workers=2, progress=False)
    assert not out.exists()
    # a file that goes missing once the export has started: the unit's job finds it so
    monkeypatch.setattr(sys.modules["vidlabel.export._run"], "check_video_files", lambda videos, roots, **_: None)
    with pytest.raises(VideoNotFoundError, match=r"'b'"):
        export(ds, out, workers=2, progress=False)
    with pytest.raises(StoreIncompleteError, match=r"incomplete"):
        open_store(out)
    assert backend_for(out, "hdf5").video_ids() == ["a"]  # the video that worked is published
    report = export(ds, out, workers=2, progress=False, roots=[moved])
    assert report.videos_up_to_date == 1 and report.frames_decoded == len(FrameSamples(ds, videos=["b"]))
    assert open_store(out).index == list(FrameSamples(ds).index)


def files_of(folder: Path) -> dict[str, tuple[int, int] | None]:
    """Every file (size, modification time) and folder (None) under ``folder``, by relative path."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


@pytest.mark.parametrize("fmt", [*BACKENDS, "mediasequence"])
def test_an_export_refused_for_a_missing_video_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: the export created OUT, wrote the videos it found and only then failed on the missing one, leaving
    # the folder behind (an incomplete store with video a; for MediaSequence its plan and a partial shard)
    from vidlabel.cli import main
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=8)
    (tmp_path / "d" / "b.mp4").rename(tmp_path / "d" / "b.moved")
    message = (
        rf"^file of video 'b' not found; tried: {re.escape(str(tmp_path / 'd' / 'b.mp4'))} \(pass roots=\[\.\.\.\], "
        r"--roots on the command line, to search folders\)$"
    )
    out = tmp_path / "new" / "out"  # neither folder exists
    with pytest.raises(VideoNotFoundError, match=message):
        export(ds, out, format=fmt, progress=False)
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(VideoNotFoundError, match=message):
        export(ds, empty, format=fmt, progress=False)
    assert list(empty.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    before = files_of(mine)
    with pytest.raises(StoreError, match=r"export to a new or empty folder"):
        export(ds, mine, format=fmt, progress=False)
    assert files_of(mine) == before
    assert main(["export", str(ds.path), str(out), "--format", fmt, "--no-progress"]) == 1
    out_text, err = capsys.readouterr()
    assert out_text == "" and re.fullmatch(f"vidlabel: error: {message[1:-1]}\n", err), err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("fmt", [*BACKENDS, "mediasequence"])
def test_an_export_refused_for_missing_videos_names_every_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: the refusal named only the first missing video ('b'); moving 'b' back, the next export named 'c'
    from vidlabel.cli import main
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b", "c"), n_frames=8)
    for v in ("b", "c"):
        (tmp_path / "d" / f"{v}.mp4").rename(tmp_path / "d" / f"{v}.moved")
    message = (
        rf"^files of 2 videos not found: 'b' \(tried: {re.escape(str(tmp_path / 'd' / 'b.mp4'))}\); "
        rf"'c' \(tried: {re.escape(str(tmp_path / 'd' / 'c.mp4'))}\) \(pass roots=\[\.\.\.\], --roots on the "
        r"command line, to search folders\)$"
    )
    out = tmp_path / "new" / "out"
    with pytest.raises(VideoNotFoundError, match=message) as err:
        export(ds, out, format=fmt, progress=False)
    assert err.value.video_id == "b" and err.value.path == str(tmp_path / "d" / "b.mp4")
    assert not (tmp_path / "new").exists()  # nothing was written
    assert main(["export", str(ds.path), str(out), "--format", fmt, "--no-progress"]) == 1
    out_text, printed = capsys.readouterr()
    assert out_text == "" and re.fullmatch(f"vidlabel: error: {message[1:-1]}\n", printed), printed
    assert not (tmp_path / "new").exists()


def test_an_export_refused_for_missing_videos_with_roots_given_does_not_say_to_pass_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: "(pass roots=[...], --roots on the command line, to search folders)" though roots were passed
    from vidlabel.cli import main
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b", "c"), n_frames=8)
    root = tmp_path / "elsewhere"
    root.mkdir()
    recorded = {v: tmp_path / "d" / f"{v}.mp4" for v in ("b", "c")}
    under = {v: [root.joinpath(*p.parts[i:]) for i in range(1, len(p.parts))] for v, p in recorded.items()}
    out = tmp_path / "out"
    cases = {  # the videos moved away: the words
        ("b",): (
            f"file of video 'b' not found; tried: {', '.join(map(str, [recorded['b'], *under['b']]))} (not found "
            "under the roots given either: check the file is there, or pass other roots)"
        ),
        ("b", "c"): (
            f"files of 2 videos not found: 'b' (tried: {', '.join(map(str, [recorded['b'], *under['b']]))}); 'c' "
            f"(tried: {recorded['c']} and {len(under['c'])} paths under the roots) (not found under the roots given "
            "either: check the files are there, or pass other roots)"
        ),
    }
    for moved, message in cases.items():
        for v in moved:
            if recorded[v].exists():
                recorded[v].rename(recorded[v].with_suffix(".moved"))
        with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}$"):
            export(ds, out, progress=False, roots=[str(root)])
        assert main(["export", str(ds.path), str(out), "--roots", str(root), "--no-progress"]) == 1
        assert capsys.readouterr() == ("", f"vidlabel: error: {message}\n")
        assert not out.exists()


def test_a_root_that_is_no_folder_here_is_named_when_a_video_is_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: a mistyped --roots was searched in silence; the refusal only said "or pass other roots". Not
    # refused upfront: with an executor the roots are folders of the workers' machines
    from vidlabel.cli import main
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=8)
    (tmp_path / "d" / "b.mp4").rename(tmp_path / "d" / "b.moved")
    real, typo, a_file = tmp_path / "real", tmp_path / "tpyo", tmp_path / "d" / "a.mp4"
    real.mkdir()
    tail = rf"or pass other roots; no folder at {re.escape(repr(str(typo)))}, {re.escape(repr(str(a_file)))}\)$"
    with pytest.raises(VideoNotFoundError, match=r"^file of video 'b' not found; tried: .*" + tail):
        export(ds, tmp_path / "out", progress=False, roots=[real, typo, a_file])
    args = ["export", str(ds.path), str(tmp_path / "out"), "--roots", str(real), str(typo), str(a_file)]
    assert main([*args, "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and re.search(tail, err.rstrip("\n")), err
    with pytest.raises(VideoNotFoundError, match=r"check the file is there, or pass other roots\)$"):
        export(ds, tmp_path / "out", progress=False, roots=[real])  # every root a folder: none named
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", [*BACKENDS, "mediasequence"])
def test_an_export_refused_for_a_video_path_that_is_a_folder_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    # before: "file of video 'b' not found; tried: .../b.mp4", as if nothing were there
    from vidlabel.cli import main
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=8)
    moved = tmp_path / "moved"
    moved.mkdir()
    (tmp_path / "d" / "b.mp4").rename(moved / "b.mp4")
    (tmp_path / "d" / "b.mp4").mkdir()
    message = (
        rf"^file of video 'b' not found; tried: {re.escape(str(tmp_path / 'd' / 'b.mp4'))} \(a folder, not a video "
        r"file\) \(pass roots=\[\.\.\.\], --roots on the command line, to search folders\)$"
    )
    out = tmp_path / "new" / "out"
    with pytest.raises(VideoNotFoundError, match=message):
        export(ds, out, format=fmt, progress=False)
    assert not (tmp_path / "new").exists()
    assert main(["export", str(ds.path), str(out), "--format", fmt, "--no-progress"]) == 1
    out_text, printed = capsys.readouterr()
    assert out_text == "" and re.fullmatch(f"vidlabel: error: {message[1:-1]}\n", printed), printed
    export(ds, out, format=fmt, progress=False, roots=[str(moved)])  # the folder does not stop the search


def test_a_refusal_for_many_missing_videos_names_ten_and_counts_the_rest(
    world: tuple[Path, Dataset], tmp_path: Path
) -> None:
    # before: check_video_files raised for 'v00' alone, saying nothing of the 12 others
    from vidlabel.errors import VideoNotFoundError
    from vidlabel.export._plan import check_video_files

    _, ds = world
    found = ds.video("cam")
    gone = [found.replace(video_id=f"v{i:02d}", sources=[{"uri": f"/gone/cams/v{i:02d}.mp4"}]) for i in range(13)]
    root = tmp_path / "r"
    root.mkdir()  # a root that is a folder here (one that is not is named: the test below)
    first = ", ".join(f"{p}/v00.mp4" for p in ("/gone/cams", root / "gone" / "cams", root / "cams", root))
    others = "; ".join(f"'v{i:02d}' (tried: /gone/cams/v{i:02d}.mp4 and 3 paths under the roots)" for i in range(1, 10))
    message = (  # before: "(pass roots=[...], --roots on the command line, to search folders)", with roots passed
        f"files of 13 videos not found: 'v00' (tried: {first}); {others}; and 3 more (not found under the roots given "
        "either: check the files are there, or pass other roots)"
    )
    with pytest.raises(VideoNotFoundError, match=f"^{re.escape(message)}$") as err:
        check_video_files([found, *gone, gone[0]], [str(root)])  # the video found is not named; nor 'v00' twice
    assert err.value.video_id == "v00"
    check_video_files([found], [str(root)])  # a video found: no error


@pytest.mark.parametrize("fmt", BACKENDS)
def test_an_update_refused_for_a_missing_video_leaves_the_store_as_it_was(tmp_path: Path, fmt: str) -> None:
    # before: the store was marked incomplete (unreadable until a rerun) and the videos found were rewritten
    from vidlabel.errors import VideoNotFoundError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=8)
    out = tmp_path / "out"
    export(ds, out, format=fmt, progress=False)
    (tmp_path / "d" / "b.mp4").rename(tmp_path / "d" / "b.moved")
    before, samples = files_of(out), open_store(out).index
    with pytest.raises(VideoNotFoundError, match=r"^file of video 'b' not found"):
        export(ds, out, format=fmt, frames="all", progress=False)  # new frames: b must be decoded
    after = files_of(out)
    assert after.pop(".vidlabel-lock")[0] == before.pop(".vidlabel-lock")[0] == 0  # the store's lock: taken, no more
    assert after == before and open_store(out).index == samples
    report = export(ds, out, format=fmt, progress=False)  # b's frames are stored: its file is not needed
    assert report.videos_up_to_date == 2 and report.frames_decoded == 0


@pytest.mark.parametrize("fmt", BACKENDS)
def test_an_update_refused_for_a_changed_video_leaves_the_store_as_it_was(tmp_path: Path, fmt: str) -> None:
    # before: the update found b's file changed only when its unit was decoded, after it had marked the store
    # incomplete: the store of the earlier release could not be read until a rerun (a fresh-user pass)
    from vidlabel.errors import VideoChangedError

    ds = make_dataset(tmp_path / "d", videos=("a", "b"), n_frames=8)
    out = tmp_path / "out"
    export(ds, out, format=fmt, progress=False)
    shutil.copyfile(tmp_path / "d" / "a.mp4", tmp_path / "d" / "b.mp4")  # b's file now holds a's video
    before, samples = files_of(out), open_store(out).index
    with pytest.raises(
        VideoChangedError, match=r"^export to '.*' refused: video 'b' changed on disk: .* \(Nothing was written: the"
    ):
        export(ds, out, format=fmt, frames="all", progress=False)  # new frames: b must be decoded
    after = files_of(out)
    assert after.pop(".vidlabel-lock")[0] == before.pop(".vidlabel-lock")[0] == 0
    assert after == before and open_store(out).index == samples
    assert len(open_store(out).read_rows("b", [0])) == 1  # the earlier release still reads


def test_an_hdf5_export_does_not_import_zarr(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _, ds = world
    code = (
        "import sys\n"
        "from vidlabel import Dataset, export\n"
        f"export(Dataset.open({str(ds.path)!r}), {str(tmp_path / 'out')!r}, frames='all', progress=False)\n"
        "print('zarr' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False", "an HDF5 export imported zarr (0.2 s)"
    assert (tmp_path / "out" / "store.h5").exists()


def test_a_local_zarr_export_looks_for_each_unit_in_its_own_video_not_in_every_video(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each export task asks whether its unit is published already: with the video's id the local Zarr backend
    # reads one group (and the finished partial unit), so the scan of every video group runs once, at planning,
    # not once more per task (quadratic in the number of videos, like the HDF5 one was; issue 15)
    from vidlabel.store import _zarr

    ds = make_dataset(tmp_path / "ds", videos=tuple(f"v{i}" for i in range(5)), n_frames=3)
    scans = [0]
    real = _zarr.ZarrBackend._unit_dirs

    def counting(self: Any) -> Any:
        scans[0] += 1
        return real(self)

    monkeypatch.setattr(_zarr.ZarrBackend, "_unit_dirs", counting)
    export(ds, tmp_path / "z", format="zarr", frames="all", progress=False)
    assert scans[0] == 1
    backend = backend_for(tmp_path / "z", "zarr")
    keys = {v: backend.video_attrs(v)["frames_key"] for v in ("v0", "v1")}  # type: ignore[index]
    assert keys["v0"] != keys["v1"]
    assert backend.unit_published(keys["v0"], "v0") and backend.unit_published(keys["v0"])
    assert not backend.unit_published(keys["v0"], "v1")  # another video's group holds another unit
    assert not backend.unit_published("0" * 20, "v0")


def test_video_ids_that_differ_only_in_case_are_exported_with_a_warning(tmp_path: Path) -> None:
    """'Cam' and 'cam' are two files of a frame store, which a case-insensitive file system (macOS, Windows)
    takes for one: before, nothing said so."""
    import warnings

    ds = make_dataset(tmp_path, videos=("Cam", "cam", "b"), n_frames=6)
    with pytest.warns(
        VidlabelWarning,
        match=r"video ids that differ only in case \('Cam' and 'cam'\) name files that collide on a "
        r"case-insensitive file system",
    ):
        export(ds, tmp_path / "h5", frames="all", progress=False)
    store = open_store(tmp_path / "h5")  # on this (case-sensitive) file system both are stored, each its own
    assert [read_frame_number(f) for f in store.read_rows("cam", [6])] == [6]  # 'cam' has 7 frames, 'Cam' 6
    with pytest.raises(FrameOutOfRangeError, match=r"row 6 out of range \[0, 6\) of video 'Cam'"):
        store.read_rows("Cam", [6])
    with warnings.catch_warnings():
        warnings.simplefilter("error", VidlabelWarning)  # shards are not named after video ids: nothing to say
        export(ds, tmp_path / "ms", format="mediasequence", frames="all", progress=False)


#: Two video ids of 60 Japanese characters (180 bytes, under the 200 a video id may hold) whose file names,
#: percent-encoded (540 bytes), do not fit in a file name (255 bytes); alike but for their last character.
LONG_IDS = ("日本語の動画" * 10, "日本語の動画" * 9 + "日本語の動画像")


@pytest.mark.parametrize("where", ["hdf5", "zarr", "zarr-url"])
def test_video_ids_longer_than_a_file_name_once_encoded_are_exported_and_read(
    tmp_path: Path, mem: str, where: str
) -> None:
    """A long non-ASCII video id was a raw 'OSError: File name too long' from the export, and its rerun the same:
    such a video could not be exported at all."""
    ds = make_dataset(tmp_path, videos=(*LONG_IDS, "b"), n_frames=6)  # LONG_IDS[1] has 7 frames
    fmt = where.split("-")[0]
    out = f"{mem}/store" if where == "zarr-url" else str(tmp_path / where)
    export(ds, out, format=fmt, frames="all", progress=False)
    store = open_store(out)
    assert [read_frame_number(f) for f in store.read_rows(LONG_IDS[1], [6])] == [6]
    with pytest.raises(FrameOutOfRangeError, match=r"row 6 out of range \[0, 6\) of video '日本語の動画"):
        store.read_rows(LONG_IDS[0], [6])
    assert sorted(backend_for(out, fmt).video_ids()) == sorted([*LONG_IDS, "b"])
    assert verify_store(out)["ok"]
    again = export(ds, out, format=fmt, frames="all", progress=False)  # an update finds every video up to date
    assert again.videos_up_to_date == 3 and again.frames_decoded == 0
