"""The rows an importer read for one dataset video, held in compact columns until they are written.

A label file of millions of rows would take gigabytes as row dicts (a dict, its keys' values and a box
tuple are some 700 bytes a row). :class:`VideoRows` keeps each field the importers write in an array
(labels and kinds as codes, frames and track ids as int64, boxes and confidences as float64), attributes
interned (a CVAT keyframe's dict is shared by every frame it persists to), and anything else (masks, an
odd type the dataset will refuse with its message) in a sparse per-row dict, so every row reads back
exactly as it was added. Rows are read back in batches of plain dicts for ``Dataset.add_annotations``.
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vidlabel.spec import VideoMetadata

__all__ = ["VideoRows", "Where", "where_text"]

Where = int | str | tuple[str, int]  # a line number, an element / JSON path, or (JSON list name, index)


def where_text(where: Where) -> str:
    if isinstance(where, tuple):
        return f"{where[0]}[{where[1]}]"
    return f"line {where}" if isinstance(where, int) else where


_TEXT = ("kind", "label", "origin", "status")
_INTS = ("start_frame", "end_frame", "track_id")
_SLOTS = (*_TEXT, *_INTS, "box", "confidence", "attributes")
_BIT = {name: 1 << i for i, name in enumerate(_SLOTS)}
#: set beside a slot's bit when the row holds None there (``track_id: None``)
_NONE = {name: 1 << (16 + i) for i, name in enumerate(_SLOTS)}
#: the box was a list, not a tuple
_BOX_LIST = 1 << 15
_INT64 = (-(2**63), 2**63)
_SLOT = {name: i for i, name in enumerate(_SLOTS)}
_BITS = [_BIT[name] for name in _SLOTS]
_NONES = [_NONE[name] for name in _SLOTS]
_NO_BOX = (0.0, 0.0, 0.0, 0.0)
#: A place ending in a row's number (``annotations[3] frame index 17``, ``...sequence[17]``): its text before
#: the number (ending in a non-digit), the number as ``str(int)`` writes it, and an optional closing bracket.
_NUMBERED = re.compile(r"(.*[^0-9]|)(0|[1-9][0-9]{0,17})(\]?)", re.DOTALL)


def _attribute_key(value: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """A hashable key telling attribute dicts apart exactly (``True`` from ``1.0``, ``-0.0`` from ``0.0``), or
    None for values that are not plain bools, ints, floats or strings."""
    key: list[Any] = []
    for name, v in value.items():
        kind = type(v)
        if kind is float:
            key.append((name, v.hex()))
        elif kind in (bool, int, str):
            key.append((name, kind, v))
        else:
            return None
    return tuple(key)


class VideoRows:
    """Rows destined for one dataset video, with where in the file each came from.

    Rows enter with :meth:`add` (a row dict as ``Dataset.add_annotations`` takes it, and its place in the
    file) and come back, equal to what was added, from :meth:`row`, :meth:`batches` and :meth:`iter_rows`.
    """

    def __init__(self, meta: VideoMetadata) -> None:
        self.meta = meta
        self._n = 0
        self._bits = array("I")
        self._codes: dict[str, int] = {}
        self._names: list[str] = []
        self._first_use: list[int] = []
        self._text = {name: array("i") for name in _TEXT}
        self._ints = {name: array("q") for name in _INTS}
        self._text_columns = [self._text[name] for name in _TEXT]
        self._int_columns = [self._ints[name] for name in _INTS]
        self._box = array("d")
        self._confidence = array("d")
        self._attr = array("i")
        self._attr_codes: dict[Any, int] = {}
        self._attr_values: list[Mapping[str, Any]] = []
        self._where_num = array("q")
        self._where_code = array("i")
        self._where_codes: dict[Any, int] = {}
        self._where_values: list[Any] = []
        self._tail_codes: dict[str, int] = {}
        self._tails: list[str] = []
        self._extra: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return self._n

    # -- in -----------------------------------------------------------------------------------------

    def _code(self, text: str) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self._names)
            self._names.append(text)
            self._first_use.append(self._n)
        return code

    def _attribute_code(self, value: Mapping[str, Any]) -> int | None:
        # a dict shared by many rows (a CVAT keyframe's) is found by identity before its key is built
        code = self._attr_codes.get(id(value))
        if code is not None and self._attr_values[code] is value:
            return code
        key = _attribute_key(value)
        if key is None:
            return None
        code = self._attr_codes.get(key)
        if code is None:
            code = self._attr_codes[key] = len(self._attr_values)
            self._attr_values.append(value)
        self._attr_codes[id(value)] = code
        return code

    def add(self, row: dict[str, Any], where: Where) -> None:
        """Add one row (a dict as ``Dataset.add_annotations`` takes it) read at ``where`` in the file."""
        bits = 0
        extra: dict[str, Any] | None = None
        text = [-1, -1, -1, -1]
        ints = [0, 0, 0]
        box: Any = _NO_BOX
        confidence = 0.0
        attr = -1
        for key, value in row.items():
            slot = _SLOT.get(key, -1)
            kind = type(value)
            if slot < 0:
                pass
            elif value is None:
                bits |= _BITS[slot] | _NONES[slot]
                continue
            elif slot < 4:
                if kind is str:
                    text[slot] = self._code(value)
                    bits |= _BITS[slot]
                    continue
            elif slot < 7:
                if kind is int and _INT64[0] <= value < _INT64[1]:
                    ints[slot - 4] = value
                    bits |= _BITS[slot]
                    continue
            elif slot == 7:
                if (kind is tuple or kind is list) and len(value) == 4 and all(type(v) is float for v in value):
                    box = value
                    bits |= _BITS[slot] | (_BOX_LIST if kind is list else 0)
                    continue
            elif slot == 8:
                if kind is float:
                    confidence = value
                    bits |= _BITS[slot]
                    continue
            elif kind is dict and (code := self._attribute_code(value)) is not None:
                attr = code
                bits |= _BITS[slot]
                continue
            if extra is None:
                extra = {}
            extra[key] = value
        if extra is not None:
            self._extra[self._n] = extra
        self._bits.append(bits)
        for column, code in zip(self._text_columns, text):
            column.append(code)
        for column, number in zip(self._int_columns, ints):
            column.append(number)
        self._box.extend(box)
        self._confidence.append(confidence)
        self._attr.append(attr)
        self._add_where(where)
        self._n += 1

    def truncate(self, n: int) -> None:
        """Forget every row from row ``n`` on (a reader that took back what it had added: a CVAT track found
        to be skipped after its first rows were read); the texts they used stay known, unused."""
        del self._bits[n:]
        for column in (*self._text_columns, self._attr, self._where_code):
            del column[n:]
        for wide in (*self._int_columns, self._where_num):
            del wide[n:]
        del self._confidence[n:]
        del self._box[4 * n :]
        for i in [i for i in self._extra if i >= n]:
            del self._extra[i]
        self._n = n

    def _add_where(self, where: Where) -> None:
        if type(where) is int and _INT64[0] <= where < _INT64[1]:
            self._where_num.append(where)
            self._where_code.append(-1)
            return
        number = 0
        key: Any = ("raw", where)
        if type(where) is tuple and len(where) == 2 and type(where[1]) is int and _INT64[0] <= where[1] < _INT64[1]:
            key, number = ("item", where[0]), where[1]
        elif type(where) is str:
            key, number = self._split_where(where)
        code = self._where_codes.get(key)
        if code is None:
            code = self._where_codes[key] = len(self._where_values)
            self._where_values.append(key)
        self._where_num.append(number)
        self._where_code.append(code)

    def _split_where(self, where: str) -> tuple[Any, int]:
        """A place that is unique to its row as a shared part and a number: ``"<track ...><box frame=...>"``
        (CVAT: the track's element and the shape's, each one of few) or ``"gt/gt.txt line 12"`` (a file of a
        folder) or ``"annotations[3] frame index 17"`` (a JSON item's per-frame entry), so a file of millions of
        rows holds few strings."""
        head, sep, number = where.rpartition(" line ")
        if sep and number.isascii() and number.isdigit() and str(int(number)) == number and len(number) < 19:
            return ("line", head), int(number)
        cut = where.rfind("<")
        if cut <= 0:
            numbered = _NUMBERED.fullmatch(where)
            if numbered:
                return ("numbered", numbered[1], numbered[3]), int(numbered[2])
            return where, 0
        tail = where[cut:]
        code = self._tail_codes.get(tail)
        if code is None:
            code = self._tail_codes[tail] = len(self._tails)
            self._tails.append(tail)
        return ("element", where[:cut]), code

    def extend(self, other: VideoRows, *, prefix: str = "", track_shift: int = 0) -> None:
        """Add every row of ``other``, its place named ``f"{prefix} {where}"`` and its track ids >= 0 shifted."""
        for offset, rows in other.batches():
            for i, row in enumerate(rows, offset):
                tid = row.get("track_id")
                if track_shift and tid is not None and tid >= 0:
                    row["track_id"] = tid + track_shift
                where = other.where_at(i)
                self.add(row, f"{prefix} {where_text(where)}" if prefix else where)

    # -- out ----------------------------------------------------------------------------------------

    def where_at(self, i: int) -> Where:
        """Where in the file row ``i`` came from."""
        code = self._where_code[i]
        if code < 0:
            return self._where_num[i]
        value = self._where_values[code]
        if type(value) is tuple:
            if value[0] == "item":
                return (value[1], self._where_num[i])
            if value[0] == "line":
                return f"{value[1]} line {self._where_num[i]}"
            if value[0] == "element":
                return f"{value[1]}{self._tails[self._where_num[i]]}"
            if value[0] == "numbered":
                return f"{value[1]}{self._where_num[i]}{value[2]}"
            return value[1]  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    @property
    def where(self) -> _WhereView:
        """``where[i]``: where in the file row ``i`` came from."""
        return _WhereView(self)

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as it was added."""
        return self.rows_between(i, i + 1)[0]

    def rows_between(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Rows ``start`` to ``stop`` (half-open) as dicts equal to those added (a fresh dict each)."""
        stop = min(stop, self._n)
        if stop <= start:
            return []
        bits = np.frombuffer(self._bits, np.uint32)[start:stop]
        out: list[Any] = [None] * (stop - start)
        # rows of one set of fields (nearly every row of a file) are built from columns at once
        for b in np.unique(bits).tolist():
            idx = np.flatnonzero(bits == b) + start
            keys, cols = self._fields(b, idx)
            for j, values in zip((idx - start).tolist(), zip(*cols) if cols else itertools.repeat(())):
                out[j] = dict(zip(keys, values))
        if self._extra:
            for i in range(start, stop):
                extra = self._extra.get(i)
                if extra is not None:
                    out[i - start].update(extra)
        return out

    def _fields(self, b: int, idx: np.ndarray) -> tuple[list[str], list[Any]]:
        """The keys rows of field bits ``b`` hold, and for each the values of rows ``idx``."""
        keys: list[str] = []
        cols: list[Any] = []
        for slot, key in enumerate(_SLOTS):
            if not b & _BITS[slot]:
                continue
            keys.append(key)
            if b & _NONES[slot]:
                cols.append(itertools.repeat(None))
            elif slot < 4:
                names = self._names
                codes = np.frombuffer(self._text_columns[slot], np.int32)[idx].tolist()
                cols.append([names[c] for c in codes])
            elif slot < 7:
                cols.append(np.frombuffer(self._int_columns[slot - 4], np.int64)[idx].tolist())
            elif slot == 7:
                boxes = np.frombuffer(self._box, np.float64).reshape(-1, 4)[idx].tolist()
                cols.append(boxes if b & _BOX_LIST else list(map(tuple, boxes)))
            elif slot == 8:
                cols.append(np.frombuffer(self._confidence, np.float64)[idx].tolist())
            else:
                values = self._attr_values
                cols.append([values[c] for c in np.frombuffer(self._attr, np.int32)[idx].tolist()])
        return keys, cols

    def batches(self, size: int = 50_000) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """``(first row, rows)`` of every ``size`` rows in order, each a list of fresh dicts."""
        for start in range(0, self._n, size):
            yield start, self.rows_between(start, start + size)

    def iter_rows(self, size: int = 50_000) -> Iterator[tuple[dict[str, Any], Where]]:
        """``(row, where)`` of every row in order."""
        for start, rows in self.batches(size):
            for i, row in enumerate(rows, start):
                yield row, self.where_at(i)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row as a dict (for small files and tests: a fresh list, which holds the whole file)."""
        return self.rows_between(0, self._n)

    # -- columns for the checks before writing ------------------------------------------------------

    def _extras_with(self, key: str) -> Iterator[tuple[int, Any]]:
        for i, extra in self._extra.items():
            if key in extra:
                yield i, extra[key]

    def labels(self) -> dict[Any, int]:
        """Each label the rows carry -> the first row carrying it, in order of first use."""
        seen = np.zeros(len(self._names), bool)
        codes = np.frombuffer(self._text["label"], np.int32) if self._n else np.zeros(0, np.int32)
        has = (np.frombuffer(self._bits, np.uint32) & _BIT["label"]) != 0
        has &= codes >= 0
        seen[codes[has]] = True
        firsts: dict[Any, int] = {}
        for code in np.flatnonzero(seen).tolist():
            firsts[self._names[code]] = int(np.flatnonzero(has & (codes == code))[0])
        for i, value in self._extras_with("label"):
            if value not in firsts or firsts[value] > i:
                firsts[value] = i
        return dict(sorted(firsts.items(), key=lambda kv: kv[1]))

    def kind_counts(self) -> dict[Any, int]:
        """Rows of each kind."""
        codes = np.frombuffer(self._text["kind"], np.int32) if self._n else np.zeros(0, np.int32)
        counts = np.bincount(codes[self._has("kind")], minlength=len(self._names)).tolist()
        out: dict[Any, int] = {self._names[c]: n for c, n in enumerate(counts) if n}
        rest = self._n - sum(out.values())
        if rest:
            odd = [e["kind"] for e in self._extra.values() if "kind" in e]
            for value in odd:
                out[value] = out.get(value, 0) + 1
            if rest > len(odd):
                out[None] = out.get(None, 0) + rest - len(odd)
        return out

    def track_ids(self) -> np.ndarray:
        """The track ids >= 0 the rows carry, (M,) int64 (a track id the dataset will refuse is left out)."""
        has = self._has("track_id")
        tid = np.frombuffer(self._ints["track_id"], np.int64) if self._n else np.zeros(0, np.int64)
        found = tid[has & (tid >= 0)]
        more = [int(v) for _, v in self._extras_with("track_id") if _whole(v) and int(v) >= 0]
        return np.concatenate([found, np.array(more, np.int64)]) if more else found

    def shift_tracks(self, offset: int) -> None:
        """Add ``offset`` to every track id >= 0."""
        tid = np.frombuffer(self._ints["track_id"], np.int64) if self._n else np.zeros(0, np.int64)
        sel = self._has("track_id") & (tid >= 0)
        tid[sel] += offset
        for i, value in list(self._extras_with("track_id")):
            if _whole(value) and int(value) >= 0:
                self._extra[i]["track_id"] = int(value) + offset

    def _has(self, key: str) -> np.ndarray:
        """(N,) bool: the rows that hold ``key`` as a number in its column."""
        bits = np.frombuffer(self._bits, np.uint32)
        return (bits & _BIT[key] != 0) & (bits & _NONE[key] == 0)

    def frame_columns(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """``(start, end, odd)``: (N,) int64 start frames and end frames (the start where a row has none), and
        the rows whose frames are no int64 (checked one by one)."""
        start = np.frombuffer(self._ints["start_frame"], np.int64) if self._n else np.zeros(0, np.int64)
        end = np.frombuffer(self._ints["end_frame"], np.int64) if self._n else np.zeros(0, np.int64)
        end = np.where(self._has("end_frame"), end, start)
        odd = sorted({i for i, e in self._extra.items() if "start_frame" in e or "end_frame" in e})
        return start, end, odd

    def boxes(self) -> np.ndarray:
        """(M, 4) float64 boxes of the rows that hold one (odd boxes left to the dataset's checks)."""
        box = np.frombuffer(self._box, np.float64).reshape(-1, 4) if self._n else np.zeros((0, 4))
        return box[self._has("box")]


def _whole(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()


class _WhereView:
    """``vr.where[i]`` without a list of the whole file's places."""

    def __init__(self, rows: VideoRows) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> Where:
        if not -len(self._rows) <= i < len(self._rows):
            raise IndexError(i)
        return self._rows.where_at(i % len(self._rows))
