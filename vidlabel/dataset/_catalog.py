"""Videos, labels, attribute schemas and views of a :class:`~vidlabel.dataset.Dataset` (a mixin of it)."""

from __future__ import annotations

import sqlite3
import unicodedata
import warnings
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidlabel._words import plural, shown
from vidlabel.dataset._annotations import load_chunks
from vidlabel.dataset._db import (
    as_meta,
    attribute_schema,
    fetch_views,
    label_names,
    record_json,
    set_attribute_schema,
    unknown_video,
    video_from_record,
    video_record,
)
from vidlabel.dataset._rows import ATTRIBUTE_TYPES, schema_text
from vidlabel.dataset._validate import (
    untrusted_summary,
)
from vidlabel.errors import (
    AnnotationError,
    DatasetError,
    UnknownVideoError,
    VidlabelWarning,
)
from vidlabel.spec import KINDS, MAX_SIDE, VideoMetadata, View, video_id_problem


def already_registered(path: Path, video_id: str) -> DatasetError:
    """The error for a video id the dataset at ``path`` already holds (``add_video``; ``vidlabel add-video``
    says it before probing the file)."""
    return DatasetError(
        f"video {video_id!r} is already registered in {path}; register the file under another "
        "id (video_id / `vidlabel add-video --video-id`) or replace its metadata with update_video "
        "(`vidlabel add-video --replace`)",
        video_id=video_id,
    )


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


#: Longest attribute name, in characters: ``set NAME=VALUE`` and ``show`` print it on one line.
MAX_ATTRIBUTE_NAME_CHARS = 64
_ATTRIBUTE_NAME_ALLOWED = (
    f"a non-empty string of at most {MAX_ATTRIBUTE_NAME_CHARS} characters without '=', ',', whitespace or "
    "control characters"
)


def _attribute_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be an attribute name (a phrase naming it, cut short), or None if it can."""
    if not isinstance(name, str) or not name or len(name) > MAX_ATTRIBUTE_NAME_CHARS:
        return f"is {shown(name)}"
    for at, c in enumerate(name):
        # the CLI reads NAME=VALUE and comma lists, so these would make a name that cannot be set or shown
        if c in "=," or c.isspace() or unicodedata.category(c)[0] == "C":
            return f"is {shown(name)}, which holds {c!r} at position {at}"
    return None


class CatalogMixin:
    """The videos, labels, attribute schemas and views of a dataset (part of :class:`~vidlabel.dataset.Dataset`)."""

    if TYPE_CHECKING:
        # What the mixin uses of Dataset, for the type checker (defined in vidlabel.dataset._dataset).
        _path: Path

        @property
        def _db_file(self) -> str: ...

        def _write(self, operation: str) -> AbstractContextManager[sqlite3.Connection]: ...
        def _read(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _con(self) -> sqlite3.Connection: ...
        def _refuse_if_read_only(self, operation: str) -> None: ...

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
            On an unknown label, a ``schema`` that is not a mapping, a new name that is not a string of 1 to 64
            characters without ``=``, ``,``, whitespace or control characters, a type other than the three, or a
            name whose type would change; nothing is changed.
        """
        with self._write("set_attribute_schema") as con:
            labels = label_names(con)
            if label not in labels:
                raise AnnotationError(f"unknown label {label!r}; known: {', '.join(labels) or '(none)'}")
            whole = attribute_schema(con)
            have = dict(whole.get(label, {}))
            if not isinstance(schema, Mapping):
                raise AnnotationError(
                    f"set_attribute_schema: the schema of label {label!r} is {shown(schema)}; expected a mapping of "
                    f"attribute name -> type, a type being one of {', '.join(ATTRIBUTE_TYPES)}"
                )
            for name, kind in dict(schema).items():
                problem = None if name in have else _attribute_name_problem(name)
                if problem is not None:
                    raise AnnotationError(
                        f"attribute name of label {label!r} {problem}; allowed: {_ATTRIBUTE_NAME_ALLOWED}"
                    )
                if kind not in ATTRIBUTE_TYPES:
                    raise AnnotationError(
                        f"attribute {shown(name)} of label {label!r} has type {shown(kind)}; allowed: "
                        f"{', '.join(ATTRIBUTE_TYPES)}"
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
