"""Words for counts in messages: ``plural(1, "marker")`` is "1 marker", ``plural(2, "box")`` "2 boxes"."""

from __future__ import annotations

__all__ = ["plural"]


def plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``"1 marker"``, ``"3 markers"``, ``"2 boxes"``."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun}es" if noun.endswith(("x", "s")) else f"{n} {noun}s"
