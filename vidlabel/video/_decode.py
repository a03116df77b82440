"""The decode/seek engine behind :class:`~vidlabel.frames.FrameReader`: how frame N is found.

See :mod:`vidlabel.frames` for the rules it keeps (frames identified by the
decoder's timestamps in the frame index, seeks only where they save work,
every frame checked against the index, fallback to sequential decoding, decode
errors never hidden). :class:`DecodeEngine` holds the decoder state and the
steps; ``FrameReader`` subclasses it and adds opening, pickling and the public
reading methods.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from vidlabel.errors import VideoDecodeError, VidlabelWarning
from vidlabel.spec import FrameIndex
from vidlabel.video._h264 import h264_nonref
from vidlabel.video._scan import open_video, rotation_of, with_last

__all__ = ["SEEK_MARGIN", "DecodeEngine", "Missing"]

#: Seek forward only when the target's keyframe is more than this many frames past the current position.
SEEK_MARGIN = 4
_MAX_ATTEMPTS = 8


class _Disagree(Exception):
    """The decoder gave a frame the index does not explain (internal)."""


class _Unthread(_Disagree):
    """A decode error, a corrupt frame or a disagreement while FFmpeg frame threading is on (internal): the
    engine starts over single-threaded, where errors are seen at the packet that causes them."""


class _LandedLate(Exception):
    """After a seek the decoder is already past the target (internal)."""


class Missing:
    """Why a frame number has no trustworthy picture."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class DecodeEngine:
    """Decoder state and the steps that reach frame N of one open video (base of ``FrameReader``).

    The subclass opens the container and sets the attributes declared here
    before calling :meth:`_use_index`, :meth:`_reset` and :meth:`_first_frame`;
    :meth:`_find` then decodes to any frame. Not thread-safe.
    """

    #: Skip decoding non-reference frames shown before the frame asked for.
    skip_nonref: bool = True

    path: Path
    video_id: str
    stats: dict[str, int]
    _container: Any
    _stream: Any
    _avcc_length: int
    _index: FrameIndex
    _mode: str
    _seek_ok: bool | None
    _rotation: int | None
    _coded_size: tuple[int, int] | None
    _cur: tuple[int, Any, bool] | None
    _lost: set[int]
    _skip_below: int | None
    _packets: Iterator[Any] | None
    _pending: deque[Any]
    _recorded_untrusted: frozenset[int] = frozenset()
    #: Why the file looks cut short (set by a reader that indexed the file itself), else None.
    _cut_reason: str | None = None
    #: Frames the decoder gave out only when drained at the end of a file that looks cut short, in a video whose
    #: decoder reorders frames: untrusted (the B-frames shown before them may be gone), as probe records them.
    _drained_untrusted: frozenset[int] = frozenset()
    #: The file is a transport stream that ends inside a transport packet: its last video packet, which the
    #: demuxer gives out unmarked, may be cut short, and taints like a packet marked corrupt.
    _cut_last: bool = False
    _to_rgb: VideoReformatter | None = None
    #: FFmpeg frame threads while decoding stays clean (0: PyAV's default, slice threads); see :meth:`_open`.
    _frame_threads: int = 0

    @property
    def frame_count(self) -> int:
        """Number of displayed frames (from the frame index)."""
        return self._index.frame_count

    def _rgb(self, frame: Any) -> np.ndarray:
        """A decoded frame as an (H, W, 3) uint8 RGB array: bit for bit what ``frame.to_ndarray(format="rgb24")``
        gives (the same swscale conversion), through one swscale context kept for the reader.

        ``to_ndarray(format=...)`` makes a new context (and, by default, its thread pool) for every frame; at
        320x240 that cost about as much CPU as the conversion itself (``scripts/bench_stream.py`` measures it). The context is single-threaded: nothing in it is tied to the process,
        so a reader inherited through ``fork`` may use it. It reconfigures itself when a frame's size, pixel
        format or colour properties change.
        """
        to_rgb = self._to_rgb
        if to_rgb is None:
            to_rgb = self._to_rgb = VideoReformatter()
        return to_rgb.reformat(frame, format="rgb24", threads=1).to_ndarray()

    def _warn(self, message: str) -> None:
        warnings.warn(f"{message} [{self.path}]", VidlabelWarning, stacklevel=3)

    def _use_index(self, index: FrameIndex) -> None:
        # Decoder labels in display order: then "shown before the target" is "label below the target's".
        self._label_order = index.decoder_pts is None
        self._labels: list[int] = (index.decoder_pts if index.decoder_pts is not None else index.pts).tolist()
        self._label_to_n: dict[int, int] | None = None

    def _lookup(self, label: int | None, expected: int) -> int | None:
        if label is None:
            return None
        if 0 <= expected < len(self._labels) and self._labels[expected] == label:
            return expected
        if self._label_to_n is None:
            self._label_to_n = {v: i for i, v in enumerate(self._labels)}
        return self._label_to_n.get(label)

    # ---------------------------------------------------------------- engine

    def _reset(self, *, from_start: bool, key: int = 0) -> None:
        self._packets = None
        self._pending = deque()
        self._eof = False
        self._anchored = from_start
        self._last = -1
        self._run_from_start = from_start
        self._run_key = key
        self._tainted = False
        self._recover_label: int | None = None
        self._errors_since_output = 0
        self._pre_anchor_errors = 0
        self._count_next = 0
        self._count_errors = 0
        self._skipped: set[int] = set()  # pts of packets sent while non-reference frames were skipped
        self._skip_mode = "DEFAULT"
        self._draining = False  # the end of the file was reached: frames now come out of the final drain
        if self._stream is not None and self._stream.codec_context.skip_frame != "DEFAULT":
            self._stream.codec_context.skip_frame = "DEFAULT"

    def _open(self) -> tuple[Any, Any]:
        """Open the file: ``(container, stream)``, with frame threading on the decoder when it is asked for.

        Frame threading (``thread_type="FRAME"``) decodes several frames at once, each on its own thread, and
        gives the same pictures in the same order; FFmpeg reports a frame's decode error when that frame's
        turn to come out arrives, not at its packet. So it is used only while nothing goes wrong: the first
        decode error, corrupt frame or disagreement with the index turns it off for good and the engine
        starts over from the start of the file, single-threaded (:class:`_Unthread`); frames returned before
        came from a decode without a single error.
        """
        container, stream = open_video(self.path)
        if self._frame_threads > 1:
            ctx = stream.codec_context
            ctx.thread_type = "FRAME"
            ctx.thread_count = self._frame_threads
        return container, stream

    def _rewind(self) -> None:
        """Back to the start of the file: reopen it (always exact, whatever the container)."""
        self.stats["rewinds"] += 1
        if self._container is not None:
            self._container.close()
        self._cur = None  # its frame belongs to the closed container
        self._container, self._stream = self._open()
        self._reset(from_start=True)

    def _seek(self, k: int) -> None:
        """Seek to keyframe ``k`` by its timestamp; the first keyframe decoded anchors the numbering."""
        self.stats["seeks"] += 1
        self._container.seek(int(self._labels[k]), stream=self._stream, backward=True)
        self._reset(from_start=False, key=k)

    def _pull(self) -> Any:
        """Next decoded frame in output order, or None at the end; decode errors are recorded, not raised."""
        ctx = self._stream.codec_context
        while not self._pending:
            if self._eof:
                return None
            if self._packets is None:
                demuxed = self._container.demux(self._stream)
                self._packets = with_last(demuxed) if self._cut_last else ((p, False) for p in demuxed)
            try:
                packet, last = next(self._packets)
            except StopIteration:
                self._eof = True
                return None
            except av.error.FFmpegError:
                self._note_error()
                self._eof = True
                return None
            # A packet marked corrupt (cut short by the end of the file, damaged) taints like a decode error, and
            # so does the last packet of a transport stream that ends inside a transport packet.
            if (packet.is_corrupt or (self._cut_last and last)) and not (
                packet.size == 0 and packet.pts is None and packet.dts is None
            ):
                self._note_error()
            elif packet.is_keyframe and self._tainted and packet.pts is not None:
                self._recover_label = packet.pts
            # Frames shown before the target that nothing refers to need not be decoded at all. Only
            # packets checked to be well-formed non-reference H.264 are skipped: FFmpeg skips a corrupt
            # packet silently in that mode, and its errors must still be seen.
            skip = (
                self._skip_below is not None
                and packet.pts is not None
                and packet.pts < self._skip_below
                and h264_nonref(memoryview(packet), self._avcc_length)
            )
            mode = "NONREF" if skip else "DEFAULT"
            if mode != self._skip_mode:
                ctx.skip_frame = self._skip_mode = mode
            if skip:
                # A skipped frame is never output, so its pts must be no output frame's: one already given
                # out means the pts repeat and cannot tell frames apart (checked on output too).
                shown = self._lookup(packet.pts, self._last) if self._anchored else None
                if shown is not None and shown <= self._last:
                    raise _Disagree(f"a skipped frame has pts {packet.pts}, which an earlier frame had (pts repeat)")
                self._skipped.add(packet.pts)
            try:
                frames = ctx.decode(packet)
            except av.error.FFmpegError:
                self._note_error()
                continue
            if packet.size == 0 and packet.pts is None and packet.dts is None:  # the final (flush) packet
                self._draining = True
            self._pending.extend(frames)
        return self._pending.popleft()

    @property
    def _reorders(self) -> bool:
        """The decoder holds frames back for reordering (B-frames)."""
        return bool(getattr(self._stream.codec_context, "has_b_frames", 0))

    def _drained_from_a_cut_file(self, n: int) -> bool:
        """Frame ``n``, just given out, came out of the final drain of a file that looks cut short (see
        ``_drained_untrusted``); it is remembered as such."""
        if self._draining and self._cut_reason is not None and self._reorders:
            self._drained_untrusted = self._drained_untrusted | {n}
            return True
        return False

    def _note_error(self) -> None:
        if self._frame_threads:
            raise _Unthread("a decode error with frame threading on")
        self._tainted = True
        self._recover_label = None
        self._errors_since_output += 1
        self._count_errors += 1
        if not self._anchored:
            self._pre_anchor_errors += 1

    def _first_frame(self) -> None:
        """Decode the first frame at open: it gives the rotation and the size, and checks the file decodes."""
        for _ in range(_MAX_ATTEMPTS):
            try:
                found = self._advance(target=0)
            except _Disagree as err:
                self._fallback(str(err))
                continue
            if found is None:
                raise VideoDecodeError(
                    f"no frame of video {self.video_id!r} decodes ({self.path})",
                    path=str(self.path),
                    video_id=self.video_id,
                )
            return

    def _advance(self, target: int) -> tuple[int, Any, bool] | None:
        """Decode on to the next frame the numbering can place: (number, av frame, trusted); None at the end.

        Raises _LandedLate when, after a seek, the decoder is past ``target`` before any keyframe anchored it.
        """
        while True:
            frame = self._pull()
            if frame is None:
                return None
            self.stats["decoded"] += 1
            if self._rotation is None:
                self._rotation = rotation_of(frame)
                self._coded_size = (frame.width, frame.height)
            if frame.is_corrupt:  # the decoder concealed errors in it: untrusted, and so are frames until a keyframe
                if self._frame_threads:
                    raise _Unthread("a corrupt frame with frame threading on")
                self._tainted = True
                self._recover_label = None
                self._count_errors += 1
            if self._mode == "count":
                n = self._count_next
                self._count_next += 1
                self._last = n
                self._cur = (n, frame, self._count_errors == 0 and not self._drained_from_a_cut_file(n))
                return self._cur
            label = frame.pts
            key = bool(frame.key_frame)
            if self._tainted and key and label is not None and label == self._recover_label and not frame.is_corrupt:
                self._tainted = False
            lost = self._errors_since_output
            self._errors_since_output = 0
            if label is not None and label in self._skipped:
                raise _Disagree(f"the decoder gave pts {label}, the pts of a frame it skipped (pts repeat)")
            found = self._lookup(label, self._last + 1)
            if not self._anchored:
                if found is None:
                    raise _Disagree(f"after a seek the decoder gave pts {label}, which is not in the index")
                if not key:
                    if found > target:
                        raise _LandedLate
                    continue  # leading frames of the keyframe interval: no references after a seek
                self._anchored = True
            elif found != self._last + 1:
                if found is None:
                    raise _Disagree(f"the decoder gave pts {label}, which is not in the index")
                # A gap is fine where frames were skipped on purpose, or lost to a decode error: one right
                # before this frame, or one not yet followed by a keyframe (with B-frames the decoder may
                # output frames it already held after the error, before the gap shows).
                gap = range(self._last + 1, found)
                unexplained = [m for m in gap if self._labels[m] not in self._skipped]
                if found < self._last + 1 or (unexplained and not lost and not self._tainted):
                    expected = self._labels[self._last + 1] if self._last + 1 < len(self._labels) else None
                    raise _Disagree(
                        f"after frame {self._last} the decoder gave pts {label} (frame {found} in the index), "
                        f"expected pts {expected}"
                    )
                self._lost.update(unexplained)
            self._last = n = found
            self._cur = (n, frame, not self._tainted and not self._drained_from_a_cut_file(n))
            return self._cur

    def _fallback(self, reason: str) -> None:
        if self._frame_threads:  # first once more, single-threaded, keeping the index
            self._frame_threads = 0
            self._cur = None
            self._rewind()
            return
        self._warn(
            f"the frame index of video {self.video_id!r} disagrees with the decoder ({reason}); "
            "ignoring it and decoding sequentially from the start"
        )
        self._mode = "count"
        self._seek_ok = False
        self._cur = None
        self._lost.clear()
        self._rewind()

    def _check_seeking(self) -> bool:
        """One-off check (no index given): does a seek give the pixels sequential decoding gives?"""
        keys = self._index.keyframes[self._index.keyframes > 0]
        if keys.size == 0:
            return True
        k = int(keys[0])
        m = min(k + 1, self.frame_count - 1)
        self._seek_ok = False
        seq = self._find(m)
        seq_image = None if isinstance(seq, Missing) else (seq[2], self._rgb(seq[1]))
        if self._mode != "label":
            return False
        self._seek_ok = True
        self._cur = None
        sought = self._find(m, first_key=k)
        if self._mode != "label":
            return False
        sought_image = None if isinstance(sought, Missing) else (sought[2], self._rgb(sought[1]))
        same = (seq_image is None and sought_image is None) or (
            seq_image is not None
            and sought_image is not None
            and seq_image[0] == sought_image[0]
            and np.array_equal(seq_image[1], sought_image[1])
        )
        if not same:
            self._warn(
                f"a seek in video {self.video_id!r} did not give the frame sequential decoding gives "
                f"(frame {m}); reading it sequentially"
            )
        return same

    def _position(self, t: int, first_key: int | None) -> bool:
        """Seek, rewind or read on, whichever reaches frame ``t`` with the least decoding.

        Returns False when the one-off seek check ran instead (the caller starts over).
        """
        if first_key is None and self._anchored and not self._eof and self._last == t - 1:
            return True  # the next frame: read on (the sequential case, kept cheap)
        if self._mode == "label" and self._seek_ok is not False:
            k = self._index.keyframe_before(t if first_key is None else min(t, first_key))
            if first_key is None and self._anchored and not self._eof and self._last < t:
                if k <= self._last + SEEK_MARGIN:
                    return True  # read on: no keyframe much nearer
            if k == 0:
                self._rewind()
                return True
            if self._seek_ok is None:
                self._seek_ok = self._check_seeking()
                return False
            self._seek(k)
            return True
        if not self._anchored or self._last >= t or self._eof:
            self._rewind()
        return True

    def _find_frame(self, t: int, first_key: int | None) -> tuple[int, Any, bool] | Missing:
        late = 0
        for _ in range(_MAX_ATTEMPTS):
            if self._cur is not None and self._cur[0] == t:
                return self._cur
            if t in self._lost:
                return Missing("it was lost to a decode error (its packet does not decode)")
            try:
                if not self._position(t, first_key):
                    continue
                first_key = None
                self._skip_below = (
                    self._labels[t]
                    if self.skip_nonref and self._avcc_length and self._mode == "label" and self._label_order
                    else None
                )
                while True:
                    was_anchored = self._anchored
                    found = self._advance(target=t)
                    seek_run = not self._run_from_start
                    if found is None:
                        if seek_run and not self._anchored:
                            raise _LandedLate
                        return Missing(f"the file ends after frame {self._last} (truncated or corrupt)")
                    n = found[0]
                    if n < t:
                        continue
                    if n > t and seek_run and not was_anchored:
                        raise _LandedLate
                    if n > t:
                        return Missing("it was lost to a decode error (its packet does not decode)")
                    if not found[2] and seek_run and self._pre_anchor_errors:
                        raise _LandedLate  # errors before the anchor may come from the seek itself
                    return found
            except _LandedLate:
                # Start from the keyframe before the one this run started from; the second time, from the start.
                late += 1
                first_key = self._index.keyframe_before(self._run_key - 1) if self._run_key > 0 and late < 2 else 0
                self._anchored = False
            except _Disagree as err:
                self._fallback(str(err))
                first_key = None
        return Missing(f"could not position the decoder on it after {_MAX_ATTEMPTS} attempts")

    def _find(self, t: int, first_key: int | None = None) -> tuple[int, Any, bool] | Missing:
        """Decode to frame ``t``: (t, av frame, trusted), or why it has no picture."""
        try:
            found = self._find_frame(t, first_key)
        finally:
            self._skip_below = None
        if not isinstance(found, Missing) and found[2] and t in self._recorded_untrusted:
            return (found[0], found[1], False)
        return found
