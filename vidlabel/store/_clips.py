"""Clips from a frame store: which clip a store serves, each clip's stored rows, and the clip sample.

An export given ``clip=ClipSpec(...)`` stores, beside the selected frames,
every frame their clips need (:func:`clip_frames_many` over each selected
frame), records the spec in the root's ``export`` attributes
(:func:`spec_to_attrs`) and each video's frames without a trustworthy picture
(``untrusted_frames``, so that a clip read later is placed exactly as the
export placed it); its ``/index`` lists the selected frames only, so the
context frames are never samples of their own. :class:`StoreClipSamples`
turns the selected samples of a :class:`~vidlabel.store.StoreSamples` into
clips: each clip's frame numbers, their stored rows (every one checked to be
stored, else :class:`~vidlabel.errors.ClipNotStoredError`), and the clip
sample (:func:`vidlabel.schema.clip_sample`, from each frame's sample as
StoreSamples builds it; ``clip_labels`` every class active on any frame),
its frames read as contiguous slices of the chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vidlabel.clip import ClipSpec
from vidlabel.errors import ClipNotStoredError, OptionError
from vidlabel.schema import clip_sample
from vidlabel.store._position import positions_by_code, sample_position

__all__ = [
    "StoreClipSamples", "clip_frames_many", "clip_rows", "spec_from_attrs", "spec_to_attrs", "stored_clip_specs",
]  # fmt: skip


def spec_to_attrs(spec: ClipSpec) -> dict[str, Any]:
    """A clip spec as the JSON object a store's root records (``export.clip``)."""
    return {"frames_per_clip": spec.frames_per_clip, "step": spec.step, "anchor": spec.anchor, "edge": spec.edge}


def spec_from_attrs(value: Any) -> ClipSpec | None:
    """The clip spec a store's ``export.clip`` attribute records (None: the export stored no clip context)."""
    if not isinstance(value, dict):
        return None
    return ClipSpec(int(value["frames_per_clip"]), step=int(value["step"]), anchor=value["anchor"], edge=value["edge"])


def stored_clip_specs(store: Any) -> list[ClipSpec | None]:
    """The clip spec each store of ``store`` (a FrameStore, maybe a folder of stores) was exported with."""
    parts = getattr(store, "_parts", None)
    attrs = [p.attrs for p in parts] if parts else [store.attrs]
    return [spec_from_attrs((a.get("export") or {}).get("clip")) for a in attrs]


def describe_spec(spec: ClipSpec) -> str:
    """A clip spec in words, for messages and ``vidlabel info``."""
    return (
        f"{spec.frames_per_clip} frames at step {spec.step} (anchor={spec.anchor!r}, edge={spec.edge!r}, "
        f"spanning {spec.span()} frames)"
    )


def export_hint(spec: ClipSpec) -> str:
    """The export option, in Python and on the command line, that stores the frames of ``spec``'s clips."""
    return (
        f"export with clip=ClipSpec({spec.frames_per_clip}, step={spec.step}, anchor={spec.anchor!r}, "
        f"edge={spec.edge!r}) (`vidlabel export ... --clip-frames {spec.frames_per_clip} --clip-step {spec.step} "
        f"--clip-anchor {spec.anchor} --clip-edge {spec.edge}`)"
    )


def clip_frames_many(
    spec: ClipSpec,
    anchors: np.ndarray,
    frame_count: int,
    usable: np.ndarray | None = None,
    *,
    video_id: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The clips of many anchor frames of one video: :meth:`ClipSpec.frames` of each, vectorised where the clip
    lies inside the video on usable frames (the other clips ask :meth:`ClipSpec.frames` one by one).

    Parameters
    ----------
    spec : ClipSpec
    anchors : (N,) int
        Anchor frames in ``[0, frame_count)``.
    frame_count : int
    usable : (frame_count,) bool, optional
        True on frames with a trustworthy picture (None: every frame).
    video_id : str, optional
        Named in errors.

    Returns
    -------
    frames : (N, T) int64
        Each clip's frame numbers (a row of -1 for a clip left out).
    kept : (N,) bool
        False for the clips ``edge="skip"`` leaves out.

    Raises
    ------
    ClipError
        As :meth:`ClipSpec.frames` (a clip longer than the video, ``edge="error"`` at an edge ...).
    """
    anchors = np.asarray(anchors, dtype=np.int64).reshape(-1)
    t = spec.frames_per_clip
    frames = np.full((anchors.size, t), -1, np.int64)
    kept = np.ones(anchors.size, bool)
    if anchors.size == 0:
        return frames, kept
    outside = anchors[(anchors < 0) | (anchors >= frame_count)]
    # ClipSpec.frames raises here, saying what is wrong as it says it everywhere
    if spec.span() > frame_count or outside.size:
        spec.frames(int(outside[0] if outside.size else anchors[0]), frame_count, usable, video_id=video_id)
    nominal = (anchors - spec.offset())[:, None] + spec.step * np.arange(t, dtype=np.int64)[None, :]
    inside = (nominal >= 0) & (nominal < frame_count)
    if usable is not None:
        inside[inside] = usable[nominal[inside]]
    fine = inside.all(axis=1)
    frames[fine] = nominal[fine]
    for k in np.flatnonzero(~fine).tolist():
        clip = spec.frames(int(anchors[k]), frame_count, usable, video_id=video_id)
        if clip is None:
            kept[k] = False
        else:
            frames[k] = clip
    return frames, kept


def video_usable(attrs: dict[str, Any], frame_count: int) -> np.ndarray | None:
    """(frame_count,) bool of a stored video's frames with a trustworthy picture, from its ``untrusted_frames``
    attribute (None when it has none)."""
    untrusted = attrs.get("untrusted_frames") or []
    if not untrusted:
        return None
    usable = np.ones(frame_count, bool)
    usable[np.asarray(untrusted, np.int64)] = False
    return usable


def clip_rows(
    frame_number: np.ndarray, clips: np.ndarray, anchors: np.ndarray, spec: ClipSpec, video_id: str, store: str
) -> np.ndarray:
    """The stored rows of each clip's frames: (N, T) int64.

    Raises
    ------
    ClipNotStoredError
        If a clip's frame is not stored, naming the video, the anchor frame, the missing frames, how many clips
        miss frames, and the export option that stores them.
    """
    pos = np.searchsorted(frame_number, clips)
    found = pos < frame_number.size
    found[found] = frame_number[pos[found]] == clips[found]
    if not found.all():
        bad = np.flatnonzero(~found.all(axis=1))
        k = int(bad[0])
        missing = clips[k][~found[k]]
        shown = ", ".join(str(int(f)) for f in missing[:8]) + (" ..." if missing.size > 8 else "")
        raise ClipNotStoredError(
            f"store {store!r} does not hold every frame of the clip of {describe_spec(spec)} at frame "
            f"{int(anchors[k])} of video {video_id!r}: frames {shown} are not stored ({len(bad)} of its "
            f"{len(anchors)} clips miss frames); {export_hint(spec)} to store them",
            path=store,
            video_id=video_id,
        )
    return pos


class StoreClipSamples:
    """The clips of a :class:`~vidlabel.store.StoreSamples` selection: one clip per selected (anchor) frame.

    Parameters
    ----------
    samples : StoreSamples
        The anchor frames and the targets' options.
    clip : ClipSpec, optional
        The clips; default the spec the store was exported with.

    Raises
    ------
    OptionError
        If ``clip`` is not a ClipSpec, or is None for a store exported without ``clip``.
    ClipNotStoredError
        If the store lacks a frame of any clip (every clip is checked here, before any is read).
    ClipError
        As :meth:`ClipSpec.frames` (``edge="error"`` at an edge, a clip longer than a video).
    """

    def __init__(self, samples: Any, clip: ClipSpec | None = None) -> None:
        store = samples.store
        if clip is None:
            specs = set(stored_clip_specs(store))
            if None in specs:
                raise OptionError(
                    f"store {str(store.path)!r} was exported without clip=...: give the clip (clip=ClipSpec(16)) "
                    "and export its frames with the same clip=, or --clip-frames on the command line"
                )
            if len(specs) > 1:
                words = "; ".join(sorted(describe_spec(s) for s in specs if s is not None))
                raise OptionError(
                    f"the stores under {str(store.path)!r} were exported with different clips ({words}): give "
                    "clip=ClipSpec(...) (a clip every store holds the frames of)"
                )
            clip = specs.pop()
        if not isinstance(clip, ClipSpec):
            raise OptionError(f"clip must be a vidlabel.ClipSpec, got {clip!r}")
        self.samples = samples
        self.store = store
        self.clip = clip
        self.skipped = 0
        videos: list[int] = []
        rows: list[np.ndarray] = []
        frames: list[np.ndarray] = []
        index = store.rows[samples.positions]
        for code, sel in positions_by_code(index[:, 0]):
            video_id = store.video_ids[code]
            data = store.video_data(video_id)
            anchors = data.frame_number[index[sel, 1]]
            count = int(data.attrs.get("frame_count", int(data.frame_number[-1]) + 1 if data.frame_number.size else 0))
            clips, kept = clip_frames_many(clip, anchors, count, video_usable(data.attrs, count), video_id=video_id)
            self.skipped += int((~kept).sum())
            clips, anchors = clips[kept], anchors[kept]
            rows.append(clip_rows(data.frame_number, clips, anchors, clip, video_id, str(store.path)))
            frames.append(clips)
            videos.append(code)
        self._codes = np.concatenate(
            [np.full(r.shape[0], c, np.int64) for c, r in zip(videos, rows)] or [np.zeros(0, np.int64)]
        )
        self._rows = np.concatenate(rows) if rows else np.zeros((0, clip.frames_per_clip), np.int64)
        self._frames = np.concatenate(frames) if frames else np.zeros((0, clip.frames_per_clip), np.int64)
        for arr in (self._codes, self._rows, self._frames):
            arr.setflags(write=False)

    def __len__(self) -> int:
        return int(self._codes.size)

    @property
    def frame_indices(self) -> np.ndarray:
        """(N, T) int64 read-only: the frame numbers of every clip, in order."""
        return self._frames

    @property
    def index(self) -> list[tuple[str, int]]:
        """(video_id, first frame) of each clip, in order."""
        ids = self.store.video_ids
        return [(ids[c], int(f)) for c, f in zip(self._codes.tolist(), self._frames[:, 0].tolist())]

    def locate(self, j: int) -> tuple[str, np.ndarray]:
        """(video_id, (T,) stored rows) of clip ``j``.

        Raises
        ------
        SampleIndexTypeError, SampleOutOfRangeError
            If ``j`` is not an integer, or is outside ``[-len(self), len(self))``.
        """
        k = sample_position(j, len(self), f"the {len(self)} clips of store {str(self.store.path)!r}")
        return self.store.video_ids[int(self._codes[k])], self._rows[k]

    def read(self, j: int, out: np.ndarray | None = None) -> np.ndarray:
        """The frames of clip ``j``: (T, H, W, 3) uint8 (``out``'s when given), contiguous slices of chunks."""
        video_id, rows = self.locate(j)
        return self.store.read_clip(video_id, rows, out)

    def clip_sample(self, j: int, images: np.ndarray | None = None) -> dict[str, Any]:
        """The clip sample of clip ``j`` (NumPy): its frames (read unless given) and every frame's targets."""
        video_id, rows = self.locate(j)
        if images is None:
            images = self.store.read_clip(video_id, rows)
        frames = [self.samples.sample_row(video_id, int(r), image=images[i]) for i, r in enumerate(rows.tolist())]
        # clip_labels: the schema's default, every class active on any of the clip's frames.
        return clip_sample(
            image=images,
            frames=frames,
            frame_indices=np.array([f["frame_index"] for f in frames], np.int64),
            timestamps_us=self.store.video_data(video_id).timestamp_us[rows],
            clip_index=sample_position(j, len(self), "clips"),
        )

    def clip_samples(
        self, js: Sequence[int], allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None
    ) -> list[dict[str, Any]]:
        """Several clip samples; ``allocate``, when their frames share a size, is called once with
        ``(len(js), T, H, W, 3)`` and returns the uint8 buffer their images are read into."""
        located = [self.locate(j) for j in js]
        buffer = None
        if allocate is not None and located:
            sizes = {self.store.video_data(v).size for v, _ in located}
            if len(sizes) == 1:
                w, h = sizes.pop()
                buffer = allocate((len(located), self.clip.frames_per_clip, h, w, 3))
        out = []
        for k, j in enumerate(js):
            video_id, rows = located[k]
            images = self.store.read_clip(video_id, rows, None if buffer is None else buffer[k])
            out.append(self.clip_sample(j, images))
        return out
