"""Words for messages: ``plural(1, "marker")`` is "1 marker", ``plural(2, "box")`` "2 boxes"; ``shown(value)`` echoes a value cut short."""

from __future__ import annotations

__all__ = ["ECHO_CHARS", "plural", "shown"]


def plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1: ``"1 marker"``, ``"3 markers"``, ``"2 boxes"``."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun}es" if noun.endswith(("x", "s")) else f"{n} {noun}s"


#: Characters of a value an error message echoes: enough to recognise it, never a whole file's worth.
ECHO_CHARS = 40


def shown(value: object) -> str:
    """``repr(value)`` for a message, cut to :data:`ECHO_CHARS` characters, a cut one ending in ``...``:
    ``'11111111111111111111111111111111111...``."""
    text = repr(value)
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 3] + "..."
