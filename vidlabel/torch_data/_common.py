"""Shared by the torch datasets: rank x worker sharding info, collate. (Owner: samples helper; stub.)"""

from __future__ import annotations

__all__ = ["collate_frames", "worker_info"]


def worker_info():  # type: ignore[no-untyped-def]
    """Stub."""
    raise NotImplementedError


def collate_frames(batch):  # type: ignore[no-untyped-def]
    """Stub."""
    raise NotImplementedError
