"""Annotations in the dataset's SQLite file: chunks of columns, appended, edited and queried.

Each row of the ``chunks`` table holds up to ``vidlabel.dataset._dataset.CHUNK_ROWS``
annotations of one video as compressed NumPy columns (:mod:`vidlabel.dataset._chunks`),
with the id and frame range it covers so that queries skip chunks that cannot
match. New rows top up a video's last chunk before starting new ones; review
edits rewrite the chunks they touch. The ``tracks`` table keeps one label per
(video, track id). Every function here runs inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.dataset._chunks import ChunkDamagedError, Cols, concat, decode_chunk, empty_cols, encode_chunk, take
from vidlabel.dataset._rows import attribute_bytes, attribute_value, schema_text
from vidlabel.errors import AnnotationError, DatasetError
from vidlabel.spec import KINDS, ORIGINS, STATUSES

__all__ = [
    "annotation_dicts",
    "append_chunks",
    "edit_chunks",
    "load_chunks",
    "rebuild_tracks",
    "with_attributes_set",
]


def _chunk_params(cols: Cols) -> tuple[int, int, int, int, int, bytes]:
    return (
        int(cols["annotation_id"].shape[0]),
        int(cols["annotation_id"].min()),
        int(cols["annotation_id"].max()),
        int(cols["start_frame"].min()),
        int(cols["end_frame"].max()),
        encode_chunk(cols),
    )


def append_chunks(con: sqlite3.Connection, vcode: int, cols: Cols, *, chunk_rows: int) -> None:
    """Store new rows of video ``vcode``: top up its last chunk, then new chunks of ``chunk_rows`` rows."""
    n = int(cols["annotation_id"].shape[0])
    pos = 0
    last = con.execute(
        "SELECT chunk, n_rows FROM chunks WHERE video = ? ORDER BY chunk DESC LIMIT 1", (vcode,)
    ).fetchone()
    if last is not None and last[1] < chunk_rows:
        # Top up the video's last chunk so that many small batches do not make many tiny chunks.
        pos = min(n, chunk_rows - last[1])
        (blob,) = con.execute("SELECT data FROM chunks WHERE chunk = ?", (last[0],)).fetchone()
        merged = concat([_decoded(con, last[0], blob), take(cols, np.arange(pos))])
        con.execute(
            "UPDATE chunks SET n_rows = ?, min_id = ?, max_id = ?, min_frame = ?, max_frame = ?, data = ? "
            "WHERE chunk = ?",
            (*_chunk_params(merged), last[0]),
        )
    params = []
    while pos < n:
        part = take(cols, np.arange(pos, min(n, pos + chunk_rows)))
        params.append((vcode, *_chunk_params(part)))
        pos += chunk_rows
    con.executemany(
        "INSERT INTO chunks (video, n_rows, min_id, max_id, min_frame, max_frame, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        params,
    )


def edit_chunks(
    con: sqlite3.Connection,
    wanted: np.ndarray,
    operation: str,
    change: Callable[[Cols, np.ndarray], Cols | None],
) -> set[int]:
    """Apply ``change(cols, hit)`` to every chunk holding some of the sorted unique ids ``wanted``.

    A chunk ``change`` empties (or returns None for) is deleted.

    Returns
    -------
    set of int
        The codes of the videos whose chunks changed.

    Raises
    ------
    AnnotationError
        If some id is not stored (the caller's transaction then rolls back).
    """
    meta = np.array(con.execute("SELECT chunk, min_id, max_id, video FROM chunks").fetchall(), np.int64)
    meta = meta.reshape(-1, 4)
    lo = np.searchsorted(wanted, meta[:, 1], side="left")
    hi = np.searchsorted(wanted, meta[:, 2], side="right")
    found: list[np.ndarray] = []
    touched: set[int] = set()
    for chunk, vcode in meta[hi > lo][:, [0, 3]].tolist():
        (blob,) = con.execute("SELECT data FROM chunks WHERE chunk = ?", (chunk,)).fetchone()
        cols = _decoded(con, chunk, blob)
        hit = np.isin(cols["annotation_id"], wanted)
        if not hit.any():
            continue
        found.append(cols["annotation_id"][hit])
        touched.add(vcode)
        new = change(cols, hit)
        if new is None or new["annotation_id"].size == 0:
            con.execute("DELETE FROM chunks WHERE chunk = ?", (chunk,))
        else:
            con.execute(
                "UPDATE chunks SET n_rows = ?, min_id = ?, max_id = ?, min_frame = ?, max_frame = ?, "
                "data = ? WHERE chunk = ?",
                (*_chunk_params(new), chunk),
            )
    got = np.concatenate(found) if found else np.zeros(0, np.int64)
    missing = np.setdiff1d(wanted, got)
    if missing.size:
        shown = ", ".join(map(str, missing[:10].tolist())) + (" ..." if missing.size > 10 else "")
        raise AnnotationError(f"{operation}: {missing.size} unknown annotation id(s): {shown}; nothing was changed")
    return touched


def rebuild_tracks(con: sqlite3.Connection, vcode: int) -> None:
    """Recompute the (track id, label) pairs of video ``vcode`` from its stored rows."""
    con.execute("DELETE FROM tracks WHERE video = ?", (vcode,))
    pairs: set[tuple[int, int]] = set()
    for chunk, blob in con.execute("SELECT chunk, data FROM chunks WHERE video = ?", (vcode,)).fetchall():
        c = _decoded(con, chunk, blob)
        sel = c["track_id"] >= 0
        pairs.update(zip(c["track_id"][sel].tolist(), c["label"][sel].tolist()))
    con.executemany(
        "INSERT OR IGNORE INTO tracks (video, track_id, label) VALUES (?, ?, ?)",
        [(vcode, t, lab) for t, lab in sorted(pairs)],
    )


def _decoded(con: sqlite3.Connection, chunk: int, blob: bytes) -> Cols:
    """:func:`decode_chunk` of chunk ``chunk``; a damaged one is a DatasetError naming the database and the chunk."""
    try:
        return decode_chunk(blob)
    except ChunkDamagedError as err:
        db = con.execute("PRAGMA database_list").fetchone()[2]
        raise DatasetError(
            f"annotation chunk {chunk} of {db} is damaged ({err}): the file was edited or damaged; restore it "
            "from a backup",
            path=db,
        ) from err


def load_chunks(
    con: sqlite3.Connection,
    *,
    video_code: int | None = None,
    start: int | None = None,
    stop: int | None = None,
) -> tuple[Cols, np.ndarray]:
    """(columns, video code per row) of the chunks that may match, concatenated in chunk order."""
    sql = "SELECT chunk, video, data FROM chunks"
    where, params = [], []
    if video_code is not None:
        where.append("video = ?")
        params.append(video_code)
    if start is not None:
        where.append("max_frame >= ?")
        params.append(start)
    if stop is not None:
        where.append("min_frame < ?")
        params.append(stop)
    if where:
        sql += " WHERE " + " AND ".join(where)
    parts, vcodes = [], []
    for chunk, vcode, blob in con.execute(sql + " ORDER BY chunk", params):
        c = _decoded(con, chunk, blob)
        parts.append(c)
        vcodes.append(np.full(c["annotation_id"].shape[0], vcode, np.int64))
    if not parts:
        return empty_cols(), np.zeros(0, np.int64)
    return concat(parts), np.concatenate(vcodes)


def annotation_dicts(
    cols: Cols,
    vcodes: np.ndarray,
    rows: np.ndarray,
    *,
    video_names: dict[int, str],
    labels: Sequence[str],
    view_names: dict[int, str],
) -> list[dict[str, Any]]:
    """One dict per row in ``rows`` (positions in ``cols``), as ``Dataset.annotations`` returns them."""
    out = []
    for i in rows.tolist():
        k = KINDS[cols["kind"][i]]
        a, b = cols["mask_offsets"][i], cols["mask_offsets"][i + 1]
        conf = cols["confidence"][i]
        out.append(
            {
                "annotation_id": int(cols["annotation_id"][i]),
                "video_id": video_names[int(vcodes[i])],
                "kind": k,
                "label": labels[cols["label"][i]],
                "start_frame": int(cols["start_frame"][i]),
                "end_frame": int(cols["end_frame"][i]),
                "box": None if k == "marker" else tuple(float(x) for x in cols["box"][i]),
                "mask": (
                    {"size": [int(x) for x in cols["mask_size"][i]], "counts": cols["mask_counts"][a:b].tobytes()}
                    if b > a
                    else None
                ),
                "track_id": int(cols["track_id"][i]) if cols["track_id"][i] >= 0 else None,
                "origin": ORIGINS[cols["origin"][i]],
                "confidence": None if np.isnan(conf) else float(str(conf)),
                "status": STATUSES[cols["status"][i]],
                "view_id": view_names[int(cols["view"][i])] if cols["view"][i] >= 0 else None,
            }
        )
        a, b = cols["attr_offsets"][i], cols["attr_offsets"][i + 1]
        if b > a:  # rows without attributes keep the spec's keys alone
            out[-1]["attributes"] = json.loads(cols["attr_bytes"][a:b].tobytes())
    return out


def with_attributes_set(
    cols: Cols, hit: np.ndarray, values: Mapping[str, Any], labels: Sequence[str],
    schema: Mapping[str, Mapping[str, str]],
) -> Cols:  # fmt: skip
    """``cols`` with ``values`` merged into the attributes of the rows ``hit`` (a value None removes the
    attribute), each checked against the schema of its row's label.

    Raises
    ------
    AnnotationError
        If a row's label does not declare an attribute, or a value is not of the declared type, naming the
        annotation, the attribute, the value and the label's schema.
    """
    offsets, data = cols["attr_offsets"], cols["attr_bytes"].tobytes()
    parts: list[bytes] = []
    for i in range(int(cols["annotation_id"].shape[0])):
        a, b = int(offsets[i]), int(offsets[i + 1])
        if hit[i]:
            attrs = json.loads(data[a:b]) if b > a else {}
            label = labels[int(cols["label"][i])]
            have = schema.get(label, {})
            for name, value in values.items():
                if value is None:
                    attrs.pop(name, None)
                    continue
                why = (
                    f"is not in the schema of label {label!r}"
                    if name not in have
                    else attribute_value(have[name], value)[1]
                )
                if why is not None:
                    raise AnnotationError(
                        f"annotation {int(cols['annotation_id'][i])}: attribute {shown(name)} = {shown(value)}: {why} (label "
                        f"{label!r} has attributes {schema_text(have)}); nothing was changed"
                    )
                attrs[name] = attribute_value(have[name], value)[0]
            parts.append(attribute_bytes(attrs) if attrs else b"")
        else:
            parts.append(data[a:b])
    out = dict(cols)
    out["attr_offsets"] = np.concatenate([[0], np.cumsum([len(p) for p in parts], dtype=np.int64)]).astype(np.int64)
    out["attr_bytes"] = np.frombuffer(b"".join(parts), np.uint8).copy()
    return out
