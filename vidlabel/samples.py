"""FrameSamples: which frames to train on, and the targets of each. (Owner: samples helper; stub.)"""

from __future__ import annotations

__all__ = ["FrameSamples"]


class FrameSamples:
    """Stub."""
