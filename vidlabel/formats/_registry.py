"""The label formats vidlabel reads and writes: one record per format, in one table.

``vidlabel.formats`` registers each format in one line (:func:`register_format`); ``import_labels``,
``export_labels``, the command line (``vidlabel import`` / ``export-labels``: choices and help) and the
docs' format table (``docs/reference/label-formats.md``, :func:`format_table`) all read :data:`FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidlabel.dataset import Release
from vidlabel.errors import FormatError

from ._common import ImportContext, Parsed

__all__ = ["FORMATS", "Exporter", "Importer", "LabelFormat", "format_table", "label_format", "register_format"]

#: Reads a file into rows per video (``ImportContext`` holds the path, the dataset's videos and the options).
Importer = Callable[[ImportContext], Parsed]
#: Writes a release's rows of the chosen videos (all if empty) at a path; returns an ``ExportLabelsReport``.
Exporter = Callable[[Release, Path, Sequence[str]], Any]


@dataclass(frozen=True)
class LabelFormat:
    """One label format: how vidlabel reads and writes it, and what the command line and the docs say of it.

    Parameters
    ----------
    name : str
        What ``import_labels(ds, name, ...)`` and ``vidlabel import DATASET NAME FILE`` take.
    importer, exporter : callable
        :data:`Importer` and :data:`Exporter`.
    summary : str
        The tool and its files, in one line (``vidlabel import --help``, the docs).
    files : str
        What the file given to an import is, and what an export writes at ``out``.
    rows_in : str
        What a file of the format holds rows in, for the warning on a file that yields none.
    options : tuple of str
        The format options its importer reads (any other keyword is refused before the file is read).
    """

    name: str
    importer: Importer
    exporter: Exporter
    summary: str
    files: str
    rows_in: str
    options: tuple[str, ...] = ()


#: Format name -> its record, in the order the formats were registered.
FORMATS: dict[str, LabelFormat] = {}


def register_format(fmt: LabelFormat) -> LabelFormat:
    """Add ``fmt`` to :data:`FORMATS` (returns it).

    Raises
    ------
    FormatError
        If another record holds its name already.
    """
    if FORMATS.get(fmt.name, fmt) is not fmt:
        raise FormatError(f"label format {fmt.name!r} is registered already")
    FORMATS[fmt.name] = fmt
    return fmt


def label_format(name: str) -> LabelFormat:
    """The record of format ``name``.

    Raises
    ------
    FormatError
        If no format of that name is registered, naming the known ones.
    """
    if name not in FORMATS:
        raise FormatError(f"unknown format {name!r}; known: {', '.join(sorted(FORMATS))}")
    return FORMATS[name]


def format_table() -> str:
    """The registered formats as a Markdown table (name, what it is, its files, its import options)."""
    lines = ["| format | what | files | import options |", "| --- | --- | --- | --- |"]
    for fmt in FORMATS.values():
        options = ", ".join(f"`{o}`" for o in fmt.options) or "-"
        lines.append(f"| `{fmt.name}` | {fmt.summary} | {fmt.files} | {options} |")
    return "\n".join(lines) + "\n"
