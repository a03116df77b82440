"""JSON read from users' files with every key of an object given once: ``json`` keeps the last of two equal keys
without a word, so ``{"label": "person", ..., "label": "car"}`` would silently become a car."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["RepeatedKeyError", "json_error_text", "no_repeated_keys"]


class RepeatedKeyError(ValueError):
    """A JSON object that gives ``key`` twice, ``first`` then ``second`` (the values)."""

    def __init__(self, key: str, first: Any = None, second: Any = None) -> None:
        super().__init__(key)
        self.key, self.first, self.second = key, first, second


def no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: the object as a dict; RepeatedKeyError on a key given twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKeyError(key, out[key], value)
        out[key] = value
    return out


def json_error_text(err: json.JSONDecodeError) -> str:
    """What is wrong and where on its line: "Expecting value at column 5". Some of ``json``'s messages end in
    "at" themselves ("Unterminated string starting at", "Invalid control character at"), which is not repeated."""
    return f"{err.msg.removesuffix(' at')} at column {err.colno}"
