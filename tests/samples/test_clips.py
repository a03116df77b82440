"""Clips over FrameSamples: every frame of every clip is the reader's frame, the samplers pick what they say,
targets per frame, untrusted frames never in a clip, bad input refused before anything is read."""

from __future__ import annotations

import pickle
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import VFR_PTS_MS
from tests.media import (
    ClipTruth,
    corrupt_frames,
    decode_tolerant,
    displayed_number,
    encode_clip,
    object_box,
    truncate_file,
)
from vidlabel import (
    ClipSpec,
    Dataset,
    FrameSamples,
    MarkerClips,
    RandomClips,
    RegularClips,
    SampleClips,
    SlidingClips,
    probe,
)
from vidlabel.errors import (
    ClipError,
    OptionError,
    SampleIndexTypeError,
    SampleOutOfRangeError,
    VidlabelWarning,
)
from vidlabel.samples import ClipSamples
from vidlabel.schema import CLIP, check_sample
from vidlabel.video import ClipPlan

W, H = 64, 48
MARKER = (6, 17)  # inclusive
UNTRUSTED = set(range(15, 24))  # the corrupt clip: packets 15 and 16 damaged, keyframe every 12


@dataclass(frozen=True)
class ClipsDataset:
    path: Path
    truths: dict[str, ClipTruth]


def _make_truths(media: Path) -> dict[str, ClipTruth]:
    whole = encode_clip(media / "whole.mp4", n_frames=48, gop=12)
    corrupt = corrupt_frames(whole.path, media / "corrupt.mp4", [15, 16])
    faststart = encode_clip(media / "faststart.mp4", n_frames=60, gop=12, container_options={"movflags": "+faststart"})
    cut = truncate_file(faststart.path, media / "cut.mp4", 0.9)
    cut_frames = len(decode_tolerant(cut)[0])
    assert cut_frames < 60
    return {
        "bframes": encode_clip(media / "bframes.mp4", n_frames=40, gop=20, bframes=3),
        "vfr": encode_clip(
            media / "vfr.mp4", n_frames=len(VFR_PTS_MS), pts=VFR_PTS_MS, time_base=Fraction(1, 1000), gop=10
        ),
        "editlist": encode_clip(media / "editlist.mp4", n_frames=40, pts=list(range(-5, 35)), bframes=2),
        "offset": encode_clip(media / "offset.mkv", n_frames=36, pts=list(range(7, 43)), bframes=2),
        "rot90": encode_clip(media / "rot90.mp4", n_frames=24, rotation=90),
        # The header still claims 60 frames; the truth is what plain PyAV decodes of it.
        "cut": ClipTruth(
            path=cut,
            frame_count=cut_frames,
            width=W,
            height=H,
            fps=faststart.fps,
            pts=faststart.pts,
            time_base=faststart.time_base,
            keyframe_interval=12,
        ),
        "corrupt": ClipTruth(
            path=corrupt,
            frame_count=48,
            width=W,
            height=H,
            fps=whole.fps,
            pts=whole.pts,
            time_base=whole.time_base,
            keyframe_interval=12,
        ),
    }


@pytest.fixture(scope="module")
def cds(tmp_path_factory: pytest.TempPathFactory) -> ClipsDataset:
    """One dataset over B-frame, VFR, edit-list, start-offset, rotated, cut and corrupt clips; boxes of the moving
    object (track 1) on every frame the generator shows, and an 'event' marker on frames 6..17 of each."""
    root = tmp_path_factory.mktemp("clips")
    truths = _make_truths(root)
    ds = Dataset.create(root / "ds")
    ds.add_labels(["object", "event"])
    for video_id, truth in truths.items():
        meta = probe(truth.path, video_id=video_id)
        assert meta.frame_count == truth.frame_count
        if video_id == "corrupt":
            with pytest.warns(VidlabelWarning, match=r"9 frames have no trustworthy picture \(15..23"):
                ds.add_video(meta)
        else:
            ds.add_video(meta)
        usable = ~meta.untrusted_mask()
        # Boxes in coded orientation would not fit a rotated video: give the rotated one none.
        rows = [
            {
                "kind": "box",
                "label": "object",
                "start_frame": f,
                "box": object_box(truth.number(f), W, H),
                "track_id": 1,
            }
            for f in range(meta.frame_count)
            if usable[f] and not truth.rotation
        ]
        rows.append({"kind": "marker", "label": "event", "start_frame": MARKER[0], "end_frame": MARKER[1]})
        ds.add_annotations(rows, video_id)
    ds.build()
    return ClipsDataset(root / "ds", truths)


def frames_of(cds: ClipsDataset, **options) -> FrameSamples:
    """Every frame of the videos; the corrupt video's untrusted frames are left out with a warning (tested with
    FrameSamples), which is not what these tests are about."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)
        return FrameSamples(Dataset.open(cds.path), frames="all", **options)


SAMPLERS = [SampleClips(), SlidingClips(3), RandomClips(4, seed=2), RegularClips(3), MarkerClips(stride=2)]
SPECS = [ClipSpec(4, step=2, anchor="center"), ClipSpec(3, step=1, anchor="end", edge="repeat")]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("sampler", SAMPLERS, ids=repr)
def test_every_frame_of_every_clip_is_the_readers_frame(cds: ClipsDataset, sampler, spec: ClipSpec) -> None:
    samples = frames_of(cds)
    clips = samples.clips(spec, sampler)
    seen = 0
    readers = {v: samples.reader(v) for v in samples.video_ids}
    for clip in clips:
        video_id = clip["video_id"]
        truth, meta = cds.truths[video_id], samples.video(video_id)
        frames = clip["frame_indices"]
        check_sample(clip, CLIP, dims={"T": spec.frames_per_clip, "C": 2}, optional=False)
        assert clip["image"].shape == (spec.frames_per_clip, meta.height, meta.width, 3)
        assert clip["image"].dtype == np.uint8
        assert not (set(frames.tolist()) & set(np.flatnonzero(meta.untrusted_mask()).tolist()))
        for t, f in enumerate(frames.tolist()):
            assert displayed_number(clip["image"][t], truth.rotation) == truth.number(f)
            np.testing.assert_array_equal(clip["image"][t], readers[video_id].read(f))
        seen += 1
    assert seen == len(clips) > 0
    for reader in readers.values():
        reader.close()


def test_corrupt_video_has_untrusted_frames_that_clips_avoid(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["corrupt"])
    assert set(np.flatnonzero(samples.video("corrupt").untrusted_mask()).tolist()) == UNTRUSTED
    shifted = samples.clips(ClipSpec(4, step=1), SlidingClips(1))
    assert all(not (set(clip["frame_indices"].tolist()) & UNTRUSTED) for clip in shifted)
    skipped = samples.clips(ClipSpec(4, step=1, edge="skip"), SlidingClips(1))
    # Windows starting at 12..23 touch 15..23: 12 of the 45 left out.
    assert len(skipped) == 45 - 12
    assert skipped.describe()["clips_left_out"] == {"corrupt": 12}
    assert sorted(int(c[1][0]) for c in (skipped.index()[i] for i in range(len(skipped)))) == [
        f for f in range(45) if not 12 <= f <= 23
    ]


def test_read_gives_what_iteration_gives(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["bframes", "vfr"]).clips(ClipSpec(5, step=3), SlidingClips(4))
    by_index = {clip["clip_index"]: clip for clip in clips}
    assert sorted(by_index) == list(range(len(clips)))
    many = clips.read_many([5, 0, 5, len(clips) - 1])
    assert [c["clip_index"] for c in many] == [5, 0, 5, len(clips) - 1]
    for clip in many:
        np.testing.assert_array_equal(clip["image"], by_index[clip["clip_index"]]["image"])
        assert clip["video_id"] == by_index[clip["clip_index"]]["video_id"]
    for i in (0, 3, len(clips) - 1, -1):
        one = clips.read(i)
        other = by_index[i % len(clips)]
        assert one["clip_index"] == i % len(clips)
        np.testing.assert_array_equal(one["image"], other["image"])
        np.testing.assert_array_equal(one["frame_indices"], other["frame_indices"])


def test_targets_per_frame_and_clip_labels(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["bframes"])
    clips = samples.clips(ClipSpec(4, step=2), SlidingClips(5))
    truth = cds.truths["bframes"]
    for clip in clips:
        frames = clip["frame_indices"].tolist()
        assert len(clip["boxes"]) == len(clip["labels"]) == len(clip["track_ids"]) == len(clip["annotation_ids"]) == 4
        for t, f in enumerate(frames):
            assert clip["boxes"][t].tolist() == [list(object_box(truth.number(f), W, H))]
            assert clip["labels"][t].tolist() == [0] and clip["track_ids"][t].tolist() == [1]
        active = [1.0 if MARKER[0] <= f <= MARKER[1] else 0.0 for f in frames]
        assert clip["frame_labels"].tolist() == [[0.0, a] for a in active]
        assert clip["clip_labels"].tolist() == [0.0, max(active)]
        assert clip["frame_labels"].dtype == clip["clip_labels"].dtype == np.float32
        assert clip["video_id"] == "bframes" and clip["view_id"] is None
        assert "masks" not in clip


def test_timestamps_are_the_streams_presentation_times(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["vfr"]).clips(ClipSpec(3, step=4), SlidingClips(2))
    for clip in clips:
        want = [VFR_PTS_MS[f] * 1000 for f in clip["frame_indices"].tolist()]
        assert clip["timestamps_us"].tolist() == want and clip["timestamps_us"].dtype == np.int64


def test_sample_clips_one_per_selected_frame(cds: ClipsDataset) -> None:
    samples = FrameSamples(Dataset.open(cds.path), videos=["bframes", "editlist"], kinds=("box",), stride=5)
    clips = samples.clips(ClipSpec(3, step=2, anchor="center"))
    ix = clips.index()
    assert len(clips) == len(samples)
    assert [(ix.video_ids[c], int(a)) for c, a in zip(ix.video_codes, ix.anchors)] == list(samples.index)
    for k in range(len(ix)):
        n = samples.video(ix[k][0]).frame_count
        a = int(ix.anchors[k])
        first = min(max(a - 2, 0), n - 5)  # centre at position 1 of 3, shifted inside the video
        assert ix.frames[k].tolist() == [first, first + 2, first + 4]


def test_sliding_and_regular_positions(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["bframes"])  # 40 frames
    sliding = samples.clips(ClipSpec(4, step=3), SlidingClips(7)).index()  # span 10
    assert sliding.frames[:, 0].tolist() == list(range(0, 31, 7))
    assert sliding.frames.tolist() == [[f, f + 3, f + 6, f + 9] for f in range(0, 31, 7)]
    regular = samples.clips(ClipSpec(4, step=3), RegularClips(4)).index()
    assert regular.frames[:, 0].tolist() == [0, 10, 20, 30]  # k * 30 // 3: the last clip ends on frame 39
    one = samples.clips(ClipSpec(4, step=3), RegularClips(1)).index()
    assert one.frames[:, 0].tolist() == [15]


def test_random_clips_reproducible_and_new_each_epoch(cds: ClipsDataset) -> None:
    spec = ClipSpec(4, step=2)
    a = frames_of(cds).clips(spec, RandomClips(5, seed=7))
    b = frames_of(cds, videos=["bframes", "vfr"]).clips(spec, RandomClips(5, seed=7))  # other videos selected
    c = frames_of(cds).clips(spec, RandomClips(5, seed=8))
    ia0, ia1, ib0 = a.index(0), a.index(1), b.index(0)
    assert len(ia0) == len(ia1) == 5 * len(a.samples.video_ids) == len(a)
    bfr = ia0.frames[np.asarray(ia0.video_codes) == a.samples.video_ids.index("bframes")]
    assert bfr.tolist() == ib0.frames[np.asarray(ib0.video_codes) == 0].tolist()  # per video, whatever else
    assert ia0.frames.tolist() != ia1.frames.tolist() and ia0.frames.tolist() != c.index(0).frames.tolist()
    assert pickle.loads(pickle.dumps(a)).index(1).frames.tolist() == ia1.frames.tolist()
    for k in range(len(ia0)):
        n = a.samples.video(ia0[k][0]).frame_count
        assert 0 <= ia0.frames[k, 0] and ia0.frames[k, -1] < n
        assert np.diff(ia0.frames[k]).tolist() == [2, 2, 2]


def test_random_clips_with_skip_draw_only_clean_places(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["corrupt"]).clips(ClipSpec(4, edge="skip"), RandomClips(20, seed=1))
    for epoch in range(3):
        ix = clips.index(epoch)
        assert len(ix) == 20 and not (set(ix.frames.ravel().tolist()) & UNTRUSTED)


def test_marker_clips_lie_in_the_segment_and_carry_its_label(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["bframes", "offset"])
    clips = samples.clips(ClipSpec(3, step=2), MarkerClips(stride=2))  # span 5 in 6..17: starts 6, 8, 10, 12
    ix = clips.index()
    assert ix.frames[:, 0].tolist() == [6, 8, 10, 12] * 2
    assert ix.classes.tolist() == [1] * 8
    for clip in clips:
        assert clip["clip_labels"].tolist() == [0.0, 1.0]
        assert MARKER[0] <= clip["frame_indices"][0] and clip["frame_indices"][-1] <= MARKER[1]
    short = samples.clips(ClipSpec(8, step=2), MarkerClips())  # span 15 > the marker's 12 frames: centred
    assert short.index().frames[:, 0].tolist() == [6 - (15 - 12) // 2] * 2
    assert short.index().frames[:, -1].tolist() == [5 + 14] * 2
    skip = samples.clips(ClipSpec(8, step=2, edge="skip"), MarkerClips())
    assert len(skip) == 0 and skip.describe()["clips_left_out"] == {"bframes": 1, "offset": 1}


def test_clip_plan_groups_by_interval_and_shards_exactly_once(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["bframes", "corrupt"]).clips(ClipSpec(4), SlidingClips(1))
    plan = clips.plan(seed=3)
    assert isinstance(plan, ClipPlan) and len(plan) == len(clips)
    summary = plan.summary()
    assert summary["est_decoded_frames"] < summary["est_decoded_frames_one_by_one"]
    assert sorted(int(c) for chunk in plan.chunks for c in chunk.clips) == list(range(len(clips)))
    for shards, world in ((3, 1), (4, 2)):
        parts = [plan.shard(1, s, shards, world_size=world) for s in range(shards)]
        got = sorted(int(c) for part in parts for chunk in part for c in chunk.clips)
        counts = [sum(chunk.n_clips for chunk in part) for part in parts]
        if world == 1:
            assert got == list(range(len(clips)))
        else:
            assert len(clips) % 2 == 0 and got == list(range(len(clips)))
            assert counts[0] + counts[1] == counts[2] + counts[3]
    assert plan.order(0) != plan.order(1) and plan.order(1) == clips.plan(seed=3).order(1)


def test_masks_and_the_view_ride_along(cds: ClipsDataset, tmp_path: Path) -> None:
    clips = frames_of(cds, videos=["bframes"], with_masks=True).clips(ClipSpec(2), SlidingClips(19))
    clip = clips.read(0)
    assert [m.shape for m in clip["masks"]] == [(1, H, W), (1, H, W)]
    check_sample(clip, CLIP, dims={"T": 2, "C": 2, "H": H, "W": W}, optional=["masks"])


def test_video_shorter_than_a_clip(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["rot90", "bframes"])  # 24 and 40 frames
    with pytest.raises(ClipError, match=r"spans 25 frames, longer than the 24 frames \[0, 24\) of video 'rot90'"):
        samples.clips(ClipSpec(25), SlidingClips()).index()
    skip = samples.clips(ClipSpec(25, edge="skip"), SlidingClips(5))
    assert skip.describe()["videos_too_short"] == ["rot90"]
    assert {skip.index()[i][0] for i in range(len(skip))} == {"bframes"} and len(skip) == 4


def test_edge_error_over_untrusted_frames_refuses_before_reading(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["corrupt"]).clips(ClipSpec(4, edge="error"), SlidingClips(2))
    with pytest.raises(ClipError, match=r"clip of frames 12..15 at step 1 of video 'corrupt': frames 15 have no tru"):
        iter(clips)
    with pytest.raises(ClipError, match=r"of video 'corrupt'"):
        clips.read(0)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda s: s.clips("4 frames"), OptionError, r"clips need a vidlabel.ClipSpec, got '4 frames'"),
        (lambda s: s.clips(ClipSpec(2), "sliding"), OptionError, r"sampler must be a vidlabel ClipSampler"),
        (lambda s: SlidingClips(0), OptionError, r"stride must be an integer >= 1, got 0"),
        (lambda s: RandomClips(0), OptionError, r"clips_per_video must be an integer >= 1, got 0"),
        (lambda s: RandomClips(2, seed=-1), OptionError, r"seed must be an integer >= 0, got -1"),
        (lambda s: RegularClips(1.5), OptionError, r"clips_per_video must be an integer >= 1, got 1.5"),
        (lambda s: MarkerClips(stride=0), OptionError, r"stride must be an integer >= 1, got 0"),
        (lambda s: s.clips(ClipSpec(2)).read(10**6), SampleOutOfRangeError, r"out of range"),
        (lambda s: s.clips(ClipSpec(2)).read(1.0), SampleIndexTypeError, r"must be an integer"),
        (lambda s: s.clips(ClipSpec(2)).index(-1), OptionError, r"epoch must be an integer >= 0, got -1"),
        (lambda s: s.clips(ClipSpec(2)).iter_clips(shard=2, num_shards=2), OptionError, r"shard 2 out of range"),
        (
            lambda s: s.clips(ClipSpec(2)).clip_sample("bframes", [0, 1], [np.zeros((H, W, 3), np.uint8)]),
            OptionError,
            r"a clip of 2 frames needs 2 images, got 1",
        ),
    ],
)
def test_bad_input_is_refused(cds: ClipsDataset, make, error, match: str) -> None:
    samples = frames_of(cds, videos=["bframes"])
    with pytest.raises(error, match=match):
        make(samples)


def test_clip_samples_pickle_and_describe(cds: ClipsDataset) -> None:
    clips = frames_of(cds, videos=["vfr"]).clips(ClipSpec(2, step=5, anchor="end"), RegularClips(2))
    again = pickle.loads(pickle.dumps(clips))
    assert isinstance(again, ClipSamples) and again.index().frames.tolist() == clips.index().frames.tolist()
    d = clips.describe()
    assert d["clips"] == 2 and d["frames_per_clip"] == 2 and d["step"] == 5 and d["anchor"] == "end"
    assert d["clips_per_video"] == {"vfr": 2} and d["sampler"] == "RegularClips(clips_per_video=2)"


def test_iterating_decodes_what_the_plan_says_not_every_clip_frame(cds: ClipsDataset) -> None:
    samples = frames_of(cds, videos=["bframes"])  # 40 frames, a keyframe every 20
    clips = samples.clips(ClipSpec(4), SlidingClips(1))  # 37 windows, 148 clip frames
    opened: list = []
    open_reader = samples.reader

    def recording_reader(video_id: str):
        reader = open_reader(video_id)
        opened.append(reader)
        return reader

    samples.reader = recording_reader  # type: ignore[method-assign]
    assert sum(1 for _ in clips) == 37
    decoded = sum(r.stats["decoded"] for r in opened)
    # Two chunks (first frames 0..19 and 20..36): frames 0..22 and 20..39, each decoded once per chunk.
    assert clips.plan().summary()["est_decoded_frames"] == 23 + 20
    assert decoded <= 23 + 20 < 37 * 4
