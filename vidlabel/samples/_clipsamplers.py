"""Which clips: the samplers that pick each video's anchor frames, over one interface.

A sampler gives, for one video and one epoch, the anchor frames of its clips
(and, for clips made from markers, the marker's class); :class:`vidlabel.clip.ClipSpec`
turns each anchor into the clip's frames. Like torchcodec's ``samplers/``:
``clips_at_random_indices`` is :class:`RandomClips`, ``clips_at_regular_indices``
is :class:`RegularClips`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from vidlabel.clip import ClipSpec
from vidlabel.video._readplan import check_nonneg_int, check_positive_int, epoch_rng

__all__ = ["ClipSampler", "MarkerClips", "RandomClips", "RegularClips", "SampleClips", "SlidingClips", "VideoSlots"]

# The random stream of RandomClips, apart from the plans' chunk order, video order and shuffle buffers.
STREAM_RANDOM_CLIPS = 3


@dataclass(frozen=True)
class VideoSlots:
    """What a sampler may choose from in one video.

    Attributes
    ----------
    video_id : str
    frame_count : int
    usable : (frame_count,) bool
        True on frames with a trustworthy picture.
    selected : (F,) int64
        The video's frames in the FrameSamples index (kinds, labels, origins, view, stride applied).
    marker_start, marker_end, marker_class : (M,) int64
        The selected markers (inclusive end) and their class positions.
    """

    video_id: str
    frame_count: int
    usable: np.ndarray
    selected: np.ndarray
    marker_start: np.ndarray
    marker_end: np.ndarray
    marker_class: np.ndarray


@dataclass(frozen=True)
class Anchors:
    """A sampler's choice for one video: ``frames`` (K,) int64 anchors, ``classes`` (K,) int64 (-1: not from
    a marker), and ``left_out``: clips the sampler could not place (a marker shorter than a clip, skipped)."""

    frames: np.ndarray
    classes: np.ndarray
    left_out: int = 0


def _plain(frames: np.ndarray) -> Anchors:
    frames = np.asarray(frames, dtype=np.int64)
    return Anchors(frames, np.full(frames.size, -1, np.int64))


class ClipSampler:
    """Which clips of each video to read; subclasses say how.

    ``per_epoch`` is True for samplers whose clips are drawn anew each epoch.
    """

    per_epoch: bool = False

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:  # pragma: no cover - abstract
        """The anchor frames of one video's clips in epoch ``epoch``."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class SampleClips(ClipSampler):
    """One clip per frame of the FrameSamples index, anchored at that frame.

    The index's selection decides which frames (``kinds``, ``labels``,
    ``origins``, ``view_id``, ``videos``, ``frames``, ``stride``); the clip's
    other frames need no annotation.
    """

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:
        return _plain(video.selected)


class SlidingClips(ClipSampler):
    """Windows over every frame: clips starting at frames 0, ``stride``, 2 x ``stride``, ... while they fit.

    Parameters
    ----------
    stride : int
        Frames between the first frames of consecutive clips, >= 1 (the clip's
        own ``span()`` gives windows that do not overlap).

    Raises
    ------
    OptionError
        If ``stride`` is not an integer >= 1.
    """

    def __init__(self, stride: int = 1) -> None:
        self.stride = check_positive_int(stride, "stride")

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:
        firsts = np.arange(0, video.frame_count - spec.span() + 1, self.stride, dtype=np.int64)
        return _plain(firsts + spec.offset())


class RandomClips(ClipSampler):
    """``clips_per_video`` clips of each video at random places, drawn anew each epoch.

    The first frames are drawn uniformly from the places where a clip fits
    (``[0, frame_count - span]``), without replacement while there are enough
    places (with replacement when there are fewer), and sorted. With
    ``edge="skip"`` only places whose frames all have a trustworthy picture
    are drawn, so every video with one yields ``clips_per_video`` clips. The
    draw depends only on ``seed``, the epoch and the video id (PCG64 seeded
    with ``(seed, epoch, stream, crc32(video_id))``): the same clips on any
    machine, whatever other videos are selected. torchcodec's
    ``clips_at_random_indices``.

    Parameters
    ----------
    clips_per_video : int
        >= 1.
    seed : int
        >= 0.

    Raises
    ------
    OptionError
        If ``clips_per_video`` is not an integer >= 1 or ``seed`` not an integer >= 0.
    """

    per_epoch = True

    def __init__(self, clips_per_video: int, *, seed: int = 0) -> None:
        self.clips_per_video = check_positive_int(clips_per_video, "clips_per_video")
        self.seed = check_nonneg_int(seed, "seed")

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:
        firsts = np.arange(max(video.frame_count - spec.span() + 1, 0), dtype=np.int64)
        if spec.edge == "skip" and firsts.size:
            offsets = spec.step * np.arange(spec.frames_per_clip)
            firsts = firsts[video.usable[firsts[:, None] + offsets[None, :]].all(axis=1)]
        if firsts.size == 0:
            return _plain(firsts)
        rng = epoch_rng(self.seed, epoch, STREAM_RANDOM_CLIPS, zlib.crc32(video.video_id.encode()))
        n = self.clips_per_video
        chosen = np.sort(rng.choice(firsts, size=n, replace=n > firsts.size))
        return _plain(chosen + spec.offset())


class RegularClips(ClipSampler):
    """``clips_per_video`` evenly spaced clips of each video (the same every epoch).

    Clip k of N starts at ``floor(k * L / (N - 1))`` with ``L = frame_count -
    span``: the first at frame 0, the last ending on the video's last frame
    (one clip: at ``L // 2``, the middle). torchcodec's ``clips_at_regular_indices``.

    Parameters
    ----------
    clips_per_video : int
        >= 1.

    Raises
    ------
    OptionError
        If ``clips_per_video`` is not an integer >= 1.
    """

    def __init__(self, clips_per_video: int) -> None:
        self.clips_per_video = check_positive_int(clips_per_video, "clips_per_video")

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:
        room = video.frame_count - spec.span()
        if room < 0:
            return _plain(np.zeros(0, np.int64))
        n = self.clips_per_video
        k = np.arange(n, dtype=np.int64)
        firsts = k * room // (n - 1) if n > 1 else np.array([room // 2], np.int64)
        return _plain(firsts + spec.offset())


class MarkerClips(ClipSampler):
    """Clips inside each marker segment; the marker's label is the clip's label (action recognition).

    In a segment ``[start_frame, end_frame]`` (inclusive), clips start at
    ``start_frame``, ``start_frame + stride``, ... while they end inside it. A
    segment shorter than a clip's span gives one clip centred on it (its frames
    reach outside the segment; the video's edges follow the ``edge`` rule),
    except with ``edge="skip"``, which leaves it out and counts it. Overlapping
    markers each give their own clips.

    Parameters
    ----------
    stride : int, optional
        Frames between the first frames of a segment's clips, >= 1; None: the
        clip's ``span()`` (clips that do not overlap).

    Raises
    ------
    OptionError
        If ``stride`` is not None nor an integer >= 1.
    """

    def __init__(self, stride: int | None = None) -> None:
        self.stride = None if stride is None else check_positive_int(stride, "stride")

    def anchors(self, video: VideoSlots, spec: ClipSpec, epoch: int) -> Anchors:
        span = spec.span()
        stride = self.stride or span
        frames: list[np.ndarray] = []
        classes: list[np.ndarray] = []
        left_out = 0
        for start, end, cls in zip(video.marker_start.tolist(), video.marker_end.tolist(), video.marker_class.tolist()):
            length = end - start + 1
            if length >= span:
                firsts = np.arange(start, end - span + 2, stride, dtype=np.int64)
            elif spec.edge == "skip":
                left_out += 1
                continue
            else:
                firsts = np.array([start - (span - length) // 2], np.int64)
            anchors = np.clip(firsts + spec.offset(), 0, video.frame_count - 1)
            frames.append(anchors)
            classes.append(np.full(anchors.size, cls, np.int64))
        if not frames:
            return Anchors(np.zeros(0, np.int64), np.zeros(0, np.int64), left_out)
        return Anchors(np.concatenate(frames), np.concatenate(classes), left_out)
