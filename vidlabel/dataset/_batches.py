"""Adding a large file's rows of one video batch by batch: the label importers' write path.

``Dataset.add_annotations`` checks and writes one list of rows; a label file of millions of rows would be
millions of row dicts and their checked columns at once. :func:`add_annotation_batches` takes the rows in
batches inside the caller's one transaction (all of the file or nothing of it) and keeps, of the rows already
written, only what the duplicate warnings compare, so they are the warnings one call with every row would
give. The tracks the earlier batches opened are checked as rows of the same batch would be.

Rows compare as ``duplicate_annotation`` compares them, by two independent 64-bit hashes of their fields
(16 bytes a row kept, not the rows): two rows that differ share both with a chance of about 2**-128 a pair.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vidlabel.dataset._added import warn_added_twice, warn_repeated
from vidlabel.dataset._annotations import append_chunks
from vidlabel.dataset._chunks import cols_from_rows
from vidlabel.dataset._dataset import CHUNK_ROWS, Dataset, _stored_rows
from vidlabel.dataset._rows import check_tracks
from vidlabel.dataset._validate import duplicate_keys, row_hash
from vidlabel.errors import AnnotationError
from vidlabel.spec import STATUSES

if TYPE_CHECKING:
    import sqlite3

Batches = Iterable[tuple[int, list[dict[str, Any]]]]


def add_annotation_batches(
    ds: Dataset,
    batches: Batches,
    video_id: str,
    *,
    clip: bool,
    source: tuple[str, Callable[[int], str]] | None = None,
    total: int | None = None,
) -> np.ndarray:
    """Add rows of one video given as ``(first row, rows)`` batches, as one ``add_annotations`` call would.

    Parameters
    ----------
    ds : Dataset
    batches : iterable of (int, list of dict)
        Each batch's first row in the whole and its rows, in order.
    video_id : str
    clip : bool
    source : (str, callable), optional
        As ``add_annotations``: ``(file, row -> place)`` for the warnings, rows counted over every batch.
    total : int, optional
        The rows of every batch, for an error's "the whole batch of N rows was refused".

    Returns
    -------
    (N,) int64
        The new annotation ids in row order.

    Raises
    ------
    AnnotationError
        As ``add_annotations``; its ``row`` counts over every batch. Nothing is written when the caller's
        transaction rolls back.
    """
    with ds._write("add_annotations") as con:
        vcode = _video_code(ds, con, video_id)
        stored = _stored_rows(con, vcode)
        before = None if stored is None else _Hashes.of(duplicate_keys(stored))
        del stored
        held = dict(con.execute("SELECT track_id, label FROM tracks WHERE video = ?", (vcode,)).fetchall())
        mine: dict[int, int] = {}
        keys: list[_Hashes] = []
        for offset, rows in batches:
            try:
                _, cols, labels = ds._checked_rows(con, rows, video_id, clip=clip)
                check_tracks(cols, held, labels=labels, video_id=video_id, earlier=mine)
            except AnnotationError as err:
                raise _shifted(err, offset, total) from None
            n = cols.n_rows
            if n == 0:
                continue
            tsel = cols["track_id"] >= 0
            new = set(zip(cols["track_id"][tsel].tolist(), cols["label"][tsel].tolist()))
            new = {(t, lab) for t, lab in new if t not in held and t not in mine}
            mine.update(new)
            con.executemany(
                "INSERT OR IGNORE INTO tracks (video, track_id, label) VALUES (?, ?, ?)",
                [(vcode, t, lab) for t, lab in sorted(new)],
            )
            first = int(con.execute("SELECT value FROM meta WHERE key = 'next_annotation_id'").fetchone()[0])
            ids = np.arange(first, first + n, dtype=np.int64)
            con.execute("UPDATE meta SET value = ? WHERE key = 'next_annotation_id'", (str(first + n),))
            added = cols_from_rows(ids, cols)
            append_chunks(con, vcode, added, chunk_rows=CHUNK_ROWS)
            keys.append(_Hashes.of(duplicate_keys(added)))
            del added, cols
    return _warn(ds, video_id, before, keys, source)


def annotation_duplicates_batches(
    ds: Dataset,
    batches: Batches,
    video_id: str,
    *,
    clip: bool,
    more_labels: Sequence[str] = (),
    more_schema: Mapping[str, Mapping[str, str]] | None = None,
    total: int | None = None,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``Dataset.annotation_duplicates`` of rows given in batches (a dry run's check), nothing written.

    Raises
    ------
    AnnotationError
        As ``annotation_duplicates``; its ``row`` counts over every batch.
    """
    with ds._read() as con:
        vcode = _video_code(ds, con, video_id)
        stored = _stored_rows(con, vcode)
        before = None if stored is None else _Hashes.of(duplicate_keys(stored))
        del stored
        first = int(con.execute("SELECT value FROM meta WHERE key = 'next_annotation_id'").fetchone()[0])
        keys = []
        for offset, rows in batches:
            try:
                _, cols, _ = ds._checked_rows(
                    con, rows, video_id, clip=clip, more_labels=more_labels, more_schema=more_schema
                )
            except AnnotationError as err:
                raise _shifted(err, offset, total) from None
            ids = np.arange(first + offset, first + offset + cols.n_rows, dtype=np.int64)
            keys.append(_Hashes.of(duplicate_keys(cols_from_rows(ids, cols))))
    if not keys:
        return [], []
    return _duplicates(before, _Hashes.concat(keys))


def _video_code(ds: Dataset, con: sqlite3.Connection, video_id: str) -> int:
    row = con.execute("SELECT code FROM videos WHERE video_id = ?", (video_id,)).fetchone()
    if row is None:
        raise ds._unknown_video(con, video_id)
    return int(row[0])


class _Hashes:
    """Rows as duplicate checks need them: two hashes of their fields, whether each is live, their ids."""

    def __init__(self, h1: np.ndarray, h2: np.ndarray, live: np.ndarray, ids: np.ndarray) -> None:
        self.h1, self.h2, self.live, self.ids = h1, h2, live, ids

    @classmethod
    def of(cls, keys: Mapping[str, np.ndarray]) -> _Hashes:
        cols = [keys["kind"], keys["label"], keys["view"], keys["start_frame"], keys["end_frame"], *keys["box"].T]
        cols.append(keys["mask_key"])
        live = np.asarray(keys["status"]) != STATUSES.index("rejected")
        h1 = row_hash(cols)
        h2 = row_hash(cols, seed=0x9E3779B97F4A7C15, prime=0xC2B2AE3D27D4EB4F, shift=31)
        return cls(h1, h2, live, np.asarray(keys["annotation_id"], np.int64))

    @classmethod
    def concat(cls, parts: list[_Hashes]) -> _Hashes:
        return cls(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("h1", "h2", "live", "ids")))


def _firsts(h1: np.ndarray, h2: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(N,) for each row the position of the earliest row (by id) with the same two hashes, -1 for that row."""
    n = h1.size
    order = np.lexsort((ids, h2, h1))
    s1, s2 = h1[order], h2[order]
    start = np.ones(n, bool)
    start[1:] = (s1[1:] != s1[:-1]) | (s2[1:] != s2[:-1])
    group_first = order[np.maximum.accumulate(np.where(start, np.arange(n), 0))]
    out = np.full(n, -1, np.int64)
    out[order] = np.where(start, -1, group_first)
    return out


def _duplicates(before: _Hashes | None, new: _Hashes) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``(twice, repeated)`` as :func:`~vidlabel.dataset._validate.added_duplicates` gives them."""
    live = np.flatnonzero(new.live)
    twice: list[tuple[int, int]] = []
    if before is not None and before.live.any():
        keep = np.flatnonzero(before.live)
        n_stored = keep.size
        # a new row equal to a stored live row is said whatever its own status
        both = [np.concatenate([getattr(before, k)[keep], getattr(new, k)]) for k in ("h1", "h2", "ids")]
        firsts = _firsts(*both)
        sel = np.flatnonzero((firsts[n_stored:] >= 0) & (firsts[n_stored:] < n_stored))
        stored_ids = both[2][firsts[n_stored:][sel]]
        pairs = sorted(zip(stored_ids.tolist(), new.ids[sel].tolist(), sel.tolist()))
        twice = [(r, f) for f, _, r in pairs]
    firsts = _firsts(new.h1[live], new.h2[live], new.ids[live])
    dup = np.flatnonzero(firsts >= 0)
    repeated = sorted(zip(live[dup].tolist(), live[firsts[dup]].tolist()))
    return twice, repeated


def _warn(
    ds: Dataset,
    video_id: str,
    before: _Hashes | None,
    keys: list[_Hashes],
    source: tuple[str, Callable[[int], str]] | None,
) -> np.ndarray:
    """The new ids, after the warnings one call with every row would give."""
    if not keys:
        return np.zeros(0, np.int64)
    new = _Hashes.concat(keys)
    ids = new.ids
    twice, repeated = _duplicates(before, new)
    if repeated:
        warn_repeated(ds.path, video_id, ids.size, repeated, ids, source)
    if twice:
        warn_added_twice(ds.path, video_id, ids.size, twice, ids, source)
    return ids


def _shifted(err: AnnotationError, offset: int, total: int | None) -> AnnotationError:
    """``err`` of a batch starting at row ``offset``, its row counted over every batch and its "whole batch"
    the ``total`` rows of every batch."""
    row, detail = getattr(err, "row", None), getattr(err, "detail", None)
    if row is None or detail is None or (not offset and total is None):
        return err
    if total is not None:
        whole = "the batch (1 row)" if total == 1 else f"the whole batch of {total} rows"
        detail = re.sub(
            r"the (?:whole batch of \d+ rows|batch \(1 row\)) was refused", f"{whole} was refused", detail, count=1
        )
    out = AnnotationError(f"row {row + offset} (0-based), {detail}", video_id=getattr(err, "video_id", None))
    out.row = row + offset  # type: ignore[attr-defined]
    out.field = getattr(err, "field", None)  # type: ignore[attr-defined]
    out.detail = detail  # type: ignore[attr-defined]
    return out
