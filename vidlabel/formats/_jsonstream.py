"""JSON label files read one list item at a time, so that memory follows the largest item, not the file.

``json``'s own C scanner (``JSONDecoder.raw_decode``) reads each item of a top-level list (COCO-VID
``annotations[]``, a Label Studio task) with the same ``object_pairs_hook`` as a whole-file read: numbers,
repeated keys and every check read the same. Only the punctuation between items is read here. Whatever this
reader does not take in its stride (a syntax error, a key repeated with another value, a number too long, a file
that is not UTF-8, a top-level key given twice), and any FormatError of the importer, makes the import read the
file whole with :func:`~vidlabel.formats._common.read_json`: a bad file is refused exactly as before, a syntax
error anywhere said before any fault of its content. Only a bad file costs the memory of a whole read.

Sections of the top-level object are read in the file's order; a section that needs another not read yet
(COCO-VID ``annotations`` before ``images``) is passed over and read again once that one is.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from vidlabel._json import RepeatedKeyError, SameRepeatsAllowed
from vidlabel.errors import FormatError

from ._common import ImportContext, Parsed, gc_paused, no_file, read_json

__all__ = ["LAZY", "Items", "JsonSource", "LazyList", "Section", "read_json_file"]

#: Bytes read at a time; a value longer than the buffer doubles it.
_CHUNK = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = " \t\n\r"
_BOM = b"\xef\xbb\xbf"


class Fallback(Exception):
    """The file is to be read whole: it holds something the item-by-item reader leaves to ``read_json``."""


class Items:
    """The items of a JSON list, as (index, item), read one at a time from the file or from a list in memory."""

    def __init__(self, items: Iterator[tuple[int, Any]], more: Callable[[], bool], count: Callable[[], int]):
        self._items = items
        self.more = more  #: whether another item follows the last one given
        self.count = count  #: how many items the list holds (reads the rest of a streamed list)

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        return self._items


#: In a spec of what :meth:`JsonSource.items` reads lazily: a list left in the file, read when iterated.
LAZY: dict[str, Any] = {}


class LazyList:
    """A list of the file read when iterated (each time anew), not held: a Label Studio region's keyframes."""

    def __init__(self, stream: _Stream, mark: int) -> None:
        self._stream, self._mark = stream, mark
        self._counted = False

    def __iter__(self) -> Iterator[Any]:
        self._stream.seek(self._mark)
        # its keys repeated with the same value are counted on the first reading only
        items = self._stream.list_items(count=not self._counted)
        self._counted = True
        return (v for _, v in items)

    def __bool__(self) -> bool:
        self._stream.seek(self._mark)
        self._stream.take("[")
        return self._stream.peek() != "]"


@dataclass
class Section:
    """A top-level key of a JSON object and what to do with its value.

    ``handler`` is given :class:`Items` when the value is a list and ``items`` is true, else the value itself
    (None where the key is absent). ``needs``: the keys whose handlers must run first.
    """

    key: str
    handler: Callable[[Any], None]
    needs: tuple[str, ...] = ()
    items: bool = True


class JsonSource:
    """Where an importer's JSON comes from: the file read item by item, or a document read whole."""

    def sections(self, sections: list[Section]) -> None:
        """Run each section's handler on its value (the document's root is an object)."""
        raise NotImplementedError

    def items(self, lazy: dict[str, Any] | None = None) -> Items:
        """The items of the document's root list. ``lazy``: which lists inside each item are :class:`LazyList` lists,
        as nested keys (``"*"`` for each item of a list) down to :data:`LAZY` (a document in memory: none)."""
        raise NotImplementedError


class _DocSource(JsonSource):
    def __init__(self, doc: Any) -> None:
        self.doc = doc

    def sections(self, sections: list[Section]) -> None:
        for s in sections:
            value = self.doc.get(s.key)
            s.handler(_list_items(value) if s.items and isinstance(value, list) else value)

    def items(self, lazy: dict[str, Any] | None = None) -> Items:
        return _list_items(self.doc if isinstance(self.doc, list) else [self.doc])


def _list_items(values: list[Any]) -> Items:
    given = [-1]

    def each() -> Iterator[tuple[int, Any]]:
        for i, v in enumerate(values):
            given[0] = i
            yield i, v

    return Items(each(), lambda: given[0] + 1 < len(values), lambda: len(values))


class _Stream(JsonSource):
    """A UTF-8 JSON file read through a text buffer of about ``_CHUNK`` characters."""

    def __init__(self, fh: IO[bytes], start: int, present: set[str]) -> None:
        self._fh = fh
        self.hook = SameRepeatsAllowed()
        # json's C scanner itself (JSONDecoder.raw_decode less its Python wrapper): StopIteration where no value starts
        self._scan = json.JSONDecoder(object_pairs_hook=self.hook).scan_once  # type: ignore[attr-defined]
        # passing over a section read again later: its repeated keys are counted when it is read
        self._skim = json.JSONDecoder(object_pairs_hook=SameRepeatsAllowed()).scan_once  # type: ignore[attr-defined]
        self._present = present
        self._ended = False
        self.seek(start)

    def seek(self, byte: int) -> None:
        self._fh.seek(byte)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buf, self._pos, self._buf_byte, self._eof = "", 0, byte, False

    def _fill(self) -> None:
        """Drop what was read from the buffer and append the next bytes (as many as it holds, for a long value)."""
        if self._eof:
            raise Fallback
        head = self._buf[: self._pos]
        self._buf_byte += len(head) if head.isascii() else len(head.encode())
        self._buf, self._pos = self._buf[self._pos :], 0
        data = self._fh.read(max(_CHUNK, len(self._buf)))
        try:
            self._buf += self._decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise Fallback from None
        self._eof = not data

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        if self._pos < len(self._buf) and self._buf[self._pos] not in _WS_CHARS:  # the common case first
            return self._buf[self._pos]
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if self._eof:
                return ""
            self._fill()

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise Fallback
        self._pos += 1

    def value(self, count: bool = True) -> Any:
        """The next JSON value, read by ``json``'s scanner (with more of the file where it runs past the buffer)."""
        self.peek()
        scan = self._scan if count else self._skim
        while True:
            repeats = dict(self.hook.repeats) if self.hook.repeats else None
            try:
                value, end = scan(self._buf, self._pos)
            except RepeatedKeyError:
                raise Fallback from None
            except (ValueError, RecursionError, StopIteration):
                # cut by the buffer's end, or a fault that read_json names with its line
                self._undo(repeats)
                self._fill()
                continue
            if end == len(self._buf) and not self._eof:  # a number may go on in the next bytes
                self._undo(repeats)
                self._fill()
                continue
            self._pos = end
            return value

    def _next_item(self, count: bool) -> Any:
        """:meth:`value` with its common case inline: an item whole in the buffer (no repeated key counted yet)."""
        if self.hook.repeats or not self.peek():
            return self.value(count)
        buf, pos = self._buf, self._pos
        try:
            value, end = (self._scan if count else self._skim)(buf, pos)
        except (ValueError, RecursionError, StopIteration):
            end = len(buf)
        if end >= len(buf):  # cut by the buffer's end, or a fault: value() sees which
            self.hook.repeats.clear()
            return self.value(count)
        self._pos = end
        return value

    def _undo(self, repeats: dict[str, int] | None) -> None:
        self.hook.repeats.clear()
        self.hook.repeats.update(repeats or {})

    def list_items(self, count: bool = True, lazy: dict[str, Any] | None = None) -> Items:
        self.take("[")
        given = [-1]

        def more() -> bool:
            return self.peek() == ","

        def each() -> Iterator[tuple[int, Any]]:
            if self.peek() == "]":
                self._pos += 1
                return
            i = 0
            while True:
                given[0] = i
                if lazy is None:
                    yield i, self._next_item(count)
                else:
                    item = self._lazy_value(lazy)
                    end = self._mark()
                    yield i, item
                    self.seek(end)  # reading its lazy lists moved the stream
                i += 1
                char = self.peek()
                self._pos += 1
                if char == "]":
                    return
                if char != ",":
                    raise Fallback

        it = each()

        def total() -> int:
            return given[0] + 1 + sum(1 for _ in it)

        return Items(it, more, total)

    def items(self, lazy: dict[str, Any] | None = None) -> Items:
        return self.list_items(lazy=lazy)

    def _lazy_value(self, spec: dict[str, Any]) -> Any:
        """The next value, with the lists ``spec`` names left in the file as :class:`LazyList` lists."""
        char = self.peek()
        if spec is LAZY and char == "[":
            mark = self._mark()
            self._skip(False)
            return LazyList(self, mark)
        if char == "{" and spec:
            return {key: self._lazy_value(spec[key]) if key in spec else self.value() for key in self._keys()}
        if char == "[" and "*" in spec:
            self.take("[")
            out: list[Any] = []
            if self.peek() == "]":
                self._pos += 1
                return out
            while True:
                out.append(self._lazy_value(spec["*"]))
                char = self.peek()
                self._pos += 1
                if char == "]":
                    return out
                if char != ",":
                    raise Fallback
        return self.value()

    def _skip(self, count: bool) -> None:
        if self.peek() == "[":
            for _ in self.list_items(count):
                pass
        else:
            self.value(count)

    def _mark(self) -> int:
        self.peek()
        head = self._buf[: self._pos]
        return self._buf_byte + (len(head) if head.isascii() else len(head.encode()))

    def _run(self, s: Section) -> None:
        if s.items and self.peek() == "[":
            items = self.list_items()
            s.handler(items)
            for _ in items:  # what the handler left unread
                pass
        else:
            s.handler(self.value())

    def _keys(self) -> Iterator[str]:
        """The keys of the object that starts here, the stream left at each one's value (which the caller reads)."""
        self.take("{")
        char = self.peek()
        if char == "}":
            self._pos += 1
            return
        seen: set[str] = set()
        while True:
            if char != '"':
                raise Fallback
            key = self.value()
            if key in seen:  # json keeps the last, or read_json names both values
                raise Fallback
            seen.add(key)
            self.take(":")
            yield key
            char = self.peek()
            self._pos += 1
            if char == "}":
                return
            if char != ",":
                raise Fallback
            char = self.peek()

    def sections(self, sections: list[Section]) -> None:
        wanted = {s.key: s for s in sections}
        done: set[str] = set()
        later: dict[str, int] = {}
        for key in self._keys():
            s = wanted.get(key)
            if s is None:
                self._skip(True)
                continue
            if key not in self._present:  # spelled with escapes: found by no byte search, read whole
                raise Fallback
            if all(n in done or n not in self._present for n in s.needs):
                self._run(s)
                done.add(key)
            else:
                later[key] = self._mark()
                self._skip(False)
        self.finish()
        for s in sections:
            if s.key in later:
                self.seek(later[s.key])
                self._run(s)
            elif s.key not in done:
                s.handler(None)

    def finish(self) -> None:
        """The document must end here (white space only); once found so, sections read again later are not."""
        if self._ended:
            return
        if self.peek() != "":
            raise Fallback
        self._ended = True


def _present_keys(fh: IO[bytes], keys: tuple[str, ...]) -> set[str]:
    """The keys whose quoted name occurs anywhere in the file's bytes (a key absent from this set is absent from
    the file, unless spelled with escapes)."""
    needles = {k: json.dumps(k).encode() for k in keys}
    longest = max((len(n) for n in needles.values()), default=1)
    found: set[str] = set()
    tail = b""
    while len(found) < len(keys):
        data = fh.read(_CHUNK)
        if not data:
            break
        block = tail + data
        found.update(k for k, n in needles.items() if k not in found and n in block)
        tail = block[-longest:]
    return found


def read_json_file(
    ctx: ImportContext, expect: type | tuple[type, ...], read: Callable[[JsonSource, Parsed], None],
    keys: tuple[str, ...] = (),
) -> Parsed:  # fmt: skip
    """What ``read`` makes of ``ctx.path``'s JSON: given the file item by item, or (where the stream gives up,
    see the module docstring) the document read whole by ``read_json``, which raises the FormatError of a bad
    file. ``keys``: the top-level keys ``read`` asks for (a root object). The context's state is put back
    before a second read."""
    path = ctx.path
    if not path.is_file():
        raise no_file(path)
    saved = (dict(ctx.options), set(ctx.map_keys_used), list(ctx.matched_by_id), ctx.video_id_used)
    parsed = Parsed()
    try:
        with open(path, "rb") as fh, gc_paused():
            head = fh.read(4)
            if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:2]:  # UTF-16
                raise Fallback
            start = len(_BOM) if head.startswith(_BOM) else 0
            fh.seek(start)
            present = _present_keys(fh, keys)
            stream = _Stream(fh, start, present)
            root = stream.peek()
            if root not in ("{" if expect is dict else "["):
                raise Fallback
            read(stream, parsed)
            stream.finish()
            if stream.hook.repeats:
                parsed.notes.insert(0, _repeats_note(stream.hook.repeats))
        return parsed
    # a fault found while streaming is said as a whole read says it: after any syntax error before or after it
    except (Fallback, FormatError):
        ctx.options, ctx.map_keys_used, ctx.matched_by_id, ctx.video_id_used = saved
        parsed = Parsed()
        doc = read_json(path, expect, parsed.notes)
        read(_DocSource(doc), parsed)
        return parsed


def _repeats_note(repeats: dict[str, int]) -> str:
    listed = ", ".join(f"{key!r} ({n})" for key, n in sorted(repeats.items()))
    return f"keys repeated with the same value in one object, read once: {listed}"
