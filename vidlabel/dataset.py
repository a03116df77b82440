"""The dataset: videos, labels, views, annotations and releases in SQLite. (Owner: dataset helper; stub.)"""

from __future__ import annotations

__all__ = ["Dataset"]


class Dataset:
    """A folder holding a SQLite database of videos, labels, views, annotations and releases (stub)."""
