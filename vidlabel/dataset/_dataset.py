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
import inspect
import os
import sqlite3
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel._words import plural, shown
from vidlabel.dataset._annotations import annotation_dicts, append_chunks, edit_chunks, load_chunks, rebuild_tracks
from vidlabel.dataset._chunks import Cols, cols_from_rows, take
from vidlabel.dataset._db import (
    DB_NAME,
    SCHEMA_VERSION,
    LocalConnection,
    as_meta,
    attribute_schema,
    check_database,
    create_database,
    fetch_views,
    is_disk_full,
    label_names,
    meta_from_record,
    now,
    read_transaction,
    record_json,
    set_attribute_schema,
    unknown_video,
    video_from_record,
    video_record,
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
from vidlabel.dataset._rows import ATTRIBUTE_TYPES, RowColumns, check_rows, check_tracks, schema_text
from vidlabel.dataset._validate import (
    SAME_ANNOTATION,
    Problem,
    added_duplicates,
    untrusted_summary,
    validate_table,
    video_file_problems,
)
from vidlabel.dataset._validate import for_export as export_severity
from vidlabel.errors import (
    AnnotationError,
    BuildError,
    DatasetCreateError,
    DatasetError,
    DatasetExistsError,
    DatasetReadOnlyError,
    OptionError,
    ReleaseCorruptError,
    ReleaseNotFoundError,
    UnknownVideoError,
    VidlabelWarning,
    check_flag,
)
from vidlabel.spec import KINDS, MAX_SIDE, STATUSES, AnnotationTable, VideoMetadata, View, video_id_problem

__all__ = ["CHUNK_ROWS", "DB_NAME", "SCHEMA_VERSION", "Dataset"]


def already_registered(path: Path, video_id: str) -> DatasetError:
    """The error for a video id the dataset at ``path`` already holds (``add_video``; ``vidlabel add-video``
    says it before probing the file)."""
    return DatasetError(
        f"video {video_id!r} is already registered in {path}; register the file under another "
        "id (video_id / `vidlabel add-video --video-id`) or replace its metadata with update_video "
        "(`vidlabel add-video --replace`)",
        video_id=video_id,
    )


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
_LIVE_STATUSES = ("unreviewed", "approved")
#: Unicode categories refused in a label: controls (newline, tab, NUL, ...), line and paragraph separators, surrogates.
_LABEL_BAD_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})
#: Unicode's bidirectional controls: a label holding one shows other text than it is (U+202E turns it around).
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: Longest label, in characters: a class name, not a document.
MAX_LABEL_CHARS = 256
_LABEL_ALLOWED = (
    "a non-empty string without leading or trailing spaces or control characters (bidirectional controls "
    f"included), of at most {MAX_LABEL_CHARS} characters"
)


def label_problem(name: object) -> str | None:
    """Why ``name`` cannot be a label (a phrase naming it, cut short), or None if it can."""
    if not isinstance(name, str) or not name or name != name.strip():
        return f"is {shown(name)}"
    if len(name) > MAX_LABEL_CHARS:
        return f"is {shown(name)}, longer than {MAX_LABEL_CHARS} characters"
    for at, c in enumerate(name):
        if unicodedata.category(c) in _LABEL_BAD_CATEGORIES:
            return f"is {shown(name)}, which holds the control character {c!r} at position {at}"
        if c in _BIDI_CONTROLS:
            return (
                f"is {shown(name)}, which holds the bidirectional control U+{ord(c):04X} at position {at} (it "
                "makes the label show as other text)"
            )
    return None


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

    # -- videos ----------------------------------------------------------------------------------

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
        AnnotationError
            If the video id cannot name a file in a frame store
            (:func:`vidlabel.spec.video_id_problem`: not UTF-8, over 200
            bytes, control characters, only white space); nothing is written.

        Warns
        -----
        VidlabelWarning
            When ``meta.untrusted_frames`` lists frames without a trustworthy
            picture (a truncated or corrupt file), naming the video, how many
            and which.
        """
        meta = as_meta(meta)
        problem = video_id_problem(meta.video_id)
        if problem:
            raise AnnotationError(f"video id {meta.video_id!r} {problem}; nothing was added", video_id=meta.video_id)
        record = video_record(meta)
        with self._write("add_video") as con:
            try:
                con.execute(
                    "INSERT INTO videos (video_id, metadata, frame_index, index_pts, index_keyframes) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (meta.video_id, *record),
                )
            except sqlite3.IntegrityError as err:
                raise already_registered(self._path, meta.video_id) from err
        _warn_untrusted(meta)

    def update_video(self, meta: VideoMetadata | Mapping[str, Any]) -> None:
        """Replace the metadata (and frame index) of a registered video.

        Annotations are kept; ``validate()`` reports rows the new metadata no
        longer fits (``frame_out_of_range``, ``box_out_of_frame``).

        Raises
        ------
        UnknownVideoError
            If no video has this id.

        Warns
        -----
        VidlabelWarning
            As :meth:`add_video`, on frames without a trustworthy picture; and when rows of the video no longer
            fit the new metadata (frames at or past the new frame count, boxes leaving the new frame size, masks
            of another size than the new frame): how many, and the furthest frame and box, so a shorter, smaller or
            larger file given by mistake is seen at once; and when the frame size changes while every row still
            fits (a larger file): how many box and mask rows keep their pixels of the old frame.
        """
        meta = as_meta(meta)
        record = video_record(meta)
        with self._write("update_video") as con:
            before = con.execute("SELECT code, metadata FROM videos WHERE video_id = ?", (meta.video_id,)).fetchone()
            cur = con.execute(
                "UPDATE videos SET metadata = ?, frame_index = ?, index_pts = ?, index_keyframes = ? "
                "WHERE video_id = ?",
                (*record, meta.video_id),
            )
            if cur.rowcount == 0 or before is None:
                raise self._unknown_video(con, meta.video_id)
            misfits = _rows_past(con, int(before[0]), meta)
            old = record_json(before[1], f"the metadata of video {meta.video_id!r}", self._db_file)
            resized = (old.get("width"), old.get("height")) != (meta.width, meta.height)
            regions = resized and misfits is None and _region_rows(con, int(before[0]))
        _warn_untrusted(meta)
        if regions:
            warnings.warn(
                f"video {meta.video_id!r} in {str(self._path)!r}: its frame size changed from {old.get('width')}x"
                f"{old.get('height')} to {meta.width}x{meta.height}, and its {plural(regions, 'box or mask row')} "
                "keep their pixels of the old frame (vidlabel cannot tell whether the new file is the old one "
                "resized): if it is, scale them, or register the new file as a new video",
                VidlabelWarning,
                stacklevel=2,
            )
        if misfits is not None:
            warnings.warn(
                f"video {meta.video_id!r} in {str(self._path)!r}: {misfits}; the rows are kept: validate reports "
                "them as errors (frame_out_of_range, box_out_of_frame, mask_size_mismatch) and build() refuses a "
                "release until they are "
                "edited or deleted, or the right file is registered again",
                VidlabelWarning,
                stacklevel=2,
            )

    def _unknown_video(self, con: sqlite3.Connection, video_id: Any) -> UnknownVideoError:
        return unknown_video(con, self._path, video_id)

    def videos(self) -> list[VideoMetadata]:
        """Every registered video, sorted by video id (with content hash and frame index).

        Raises
        ------
        DatasetError
            If a video's record in the database is damaged (a field of the wrong type, after an edit by hand):
            the message names the database file, the video id and the field.
        """
        rows = (
            self._con()
            .execute("SELECT metadata, frame_index, index_pts, index_keyframes FROM videos ORDER BY video_id")
            .fetchall()
        )
        return [video_from_record(*r, where=self._db_file) for r in rows]

    def video(self, video_id: str) -> VideoMetadata:
        """The metadata of one video.

        Raises
        ------
        UnknownVideoError
            If no video has this id; the message lists the known ids.
        DatasetError
            If the video's record in the database is damaged (see :meth:`videos`).
        """
        con = self._con()
        row = con.execute(
            "SELECT metadata, frame_index, index_pts, index_keyframes FROM videos WHERE video_id = ?", (video_id,)
        ).fetchone()
        if row is None:
            raise self._unknown_video(con, video_id)
        return video_from_record(*row, where=self._db_file)

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
            If a name is not a non-empty string without leading or trailing
            spaces, or holds a control character (a newline, tab, NUL, ...), a
            line or paragraph separator or a lone surrogate (exported label
            files (CSV, TXT, pbtxt) hold one label a line), a bidirectional
            control (U+202E shows the label as other text), or is longer than
            ``MAX_LABEL_CHARS`` (256) characters. Nothing is added.
        """
        items = [names] if isinstance(names, str) else list(names)
        for i, name in enumerate(items):
            problem = label_problem(name)
            if problem is not None:
                raise AnnotationError(
                    f"label {i} {problem}; allowed: {_LABEL_ALLOWED} (exported label files hold one label a line)"
                )
        with self._write("add_labels") as con:
            have = label_names(con)
            known = set(have)
            for name in items:
                if name not in known:
                    con.execute("INSERT INTO labels (code, name) VALUES (?, ?)", (len(have), name))
                    have.append(name)
                    known.add(name)
        return have

    def labels(self) -> list[str]:
        """The label vocabulary in order (a label's class index is its position)."""
        return label_names(self._con())

    def set_attribute_schema(self, label: str, schema: Mapping[str, str]) -> dict[str, str]:
        """Declare the attributes rows of ``label`` may carry: name -> "bool", "number" or "text".

        Names are added to the label's schema; a name already there keeps its type (rows may hold values of it).
        Rows give them as ``"attributes": {"occluded": True, "visibility": 0.5}``, checked on the way in.

        Returns
        -------
        dict name -> type
            The label's whole schema.

        Raises
        ------
        AnnotationError
            On an unknown label, a name that is not a non-empty string, a type other than the three, or a name
            whose type would change; nothing is changed.
        """
        with self._write("set_attribute_schema") as con:
            labels = label_names(con)
            if label not in labels:
                raise AnnotationError(f"unknown label {label!r}; known: {', '.join(labels) or '(none)'}")
            whole = attribute_schema(con)
            have = dict(whole.get(label, {}))
            for name, kind in dict(schema).items():
                if not isinstance(name, str) or not name or name != name.strip():
                    raise AnnotationError(f"attribute name {name!r} of label {label!r}: expected a non-empty string")
                if kind not in ATTRIBUTE_TYPES:
                    raise AnnotationError(
                        f"attribute {name!r} of label {label!r} has type {kind!r}; allowed: {', '.join(ATTRIBUTE_TYPES)}"
                    )
                if have.get(name, kind) != kind:
                    raise AnnotationError(
                        f"attribute {name!r} of label {label!r} is {have[name]!r}: a schema keeps its types (rows may "
                        f"hold values of it); the label's schema: {schema_text(have)}"
                    )
                have[name] = kind
            whole[label] = have
            set_attribute_schema(con, whole)
        return have

    def attribute_schema(self) -> dict[str, dict[str, str]]:
        """Label -> {attribute name: "bool" | "number" | "text"} (labels without attributes left out)."""
        return attribute_schema(self._con())

    def add_view(
        self,
        view_id: str,
        crop: tuple[int, int, int, int],
        output_size: tuple[int, int] | None = None,
    ) -> View:
        """Add a view: a named crop ``(x0, y0, x1, y1)`` of the full frame, optionally resized to ``(w, h)``.

        Adding the same view again is a no-op. The crop must fit inside the
        frame of every registered video (``validate()`` reports
        ``view_outside_frame`` for videos added later that it does not fit: an
        error where rows of that video use the view, else a warning).

        Returns
        -------
        View

        Raises
        ------
        AnnotationError
            If the crop or size is invalid, the crop does not fit inside a
            registered video's frame, a different view has this id, or the id has
            leading or trailing spaces or a control character (a newline, tab, ...).
        """
        view = View(view_id, crop, output_size)
        bad = next((c for c in view.view_id if unicodedata.category(c) in _LABEL_BAD_CATEGORIES), None)
        if view.view_id != view.view_id.strip() or bad is not None:
            what = f"holds the control character {bad!r}" if bad is not None else "has leading or trailing spaces"
            raise AnnotationError(
                f"view id {view.view_id!r} {what}; a view id is a non-empty name without leading or trailing spaces "
                "or control characters, as a label (it is printed one a line); nothing was added"
            )
        w, h = view.size
        if w > MAX_SIDE or h > MAX_SIDE:
            raise AnnotationError(
                f"view {view.view_id!r}: output_size {w}x{h} is larger than {MAX_SIDE} pixels a side (one such RGB "
                f"image would take {w * h * 3 / 2**30:.1f} GiB); choose a size up to {MAX_SIDE}; nothing was added"
            )
        with self._write("add_view") as con:
            for (metadata,) in con.execute("SELECT metadata FROM videos ORDER BY video_id"):
                meta = video_from_record(metadata, None, None, None, where=self._db_file)
                if view.crop[2] > meta.width or view.crop[3] > meta.height:
                    raise AnnotationError(
                        f"view {view.view_id!r}: crop {view.crop} does not fit inside video {meta.video_id!r} "
                        f"({meta.width}x{meta.height}); a crop must satisfy x1 <= {meta.width} and "
                        f"y1 <= {meta.height} for every video"
                    )
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

    def views(self) -> dict[str, View]:
        """Every view, by view id (sorted)."""
        return {k: v for k, (_, v) in fetch_views(self._con()).items()}

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
            _warn_repeated(self._path, video_id, n, repeated, ids, source)
        if twice:
            _warn_added_twice(self._path, video_id, n, twice, ids, source)
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

    # -- snapshots, validation, releases ---------------------------------------------------------

    def snapshot(self, *, statuses: Sequence[str] = _LIVE_STATUSES) -> Release:
        """The live annotations as an unpinned :class:`Release` (``release_id`` None).

        Parameters
        ----------
        statuses : sequence of str, or str
            Review statuses to include (default: unreviewed and approved); one status may be given alone
            (``"approved"``).

        Returns
        -------
        Release
            Labels, views, every video (with frame index) and the selected
            rows as an ``AnnotationTable`` sorted by annotation id. It can
            change between calls; ``build()`` pins one.

        Raises
        ------
        AnnotationError
            On an unknown status, naming it and the allowed ones.
        """
        if isinstance(statuses, str):  # one status, not its letters
            statuses = (statuses,)
        bad = [s for s in statuses if s not in STATUSES]
        if bad:
            raise AnnotationError(f"unknown status(es) {bad}; allowed: {', '.join(STATUSES)}")
        with self._read() as con:
            labels = tuple(label_names(con))
            schema = attribute_schema(con)
            view_rows = fetch_views(con)
            video_rows = con.execute(
                "SELECT code, video_id, metadata, frame_index, index_pts, index_keyframes FROM videos"
            ).fetchall()
            cols, vcodes = load_chunks(con)
        videos = {r[1]: video_from_record(*r[2:], where=self._db_file) for r in sorted(video_rows, key=lambda r: r[1])}
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
            attr_offsets=cols["attr_offsets"],
            attr_bytes=cols["attr_bytes"],
        )
        return Release(
            release_id=None,
            created=now(),
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
                # the labels' attribute schema, for choosing samples by attributes (not part of the content id)
                **({"attribute_schema": schema} if schema else {}),
            },
        )

    def validate(
        self,
        *,
        check_files: bool = True,
        hash_files: bool = True,
        for_export: bool = False,
        roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    ) -> list[Problem]:
        """Check the live unreviewed and approved rows, the videos and the views.

        Parameters
        ----------
        check_files : bool
            Report ``missing_video_file`` (no file at the recorded path: missing, or a folder).
        hash_files : bool
            With ``check_files``, also read every video file once (per process)
            to report ``video_file_changed`` when it no longer holds the
            registered bytes. ``build()`` does not hash.
        for_export : bool
            Rate ``missing_video_file`` and ``video_file_changed`` as errors
            (``vidlabel.validate.EXPORT_ERRORS``): export refuses those videos,
            so no error here means export will read every video. The videos of
            the latest release (what export exports by default) that it pins
            otherwise than they are registered now (re-registered since the
            build) are checked as that release pins them, too.
        roots : path or sequence of path
            Folders to look under for moved video files, as export's ``roots``
            (pass the same to both); one folder may be given alone.

        Returns
        -------
        list of Problem
            With stable codes and severities (``vidlabel.validate.PROBLEM_CODES``);
            ``build()`` refuses while any has severity ``"error"``.

        Raises
        ------
        OptionError
            If a True/False option is given anything else, or ``roots`` is
            neither a path nor a sequence of paths.
        """
        check_files, hash_files = check_flag("check_files", check_files), check_flag("hash_files", hash_files)
        for_export = check_flag("for_export", for_export)
        problems = self._validate(self.snapshot(), check_files=check_files, hash_files=hash_files, roots=roots)
        if for_export and check_files:
            problems += self._latest_release_problems(hash_files=hash_files, roots=roots)
        return export_severity(problems) if for_export else problems

    def _latest_release_problems(
        self, *, hash_files: bool, roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
    ) -> list[Problem]:
        """Export's file problems for the latest release's videos pinned otherwise than they are registered now."""
        try:
            rel = self.release("latest")
        except (ReleaseNotFoundError, ReleaseCorruptError):
            return []  # no release yet (export then refuses), or a damaged one (export says so)
        live = {m.video_id: (m.content_hash, m.sources) for m in self.videos()}
        out: list[Problem] = []
        for vid in sorted(rel.videos):
            meta = rel.videos[vid]
            if live.get(vid) == (meta.content_hash, meta.sources):
                continue  # registered as pinned: the live check above covers it
            for p in video_file_problems(meta, self._path, roots, hash_files=hash_files):
                message = (
                    f"release {rel.release_id} (the latest: what export exports by default) pins this video as it "
                    f"was registered when it was built: {p.message} (after re-registering the video, build a new "
                    "release: `vidlabel build`)"
                )
                out.append(dataclasses.replace(p, message=message))
        return out

    def _validate(
        self,
        rel: Release,
        *,
        check_files: bool = True,
        hash_files: bool = False,
        roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    ) -> list[Problem]:
        return validate_table(
            rel.table, rel.videos, rel.views, check_files=check_files, hash_files=hash_files, base=self._path,
            roots=roots,
        )  # fmt: skip

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
        ReleaseCorruptError
            If the release file was edited or damaged on disk: its content no
            longer gives its content-derived id (checked on every load).
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
            loaded = read_release(path)
            if loaded.release_id != release_id:
                raise ReleaseCorruptError(
                    f"release file {path} records id {loaded.release_id!r}, not {release_id!r}: it was replaced "
                    "on disk; restore it, or build a new release from the dataset (`vidlabel build`)",
                    path=str(path),
                )
            self._releases[release_id] = loaded
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


def _rows_past(con: sqlite3.Connection, vcode: int, meta: VideoMetadata) -> str | None:
    """What rows of video ``vcode`` the metadata ``meta`` no longer fits, in words (None: every row fits):
    frames at or past ``meta.frame_count``, boxes (of boxes and masks) past ``meta.width`` x ``meta.height``,
    masks of another size than ``meta.height`` x ``meta.width``."""
    cols, _ = load_chunks(con, video_code=vcode)
    if cols["annotation_id"].shape[0] == 0:
        return None
    end, box = cols["end_frame"], cols["box"]
    late = end >= meta.frame_count
    with np.errstate(invalid="ignore"):
        spatial = cols["kind"] != KINDS.index("marker")
        wide = spatial & ((box[:, 2] > meta.width) | (box[:, 3] > meta.height))
    said = []
    if late.any():
        said.append(
            f"{plural(int(late.sum()), 'annotation row')} past its last frame {meta.frame_count - 1} (up to frame "
            f"{int(end.max())})"
        )
    if wide.any():
        said.append(
            f"{plural(int(wide.sum()), 'box')} outside its {meta.width}x{meta.height} frame (up to x "
            f"{float(np.nanmax(box[wide, 2])):g}, y {float(np.nanmax(box[wide, 3])):g})"
        )
    size = cols["mask_size"]
    is_mask = cols["kind"] == KINDS.index("mask")
    resized = is_mask & ((size[:, 0] != meta.height) | (size[:, 1] != meta.width))
    if resized.any():
        h, w = (int(v) for v in size[np.flatnonzero(resized)[0]])
        said.append(
            f"{plural(int(resized.sum()), 'mask')} of another size than its {meta.width}x{meta.height} frame "
            f"(e.g. {w}x{h})"
        )
    return "; ".join(said) or None


def _stored_rows(con: sqlite3.Connection, vcode: int) -> Cols | None:
    """The rows stored for video ``vcode``, or None when a stored chunk is damaged (validate and build name it;
    adding rows is not refused for it)."""
    try:
        return load_chunks(con, video_code=vcode)[0]
    except DatasetError:
        return None


def _region_rows(con: sqlite3.Connection, vcode: int) -> int:
    """How many box and mask rows video ``vcode`` has."""
    cols, _ = load_chunks(con, video_code=vcode)
    return int(np.count_nonzero(cols["kind"] != KINDS.index("marker")))


def _warn_untrusted(meta: VideoMetadata) -> None:
    message = untrusted_summary(meta)
    if message is not None:
        warnings.warn(
            f"{message}; validate reports annotations on them (untrusted_frame), FrameSamples and export leave them out",
            VidlabelWarning,
            stacklevel=3,
        )


def _warn_added_twice(
    path: Path,
    video_id: str,
    n: int,
    twice: list[tuple[int, int]],
    ids: np.ndarray,
    source: tuple[str, Callable[[int], str]] | None,
) -> None:
    """Warn that rows just added equal rows already stored (a file added twice), naming how to remove them."""
    row, stored = twice[0]
    where = f"row {row} (0-based)" if source is None else f"{source[0]} {source[1](row)}"
    if n == 1:
        head = (
            f"the row just added (annotation {int(ids[row])}) equals annotation {stored} already stored "
            f"({SAME_ANNOTATION})"
        )
    else:
        head = (
            f"{len(twice)} of the {n} rows just added equal rows already stored ({where}, annotation "
            f"{int(ids[row])}, equals annotation {stored}: {SAME_ANNOTATION})"
        )
    _warn_kept(path, video_id, f"{head}, as when one file is added twice", [int(ids[r]) for r, _ in twice])


def _warn_repeated(
    path: Path,
    video_id: str,
    n: int,
    repeated: list[tuple[int, int]],
    ids: np.ndarray,
    source: tuple[str, Callable[[int], str]] | None,
) -> None:
    """Warn that the rows just added hold one annotation twice (a file that lists it twice), naming how to remove
    the later ones."""
    row, first = repeated[0]
    if source is None:
        same = f"rows {first} and {row} (0-based) of the input are the same annotation"
    else:
        same = f"{source[1](first)} and {source[1](row)} of {source[0]} are the same annotation"
    if len(repeated) == 1:
        head = f"{same}: annotation {int(ids[row])} just added repeats annotation {int(ids[first])} ({SAME_ANNOTATION})"
    else:
        head = (
            f"{len(repeated)} of the {n} rows just added repeat an earlier row of "
            f"{'the input' if source is None else source[0]} ({same}, annotations "
            f"{int(ids[first])} and {int(ids[row])}: {SAME_ANNOTATION})"
        )
    _warn_kept(path, video_id, head, [int(ids[r]) for r, _ in repeated])


def _outside_vidlabel() -> int:
    """The ``stacklevel`` at which a ``warnings.warn`` in the caller names the first frame outside vidlabel: the
    user's call, however many vidlabel functions (``import_labels``, the command line) lie between."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    level = 1
    while caller is not None and caller.f_back is not None:
        name = str(caller.f_globals.get("__name__", ""))
        if name != "vidlabel" and not name.startswith("vidlabel."):
            break
        caller, level = caller.f_back, level + 1
    return level


def _warn_kept(path: Path, video_id: str, head: str, kept: list[int]) -> None:
    """Warn ``head`` of video ``video_id``, then that the rows ``kept`` (annotation ids) are kept and how to remove
    them or leave them out of releases."""
    new_ids = sorted(kept)
    shown = ", ".join(map(str, new_ids[:5])) + (", ..." if len(new_ids) > 5 else "")
    they, them = ("it is", "it") if len(new_ids) == 1 else ("they are", "them")
    warnings.warn(
        f"video {video_id!r}: {head}; {they} kept (validate warns duplicate_annotation): remove {them} with "
        f"Dataset.open({str(path)!r}).delete_annotations([{shown}]) or leave {them} out of releases with "
        f"set_status([{shown}], 'rejected')",
        VidlabelWarning,
        stacklevel=_outside_vidlabel(),
    )
