"""The SQLite layer under :class:`~vidlabel.dataset.Dataset`: schema, connections, transactions, records.

One database file per dataset folder (``vidlabel.sqlite``, WAL mode). This
module creates and checks it, opens one connection per process and thread
(read-only where the folder or the file is not writable, see
:func:`open_mode`)
(a connection inherited through fork is never used or closed by the child),
runs read and write transactions, and encodes videos (metadata JSON plus a
compact frame index) and views as table rows. Annotations live in the
``chunks`` table (see :mod:`vidlabel.dataset._annotations`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vidlabel._version import __version__
from vidlabel.dataset._chunks import pack_ints, unpack_ints
from vidlabel.dataset._release import index_dict, index_from_dict, video_dict
from vidlabel.dataset._rows import listing
from vidlabel.errors import (
    AnnotationError,
    DatasetError,
    DatasetExistsError,
    DatasetNotFoundError,
    SchemaVersionError,
    UnknownVideoError,
)
from vidlabel.spec import DB_NAME, VideoMetadata, View

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "LocalConnection",
    "as_meta",
    "attribute_schema",
    "check_database",
    "create_database",
    "damaged_message",
    "fetch_views",
    "is_disk_full",
    "label_names",
    "now",
    "open_mode",
    "read_transaction",
    "unknown_video",
    "meta_from_record",
    "record_json",
    "set_attribute_schema",
    "video_from_record",
    "video_record",
    "writable",
    "write_failure",
    "write_transaction",
]

#: Version of the SQLite schema this vidlabel reads up to; a dataset with a newer one is refused. A dataset is
#: created at version 1 and moves to 2 when it is given an attribute schema (its chunks may then hold attributes,
#: format VLC2, which a vidlabel reading version 1 cannot read: it refuses the dataset, saying to upgrade).
SCHEMA_VERSION = 2
_CREATED_VERSION = 1
_FORMAT = "vidlabel-dataset"

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

# Connections inherited through fork are never used or closed by the child.
_ABANDONED: list[sqlite3.Connection] = []


def now() -> str:
    """The current UTC time as ISO 8601 seconds with a ``Z`` suffix."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------------
# The database file
# --------------------------------------------------------------------------------------------------


def create_database(folder: Path) -> None:
    """Write a new, empty database into ``folder`` (which exists), exclusively, and switch it to WAL.

    Raises
    ------
    DatasetExistsError
        If another creator put a database there first.
    """
    p = folder
    tmp = p / f".{DB_NAME}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.executescript(_SCHEMA)
        con.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("format", _FORMAT),
                ("schema_version", str(_CREATED_VERSION)),
                ("created", now()),
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


def is_disk_full(err: BaseException) -> bool:
    """Whether an SQLite or OS error says the disk is full (SQLITE_FULL, ENOSPC, or an I/O error while writing)."""
    import errno

    text = str(err).lower()
    return (
        getattr(err, "errno", None) == errno.ENOSPC
        or "disk is full" in text
        or "no space left" in text
        or "errno = 28" in text
        or getattr(err, "sqlite_errorname", "") == "SQLITE_FULL"
    )


def _cannot_open(err: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed to open or read the file itself (I/O, a full disk, locks), not found another schema."""
    text = str(err).lower()
    return is_disk_full(err) or any(w in text for w in ("i/o", "unable to open", "locking", "readonly", "read-only"))


def damaged_message(p: Path, err: BaseException) -> str:
    """The explanation of a damaged database file."""
    return (
        f"the database of dataset {p} is damaged ({p / DB_NAME}: {err}); nothing was changed. Restore "
        f"{DB_NAME} from a backup (`sqlite3 {p / DB_NAME} .recover` may save its rows); release files under "
        f"{p / 'releases'} are checked on their own and can still be read"
    )


def write_failure(p: Path, operation: str, err: sqlite3.Error) -> str:
    """The explanation of a write transaction SQLite could not complete: what failed, that nothing was lost, what to do."""
    what = operation.replace("_", "-")
    if is_disk_full(err) or "disk i/o error" in str(err).lower():
        cause = "the disk is full" if is_disk_full(err) else "a disk I/O error (a full disk gives this too)"
        return (
            f"cannot {what} in dataset {p}: {cause} ({err}). Nothing was lost: the change was rolled back "
            "and the dataset is as it was before the command; free space and run the same command again"
        )
    if "malformed" in str(err):
        return damaged_message(p, err)
    return (
        f"cannot {what} in dataset {p}: SQLite could not write {p / DB_NAME} ({err}). Nothing was lost: the "
        "change was rolled back; run the same command again once the cause is fixed"
    )


def check_database(p: Path, connect: Callable[[], sqlite3.Connection]) -> None:
    """Check that folder ``p`` holds a vidlabel database this vidlabel can read.

    Raises
    ------
    DatasetNotFoundError
        If the folder does not exist or holds no vidlabel dataset.
    SchemaVersionError
        If the dataset was written by a newer vidlabel.
    DatasetError
        If its recorded schema version is not a whole number (an edited or damaged database).
    """
    _check_folder(p)
    meta = _read_meta(p, connect)
    if meta.get("format") != _FORMAT:
        raise DatasetNotFoundError(f"{p} is not a vidlabel dataset ({DB_NAME} has another format)", path=str(p))
    text = meta.get("schema_version", "0")
    if not text.isdecimal():  # int() would raise a bare ValueError ("1.1", "abc", "")
        raise DatasetError(
            f"dataset {p} records schema version {text!r}, which is not a whole number: its {DB_NAME} was edited or "
            f"damaged; this vidlabel ({__version__}) reads versions up to {SCHEMA_VERSION}. Restore {DB_NAME} from a "
            "backup",
            path=str(p),
        )
    version = int(text)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"dataset {p} has schema version {version}, written by a newer vidlabel; this vidlabel "
            f"({__version__}) reads up to version {SCHEMA_VERSION}. Upgrade vidlabel.",
            path=str(p),
        )


def _check_folder(p: Path) -> None:
    """Refuse a folder that does not exist, a file, and a folder without the database file.

    Raises
    ------
    DatasetNotFoundError
        Naming what ``p`` is instead (a frame store folder is said to be one).
    """
    if not p.exists():
        raise DatasetNotFoundError(
            f"no dataset at {p}: the folder does not exist (create one with Dataset.create or `vidlabel create`)",
            path=str(p),
        )
    if not p.is_dir():
        raise DatasetNotFoundError(f"{p} is a file, not a dataset folder", path=str(p))
    if not (p / DB_NAME).is_file():
        root = next((n for n in ("store.h5", "zarr.json") if (p / n).is_file()), None)
        hint = (
            f": it holds {root}, as a frame store does: read it with vidlabel.open_store or StoreFrames, and open the "
            "dataset it was exported from with Dataset.open"
            if root
            else ""
        )
        raise DatasetNotFoundError(f"{p} is not a vidlabel dataset (it has no {DB_NAME}){hint}", path=str(p))


def _read_meta(p: Path, connect: Callable[[], sqlite3.Connection]) -> dict[str, str]:
    """The ``meta`` table of the database in ``p``, key to value.

    Raises
    ------
    DatasetNotFoundError
        If the file is another SQLite database, or no SQLite database.
    DatasetError
        If SQLite cannot open or read it (:func:`_cannot_read`), or it is malformed.
    """
    try:
        return dict(connect().execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as err:
        if not _cannot_open(err):  # e.g. "no such table: meta": another SQLite database
            raise DatasetNotFoundError(f"{p} is not a vidlabel dataset ({p / DB_NAME}: {err})", path=str(p)) from err
        raise _cannot_read(p, err) from err
    except sqlite3.DatabaseError as err:
        if "malformed" in str(err):
            raise DatasetError(damaged_message(p, err), path=str(p)) from err
        raise DatasetNotFoundError(f"{p} is not a vidlabel dataset ({p / DB_NAME}: {err})", path=str(p)) from err


def _cannot_read(p: Path, err: sqlite3.OperationalError) -> DatasetError:
    """The error for a database SQLite cannot open: a write-ahead log it cannot read in a read-only folder,
    a full disk, or else the disk or the permissions."""
    wal, shm = (p / DB_NAME).with_name(DB_NAME + "-wal"), (p / DB_NAME).with_name(DB_NAME + "-shm")
    # SQLite reads a write-ahead log only through its index file, which it cannot make in a read-only folder.
    if not writable(p) and wal.is_file() and wal.stat().st_size > 0 and not shm.exists():
        return DatasetError(
            f"cannot read dataset {p}: it holds a write-ahead log ({wal.name}, {wal.stat().st_size} bytes: writes "
            f"not yet folded into {DB_NAME}) without its index file ({shm.name}), and the folder is read-only, "
            f"so SQLite cannot make one. Nothing was changed; open the dataset once where it is writable (any "
            f"command, e.g. `vidlabel info`), which folds the log in, then copy or mount it read-only",
            path=str(p),
        )
    return DatasetError(
        f"cannot read dataset {p}: SQLite could not open {p / DB_NAME} ({err}"
        f"{'; the disk is full' if is_disk_full(err) else ''}). Nothing was changed; "
        + (
            "free space and run the command again"
            if is_disk_full(err)
            else "if the disk is full, free space and run the command again; else check the disk and the permissions"
        ),
        path=str(p),
    )


# --------------------------------------------------------------------------------------------------
# Connections and transactions
# --------------------------------------------------------------------------------------------------


def writable(path: Path) -> bool:
    """Whether this process may write ``path`` (``os.access``; False on a read-only mount, even for root)."""
    return os.access(path, os.W_OK)


def open_mode(db_path: Path) -> str:
    """How to open a dataset's database: ``"rw"``, ``"ro"`` or ``"immutable"``.

    ``"rw"`` when the folder and the file are writable. Otherwise read-only
    (SQLite ``mode=ro``), and also ``immutable=1`` when the folder is not
    writable (a read-only mount: SQLite could create neither its shared-memory
    file nor a lock), unless a write-ahead log is left beside the database
    (its transactions would be missed): then plain ``mode=ro``, which SQLite
    can open only if the log's index file is there.
    """
    folder = db_path.parent
    if writable(folder) and writable(db_path):
        return "rw"
    wal = db_path.with_name(db_path.name + "-wal")
    if not writable(folder) and not (wal.exists() and wal.stat().st_size > 0):
        return "immutable"
    return "ro"


class LocalConnection(threading.local):
    """The connection of this process and thread to one database, opened on first use.

    ``mode`` is how it was opened (:func:`open_mode`).
    """

    con: sqlite3.Connection | None = None
    pid: int = -1
    mode: str = "rw"
    batch: bool = False  # inside Dataset._one_write: writes join its transaction

    def get(self, db_path: Path) -> sqlite3.Connection:
        """This thread's connection, opened afresh in a new process (the inherited one is abandoned)."""
        pid = os.getpid()
        if self.con is None or self.pid != pid:
            if self.con is not None:
                _ABANDONED.append(self.con)  # inherited through fork: never touch it here
            self.mode = open_mode(db_path)
            if self.mode == "rw":
                con = sqlite3.connect(db_path, timeout=120.0, isolation_level=None, check_same_thread=False)
            else:
                query = "mode=ro&immutable=1" if self.mode == "immutable" else "mode=ro"
                uri = f"{db_path.absolute().as_uri()}?{query}"
                con = sqlite3.connect(uri, uri=True, timeout=120.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA busy_timeout = 120000")
            if self.mode == "rw":
                con.execute("PRAGMA synchronous = NORMAL")
                con.execute("PRAGMA journal_size_limit = 8388608")
            self.con, self.pid = con, pid
        return self.con

    def close(self) -> None:
        """Close this thread's connection if this process opened it (reopened on next use)."""
        con = self.con
        if con is not None and self.pid == os.getpid():
            con.close()
        self.con = None


@contextmanager
def write_transaction(
    con: sqlite3.Connection, operation: str, before_commit: Callable[[str], None] | None = None
) -> Iterator[sqlite3.Connection]:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any exception.

    ``before_commit(operation)``, when given, runs inside it just before COMMIT (a test hook).
    """
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
        if before_commit is not None:
            before_commit(operation)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise


@contextmanager
def read_transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction: every SELECT inside sees the same state."""
    con.execute("BEGIN")
    try:
        yield con
    finally:
        if con.in_transaction:
            con.execute("COMMIT")


# --------------------------------------------------------------------------------------------------
# Records: videos, labels, views
# --------------------------------------------------------------------------------------------------


def video_record(meta: VideoMetadata) -> tuple[str, str | None, bytes | None, bytes | None]:
    """The ``videos`` columns of a video: metadata JSON, frame index head JSON, packed pts and keyframes."""
    d = video_dict(meta)
    fi = meta.frame_index
    if fi is None:
        return json.dumps(d), None, None, None
    return json.dumps(d), json.dumps(index_dict(fi)), pack_ints(fi.pts), pack_ints(fi.keyframes)


def video_from_record(
    metadata: str, head: str | None, pts: bytes | None, kf: bytes | None, *, where: str = DB_NAME
) -> VideoMetadata:
    """The inverse of :func:`video_record`.

    Raises
    ------
    DatasetError
        If the record is not what :func:`video_record` writes (text that is not a JSON object, JSON nested
        thousands deep, a field of the wrong type or out of range, packed integers that are not zlib data),
        naming ``where`` (the database file), the video id and the field.
    """
    meta = meta_from_record(metadata, where)
    if head is None or pts is None or kf is None:
        return meta
    what = f"the frame index of video {meta.video_id!r}"
    try:
        pts_values, kf_values = unpack_ints(pts), unpack_ints(kf)
    except (zlib.error, TypeError, ValueError) as err:
        raise _damaged_video(what, where, meta.video_id, err) from err
    index = record_json(head, what, where)
    try:
        return meta.replace(frame_index=index_from_dict(index, pts_values, kf_values))
    except (KeyError, TypeError, ValueError) as err:  # ValueError: AnnotationError of a field of the wrong type
        raise _damaged_video(what, where, meta.video_id, err) from err


def meta_from_record(metadata: Any, where: str, video_id: str | None = None) -> VideoMetadata:
    """The VideoMetadata of a ``videos`` record's metadata JSON (``video_id``, if known, for the message).

    Raises
    ------
    DatasetError
        If it is not a JSON object, or a field has the wrong type or is out of range (the file was edited or
        damaged: a value ``add_video`` would have refused), naming ``where`` (the database file), the video id
        and the field.
    """
    what = "a video's metadata" if video_id is None else f"the metadata of video {video_id!r}"
    fields = record_json(metadata, what, where)
    try:
        return VideoMetadata.from_dict(fields)
    except (TypeError, ValueError) as err:  # ValueError: the AnnotationError naming the field
        vid = fields.get("video_id")
        vid = vid if isinstance(vid, str) and vid else video_id
        what = "a video's metadata" if vid is None else f"the metadata of video {vid!r}"
        raise _damaged_video(what, where, vid, err) from err


def _damaged_video(what: str, where: str, video_id: str | None, err: BaseException) -> DatasetError:
    """The DatasetError of a video record in database ``where`` that is not what vidlabel wrote."""
    again = "vidlabel add-video DATASET FILE" + ("" if video_id is None else f" --video-id {video_id}") + " --replace"
    return DatasetError(
        f"{what} in {where} is damaged ({err}): the file was edited or damaged; restore it from a backup, or "
        f"register the video again (Dataset.update_video, or `{again}`)",
        path=where,
        video_id=video_id,
    )


def record_json(text: Any, what: str, where: str) -> dict[str, Any]:
    """The JSON object ``text`` of a database record (``what`` it is, in ``where``, for the message).

    Raises
    ------
    DatasetError
        If it is not the text of a JSON object (``json`` raised its own JSONDecodeError, or RecursionError for
        arrays nested thousands deep).
    """
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError) as err:
        value, problem = None, f"is not JSON ({type(err).__name__}: {str(err)[:80]})"
    else:
        problem = f"is {type(value).__name__}, not a JSON object"
    if isinstance(value, dict):
        return value
    raise DatasetError(
        f"{what} in {where} {problem}: the file was edited or damaged; restore it from a backup", path=where
    )


def as_meta(meta: VideoMetadata | Mapping[str, Any]) -> VideoMetadata:
    """A VideoMetadata, or one made from a dict of its fields."""
    if isinstance(meta, VideoMetadata):
        return meta
    if isinstance(meta, Mapping):
        return VideoMetadata.from_dict(meta)
    raise AnnotationError(f"expected a VideoMetadata or a dict of its fields, got {type(meta).__name__}: {meta!r}")


def unknown_video(con: sqlite3.Connection, dataset_path: Path, video_id: Any) -> UnknownVideoError:
    """The error for an unknown video id, listing (up to 20 of) the known ones."""
    known = [r[0] for r in con.execute("SELECT video_id FROM videos ORDER BY video_id")]
    return UnknownVideoError(
        f"unknown video {video_id!r} in dataset {dataset_path}; known: {listing(known)}",
        video_id=str(video_id),
    )


def label_names(con: sqlite3.Connection) -> list[str]:
    """The label vocabulary in order (a label's class index is its position)."""
    return [r[0] for r in con.execute("SELECT name FROM labels ORDER BY code")]


def fetch_views(con: sqlite3.Connection) -> dict[str, tuple[int, View]]:
    """Every view by view id (sorted): its database code and the View."""
    out = {}
    for code, vid, x0, y0, x1, y1, w, h in con.execute(
        "SELECT code, view_id, x0, y0, x1, y1, out_w, out_h FROM views ORDER BY view_id"
    ):
        out[vid] = (code, View(vid, (x0, y0, x1, y1), (w, h) if w is not None else None))
    return out


def attribute_schema(con: sqlite3.Connection) -> dict[str, dict[str, str]]:
    """Label -> {attribute name: type}: the dataset's attribute schema (``meta`` key ``attribute_schema``;
    a dataset without one has none)."""
    row = con.execute("SELECT value FROM meta WHERE key = 'attribute_schema'").fetchone()
    return {} if row is None else record_json(row[0], "attribute schema", "meta")


def set_attribute_schema(con: sqlite3.Connection, schema: Mapping[str, Mapping[str, str]]) -> None:
    """Store the whole attribute schema (inside the caller's write transaction)."""
    text = json.dumps({k: dict(v) for k, v in sorted(schema.items()) if v}, sort_keys=True)
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('attribute_schema', ?)", (text,))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
