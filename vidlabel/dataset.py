"""The dataset: videos, labels, views, annotations and releases in one SQLite file (WAL mode).

Layout of a dataset folder::

    <dataset>/vidlabel.sqlite     the live data (SQLite, write-ahead log)
    <dataset>/releases/<id>.h5    frozen releases (see vidlabel.release)

Annotations are stored column-wise: each row of the ``chunks`` table holds up
to ``CHUNK_ROWS`` annotations of one video as compressed NumPy columns (ids,
integer codes for kind/label/origin/status/view, frames, float64 boxes,
float32 confidence, COCO RLE mask bytes). Measured on the 2-core benchmark
machine, one SQLite row per annotation took 8.7 s just to insert a million
rows and 4.7 s to read them back into NumPy; chunks make writing, validating
and building a million rows a matter of about a second each (see
``scripts/bench_dataset.py``). Review edits (``set_status``,
``delete_annotations``) rewrite the chunks they touch inside one transaction.

Every write is one SQLite transaction (``BEGIN IMMEDIATE``): a batch of
annotations is written whole or not at all, also when the process is killed,
and concurrent writers from several processes queue on the database lock.
The object holds only the folder path; connections are opened lazily per
process and thread, so a ``Dataset`` pickles into DataLoader workers under
fork and spawn.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.chunks import (
    Cols,
    cols_from_rows,
    concat,
    decode_chunk,
    empty_cols,
    encode_chunk,
    pack_ints,
    take,
    unpack_ints,
)
from vidlabel.errors import (
    AnnotationError,
    BuildError,
    DatasetError,
    DatasetExistsError,
    DatasetNotFoundError,
    ReleaseNotFoundError,
    SchemaVersionError,
    UnknownVideoError,
)
from vidlabel.release import (
    BuildReport,
    Release,
    copy_release,
    read_release,
    release_created,
    release_id_of,
    video_dict,
    write_release,
)
from vidlabel.rows import check_rows, check_tracks
from vidlabel.spec import KINDS, ORIGINS, STATUSES, AnnotationTable, FrameIndex, VideoMetadata, View
from vidlabel.validate import Problem, validate_table

__all__ = ["CHUNK_ROWS", "DB_NAME", "SCHEMA_VERSION", "Dataset"]

#: Version of the SQLite schema this vidlabel writes; a dataset with a newer one is refused.
SCHEMA_VERSION = 1
#: The database file inside a dataset folder.
DB_NAME = "vidlabel.sqlite"
#: Most annotations stored in one chunk (one video each).
CHUNK_ROWS = 16384
_FORMAT = "vidlabel-dataset"
_LIVE_STATUSES = ("unreviewed", "approved")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE labels (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE videos (
    code INTEGER PRIMARY KEY, video_id TEXT NOT NULL UNIQUE, metadata TEXT NOT NULL,
    frame_index TEXT, index_pts BLOB, index_keyframes BLOB);
CREATE TABLE views (
    code INTEGER PRIMARY KEY, view_id TEXT NOT NULL UNIQUE,
    x0 INTEGER NOT NULL, y0 INTEGER NOT NULL, x1 INTEGER NOT NULL, y1 INTEGER NOT NULL,
    out_w INTEGER, out_h INTEGER);
CREATE TABLE tracks (
    video INTEGER NOT NULL, track_id INTEGER NOT NULL, label INTEGER NOT NULL,
    PRIMARY KEY (video, track_id)) WITHOUT ROWID;
CREATE TABLE chunks (
    chunk INTEGER PRIMARY KEY, video INTEGER NOT NULL, n_rows INTEGER NOT NULL,
    min_id INTEGER NOT NULL, max_id INTEGER NOT NULL, min_frame INTEGER NOT NULL, max_frame INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX chunks_video ON chunks (video);
CREATE TABLE releases (
    seq INTEGER PRIMARY KEY, release_id TEXT NOT NULL UNIQUE, created TEXT NOT NULL,
    n_rows INTEGER NOT NULL, last_built INTEGER NOT NULL);
"""

# Test hook: called inside every write transaction just before COMMIT with the operation's name.
_before_commit: Callable[[str], None] | None = None
# Connections inherited through fork are never used or closed by the child.
_ABANDONED: list[sqlite3.Connection] = []


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------------
# The dataset
# --------------------------------------------------------------------------------------------------


class _Local(threading.local):
    con: sqlite3.Connection | None = None
    pid: int = -1


class Dataset:
    """A folder holding the live annotations of a project, and its frozen releases.

    Use :meth:`create` for a new dataset and :meth:`open` (or ``Dataset(path)``)
    for an existing one. The object holds only the path: it pickles, and each
    process (and thread) opens its own SQLite connection on first use.

    Parameters
    ----------
    path : str or os.PathLike
        The dataset folder.

    Raises
    ------
    DatasetNotFoundError
        If the folder does not exist or is not a vidlabel dataset.
    SchemaVersionError
        If the dataset was written by a newer vidlabel.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path).absolute()
        self._local = _Local()
        self._releases: dict[str, Release] = {}
        self._check()

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> Dataset:
        """Create an empty dataset in a new (or empty) folder.

        Parameters
        ----------
        path : str or os.PathLike
            The folder; created with its parents if missing.

        Returns
        -------
        Dataset

        Raises
        ------
        DatasetExistsError
            If the folder already holds a dataset, is a file, or is not empty.
        """
        p = Path(path).absolute()
        if p.exists():
            if not p.is_dir():
                raise DatasetExistsError(f"cannot create a dataset at {p}: it is a file", path=str(p))
            if (p / DB_NAME).exists():
                raise DatasetExistsError(
                    f"{p} already holds a vidlabel dataset; open it with Dataset.open", path=str(p)
                )
            if any(p.iterdir()):
                raise DatasetExistsError(
                    f"cannot create a dataset in {p}: the folder is not empty; choose a new or empty folder",
                    path=str(p),
                )
        p.mkdir(parents=True, exist_ok=True)
        tmp = p / f".{DB_NAME}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.executescript(_SCHEMA)
            con.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("format", _FORMAT),
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("created", _now()),
                    ("vidlabel_version", __version__),
                    ("next_annotation_id", "1"),
                    ("build_counter", "0"),
                ],
            )
        finally:
            con.close()
        try:
            os.link(tmp, p / DB_NAME)  # exclusive: two creators cannot both win
        except FileExistsError as err:
            raise DatasetExistsError(f"{p} already holds a vidlabel dataset", path=str(p)) from err
        except OSError:  # no hard links on this file system
            if (p / DB_NAME).exists():
                raise DatasetExistsError(f"{p} already holds a vidlabel dataset", path=str(p)) from None
            os.replace(tmp, p / DB_NAME)
        finally:
            tmp.unlink(missing_ok=True)
        con = sqlite3.connect(p / DB_NAME, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
        (p / "releases").mkdir(exist_ok=True)
        return cls(p)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Dataset:
        """Open an existing dataset folder (same as ``Dataset(path)``).

        Raises
        ------
        DatasetNotFoundError
            If the folder does not exist or holds no vidlabel dataset.
        SchemaVersionError
            If the dataset was written by a newer vidlabel.
        """
        return cls(path)

    @staticmethod
    def is_dataset(path: str | os.PathLike[str]) -> bool:
        """True if ``path`` is a folder holding a vidlabel database (not checked further)."""
        return (Path(path) / DB_NAME).is_file()

    @property
    def path(self) -> Path:
        """The dataset folder (absolute)."""
        return self._path

    def __repr__(self) -> str:
        return f"Dataset({str(self._path)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"path": str(self._path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path = Path(state["path"])
        self._local = _Local()
        self._releases = {}

    def close(self) -> None:
        """Close this thread's database connection (reopened on next use)."""
        con = self._local.con
        if con is not None and self._local.pid == os.getpid():
            con.close()
        self._local.con = None

    def _check(self) -> None:
        p = self._path
        if not p.exists():
            raise DatasetNotFoundError(
                f"no dataset at {p}: the folder does not exist (create one with Dataset.create or `vidlabel create`)",
                path=str(p),
            )
        if not p.is_dir():
            raise DatasetNotFoundError(f"{p} is a file, not a dataset folder", path=str(p))
        if not (p / DB_NAME).is_file():
            raise DatasetNotFoundError(f"{p} is not a vidlabel dataset (it has no {DB_NAME})", path=str(p))
        try:
            meta = dict(self._con().execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as err:
            raise DatasetNotFoundError(f"{p} is not a vidlabel dataset ({p / DB_NAME}: {err})", path=str(p)) from err
        if meta.get("format") != _FORMAT:
            raise DatasetNotFoundError(f"{p} is not a vidlabel dataset ({DB_NAME} has another format)", path=str(p))
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"dataset {p} has schema version {version}, written by a newer vidlabel; this vidlabel "
                f"({__version__}) reads up to version {SCHEMA_VERSION}. Upgrade vidlabel.",
                path=str(p),
            )

    def _con(self) -> sqlite3.Connection:
        loc = self._local
        pid = os.getpid()
        if loc.con is None or loc.pid != pid:
            if loc.con is not None:
                _ABANDONED.append(loc.con)  # inherited through fork: never touch it here
            con = sqlite3.connect(self._path / DB_NAME, timeout=120.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA busy_timeout = 120000")
            con.execute("PRAGMA synchronous = NORMAL")
            con.execute("PRAGMA journal_size_limit = 8388608")
            loc.con, loc.pid = con, pid
        return loc.con

    @contextmanager
    def _write(self, operation: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any exception."""
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
            if _before_commit is not None:
                _before_commit(operation)
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every SELECT inside sees the same state."""
        con = self._con()
        con.execute("BEGIN")
        try:
            yield con
        finally:
            if con.in_transaction:
                con.execute("COMMIT")

    # -- videos ----------------------------------------------------------------------------------

    @staticmethod
    def _video_record(meta: VideoMetadata) -> tuple[str, str | None, bytes | None, bytes | None]:
        d = video_dict(meta)
        fi = meta.frame_index
        if fi is None:
            return json.dumps(d), None, None, None
        head_dict: dict[str, Any] = {
            "timebase": dict(fi.timebase),
            "method": fi.method,
            "content_hash": fi.content_hash,
        }
        if fi.decoder_pts is not None:  # only for files whose decoder permutes the labels (see FrameIndex)
            head_dict["decoder_pts"] = fi.decoder_pts.tolist()
        head = json.dumps(head_dict)
        return json.dumps(d), head, pack_ints(fi.pts), pack_ints(fi.keyframes)

    @staticmethod
    def _video_from_record(metadata: str, head: str | None, pts: bytes | None, kf: bytes | None) -> VideoMetadata:
        meta = VideoMetadata.from_dict(json.loads(metadata))
        if head is None or pts is None or kf is None:
            return meta
        h = json.loads(head)
        fi = FrameIndex(
            timebase=h["timebase"],
            pts=unpack_ints(pts),
            keyframes=unpack_ints(kf),
            method=h["method"],
            content_hash=h["content_hash"],
            decoder_pts=h.get("decoder_pts"),
        )
        return meta.replace(frame_index=fi)

    @staticmethod
    def _as_meta(meta: VideoMetadata | Mapping[str, Any]) -> VideoMetadata:
        if isinstance(meta, VideoMetadata):
            return meta
        if isinstance(meta, Mapping):
            return VideoMetadata.from_dict(meta)
        raise TypeError(f"expected a VideoMetadata, got {type(meta).__name__}")

    def add_video(self, meta: VideoMetadata | Mapping[str, Any]) -> None:
        """Register a video: its metadata, content hash and frame index (if any).

        Parameters
        ----------
        meta : VideoMetadata
            (or a dict of its fields). ``frame_index`` is stored compactly.

        Raises
        ------
        DatasetError
            If a video with this id is already registered (use :meth:`update_video`).
        """
        meta = self._as_meta(meta)
        record = self._video_record(meta)
        with self._write("add_video") as con:
            try:
                con.execute(
                    "INSERT INTO videos (video_id, metadata, frame_index, index_pts, index_keyframes) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (meta.video_id, *record),
                )
            except sqlite3.IntegrityError as err:
                raise DatasetError(
                    f"video {meta.video_id!r} is already registered in {self._path}; use update_video to replace "
                    "its metadata",
                    video_id=meta.video_id,
                ) from err

    def update_video(self, meta: VideoMetadata | Mapping[str, Any]) -> None:
        """Replace the metadata (and frame index) of a registered video.

        Annotations are kept; ``validate()`` reports rows the new metadata no
        longer fits (``frame_out_of_range``, ``box_out_of_frame``).

        Raises
        ------
        UnknownVideoError
            If no video has this id.
        """
        meta = self._as_meta(meta)
        record = self._video_record(meta)
        with self._write("update_video") as con:
            cur = con.execute(
                "UPDATE videos SET metadata = ?, frame_index = ?, index_pts = ?, index_keyframes = ? "
                "WHERE video_id = ?",
                (*record, meta.video_id),
            )
            if cur.rowcount == 0:
                raise self._unknown_video(con, meta.video_id)

    def _unknown_video(self, con: sqlite3.Connection, video_id: Any) -> UnknownVideoError:
        known = [r[0] for r in con.execute("SELECT video_id FROM videos ORDER BY video_id")]
        shown = ", ".join(known[:20]) + (f", ... ({len(known)} in all)" if len(known) > 20 else "")
        return UnknownVideoError(
            f"unknown video {video_id!r} in dataset {self._path}; known: {shown or '(none)'}",
            video_id=str(video_id),
        )

    def videos(self) -> list[VideoMetadata]:
        """Every registered video, sorted by video id (with content hash and frame index)."""
        rows = (
            self._con()
            .execute("SELECT metadata, frame_index, index_pts, index_keyframes FROM videos ORDER BY video_id")
            .fetchall()
        )
        return [self._video_from_record(*r) for r in rows]

    def video(self, video_id: str) -> VideoMetadata:
        """The metadata of one video.

        Raises
        ------
        UnknownVideoError
            If no video has this id; the message lists the known ids.
        """
        con = self._con()
        row = con.execute(
            "SELECT metadata, frame_index, index_pts, index_keyframes FROM videos WHERE video_id = ?", (video_id,)
        ).fetchone()
        if row is None:
            raise self._unknown_video(con, video_id)
        return self._video_from_record(*row)

    # -- labels and views ------------------------------------------------------------------------

    def add_labels(self, names: Iterable[str] | str) -> list[str]:
        """Append labels to the vocabulary, keeping order; names already there are left in place.

        Parameters
        ----------
        names : iterable of str (or one str)

        Returns
        -------
        list of str
            The whole vocabulary; a label's class index is its position.

        Raises
        ------
        AnnotationError
            If a name is not a non-empty string.
        """
        items = [names] if isinstance(names, str) else list(names)
        for i, name in enumerate(items):
            if not isinstance(name, str) or not name or name != name.strip():
                raise AnnotationError(
                    f"label {i} is {name!r}; allowed: a non-empty string without leading or trailing spaces"
                )
        with self._write("add_labels") as con:
            have = [r[0] for r in con.execute("SELECT name FROM labels ORDER BY code")]
            known = set(have)
            for name in items:
                if name not in known:
                    con.execute("INSERT INTO labels (code, name) VALUES (?, ?)", (len(have), name))
                    have.append(name)
                    known.add(name)
        return have

    def labels(self) -> list[str]:
        """The label vocabulary in order (a label's class index is its position)."""
        return [r[0] for r in self._con().execute("SELECT name FROM labels ORDER BY code")]

    def add_view(
        self,
        view_id: str,
        crop: tuple[int, int, int, int],
        output_size: tuple[int, int] | None = None,
    ) -> View:
        """Add a view: a named crop ``(x0, y0, x1, y1)`` of the full frame, optionally resized to ``(w, h)``.

        Adding the same view again is a no-op.

        Returns
        -------
        View

        Raises
        ------
        AnnotationError
            If the crop or size is invalid, or a different view has this id.
        """
        view = View(view_id, crop, output_size)
        with self._write("add_view") as con:
            row = con.execute(
                "SELECT x0, y0, x1, y1, out_w, out_h FROM views WHERE view_id = ?", (view.view_id,)
            ).fetchone()
            if row is not None:
                old = View(view.view_id, row[:4], row[4:] if row[4] is not None else None)
                if old != view:
                    raise AnnotationError(
                        f"view {view.view_id!r} already exists with crop {old.crop} and output_size "
                        f"{old.output_size}; a view cannot change (add a view with a new id)"
                    )
                return old
            out = view.output_size or (None, None)
            con.execute(
                "INSERT INTO views (view_id, x0, y0, x1, y1, out_w, out_h) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (view.view_id, *view.crop, *out),
            )
        return view

    @staticmethod
    def _view_rows(con: sqlite3.Connection) -> dict[str, tuple[int, View]]:
        out = {}
        for code, vid, x0, y0, x1, y1, w, h in con.execute(
            "SELECT code, view_id, x0, y0, x1, y1, out_w, out_h FROM views ORDER BY view_id"
        ):
            out[vid] = (code, View(vid, (x0, y0, x1, y1), (w, h) if w is not None else None))
        return out

    def views(self) -> dict[str, View]:
        """Every view, by view id (sorted)."""
        return {k: v for k, (_, v) in self._view_rows(self._con()).items()}

    # -- annotations -----------------------------------------------------------------------------

    def add_annotations(self, rows: Iterable[Mapping[str, Any]], video_id: str, *, clip: bool = False) -> list[int]:
        """Validate and add a batch of annotation rows of one video, all or nothing.

        Parameters
        ----------
        rows : iterable of dict
            The spec's rows: ``kind`` ("box", "mask", "marker"), ``label``,
            ``start_frame``, ``end_frame`` (markers; inclusive), ``box``
            ((x0, y0, x1, y1) full-frame pixel corners), ``mask`` ((H, W) array
            or COCO RLE dict, full frame or the view's crop; its bbox becomes
            the box), ``track_id``, ``origin`` ("human" by default or
            "model"), ``confidence`` in [0, 1], ``status`` ("unreviewed" by
            default, "approved", "rejected"), ``view_id``. See
            :func:`vidlabel.validate.check_rows`.
        video_id : str
        clip : bool
            Clip boxes that leave the frame instead of refusing the batch.

        Returns
        -------
        list of int
            The new annotation ids, in row order (ids are never reused).

        Raises
        ------
        UnknownVideoError
            If the video is not registered.
        AnnotationError
            If any row is invalid (the error names row, field, value and what
            is allowed), or a track id already has another label in this
            video. Nothing is written.
        """
        rows = list(rows)
        with self._write("add_annotations") as con:
            row = con.execute("SELECT code, metadata FROM videos WHERE video_id = ?", (video_id,)).fetchone()
            if row is None:
                raise self._unknown_video(con, video_id)
            vcode, metadata = row
            meta = VideoMetadata.from_dict(json.loads(metadata))
            labels = [r[0] for r in con.execute("SELECT name FROM labels ORDER BY code")]
            cols = check_rows(rows, video=meta, labels=labels, views=self._view_rows(con), clip=clip)
            n = len(cols)
            if n == 0:
                return []
            tsel = cols.track_id >= 0
            if tsel.any():
                stored = dict(con.execute("SELECT track_id, label FROM tracks WHERE video = ?", (vcode,)).fetchall())
                check_tracks(cols, stored, labels=labels, video_id=video_id)
                pairs = sorted(set(zip(cols.track_id[tsel].tolist(), cols.label[tsel].tolist())))
                con.executemany(
                    "INSERT OR IGNORE INTO tracks (video, track_id, label) VALUES (?, ?, ?)",
                    [(vcode, t, lab) for t, lab in pairs],
                )
            first = int(con.execute("SELECT value FROM meta WHERE key = 'next_annotation_id'").fetchone()[0])
            ids = np.arange(first, first + n, dtype=np.int64)
            con.execute("UPDATE meta SET value = ? WHERE key = 'next_annotation_id'", (str(first + n),))
            self._append(con, vcode, cols_from_rows(ids, cols))
        return ids.tolist()

    @staticmethod
    def _chunk_params(cols: Cols) -> tuple[int, int, int, int, int, bytes]:
        return (
            int(cols["annotation_id"].shape[0]),
            int(cols["annotation_id"].min()),
            int(cols["annotation_id"].max()),
            int(cols["start_frame"].min()),
            int(cols["end_frame"].max()),
            encode_chunk(cols),
        )

    def _append(self, con: sqlite3.Connection, vcode: int, cols: Cols) -> None:
        n = int(cols["annotation_id"].shape[0])
        pos = 0
        last = con.execute(
            "SELECT chunk, n_rows FROM chunks WHERE video = ? ORDER BY chunk DESC LIMIT 1", (vcode,)
        ).fetchone()
        if last is not None and last[1] < CHUNK_ROWS:
            # Top up the video's last chunk so that many small batches do not make many tiny chunks.
            pos = min(n, CHUNK_ROWS - last[1])
            (blob,) = con.execute("SELECT data FROM chunks WHERE chunk = ?", (last[0],)).fetchone()
            merged = concat([decode_chunk(blob), take(cols, np.arange(pos))])
            con.execute(
                "UPDATE chunks SET n_rows = ?, min_id = ?, max_id = ?, min_frame = ?, max_frame = ?, data = ? "
                "WHERE chunk = ?",
                (*self._chunk_params(merged), last[0]),
            )
        params = []
        while pos < n:
            part = take(cols, np.arange(pos, min(n, pos + CHUNK_ROWS)))
            params.append((vcode, *self._chunk_params(part)))
            pos += CHUNK_ROWS
        con.executemany(
            "INSERT INTO chunks (video, n_rows, min_id, max_id, min_frame, max_frame, data) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            params,
        )

    def _edit(self, ids: Iterable[int], operation: str, change: Callable[[Cols, np.ndarray], Cols | None]) -> None:
        """Apply ``change(cols, hit)`` to every chunk holding some of ``ids``; all ids must exist."""
        try:
            wanted = np.unique(np.fromiter((int(i) for i in ids), np.int64))
        except (TypeError, ValueError) as err:
            raise AnnotationError(f"{operation}: ids must be integers ({err})") from err
        if wanted.size == 0:
            return
        with self._write(operation) as con:
            meta = np.array(con.execute("SELECT chunk, min_id, max_id, video FROM chunks").fetchall(), np.int64)
            meta = meta.reshape(-1, 4)
            lo = np.searchsorted(wanted, meta[:, 1], side="left")
            hi = np.searchsorted(wanted, meta[:, 2], side="right")
            found: list[np.ndarray] = []
            touched: set[int] = set()
            for chunk, vcode in meta[hi > lo][:, [0, 3]].tolist():
                (blob,) = con.execute("SELECT data FROM chunks WHERE chunk = ?", (chunk,)).fetchone()
                cols = decode_chunk(blob)
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
                        (*self._chunk_params(new), chunk),
                    )
            got = np.concatenate(found) if found else np.zeros(0, np.int64)
            missing = np.setdiff1d(wanted, got)
            if missing.size:
                shown = ", ".join(map(str, missing[:10].tolist())) + (" ..." if missing.size > 10 else "")
                raise AnnotationError(
                    f"{operation}: {missing.size} unknown annotation id(s): {shown}; nothing was changed"
                )
            if operation == "delete_annotations":
                for vcode in sorted(touched):
                    self._rebuild_tracks(con, vcode)

    @staticmethod
    def _rebuild_tracks(con: sqlite3.Connection, vcode: int) -> None:
        con.execute("DELETE FROM tracks WHERE video = ?", (vcode,))
        pairs: set[tuple[int, int]] = set()
        for (blob,) in con.execute("SELECT data FROM chunks WHERE video = ?", (vcode,)).fetchall():
            c = decode_chunk(blob)
            sel = c["track_id"] >= 0
            pairs.update(zip(c["track_id"][sel].tolist(), c["label"][sel].tolist()))
        con.executemany(
            "INSERT OR IGNORE INTO tracks (video, track_id, label) VALUES (?, ?, ?)",
            [(vcode, t, lab) for t, lab in sorted(pairs)],
        )

    def set_status(self, ids: Iterable[int], status: str) -> None:
        """Set the review status of annotations (one transaction).

        Parameters
        ----------
        ids : iterable of int
        status : {"unreviewed", "approved", "rejected"}

        Raises
        ------
        AnnotationError
            On an unknown status or an unknown id; nothing is changed.
        """
        if status not in STATUSES:
            raise AnnotationError(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
        code = STATUSES.index(status)

        def change(cols: Cols, hit: np.ndarray) -> Cols:
            out = dict(cols)
            out["status"] = np.where(hit, code, cols["status"]).astype(np.uint8)
            return out

        self._edit(ids, "set_status", change)

    def delete_annotations(self, ids: Iterable[int]) -> None:
        """Delete annotations (one transaction); their ids are never reused.

        Raises
        ------
        AnnotationError
            On an unknown id; nothing is deleted.
        """
        self._edit(ids, "delete_annotations", lambda cols, hit: take(cols, np.flatnonzero(~hit)))

    def _load(
        self,
        con: sqlite3.Connection,
        *,
        video_code: int | None = None,
        start: int | None = None,
        stop: int | None = None,
    ) -> tuple[Cols, np.ndarray]:
        """(columns, video code per row) of the chunks that may match, concatenated in chunk order."""
        sql = "SELECT video, data FROM chunks"
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
        for vcode, blob in con.execute(sql + " ORDER BY chunk", params):
            c = decode_chunk(blob)
            parts.append(c)
            vcodes.append(np.full(c["annotation_id"].shape[0], vcode, np.int64))
        if not parts:
            return empty_cols(), np.zeros(0, np.int64)
        return concat(parts), np.concatenate(vcodes)

    def annotations(
        self,
        video_id: str | None = None,
        *,
        start: int | None = None,
        stop: int | None = None,
        label: str | None = None,
        kind: str | None = None,
    ) -> list[dict[str, Any]]:
        """Query stored rows (every status), sorted by annotation id.

        Parameters
        ----------
        video_id : str, optional
            Only this video.
        start, stop : int, optional
            Only rows that touch frames ``[start, stop)`` (half-open; a
            marker touches ``start_frame..end_frame`` inclusive).
        label : str, optional
        kind : {"box", "mask", "marker"}, optional

        Returns
        -------
        list of dict
            ``annotation_id``, ``video_id``, ``kind``, ``label``, ``start_frame``,
            ``end_frame``, ``box`` (tuple of 4 floats or None), ``mask`` (COCO
            RLE dict or None), ``track_id`` (None when absent), ``origin``,
            ``confidence`` (None when absent), ``status``, ``view_id``.

        Raises
        ------
        UnknownVideoError, AnnotationError
            On an unknown video, label or kind.
        """
        if kind is not None and kind not in KINDS:
            raise AnnotationError(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
        with self._read() as con:
            video_names = dict(con.execute("SELECT code, video_id FROM videos").fetchall())
            vcode = None
            if video_id is not None:
                found = [c for c, v in video_names.items() if v == video_id]
                if not found:
                    raise self._unknown_video(con, video_id)
                vcode = found[0]
            labels = [r[0] for r in con.execute("SELECT name FROM labels ORDER BY code")]
            view_names = {code: vid for vid, (code, _) in self._view_rows(con).items()}
            cols, vcodes = self._load(con, video_code=vcode, start=start, stop=stop)
        keep = np.ones(cols["annotation_id"].shape[0], bool)
        if start is not None:
            keep &= cols["end_frame"] >= start
        if stop is not None:
            keep &= cols["start_frame"] < stop
        if label is not None:
            if label not in labels:
                raise AnnotationError(f"unknown label {label!r}; known: {', '.join(labels) or '(none)'}")
            keep &= cols["label"] == labels.index(label)
        if kind is not None:
            keep &= cols["kind"] == KINDS.index(kind)
        rows = np.flatnonzero(keep)
        rows = rows[np.argsort(cols["annotation_id"][rows], kind="stable")]
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
        return out

    # -- snapshots, validation, releases ---------------------------------------------------------

    def snapshot(self, *, statuses: Sequence[str] = _LIVE_STATUSES) -> Release:
        """The live annotations as an unpinned :class:`Release` (``release_id`` None).

        Parameters
        ----------
        statuses : sequence of str
            Review statuses to include (default: unreviewed and approved).

        Returns
        -------
        Release
            Labels, views, every video (with frame index) and the selected
            rows as an ``AnnotationTable`` sorted by annotation id. It can
            change between calls; ``build()`` pins one.
        """
        bad = [s for s in statuses if s not in STATUSES]
        if bad:
            raise AnnotationError(f"unknown status(es) {bad}; allowed: {', '.join(STATUSES)}")
        with self._read() as con:
            labels = tuple(r[0] for r in con.execute("SELECT name FROM labels ORDER BY code"))
            view_rows = self._view_rows(con)
            video_rows = con.execute(
                "SELECT code, video_id, metadata, frame_index, index_pts, index_keyframes FROM videos"
            ).fetchall()
            cols, vcodes = self._load(con)
        videos = {r[1]: self._video_from_record(*r[2:]) for r in sorted(video_rows, key=lambda r: r[1])}
        video_ids = tuple(videos)
        view_ids = tuple(sorted(view_rows))
        # Database codes -> positions in the sorted id tuples of the table.
        video_pos = {v: i for i, v in enumerate(video_ids)}
        video_map = np.full(max([r[0] for r in video_rows], default=0) + 1, -1, np.int32)
        for r in video_rows:
            video_map[r[0]] = video_pos[r[1]]
        view_map = np.full(max([c for c, _ in view_rows.values()], default=0) + 2, -1, np.int32)
        for pos, vid in enumerate(view_ids):
            view_map[view_rows[vid][0]] = pos
        codes = [STATUSES.index(s) for s in statuses]
        keep = np.isin(cols["status"], codes)
        ids = cols["annotation_id"]
        if keep.all() and (ids.size < 2 or bool(np.all(ids[1:] > ids[:-1]))):
            sel = None
        else:
            rows = np.flatnonzero(keep)
            sel = rows[np.argsort(ids[rows], kind="stable")]
        if sel is not None:
            cols = take(cols, sel)
            vcodes = vcodes[sel]
        view_col = cols["view"]
        table = AnnotationTable(
            labels=labels,
            video_ids=video_ids,
            view_ids=view_ids,
            annotation_id=cols["annotation_id"],
            video=video_map[vcodes] if vcodes.size else np.zeros(0, np.int32),
            kind=cols["kind"],
            label=cols["label"],
            start_frame=cols["start_frame"],
            end_frame=cols["end_frame"],
            box=cols["box"],
            track_id=cols["track_id"],
            origin=cols["origin"],
            confidence=cols["confidence"],
            status=cols["status"],
            view=np.where(view_col >= 0, view_map[view_col], -1),
            mask_offsets=cols["mask_offsets"],
            mask_counts=cols["mask_counts"],
            mask_size=cols["mask_size"],
        )
        return Release(
            release_id=None,
            created=_now(),
            labels=labels,
            views={k: v for k, (_, v) in view_rows.items()},
            videos=videos,
            table=table,
            info={
                "dataset": str(self._path),
                "statuses": list(statuses),
                "rows": len(table),
                "vidlabel_version": __version__,
                "schema_version": SCHEMA_VERSION,
            },
        )

    def validate(self, *, check_files: bool = True) -> list[Problem]:
        """Check the live unreviewed and approved rows, the videos and the views.

        Parameters
        ----------
        check_files : bool
            Report ``missing_video_file`` (``os.path.exists`` only; files are never hashed).

        Returns
        -------
        list of Problem
            With stable codes and severities (``vidlabel.validate.PROBLEM_CODES``);
            ``build()`` refuses while any has severity ``"error"``.
        """
        return self._validate(self.snapshot(), check_files=check_files)

    def _validate(self, rel: Release, *, check_files: bool = True) -> list[Problem]:
        return validate_table(rel.table, rel.videos, rel.views, check_files=check_files, base=self._path)

    def build(self) -> tuple[Release, BuildReport]:
        """Pin an immutable release of the live unreviewed and approved annotations.

        The id is derived from the content (labels, views, videos with their
        content hashes and frame indexes, annotation rows): building the same
        content again returns the existing release and writes nothing. The
        release file is written under a temporary name and linked into place.

        Returns
        -------
        (Release, BuildReport)

        Raises
        ------
        BuildError
            If ``validate()`` finds problems of severity "error"; nothing is written.
        """
        t0 = time.perf_counter()
        rel = self.snapshot()
        problems = self._validate(rel)
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            shown = "; ".join(str(p) for p in errors[:3])
            raise BuildError(
                f"build of {self._path} refused: validate() found {len(errors)} error(s): {shown}"
                + (" ..." if len(errors) > 3 else "")
                + " (run `vidlabel validate` for the full list)",
                path=str(self._path),
            )
        rid = release_id_of(rel.labels, rel.views, rel.videos, rel.table)
        path = self._path / "releases" / f"{rid}.h5"
        existing = self._con().execute("SELECT created FROM releases WHERE release_id = ?", (rid,)).fetchone()
        created = existing[0] if existing else rel.created
        rel = dataclasses.replace(rel, release_id=rid, created=created, info={**rel.info, "counts": rel.counts()})
        wrote = False
        if not path.exists():
            wrote = write_release(rel, path)
        if not wrote:
            # The file is the truth: another build of this content (maybe in another process) wrote it first.
            rel = dataclasses.replace(rel, created=release_created(path))
            created = rel.created
        with self._write("build") as con:
            counter = int(con.execute("SELECT value FROM meta WHERE key = 'build_counter'").fetchone()[0]) + 1
            con.execute("UPDATE meta SET value = ? WHERE key = 'build_counter'", (str(counter),))
            cur = con.execute(
                "INSERT OR IGNORE INTO releases (release_id, created, n_rows, last_built) VALUES (?, ?, ?, ?)",
                (rid, created, len(rel.table), counter),
            )
            new = cur.rowcount == 1
            if not new:
                con.execute("UPDATE releases SET last_built = ? WHERE release_id = ?", (counter, rid))
        if new or wrote:
            self._releases.pop(rid, None)
        report = BuildReport(
            release_id=rid,
            new=new,
            rows=len(rel.table),
            counts=rel.counts(),
            warnings=tuple(p for p in problems if p.severity == "warning"),
            path=str(path),
            seconds=time.perf_counter() - t0,
        )
        return copy_release(rel), report

    def releases(self) -> list[str]:
        """Release ids, oldest first."""
        return [r[0] for r in self._con().execute("SELECT release_id FROM releases ORDER BY seq")]

    def release_records(self) -> list[dict[str, Any]]:
        """One dict per release, oldest first: ``release_id``, ``created``, ``rows``, ``latest`` (bool)."""
        rows = (
            self._con().execute("SELECT release_id, created, n_rows, last_built FROM releases ORDER BY seq").fetchall()
        )
        newest = max((r[3] for r in rows), default=None)
        return [{"release_id": r[0], "created": r[1], "rows": r[2], "latest": r[3] == newest} for r in rows]

    def release(self, release_id: str | None = "latest") -> Release:
        """A frozen release, loaded from its file (columnar; a million rows load in a fraction of a second).

        Parameters
        ----------
        release_id : str or None
            A release id, ``"latest"`` (the release most recently returned by
            ``build()``), or None for :meth:`snapshot` of the live rows.

        Returns
        -------
        Release

        Raises
        ------
        ReleaseNotFoundError
            If the id is unknown, or ``"latest"`` is asked of a dataset with no
            release; the message lists the known ids.
        """
        if release_id is None:
            return self.snapshot()
        con = self._con()
        if release_id == "latest":
            row = con.execute("SELECT release_id FROM releases ORDER BY last_built DESC LIMIT 1").fetchone()
            if row is None:
                raise ReleaseNotFoundError(
                    f"dataset {self._path} has no release yet; pin one with build() or `vidlabel build`",
                    path=str(self._path),
                )
            release_id = str(row[0])
        if release_id not in self._releases:
            known = self.releases()
            if release_id not in known:
                raise ReleaseNotFoundError(
                    f"unknown release {release_id!r} in dataset {self._path}; known: "
                    f"{', '.join(known) or '(none)'} (or 'latest')",
                    path=str(self._path),
                )
            path = self._path / "releases" / f"{release_id}.h5"
            if not path.is_file():
                raise ReleaseNotFoundError(
                    f"release {release_id!r} is recorded in {self._path} but its file {path} is missing",
                    path=str(path),
                )
            self._releases[release_id] = read_release(path)
        return copy_release(self._releases[release_id])

    def summary(self) -> dict[str, Any]:
        """Counts for people and logs: videos, labels, views, annotations by kind and status, releases."""
        snap = self.snapshot(statuses=STATUSES)
        t = snap.table
        by_status = np.bincount(t.status, minlength=len(STATUSES))
        return {
            "path": str(self._path),
            "videos": len(snap.videos),
            "labels": list(snap.labels),
            "views": sorted(snap.views),
            "annotations": len(t),
            "by_kind": snap.counts(),
            "by_status": {s: int(by_status[i]) for i, s in enumerate(STATUSES)},
            "releases": self.releases(),
        }
