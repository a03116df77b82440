"""FrameReader: the exact displayed frame N of a video, read fast.

How a frame is found (spec: "The frame index", "Reading a batch: read_many"):

- Every decoded frame is identified by the timestamp the decoder gives it,
  looked up in the frame index; frame numbers never come from counting decoded
  frames after a seek, nor from ``N / fps``.
- The reader seeks only when that saves work: when the target is behind the
  current position, or its keyframe lies more than :data:`SEEK_MARGIN`
  frames beyond it. Otherwise it reads on. Seeks aim by time (the keyframe's
  pts), so variable frame rates work; after a seek the first keyframe the
  decoder returns anchors the numbering (frames before it are dropped), and a
  seek that lands after the target is retried from an earlier keyframe.
- Every frame returned is checked: once anchored, each decoded frame must carry
  the timestamp the index gives the next frame. A gap is accepted only where
  non-reference frames were skipped on purpose (see :class:`FrameReader`) or
  right after a decode error (those frames are lost). Any other disagreement
  warns (:class:`~vidlabel.errors.VidlabelWarning`), drops the index and falls
  back to plain sequential decoding from the start of the file, where frame N
  is the N-th frame decoded; there, after a decode error, no later frame is
  trusted (counting cannot prove its number). A wrong frame is never returned.
- After a decode error, frames decode without error but show garbage until the
  next keyframe: they are not trusted. The same holds after a packet the
  demuxer marks corrupt (a last packet cut short) and from a frame the decoder
  marks corrupt (errors concealed in it). A reader of a registered video
  (:meth:`FrameReader.for_video`) also refuses the frames probe recorded as
  untrusted (``VideoMetadata.untrusted_frames``). With ``on_corrupt="raise"`` asking for
  one raises :class:`~vidlabel.errors.VideoDecodeError` naming the file and
  frame; with ``on_corrupt="skip"``, :meth:`FrameReader.iter_frames` leaves
  such frames out (one warning per reader, the frames listed in
  :attr:`FrameReader.skipped`), while :meth:`FrameReader.read` and
  :meth:`FrameReader.read_many` still raise, since a frame asked for by number
  has no substitute. No later frame is renumbered.
- Without an index the reader builds one with
  :func:`vidlabel.probe.read_frame_index` and seeks only after a one-off check
  that a seek gives the pixels sequential decoding gives, and never in
  variable-frame-rate video.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    SampleIndexTypeError,
    VideoChangedError,
    VideoDecodeError,
    VidlabelWarning,
    check_flag,
    check_path,
    replace_command,
)
from vidlabel.geometry import view_image
from vidlabel.spec import FrameIndex, VideoMetadata, View
from vidlabel.video._cut import cut_tail, declared_step, ends_inside_transport_packet
from vidlabel.video._decode import SEEK_MARGIN, DecodeEngine, Missing
from vidlabel.video._frameindex import index_and_cut, is_vfr
from vidlabel.video._h264 import avcc_length
from vidlabel.video._hash import content_hash
from vidlabel.video._locate import resolve_video_path, video_path_candidates

__all__ = ["SEEK_MARGIN", "FrameReader", "registered_file", "resolve_video_path", "usable_index"]

OnCorrupt = Literal["raise", "skip"]


def video_changed_message(
    video_id: str, path: str | os.PathLike[str], expected: str, actual: str, *, dataset: str | None = None
) -> str:
    """The explanation of a :class:`~vidlabel.errors.VideoChangedError`: video, file, both hashes, the remedy.

    Parameters
    ----------
    video_id : str
    path : path-like
        The file found now.
    expected, actual : str
        The registered content hash and the file's (``"sha256:<hex>"``).
    dataset : str, optional
        The dataset folder, named in the command to run (else ``DATASET``).
    """
    return (
        f"video {video_id!r} changed on disk: {str(path)!r} now has content hash {actual[:19]}..., but the video was "
        f"registered with {expected[:19]}...; its frames are not the registered frames, and readers and export refuse it. "
        f"If the new file is meant, re-register it (`{replace_command(dataset, path, video_id)}`), build a new release "
        "and use that; "
        "otherwise restore the registered file, or pass roots= (--roots) a folder that holds it"
    )


def registered_file(meta: VideoMetadata, path: Path, roots: Iterable[str | os.PathLike[str]]) -> Path:
    """``path`` if it holds the registered bytes, else a candidate under ``roots`` that does; VideoChangedError if none."""
    expected = str(meta.content_hash)
    actual = content_hash(path)
    if actual == expected:
        return path
    for cand in video_path_candidates(meta, roots):
        if cand != path and cand.is_file() and content_hash(cand) == expected:
            return cand
    raise VideoChangedError(
        video_changed_message(meta.video_id, path, expected, actual),
        path=str(path),
        video_id=meta.video_id,
        expected_hash=expected,
        actual_hash=actual,
    )


def usable_index(meta: VideoMetadata) -> tuple[FrameIndex | None, str | None]:
    """The frame index to read a registered video by, or None and why not (None: it has no index).

    One rule for every reader (``FrameReader.for_video``) and planner
    (``FrameSamples.plan_reads``): an index is usable when it covers the video's
    ``frame_count`` frames and was read from the registered file (its
    ``content_hash``, when both are known, is the video's). A usable index
    without a hash gets the video's.

    Parameters
    ----------
    meta : VideoMetadata

    Returns
    -------
    (FrameIndex or None, str or None)
        The index, or None with the sentence a warning says (None when the video has no index).
    """
    index = meta.frame_index
    if index is None:
        return None, None
    vid = meta.video_id
    if index.frame_count != meta.frame_count:
        return None, (
            f"frame index of video {vid!r} covers {index.frame_count} frames but the video has "
            f"{meta.frame_count}; ignoring it (run 'vidlabel index')"
        )
    if meta.content_hash is None:
        return index, None
    if index.content_hash is None:
        return dataclasses.replace(index, content_hash=meta.content_hash), None
    if index.content_hash != meta.content_hash:
        return None, (
            f"frame index of video {vid!r} was read from another file ({index.content_hash[:19]}..., the video "
            f"is {meta.content_hash[:19]}...); ignoring it (run 'vidlabel index')"
        )
    return index, None


def frame_list(frames: object, what: str, video_id: str) -> list[Any]:
    """The ``frames`` argument of ``what`` (``read_many``, ``iter_frames``) as a list, each item still to check.

    Raises
    ------
    SampleIndexTypeError
        (a TypeError) If ``frames`` is not an iterable of frame numbers (None, one int, a string).
    """
    if isinstance(frames, (str, bytes)) or not isinstance(frames, Iterable):
        hint = f" (for one frame: read({frames}))" if isinstance(frames, (int, np.integer)) else ""
        raise SampleIndexTypeError(
            f"{what} takes a sequence of frame numbers, got {frames!r} for video {video_id!r}{hint}", video_id=video_id
        )
    return list(frames)


def _untrusted_ranges(value: object, video_id: str) -> tuple[tuple[int, int], ...]:
    """``untrusted_frames`` given to a reader, as (first, last) int pairs with ``0 <= first <= last``
    (that ``last`` lies inside the video is checked once its frame count is known).

    Raises
    ------
    OptionError
        On anything but a sequence of pairs of integers (bools refused), or an inverted or negative range.
    """
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise OptionError(f"untrusted_frames of video {video_id!r} must be (first, last) frame pairs, got {value!r}")
    pairs: list[tuple[int, int]] = []
    for item in value:
        ok = isinstance(item, (tuple, list, np.ndarray)) and len(item) == 2
        if not ok or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in item):
            raise OptionError(
                f"untrusted_frames of video {video_id!r} must be (first, last) integer frame pairs, got {item!r}"
            )
        first, last = int(item[0]), int(item[1])
        if not 0 <= first <= last:
            raise OptionError(
                f"untrusted_frames range ({first}, {last}) of video {video_id!r} must satisfy 0 <= first <= last "
                "(frame numbers, both inclusive)"
            )
        pairs.append((first, last))
    return tuple(pairs)


def _checked_options(on_corrupt: object, frame_threads: object, check_hash: object) -> bool:
    """Check a reader's ``on_corrupt`` and ``frame_threads``; ``check_hash`` as a bool.

    Raises
    ------
    OptionError
        On an unknown ``on_corrupt``, ``frame_threads`` not an integer >= 0, or a ``check_hash`` that is not
        True or False.
    """
    if on_corrupt not in ("raise", "skip"):
        raise OptionError(f"on_corrupt must be 'raise' or 'skip', got {on_corrupt!r}")
    if isinstance(frame_threads, bool) or not isinstance(frame_threads, int) or frame_threads < 0:
        raise OptionError(f"frame_threads must be an integer >= 0, got {frame_threads!r}")
    return check_flag("check_hash", check_hash)


class FrameReader(DecodeEngine):
    """Exact displayed frames of one video file, as RGB arrays.

    Parameters
    ----------
    path : path-like
        The video file.
    index : FrameIndex, optional
        Its frame index (as :func:`vidlabel.probe.read_frame_index` or
        :func:`vidlabel.probe.probe` give). An index whose ``content_hash``
        differs from the file's is ignored with a warning. None: the reader
        builds one and checks seeking once before trusting it.
    view : View, optional
        Crop (and resize) every returned frame to this view.
    video_id : str, optional
        Named in error messages; default the file name without extension.
    on_corrupt : {"raise", "skip"}
        What :meth:`iter_frames` does with a frame that cannot be trusted
        (see the module notes): raise :class:`VideoDecodeError`, or leave it
        out with one warning per reader. ``read``/``read_many`` raise either way.
    check_hash : bool
        Hash the file to check a given index belongs to it (cached per process).
    untrusted_frames : sequence of (int, int), optional
        Inclusive (first, last) ranges of frames, ``0 <= first <= last < frame_count``,
        to refuse whatever this reader's own decoding finds, as
        :attr:`VideoMetadata.untrusted_frames` records them (probe's full pass
        sees what a reader positioned by seeks may not). Without ``index``
        (the reader indexes the file itself) it also refuses what its own pass
        over the packets shows of a cut file: the frames a reordering decoder
        gives out only when drained at the end of a file whose header counts
        more packets, whose duration runs past the last one, or whose pts skip
        a frame among the last ones (:func:`cut_tail`).
    frame_threads : int
        Decode with FFmpeg frame threading on this many threads (0 or 1: PyAV's default, slice threads).
        It pays off for long sequential reads (:meth:`iter_frames` over many frames) on a free core. It is
        dropped at the first decode error, corrupt frame or disagreement with the index, and the reader
        starts over single-threaded from the start of the file, where errors show at the packet that causes
        them (what the rules below rely on). The pictures are the same for every frame FFmpeg decodes
        without an error; damage FFmpeg conceals without reporting it (an H.264 file with a flipped byte can
        decode without one) comes out concealed differently, so such frames can differ from a
        single-threaded read. Not kept by pickling.

    Attributes
    ----------
    path : pathlib.Path
    video_id : str
    frame_count : int
    width, height : int
        Size of returned images (displayed orientation, after the view).
    stats : dict of str to int
        ``decoded`` frames, ``converted`` to RGB, ``seeks``, ``rewinds`` so far.
    skipped : list of int
        Frames :meth:`iter_frames` left out (``on_corrupt="skip"``).
    indexed : bool
        Whether a given index is in use (False: none given, or it was for another file).
    rotation : int
        Display rotation applied, degrees counter-clockwise.

    Raises
    ------
    VideoNotFoundError, NoVideoStreamError, VideoDecodeError
        If the file is missing, holds no video, or no frame decodes.
    OptionError
        (a ValueError) On an unknown ``on_corrupt``, ``frame_threads`` not an integer >= 0,
        ``untrusted_frames`` that are not (first, last) integer pairs with
        ``0 <= first <= last < frame_count``, a ``check_hash`` that is not True or False, or a ``path``
        that is no path (None, a number, a Dataset).

    Notes
    -----
    One open container per reader; not thread-safe. A reader pickles as its
    path, index and options and reopens the file when unpickled; one inherited
    through ``fork`` opens the file afresh in the child on its first read. Use
    as a context manager or call :meth:`close`.

    On the way to a frame, frames shown before it that no other frame refers
    to (non-reference B-frames) are not decoded at all (FFmpeg's
    ``skip_frame="NONREF"``); :attr:`skip_nonref` turns that off.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        index: FrameIndex | None = None,
        view: View | None = None,
        video_id: str | None = None,
        on_corrupt: OnCorrupt = "raise",
        check_hash: bool = True,
        untrusted_frames: Sequence[tuple[int, int]] | None = (),
        frame_threads: int = 0,
    ) -> None:
        check_hash = _checked_options(on_corrupt, frame_threads, check_hash)
        hint = ""
        if callable(getattr(path, "video", None)):  # a Dataset or FrameStore
            hint = " (for a registered video: FrameReader.for_video(ds.video(video_id)))"
        self.path = Path(check_path(path, "FrameReader", "video file", hint))
        self.video_id = video_id if video_id is not None else self.path.stem
        self.view = view
        self.on_corrupt: OnCorrupt = on_corrupt
        self.stats = {"decoded": 0, "converted": 0, "seeks": 0, "rewinds": 0}
        self.skipped: list[int] = []
        self.untrusted_frames = _untrusted_ranges(untrusted_frames, self.video_id)
        self._container: Any = None
        self._pid = os.getpid()
        self._stream: Any = None
        self._skip_below: int | None = None
        self._packets: Iterator[Any] | None = None
        self._pending: deque[Any] = deque()
        self._frame_threads = frame_threads if frame_threads > 1 else 0
        self._container, self._stream = self._open()
        self._cut_last = ends_inside_transport_packet(self._container)
        self._avcc_length = avcc_length(self._stream.codec_context)
        try:
            self._adopt_index(index, check_hash)
            self._start_decoding()
            self._refuse_the_cut_tail()
        except BaseException:
            self.close()
            raise

    def _adopt_index(self, index: FrameIndex | None, check_hash: bool) -> None:
        """Take the given index if it was read from this file, else index the file; check
        ``untrusted_frames`` against its frame count."""
        if index is not None and check_hash and index.content_hash is not None:
            actual = content_hash(self.path)
            if actual != index.content_hash:
                self._warn(
                    f"frame index of video {self.video_id!r} was read from another file "
                    f"({index.content_hash[:19]}..., the file is {actual[:19]}...); ignoring it"
                )
                index = None
        self.indexed = index is not None
        # why the file looks cut short, from the reader's own index pass (None with a given index: probe's
        # record, untrusted_frames, holds what its full pass saw)
        self._cut_reason: str | None = None
        if index is None:
            index, self._cut_reason = index_and_cut(self.path, hash_file=False)
        self._index: FrameIndex = index
        # Seeking: trusted with a given index; without, after a one-off check and never on VFR.
        self._seek_ok: bool | None = True if self.indexed else (False if is_vfr(self._index) else None)
        self._use_index(self._index)
        for first, last in self.untrusted_frames:
            if last >= self.frame_count:
                raise OptionError(
                    f"untrusted_frames range ({first}, {last}) of video {self.video_id!r} ({self.path}) is out "
                    f"of range: frames are [0, {self.frame_count}), ranges (first, last) inclusive"
                )
        self._recorded_untrusted = frozenset(n for a, b in self.untrusted_frames for n in range(a, b + 1))

    def _start_decoding(self) -> None:
        """Pick how frames are numbered, reset the decoder state and decode the first frame."""
        # An index in a time base other than the stream's numbers frames by position (a stream without
        # usable timestamps, see vidlabel.video._probe): decoder labels mean nothing in it, so count.
        tb = self._index.timebase
        self._mode = "label" if Fraction(tb["num"], tb["den"]) == self._stream.time_base else "count"
        if self._mode == "count":
            self._seek_ok = False
        self._rotation: int | None = None
        self._coded_size: tuple[int, int] | None = None
        self._warned_skip = False
        self._lost: set[int] = set()
        self._reset(from_start=True)
        self._cur: tuple[int, Any, bool] | None = None
        self._first_frame()

    def _refuse_the_cut_tail(self) -> None:
        """Without probe's record, refuse the frames after a hole in the pts among the last ones
        (:func:`~vidlabel.video._cut.cut_tail`) where the decoder reorders frames."""
        self._cut_tail: frozenset[int] = frozenset()
        if not self.indexed and self._reorders:
            # without probe's record: a hole in the pts of this reader's own index among its last frames
            # (a cut on a packet boundary leaves no other sign); the drained frames of a file that looks cut
            # short are refused as they come out (vidlabel.video._decode)
            if self._mode == "label":
                self._cut_tail = cut_tail(np.asarray(self._index.pts, dtype=np.int64), declared_step(self._stream))
                self._recorded_untrusted = self._recorded_untrusted | self._cut_tail
            if self._cut_tail and self._cut_reason is None:
                self._cut_reason = "a hole in the pts among the last frames (B-frames cut off)"

    # ----------------------------------------------------------------- public

    @classmethod
    def for_video(
        cls,
        meta: VideoMetadata,
        *,
        view: View | None = None,
        roots: Iterable[str | os.PathLike[str]] = (),
        on_corrupt: OnCorrupt = "raise",
        check_hash: bool = True,
        frame_threads: int = 0,
    ) -> FrameReader:
        """A reader for a registered video, using its frame index when it matches.

        Parameters
        ----------
        meta : VideoMetadata
        view : View, optional
        roots : iterable of path-like
            Folders to search when the recorded path is stale.
        on_corrupt : {"raise", "skip"}
        check_hash : bool
            Hash the file (once per process, cached by path, size and
            modification time) to check it still holds the registered bytes
            (``meta.content_hash``). When the file at the recorded path differs,
            a file under ``roots`` that matches is used instead. Without the
            check a changed file is read as it is now.
        frame_threads : int
            As for :class:`FrameReader`.

        Raises
        ------
        VideoNotFoundError
            If the file is neither at its recorded path nor under ``roots`` (a folder in its place is named as
            one).
        VideoChangedError
            If the file's content hash differs from ``meta.content_hash``: its
            frames are not the registered video's frames (a file replaced on
            disk after registration), and none is read.
        OptionError
            If ``check_hash`` is not True or False, or ``roots`` is neither a
            path nor a sequence of paths.
        """
        check_hash = check_flag("check_hash", check_hash)
        path = resolve_video_path(meta, roots)
        if check_hash and meta.content_hash is not None:
            path = registered_file(meta, path, roots)
        index, why_not = usable_index(meta)
        if why_not is not None:
            warnings.warn(why_not, VidlabelWarning, stacklevel=2)
        return cls(
            path,
            index=index,
            view=view,
            video_id=meta.video_id,
            on_corrupt=on_corrupt,
            check_hash=check_hash,
            untrusted_frames=meta.untrusted_frames,
            frame_threads=frame_threads,
        )

    @property
    def frame_index(self) -> FrameIndex:
        """The frame index in use (given, or built when none was)."""
        return self._index

    @property
    def rotation(self) -> int:
        """Display rotation in degrees counter-clockwise, applied to every returned frame."""
        return int(self._rotation or 0)

    @property
    def width(self) -> int:
        """Width of returned images in pixels (displayed orientation, view applied)."""
        return self._size()[0]

    @property
    def height(self) -> int:
        """Height of returned images in pixels (displayed orientation, view applied)."""
        return self._size()[1]

    def read(self, frame: int) -> np.ndarray:
        """Frame ``frame`` as an (H, W, 3) uint8 RGB array, displayed orientation, view applied.

        Raises
        ------
        FrameOutOfRangeError
            Unless ``0 <= frame < frame_count``.
        SampleIndexTypeError
            (a TypeError) If ``frame`` is not an integer (1.5, "3" and True are refused, never rounded).
        VideoDecodeError
            If the frame is lost to a decode error or follows one (untrusted).
        """
        t = self._check(frame)
        return self._picture(t, self._find(t))

    def read_many(self, frames: Sequence[int]) -> list[np.ndarray]:
        """Several frames, returned in the order asked (repeats allowed, each an own array).

        They are decoded in increasing order, so each keyframe interval is
        decoded at most once however the request is ordered.

        Returns
        -------
        list of (H, W, 3) uint8 arrays

        Raises
        ------
        FrameOutOfRangeError, VideoDecodeError
            As :meth:`read` (checked for all frames before any decoding).
        SampleIndexTypeError
            (a TypeError) If ``frames`` is not a sequence of integers (None, 5, 1.5 among them).
        """
        wanted = [self._check(f) for f in frame_list(frames, "read_many", self.video_id)]
        got: dict[int, np.ndarray] = {}
        for t in sorted(set(wanted)):
            got[t] = self._picture(t, self._find(t))
        out: list[np.ndarray] = []
        used: set[int] = set()
        for t in wanted:
            out.append(got[t] if t not in used else got[t].copy())
            used.add(t)
        return out

    def iter_frames(self, frames: Iterable[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(frame_number, image)`` in increasing order, each distinct frame once.

        Decodes sequentially, seeking only across gaps where that saves work.

        Parameters
        ----------
        frames : iterable of int, optional
            Which frames; None for all.

        Yields
        ------
        (int, (H, W, 3) uint8 array)

        Raises
        ------
        FrameOutOfRangeError
            For a frame out of range (checked before decoding).
        SampleIndexTypeError
            (a TypeError) If ``frames`` is not None nor an iterable of integers (5, 1.5 among them).
        VideoDecodeError
            For an untrusted frame with ``on_corrupt="raise"``.
        """
        targets: Iterable[int] = (
            range(self.frame_count)
            if frames is None
            else sorted({self._check(f) for f in frame_list(frames, "iter_frames", self.video_id)})
        )
        if frames is None and self.frame_count:
            self._check(0)  # a closed reader raises here
        for t in targets:
            found = self._find(t)
            if isinstance(found, Missing) or not found[2]:
                if self.on_corrupt == "skip":
                    self.skipped.append(t)
                    if not self._warned_skip:
                        self._warned_skip = True
                        self._warn(f"skipping frames that cannot be trusted, first {self._why(t, found)}")
                    continue
            yield t, self._picture(t, found)

    def __iter__(self) -> Iterator[np.ndarray]:
        for _, image in self.iter_frames():
            yield image

    def __len__(self) -> int:
        return self.frame_count

    def __getitem__(self, key: int | slice) -> Any:
        """``reader[n]`` is :meth:`read`; ``reader[a:b:s]`` is :meth:`read_many` over that range."""
        if isinstance(key, slice):
            return self.read_many(range(*key.indices(self.frame_count)))
        return self.read(key)

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._container is not None:
            try:
                if self._pid == os.getpid():
                    self._container.close()
                else:
                    _abandon((self._container, self._cur, self._pending, self._packets))
                    self._pending = deque()
            finally:
                self._container = None
                self._cur = None
                self._packets = None
                self._pending.clear()

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as what it reads, reopened on the other side (e.g. a DataLoader worker started with spawn).
        index = self._index if self.indexed and self._mode == "label" else None
        return (_reopen, (self.path, index, self.view, self.video_id, self.on_corrupt, self.untrusted_frames))

    def __enter__(self) -> FrameReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # never raise from a finaliser
            pass

    def __repr__(self) -> str:
        return (
            f"FrameReader({str(self.path)!r}, video_id={self.video_id!r}, frames={self.frame_count}, "
            f"indexed={self.indexed}, mode={self._mode!r})"
        )

    # --------------------------------------------------------------- helpers

    def _check(self, frame: Any) -> int:
        if self._pid != os.getpid() and self._container is not None:
            # Inherited through fork: the decoder's threads stayed in the parent. Never touch, close or
            # free that container or its frames here (freeing a decoded frame was seen to hang); open afresh.
            _abandon((self._container, self._cur, self._pending, self._packets))
            self._container = self._cur = self._packets = None
            self._pending = deque()
            self._pid = os.getpid()
            self._rewind()
        if self._container is None:
            raise VideoDecodeError(f"reader of video {self.video_id!r} is closed ({self.path})", path=str(self.path))
        if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
            raise SampleIndexTypeError(
                f"frame numbers must be integers, got {frame!r} ({type(frame).__name__}) for video "
                f"{self.video_id!r}; frames are [0, {self.frame_count})",
                path=str(self.path),
                video_id=self.video_id,
            )
        t = int(frame)
        if not 0 <= t < self.frame_count:
            raise FrameOutOfRangeError(
                f"frame {t} out of range [0, {self.frame_count}) in video {self.video_id!r} ({self.path})",
                path=str(self.path),
                video_id=self.video_id,
            )
        return t

    def _why(self, t: int, found: Any) -> str:
        if isinstance(found, Missing):
            return f"frame {t}: {found.reason}"
        if t in self._drained_untrusted:
            return (
                f"frame {t}: the decoder gave it out only when drained at the end of a file that looks cut short "
                f"({self._cut_reason}); its decoder reorders frames, so it may show a later frame (probe, "
                "add-video, records such frames as untrusted)"
            )
        if t in self._cut_tail:
            return (
                f"frame {t}: the pts skip a frame before it among the last frames of a video whose decoder reorders "
                "frames (a file cut short: its B-frames may be gone, and this frame may show a later one); probe "
                "(add-video) records such frames as untrusted"
            )
        if t in self._recorded_untrusted:
            return f"frame {t}: probe recorded it as untrusted (decode error, corrupt packet or frame, or a cut file)"
        return (
            f"frame {t}: it follows a decode error before the next keyframe, or the decoder marked it or its "
            "packet corrupt (its picture is not trusted)"
        )

    def _picture(self, t: int, found: Any) -> np.ndarray:
        if isinstance(found, Missing) or not found[2]:
            raise VideoDecodeError(
                f"cannot read frame {t} of video {self.video_id!r} ({self.path}): {self._why(t, found)}",
                path=str(self.path),
                video_id=self.video_id,
            )
        image = self._rgb(found[1])
        self.stats["converted"] += 1
        rot = self._rotation
        if rot:
            image = np.ascontiguousarray(np.rot90(image, k=rot // 90))
        return view_image(image, self.view)

    def _size(self) -> tuple[int, int]:
        if self.view is not None:
            return self.view.size
        w, h = self._coded_size or (self._stream.codec_context.width, self._stream.codec_context.height)
        return (h, w) if self.rotation % 180 else (w, h)


#: Containers inherited through fork: closing them would wait for decoder threads that live in the parent.
_ABANDONED: list[Any] = []


def _abandon(container: Any) -> None:
    _ABANDONED.append(container)


def _reopen(
    path: Path,
    index: FrameIndex | None,
    view: View | None,
    video_id: str,
    on_corrupt: OnCorrupt,
    untrusted_frames: tuple[tuple[int, int], ...] = (),
) -> FrameReader:
    return FrameReader(
        path,
        index=index,
        view=view,
        video_id=video_id,
        on_corrupt=on_corrupt,
        check_hash=False,
        untrusted_frames=untrusted_frames,
    )
