"""ClipSpec: a clip's frame numbers, its edges and the frames without a trustworthy picture."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from vidlabel import ClipSpec
from vidlabel.errors import ClipError, VidlabelError


def _nominal(spec: ClipSpec, anchor: int) -> np.ndarray:
    """The clip's frames before any edge rule, written out from the definition."""
    t, s = spec.frames_per_clip, spec.step
    first = {"start": anchor, "center": anchor - ((t - 1) // 2) * s, "end": anchor - (t - 1) * s}[spec.anchor]
    return np.array([first + k * s for k in range(t)])


def test_span_and_inside_clips_are_the_definition() -> None:
    for t, s, anchor in itertools.product((1, 2, 5), (1, 3), ("start", "center", "end")):
        spec = ClipSpec(t, step=s, anchor=anchor)  # type: ignore[arg-type]
        assert spec.span() == (t - 1) * s + 1
        n = 40
        for a in range(n):
            want = _nominal(spec, a)
            if want[0] >= 0 and want[-1] < n:
                got = spec.frames(a, n)
                assert got is not None and got.dtype == np.int64
                np.testing.assert_array_equal(got, want)
                assert a in got


def test_shift_keeps_the_clip_inside_the_video() -> None:
    spec = ClipSpec(4, step=3, anchor="center", edge="shift")
    n = 20
    for a in range(n):
        got = spec.frames(a, n)
        assert got is not None
        np.testing.assert_array_equal(np.diff(got), 3)
        assert 0 <= got[0] and got[-1] < n
        want_first = min(max(_nominal(spec, a)[0], 0), n - spec.span())
        assert got[0] == want_first


def test_shift_moves_past_untrusted_frames_to_the_nearest_place() -> None:
    usable = np.ones(30, bool)
    usable[[10, 11]] = False
    spec = ClipSpec(3, step=2)
    got = spec.frames(8, 30, usable)
    # Candidate firsts by distance from 8: 8 (8,10,12 bad), 7 (7,9,11 bad), 9 (9,11,13 bad), 6 (6,8,10 bad),
    # 10 (10 bad), 5 (5,7,9 good).
    np.testing.assert_array_equal(got, [5, 7, 9])
    assert usable[got].all()


def test_repeat_takes_the_nearest_usable_frame_of_the_clip() -> None:
    spec = ClipSpec(4, step=2, edge="repeat")
    np.testing.assert_array_equal(spec.frames(16, 20), [16, 18, 18, 18])
    end = ClipSpec(3, step=1, anchor="end", edge="repeat")
    np.testing.assert_array_equal(end.frames(0, 10), [0, 0, 0])
    usable = np.ones(20, bool)
    usable[5] = False
    np.testing.assert_array_equal(spec.frames(1, 20, usable), [1, 3, 3, 7])
    # No frame of the clip usable: the usable frame nearest the anchor, T times (a tie goes to the earlier).
    usable[8:13] = False
    np.testing.assert_array_equal(ClipSpec(3, step=2, anchor="center", edge="repeat").frames(10, 20, usable), [7] * 3)
    np.testing.assert_array_equal(ClipSpec(2, step=2, edge="repeat").frames(11, 20, usable), [13] * 2)


def test_skip_leaves_the_clip_out() -> None:
    usable = np.ones(20, bool)
    usable[5] = False
    spec = ClipSpec(4, step=2, edge="skip")
    assert spec.frames(3, 20, usable) is None
    assert spec.frames(15, 20) is None
    np.testing.assert_array_equal(spec.frames(6, 20, usable), [6, 8, 10, 12])


def test_untrusted_frames_never_appear_in_any_clip() -> None:
    rng = np.random.default_rng(3)
    n = 60
    usable = rng.random(n) > 0.15
    for edge, anchor in itertools.product(("shift", "repeat", "skip"), ("start", "center", "end")):
        spec = ClipSpec(4, step=2, anchor=anchor, edge=edge)  # type: ignore[arg-type]
        for a in np.flatnonzero(usable):
            got = spec.frames(int(a), n, usable)
            if got is not None:
                assert usable[got].all(), (edge, anchor, a, got)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"frames_per_clip": 0}, r"frames_per_clip must be an integer >= 1, got 0"),
        ({"frames_per_clip": -3}, r"frames_per_clip must be an integer >= 1, got -3"),
        ({"frames_per_clip": 2.0}, r"frames_per_clip must be an integer >= 1, got 2\.0"),
        ({"frames_per_clip": True}, r"frames_per_clip must be an integer >= 1, got True"),
        ({"frames_per_clip": 4, "step": 0}, r"step must be an integer >= 1, got 0"),
        ({"frames_per_clip": 4, "anchor": "middle"}, r"anchor must be one of start, center, end; got 'middle'"),
        ({"frames_per_clip": 4, "edge": "wrap"}, r"edge must be one of error, shift, repeat, skip; got 'wrap'"),
    ],
)
def test_bad_spec_is_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ClipError, match=match):
        ClipSpec(**kwargs)


def test_clip_longer_than_the_video_is_refused_for_every_edge() -> None:
    for edge in ("error", "shift", "repeat", "skip"):
        spec = ClipSpec(5, step=3, edge=edge)  # type: ignore[arg-type]
        with pytest.raises(ClipError, match=r"spans 13 frames, longer than the 12 frames \[0, 12\) of video 'cam'"):
            spec.frames(0, 12, video_id="cam")


def test_edge_error_names_the_frames() -> None:
    spec = ClipSpec(4, step=2, edge="error")
    with pytest.raises(ClipError, match=r"clip of frames 16..22 at step 2: frames 20, 22 lie outside \[0, 20\)"):
        spec.frames(16, 20)
    usable = np.ones(21, bool)
    usable[[4, 6]] = False
    with pytest.raises(ClipError, match=r"of video 'v': frames 4, 6 have no trustworthy picture \(edge='error'"):
        spec.frames(2, 21, usable, video_id="v")


def test_bad_frames_arguments_are_refused() -> None:
    spec = ClipSpec(2)
    with pytest.raises(ClipError, match=r"anchor frame 10 is out of range \[0, 10\)"):
        spec.frames(10, 10)
    with pytest.raises(ClipError, match=r"usable must be a \(10,\) bool array"):
        spec.frames(0, 10, np.ones(9, bool))
    usable = np.zeros(10, bool)
    usable[::2] = True
    with pytest.raises(ClipError, match=r"no clip of 2 frames at step 1 fits .* 5 untrusted"):
        spec.frames(0, 10, usable)
    with pytest.raises(ClipError, match=r"has no frame in \[0, 10\) with a trustworthy picture to repeat"):
        ClipSpec(2, edge="repeat").frames(0, 10, np.zeros(10, bool))


def test_clip_error_is_a_value_error_that_pickles() -> None:
    err = pickle.loads(pickle.dumps(ClipError("frames 3..9 of video 'v'")))
    assert isinstance(err, VidlabelError) and isinstance(err, ValueError)
    assert str(err) == "frames 3..9 of video 'v'"
    assert pickle.loads(pickle.dumps(ClipSpec(3, 2, "end", "skip"))) == ClipSpec(3, 2, "end", "skip")


def test_frames_many_is_frames_of_each_anchor() -> None:
    rng = np.random.default_rng(11)
    usable = rng.random(50) > 0.1
    anchors = np.flatnonzero(usable)
    for edge in ("shift", "repeat", "skip"):
        spec = ClipSpec(5, step=2, anchor="center", edge=edge)  # type: ignore[arg-type]
        got, kept = spec.frames_many(anchors, 50, usable)
        want = [spec.frames(int(a), 50, usable) for a in anchors]
        assert kept.tolist() == [w is not None for w in want]
        assert got.tolist() == [w.tolist() for w in want if w is not None]
    with pytest.raises(ClipError, match=r"spans 9 frames, longer than the 8 frames"):
        ClipSpec(5, step=2).frames_many([0], 8)
