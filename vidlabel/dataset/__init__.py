"""The dataset: videos, labels, views and annotations in SQLite, checked on the way in, and pinned releases.

- :class:`Dataset` creates/opens a dataset folder, registers videos, labels, views and
  annotations (every row checked; a batch is one transaction) and builds releases;
- :class:`Release` is a frozen, content-addressed snapshot of the annotation table,
  labels, views and videos (``Dataset.build``);
- :data:`PROBLEM_CODES` / :class:`Problem` are what ``Dataset.validate`` reports.

Private modules: ``_dataset`` (the class), ``_db`` (SQLite schema and records),
``_annotations`` (annotation chunks in SQLite), ``_chunks`` (the column codec),
``_rows`` (row checks), ``_release`` (release files and ids), ``_validate`` (checks).
Imports :mod:`vidlabel.video` (probing, hashing), never anything above it.
"""

from __future__ import annotations

from vidlabel.dataset._dataset import Dataset
from vidlabel.dataset._release import BuildReport, Release
from vidlabel.dataset._validate import EXPORT_ERRORS, PROBLEM_CODES, Problem

__all__ = ["EXPORT_ERRORS", "PROBLEM_CODES", "BuildReport", "Dataset", "Problem", "Release"]
