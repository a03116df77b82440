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

__all__ = [
    "attributes_pass",
    "check_attribute_filter",
    "check_declared",
    "decode_attributes",
    "declaring_from_rows",
    "declaring_from_schema",
]

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


def value_type(value: Any) -> str:
    """The attribute type (``bool``, ``number`` or ``text``) a filter value or a stored value has."""
    if isinstance(value, bool):
        return "bool"
    return "text" if isinstance(value, str) else "number"


def declaring_from_schema(
    schema: Mapping[str, Mapping[str, str]], vocabulary: Sequence[str]
) -> dict[str, dict[int, str]]:
    """Attribute name -> {label code: declared type} from a schema label -> {name: type}."""
    out: dict[str, dict[int, str]] = {}
    for label, names in schema.items():
        if label in vocabulary:
            for name, kind in names.items():
                out.setdefault(name, {})[list(vocabulary).index(label)] = str(kind)
    return out


def declaring_from_rows(codes: Iterable[int], decoded: Iterable[Mapping[str, Any] | None]) -> dict[str, dict[int, str]]:
    """Attribute name -> {label code: type} from the rows holding it (an empty type where a label's rows disagree)."""
    seen: dict[str, dict[int, set[str]]] = {}
    for code, attrs in zip(codes, decoded):
        for name, value in (attrs or {}).items():
            seen.setdefault(name, {}).setdefault(int(code), set()).add(value_type(value))
    return {name: {c: (t.pop() if len(t) == 1 else "") for c, t in by.items()} for name, by in seen.items()}


def check_declared(
    conditions: Iterable[str] | Mapping[str, tuple[str, Any]],
    declaring: Mapping[str, Mapping[int, str]],
    labels: Sequence[str],
    what: str = "attributes",
) -> None:
    """Refuse a condition on an attribute that no label declares (a misspelt name would keep every row), or
    whose value's type is not the type a declaring label gives the attribute (every row of it would fail).

    Raises
    ------
    OptionError
        Naming the attribute and the declared ones, or the attribute, the value, its type and the labels.
    """
    unknown = [name for name in conditions if name not in declaring]
    if unknown:
        declared = ", ".join(sorted(declaring)) or "none"
        raise OptionError(f"{what}: no label declares attribute {unknown[0]!r}; declared: {declared}")
    if not isinstance(conditions, Mapping):
        return
    for name, (_, want) in conditions.items():
        got = value_type(want)
        wrong = {labels[c]: kind for c, kind in declaring[name].items() if kind and kind != got and c < len(labels)}
        if wrong:
            declared = ", ".join(f"{kind} on label {label!r}" for label, kind in sorted(wrong.items()))
            raise OptionError(
                f"{what}: condition {name!r}: value {want!r} is {got}, but attribute {name!r} is {declared}"
            )


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
