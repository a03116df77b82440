"""Choosing samples by the rows' attributes, and the attributes of each target as numbers.

``FrameSamples(..., attributes={"occluded": False, "visibility": (">=", 0.5)})`` keeps the rows whose
attributes pass every condition; ``with_attributes=("visibility", "occluded")`` delivers them per target
(``attributes`` (N, A) float32 in the sample). A condition concerns the labels whose schema (the release's
``info["attribute_schema"]``, else the labels some row of which holds the attribute) declares the attribute:
rows of other labels pass it, rows of such a label without a value fail it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel._attribute_rows import attributes_pass, check_attribute_filter, check_declared, decode_attributes
from vidlabel.schema import attribute_values, check_with_attributes
from vidlabel.spec import AnnotationTable

__all__ = ["attribute_columns", "attribute_keep", "check_attribute_filter", "check_with_attributes"]


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
    if not conditions:
        return np.ones(len(table), bool)
    assert table.attr_offsets is not None and table.attr_bytes is not None
    decoded = decode_attributes(table.attr_offsets, table.attr_bytes)
    declaring = _declaring(table, schema, decoded)
    check_declared(conditions, declaring)
    return attributes_pass(decoded, table.label, conditions, declaring)


def attribute_columns(table: AnnotationTable, annotation_ids: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """(R, A) float32: attribute ``names[a]`` of the row of each annotation id (true 1, false 0, NaN where the
    row has none); a text attribute is an OptionError naming it (it has no number)."""
    rows = np.searchsorted(table.annotation_id, annotation_ids)
    offsets, data = table.attr_offsets, table.attr_bytes
    assert offsets is not None and data is not None
    return attribute_values(offsets, data, rows, names, annotation_ids)
