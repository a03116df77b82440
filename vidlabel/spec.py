"""Plain records shared by every layer: video metadata, frame index, views, the annotation table.

The spec's separate ``vidlabel_spec`` package is folded in here; its
``FrameIndex`` is public as ``vidlabel.FrameIndex``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from vidlabel.errors import AnnotationError

__all__ = [
    "BOX_FORMATS",
    "KINDS",
    "ORIGINS",
    "STATUSES",
    "AnnotationTable",
    "BoxFormat",
    "FrameIndex",
    "Kind",
    "Origin",
    "Status",
    "VideoMetadata",
    "View",
    "as_rational",
    "frame_ranges",
    "ranges_text",
    "take_csr",
]

Kind = Literal["box", "mask", "marker"]
Origin = Literal["human", "model"]
Status = Literal["unreviewed", "approved", "rejected"]
BoxFormat = Literal["xyxy", "xywh", "cxcywh"]

#: Annotation kinds; the position is the code stored in ``AnnotationTable.kind``.
KINDS: tuple[str, ...] = ("box", "mask", "marker")
#: Origins; the position is the code stored in ``AnnotationTable.origin`` and the store's ``origin``.
ORIGINS: tuple[str, ...] = ("human", "model")
#: Review statuses; the position is the code stored in ``AnnotationTable.status``.
STATUSES: tuple[str, ...] = ("unreviewed", "approved", "rejected")
#: Box formats training code may ask for; stored boxes are always xyxy pixel corners.
BOX_FORMATS: tuple[str, ...] = ("xyxy", "xywh", "cxcywh")
#: The database file that makes a folder a vidlabel dataset (a frame store names it to tell the two apart).
DB_NAME = "vidlabel.sqlite"


def as_rational(value: Any, *, what: str = "rate") -> dict[str, int]:
    """Normalise a rational to ``{"num": int, "den": int}`` (reduced, den > 0).

    Accepts a ``{"num", "den"}`` mapping, a ``fractions.Fraction``, an int, or
    a ``(num, den)`` pair. Floats are refused: a frame rate or timebase is
    exact, never a float guess.

    Parameters
    ----------
    value : mapping, Fraction, int or (int, int)
        The rational.
    what : str
        What it is, for the message (``"rate"``, ``"timebase"``).

    Raises
    ------
    ValueError
        If the value is not an exact positive rational.
    """
    try:
        if isinstance(value, Mapping):
            frac = Fraction(int(value["num"]), int(value["den"]))
        elif isinstance(value, Fraction):
            frac = value
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            frac = Fraction(int(value), 1)
        elif isinstance(value, Sequence) and len(value) == 2:
            frac = Fraction(int(value[0]), int(value[1]))
        else:
            raise TypeError(type(value).__name__)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(f"{what} must be an exact rational like {{'num': 30000, 'den': 1001}}, got {value!r}") from err
    if frac <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return {"num": frac.numerator, "den": frac.denominator}


@dataclass(frozen=True, eq=False)
class FrameIndex:
    """Presentation timestamps and keyframes of every displayed frame of a video.

    Read from the container by demuxing (``method="demux"``) or, where demuxing
    cannot tell the displayed frames, by decoding (``method="decode"``); see the
    spec's "The frame index".

    Parameters
    ----------
    timebase : {"num": int, "den": int}
        Seconds per pts tick, as an exact rational.
    pts : (T,) int64
        pts of frame ``n`` (0-based, presentation order), strictly increasing.
    keyframes : (K,) int64
        Frame numbers of the keyframes, increasing; the first is 0 for a
        decodable video.
    method : {"demux", "decode"}
        How the index was built.
    content_hash : str, optional
        Content hash of the file the index was read from (an index for another
        file is ignored with a warning).
    decoder_pts : (T,) int64, optional
        The pts the decoder attaches to frame ``n`` when that differs from
        ``pts[n]``: files whose container timestamps do not follow the
        bitstream's reordering (e.g. an mp4 holding B-frames without
        composition offsets) give the displayed frames in the right order but
        labelled with a permutation of ``pts``. None (the usual case) when the
        decoder's labels are ``pts``.

    Raises
    ------
    ValueError
        If pts is not strictly increasing, a keyframe is out of range, or
        ``decoder_pts`` is not a permutation of ``pts``.
    """

    timebase: Mapping[str, int]
    pts: np.ndarray
    keyframes: np.ndarray
    method: str = "demux"
    content_hash: str | None = None
    decoder_pts: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "timebase", as_rational(self.timebase, what="timebase"))
        pts = np.asarray(self.pts, dtype=np.int64).reshape(-1)
        keyframes = np.asarray(self.keyframes, dtype=np.int64).reshape(-1)
        if pts.size > 1 and not np.all(np.diff(pts) > 0):
            raise ValueError("FrameIndex pts must be strictly increasing in presentation order")
        if keyframes.size and (keyframes.min() < 0 or keyframes.max() >= pts.size):
            raise ValueError(
                f"FrameIndex keyframes must lie in [0, {pts.size}), got {keyframes.min()}..{keyframes.max()}"
            )
        if keyframes.size > 1 and not np.all(np.diff(keyframes) > 0):
            raise ValueError("FrameIndex keyframes must be strictly increasing")
        if self.method not in ("demux", "decode"):
            raise ValueError(f"FrameIndex method must be 'demux' or 'decode', got {self.method!r}")
        pts.setflags(write=False)
        keyframes.setflags(write=False)
        object.__setattr__(self, "pts", pts)
        object.__setattr__(self, "keyframes", keyframes)
        if self.decoder_pts is not None:
            dpts = np.array(self.decoder_pts, dtype=np.int64).reshape(-1)
            if dpts.size != pts.size or not np.array_equal(np.sort(dpts), pts):
                raise ValueError("FrameIndex decoder_pts must be a permutation of pts")
            dpts.setflags(write=False)
            object.__setattr__(self, "decoder_pts", dpts)

    def __len__(self) -> int:
        return int(self.pts.size)

    @property
    def frame_count(self) -> int:
        """Number of displayed frames the index covers."""
        return int(self.pts.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrameIndex):
            return NotImplemented
        return (
            self.timebase == other.timebase
            and np.array_equal(self.pts, other.pts)
            and np.array_equal(self.keyframes, other.keyframes)
            and self.method == other.method
            and self.content_hash == other.content_hash
            and _same_optional(self.decoder_pts, other.decoder_pts)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"FrameIndex(frames={self.frame_count}, keyframes={self.keyframes.size}, "
            f"timebase={self.timebase['num']}/{self.timebase['den']}, method={self.method!r})"
        )

    def keyframe_before(self, frame: int) -> int:
        """Frame number of the last keyframe at or before ``frame`` (0 if there is none)."""
        i = int(np.searchsorted(self.keyframes, frame, side="right")) - 1
        return int(self.keyframes[i]) if i >= 0 else 0

    def interval_of(self, frames: np.ndarray | int) -> np.ndarray:
        """Keyframe-interval number of each frame: ``i`` such that ``keyframes[i] <= frame < keyframes[i+1]``."""
        idx = np.searchsorted(self.keyframes, np.asarray(frames), side="right") - 1
        return np.maximum(idx, 0)

    def timestamp_us(self) -> np.ndarray:
        """(T,) int64 presentation time of each frame in microseconds, relative to the stream's time origin."""
        num, den = self.timebase["num"], self.timebase["den"]
        return (self.pts.astype(object) * num * 1_000_000 // den).astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (lists of ints); ``decoder_pts`` only when set."""
        out: dict[str, Any] = {
            "timebase": dict(self.timebase),
            "pts": self.pts.tolist(),
            "keyframes": self.keyframes.tolist(),
            "method": self.method,
            "content_hash": self.content_hash,
        }
        if self.decoder_pts is not None:
            out["decoder_pts"] = self.decoder_pts.tolist()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FrameIndex:
        """Inverse of :meth:`to_dict`."""
        return cls(
            timebase=data["timebase"],
            pts=np.asarray(data["pts"], dtype=np.int64),
            keyframes=np.asarray(data["keyframes"], dtype=np.int64),
            method=data.get("method", "demux"),
            content_hash=data.get("content_hash"),
            decoder_pts=None if data.get("decoder_pts") is None else np.asarray(data["decoder_pts"], dtype=np.int64),
        )


def _same_optional(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.array_equal(a, b))


#: Largest width or height of a view's output in pixels (8K is 7680).
MAX_SIDE = 16384
#: Longest video id in UTF-8 bytes: ids name files in frame stores (a file name holds 255 bytes).
MAX_VIDEO_ID_BYTES = 200
#: Largest width or height of a registered video in pixels: the largest frame any codec FFmpeg decodes has
#: (AV1's 65536). Metadata past it (a damaged dataset, ``--metadata``) made a mask or frame read allocate terabytes.
MAX_VIDEO_SIDE = 65536
#: Most frames a registered video may have (2**31 - 1: over 100 days at 240 frames a second). Metadata past it
#: made ``FrameSamples(frames="all")`` allocate terabytes.
MAX_FRAME_COUNT = 2**31 - 1


def video_id_problem(video_id: str) -> str | None:
    """Why a string cannot be a video id beyond being empty or holding '/' (None: it can).

    Video ids name files in frame stores, so they must be UTF-8 text (a file
    name read with undecodable bytes holds surrogates), at most
    :data:`MAX_VIDEO_ID_BYTES` bytes, without control characters, not only white
    space, and not ``.`` or ``..``.
    """
    try:
        size = len(video_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not UTF-8 text (it comes from a file name with bytes that are not UTF-8)"
    if size > MAX_VIDEO_ID_BYTES:
        return f"is {size} bytes long; at most {MAX_VIDEO_ID_BYTES} (video ids name files in frame stores)"
    if any(ord(c) < 32 or ord(c) == 127 for c in video_id):
        return "holds control characters"
    if not video_id.strip():
        return "is only white space"
    if video_id in (".", ".."):
        return "is a path component, not a name"
    return None


#: Display rotations a video may have, degrees counter-clockwise (``probe`` gives 0, 90, 180 or -90).
def integers(value: Any, n: int) -> tuple[int, ...] | None:
    """``value`` as a tuple of ``n`` ints when it is exactly ``n`` integers (Python or NumPy), else None.

    Floats (``10.5`` would be cut to 10), bools (``True`` would be 1) and strings are not integers here.
    """
    try:
        items = tuple(value)
    except TypeError:
        return None
    if len(items) != n or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in items):
        return None
    return tuple(int(v) for v in items)


_ROTATIONS = (0, 90, 180, 270, -90)
_REQUIRED_META = ("video_id", "frame_count", "fps", "width", "height")


@dataclass(frozen=True)
class VideoMetadata:
    """One registered video: its id, size, rate and where its file is.

    Parameters
    ----------
    video_id : str
        Unique id in the dataset (non-empty, no ``/``).
    frame_count : int
        Frames that actually decode, in presentation order (``probe`` counts
        them; never the container header's count).
    fps : {"num": int, "den": int}
        Exact average frame rate.
    width, height : int
        Displayed size in pixels (rotation applied).
    sources : list of {"uri": str}
        Where the file is; the first is used, ``roots=`` finds moved files.
    content_hash : str, optional
        ``"sha256:<hex>"`` of the file's bytes.
    rotation : int
        Display rotation in degrees counter-clockwise (0, 90, 180, 270 / -90),
        already applied to ``width``/``height``.
    codec, pix_fmt, color_range, color_space : str, optional
        As probed from the stream.
    bit_depth : int, optional
    frame_index : FrameIndex, optional
    untrusted_frames : sequence of (first, last) int, optional
        Frames that have no trustworthy picture, as sorted, disjoint,
        inclusive frame-number ranges within ``[0, frame_count)``:
        frames that follow a decode error before the next keyframe, and
        holes (frames whose packet does not decode). ``FrameReader.read``
        raises ``VideoDecodeError`` on exactly these frames. ``probe`` fills
        it (``()`` when every frame is trusted); None means not known
        (metadata registered before vidlabel recorded it, or given by hand).
        Overlapping or adjacent ranges are merged.

    Raises
    ------
    AnnotationError
        (a ValueError) On an empty or slash-containing id, a frame count, width or height that is not an
        integer (1.5, True), sources given as one string, a negative frame count, a
        non-positive size, a non-rational fps, a rotation other than 0, 90,
        180, 270 or -90, or an untrusted range that is not two integers
        ``0 <= first <= last < frame_count``.
    """

    video_id: str
    frame_count: int
    fps: Mapping[str, int]
    width: int
    height: int
    sources: Sequence[Mapping[str, str]] = ()
    content_hash: str | None = None
    rotation: int = 0
    codec: str | None = None
    pix_fmt: str | None = None
    color_range: str | None = None
    color_space: str | None = None
    bit_depth: int | None = None
    frame_index: FrameIndex | None = field(default=None, repr=False)
    untrusted_frames: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.video_id, str) or not self.video_id or "/" in self.video_id:
            raise AnnotationError(f"video_id must be a non-empty string without '/', got {self.video_id!r}")
        for name in ("frame_count", "width", "height"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                # int() cut 1.5 to 1 and took True for 1
                raise AnnotationError(f"{name} of video {self.video_id!r} must be an integer, got {value!r}")
        if isinstance(self.sources, (str, bytes, os.PathLike, Mapping)) or not isinstance(self.sources, Sequence):
            # a str was split into one-character sources
            raise AnnotationError(
                f"sources of video {self.video_id!r} must be a list of {{'uri': ...}} dicts, got {self.sources!r}"
            )
        if int(self.frame_count) < 0:
            raise AnnotationError(f"frame_count must be >= 0 for video {self.video_id!r}, got {self.frame_count}")
        if int(self.frame_count) > MAX_FRAME_COUNT:
            raise AnnotationError(
                f"frame_count of video {self.video_id!r} must be at most {MAX_FRAME_COUNT}, got {self.frame_count}"
            )
        if not (0 < int(self.width) <= MAX_VIDEO_SIDE and 0 < int(self.height) <= MAX_VIDEO_SIDE):
            raise AnnotationError(
                f"width and height must be positive for video {self.video_id!r}, got {self.width}x{self.height}"
                if int(self.width) <= 0 or int(self.height) <= 0
                else f"width and height of video {self.video_id!r} must be at most {MAX_VIDEO_SIDE} pixels (the "
                f"largest frame a codec decodes), got {self.width}x{self.height}"
            )
        if isinstance(self.rotation, bool) or self.rotation not in _ROTATIONS:
            raise AnnotationError(
                f"rotation of video {self.video_id!r} must be one of 0, 90, 180, 270, -90 (degrees counter-clockwise, "
                f"as in the display matrix), got {self.rotation!r}"
            )
        object.__setattr__(self, "rotation", int(self.rotation))
        object.__setattr__(self, "frame_count", int(self.frame_count))
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "height", int(self.height))
        try:
            fps = as_rational(self.fps, what=f"fps of video {self.video_id!r}")
        except ValueError as err:
            raise AnnotationError(str(err)) from err
        object.__setattr__(self, "fps", fps)
        sources = tuple(dict(s) if isinstance(s, Mapping) else {"uri": str(s)} for s in self.sources)
        for s in sources:
            if "uri" not in s:
                raise AnnotationError(f"each source of video {self.video_id!r} needs a 'uri', got {s!r}")
        object.__setattr__(self, "sources", sources)
        if self.untrusted_frames is not None:
            object.__setattr__(self, "untrusted_frames", self._checked_ranges(self.untrusted_frames))

    def _checked_ranges(self, value: Any) -> tuple[tuple[int, int], ...]:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):  # 5 raised a bare TypeError
            raise AnnotationError(
                f"untrusted_frames of video {self.video_id!r} must be a list of (first, last) frame pairs, got {value!r}"
            )
        pairs: list[tuple[int, int]] = []
        for item in value:
            try:
                first, last = (int(v) for v in item)
            except (TypeError, ValueError) as err:
                raise AnnotationError(
                    f"untrusted_frames of video {self.video_id!r} must be (first, last) frame pairs, got {item!r}"
                ) from err
            if not 0 <= first <= last < self.frame_count:
                raise AnnotationError(
                    f"untrusted frames {first}..{last} of video {self.video_id!r} must satisfy "
                    f"0 <= first <= last < frame_count ({self.frame_count})"
                )
            pairs.append((first, last))
        merged: list[tuple[int, int]] = []
        for first, last in sorted(pairs):
            if merged and first <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], last))
            else:
                merged.append((first, last))
        return tuple(merged)

    @property
    def uri(self) -> str | None:
        """The first source's uri, or None."""
        return self.sources[0]["uri"] if self.sources else None

    @property
    def untrusted_count(self) -> int:
        """Number of frames without a trustworthy picture (0 when none, or not known)."""
        return sum(last - first + 1 for first, last in self.untrusted_frames or ())

    def untrusted_mask(self) -> np.ndarray:
        """(frame_count,) bool: True on the frames listed in ``untrusted_frames`` (all False when not known)."""
        mask = np.zeros(self.frame_count, bool)
        for first, last in self.untrusted_frames or ():
            mask[first : last + 1] = True
        return mask

    def timestamps_us(self, frames: Any) -> np.ndarray:
        """Presentation time of ``frames`` in microseconds, as int64 of the same shape.

        From the frame index when it covers the video (the stream's own pts), else ``frame / fps``
        (exact integer arithmetic, rounded down). Frames are not range-checked beyond NumPy's indexing.
        """
        frames = np.asarray(frames, dtype=np.int64)
        fi = self.frame_index
        if fi is not None and fi.frame_count == self.frame_count and frames.size:
            return fi.timestamp_us()[frames]
        num, den = self.fps["num"], self.fps["den"]
        if not frames.size:
            return frames.copy()
        return (frames.astype(object) * 1_000_000 * den // num).astype(np.int64)

    def replace(self, **changes: Any) -> VideoMetadata:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the frame index nested as :meth:`FrameIndex.to_dict`)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["fps"] = dict(self.fps)
        out["sources"] = [dict(s) for s in self.sources]
        out["frame_index"] = self.frame_index.to_dict() if self.frame_index is not None else None
        if self.untrusted_frames is not None:
            out["untrusted_frames"] = [list(r) for r in self.untrusted_frames]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VideoMetadata:
        """Inverse of :meth:`to_dict`; unknown keys are refused (a missing ``untrusted_frames`` gives None)."""
        data = dict(data)
        fi = data.pop("frame_index", None)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise AnnotationError(f"unknown VideoMetadata fields {unknown}; allowed: {sorted(names)}")
        missing = [f.name for f in dataclasses.fields(cls) if f.name in _REQUIRED_META and f.name not in data]
        if missing:
            raise AnnotationError(f"VideoMetadata fields {missing} are missing; required: {list(_REQUIRED_META)}")
        return cls(**data, frame_index=FrameIndex.from_dict(fi) if fi else None)


@dataclass(frozen=True)
class View:
    """A named crop of the full frame, optionally resized; a separate training pipeline.

    Parameters
    ----------
    view_id : str
    crop : (x0, y0, x1, y1) int
        Pixel corners in the full displayed frame, ``0 <= x0 < x1``, ``0 <= y0 < y1``.
    output_size : (width, height) int, optional
        Size the crop is resized to; None keeps the crop's size.

    Raises
    ------
    AnnotationError
        On an empty id, a crop or output size that is not integers (a float, a bool), an empty or negative
        crop, or a non-positive output size.
    """

    view_id: str
    crop: tuple[int, int, int, int]
    output_size: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.view_id, str) or not self.view_id:
            raise AnnotationError(f"view_id must be a non-empty string, got {self.view_id!r}")
        crop = integers(self.crop, 4)
        if crop is None:
            raise AnnotationError(f"view {self.view_id!r}: crop must be 4 integers (x0, y0, x1, y1), got {self.crop!r}")
        x0, y0, x1, y1 = crop
        if not (0 <= x0 < x1 and 0 <= y0 < y1):
            raise AnnotationError(
                f"view {self.view_id!r}: crop must satisfy 0 <= x0 < x1 and 0 <= y0 < y1, got {self.crop!r}"
            )
        object.__setattr__(self, "crop", (x0, y0, x1, y1))
        if self.output_size is not None:
            size = integers(self.output_size, 2)
            if size is None:
                raise AnnotationError(
                    f"view {self.view_id!r}: output_size must be 2 integers (width, height), got {self.output_size!r}"
                )
            w, h = size
            if w <= 0 or h <= 0:
                raise AnnotationError(f"view {self.view_id!r}: output_size must be positive, got {self.output_size!r}")
            object.__setattr__(self, "output_size", (w, h))

    @property
    def crop_size(self) -> tuple[int, int]:
        """(width, height) of the crop in source pixels."""
        x0, y0, x1, y1 = self.crop
        return (x1 - x0, y1 - y0)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the images this view yields."""
        return self.output_size if self.output_size is not None else self.crop_size


def take_csr(offsets: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a CSR ragged array: ``(new_offsets (len(rows) + 1,) int64, new_values)``.

    Row ``i`` of the input is ``values[offsets[i]:offsets[i + 1]]``; ``rows``
    is an int index array (any order, repeats allowed).

    Parameters
    ----------
    offsets : (N + 1,) int64
        CSR offsets into ``values``.
    values : (M, ...) array
        The concatenated rows.
    rows : (K,) int array
        Rows to take.
    """
    lengths = offsets[rows + 1] - offsets[rows]
    new_offsets = np.zeros(rows.size + 1, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    if not new_offsets[-1]:
        return new_offsets, values[:0]
    gather = np.repeat(offsets[rows] - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    return new_offsets, values[gather]


@dataclass(frozen=True, eq=False)
class AnnotationTable:
    """Annotation rows in columnar form: what a release freezes and ``FrameSamples`` selects from.

    Every column has one entry per row; rows are sorted by ``annotation_id``.
    Codes index the tuples ``KINDS``, ``ORIGINS``, ``STATUSES``, and the
    table's own ``labels``, ``video_ids`` and ``view_ids``.

    Attributes
    ----------
    labels : tuple of str
        The label vocabulary in order (``class_names``).
    video_ids : tuple of str
    view_ids : tuple of str
    annotation_id : (N,) int64
    video : (N,) int32, index into ``video_ids``
    kind : (N,) uint8, index into ``KINDS``
    label : (N,) int32, index into ``labels``
    start_frame, end_frame : (N,) int64
        Inclusive frame range (``end_frame == start_frame`` for boxes and masks).
    box : (N, 4) float64
        xyxy pixel corners in the full displayed frame; NaN for markers.
    track_id : (N,) int64, -1 for none
    origin : (N,) uint8, index into ``ORIGINS``
    confidence : (N,) float32, NaN for none
    status : (N,) uint8, index into ``STATUSES``
    view : (N,) int32, index into ``view_ids``, -1 for none
    mask_offsets : (N + 1,) int64
        CSR offsets into ``mask_counts``: row ``i``'s COCO RLE ``counts`` are
        ``mask_counts[mask_offsets[i]:mask_offsets[i + 1]]`` (empty for non-mask rows).
    mask_counts : (M,) uint8
        Concatenated compressed RLE strings (pycocotools ``counts`` bytes).
    mask_size : (N, 2) int32
        (height, width) of each mask; (0, 0) for non-mask rows.
    attr_offsets : (N + 1,) int64, optional
        CSR offsets into ``attr_bytes``: row ``i``'s attributes are the canonical JSON object
        ``attr_bytes[attr_offsets[i]:attr_offsets[i + 1]]`` (empty: none). :meth:`attributes` reads them.
    attr_bytes : (A,) uint8, optional
        Concatenated UTF-8 JSON of every row's attributes (default: no row has any).
    """

    labels: tuple[str, ...]
    video_ids: tuple[str, ...]
    view_ids: tuple[str, ...]
    annotation_id: np.ndarray
    video: np.ndarray
    kind: np.ndarray
    label: np.ndarray
    start_frame: np.ndarray
    end_frame: np.ndarray
    box: np.ndarray
    track_id: np.ndarray
    origin: np.ndarray
    confidence: np.ndarray
    status: np.ndarray
    view: np.ndarray
    mask_offsets: np.ndarray
    mask_counts: np.ndarray
    mask_size: np.ndarray
    attr_offsets: np.ndarray | None = None
    attr_bytes: np.ndarray | None = None

    COLUMNS = (
        "annotation_id", "video", "kind", "label", "start_frame", "end_frame", "box", "track_id",
        "origin", "confidence", "status", "view", "mask_size",
    )  # fmt: skip
    DTYPES = {
        "annotation_id": np.int64, "video": np.int32, "kind": np.uint8, "label": np.int32,
        "start_frame": np.int64, "end_frame": np.int64, "box": np.float64, "track_id": np.int64,
        "origin": np.uint8, "confidence": np.float32, "status": np.uint8, "view": np.int32,
        "mask_offsets": np.int64, "mask_counts": np.uint8, "mask_size": np.int32,
    }  # fmt: skip

    def __post_init__(self) -> None:
        n = int(np.asarray(self.annotation_id).shape[0])
        for name, dtype in self.DTYPES.items():
            arr = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            expected = n + 1 if name == "mask_offsets" else n
            if name != "mask_counts" and arr.shape[0] != expected:
                raise ValueError(f"AnnotationTable column {name!r} has {arr.shape[0]} rows, expected {expected}")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        for name in ("labels", "video_ids", "view_ids"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        offsets = np.zeros(n + 1, np.int64) if self.attr_offsets is None else self.attr_offsets
        data = np.zeros(0, np.uint8) if self.attr_bytes is None else self.attr_bytes
        for name, arr, dtype in (("attr_offsets", offsets, np.int64), ("attr_bytes", data, np.uint8)):
            arr = np.ascontiguousarray(arr, dtype=dtype)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if self.attr_offsets.shape[0] != n + 1:  # type: ignore[union-attr]
            raise ValueError(f"AnnotationTable column 'attr_offsets' has {offsets.shape[0]} rows, expected {n + 1}")

    @property
    def has_attributes(self) -> bool:
        """Whether any row carries attributes."""
        return bool(self.attr_bytes.size)  # type: ignore[union-attr]

    def attributes(self, row: int) -> dict[str, Any]:
        """Row ``row``'s attributes (name -> bool, float or str); ``{}`` for none."""
        a, b = int(self.attr_offsets[row]), int(self.attr_offsets[row + 1])  # type: ignore[index]
        return {} if a == b else json.loads(self.attr_bytes[a:b].tobytes())  # type: ignore[index,no-any-return]

    def __len__(self) -> int:
        return int(self.annotation_id.shape[0])

    def __repr__(self) -> str:
        return f"AnnotationTable(rows={len(self)}, videos={len(self.video_ids)}, labels={len(self.labels)})"

    def mask_rle(self, row: int) -> dict[str, Any] | None:
        """COCO RLE ``{"size": [h, w], "counts": bytes}`` of row ``row``, or None for a row without a mask."""
        a, b = int(self.mask_offsets[row]), int(self.mask_offsets[row + 1])
        if b == a:
            return None
        h, w = (int(v) for v in self.mask_size[row])
        return {"size": [h, w], "counts": self.mask_counts[a:b].tobytes()}

    def take(self, rows: np.ndarray) -> AnnotationTable:
        """A new table with only ``rows`` (an int index array or a bool mask), masks carried along."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        offsets, counts = take_csr(self.mask_offsets, self.mask_counts, rows)
        attr_offsets, attr_bytes = take_csr(self.attr_offsets, self.attr_bytes, rows)  # type: ignore[arg-type]
        cols = {name: getattr(self, name)[rows] for name in self.COLUMNS}
        return AnnotationTable(
            labels=self.labels, video_ids=self.video_ids, view_ids=self.view_ids,
            mask_offsets=offsets, mask_counts=counts, attr_offsets=attr_offsets, attr_bytes=attr_bytes, **cols,
        )  # fmt: skip

    @classmethod
    def empty(
        cls, labels: Sequence[str] = (), video_ids: Sequence[str] = (), view_ids: Sequence[str] = ()
    ) -> AnnotationTable:
        """A table with no rows."""
        cols: dict[str, Any] = {
            name: np.zeros((0, 4) if name == "box" else (0, 2) if name == "mask_size" else 0, dtype)
            for name, dtype in cls.DTYPES.items()
        }
        cols["mask_offsets"] = np.zeros(1, np.int64)
        return cls(labels=tuple(labels), video_ids=tuple(video_ids), view_ids=tuple(view_ids), **cols)


def frame_ranges(frames: Any) -> tuple[tuple[int, int], ...]:
    """Inclusive ``(first, last)`` ranges of runs of consecutive frame numbers.

    Parameters
    ----------
    frames : (N,) int array-like, or (T,) bool mask
        Frame numbers (any order, repeats allowed), or a mask over frames
        ``0..T-1``.

    Returns
    -------
    tuple of (int, int)
        Sorted, disjoint, non-adjacent ranges; ``()`` for no frames.
    """
    arr = np.asarray(frames)
    numbers = np.flatnonzero(arr) if arr.dtype == bool else np.unique(arr.astype(np.int64).reshape(-1))
    if numbers.size == 0:
        return ()
    breaks = np.flatnonzero(np.diff(numbers) > 1)
    firsts = np.r_[numbers[0], numbers[breaks + 1]]
    lasts = np.r_[numbers[breaks], numbers[-1]]
    return tuple((int(a), int(b)) for a, b in zip(firsts, lasts))


def ranges_text(ranges: Sequence[tuple[int, int]], *, limit: int = 10) -> str:
    """``"15..23, 30, 41..44"``: inclusive frame ranges for messages, the first ``limit`` of them.

    Parameters
    ----------
    ranges : sequence of (int, int)
        Inclusive ``(first, last)`` frame ranges (as :func:`frame_ranges` gives).
    limit : int
        Ranges shown before ``", ... (N ranges)"``.
    """
    parts = [f"{a}..{b}" if b > a else f"{a}" for a, b in ranges[:limit]]
    if len(ranges) > limit:
        parts.append(f"... ({len(ranges)} ranges in all)")
    return ", ".join(parts)


#: Largest chunk a small array (boxes, offsets, a release column) may declare beyond its own size: reading one
#: chunk allocates all of it, so a 40-element array chunked by 2**29 elements took 4.2 GB to read.
MAX_SMALL_CHUNK_BYTES = 4 * 2**20


def chunk_problem(chunks: tuple[int, ...] | None, shape: tuple[int, ...], itemsize: int) -> str | None:
    """Why an array of ``shape`` cannot be chunked by ``chunks`` (a phrase), or None: a chunk larger than both the
    whole array and :data:`MAX_SMALL_CHUNK_BYTES`, checked before any chunk is read."""
    if chunks is None:
        return None
    chunk_bytes = itemsize * math.prod(chunks)
    if chunk_bytes > max(itemsize * math.prod(shape), MAX_SMALL_CHUNK_BYTES):
        return (
            f"its chunks {tuple(chunks)} ({chunk_bytes} bytes each) are larger than the array of shape "
            f"{tuple(shape)} and than {MAX_SMALL_CHUNK_BYTES} bytes: refused before reading"
        )
    return None
