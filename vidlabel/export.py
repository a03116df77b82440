"""Release to frame store. (Owner: store helper; stub.)"""

from __future__ import annotations

__all__ = ["export"]


def export(ds, out, **kwargs):  # type: ignore[no-untyped-def]
    """Stub."""
    raise NotImplementedError
