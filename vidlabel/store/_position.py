"""Sample positions: the one check of a sample index that the store, its selections and StoreFrames share."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from vidlabel.errors import FrameOutOfRangeError, SampleIndexTypeError, SampleOutOfRangeError

__all__ = ["frame_number", "positions_by_code", "row_in_range", "row_number", "sample_position"]


def sample_position(i: Any, n: int, where: str) -> int:
    """Sample index ``i`` of a sequence of ``n`` samples as a position in ``[0, n)`` (negative counts from the end).

    Integers (Python, NumPy, a 0-d integer tensor) only: a float, a string or a bool is refused, never
    rounded or parsed (``store[1.5]`` is not sample 1).

    Raises
    ------
    SampleIndexTypeError
        If ``i`` is not an integer (a bool counts as not one).
    SampleOutOfRangeError
        If ``i`` lies outside ``[-n, n)``.
    """
    if isinstance(i, (bool, np.bool_)):
        value = None
    else:
        try:
            value = operator.index(i)
        except TypeError:
            value = None
    if value is None:
        raise SampleIndexTypeError(
            f"sample index of {where} must be an integer in [0, {n}), got {i!r} ({type(i).__name__})"
        )
    if not -n <= value < n:
        if n == 0:
            raise SampleOutOfRangeError(f"sample {value} out of range: {where} holds no samples")
        raise SampleOutOfRangeError(
            f"sample {value} out of range [0, {n}) of {where} (negative samples count from the end: -{n}..-1)"
        )
    return value + n if value < 0 else value


def positions_by_code(codes: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """``(code, positions)`` for each distinct value of ``codes`` (ascending), its positions ascending.

    What ``np.flatnonzero(codes == code)`` for each code of ``np.unique(codes)`` gives, from one stable sort
    instead of a scan of every sample per video (quadratic in the number of videos).
    """
    codes = np.asarray(codes)
    order = np.argsort(codes, kind="stable")
    uniq, starts = np.unique(codes[order], return_index=True)
    bounds = np.append(starts, codes.shape[0])
    for k, code in enumerate(uniq.tolist()):
        yield int(code), order[bounds[k] : bounds[k + 1]]


def row_number(row: object, video_id: str) -> int:
    """A stored row number of video ``video_id`` as an int.

    Raises
    ------
    SampleIndexTypeError
        (a TypeError) Unless ``row`` is an integer (Python or NumPy; a bool is refused, never taken for 0 or 1).
    """
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
        raise SampleIndexTypeError(
            f"row numbers must be integers, got {row!r} ({type(row).__name__}) for video {video_id!r}",
            video_id=video_id,
        )
    return int(row)


def frame_number(frame: object, video_id: str) -> int:
    """A source frame number of video ``video_id`` (0-based, displayed order) as an int.

    Raises
    ------
    SampleIndexTypeError
        (a TypeError) Unless ``frame`` is an integer (Python or NumPy): a float such as 5.5, a string such
        as '5' or a bool is refused, never rounded, parsed or taken for 0 or 1.
    """
    if isinstance(frame, (bool, np.bool_)) or not isinstance(frame, (int, np.integer)):
        raise SampleIndexTypeError(
            f"frame numbers must be integers, got {frame!r} ({type(frame).__name__}) for video {video_id!r}",
            video_id=video_id,
        )
    return int(frame)


def row_in_range(row: int, n_rows: int, video_id: str, store: object) -> None:
    """Refuse stored row ``row`` outside ``[0, n_rows)`` of video ``video_id`` of ``store`` (its path).

    Raises
    ------
    FrameOutOfRangeError
        (an IndexError) If ``row`` is outside ``[0, n_rows)``; -1 too: rows are not counted from the end.
    """
    if not 0 <= row < n_rows:
        raise FrameOutOfRangeError(
            f"row {row} out of range [0, {n_rows}) of video {video_id!r} in store {str(store)!r}", video_id=video_id
        )
