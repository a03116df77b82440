"""ReadPlan: requests grouped by keyframe interval into chunks. (Owner: samples helper; stub.)"""

from __future__ import annotations

__all__ = ["ReadPlan"]


class ReadPlan:
    """Stub."""
