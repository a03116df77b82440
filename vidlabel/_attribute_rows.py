"""Choosing annotation rows by their attributes: the ``attributes=`` filter of every sample dataset.

``{"occluded": False, "visibility": (">=", 0.5)}`` keeps the rows whose attributes pass every condition.
A condition concerns the labels that declare the attribute: rows of other labels pass it, and a row of such a
label without a value fails it. :class:`vidlabel.FrameSamples` applies it to a release's rows and
:class:`vidlabel.store.StoreSamples` to a store's regions, both from the CSR JSON form
(``attr_offsets``/``attr_bytes``) they share, so that both keep the same rows.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel.errors import OptionError

__all__ = ["attributes_pass", "check_attribute_filter", "check_declared", "decode_attributes"]

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip


def _is_value(v: Any) -> bool:
    return isinstance(v, bool | int | float | str) and not (isinstance(v, float) and v != v)


def check_attribute_filter(conditions: Mapping[str, Any] | None) -> dict[str, tuple[str, Any]] | None:
    """``attributes=`` as name -> (operator, value); a value alone means ``==``.

    Raises
    ------
    OptionError
        On anything but a mapping of names to a bool, number or string, or to ``(op, value)`` with op one of
        ``== != < <= > >=`` (an order only between numbers).
    """
    if conditions is None:
        return None
    if not isinstance(conditions, Mapping):
        raise OptionError(f"attributes must be a mapping name -> value or (op, value), got {conditions!r}")
    out: dict[str, tuple[str, Any]] = {}
    for name, cond in conditions.items():
        op: Any = "=="
        value = cond
        if isinstance(cond, tuple | list):
            op, value = tuple(cond) if len(cond) == 2 else (None, None)
        ok = isinstance(name, str) and op in _OPS and _is_value(value)
        if ok and op not in ("==", "!=") and (isinstance(value, bool | str)):
            ok = False
        if not ok:
            raise OptionError(
                f"attributes: condition {name!r}: {cond!r}; expected a value (true, 0.5, 'left') or (op, value) "
                f"with op one of {', '.join(_OPS)} (an order only for numbers)"
            )
        out[name] = (str(op), value)
    return out


def decode_attributes(offsets: np.ndarray, data: np.ndarray) -> list[dict[str, Any] | None]:
    """Each row's attributes from their CSR JSON form (None for none), each distinct text parsed once."""
    raw = np.asarray(data, np.uint8).tobytes()
    seen: dict[bytes, dict[str, Any]] = {}
    out: list[dict[str, Any] | None] = []
    for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
        if a == b:
            out.append(None)
            continue
        text = raw[a:b]
        if text not in seen:
            seen[text] = json.loads(text)
        out.append(seen[text])
    return out


def check_declared(conditions: Mapping[str, Any], declaring: Mapping[str, Any]) -> None:
    """Refuse a condition on an attribute that no label declares (a misspelt name would keep every row).

    Raises
    ------
    OptionError
        Naming the attribute and the declared ones.
    """
    unknown = [name for name in conditions if name not in declaring]
    if unknown:
        declared = ", ".join(sorted(declaring)) or "none"
        raise OptionError(f"attributes: no label declares attribute {unknown[0]!r}; declared: {declared}")


def attributes_pass(
    decoded: Sequence[Mapping[str, Any] | None],
    label_codes: np.ndarray,
    conditions: Mapping[str, tuple[str, Any]],
    declaring: Mapping[str, Iterable[int]],
) -> np.ndarray:
    """(N,) bool: the rows that pass every condition of :func:`check_attribute_filter`.

    A condition concerns the rows whose label code ``declaring[name]`` holds: other rows pass it, such a row
    without a value (or with a text or bool value under an order) fails it.
    """
    keep = np.ones(len(decoded), bool)
    for name, (op, want) in conditions.items():
        test = _OPS[op]
        ordered = op not in ("==", "!=")
        concerned = np.isin(label_codes, sorted(declaring.get(name, ())))
        for i in np.flatnonzero(concerned).tolist():
            attrs = decoded[i]
            value = None if attrs is None else attrs.get(name)
            if value is None or (ordered and isinstance(value, bool | str)) or not test(value, want):
                keep[i] = False
    return keep
