"""What a clip is: T frames of one video at a fixed step, placed around the frame that selected it.

A **clip** is ``frames_per_clip`` (T) frames of one video, ``step`` frames
apart, so it covers ``span() = (T - 1) * step + 1`` frames from its first to
its last. Every sampler (one clip per selected frame, sliding windows, random
or evenly spaced clips, clips inside marker segments) picks an **anchor
frame**; :meth:`ClipSpec.frames` turns it into the clip's frame numbers, and
decides what happens when the clip would leave the video or touch a frame
without a trustworthy picture (``VideoMetadata.untrusted_frames``, which every
reader refuses). The NumPy layer, the PyTorch datasets, the frame store and
the MediaSequence export all ask this one class, so a clip is the same clip
everywhere.

Vocabulary
----------
We take torchcodec's samplers' vocabulary (``torchcodec.samplers``) and name
ours after it:

=============================  ==================================================================
torchcodec                     vidlabel
=============================  ==================================================================
``num_frames_per_clip``        ``frames_per_clip`` (T)
``num_indices_between_frames`` ``step`` (1: consecutive frames)
(clip starts at its index)     ``anchor="start"``; also ``"center"`` and ``"end"``
``policy="repeat_last"``       ``edge="repeat"`` (at both ends, and over untrusted frames)
``policy="wrap"``              none: a wrapped clip puts earlier frames after later ones
``policy="error"``             ``edge="error"``
(starts kept inside range)     ``edge="shift"`` (the default)
(none)                         ``edge="skip"``: the clip is left out and counted
=============================  ==================================================================

Frame numbers are 0-based displayed frames, as everywhere in vidlabel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from vidlabel.errors import ClipError

__all__ = ["ANCHORS", "EDGES", "Anchor", "ClipSpec", "Edge"]

Anchor = Literal["start", "center", "end"]
Edge = Literal["error", "shift", "repeat", "skip"]

#: Where the selecting frame sits in its clip.
ANCHORS: tuple[str, ...] = ("start", "center", "end")
#: What happens to a clip that would leave the video or touch an untrusted frame.
EDGES: tuple[str, ...] = ("error", "shift", "repeat", "skip")

# Candidate first frames tried at once when a clip is shifted past untrusted frames.
_SHIFT_BATCH = 256


@dataclass(frozen=True)
class ClipSpec:
    """How a clip is made from the frame that selects it.

    Parameters
    ----------
    frames_per_clip : int
        T >= 1, the number of frames in a clip (torchcodec's ``num_frames_per_clip``).
    step : int
        Frames between consecutive frames of a clip, >= 1 (torchcodec's
        ``num_indices_between_frames``): 1 takes consecutive frames, 4 every
        fourth frame.
    anchor : {"start", "center", "end"}
        Where the selecting (anchor) frame sits in the clip: its first frame,
        its middle frame (position ``(T - 1) // 2``), or its last frame.
    edge : {"error", "shift", "repeat", "skip"}
        What happens to a clip that would leave the video ``[0, frame_count)``
        or hold a frame without a trustworthy picture (such a frame never
        appears in a clip):

        - ``"error"``: raise :class:`~vidlabel.errors.ClipError` naming the frames;
        - ``"shift"`` (default): move the whole clip, keeping its step, to the
          nearest place where every frame is inside the video and usable (on
          a tie, the earlier place);
        - ``"repeat"``: each frame outside the video or untrusted is replaced
          by the frame of the nearest usable position of the same clip (on a
          tie, the earlier), so a clip at the end repeats its last frame
          (torchcodec's ``"repeat_last"``), one at the start its first; a clip
          without any usable frame is T copies of the usable frame nearest
          its anchor (on a tie, the earlier);
        - ``"skip"``: the clip is left out (:meth:`frames` returns None), and
          samplers count it.

    Raises
    ------
    ClipError
        (a ValueError) If ``frames_per_clip`` or ``step`` is not an integer
        >= 1, or ``anchor`` / ``edge`` is not one of the values above.
    """

    frames_per_clip: int
    step: int = 1
    anchor: Anchor = "start"
    edge: Edge = "shift"

    def __post_init__(self) -> None:
        for name in ("frames_per_clip", "step"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ClipError(f"{name} must be an integer >= 1, got {value!r}")
            if value < 1:
                raise ClipError(f"{name} must be an integer >= 1, got {int(value)}")
            object.__setattr__(self, name, int(value))
        if self.anchor not in ANCHORS:
            raise ClipError(f"anchor must be one of {', '.join(ANCHORS)}; got {self.anchor!r}")
        if self.edge not in EDGES:
            raise ClipError(f"edge must be one of {', '.join(EDGES)}; got {self.edge!r}")

    def span(self) -> int:
        """Frames from a clip's first frame to its last, both counted: ``(T - 1) * step + 1``."""
        return (self.frames_per_clip - 1) * self.step + 1

    def offset(self) -> int:
        """Frames from a clip's first frame to its anchor frame (0 for ``anchor="start"``)."""
        if self.anchor == "start":
            return 0
        if self.anchor == "end":
            return self.span() - 1
        return ((self.frames_per_clip - 1) // 2) * self.step

    def frames(
        self,
        anchor_frame: int,
        frame_count: int,
        usable: np.ndarray | None = None,
        *,
        video_id: str | None = None,
    ) -> np.ndarray | None:
        """The frame numbers of the clip that ``anchor_frame`` selects.

        Parameters
        ----------
        anchor_frame : int
            The selecting frame, in ``[0, frame_count)``.
        frame_count : int
            Frames in the video.
        usable : (frame_count,) bool ndarray, optional
            True on frames with a trustworthy picture (``~meta.untrusted_mask()``);
            None: every frame is usable.
        video_id : str, optional
            Named in error messages.

        Returns
        -------
        (T,) int64 ndarray or None
            The clip's frame numbers in clip order (ascending; with
            ``edge="repeat"`` some repeat), each inside the video and usable;
            None only with ``edge="skip"``, for a clip left out.

        Raises
        ------
        ClipError
            (a ValueError) If the clip is longer than the video (``span() >
            frame_count``; any edge), ``anchor_frame`` lies outside ``[0,
            frame_count)``, ``usable`` has the wrong shape, the clip leaves
            the video or touches an untrusted frame with ``edge="error"``, or
            no placement of usable frames exists (``"shift"``: no span of the
            video has usable frames at every step; ``"repeat"``: no frame of
            the video is usable). Names the video, its range and the frames.
        """
        where = f" of video {video_id!r}" if video_id is not None else ""
        n = int(frame_count)
        span = self.span()
        if span > n:
            raise ClipError(
                f"a clip of {self.frames_per_clip} frames at step {self.step} spans {span} frames, longer than the "
                f"{n} frames [0, {n}){where}"
            )
        anchor_frame = int(anchor_frame)
        if not 0 <= anchor_frame < n:
            raise ClipError(f"anchor frame {anchor_frame} is out of range [0, {n}){where}")
        if usable is not None:
            usable = np.asarray(usable, dtype=bool)
            if usable.shape != (n,):
                raise ClipError(
                    f"usable must be a ({n},) bool array for the frames [0, {n}){where}, got {usable.shape}"
                )
        first = anchor_frame - self.offset()
        nominal = first + self.step * np.arange(self.frames_per_clip, dtype=np.int64)
        ok = (nominal >= 0) & (nominal < n)
        if usable is not None:
            ok[ok] = usable[nominal[ok]]
        if ok.all():
            return nominal
        if self.edge == "skip":
            return None
        if self.edge == "error":
            raise ClipError(self._bad_text(nominal, ok, n, where, usable))
        if self.edge == "repeat":
            return self._repeat(nominal, ok, n, where, usable, anchor_frame)
        return self._shift(first, n, where, usable)

    def frames_many(
        self,
        anchor_frames: np.ndarray,
        frame_count: int,
        usable: np.ndarray | None = None,
        *,
        video_id: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`frames` of many anchor frames of one video at once.

        Parameters
        ----------
        anchor_frames : (K,) int array-like
        frame_count, usable, video_id
            As for :meth:`frames`.

        Returns
        -------
        frames : (K', T) int64 ndarray
            The clips that are kept, in the order of ``anchor_frames``.
        kept : (K,) bool ndarray
            False for the anchors whose clip ``edge="skip"`` leaves out.

        Raises
        ------
        ClipError
            As :meth:`frames`, for the first anchor that raises.
        """
        anchors = np.asarray(anchor_frames, dtype=np.int64).reshape(-1)
        n = int(frame_count)
        offsets = self.step * np.arange(self.frames_per_clip, dtype=np.int64)
        nominal = (anchors - self.offset())[:, None] + offsets[None, :]
        inside = (nominal[:, 0] >= 0) & (nominal[:, -1] < n) & (anchors >= 0) & (anchors < n)
        if inside.any() and usable is not None and np.shape(usable) == (n,):
            good = np.asarray(usable, dtype=bool)
            inside[inside] = good[nominal[inside]].all(axis=1)
        if self.span() > n or (usable is not None and np.shape(usable) != (n,)):
            inside[:] = False  # frames() raises the error that says why
        kept = np.ones(anchors.size, bool)
        out = nominal.copy()
        for k in np.flatnonzero(~inside).tolist():
            clip = self.frames(int(anchors[k]), n, usable, video_id=video_id)
            if clip is None:
                kept[k] = False
            else:
                out[k] = clip
        return out[kept], kept

    def _bad_text(self, nominal: np.ndarray, ok: np.ndarray, n: int, where: str, usable: np.ndarray | None) -> str:
        outside = nominal[(nominal < 0) | (nominal >= n)]
        untrusted = nominal[~ok & (nominal >= 0) & (nominal < n)]
        parts = []
        if outside.size:
            parts.append(f"frames {_list(outside)} lie outside [0, {n})")
        if untrusted.size:
            parts.append(f"frames {_list(untrusted)} have no trustworthy picture")
        return (
            f"the clip of frames {int(nominal[0])}..{int(nominal[-1])} at step {self.step}{where}: "
            f"{' and '.join(parts)} (edge='error'; 'shift', 'repeat' or 'skip' handle such clips)"
        )

    def _repeat(
        self, nominal: np.ndarray, ok: np.ndarray, n: int, where: str, usable: np.ndarray | None, anchor: int
    ) -> np.ndarray:
        good = np.flatnonzero(ok)
        if good.size == 0:
            # No frame of the clip is usable: the usable frame nearest the anchor stands for all of them.
            frames = np.flatnonzero(usable) if usable is not None else np.arange(n)
            if frames.size == 0:
                raise ClipError(
                    f"the clip of frames {int(nominal[0])}..{int(nominal[-1])} at step {self.step}{where} has no "
                    f"frame in [0, {n}) with a trustworthy picture to repeat"
                )
            nearest_frame = frames[np.argmin(np.abs(frames - anchor))]
            return np.full(nominal.size, nearest_frame, np.int64)
        # For each position, the nearest usable position; searchsorted gives the one after, ties go earlier.
        pos = np.arange(nominal.size)
        after = np.clip(np.searchsorted(good, pos), 0, good.size - 1)
        before = np.clip(after - 1, 0, good.size - 1)
        take_before = np.abs(pos - good[before]) <= np.abs(good[after] - pos)
        nearest = np.where(take_before, good[before], good[after])
        return nominal[nearest]

    def _shift(self, first: int, n: int, where: str, usable: np.ndarray | None) -> np.ndarray:
        last_first = n - self.span()
        offsets = self.step * np.arange(self.frames_per_clip, dtype=np.int64)
        clamped = min(max(first, 0), last_first)
        if usable is None or usable[clamped + offsets].all():
            return clamped + offsets
        # Candidate firsts ordered by distance from the wanted one, the earlier first on a tie.
        starts = np.arange(last_first + 1, dtype=np.int64)
        order = starts[np.lexsort((starts, np.abs(starts - first)))]
        for lo in range(0, order.size, _SHIFT_BATCH):
            cand = order[lo : lo + _SHIFT_BATCH]
            fits = usable[cand[:, None] + offsets[None, :]].all(axis=1)
            if fits.any():
                return int(cand[np.argmax(fits)]) + offsets
        raise ClipError(
            f"no clip of {self.frames_per_clip} frames at step {self.step} fits between the frames without a "
            f"trustworthy picture{where} (frames [0, {n}), {int((~usable).sum())} untrusted)"
        )


def _list(frames: np.ndarray, most: int = 8) -> str:
    """Frame numbers for a message, the first ``most`` of them."""
    shown = ", ".join(str(int(f)) for f in frames[:most])
    return shown + (f", ... ({frames.size} in all)" if frames.size > most else "")
