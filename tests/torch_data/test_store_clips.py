"""Clips from a frame store: the export's clip context, StoreClips and StoreClipStream against the video, every
clip once per epoch across workers and ranks, the missing-frames error, and the export and CLI options."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

from tests.media import corrupt_frames, encode_clip, read_frame_number
from tests.store_support import make_dataset
from vidlabel import Dataset, FrameReader, export, open_store, probe
from vidlabel.cli import main
from vidlabel.clip import ClipSpec
from vidlabel.errors import ClipError, ClipNotStoredError, OptionError, VidlabelWarning
from vidlabel.schema import CLIP, check_sample
from vidlabel.torch_data import StoreClips, StoreClipStream, StoreFrames, collate_clips

N_FRAMES = 40
SPEC = ClipSpec(4, step=2, anchor="center", edge="shift")
VIDEOS = ("a", "b")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("store_clips")
    ds = make_dataset(root, videos=VIDEOS, n_frames=N_FRAMES, box_every=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fmt in ("hdf5", "zarr"):
            export(ds, root / f"{fmt}-clip", format=fmt, clip=SPEC, progress=False)
        export(ds, root / "hdf5-clip-chunk3", clip=SPEC, chunk_frames=3, progress=False)
        export(ds, root / "plain", progress=False)
    return root, ds


@pytest.fixture(autouse=True)
def _no_sharding_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        monkeypatch.delenv(name, raising=False)


def expected_clips(store_path: Path) -> list[tuple[str, tuple[int, ...]]]:
    """Each selected frame of a store (StoreFrames' samples) and the frames of its clip, from ClipSpec itself."""
    frames = StoreFrames(store_path)
    out = []
    for video_id, anchor in frames.index:
        clip = SPEC.frames(anchor, N_FRAMES + VIDEOS.index(video_id))
        assert clip is not None
        out.append((video_id, tuple(clip.tolist())))
    return out


@pytest.mark.parametrize("name", ["hdf5-clip", "zarr-clip", "hdf5-clip-chunk3"])
def test_store_clips_equal_video_clips_bit_for_bit(world: tuple[Path, Dataset], name: str) -> None:
    root, _ds = world
    clips = StoreClips(root / name)
    want = expected_clips(root / name)
    assert len(clips) == len(want) > 0
    readers = {v: FrameReader(root / f"{v}.mp4") for v in VIDEOS}
    for i in range(len(clips)):
        sample = clips[i]
        video_id, frames = want[i]
        assert sample["video_id"] == video_id and tuple(sample["frame_indices"].tolist()) == frames
        image = sample["image"]
        assert image.shape == (SPEC.frames_per_clip, 3, 48, 64) and image.dtype == torch.uint8
        video = np.stack(readers[video_id].read_many(list(frames)))
        assert np.array_equal(image.permute(0, 2, 3, 1).numpy(), video)  # the lossless codec: bit for bit
        assert [read_frame_number(f) for f in video] == list(frames)
        assert sample["frame_labels"].shape == (SPEC.frames_per_clip, 3)
        assert len(sample["boxes"]) == SPEC.frames_per_clip
        check_sample(sample, CLIP, torch=True, dims={"T": 4, "H": 48, "W": 64, "C": 3}, optional=False)
        check_sample(clips.clips.clip_sample(i), CLIP, dims={"T": 4, "H": 48, "W": 64, "C": 3}, optional=False)
        assert sample["clip_index"] == i


def test_clip_targets_are_each_frames_own(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    clips = StoreClips(root / "hdf5-clip")
    frames = StoreFrames(root / "hdf5-clip", frames="stored")
    by_frame = {(s["video_id"], s["frame_index"]): s for s in (frames[i] for i in range(len(frames)))}
    event = clips.class_names.index("event")
    for i in range(len(clips)):
        sample = clips[i]
        for k, frame in enumerate(sample["frame_indices"].tolist()):
            own = by_frame.get((sample["video_id"], frame))
            if own is not None:  # a stored sample: the clip's targets of that frame are its own
                assert torch.equal(sample["boxes"][k], own["boxes"])
                assert torch.equal(sample["track_ids"][k], own["track_ids"])
            # the marker 'event' covers frames 10..20 (tests.store_support.MARKER)
            assert float(sample["frame_labels"][k, event]) == float(10 <= frame <= 20)
        assert torch.equal(sample["clip_labels"], sample["frame_labels"].amax(dim=0))


def test_export_stores_the_context_but_samples_stay_the_selected_frames(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    plain, clipped = open_store(root / "plain"), open_store(root / "hdf5-clip")
    assert clipped.index == plain.index  # the samples: the same selected frames
    for video_id, count in zip(VIDEOS, (N_FRAMES, N_FRAMES + 1)):
        selected = [f for v, f in plain.index if v == video_id]
        need = set(selected)
        for anchor in selected:
            need |= set(SPEC.frames(anchor, count).tolist())
        data = clipped.video_data(video_id)
        assert data.frame_number.tolist() == sorted(need)
        assert data.is_annotated.tolist() == [f in selected for f in sorted(need)]
    assert clipped.attrs["export"]["clip"] == {"frames_per_clip": 4, "step": 2, "anchor": "center", "edge": "shift"}
    assert "clip" not in plain.attrs["export"]


def test_export_with_clip_resumes_and_reuses(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _root, ds = world
    first = export(ds, tmp_path / "s", clip=SPEC, progress=False)
    assert first.context_frames > 0 and first.frames_decoded == first.samples + first.context_frames
    again = export(ds, tmp_path / "s", clip=SPEC, progress=False)
    assert again.videos_up_to_date == len(VIDEOS) and again.frames_decoded == 0
    plain = export(ds, tmp_path / "t", progress=False)
    extended = export(ds, tmp_path / "t", clip=SPEC, progress=False)  # the frames held are copied, not decoded
    assert extended.frames_copied == plain.samples and extended.frames_decoded == extended.context_frames
    assert open_store(tmp_path / "t").attrs["export"]["clip"]["frames_per_clip"] == 4


def test_missing_clip_frames_are_an_error_naming_them(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    with pytest.raises(ClipNotStoredError, match=r"frames .* are not stored .* --clip-frames 4 --clip-step 2"):
        StoreClips(root / "plain", clip=SPEC)
    with pytest.raises(ClipNotStoredError, match=r"export with clip=ClipSpec\(8, step=2"):
        StoreClipStream(root / "hdf5-clip", clip=ClipSpec(8, step=2, anchor="center"))
    with pytest.raises(OptionError, match=r"exported without clip=\.\.\."):
        StoreClips(root / "plain")
    with pytest.raises(OptionError, match=r"clip must be a vidlabel\.ClipSpec"):
        StoreClips(root / "hdf5-clip", clip=4)  # type: ignore[arg-type]


def test_another_clip_is_served_only_if_every_frame_is_stored(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    # anchor 'end' of 2 frames at step 2 is the first half of SPEC's clip (a-2, a, a+2, a+4), shifted alike
    clips = StoreClips(root / "hdf5-clip", clip=ClipSpec(2, step=2, anchor="end"))
    assert len(clips) == len(StoreFrames(root / "hdf5-clip"))
    for i in range(len(clips)):
        sample = clips[i]
        numbers = [read_frame_number(f.permute(1, 2, 0).numpy()) for f in sample["image"]]
        assert numbers == sample["frame_indices"].tolist()
    # anchor 'center' at frame 36 of video a is 36, 38; SPEC's clip there was shifted to 33..39 at odd frames
    with pytest.raises(ClipNotStoredError, match="at frame 36 of video 'a': frames 38 are not stored"):
        StoreClips(root / "hdf5-clip", clip=ClipSpec(2, step=2, anchor="center"))


def test_every_clip_once_per_epoch_distributed_sampler(world: tuple[Path, Dataset]) -> None:
    root, _ds = world
    clips = StoreClips(root / "hdf5-clip")
    want = Counter(tuple(f) for f in clips.frame_indices.tolist())
    seen: Counter[tuple[str, tuple[int, ...]]] = Counter()
    batches = []
    for rank in (0, 1):
        sampler = DistributedSampler(clips, num_replicas=2, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(1)
        loader = DataLoader(clips, batch_size=3, sampler=sampler, num_workers=2, collate_fn=collate_clips)
        count = 0
        for batch in loader:
            count += 1
            for video_id, numbers, image in zip(batch["video_id"], batch["frame_indices"].tolist(), batch["image"]):
                assert [read_frame_number(f.permute(1, 2, 0).numpy()) for f in image] == numbers
                seen[(video_id, tuple(numbers))] += 1
        batches.append(count)
    assert batches[0] == batches[1]
    pad = 2 * -(-len(clips) // 2) - len(clips)  # DistributedSampler repeats this many to even the ranks
    assert sum(seen.values()) == len(clips) + pad
    assert {k[1] for k in seen} == set(want) and len(seen) == len(clips)


def test_every_clip_once_per_epoch_stream(world: tuple[Path, Dataset], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ds = world
    stream = StoreClipStream(root / "zarr-clip", seed=5, batch_clips=2)
    n = len(stream.clips)
    monkeypatch.setenv("WORLD_SIZE", "2")
    seen: Counter[tuple[str, tuple[int, ...]]] = Counter()
    counts = []
    orders = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        loader = DataLoader(stream, batch_size=2, num_workers=2, collate_fn=collate_clips)
        got = []
        for batch in loader:
            for video_id, numbers, image in zip(batch["video_id"], batch["frame_indices"].tolist(), batch["image"]):
                assert [read_frame_number(f.permute(1, 2, 0).numpy()) for f in image] == numbers
                got.append((video_id, tuple(numbers)))
        counts.append(len(got))
        orders.append(got)
        seen.update(got)
    assert counts == [-(-n // 2)] * 2
    assert len(seen) == n and sum(seen.values()) == 2 * -(-n // 2)
    monkeypatch.setenv("RANK", "0")
    again = [
        (v, tuple(f))
        for b in DataLoader(stream, batch_size=2, num_workers=2, collate_fn=collate_clips)
        for v, f in zip(b["video_id"], b["frame_indices"].tolist())
    ]
    assert again == orders[0]  # the same seed and epoch: the same order
    stream.set_epoch(1)
    assert stream.shard_clips(1, 0, 2, 0, 1).tolist() != stream.shard_clips(0, 0, 2, 0, 1).tolist()


def test_edge_error_refuses_the_export_before_writing(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _root, ds = world
    with pytest.raises(ClipError, match=r"lie outside \[0, 40\)"):
        export(ds, tmp_path / "s", clip=ClipSpec(4, step=2, anchor="center", edge="error"), progress=False)
    assert not (tmp_path / "s").exists()
    with pytest.raises(ClipError, match="longer than the 40 frames"):
        export(ds, tmp_path / "s", clip=ClipSpec(41), progress=False)


def test_edge_skip_leaves_clips_out_and_counts_them(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _root, ds = world
    spec = ClipSpec(4, step=2, anchor="center", edge="skip")
    report = export(ds, tmp_path / "s", clip=spec, progress=False)
    clips = StoreClips(tmp_path / "s")
    anchors = [f for _v, f in open_store(tmp_path / "s").index]
    # anchor="center" of 4 frames at step 2 starts 2 frames before the anchor and ends 4 after it
    skipped = sum(1 for (v, a) in open_store(tmp_path / "s").index if a < 2 or a + 4 >= N_FRAMES + VIDEOS.index(v))
    assert report.clips_skipped == skipped > 0 and clips.clips.skipped == skipped
    assert len(clips) == len(anchors) - skipped
    assert "left out at the videos' edges" in report.summary()


def test_export_clip_option_errors(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _root, ds = world
    with pytest.raises(OptionError, match=r"clip must be a vidlabel\.ClipSpec"):
        export(ds, tmp_path / "s", clip=16, progress=False)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="a MediaSequence export takes clip_frames"):
        export(ds, tmp_path / "m", format="mediasequence", clip=SPEC, progress=False)
    with pytest.raises(OptionError, match=r"clip_frames applies to format='mediasequence' only.*clip=ClipSpec"):
        export(ds, tmp_path / "s", clip_frames=4, progress=False)
    assert not (tmp_path / "s").exists() and not (tmp_path / "m").exists()


def test_cli_export_clip_and_info(
    world: tuple[Path, Dataset], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ds = world
    out = tmp_path / "cli"
    argv = ["export", str(root / "ds"), str(out), "--no-progress", "--clip-frames", "4", "--clip-step", "2"]
    assert main([*argv, "--clip-anchor", "center"]) == 0
    assert open_store(out).attrs["export"]["clip"] == {"frames_per_clip": 4, "step": 2, "anchor": "center",
                                                       "edge": "shift"}  # fmt: skip
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "clips:     4 frames at step 2 (anchor='center', edge='shift', spanning 7 frames)" in text
    assert main(["info", str(root / "plain")]) == 0
    assert "exported without a clip context" in capsys.readouterr().out
    code = main(["export", str(root / "ds"), str(tmp_path / "x"), "--no-progress", "--clip-step", "2"])
    assert code != 0 and "--clip-step needs --clip-frames" in capsys.readouterr().err


def test_temporal_training_example_runs(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    root, _ds = world
    script = Path(__file__).resolve().parents[2] / "examples" / "train_temporal.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(root / "hdf5-clip"), "--steps", "2", "--batch-size", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    losses = [float(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith("step")]
    assert len(losses) == 2 and all(np.isfinite(losses))


def test_untrusted_frames_never_in_a_store_clip(tmp_path: Path) -> None:
    whole = encode_clip(tmp_path / "whole.mp4", n_frames=48, gop=12)
    corrupt = corrupt_frames(whole.path, tmp_path / "corrupt.mp4", [15, 16])
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["obj"])
    meta = probe(corrupt, video_id="corrupt")
    with pytest.warns(VidlabelWarning, match="no trustworthy picture"):
        ds.add_video(meta)
    usable = ~meta.untrusted_mask()
    untrusted = set(np.flatnonzero(~usable).tolist())
    assert untrusted  # the damaged packets leave frames without a trustworthy picture
    anchors = [f for f in range(0, 48, 3) if usable[f]]
    ds.add_annotations([{"kind": "box", "label": "obj", "start_frame": f, "box": (1.0, 1.0, 9.0, 9.0)} for f in anchors],
                       "corrupt")  # fmt: skip
    ds.build()
    spec = ClipSpec(5, step=2, anchor="center", edge="shift")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)
        export(ds, tmp_path / "s", clip=spec, progress=False)
    clips = StoreClips(tmp_path / "s")
    assert len(clips) == len(anchors)
    reader = FrameReader(corrupt)
    for i, anchor in enumerate(anchors):
        sample = clips[i]
        want = spec.frames(anchor, 48, usable)
        assert sample["frame_indices"].tolist() == want.tolist()
        assert not set(want.tolist()) & untrusted
        video = np.stack(reader.read_many(want.tolist()))
        assert np.array_equal(sample["image"].permute(0, 2, 3, 1).numpy(), video)


def test_a_folder_of_stores_with_different_clips_needs_clip(world: tuple[Path, Dataset], tmp_path: Path) -> None:
    _root, ds = world
    other = make_dataset(tmp_path / "other", videos=("c",), n_frames=N_FRAMES, box_every=6)
    export(ds, tmp_path / "both" / "one", clip=SPEC, progress=False)
    export(other, tmp_path / "both" / "two", clip=ClipSpec(2, step=2, anchor="end"), progress=False)
    with pytest.raises(OptionError, match="were exported with different clips"):
        StoreClips(tmp_path / "both")
    clips = StoreClips(tmp_path / "both", clip=ClipSpec(2, step=2, anchor="end"))
    assert len(clips) == len(StoreFrames(tmp_path / "both"))
    assert {v for v, _f in clips.index} == {"a", "b", "c"}
