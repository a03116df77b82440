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

from vidlabel._attribute_rows import (
    attributes_pass,
    check_attribute_filter,
    check_declared,
    declaring_from_rows,
    declaring_from_schema,
    decode_attributes,
)
from vidlabel.schema import attribute_values, check_with_attributes
from vidlabel.spec import AnnotationTable

__all__ = ["attribute_columns", "attribute_keep", "check_attribute_filter", "check_with_attributes"]


def _declaring(
    table: AnnotationTable, schema: Mapping[str, Mapping[str, str]] | None, decoded: list[Any] | None = None
) -> dict[str, dict[int, str]]:
    """Attribute name -> {label code: type} of the labels that declare it."""
    if schema:
        return declaring_from_schema(schema, table.labels)
    if decoded is None:
        if table.attr_offsets is None or table.attr_bytes is None:
            return {}
        decoded = decode_attributes(table.attr_offsets, table.attr_bytes)
    return declaring_from_rows(table.label.tolist(), decoded)


def attribute_keep(
    table: AnnotationTable, conditions: Mapping[str, tuple[str, Any]], schema: Mapping[str, Mapping[str, str]] | None
) -> np.ndarray:
    """(N,) bool: the rows that pass every condition (see the module docstring).

    Raises
    ------
    OptionError
        If a condition names an attribute that no label declares (a misspelt name would keep every row),
        naming it and the declared ones, or a value whose type is not the attribute's declared type.
    """
    if not conditions:
        return np.ones(len(table), bool)
    assert table.attr_offsets is not None and table.attr_bytes is not None
    decoded = decode_attributes(table.attr_offsets, table.attr_bytes)
    declaring = _declaring(table, schema, decoded)
    check_declared(conditions, declaring, table.labels)
    return attributes_pass(decoded, table.label, conditions, declaring)


def attribute_columns(
    table: AnnotationTable,
    annotation_ids: np.ndarray,
    names: Sequence[str],
    schema: Mapping[str, Mapping[str, str]] | None = None,
) -> np.ndarray:
    """(R, A) float32: attribute ``names[a]`` of the row of each annotation id (true 1, false 0, NaN where the
    row has none); a text attribute, or one no label declares where some are (a misspelt name), is an OptionError
    naming it."""
    declaring = _declaring(table, schema)
    # a release without any attribute delivers NaN columns, so that one pipeline reads any release
    if declaring:
        check_declared(names, declaring, table.labels, "with_attributes")
    rows = np.searchsorted(table.annotation_id, annotation_ids)
    offsets, data = table.attr_offsets, table.attr_bytes
    assert offsets is not None and data is not None
    return attribute_values(offsets, data, rows, names, annotation_ids)
