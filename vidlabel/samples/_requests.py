"""The read requests of :meth:`FrameSamples.plan_reads <vidlabel.samples.FrameSamples.plan_reads>`: positions in
the sample index or (video_id, frame) pairs, checked and turned into arrays of video codes and frames.

``samples`` is the :class:`~vidlabel.samples.FrameSamples` asked (typed Any: it imports this module).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vidlabel.errors import OptionError, VideoDecodeError

__all__ = ["refuse_untrusted", "request_arrays"]


def request_arrays(samples: Any, requests: Any) -> tuple[np.ndarray, np.ndarray]:
    """The (video code, frame) int64 arrays of ``requests`` to :meth:`FrameSamples.plan_reads
    <vidlabel.samples.FrameSamples.plan_reads>` of ``samples``: positions in its index, or (video_id, frame) pairs.

    Raises
    ------
    OptionError, UnknownVideoError, FrameOutOfRangeError, VideoDecodeError
        As :meth:`~vidlabel.samples.FrameSamples.plan_reads`.
    """
    n = len(samples)
    what = f"positions in samples.index ([0, {n})) or (video_id, frame) pairs"
    if not isinstance(requests, (np.ndarray, np.generic, list, tuple, range, str, bytes)) and hasattr(
        requests, "__array__"
    ):
        # an integer array of another library (torch.multinomial / torch.randint draws): positions, as NumPy's
        try:
            as_array = np.asarray(requests)
        except (TypeError, ValueError, RuntimeError):  # e.g. a tensor on a GPU: read item by item below
            as_array = None
        if as_array is not None and as_array.ndim >= 1 and as_array.dtype.kind in "iu":
            requests = as_array
    if isinstance(requests, np.ndarray) and requests.dtype.kind in "iu":
        if requests.ndim != 1:
            raise OptionError(
                f"requests must be a 1-D array of positions in samples.index ([0, {n})), got an array of shape "
                f"{requests.shape}; pass (video_id, frame) pairs as a list of tuples"
            )
        if requests.dtype.kind == "u" and requests.size and int(requests.max()) >= n:
            raise OptionError(f"sample position {int(requests.max())} out of range [0, {n})")
        positions = requests.astype(np.int64)
    else:
        try:
            items = list(requests)
        except TypeError as err:
            one = isinstance(requests, (int, np.integer)) and not isinstance(requests, bool)
            hint = f" (one position: pass [{int(requests)}])" if one else ""
            raise OptionError(f"requests must be a sequence of {what}, got {requests!r}{hint}") from err
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in items):
            outside = [int(x) for x in items if not 0 <= int(x) < n]
            if outside:  # (before the int64 array: 2**64 would not fit it)
                raise OptionError(f"sample position {outside[0]} out of range [0, {n})")
            positions = np.asarray(items, dtype=np.int64)
        else:
            codes = np.empty(len(items), np.int64)
            frames = np.empty(len(items), np.int64)
            for i, item in enumerate(items):
                try:
                    video_id, frame = item
                except (TypeError, ValueError) as err:
                    raise OptionError(
                        f"request {i} must be a position or a (video_id, frame) pair, got {item!r}"
                    ) from err
                codes[i] = samples._locate(video_id, frame)
                frames[i] = int(frame)
            refuse_untrusted(samples, codes, frames)
            return codes, frames
    bad = (positions < 0) | (positions >= n)
    if bad.any():
        raise OptionError(f"sample position {int(positions[bad][0])} out of range [0, {n})")
    return samples._sel.index.video_codes[positions].astype(np.int64), samples._sel.index.frames[positions]


def refuse_untrusted(samples: Any, codes: np.ndarray, frames: np.ndarray) -> None:
    """Refuse a requested frame the video's metadata records as having no trustworthy picture (before any
    decoding: the reader would refuse it in the middle of an epoch)."""
    for code in np.unique(codes).tolist():
        meta = samples._sel.videos[samples._sel.video_ids[code]]
        if not meta.untrusted_count:
            continue
        asked = frames[codes == code]
        bad = asked[meta.untrusted_mask()[asked]]
        if bad.size:
            ranges = ", ".join(f"{a}..{b}" for a, b in meta.untrusted_frames or ())
            raise VideoDecodeError(
                f"requested frame {int(bad[0])} of video {meta.video_id!r} has no trustworthy picture "
                f"(untrusted frames: {ranges}; {bad.size} of the requests name such frames): the reader refuses "
                "them, and FrameSamples leaves them out of its index; leave them out of the requests",
                video_id=meta.video_id,
            )
