"""ClipPlan: clips grouped by the keyframe interval of their first frame, epoch orders, shards over ranks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from vidlabel.errors import FrameOutOfRangeError, OptionError
from vidlabel.spec import FrameIndex
from vidlabel.video import ClipPlan


def index(n_frames: int, keyframes: list[int]) -> FrameIndex:
    return FrameIndex(timebase={"num": 1, "den": 1000}, pts=[i * 40 for i in range(n_frames)], keyframes=keyframes)


def windows(firsts: list[int], t: int = 3, step: int = 2) -> np.ndarray:
    return np.array([[f + k * step for k in range(t)] for f in firsts], np.int64)


def plan_of(seed: int = 0) -> ClipPlan:
    """Video "b" (keyframes 0, 10, 20) with clips starting at 0, 4, 9, 10, 12, 25; video "a" (no index) at 3, 300."""
    frames = np.concatenate([windows([0, 4, 9, 10, 12, 25]), windows([3, 300])])
    codes = np.array([1] * 6 + [0] * 2)
    return ClipPlan(("a", "b"), codes, frames, indexes={"b": index(40, [0, 10, 20])}, seed=seed, block=250)


def test_chunks_follow_the_first_frames_interval() -> None:
    plan = plan_of()
    got = [(c.video_id, c.interval, c.start_frame, c.clips.tolist()) for c in plan.chunks]
    # "a" first (video ids sorted), cut into blocks of 250; "b" by keyframe interval of each clip's first frame.
    assert got == [
        ("a", 0, 0, [6]),
        ("a", 1, 250, [7]),
        ("b", 0, 0, [0, 1, 2]),
        ("b", 1, 10, [3, 4]),
        ("b", 2, 20, [5]),
    ]
    assert plan.chunks[2].frames[:, 0].tolist() == [0, 4, 9]
    # The chunk of first frames 0, 4, 9 decodes 0..13 (9 + 2 x 2), though 10..13 lie in the next interval.
    assert plan.chunks[2].est_decoded_frames == 14
    s = plan.summary()
    assert s["clips"] == len(plan) == 8 and s["chunks"] == 5 and s["clip_frames"] == 24


def test_epoch_order_is_seeded() -> None:
    assert plan_of(1).order(0) == plan_of(1).order(0)
    assert sorted(plan_of(1).order(3)) == list(range(5))
    assert {tuple(plan_of(1).order(e)) for e in range(6)} != {tuple(plan_of(1).order(0))}


def test_shards_in_one_process_hold_whole_chunks_once() -> None:
    plan = plan_of(2)
    parts = [plan.shard(1, s, 3) for s in range(3)]
    assert sorted(c for part in parts for chunk in part for c in chunk.clips.tolist()) == list(range(8))
    assert all(chunk in plan.chunks for part in parts for chunk in part)


@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_get_equal_counts(drop_last: bool) -> None:
    plan = plan_of(3)
    for world, workers in ((2, 1), (2, 2), (3, 2)):
        shards = world * workers
        parts = [plan.shard(0, s, shards, world_size=world, drop_last=drop_last) for s in range(shards)]
        per_rank = [sum(c.n_clips for p in parts[r * workers : (r + 1) * workers] for c in p) for r in range(world)]
        want = 8 // world if drop_last else -(-8 // world)
        assert per_rank == [want] * world
        got = Counter(c for p in parts for chunk in p for c in chunk.clips.tolist())
        if drop_last:
            assert all(n == 1 for n in got.values()) and len(got) == want * world
        else:
            assert set(got) == set(range(8)) and sum(got.values()) == want * world


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: ClipPlan(("a",), [0], np.zeros(3, np.int64), indexes={}, seed=0), OptionError, r"\(K, T\) integer"),
        (lambda: ClipPlan(("a",), [0], np.zeros((1, 2)), indexes={}, seed=0), OptionError, r"\(K, T\) integer"),
        (lambda: ClipPlan(("a",), [1], np.zeros((1, 2), int), indexes={}, seed=0), OptionError, r"in \[0, 1\)"),
        (lambda: ClipPlan(("a",), [0], np.zeros((1, 2), int), indexes={}, seed=-1), OptionError, r"seed must be"),
        (
            lambda: ClipPlan(("a",), [0], windows([38]), indexes={"a": index(40, [0])}, seed=0),
            FrameOutOfRangeError,
            r"clip frame 42 out of range \[0, 40\) in video 'a'",
        ),
        (lambda: plan_of().shard(0, 3, 3), OptionError, r"shard 3 out of range \[0, 3\)"),
        (lambda: plan_of().shard(0, 0, 3, world_size=2), OptionError, r"num_shards 3 must be world_size 2"),
        (lambda: plan_of().shard(0, 0, 2, drop_last="yes"), OptionError, r"drop_last must be True or False"),
    ],
)
def test_bad_input_is_refused(make, error, match: str) -> None:
    with pytest.raises(error, match=match):
        make()
