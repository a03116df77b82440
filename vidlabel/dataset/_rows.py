"""Annotation rows at the dataset's boundary: validation and columnar form.

:func:`check_rows` validates a batch of annotation rows before
``Dataset.add_annotations`` writes it. It works column by column with NumPy
(a Python loop runs only over mask rows and over rows already known to be
bad) and raises :class:`~vidlabel.errors.AnnotationError` naming the row
index, the field, the value and what is allowed. Nothing is written when it
raises. Masks arrive as (H, W) arrays or COCO RLE and leave as compressed
RLE bytes with their bbox as the row's box.

The steps of :func:`check_rows` run in a fixed order, one per field family
(structure, kind and fields, label, frames, origin/status, view, confidence,
track id, box, mask, one label per track); each adds its bad rows to one
``_Refusal``, so the message names the lowest bad row and, for that row, the
first step that found it bad.

Why compressed RLE is decoded by vidlabel and not by pycocotools: the rows are
untrusted input, and pycocotools does not validate RLE. Its C decoder
(``rleFrString``) accepts any byte, reads past a truncated string's end and
shifts ints by more than their width, so ``area``/``toBbox`` of a bad string
return nonsense (``counts=b"\x01\x02"`` on a 4x4 mask: area 4294967282); and
``decode`` of counts covering fewer pixels than ``size`` returns uninitialised
memory (``{"size": [4, 4], "counts": b"0"}`` decodes to 16 bytes of garbage, no
error). :func:`vidlabel.geometry.rle_counts` (the one decoder of compressed RLE;
``decode_rle`` uses it too) refuses bad characters, truncation, runs past 2**40
and negative runs, and :func:`check_rows` checks the runs cover
``height * width`` pixels; only then is pycocotools used (to encode arrays, in
:mod:`vidlabel.geometry`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel.dataset._row_masks import _parse_mask
from vidlabel.dataset._row_values import _boxes, _codes, _floats, _ints, _present, _show
from vidlabel.errors import AnnotationError
from vidlabel.spec import KINDS, ORIGINS, STATUSES, AnnotationTable, VideoMetadata, View

__all__ = [
    "ATTRIBUTE_TYPES",
    "BATCH_COLUMNS",
    "KIND_FIELDS",
    "RowColumns",
    "attribute_bytes",
    "attribute_value",
    "check_rows",
    "check_tracks",
    "listing",
    "schema_text",
]

_COMMON = frozenset(
    {"kind", "label", "start_frame", "end_frame", "origin", "confidence", "status", "view_id", "attributes"}
)
#: Fields a row may carry, per kind (``video_id`` is accepted when it names the batch's video).
KIND_FIELDS: dict[str, frozenset[str]] = {
    "box": _COMMON | {"box", "track_id"},
    "mask": _COMMON | {"box", "mask", "track_id"},  # a box, if given, must be the mask's bbox
    "marker": _COMMON,  # markers are frame-level: no box, mask or track
}
_ALL_FIELDS = frozenset().union(*KIND_FIELDS.values()) | {"video_id"}
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_ORIGIN_CODE = {k: i for i, k in enumerate(ORIGINS)}
_STATUS_CODE = {k: i for i, k in enumerate(STATUSES)}
_BOX, _MASK, _MARKER = (_KIND_CODE[k] for k in ("box", "mask", "marker"))


#: The columns of a checked batch: :class:`~vidlabel.spec.AnnotationTable`'s, less the two the dataset
#: assigns when it writes the batch (``annotation_id``, ``video``).
BATCH_COLUMNS = tuple(name for name in AnnotationTable.DTYPES if name not in ("annotation_id", "video"))


class RowColumns(dict[str, np.ndarray]):
    """A validated batch of rows in columnar form (what ``Dataset.add_annotations`` stores).

    A dict of the :data:`BATCH_COLUMNS`, each with the dtype and shape
    :class:`~vidlabel.spec.AnnotationTable` gives it (N rows). As there: a
    mask row's box is its mask's bbox, ``box`` is NaN for markers, ``track_id``
    -1 and ``confidence`` NaN for none; here ``label`` indexes the dataset's
    vocabulary and ``view`` is the code passed in ``views`` (-1 for none).
    """

    #: Each row's attributes as canonical JSON bytes (``b""``: none); None when no row has any.
    attributes: list[bytes] | None = None

    def __init__(self, columns: Mapping[str, np.ndarray], attributes: list[bytes] | None = None) -> None:
        if tuple(columns) != BATCH_COLUMNS:
            raise ValueError(f"RowColumns needs the columns {BATCH_COLUMNS}, got {tuple(columns)}")
        super().__init__({k: np.asarray(v, AnnotationTable.DTYPES[k]) for k, v in columns.items()})
        self.attributes = attributes

    @property
    def n_rows(self) -> int:
        """Number of rows N."""
        return int(self["kind"].shape[0])


def listing(names: Sequence[str], limit: int = 20) -> str:
    """Up to ``limit`` names joined by commas (with the total when there are more), or "(none)"."""
    if not names:
        return "(none)"
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


class _Refusal:
    """Collects bad rows of a batch; raises one AnnotationError naming the first bad row."""

    def __init__(self, n: int, video_id: str) -> None:
        self.n = n
        self.video_id = video_id
        self.bad = np.zeros(n, bool)
        self.first_row = n
        self.first: tuple[str | Callable[[int], str] | None, Callable[[int], str]] | None = None

    def add(
        self, bad: np.ndarray, field: str | Callable[[int], str] | None, describe: Callable[[int], str] | str
    ) -> None:
        """Mark ``bad`` rows; ``field`` is the field's name (or a function of the row giving it; None: the row)."""
        if isinstance(describe, str):
            text = describe
            describe = lambda _: text  # noqa: E731
        idx = np.flatnonzero(bad)
        if idx.size == 0:
            return
        self.bad[idx] = True
        row = int(idx[0])
        if row < self.first_row:
            self.first_row = row
            self.first = (field, describe)

    def add_row(self, row: int, field: str, message: str) -> None:
        bad = np.zeros(self.n, bool)
        bad[row] = True
        self.add(bad, field, message)

    def raise_if_any(self) -> None:
        if self.first is None:
            return
        field_of, describe = self.first
        row = self.first_row
        field = field_of(row) if callable(field_of) else field_of
        n_bad = int(self.bad.sum())
        more = f"; {n_bad} of {self.n} rows have problems (this message shows the first)" if n_bad > 1 else ""
        batch = "the batch (1 row)" if self.n == 1 else f"the whole batch of {self.n} rows"
        where = f"field {field!r} (video {self.video_id!r})" if field is not None else f"video {self.video_id!r}"
        detail = f"{where}: {describe(row)} -- {batch} was refused, nothing was written{more}"
        err = AnnotationError(f"row {row} (0-based), {detail}", video_id=self.video_id)
        err.row = row  # type: ignore[attr-defined]
        err.field = field  # type: ignore[attr-defined]
        err.detail = detail  # type: ignore[attr-defined]
        raise err


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an (N, K) integer array in lexicographic order, and the first index of each."""
    a = np.asarray(a, np.int64)
    if a.shape[0] == 0:
        return a, np.zeros(0, np.intp)
    order = np.lexsort(a.T[::-1])  # stable: the first of equal rows keeps the smallest index
    s = a[order]
    new = np.ones(s.shape[0], bool)
    new[1:] = (s[1:] != s[:-1]).any(axis=1)
    return s[new], order[new]


#: Fields each kind takes (by kind code), ``video_id`` included.
_TAKES = [KIND_FIELDS[k] | {"video_id"} for k in KINDS]


class _Batch:
    """A batch being checked: its rows, the fields any row has, and the refusal collecting bad rows.

    The steps below run in this order, each adding its bad rows to ``ref``; the
    order matters: the message names the first bad row, and for one row the
    first step that found it bad.
    """

    def __init__(self, rows: list[Any], video: VideoMetadata) -> None:
        self.rows = rows
        self.n = len(rows)
        self.video = video
        self.vid = video.video_id
        self.ref = _Refusal(self.n, self.vid)
        self.fields: set[Any] = set()

    def column(self, name: str) -> list[Any]:
        """The field of every row, None where absent (no pass over the rows when no row has it)."""
        return [r.get(name) for r in self.rows] if name in self.fields else [None] * self.n

    def present(self, name: str, values: list[Any]) -> np.ndarray:
        """(N,) bool: the row gives ``name`` (not None); ``values`` is its :meth:`column`."""
        return _present(values) if name in self.fields else np.zeros(self.n, bool)

    def at(self, idx: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(N,) bool: ``values`` (one per ``idx``) placed at rows ``idx``, False elsewhere."""
        out = np.zeros(self.n, bool)
        out[idx] = values
        return out


def _check_structure(b: _Batch) -> None:
    """Every row is a dict (refused at once otherwise); record the fields any row has."""
    rows = b.rows
    if not set(map(type, rows)) <= {dict}:
        not_map = np.array([not isinstance(r, Mapping) for r in rows], bool)
        b.ref.add(not_map, None, lambda i: f"a row must be a dict of fields, got {type(rows[i]).__name__}")
        b.ref.raise_if_any()
    b.fields = set().union(*rows) if b.n else set()


def _field_misfits(b: _Batch, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unknown, extra): rows with a field no kind takes, and rows giving a field their kind does not take.

    One set comparison per row of a kind whose field set the batch's fields exceed; a
    Python loop only over the rows that fail it.
    """
    rows, n = b.rows, b.n
    suspect = np.zeros(n, bool)
    kinds_present = [c for c in range(-1, len(KINDS)) if (kind == c).any()]
    for code in kinds_present:
        allowed = _TAKES[code] if code >= 0 else _ALL_FIELDS
        if b.fields <= allowed:
            continue  # no row of this kind can carry a field outside its set
        if code == kind[0] and (kind == code).all():
            suspect = ~np.fromiter(map(allowed.issuperset, rows), bool, n)
        else:
            idx = np.flatnonzero(kind == code)
            suspect[idx] = ~np.fromiter(map(allowed.issuperset, [rows[i] for i in idx.tolist()]), bool, idx.size)
    unknown = np.zeros(n, bool)
    extra = np.zeros(n, bool)
    for i in np.flatnonzero(suspect).tolist():
        if not set(rows[i]) <= _ALL_FIELDS:
            unknown[i] = True
        elif kind[i] >= 0 and any(v is not None and k not in _TAKES[kind[i]] for k, v in rows[i].items()):
            extra[i] = True
    return unknown, extra


def _check_kind(b: _Batch) -> np.ndarray:
    """(N,) int64 kind codes (-1 unknown); refuse unknown fields, fields the kind does not take, a bad kind
    and a ``video_id`` naming another video."""
    rows, vid = b.rows, b.vid
    kinds_v = b.column("kind")
    kind = _codes(kinds_v, _KIND_CODE)
    unknown, extra = _field_misfits(b, kind)
    b.ref.add(
        unknown,
        lambda i: sorted(set(map(str, rows[i])) - _ALL_FIELDS)[0],
        lambda i: (
            f"unknown field(s) {sorted(set(map(str, rows[i])) - _ALL_FIELDS)}"
            + (" (annotation ids are assigned by the dataset)" if "annotation_id" in rows[i] else "")
            + f"; allowed: {', '.join(sorted(_ALL_FIELDS))}"
        ),
    )

    def _extra_names(i: int) -> list[str]:
        return sorted(k for k, v in rows[i].items() if v is not None and k not in _TAKES[kind[i]])

    def _extra(i: int) -> str:
        allowed = ", ".join(sorted(_TAKES[kind[i]]))
        return f"a {KINDS[kind[i]]} row does not take {', '.join(_extra_names(i))}; allowed: {allowed}"

    b.ref.add(extra, lambda i: _extra_names(i)[0], _extra)
    b.ref.add(
        kind < 0,
        "kind",
        lambda i: (
            ("missing" if kinds_v[i] is None else f"unknown kind {_show(kinds_v[i])}")
            + f"; allowed: {', '.join(KINDS)}"
        ),
    )
    vids = b.column("video_id")
    bad_vid = b.present("video_id", vids) & np.array([v != vid for v in vids], bool)
    b.ref.add(bad_vid, "video_id", lambda i: f"video_id {vids[i]!r} differs from the batch's video {vid!r}")
    return kind


def _check_label(b: _Batch, labels: Sequence[str]) -> np.ndarray:
    """(N,) int64 label codes (positions in ``labels``); refuse a missing or unknown label."""
    label_code = {name: i for i, name in enumerate(labels)}
    labels_v = b.column("label")
    label = _codes(labels_v, label_code)
    b.ref.add(
        label < 0,
        "label",
        lambda i: (
            ("missing" if labels_v[i] is None else f"unknown label {_show(labels_v[i])}")
            + f"; known: {listing(list(labels))} (add it with add_labels / `vidlabel add-labels`)"
        ),
    )
    return label


#: The types an attribute may have, and the Python values each takes.
ATTRIBUTE_TYPES = ("bool", "number", "text")
#: The longest text attribute, in characters: attributes are short facts (a pose, a colour), not notes.
TEXT_MAX = 200


def schema_text(schema: Mapping[str, str]) -> str:
    """``"occluded: bool, visibility: number"``, or "(none)"."""
    return ", ".join(f"{k}: {v}" for k, v in sorted(schema.items())) or "(none)"


def _attribute_value(kind: str, value: Any) -> tuple[Any, str | None]:
    """(stored value, None) of an attribute value of type ``kind``, or (None, why it is not one)."""
    if kind == "bool":
        if type(value) is bool or isinstance(value, np.bool_):
            return bool(value), None
        return None, "expected true or false"
    if kind == "number":
        ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)
        if ok and np.isfinite(float(value)):
            return float(value), None
        return None, "expected a finite number"
    if isinstance(value, str) and len(value) <= TEXT_MAX:
        return value, None
    return None, f"expected a string of at most {TEXT_MAX} characters"


def attribute_value(kind: str, value: Any) -> tuple[Any, str | None]:
    """(stored value, None) of an attribute value of type ``kind`` ("bool", "number", "text"), or (None, why
    it is not one)."""
    return _attribute_value(kind, value)


def attribute_bytes(values: Mapping[str, Any]) -> bytes:
    """The canonical JSON of checked attribute values (sorted keys, no spaces): what a row stores."""
    return json.dumps(dict(values), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _check_attributes(
    b: _Batch, label: np.ndarray, labels: Sequence[str], schema: Mapping[str, Mapping[str, str]]
) -> list[bytes] | None:
    """Each row's attributes as canonical JSON bytes (None when no row gives any); refuse a value that is not
    a mapping, a name the schema of the row's label lacks, or a value of another type than the schema's."""
    if "attributes" not in b.fields:
        return None
    values = b.column("attributes")
    out = [b""] * b.n
    for i, attrs in enumerate(values):
        if attrs is None or label[i] < 0:
            continue
        name = labels[label[i]]
        have = schema.get(name, {})
        where = f"label {name!r} has attributes {schema_text(have)}"
        if not isinstance(attrs, Mapping):
            b.ref.add_row(i, "attributes", f"{_show(attrs)} is not a mapping of attribute name -> value ({where})")
            continue
        kept: dict[str, Any] = {}
        for key, value in attrs.items():
            if value is None:
                continue
            if key not in have:
                b.ref.add_row(
                    i, "attributes", f"attribute {_show(key)} is not in the schema ({where}; add it with "
                    "Dataset.set_attribute_schema)",
                )  # fmt: skip
                break
            stored, why = _attribute_value(have[key], value)
            if why is not None:
                b.ref.add_row(i, "attributes", f"attribute {_show(key)} is {_show(value)}: {why} ({where})")
                break
            kept[key] = stored
        else:
            out[i] = attribute_bytes(kept) if kept else b""
    return out if any(out) else None


def _check_frames(b: _Batch, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) (N,) int64, end inclusive (= start when absent); refuse non-integers, frames outside
    ``[0, frame_count)``, ``end < start`` and a box or mask row spanning frames."""
    ref, vid, fc = b.ref, b.vid, b.video.frame_count
    starts_v = b.column("start_frame")
    start, bad = _ints(starts_v)
    ref.add(
        bad,
        "start_frame",
        lambda i: (
            ("missing" if starts_v[i] is None else f"{_show(starts_v[i])} {_not_int_why(starts_v[i], 'frame number')}")
            + f"; allowed: integers in [0, {fc})"
        ),
    )
    ends_v = b.column("end_frame")
    has_end = b.present("end_frame", ends_v)
    if has_end.any():
        end, bad_end = _ints([e if e is not None else 0 for e in ends_v])
        end = np.where(has_end, end, start)
    else:
        end, bad_end = start.copy(), np.zeros(b.n, bool)
    ref.add(bad_end & has_end, "end_frame",
            lambda i: f"{_show(ends_v[i])} {_not_int_why(ends_v[i], 'frame number')} (inclusive)")  # fmt: skip
    ok = ~ref.bad
    ref.add(
        ok & ((start < 0) | (start >= fc)),
        "start_frame",
        lambda i: f"frame {start[i]} out of range [0, {fc}) of video {vid!r}",
    )
    ref.add(
        ok & ((end < 0) | (end >= fc)),
        "end_frame",
        lambda i: f"frame {end[i]} out of range [0, {fc}) of video {vid!r} (end_frame is inclusive)",
    )
    ref.add(
        ok & has_end & (end < start),
        "end_frame",
        lambda i: f"end_frame {end[i]} < start_frame {start[i]}; allowed: end_frame >= start_frame (inclusive)",
    )
    ref.add(
        ok & has_end & (kind != _MARKER) & (end != start),
        "end_frame",
        lambda i: (
            f"end_frame {end[i]} != start_frame {start[i]}: a {KINDS[kind[i]]} row covers one frame;"
            " use a marker for a range"
        ),
    )
    return start, end


def _check_origin_status(b: _Batch) -> tuple[np.ndarray, np.ndarray]:
    """(origin, status) (N,) int64 codes, "human" and "unreviewed" where absent; refuse unknown values."""
    origins_v = b.column("origin")
    origin = _codes(origins_v, _ORIGIN_CODE)
    origin[~b.present("origin", origins_v)] = _ORIGIN_CODE["human"]
    b.ref.add(origin < 0, "origin", lambda i: f"unknown origin {_show(origins_v[i])}; allowed: {', '.join(ORIGINS)}")
    status_v = b.column("status")
    status = _codes(status_v, _STATUS_CODE)
    status[~b.present("status", status_v)] = _STATUS_CODE["unreviewed"]
    b.ref.add(status < 0, "status", lambda i: f"unknown status {_show(status_v[i])}; allowed: {', '.join(STATUSES)}")
    return origin, status


def _check_view(b: _Batch, views: Mapping[str, tuple[int, View]]) -> tuple[np.ndarray, dict[int, View]]:
    """((N,) int64 view codes, -1 for none; code -> View); refuse an unknown view or one cropping outside."""
    view_v = b.column("view_id")
    view = _codes(view_v, {k: c for k, (c, _) in views.items()})
    has_view = b.present("view_id", view_v)
    view[~has_view] = -1
    b.ref.add(
        has_view & (view < 0),
        "view_id",
        lambda i: (
            f"unknown view {_show(view_v[i])}; known: {listing(sorted(views))} "
            "(add it with add_view / `vidlabel add-view`)"
        ),
    )
    W, H = b.video.width, b.video.height
    view_by_code = {c: v for c, v in views.values()}
    for code in sorted(set(view[view >= 0].tolist())):
        v = view_by_code[code]
        if v.crop[2] > W or v.crop[3] > H:
            msg = f"view {v.view_id!r} crops {v.crop}, outside the {W}x{H} frame of video {b.vid!r}"
            b.ref.add(view == code, "view_id", msg)
    return view, view_by_code


def _check_confidence(b: _Batch) -> np.ndarray:
    """(N,) float64 confidence, NaN for none; refuse anything but a number in [0, 1]."""
    conf_v = b.column("confidence")
    conf, bad = np.full(b.n, np.nan), np.zeros(b.n, bool)
    if "confidence" in b.fields:
        conf, has_conf, bad = _floats(conf_v)
        with np.errstate(invalid="ignore"):
            bad |= has_conf & ~((conf >= 0) & (conf <= 1))
    b.ref.add(bad, "confidence", lambda i: f"{_show(conf_v[i])} is not a number in [0, 1]; allowed: [0, 1] or None")
    return conf


def _not_int_why(value: Any, what: str) -> str:
    """Why ``value`` was refused as an integer: "does not fit in 64 bits" for a whole number too large for
    int64 (it is an integer, so "is not an integer" would puzzle), else "is not an integer <what>"."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and not -(2**63) <= int(value) < 2**63:
        return "does not fit in 64 bits"
    return f"is not an integer {what}"


def _check_track_id(b: _Batch) -> np.ndarray:
    """(N,) int64 track ids, -1 for none; refuse anything but an integer >= 0."""
    track_v = b.column("track_id")
    has_track = b.present("track_id", track_v)
    track, bad = np.full(b.n, -1, np.int64), np.zeros(b.n, bool)
    if has_track.any():
        track, bad = _ints(track_v if has_track.all() else [t if t is not None else 0 for t in track_v])
        bad = has_track & (bad | (track < 0))
        track = np.where(has_track, track, -1)
    b.ref.add(bad, "track_id", lambda i: f"{_show(track_v[i])} {_not_int_why(track_v[i], '>= 0')}; allowed: "
              f"integers in [0, 2**63) or None")  # fmt: skip
    return track


def _check_boxes(b: _Batch, kind: np.ndarray, clip: bool) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """((N, 4) float64 xyxy, NaN where none; has_box; the given values): refuse a box row without a box,
    a box that is not 4 finite numbers, then (:func:`_check_box_bounds`) an inverted or outside box."""
    box = np.full((b.n, 4), np.nan)
    box_v = b.column("box")
    has_box = b.present("box", box_v)
    b.ref.add(
        (kind == _BOX) & ~has_box,
        "box",
        lambda i: "missing; a box row needs box = (x0, y0, x1, y1) pixel corners",
    )
    bidx = np.flatnonzero(has_box & (kind != _MARKER))
    if bidx.size:
        parsed, bad_parse = _boxes(box_v if bidx.size == b.n else [box_v[i] for i in bidx.tolist()])
        b.ref.add(b.at(bidx, bad_parse), "box", lambda i: f"{_show(box_v[i])} is not 4 numbers (x0, y0, x1, y1)")
        finite = np.isfinite(parsed).all(axis=1) & ~bad_parse
        b.ref.add(
            b.at(bidx, ~finite & ~bad_parse),
            "box",
            lambda i: f"{_show(box_v[i])} holds NaN or infinity; allowed: finite pixel corners",
        )
        box[bidx] = _check_box_bounds(b, bidx, parsed, finite, box_v, clip)
    return box, has_box, box_v


def _check_box_bounds(
    b: _Batch, bidx: np.ndarray, xyxy: np.ndarray, finite: np.ndarray, box_v: list[Any], clip: bool
) -> np.ndarray:
    """The (K, 4) boxes of rows ``bidx``, clipped to the frame if ``clip``; refuse inverted boxes and boxes
    leaving the frame (with ``clip``: only those entirely outside)."""
    W, H = b.video.width, b.video.height
    with np.errstate(invalid="ignore", over="ignore"):  # over: corners past float32's 3.4e38 (RuntimeWarning)
        x32 = xyxy.astype(np.float32)  # as stored: a box that is wider than 0 only in float64 is empty there
        inverted = finite & ((xyxy[:, 2] <= xyxy[:, 0]) | (xyxy[:, 3] <= xyxy[:, 1]))
        # a box past float32's range is far outside the frame, not empty: (1e308, 2e308) are both inf there
        inverted |= finite & np.isfinite(x32).all(axis=1) & ((x32[:, 2] <= x32[:, 0]) | (x32[:, 3] <= x32[:, 1]))
        outside = finite & ~inverted & ((xyxy[:, 0] < 0) | (xyxy[:, 1] < 0) | (xyxy[:, 2] > W) | (xyxy[:, 3] > H))
    b.ref.add(
        b.at(bidx, inverted),
        "box",
        lambda i: (
            f"{_show(box_v[i])} is empty or inverted; allowed: x0 < x1 and y0 < y1 (xyxy corners, compared"
            " as float32, the stored type)"
        ),
    )
    if not clip:
        b.ref.add(
            b.at(bidx, outside),
            "box",
            lambda i: (
                f"{_show(box_v[i])} leaves the frame; allowed: 0 <= x0 < x1 <= {W}, 0 <= y0 < y1 <= {H}"
                " (pass clip=True to clip boxes to the frame: --clip of add-annotations; import clips unless"
                " --no-clip)"
            ),
        )
        return xyxy
    cb = xyxy.copy()
    cb[:, [0, 2]] = np.clip(cb[:, [0, 2]], 0, W)
    cb[:, [1, 3]] = np.clip(cb[:, [1, 3]], 0, H)
    gone = outside & ((cb[:, 2] <= cb[:, 0]) | (cb[:, 3] <= cb[:, 1]))
    b.ref.add(
        b.at(bidx, gone),
        "box",
        lambda i: f"{_show(box_v[i])} lies entirely outside the {W}x{H} frame; nothing is left after clipping",
    )
    return np.where(outside[:, None], cb, xyxy)


def _check_masks(
    b: _Batch,
    kind: np.ndarray,
    view: np.ndarray,
    view_by_code: Mapping[int, View],
    box: np.ndarray,
    has_box: np.ndarray,
    box_v: list[Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mask_offsets, mask_counts, mask_size) of the batch (CSR, see :class:`RowColumns`); each mask row's
    box becomes its mask's bbox (in ``box``, in place). Refuses a missing, misfit or empty mask and a given
    box that is not the mask's bbox. A Python loop over mask rows only."""
    H, W = b.video.height, b.video.width
    mask_size = np.zeros((b.n, 2), np.int32)
    lengths = np.zeros(b.n, np.int64)
    pieces: list[bytes] = []
    for i in np.flatnonzero(kind == _MASK).tolist():
        value = b.rows[i].get("mask")
        if value is None:
            b.ref.add_row(i, "mask", "missing; a mask row needs an (H, W) array or a COCO RLE dict")
            continue
        crop = view_by_code[int(view[i])].crop if view[i] >= 0 else None
        parsed_mask = _parse_mask(value, (H, W), crop)
        if isinstance(parsed_mask, str):
            b.ref.add_row(i, "mask", parsed_mask)
            continue
        counts, bbox = parsed_mask
        if has_box[i] and not np.allclose(box[i], bbox, atol=1e-6):
            b.ref.add_row(i, "box", f"{_show(box_v[i])} is not the mask's bbox {bbox}; omit box on mask rows")
            continue
        box[i] = bbox
        mask_size[i] = (H, W)
        lengths[i] = len(counts)
        pieces.append(counts)
    offsets = np.zeros(b.n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    counts_arr = np.frombuffer(b"".join(pieces), np.uint8).copy() if pieces else np.zeros(0, np.uint8)
    return offsets, counts_arr, mask_size


def _check_track_labels(b: _Batch, track: np.ndarray, label: np.ndarray, labels: Sequence[str]) -> None:
    """Refuse rows (not already bad) giving a track id a second label within the batch."""
    tidx = np.flatnonzero((track >= 0) & ~b.ref.bad)
    if not tidx.size:
        return
    tt, tl = track[tidx], label[tidx].astype(np.int64)
    if tt.max() < 2**40 and len(labels) < 2**20:
        tracks_of_pairs = np.unique((tt << 20) | tl) >> 20  # one sort of packed (track, label)
    else:
        tracks_of_pairs = unique_rows(np.stack([tt, tl], axis=1))[0][:, 0]
    multi = np.flatnonzero(np.diff(tracks_of_pairs) == 0)
    if not multi.size:
        return
    t = tracks_of_pairs[multi[0]]
    first_label = label[tidx[track[tidx] == t][0]]
    rows_t = tidx[(track[tidx] == t) & (label[tidx] != first_label)]
    b.ref.add(
        b.at(rows_t, np.ones(rows_t.size, bool)),
        "track_id",
        lambda i: (
            f"track {track[i]} has label {labels[label[i]]!r} here but {labels[first_label]!r} in "
            f"an earlier row of the batch; allowed: one label per track in a video"
        ),
    )


def check_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    video: VideoMetadata,
    labels: Sequence[str],
    views: Mapping[str, tuple[int, View]],
    clip: bool = False,
    attribute_schema: Mapping[str, Mapping[str, str]] | None = None,
) -> RowColumns:
    """Validate a batch of annotation rows for one video and return them in columnar form.

    Parameters
    ----------
    rows : sequence of dict
        The spec's rows: ``kind`` ("box", "mask", "marker"), ``label``,
        ``start_frame``, ``end_frame`` (markers; inclusive; boxes and masks
        may repeat ``start_frame``), ``box`` (x0, y0, x1, y1 pixel corners),
        ``mask`` ((H, W) array or COCO RLE dict; its box is filled in),
        ``track_id`` (int >= 0), ``origin`` ("human" by default, "model"),
        ``confidence`` ([0, 1]), ``status`` ("unreviewed" by default,
        "approved", "rejected"), ``view_id``. ``video_id`` may be present if
        it names ``video``. A value of None means the field is absent.
    video : VideoMetadata
        The video the rows belong to (frame count and size bound them).
    labels : sequence of str
        The label vocabulary; a row's label code is its position.
    views : mapping view_id -> (code, View)
        Known views and the code stored for each.
    clip : bool
        Clip boxes that leave the frame instead of refusing them (a box
        entirely outside is still refused).
    attribute_schema : mapping label -> {name: "bool" | "number" | "text"}, optional
        What a row's ``attributes`` (a mapping name -> value; None values are absent) may hold, per label.

    Returns
    -------
    RowColumns

    Raises
    ------
    AnnotationError
        On the first bad row (lowest index): unknown label, view or kind;
        frame outside ``[0, frame_count)``; ``end_frame < start_frame``;
        empty, inverted, NaN or infinite box; box outside the frame (unless
        ``clip``); mask of the wrong size or empty; confidence outside
        [0, 1]; a field the kind does not take; unknown status or origin; a
        track id with two labels in the batch. ``err.row`` (0-based) and
        ``err.field`` (the offending field's name, or None when the row is not
        a dict) say where; ``err.detail`` is the message without the row.
    """
    b = _Batch(list(rows), video)
    _check_structure(b)
    kind = _check_kind(b)
    label = _check_label(b, labels)
    start, end = _check_frames(b, kind)
    origin, status = _check_origin_status(b)
    view, view_by_code = _check_view(b, views)
    conf = _check_confidence(b)
    track = _check_track_id(b)
    box, has_box, box_v = _check_boxes(b, kind, clip)
    mask_offsets, mask_counts, mask_size = _check_masks(b, kind, view, view_by_code, box, has_box, box_v)
    _check_track_labels(b, track, label, labels)
    attributes = _check_attributes(b, label, labels, attribute_schema or {})
    b.ref.raise_if_any()
    columns = {
        "kind": kind,
        "label": label,
        "start_frame": start,
        "end_frame": end,
        "box": box,
        "track_id": track,
        "origin": origin,
        "confidence": conf,
        "status": status,
        "view": view,
        "mask_offsets": mask_offsets,
        "mask_counts": mask_counts,
        "mask_size": mask_size,
    }
    return RowColumns({name: columns[name] for name in BATCH_COLUMNS}, attributes)


def check_tracks(
    cols: RowColumns,
    stored: Mapping[int, int],
    *,
    labels: Sequence[str],
    video_id: str,
    earlier: Mapping[int, int] | None = None,
) -> None:
    """Refuse rows whose track id already carries another label in the video.

    Parameters
    ----------
    cols : RowColumns
        A batch validated by :func:`check_rows`.
    stored : mapping track_id -> label code
        The tracks already stored for the video (rows of every status count).
    labels : sequence of str
        The label vocabulary (for the message).
    video_id : str
    earlier : mapping track_id -> label code, optional
        The tracks earlier batches of the same call opened (a large import's): refused as an earlier row of the
        batch would be.

    Raises
    ------
    AnnotationError
        Naming the first such row, its track, its label and the stored label.
    """
    n = cols.n_rows
    ref = _Refusal(n, video_id)
    tr, label = cols["track_id"], cols["label"]
    if earlier:
        _refuse_clashes(ref, tr, label, earlier, lambda t: "an earlier row of the batch", labels)
    if stored:
        _refuse_clashes(ref, tr, label, stored, lambda t: f"rows already stored for video {video_id!r}", labels)
    ref.raise_if_any()


def _refuse_clashes(
    ref: _Refusal,
    tr: np.ndarray,
    label: np.ndarray,
    tracks: Mapping[int, int],
    where: Callable[[int], str],
    labels: Sequence[str],
) -> None:
    """Mark the rows whose track is in ``tracks`` with another label."""
    keys = np.fromiter(tracks.keys(), np.int64, len(tracks))
    vals = np.fromiter(tracks.values(), np.int64, len(tracks))
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    pos = np.clip(np.searchsorted(keys, tr), 0, keys.size - 1)
    clash = (tr >= 0) & (keys[pos] == tr) & (vals[pos] != label)
    ref.add(
        clash,
        "track_id",
        lambda i: (
            f"track {tr[i]} has label {labels[label[i]]!r} here but {labels[vals[pos[i]]]!r} in "
            f"{where(int(tr[i]))}; allowed: one label per track in a video"
        ),
    )
