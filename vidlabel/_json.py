"""JSON read from users' files with every key of an object given once: ``json`` keeps the last of two equal keys
without a word, so ``{"label": "person", ..., "label": "car"}`` would silently become a car."""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from typing import Any

__all__ = [
    "RepeatedKeyError",
    "SameRepeatsAllowed",
    "json_error_text",
    "no_repeated_keys",
    "repeated_key_line",
]


class RepeatedKeyError(ValueError):
    """A JSON object that gives ``key`` twice, ``first`` then ``second`` (the values)."""

    def __init__(self, key: str, first: Any = None, second: Any = None) -> None:
        super().__init__(key)
        self.key, self.first, self.second = key, first, second
        self.pos: int | None = None  # offset of the object's opening brace, where repeated_key_line found it


def no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: the object as a dict; RepeatedKeyError on a key given twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RepeatedKeyError(key, out[key], value)
        out[key] = value
    return out


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value as written: ``1`` and ``1.0`` or ``true`` are not."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class SameRepeatsAllowed:
    """``object_pairs_hook`` that takes a key repeated with the **same** value (mmtracking's own test files
    repeat keys so, and ``json``, pycocotools and mmtracking read them) and counts it in ``repeats`` (key ->
    times); a key repeated with another value is still a RepeatedKeyError."""

    def __init__(self) -> None:
        self.repeats: dict[str, int] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                if not _same(out[key], value):
                    raise RepeatedKeyError(key, out[key], value)
                self.repeats[key] = self.repeats.get(key, 0) + 1
            out[key] = value
        return out


def json_error_text(err: json.JSONDecodeError) -> str:
    """What is wrong and where on its line: "Expecting value at column 5". Some of ``json``'s messages end in
    "at" themselves ("Unterminated string starting at", "Invalid control character at"), which is not repeated."""
    return f"{err.msg.removesuffix(' at')} at column {err.colno}"


def repeated_key_line(text: str, hook: Any = no_repeated_keys) -> tuple[int, int] | None:
    """(line, column), 1-based, of the opening brace of the first object of ``text`` that gives a key twice; None
    when there is none. ``no_repeated_keys`` is called with the pairs alone, so ``json.loads`` cannot tell where
    the object lies: this parses ``text`` again with the pure-Python scanner, which passes each object's offset.
    Called only once a RepeatedKeyError was raised, so the slow parser costs nothing on good files. ``hook``: the
    ``object_pairs_hook`` that raised it (a :class:`SameRepeatsAllowed` finds the key repeated with another value)."""

    def parse_object(s_and_end: tuple[str, int], *args: Any, **kwargs: Any) -> tuple[dict[str, Any], int]:
        try:
            return json.decoder.JSONObject(s_and_end, *args, **kwargs)  # type: ignore[attr-defined,no-any-return]
        except RepeatedKeyError as err:
            if err.pos is None:  # the innermost object: it raised first
                err.pos = s_and_end[1] - 1
            raise

    decoder = json.JSONDecoder(object_pairs_hook=hook)
    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        decoder.decode(text)
    except RepeatedKeyError as err:
        if err.pos is None:
            return None
        line_start = text.rfind("\n", 0, err.pos) + 1
        return text.count("\n", 0, err.pos) + 1, err.pos - line_start + 1
    except (ValueError, RecursionError):
        return None
    return None
