"""Choosing samples by the rows' attributes, and the attributes of each target as numbers.

``FrameSamples(..., attributes={"occluded": False, "visibility": (">=", 0.5)})`` keeps the rows whose
attributes pass every condition; ``with_attributes=("visibility", "occluded")`` delivers them per target
(``attributes`` (N, A) float32 in the sample). A condition concerns the labels whose schema (the release's
``info["attribute_schema"]``, else the labels some row of which holds the attribute) declares the attribute:
rows of other labels pass it, rows of such a label without a value fail it.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel.errors import OptionError
from vidlabel.schema import attribute_values, check_with_attributes
from vidlabel.spec import AnnotationTable

__all__ = ["attribute_columns", "attribute_keep", "check_attribute_filter", "check_with_attributes"]

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


def _decoded(table: AnnotationTable) -> list[dict[str, Any] | None]:
    """Each row's attributes (None for none), each distinct JSON text parsed once."""
    offsets, data = table.attr_offsets, table.attr_bytes
    assert offsets is not None and data is not None
    raw = data.tobytes()
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


def _declaring(
    table: AnnotationTable, schema: Mapping[str, Mapping[str, str]] | None, decoded: list[Any]
) -> dict[str, set[int]]:
    """Attribute name -> label codes that declare it."""
    out: dict[str, set[int]] = {}
    if schema:
        for label, names in schema.items():
            if label in table.labels:
                for name in names:
                    out.setdefault(name, set()).add(table.labels.index(label))
        return out
    for code, attrs in zip(table.label.tolist(), decoded):
        for name in attrs or ():
            out.setdefault(name, set()).add(int(code))
    return out


def attribute_keep(
    table: AnnotationTable, conditions: Mapping[str, tuple[str, Any]], schema: Mapping[str, Mapping[str, str]] | None
) -> np.ndarray:
    """(N,) bool: the rows that pass every condition (see the module docstring).

    Raises
    ------
    OptionError
        If a condition names an attribute that no label declares (a misspelt name would keep every row),
        naming it and the declared ones.
    """
    keep = np.ones(len(table), bool)
    if not conditions:
        return keep
    decoded = _decoded(table)
    declaring = _declaring(table, schema, decoded)
    unknown = [name for name in conditions if name not in declaring]
    if unknown:
        declared = ", ".join(sorted(declaring)) or "none"
        raise OptionError(f"attributes: no label declares attribute {unknown[0]!r}; declared: {declared}")
    labels = table.label
    for name, (op, want) in conditions.items():
        concerned = np.isin(labels, sorted(declaring.get(name, ())))
        test = _OPS[op]
        for i in np.flatnonzero(concerned).tolist():
            attrs = decoded[i]
            value = None if attrs is None else attrs.get(name)
            ordered = op not in ("==", "!=")
            if value is None or (ordered and isinstance(value, bool | str)) or not test(value, want):
                keep[i] = False
    return keep


def attribute_columns(table: AnnotationTable, annotation_ids: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """(R, A) float32: attribute ``names[a]`` of the row of each annotation id (true 1, false 0, NaN where the
    row has none); a text attribute is an OptionError naming it (it has no number)."""
    rows = np.searchsorted(table.annotation_id, annotation_ids)
    offsets, data = table.attr_offsets, table.attr_bytes
    assert offsets is not None and data is not None
    return attribute_values(offsets, data, rows, names, annotation_ids)
