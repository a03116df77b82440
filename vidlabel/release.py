"""Building and reading frozen releases; content-derived release ids. (Owner: dataset helper.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vidlabel.spec import AnnotationTable, VideoMetadata, View

__all__ = ["Release"]


@dataclass(frozen=True)
class Release:
    """An immutable snapshot of a dataset: labels, views, videos and the non-rejected annotations.

    ``release_id`` is ``"r"`` + 12 hex digits derived from the content, or
    None for a live snapshot (``FrameSamples(release=None)``).
    """

    release_id: str | None
    created: str
    labels: tuple[str, ...]
    views: dict[str, View]
    videos: dict[str, VideoMetadata]
    table: AnnotationTable
    info: dict[str, Any] = field(default_factory=dict)
