"""ReadPlan (the spec's example is in test_spec_examples.py): chunking worked out by hand, exactly-once shards, determinism, errors."""

from __future__ import annotations

import itertools
import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidlabel import FrameIndex, ReadPlan
from vidlabel.errors import FrameOutOfRangeError, OptionError
from vidlabel.video._readplan import epoch_rng, shuffled


def _index(n_frames: int, keyframes: list[int]) -> FrameIndex:
    return FrameIndex(timebase={"num": 1, "den": 1000}, pts=[i * 40 for i in range(n_frames)], keyframes=keyframes)


def test_chunks_and_estimates_by_hand() -> None:
    index = _index(30, [0, 10, 20])
    plan = ReadPlan([("v", 5), ("v", 5), ("v", 12), ("v", 29), ("v", 3)], indexes={"v": index}, seed=1)
    chunks = plan.chunks
    assert [(c.interval, c.start_frame, c.frames.tolist(), c.repeats.tolist()) for c in chunks] == [
        (0, 0, [3, 5], [1, 2]),
        (1, 10, [12], [1]),
        (2, 20, [29], [1]),
    ]
    assert [c.n_samples for c in chunks] == [3, 1, 1]
    s = plan.summary()
    # decode 0..5, 10..12, 20..29 once
    assert s["est_decoded_frames"] == 6 + 3 + 10
    # one by one: 5 -> 6 frames (twice), 12 -> 3, 29 -> 10, 3 -> 4
    assert s["est_decoded_frames_one_by_one"] == 6 + 6 + 3 + 10 + 4
    assert s["samples"] == 5 and s["distinct_frames"] == 4 and s["videos_without_index"] == 0
    assert len(plan) == 5


def test_videos_without_index_use_blocks() -> None:
    plan = ReadPlan([("b", 7), ("a", 260), ("a", 10), ("a", 249), ("a", 250)], indexes={"a": None}, seed=0)
    got = [(c.video_id, c.interval, c.start_frame, c.frames.tolist()) for c in plan.chunks]
    assert got == [("a", 0, 0, [10, 249]), ("a", 1, 250, [250, 260]), ("b", 0, 0, [7])]
    assert plan.summary()["videos_without_index"] == 2
    small = ReadPlan([("a", 7), ("a", 12)], indexes={}, seed=0, block=10)
    assert [(c.start_frame, c.frames.tolist()) for c in small.chunks] == [(0, [7]), (10, [12])]
    assert small.summary()["est_decoded_frames"] == 8 + 3


def test_keyframe_not_at_zero() -> None:
    # Frames before the first keyframe belong to interval 0 and decode from themselves onwards.
    plan = ReadPlan([("v", 2), ("v", 6)], indexes={"v": _index(10, [5])}, seed=0)
    assert [(c.start_frame, c.frames.tolist()) for c in plan.chunks] == [(0, [2, 6])]


def test_request_order_does_not_matter_and_pickles() -> None:
    rng = np.random.default_rng(3)
    reqs = [(str(v), int(f)) for v, f in zip(rng.integers(0, 3, 300), rng.integers(0, 500, 300))]
    indexes = {"0": _index(500, list(range(0, 500, 50))), "1": None}
    a = ReadPlan(reqs, indexes=indexes, seed=7)
    b = ReadPlan(list(reversed(reqs)), indexes=indexes, seed=7)
    c = pickle.loads(pickle.dumps(a))
    for p in (b, c):
        assert p.order(3) == a.order(3)
        assert [(x.video_id, x.frames.tolist(), x.repeats.tolist()) for x in p.shard(3, 1, 3)] == [
            (x.video_id, x.frames.tolist(), x.repeats.tolist()) for x in a.shard(3, 1, 3)
        ]
    assert ReadPlan(reqs, indexes=indexes, seed=8).order(3) != a.order(3)


def test_order_is_fixed_across_machines() -> None:
    # PCG64 from SeedSequence([seed, epoch, stream]) is platform independent: pin the numbers.
    plan = ReadPlan([("v", f) for f in range(0, 600, 7)], indexes={"v": _index(600, list(range(0, 600, 100)))}, seed=0)
    assert sorted(plan.order(0)) == list(range(6))
    expected = np.random.default_rng(np.random.SeedSequence([0, 0, 0])).permutation(6).tolist()
    assert plan.order(0) == expected


def test_from_arrays_matches_pairs() -> None:
    reqs = [("a", 4), ("b", 9), ("a", 4), ("a", 300)]
    a = ReadPlan(reqs, indexes={}, seed=2)
    b = ReadPlan.from_arrays(("b", "a"), np.array([1, 0, 1, 1]), np.array([4, 9, 4, 300]), indexes={}, seed=2)
    assert [(c.video_id, c.frames.tolist(), c.repeats.tolist()) for c in a.chunks] == [
        (c.video_id, c.frames.tolist(), c.repeats.tolist()) for c in b.chunks
    ]


def test_a_plan_counts_the_videos_it_reads_not_every_video_it_was_told_of() -> None:
    # samples.plan_reads passes every selected video: a plan of one video's frames said "videos": 3
    pairs = ReadPlan([("b", 4), ("b", 7)], indexes={}, seed=0)
    cols = ReadPlan.from_arrays(("a", "b", "c"), np.array([1, 1]), np.array([4, 7]), indexes={}, seed=0)
    assert cols.video_ids == pairs.video_ids == ("b",)
    assert cols.summary() == pairs.summary() and cols.summary()["videos"] == 1
    assert repr(cols) == "ReadPlan(samples=2, chunks=1, videos=1)"
    empty = ReadPlan.from_arrays(("a", "b"), np.zeros(0, np.int64), np.zeros(0, np.int64), indexes={}, seed=0)
    assert empty.video_ids == () and empty.summary()["videos"] == 0


@settings(max_examples=40, deadline=None)
@given(
    frames=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 199)), min_size=0, max_size=120),
    num_shards=st.integers(1, 7),
    epoch=st.integers(0, 5),
    seed=st.integers(0, 2**32),
)
def test_every_request_exactly_once_in_balanced_shards(frames, num_shards, epoch, seed) -> None:
    reqs = [(f"v{v}", f) for v, f in frames]
    plan = ReadPlan(reqs, indexes={"v0": _index(200, [0, 30, 90]), "v1": None}, seed=seed, block=40)
    shards = [plan.shard(epoch, s, num_shards) for s in range(num_shards)]
    got = Counter()
    for chunks in shards:
        for c in chunks:
            assert list(c.frames) == sorted(set(c.frames.tolist()))  # increasing, distinct
            for f, k in zip(c.frames.tolist(), c.repeats.tolist()):
                got[(c.video_id, f)] += k
    assert got == Counter(reqs)
    sizes = plan.shard_sizes(epoch, num_shards)
    assert sizes == [sum(c.n_samples for c in chunks) for chunks in shards]
    biggest = max((c.n_samples for c in plan.chunks), default=0)
    assert max(sizes) - min(sizes) <= biggest
    assert Counter(plan.iter_requests(epoch, 0, 1)) == Counter(reqs)
    assert sum(len(x) for x in shards) == len(plan.chunks)


def test_shuffled_yields_each_item_once() -> None:
    items = list(range(100))
    for size in (0, 1, 7, 100, 1000):
        out = list(shuffled(iter(items), size, epoch_rng(0, 0, 2)))
        assert sorted(out) == items
        if size > 1:
            assert out != items
    assert list(shuffled(iter(items), 16, epoch_rng(5, 1, 2))) == list(shuffled(iter(items), 16, epoch_rng(5, 1, 2)))


def test_errors() -> None:
    index = _index(30, [0, 10, 20])
    with pytest.raises(FrameOutOfRangeError, match=r"frame 30 out of range \[0, 30\) in video 'v'"):
        ReadPlan([("v", 30)], indexes={"v": index}, seed=0)
    with pytest.raises(FrameOutOfRangeError, match=r"frame -1 out of range .* video 'w'"):
        ReadPlan([("w", -1)], indexes={}, seed=0)
    with pytest.raises(OptionError, match=r"request 1 must be a \(video_id, frame\) pair"):
        ReadPlan([("v", 1), 5], indexes={}, seed=0)
    with pytest.raises(OptionError, match="request 0: frame must be an integer"):
        ReadPlan([("v", 1.5)], indexes={}, seed=0)
    with pytest.raises(OptionError, match="request 0: video_id must be a string"):
        ReadPlan([(3, 1)], indexes={}, seed=0)
    with pytest.raises(OptionError, match="seed must be an integer >= 0"):
        ReadPlan([("v", 1)], indexes={}, seed=-1)
    for block in (0, 2**63, 10**30):  # 2**63 and more were a raw OverflowError from NumPy
        with pytest.raises(OptionError, match=rf"block must be an integer in \[1, 2\*\*63\), got {block}"):
            ReadPlan([("v", 1)], indexes={}, seed=0, block=block)
    assert ReadPlan([("v", 1)], indexes={}, seed=0, block=2**63 - 1).summary()["chunks"] == 1
    plan = ReadPlan([("v", 1)], indexes={}, seed=0)
    with pytest.raises(OptionError, match=r"shard 2 out of range \[0, 2\)"):
        plan.shard(0, 2, 2)
    with pytest.raises(OptionError, match="num_shards must be an integer >= 1"):
        plan.shard_sizes(0, 0)
    with pytest.raises(OptionError, match="epoch must be an integer >= 0"):
        plan.order(-1)
    with pytest.raises(OptionError, match="differ in length"):
        ReadPlan.from_arrays(("v",), np.zeros(2, int), np.zeros(3, int), indexes={}, seed=0)


def test_empty_plan() -> None:
    plan = ReadPlan([], indexes={}, seed=0)
    assert plan.summary()["samples"] == 0 and plan.chunks == ()
    assert plan.shard_sizes(0, 3) == [0, 0, 0]


@pytest.mark.parametrize("total", [0, 1, 7, 10, 101])
@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_rank_and_worker_parts_tile_the_epoch(total: int, world: int) -> None:
    from vidlabel.video._readplan import samples_per_rank, worker_span

    for drop_last in (False, True):
        per_rank = samples_per_rank(total, world, drop_last)
        # ceil pads by wrapping, floor drops the tail: by at most world - 1 samples either way
        assert per_rank * world >= total if not drop_last else per_rank * world <= total
        assert abs(per_rank * world - total) < world
        for workers in (1, 2, 3):
            spans = [worker_span(per_rank, w, workers) for w in range(workers)]
            assert spans[0][0] == 0 and spans[-1][1] == per_rank
            assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # contiguous, no overlap
            sizes = [hi - lo for lo, hi in spans]
            assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("epoch", [1.5, 1.9, True, np.float64(1.0)])
def test_an_epoch_that_is_not_an_integer_is_refused_even_once_its_whole_part_was_read(epoch: object) -> None:
    # shard(1, ...) kept epoch 1's assignment under the key int(epoch): afterwards shard(1.9, ...), shard(True, ...)
    # and shard_sizes(1.5, ...) gave epoch 1's chunks without a word, where before they were refused
    plan = ReadPlan([("a", f) for f in range(0, 1000, 7)], indexes={}, seed=0, block=50)
    plan.shard(1, 0, 2)
    plan.shard_sizes(1, 2)
    with pytest.raises(OptionError, match=r"epoch must be an integer >= 0, got"):
        plan.shard(epoch, 0, 2)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"epoch must be an integer >= 0, got"):
        plan.shard_sizes(epoch, 2)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=r"epoch must be an integer >= 0, got"):
        list(plan.iter_requests(epoch, 0, 2))  # type: ignore[arg-type]
    assert [c.interval for c in plan.shard(np.int64(1), 0, 2)] == [c.interval for c in plan.shard(1, 0, 2)]
