"""Adding a large file's rows of one video batch by batch: the label importers' write path.

``Dataset.add_annotations`` checks and writes one list of rows; a label file of millions of rows would be
millions of row dicts and their checked columns at once. :func:`add_annotation_batches` takes the rows in
batches inside the caller's one transaction (all of the file or nothing of it) and keeps, of the rows already
written, only what the duplicate warnings compare, so they are the warnings one call with every row would
give. The tracks the earlier batches opened are checked as rows of the same batch would be.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vidlabel.dataset._added import warn_added_twice, warn_repeated
from vidlabel.dataset._chunks import cols_from_rows
from vidlabel.dataset._rows import check_tracks
from vidlabel.dataset._validate import duplicate_keys, duplicates_of_keys
from vidlabel.errors import AnnotationError

if TYPE_CHECKING:
    import sqlite3

    from vidlabel.dataset._dataset import Dataset

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
    from vidlabel.dataset._dataset import _stored_rows

    with ds._write("add_annotations") as con:
        vcode = _video_code(ds, con, video_id)
        stored = _stored_rows(con, vcode)
        before = None if stored is None else duplicate_keys(stored)
        del stored
        held = dict(con.execute("SELECT track_id, label FROM tracks WHERE video = ?", (vcode,)).fetchall())
        mine: dict[int, int] = {}
        keys: list[dict[str, np.ndarray]] = []
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
            from vidlabel.dataset._annotations import append_chunks
            from vidlabel.dataset._dataset import CHUNK_ROWS

            append_chunks(con, vcode, added, chunk_rows=CHUNK_ROWS)
            keys.append(duplicate_keys(added))
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
    from vidlabel.dataset._dataset import _stored_rows

    with ds._read() as con:
        vcode = _video_code(ds, con, video_id)
        stored = _stored_rows(con, vcode)
        before = None if stored is None else duplicate_keys(stored)
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
            keys.append(duplicate_keys(cols_from_rows(ids, cols)))
    if not keys or not sum(k["annotation_id"].size for k in keys):
        return [], []
    return duplicates_of_keys(before, _concat(keys))


def _video_code(ds: Dataset, con: sqlite3.Connection, video_id: str) -> int:
    row = con.execute("SELECT code FROM videos WHERE video_id = ?", (video_id,)).fetchone()
    if row is None:
        raise ds._unknown_video(con, video_id)
    return int(row[0])


def _concat(keys: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([part[k] for part in keys]) for k in keys[0]}


def _warn(
    ds: Dataset,
    video_id: str,
    before: dict[str, np.ndarray] | None,
    keys: list[dict[str, np.ndarray]],
    source: tuple[str, Callable[[int], str]] | None,
) -> np.ndarray:
    """The new ids, after the warnings one call with every row would give."""
    if not keys:
        return np.zeros(0, np.int64)
    new = _concat(keys)
    ids = new["annotation_id"]
    twice, repeated = duplicates_of_keys(before, new)
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
