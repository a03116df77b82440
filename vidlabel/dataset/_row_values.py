"""The values of one column of annotation rows, parsed with NumPy: present, coded, integers, floats, boxes
(the steps of :func:`vidlabel.dataset._rows.check_rows` use them)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain, repeat
from operator import is_, is_not
from typing import Any

import numpy as np

_NAN = float("nan")


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value.tolist() if isinstance(value, np.ndarray) and value.size <= 16 else value)
    if isinstance(value, np.ndarray) and value.size > 16:
        text = f"array of shape {value.shape}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _present(values: list[Any]) -> np.ndarray:
    """(N,) bool: the value is not None."""
    return np.fromiter(map(is_not, values, repeat(None)), bool, len(values))


def _codes(values: list[Any], mapping: Mapping[Any, int]) -> np.ndarray:
    """int64 code of each value, -1 where it is not a key (unhashable values included)."""
    try:
        return np.fromiter(map(mapping.get, values, repeat(-1)), np.int64, len(values))
    except TypeError:
        out = np.full(len(values), -1, np.int64)
        for i, v in enumerate(values):
            try:
                out[i] = mapping.get(v, -1)
            except TypeError:
                pass
        return out


def _is_int(v: Any) -> bool:
    if isinstance(v, bool | np.bool_):
        return False
    if isinstance(v, int | np.integer):
        return True
    if isinstance(v, float | np.floating):
        return bool(np.isfinite(v)) and float(v).is_integer()
    return False


def _ints(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, bad mask) of a list that should hold integers (integral floats allowed)."""
    n = len(values)
    arr = None
    # One type only, int or float (not bool: np.array would turn True into 1 beside ints). Ints beside floats go
    # through the loop: np.array would make them float64, which rounds an id past 2**53 to another id.
    if set(map(type, values)) in ({int}, {float}):
        try:
            arr = np.array(values)
        except (TypeError, ValueError, OverflowError):
            arr = None
    if arr is not None and arr.ndim == 1 and arr.shape[0] == n:
        if arr.dtype.kind == "i":
            return arr.astype(np.int64, copy=False), np.zeros(n, bool)
        if arr.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(arr) & (arr == np.round(arr)) & (arr >= -(2.0**63)) & (arr < 2.0**63)
            return np.where(ok, arr, 0).astype(np.int64), ~ok
    out = np.zeros(n, np.int64)
    bad = np.zeros(n, bool)
    for i, v in enumerate(values):
        if _is_int(v) and -(2**63) <= int(v) < 2**63:
            out[i] = int(v)
        else:
            bad[i] = True
    return out, bad


def _floats(values: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float64 values with NaN for None, present mask, bad mask) of a list of real numbers or None.

    NaN and infinity pass as values (the caller checks ranges); a given NaN is present.
    """
    n = len(values)
    filled = [_NAN if v is None else v for v in values]
    arr = None
    if set(map(type, filled)) <= {float, int}:
        try:
            arr = np.fromiter(filled, np.float64, n)
        except OverflowError:
            arr = None
    if arr is not None:
        nones = sum(map(is_, values, repeat(None)))
        isnan = np.isnan(arr)
        present = ~isnan if int(isnan.sum()) == nones else _present(values)
        return arr, present, np.zeros(n, bool)
    out = np.full(n, np.nan)
    bad = np.zeros(n, bool)
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.integer | np.floating):
                raise TypeError
            out[i] = float(v)
        except (TypeError, OverflowError):
            bad[i] = True
    return out, _present(values), bad


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_)


def _boxes(values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """((K, 4) float64, bad mask) of a list of 4-number boxes (numbers only: no strings or booleans)."""
    k = len(values)
    try:
        if set(map(type, values)) <= {tuple, list, np.ndarray} and set(map(len, values)) <= {4}:
            flat = list(chain.from_iterable(values))
            if not set(map(type, flat)) & {str, bytes, bool, np.bool_, type(None)}:
                return np.fromiter(flat, np.float64, 4 * k).reshape(k, 4), np.zeros(k, bool)
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.full((k, 4), np.nan)
    bad = np.zeros(k, bool)
    for i, v in enumerate(values):
        try:
            items = list(v)
            if len(items) != 4 or isinstance(v, str | bytes) or not all(map(_is_number, items)):
                raise TypeError
            out[i] = np.asarray(items, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            bad[i] = True
    return out, bad
