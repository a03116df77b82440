"""Sample positions: the one check of a sample index that the store, its selections and StoreFrames share."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from vidlabel.errors import SampleIndexTypeError, SampleOutOfRangeError

__all__ = ["sample_position"]


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
        raise SampleOutOfRangeError(f"sample {value} out of range [0, {n}) of {where}")
    return value + n if value < 0 else value
