"""The import path ``from vidlabel.validate import PROBLEM_CODES``: the stable codes ``Dataset.validate`` reports.

:data:`PROBLEM_CODES` maps each code to its severity (:data:`EXPORT_ERRORS` are the codes
``validate(for_export=True)`` rates as errors) and :class:`Problem` is one
finding; both live in :mod:`vidlabel.dataset` (``_validate``), which documents every code.
"""

from __future__ import annotations

from vidlabel.dataset import EXPORT_ERRORS, PROBLEM_CODES, Problem

__all__ = ["EXPORT_ERRORS", "PROBLEM_CODES", "Problem"]
