"""Video metadata from one demux-and-decode pass over a file with PyAV, and the rules of frame numbering.

Frame ``n`` of a video is the ``n``-th displayed frame: the ``n``-th frame a
full sequential decode gives, in presentation order. The container's own frame
count is never trusted (mkv and webm report 0, an mp4 edit list hides frames
the packets still hold, an AVI can carry empty packets, a truncated file keeps
the header of the whole one): :func:`probe` counts the frames that decode.

Numbering rules the package keeps (the scan in :mod:`vidlabel.video._scan`, the
index in :mod:`vidlabel.video._frameindex`, the reader in :mod:`vidlabel.frames`):

- Frames come from the decoder; each carries a timestamp (pts) that identifies
  it. The frame index lists the pts of every displayed frame in presentation
  order, and which frames decoding can start from (keyframes; frame 0 always
  counts as one, since decoding can start at the beginning of the file).
- A packet that fails to decode in the middle of the file leaves a hole: its
  frame keeps its number (taken from the packet's pts) and later frames are not
  renumbered. Packets that fail at the end of a truncated file are not frames:
  ``frame_count`` stops after the last frame that decodes.
- Untrusted frames (``VideoMetadata.untrusted_frames``): those that follow a
  decode error, a packet the demuxer marks corrupt (``packet.is_corrupt``: cut
  short by the end of the file, damaged) or a frame the decoder marks corrupt
  (``frame.is_corrupt``: errors concealed in it) before the frame of the next
  keyframe, that frame included; holes; and, in a file cut short (see
  :mod:`vidlabel.video._cut`) whose decoder reorders frames, the frames given
  out only when the decoder is drained at the end, whose B-frames may have been
  cut.
- Streams whose decoder gives frames no pts or repeated pts (a raw H.264 or HEVC
  stream, a broken muxer) are numbered by position, in a time base of one frame
  of the stream's declared rate (so a frame's time is its number / rate, the only
  time such a stream has); the reader counts frames in them.
- Files whose decoder labels frames with a permutation of the container's pts
  (B-frames stored without composition offsets) are indexed in decoding output
  order, with the labels kept in :attr:`FrameIndex.decoder_pts`.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidlabel.errors import AnnotationError, VideoDecodeError, check_flag, check_path
from vidlabel.spec import FrameIndex, VideoMetadata
from vidlabel.video._frameindex import best_index, decode_scan, read_frame_index, untrusted_frames
from vidlabel.video._hash import content_hash
from vidlabel.video._locate import resolve_video_path, video_path_candidates

# content_hash, read_frame_index, resolve_video_path and video_path_candidates live in their own modules;
# importers of this module's names before the split keep working.
__all__ = ["content_hash", "probe", "read_frame_index", "resolve_video_path", "video_path_candidates"]

# FFmpeg's names (av_color_range_name / av_color_space_name); unspecified -> None.
_COLOR_RANGES = {1: "tv", 2: "pc"}
_COLOR_SPACES = {
    0: "gbr", 1: "bt709", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 8: "ycgco",
    9: "bt2020nc", 10: "bt2020c", 11: "smpte2085", 12: "chroma-derived-nc", 13: "chroma-derived-c", 14: "ictcp",
}  # fmt: skip


def _fps(index: FrameIndex | None, info: dict[str, Any], frame_count: int) -> Fraction:
    """Exact frame rate: from constant pts steps, else the stream's average rate, else the index's span."""
    if index is not None and index.frame_count > 1 and index.decoder_pts is None:
        steps = np.unique(np.diff(index.pts))
        if steps.size == 1:
            tb = Fraction(index.timebase["num"], index.timebase["den"])
            return 1 / (int(steps[0]) * tb)
    for key in ("average_rate", "guessed_rate"):
        rate = info.get(key)
        if rate:
            return Fraction(rate)
    if index is not None and index.frame_count > 1:
        span = int(index.pts[-1] - index.pts[0]) * Fraction(index.timebase["num"], index.timebase["den"])
        if span > 0:
            return Fraction(frame_count - 1) / span
    return Fraction(1)


def probe(
    path: str | os.PathLike[str],
    *,
    video_id: str | None = None,
    with_index: bool = True,
    progress: bool = False,
) -> VideoMetadata:
    """Metadata of a video file, from one demux-and-decode pass over it.

    Parameters
    ----------
    path : path-like
    video_id : str, optional
        Default: the file name without its extension.
    with_index : bool
        Attach the frame index (built from the same pass: ``method="demux"``
        when demuxing alone gives the same frames, else ``"decode"``).
    progress : bool
        Show a tqdm bar over the decoded frames.

    Returns
    -------
    VideoMetadata
        ``frame_count`` = frames that decode (holes from mid-file decode errors
        included, see the module notes); ``width``/``height`` displayed (rotation
        applied); exact ``fps``; ``rotation`` in degrees counter-clockwise;
        ``codec``, ``pix_fmt``, ``color_range``, ``color_space``, ``bit_depth``;
        ``content_hash``; ``sources=[{"uri": absolute path}]``;
        ``untrusted_frames``: inclusive ``(first, last)`` ranges of the frames
        :class:`~vidlabel.frames.FrameReader` refuses (``VideoDecodeError``):
        those that follow a decode error before the next keyframe, and holes;
        ``()`` when every frame decodes cleanly.

    Raises
    ------
    VideoNotFoundError, NoVideoStreamError, VideoDecodeError
        Missing file; no video stream or not a media file; empty file or no
        frame decodes; frames of more than one size (a stream that changes size in the middle: vidlabel
        reads one frame size per video).
    OptionError
        If ``with_index`` or ``progress`` is not True or False, or ``path`` is no path (None, a number).
    AnnotationError
        If ``video_id`` (or, without one, the file name's stem) is not a non-empty string without '/';
        refused before the file is read.
    """
    with_index, progress = check_flag("with_index", with_index), check_flag("progress", progress)
    p = Path(check_path(path, "probe", "video file"))
    vid = video_id if video_id is not None else p.stem
    if not isinstance(vid, str) or not vid or "/" in vid:
        raise AnnotationError(f"video_id must be a non-empty string without '/', got {vid!r} (probe of {str(p)!r})")
    chash = content_hash(p)
    scan, info = decode_scan(p, progress=progress)
    index = best_index(p, scan, info, chash)
    first = scan.first_frame
    if scan.size_change is not None:
        n, w, h = scan.size_change
        raise VideoDecodeError(
            f"the frames of {str(p)!r} change size: frames 0..{n - 1} are {first['width']}x{first['height']}, "
            f"frame {n} is {w}x{h} (coded sizes); vidlabel reads one frame size per video: re-encode it to one "
            f"size, e.g. ffmpeg -i IN -vf scale={first['width']}:{first['height']} -c:v libx264 -crf 18 OUT.mp4, "
            "or split it where the size changes",
            path=str(p),
        )
    rotation = int(first.get("rotation", 0))
    width, height = int(first.get("width") or info["width"]), int(first.get("height") or info["height"])
    if rotation % 180:
        width, height = height, width
    pix_fmt = first.get("format") or info["pix_fmt"]
    try:
        bit_depth: int | None = int(av.VideoFormat(pix_fmt).components[0].bits) if pix_fmt else None
    except (ValueError, IndexError):
        bit_depth = None
    fps = _fps(index, info, index.frame_count)
    return VideoMetadata(
        video_id=vid,
        frame_count=index.frame_count,
        fps={"num": fps.numerator, "den": fps.denominator},
        width=width,
        height=height,
        sources=[{"uri": os.path.abspath(p)}],
        content_hash=chash,
        rotation=rotation,
        codec=info["codec"],
        pix_fmt=pix_fmt,
        color_range=_COLOR_RANGES.get(int(first.get("color_range", 0))),
        color_space=_COLOR_SPACES.get(int(first.get("colorspace", 2))),
        bit_depth=bit_depth,
        frame_index=index if with_index else None,
        untrusted_frames=untrusted_frames(scan, index),
    )
