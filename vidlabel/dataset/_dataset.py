"""The dataset: videos, labels, views, annotations and releases in one SQLite file (WAL mode).

Layout of a dataset folder::

    <dataset>/vidlabel.sqlite     the live data (SQLite, write-ahead log)
    <dataset>/releases/<id>.h5    frozen releases (see vidlabel.dataset._release)

Annotations are stored column-wise: each row of the ``chunks`` table holds up
to ``CHUNK_ROWS`` annotations of one video as compressed NumPy columns (ids,
integer codes for kind/label/origin/status/view, frames, float64 boxes,
float32 confidence, COCO RLE mask bytes). One SQLite row per annotation
made inserting a million rows and reading them back into NumPy take several
seconds each; chunks make writing, validating and building a million rows a
matter of about a second each (``scripts/bench_dataset.py`` measures it). Review edits (``set_status``,
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
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.dataset._added import warn_added_twice, warn_repeated
from vidlabel.dataset._annotations import (
    annotation_dicts,
    append_chunks,
    edit_chunks,
    load_chunks,
    rebuild_tracks,
    with_attributes_set,
)
from vidlabel.dataset._catalog import _LABEL_ALLOWED as _LABEL_ALLOWED
from vidlabel.dataset._catalog import MAX_LABEL_CHARS as MAX_LABEL_CHARS
from vidlabel.dataset._catalog import CatalogMixin
from vidlabel.dataset._catalog import already_registered as already_registered
from vidlabel.dataset._catalog import label_problem as label_problem
from vidlabel.dataset._chunks import Cols, cols_from_rows, take
from vidlabel.dataset._db import (
    DB_NAME,
    SCHEMA_VERSION,
    LocalConnection,
    attribute_schema,
    check_database,
    create_database,
    fetch_views,
    is_disk_full,
    label_names,
    meta_from_record,
    read_transaction,
    write_failure,
    write_transaction,
)
from vidlabel.dataset._release import (
    BuildReport,
    Release,
    copy_release,
    read_release,
    release_created,
    release_id_of,
    write_release,
)
from vidlabel.dataset._rows import RowColumns, check_rows, check_tracks
from vidlabel.dataset._snapshots import SnapshotMixin
from vidlabel.dataset._validate import added_duplicates
from vidlabel.errors import (
    AnnotationError,
    BuildError,
    DatasetCreateError,
    DatasetError,
    DatasetExistsError,
    DatasetReadOnlyError,
    OptionError,
    ReleaseCorruptError,
    VidlabelWarning,
    check_flag,
)
from vidlabel.spec import KINDS, STATUSES

__all__ = ["CHUNK_ROWS", "DB_NAME", "SCHEMA_VERSION", "Dataset"]


def make_folder(path: Path, what: str) -> None:
    """``path.mkdir(parents=True, exist_ok=True)``; an OSError becomes a DatasetCreateError naming ``what`` and why.

    Raises
    ------
    DatasetCreateError
        If a parent is a file, or the filesystem refuses the new folder (read-only, no permission, ``/proc``).
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            why = f"{parent} is a file, not a folder"
        else:
            why = f"{parent} does not allow a new folder in it ({err.strerror or err})"
        raise DatasetCreateError(
            f"cannot create {what} {path}: {why}; choose a writable location", path=str(path)
        ) from err


#: Most annotations stored in one chunk (one video each).
CHUNK_ROWS = 16384


# Test hook: called inside every write transaction just before COMMIT with the operation's name.
_before_commit: Callable[[str], None] | None = None


def folder_path(path: object, what: str) -> Path:
    """``path`` (a str or os.PathLike naming a dataset folder) as an absolute Path.

    Raises
    ------
    OptionError
        If ``path`` is anything else (None, a number, an open Dataset, a FrameStore, ...); names the value
        and ``what`` was called.
    """
    if not isinstance(path, (str, os.PathLike)):
        hint = ""
        if isinstance(path, Dataset):
            hint = " (this Dataset is already open: use it as it is, or pass its .path)"
        raise OptionError(f"{what} takes a dataset folder path (str or os.PathLike), got {path!r}{hint}")
    return Path(path).absolute()


class Dataset(CatalogMixin, SnapshotMixin):
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
        self._path = folder_path(path, "Dataset.open")
        self._local = LocalConnection()
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
        DatasetCreateError
            If the folder cannot be made (a parent is a file; the filesystem refuses new folders there).
        OptionError
            If ``path`` is not a str or os.PathLike (None, a number, a Dataset, ...).
        """
        p = folder_path(path, "Dataset.create")
        if p.exists():
            if not p.is_dir():
                raise DatasetExistsError(f"cannot create a dataset at {p}: it is a file", path=str(p))
            if (p / DB_NAME).exists():
                raise DatasetExistsError(
                    f"{p} already holds a vidlabel dataset; open it (Dataset.open, or any other `vidlabel` command) "
                    "instead of creating it",
                    path=str(p),
                )
            if any(p.iterdir()):
                raise DatasetExistsError(
                    f"cannot create a dataset in {p}: the folder is not empty; choose a new or empty folder",
                    path=str(p),
                )
        make_folder(p, "the dataset folder")
        create_database(p)
        make_folder(p / "releases", "the dataset's releases folder")
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
        OptionError
            If ``path`` is not a str or os.PathLike (None, a number, a Dataset, a FrameStore, ...).
        """
        return cls(path)

    @staticmethod
    def is_dataset(path: str | os.PathLike[str]) -> bool:
        """True if ``path`` is a folder holding a vidlabel database (not checked further).

        Raises
        ------
        OptionError
            If ``path`` is not a str or os.PathLike.
        """
        return (folder_path(path, "Dataset.is_dataset") / DB_NAME).is_file()

    @property
    def path(self) -> Path:
        """The dataset folder (absolute)."""
        return self._path

    @property
    def _db_file(self) -> str:
        """The database file, as messages name it."""
        return str(self._path / DB_NAME)

    def __repr__(self) -> str:
        return f"Dataset({str(self._path)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"path": str(self._path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path = Path(state["path"])
        self._local = LocalConnection()
        self._releases = {}

    def close(self) -> None:
        """Close this thread's database connection (reopened on next use)."""
        self._local.close()

    def _check(self) -> None:
        check_database(self._path, self._con)

    def _con(self) -> sqlite3.Connection:
        return self._local.get(self._path / DB_NAME)

    @property
    def read_only(self) -> bool:
        """Whether the dataset was opened read-only: its folder or database file is not writable (a read-only mount).

        Reading works as ever (info, validate, releases, FrameSamples, export
        from it); a change raises :class:`~vidlabel.errors.DatasetReadOnlyError`.
        """
        self._con()
        return self._local.mode != "rw"

    def _refuse_if_read_only(self, operation: str) -> None:
        if self.read_only:
            raise DatasetReadOnlyError(
                f"cannot {operation.replace('_', '-')} in dataset {self._path}: it is read-only (its folder or "
                f"{DB_NAME} is not writable, e.g. a read-only mount); nothing was changed. Reading it works: "
                "validate, releases, FrameSamples and export from it; to change it, copy the folder somewhere writable",
                path=str(self._path),
            )

    @contextmanager
    def _write(self, operation: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any exception; inside
        :meth:`_one_write`, a part of that method's transaction."""
        self._refuse_if_read_only(operation)
        if self._local.batch:
            yield self._con()
            return
        try:
            with write_transaction(self._con(), operation, _before_commit) as con:
                yield con
        except sqlite3.Error as err:
            raise DatasetError(write_failure(self._path, operation, err), path=str(self._path)) from err

    @contextmanager
    def transaction(self, *, operation: str = "write") -> Iterator[None]:
        """A block whose writes are one transaction: every write of this thread inside it (``add_labels``,
        ``add_annotations``, ``add_video``...) is committed at the end of the block, or none of it if the block
        raises. An importer of label files writes a file's new labels and every video's rows in one.

        A block inside another joins it. Other threads and processes wait for the block to end to write
        (SQLite's write lock), so keep it short.

        Parameters
        ----------
        operation : str
            What the block does, in its error messages ("import_labels": "cannot import-labels in dataset ...").

        Raises
        ------
        DatasetReadOnlyError
            If the dataset cannot be written; nothing is changed.
        DatasetError
            If SQLite cannot commit (a full disk): nothing of the block is written.

        Examples
        --------
        >>> with ds.transaction():  # doctest: +SKIP
        ...     ds.add_labels(["bus"])
        ...     ds.add_annotations(rows, "cam1")
        """
        if self._local.batch:
            yield
            return
        with self._one_write(operation):
            yield

    @contextmanager
    def _one_write(self, operation: str) -> Iterator[None]:
        """Every write of this thread inside the block (``add_labels``, ``add_annotations``, ...) as one
        transaction: all of it is committed at the end of the block, or none of it if the block raises (an
        import of a label file: its new labels and every video's annotations, all or nothing)."""
        with self._write(operation):
            self._local.batch = True
            try:
                yield
            finally:
                self._local.batch = False

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """One read transaction: every SELECT inside sees the same state (inside :meth:`_one_write`, its
        transaction, which sees its own writes)."""
        if self._local.batch:
            return nullcontext(self._con())
        return read_transaction(self._con())

    # -- annotations -----------------------------------------------------------------------------

    def add_annotations(
        self,
        rows: Iterable[Mapping[str, Any]],
        video_id: str,
        *,
        clip: bool = False,
        source: tuple[str, Callable[[int], str]] | None = None,
    ) -> list[int]:
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
            :func:`vidlabel.dataset._rows.check_rows`.
        video_id : str
        clip : bool
            Clip boxes that leave the frame instead of refusing the batch.
        source : (str, callable), optional
            Where the rows were read from, for the warnings: ``(file, row -> place)``, e.g.
            ``("gt.txt", lambda i: f"line {i + 1}")``; without it the warnings name 0-based rows of ``rows``.

        Returns
        -------
        list of int
            The new annotation ids, in row order (ids are never reused).

        Warns
        -----
        VidlabelWarning
            When rows just added equal rows already stored for the video and not rejected (kind,
            label, view, frames, box and mask: validate's ``duplicate_annotation``), as when one
            file is added twice; and when ``rows`` hold one annotation twice (neither rejected),
            naming the 0-based rows of ``rows``. The rows are kept, and the warning names them.

        Raises
        ------
        UnknownVideoError
            If the video is not registered.
        AnnotationError
            If any row is invalid (the error names row, field, value and what
            is allowed), or a track id already has another label in this
            video, or ``rows`` is not a list (iterable) of dicts. Nothing is written.
        OptionError
            If ``clip`` is not True or False (``clip="no"`` must not clip). Nothing is written.
        """
        clip = check_flag("clip", clip)
        if rows is None or isinstance(rows, (Mapping, str, bytes)) or not isinstance(rows, Iterable):
            hint = " (wrap a single row in a list: [row])" if isinstance(rows, Mapping) else ""
            raise AnnotationError(
                f"rows must be a list of dicts (one per annotation), got {type(rows).__name__}{hint}",
                video_id=video_id,
            )
        rows = list(rows)
        with self._write("add_annotations") as con:
            vcode, cols, labels = self._checked_rows(con, rows, video_id, clip=clip)
            n = cols.n_rows
            if n == 0:
                return []
            tsel = cols["track_id"] >= 0
            if tsel.any():
                held = dict(con.execute("SELECT track_id, label FROM tracks WHERE video = ?", (vcode,)).fetchall())
                check_tracks(cols, held, labels=labels, video_id=video_id)
                pairs = sorted(set(zip(cols["track_id"][tsel].tolist(), cols["label"][tsel].tolist())))
                con.executemany(
                    "INSERT OR IGNORE INTO tracks (video, track_id, label) VALUES (?, ?, ?)",
                    [(vcode, t, lab) for t, lab in pairs],
                )
            first = int(con.execute("SELECT value FROM meta WHERE key = 'next_annotation_id'").fetchone()[0])
            ids = np.arange(first, first + n, dtype=np.int64)
            con.execute("UPDATE meta SET value = ? WHERE key = 'next_annotation_id'", (str(first + n),))
            added = cols_from_rows(ids, cols)
            twice, repeated = added_duplicates(_stored_rows(con, vcode), added)
            append_chunks(con, vcode, added, chunk_rows=CHUNK_ROWS)
        if repeated:
            warn_repeated(self._path, video_id, n, repeated, ids, source)
        if twice:
            warn_added_twice(self._path, video_id, n, twice, ids, source)
        return ids.tolist()

    def largest_track_id(self, video_id: str) -> int | None:
        """The largest track id video ``video_id`` holds (None without tracks); inside :meth:`transaction`, read
        in its transaction, so no other writer adds tracks between this read and the commit.

        Raises
        ------
        DatasetError
            If the dataset cannot be read.
        """
        with self._read() as con:
            row = con.execute(
                "SELECT MAX(t.track_id) FROM tracks t JOIN videos v ON v.code = t.video WHERE v.video_id = ?",
                (video_id,),
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _checked_rows(
        self, con: sqlite3.Connection, rows: list[Any], video_id: str, *, clip: bool, more_labels: Sequence[str] = (),
        more_schema: Mapping[str, Mapping[str, str]] | None = None,
    ) -> tuple[int, RowColumns, list[str]]:  # fmt: skip
        """``(video code, checked columns, labels)`` of rows for ``video_id``, as ``add_annotations`` checks them
        (labels ``more_labels`` taken as added after the dataset's own, and attributes ``more_schema`` as added to
        the schema: a dry run's)."""
        row = con.execute("SELECT code, metadata FROM videos WHERE video_id = ?", (video_id,)).fetchone()
        if row is None:
            raise self._unknown_video(con, video_id)
        vcode, metadata = row
        meta = meta_from_record(metadata, self._db_file, video_id)
        labels = label_names(con)
        labels += [lab for lab in more_labels if lab not in labels]
        schema = attribute_schema(con)
        for label, names in (more_schema or {}).items():
            schema[label] = {**schema.get(label, {}), **names}
        checked = check_rows(
            rows, video=meta, labels=labels, views=fetch_views(con), clip=clip, attribute_schema=schema
        )
        return int(vcode), checked, labels

    def annotation_duplicates(
        self, rows: Iterable[Mapping[str, Any]], video_id: str, *, clip: bool = False, more_labels: Sequence[str] = (),
        more_schema: Mapping[str, Mapping[str, str]] | None = None,
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:  # fmt: skip
        """What ``add_annotations(rows, video_id, clip=clip)`` would warn of, nothing written (an import's dry run),
        with the labels ``more_labels`` and the attribute schema ``more_schema`` taken as added first:
        ``(row, annotation id already stored)`` and ``(row, earlier row)`` pairs, as
        :func:`~vidlabel.dataset._validate.added_duplicates` gives them.

        Raises
        ------
        AnnotationError
            If a row is one ``add_annotations`` refuses (its message).
        UnknownVideoError
            If the video is not registered.
        """
        with self._read() as con:
            vcode, cols, _ = self._checked_rows(
                con, list(rows), video_id, clip=clip, more_labels=more_labels, more_schema=more_schema
            )
            if cols.n_rows == 0:
                return [], []
            first = int(con.execute("SELECT value FROM meta WHERE key = 'next_annotation_id'").fetchone()[0])
            ids = np.arange(first, first + cols.n_rows, dtype=np.int64)
            return added_duplicates(_stored_rows(con, vcode), cols_from_rows(ids, cols))

    def _edit(self, ids: Iterable[int], operation: str, change: Callable[[Cols, np.ndarray], Cols | None]) -> None:
        """Apply ``change(cols, hit)`` to every chunk holding some of ``ids``; all ids must exist."""
        if isinstance(ids, (str, bytes, Mapping)):
            raise AnnotationError(f"{operation}: ids must be a list of integer annotation ids, got {ids!r}")
        try:
            given = list(ids)
        except TypeError as err:
            raise AnnotationError(f"{operation}: ids must be integers ({err})") from err
        # int() would take 1.5, True and "1" for annotation 1 and edit it without a word.
        bad = [i for i in given if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer))]
        if bad:
            raise AnnotationError(
                f"{operation}: ids must be integers, got {bad[0]!r} ({type(bad[0]).__name__}); nothing was changed"
            )
        try:
            wanted = np.unique(np.array([int(i) for i in given], np.int64))
        except OverflowError as err:
            raise AnnotationError(f"{operation}: an id does not fit in 64 bits ({err}); nothing was changed") from err
        if wanted.size == 0:
            return
        with self._write(operation) as con:
            touched = edit_chunks(con, wanted, operation, change)
            if operation == "delete_annotations":
                for vcode in sorted(touched):
                    rebuild_tracks(con, vcode)

    def set_status(self, ids: Iterable[int], status: str) -> None:
        """Set the review status of annotations (one transaction).

        Parameters
        ----------
        ids : iterable of int
        status : {"unreviewed", "approved", "rejected"}

        Raises
        ------
        AnnotationError
            On an unknown status, an id that is not an integer (1.5, True, "1") or an unknown id;
            nothing is changed.
        """
        if status not in STATUSES:
            raise AnnotationError(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
        code = STATUSES.index(status)

        def change(cols: Cols, hit: np.ndarray) -> Cols:
            out = dict(cols)
            out["status"] = np.where(hit, code, cols["status"]).astype(np.uint8)
            return out

        self._edit(ids, "set_status", change)

    def set_attributes(self, ids: Iterable[int], values: Mapping[str, Any]) -> None:
        """Set attributes of existing annotations (one transaction): ``values`` maps a name to its new value,
        or to None to remove it; the row's other attributes are kept.

        Raises
        ------
        AnnotationError
            On an id that is not an integer or is unknown, a name the schema of a row's label lacks, or a value
            of another type than the schema's (naming the annotation, attribute, value and schema); nothing is
            changed.
        """
        if not isinstance(values, Mapping) or not all(isinstance(k, str) and k for k in values):
            raise AnnotationError(f"set_attributes: values must be a mapping of attribute names, got {values!r}")
        labels, schema = self.labels(), self.attribute_schema()

        def change(cols: Cols, hit: np.ndarray) -> Cols:
            return with_attributes_set(cols, hit, values, labels, schema)

        self._edit(ids, "set_attributes", change)

    def delete_annotations(self, ids: Iterable[int]) -> None:
        """Delete annotations (one transaction); their ids are never reused.

        Raises
        ------
        AnnotationError
            On an id that is not an integer (1.5, True, "1") or an unknown id; nothing is deleted.
        """
        self._edit(ids, "delete_annotations", lambda cols, hit: take(cols, np.flatnonzero(~hit)))

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
        AnnotationError
            If ``start`` or ``stop`` is neither None nor an integer (1.5,
            True and "3" are refused, never rounded or parsed).
        """
        for name, value in (("start", start), ("stop", stop)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
                raise AnnotationError(f"annotations: {name} must be an integer frame number or None, got {value!r}")
            if value is not None and not -(2**63) <= value < 2**63:
                raise AnnotationError(f"annotations: {name} must lie in [-2**63, 2**63), got {value!r}")
        # As Python ints: sqlite binds a NumPy integer as its bytes (a blob), which matched no row.
        start, stop = (None if v is None else int(v) for v in (start, stop))
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
            labels = label_names(con)
            view_names = {code: vid for vid, (code, _) in fetch_views(con).items()}
            cols, vcodes = load_chunks(con, video_code=vcode, start=start, stop=stop)
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
        return annotation_dicts(cols, vcodes, rows, video_names=video_names, labels=labels, view_names=view_names)

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
        DatasetReadOnlyError
            If the dataset was opened read-only (:attr:`read_only`).
        ReleaseCorruptError
            If the file of this content's release was edited on disk (it reads,
            but its content does not give its id); nothing is written.

        Warns
        -----
        VidlabelWarning
            When the file of this content's release is damaged (cannot be read):
            it is written again, atomically, from this content.
        """
        t0 = time.perf_counter()
        self._refuse_if_read_only("build")
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
        counts = rel.counts()
        rel = dataclasses.replace(rel, release_id=rid, created=created, info={**rel.info, "counts": counts})
        wrote = False
        if not path.exists():
            wrote = self._write_release_file(rel, path)
        if not wrote:
            try:
                read_release(path, verify=False)
            except ReleaseCorruptError as err:
                # Damaged (truncated, unreadable): this build holds the content its id names, so write it again
                # (the message of a damaged release says to build it again). An edited file that reads is refused.
                wrote = self._write_release_file(rel, path, replace=True)
                warnings.warn(
                    f"release file {path} was damaged ({err.__cause__ or err}); it was written again from dataset "
                    f"{self._path}, whose content gives this release's id {rid}",
                    VidlabelWarning,
                    stacklevel=2,
                )
        if not wrote:
            # The file is the truth: another build of this content (maybe in another process) wrote it first.
            # It is checked against the id first: an edited file is refused, not reported as this release.
            read_release(path)
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
            counts=counts,
            warnings=tuple(p for p in problems if p.severity == "warning"),
            path=str(path),
            seconds=time.perf_counter() - t0,
        )
        return copy_release(rel), report

    def _write_release_file(self, rel: Release, path: Path, *, replace: bool = False) -> bool:
        """``write_release``, a failure to write (a full disk) said as what failed and that nothing was lost."""
        try:
            return write_release(rel, path, replace=replace)
        except OSError as err:
            raise DatasetError(
                f"cannot build in dataset {self._path}: writing the release file {path} failed ({err}"
                f"{'; the disk is full' if is_disk_full(err) else ''}). Nothing was lost: the dataset is "
                "unchanged and no partial release is left (it is written under a temporary name first); "
                "free space and run `vidlabel build` again",
                path=str(path),
            ) from err


def _stored_rows(con: sqlite3.Connection, vcode: int) -> Cols | None:
    """The rows stored for video ``vcode``, or None when a stored chunk is damaged (validate and build name it;
    adding rows is not refused for it)."""
    try:
        return load_chunks(con, video_code=vcode)[0]
    except DatasetError:
        return None
