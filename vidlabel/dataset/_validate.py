"""Checks at the dataset's boundary and over a whole dataset, with stable problem codes.

(Rows are checked one batch at a time before they are written, by
:func:`vidlabel.dataset._rows.check_rows`.) :func:`validate_table` looks at rows
already stored (a snapshot of the dataset) together with the videos and
views, and returns :class:`Problem` records. Codes are stable; their
severities are in :data:`PROBLEM_CODES`. A build is refused while any
problem has severity ``"error"``.

Problem codes
-------------
=====================  ========  =====================================================================
code                   severity  meaning
=====================  ========  =====================================================================
missing_video_file     warning   no source recorded, or the recorded local path does not exist.
                                 A warning: a release can be exported or trained from a store
                                 without the videos; readers fail later with VideoNotFoundError.
                                 An error with ``for_export=True`` (export needs the file).
video_file_changed     warning   the file at the recorded path no longer holds the registered bytes (its
                                 content hash differs): readers and export refuse it
                                 (VideoChangedError). Checked only with ``hash_files=True``.
                                 An error with ``for_export=True``.
frame_index_stale      warning   the stored frame index was read from another file (its content hash
                                 differs from the video's); readers ignore it with a warning.
frame_index_length     error     the frame index covers a different number of frames than the
                                 metadata's frame_count: frame numbers cannot be trusted.
frame_out_of_range     error     a row's frames lie outside [0, frame_count) (e.g. after update_video).
box_out_of_frame       error     a box leaves the frame (e.g. after update_video changed the size).
invalid_box            error     a box or mask row whose box is NaN, infinite, empty or inverted.
mask_size_mismatch     error     a mask whose size is not the video's frame size.
view_outside_frame     error     a view's crop does not fit inside a video's frame (every view is
                                 checked against every video, whether or not rows use the view); a
                                 warning where no row of that video uses the view: the release may
                                 hold it (a smaller video added after the view would otherwise block
                                 every build), and FrameSamples with that view refuses the video.
track_label_conflict   error     one track id carries two labels in one video.
duplicate_annotation   warning   same video, kind, label, view, frames, box (and mask) as an earlier row.
track_frame_conflict   warning   one track has two rows of the same kind and view on the same frame.
box_outside_view       warning   a view's row whose box does not overlap the view's crop.
untrusted_frame        warning   a box or mask row on a frame without a trustworthy picture (the
                                 video's ``untrusted_frames``: after a decode error before the next
                                 keyframe, or lost; a truncated or corrupt file). FrameSamples and
                                 export leave the row out: the reader refuses that frame.
=====================  ========  =====================================================================

``for_export=True`` (``vidlabel validate --for-export``) rates the codes in
:data:`EXPORT_ERRORS` as errors: export refuses those videos, so a validate
for export without errors means export will read every video.

Existence is judged with ``os.path.exists``. Video files are hashed only when
asked (``hash_files=True``, what ``Dataset.validate`` does by default: every
file is read once per process); the index's staleness is judged from the
stored hashes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import numpy as np

from vidlabel.dataset._rows import unique_rows
from vidlabel.spec import KINDS, STATUSES, AnnotationTable, VideoMetadata, View, ranges_text

__all__ = [
    "EXPORT_ERRORS",
    "PROBLEM_CODES",
    "Problem",
    "attribute_summary",
    "for_export",
    "untrusted_summary",
    "validate_table",
    "video_file_problems",
]

_MASK, _MARKER = KINDS.index("mask"), KINDS.index("marker")

Severity = Literal["error", "warning"]

#: Stable problem codes and their severities (see the module docstring for their meaning).
PROBLEM_CODES: dict[str, Severity] = {
    "missing_video_file": "warning",
    "video_file_changed": "warning",
    "frame_index_stale": "warning",
    "frame_index_length": "error",
    "frame_out_of_range": "error",
    "box_out_of_frame": "error",
    "invalid_box": "error",
    "mask_size_mismatch": "error",
    "view_outside_frame": "error",
    "track_label_conflict": "error",
    "duplicate_annotation": "warning",
    "track_frame_conflict": "warning",
    "box_outside_view": "warning",
    "untrusted_frame": "warning",
}

#: Codes that are errors for export (``for_export=True``): export refuses the video.
EXPORT_ERRORS: frozenset[str] = frozenset({"missing_video_file", "video_file_changed"})


@dataclass(frozen=True)
class Problem:
    """One finding of :func:`validate_table` / ``Dataset.validate``.

    Parameters
    ----------
    code : str
        A stable code from :data:`PROBLEM_CODES`.
    severity : {"error", "warning"}
        ``"error"`` refuses a build.
    message : str
        What is wrong and where, for people.
    video_id : str, optional
        The video concerned.
    annotation_id : int, optional
        The annotation row concerned.
    """

    code: str
    severity: Severity
    message: str
    video_id: str | None = None
    annotation_id: int | None = None

    def __str__(self) -> str:
        where = []
        if self.video_id is not None:
            where.append(f"video {self.video_id!r}")
        if self.annotation_id is not None:
            where.append(f"annotation {self.annotation_id}")
        loc = f" ({', '.join(where)})" if where else ""
        return f"{self.severity} {self.code}{loc}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: code, severity, message, video_id, annotation_id."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "video_id": self.video_id,
            "annotation_id": self.annotation_id,
        }


def for_export(problems: Sequence[Problem]) -> list[Problem]:
    """The problems with the codes of :data:`EXPORT_ERRORS` rated ``"error"`` (export refuses those videos)."""
    return [
        dataclasses.replace(p, severity="error") if p.code in EXPORT_ERRORS and p.severity != "error" else p
        for p in problems
    ]


def untrusted_summary(meta: VideoMetadata) -> str | None:
    """One line on a video's frames without a trustworthy picture, or None when it has none (or none known).

    For example ``"video 't': 2 frames have no trustworthy picture (33..34: ...)"``.
    """
    n = meta.untrusted_count
    if not n:
        return None
    frames = "1 frame has" if n == 1 else f"{n} frames have"
    return (
        f"video {meta.video_id!r}: {frames} no trustworthy picture ({ranges_text(meta.untrusted_frames or ())}: "
        "they follow a decode error before the next keyframe, or their packet does not decode, or the decoder "
        "marked them or their packet corrupt; the file may be truncated or corrupt)"
    )


def _problem(code: str, message: str, video_id: str | None = None, annotation_id: int | None = None) -> Problem:
    return Problem(code, PROBLEM_CODES[code], message, video_id, annotation_id)


# --------------------------------------------------------------------------------------------------
# Whole-dataset checks
# --------------------------------------------------------------------------------------------------


def _local_path(uri: str) -> str | None:
    """The local file path of a source uri, or None when it is not a local file (s3://, http://, ...)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # not a Windows drive letter
        return None
    return uri


def _changed_problem(meta: VideoMetadata, path: Path, base: Path | None) -> Problem | None:
    """``video_file_changed`` when the file's content hash differs from the registered one (None when it matches)."""
    from vidlabel.errors import VidlabelError
    from vidlabel.video._probe import content_hash
    from vidlabel.video._reader import video_changed_message

    if meta.content_hash is None:
        return None
    try:
        actual = content_hash(path)
    except (VidlabelError, OSError):  # unreadable: readers report it
        return None
    if actual == meta.content_hash:
        return None
    message = video_changed_message(
        meta.video_id, path, meta.content_hash, actual, dataset=None if base is None else str(base)
    )
    return _problem("video_file_changed", message, meta.video_id)


def _video_problems(
    meta: VideoMetadata, base: Path | None, check_files: bool, hash_files: bool, roots: Sequence[str | os.PathLike[str]]
) -> list[Problem]:
    vid = meta.video_id
    out: list[Problem] = []
    if check_files:
        from vidlabel.video._locate import roots_not_here, tried_words, video_path_candidates  # as export looks

        if not meta.sources:
            out.append(_problem("missing_video_file", "no source file is recorded for this video", vid))
        else:
            path = _local_path(meta.sources[0]["uri"])
            if path is not None:
                candidates = []
                for local in (_local_path(s["uri"]) for s in meta.sources):  # every recorded file, as export tries
                    if local is not None:
                        candidates.append(Path(local))
                        if base is not None and not Path(local).is_absolute():
                            candidates.append(base / local)
                if roots:  # then where export looks under its roots (the recorded paths come first)
                    candidates += list(video_path_candidates(meta, roots))[len(meta.sources) :]
                found = [c for c in candidates if c.is_file()]  # as export looks (resolve_video_path)
                if not found:
                    tried = ", ".join(tried_words(c) for c in candidates) + roots_not_here(roots)
                    out.append(_problem("missing_video_file", f"video file not found (tried {tried})", vid))
                elif hash_files:
                    changed = _changed_problem(meta, found[0], base)
                    if changed is not None:
                        out.append(changed)
    fi = meta.frame_index
    if fi is not None:
        if fi.content_hash is not None and meta.content_hash is not None and fi.content_hash != meta.content_hash:
            out.append(
                _problem(
                    "frame_index_stale",
                    f"the frame index was read from a file with content hash {fi.content_hash}, but the video's "
                    f"is {meta.content_hash}; run `vidlabel index` to rebuild it",
                    vid,
                )
            )
        if fi.frame_count != meta.frame_count:
            out.append(
                _problem(
                    "frame_index_length",
                    f"the frame index covers {fi.frame_count} frames but the metadata says frame_count="
                    f"{meta.frame_count}; re-probe the video (`vidlabel index`)",
                    vid,
                )
            )
    return out


def video_file_problems(
    meta: VideoMetadata,
    base: Path | None,
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    hash_files: bool,
) -> list[Problem]:
    """The ``missing_video_file`` and ``video_file_changed`` problems of one video (export's file checks)."""
    from vidlabel.video._locate import roots_of

    problems = _video_problems(meta, base, True, hash_files, roots_of(roots))
    return [p for p in problems if p.code in EXPORT_ERRORS]


def _view_problems(
    table: AnnotationTable, videos: Mapping[str, VideoMetadata], views: Mapping[str, View]
) -> list[Problem]:
    """``view_outside_frame`` for every (view, video) pair whose crop does not fit the frame, used or not."""
    problems: list[Problem] = []
    for vid in sorted(videos):
        meta = videos[vid]
        for view_id in sorted(views):
            x0, y0, x1, y1 = views[view_id].crop
            if x1 <= meta.width and y1 <= meta.height:
                continue
            rows = np.zeros(0, np.int64)
            if vid in table.video_ids and view_id in table.view_ids:
                use = (table.video == table.video_ids.index(vid)) & (table.view == table.view_ids.index(view_id))
                rows = np.flatnonzero(use)
            used = {0: "no rows use it", 1: "1 row uses it"}.get(rows.size, f"{rows.size} rows use it")
            if not rows.size:
                used += "; FrameSamples with this view refuses this video: leave it out with videos="
            problem = _problem(
                "view_outside_frame",
                f"view {view_id!r} crops {(x0, y0, x1, y1)}, which does not fit inside the "
                f"{meta.width}x{meta.height} frame ({used})",
                vid,
                int(table.annotation_id[rows[0]]) if rows.size else None,
            )
            problems.append(problem if rows.size else dataclasses.replace(problem, severity="warning"))
    return problems


def row_hash(
    cols: Sequence[np.ndarray], *, seed: int = 0xCBF29CE484222325, prime: int = 0x100000001B3, shift: int = 29
) -> np.ndarray:
    """A 64-bit mixing hash of each row over integer/float columns (wrapping arithmetic); another ``seed``,
    ``prime`` and ``shift`` give an independent one."""
    n = cols[0].shape[0]
    h = np.full(n, seed, np.uint64)
    mul = np.uint64(prime)
    with np.errstate(over="ignore"):
        for c in cols:
            c = np.ascontiguousarray(c)
            if c.dtype.kind == "f":
                c = c.astype(np.float64)
                c = np.where(np.isnan(c), np.nan, c)  # one NaN pattern
                c = c.view(np.uint64)
            else:
                c = c.astype(np.int64).view(np.uint64)
            h = (h ^ c) * mul
            h ^= h >> np.uint64(shift)
    return h


def validate_table(
    table: AnnotationTable,
    videos: Mapping[str, VideoMetadata],
    views: Mapping[str, View],
    *,
    check_files: bool = True,
    hash_files: bool = False,
    base: str | os.PathLike[str] | None = None,
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
) -> list[Problem]:
    """Check annotation rows against their videos and views; vectorised over the rows.

    Parameters
    ----------
    table : AnnotationTable
        The rows to check (``Dataset.validate`` passes the live unreviewed and
        approved rows: what a build would pin).
    videos : mapping video_id -> VideoMetadata
        Every registered video (each is checked, with or without rows).
    views : mapping view_id -> View
    check_files : bool
        Report ``missing_video_file`` (no file at the recorded path, nor under
        ``roots``: missing, or a folder).
    hash_files : bool
        With ``check_files``, also hash every existing file (once per process)
        and report ``video_file_changed`` when it differs from the registered
        content hash.
    base : path, optional
        Folder that relative source paths are also tried against (the dataset folder).
    roots : path or sequence of path
        Folders to look under for moved files, as export's ``roots`` (:func:`~vidlabel.video.video_path_candidates`);
        one folder may be given alone.

    Returns
    -------
    list of Problem
        Sorted by video id, annotation id and code. See :data:`PROBLEM_CODES`.

    Raises
    ------
    OptionError
        If ``roots`` is neither a path nor a sequence of paths.
    """
    from vidlabel.video._locate import roots_of

    roots = roots_of(roots)
    problems: list[Problem] = []
    base_path = Path(base) if base is not None else None
    for vid in sorted(videos):
        problems.extend(_video_problems(videos[vid], base_path, check_files, hash_files, roots))
    problems.extend(_view_problems(table, videos, views))
    if len(table) == 0:
        return _sorted(problems)
    rows = _Rows(table, videos, problems)
    in_range = _frame_problems(rows)
    finite = _box_problems(rows)
    _untrusted_problems(rows, in_range)
    _mask_size_problems(rows)
    _view_box_problems(rows, views, finite)
    _track_label_problems(rows)
    duplicates = _duplicate_problems(rows)
    _track_frame_problems(rows, duplicates)
    return _sorted(problems)


class _Rows:
    """The table under check, with each row's video frame count and size, and the problems found so far."""

    def __init__(self, table: AnnotationTable, videos: Mapping[str, VideoMetadata], problems: list[Problem]) -> None:
        self.table = table
        self.problems = problems
        self.vids = table.video_ids
        self.ids = table.annotation_id
        self.metas = [videos.get(v) for v in self.vids]
        self.fc = np.array([m.frame_count if m else 0 for m in self.metas], np.int64)[table.video]
        self.W = np.array([m.width if m else 0 for m in self.metas], np.float64)[table.video]
        self.H = np.array([m.height if m else 0 for m in self.metas], np.float64)[table.video]
        self.spatial = table.kind != _MARKER

    def emit(self, code: str, rows: np.ndarray, message: Callable[[int], str]) -> None:
        """One problem ``code`` per row in ``rows``, worded by ``message(row)``."""
        t = self.table
        for i in rows.tolist():
            self.problems.append(_problem(code, message(i), self.vids[t.video[i]], int(self.ids[i])))


def _frame_problems(r: _Rows) -> np.ndarray:
    """frame_out_of_range; returns (N,) bool: the row's frames lie inside its video."""
    start, end, fc = r.table.start_frame, r.table.end_frame, r.fc
    bad = (start < 0) | (end >= fc) | (end < start)
    r.emit(
        "frame_out_of_range",
        np.flatnonzero(bad),
        lambda i: f"frames {start[i]}..{end[i]} (inclusive) outside [0, {fc[i]}) of the video",
    )
    return ~bad


def _box_problems(r: _Rows) -> np.ndarray:
    """invalid_box, box_out_of_frame; returns (N,) bool: the box is finite."""
    box, W, H, spatial = r.table.box, r.W, r.H, r.spatial
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(box).all(axis=1)
        invalid = spatial & (~finite | (box[:, 2] <= box[:, 0]) | (box[:, 3] <= box[:, 1]))
        outside = spatial & ~invalid & ((box[:, 0] < 0) | (box[:, 1] < 0) | (box[:, 2] > W) | (box[:, 3] > H))
    r.emit("invalid_box", np.flatnonzero(invalid), lambda i: f"box {box[i].tolist()} is NaN, empty or inverted")
    r.emit(
        "box_out_of_frame",
        np.flatnonzero(outside),
        lambda i: f"box {box[i].tolist()} leaves the {int(W[i])}x{int(H[i])} frame",
    )
    return finite


def _untrusted_problems(r: _Rows, in_range: np.ndarray) -> None:
    """untrusted_frame: a box or mask on a frame without a trustworthy picture."""
    t = r.table
    start, kind = t.start_frame, t.kind
    untrusted = np.zeros(len(t), bool)
    for vcode, meta in enumerate(r.metas):
        if meta is not None and meta.untrusted_count:
            rows = np.flatnonzero(r.spatial & (t.video == vcode) & in_range)
            untrusted[rows] = meta.untrusted_mask()[start[rows]]
    r.emit(
        "untrusted_frame",
        np.flatnonzero(untrusted),
        lambda i: (
            f"{KINDS[kind[i]]} on frame {start[i]}, which has no trustworthy picture (the file may be truncated "
            "or corrupt; the reader refuses the frame); FrameSamples and export leave this annotation out"
        ),
    )


def _mask_size_problems(r: _Rows) -> None:
    """mask_size_mismatch: a mask whose size is not its video's frame size."""
    is_mask = r.table.kind == _MASK
    if not is_mask.any():
        return
    ms, W, H = r.table.mask_size, r.W, r.H
    wrong = is_mask & ((ms[:, 0] != H) | (ms[:, 1] != W))
    r.emit(
        "mask_size_mismatch",
        np.flatnonzero(wrong),
        lambda i: f"mask is {ms[i, 0]}x{ms[i, 1]} (HxW) but the frame is {int(H[i])}x{int(W[i])}",
    )


def _view_box_problems(r: _Rows, views: Mapping[str, View], finite: np.ndarray) -> None:
    """box_outside_view: a box that does not overlap its view's crop (crops inside every frame:
    :func:`_view_problems`)."""
    t = r.table
    has_view = t.view >= 0
    if not has_view.any():
        return
    box = t.box
    crops = np.array([views[v].crop if v in views else (0, 0, 0, 0) for v in t.view_ids], np.float64)
    c = crops[np.where(has_view, t.view, 0)]
    with np.errstate(invalid="ignore"):
        away = (
            has_view
            & r.spatial
            & finite
            & ((box[:, 2] <= c[:, 0]) | (box[:, 0] >= c[:, 2]) | (box[:, 3] <= c[:, 1]) | (box[:, 1] >= c[:, 3]))
        )
    r.emit(
        "box_outside_view",
        np.flatnonzero(away),
        lambda i: f"box {box[i].tolist()} does not overlap the crop of view {t.view_ids[t.view[i]]!r}",
    )


def _track_label_problems(r: _Rows) -> None:
    """track_label_conflict: one problem per (video, track) carrying two labels, on its first other-label row."""
    t = r.table
    tr = np.flatnonzero(t.track_id >= 0)
    if not tr.size:
        return
    tv, tt, tl = t.video[tr].astype(np.int64), t.track_id[tr], t.label[tr].astype(np.int64)
    if tt.max() < 2**31 and tv.max() < 2**16 and tl.max() < 2**16:
        triples = np.unique((tv << 47) | (tt << 16) | tl)  # exact packing: one sort of int64
        pairs = triples >> 16
        clash = np.unique(pairs[1:][pairs[1:] == pairs[:-1]])
        conflicts = [(int(p >> 31), int(p & (2**31 - 1))) for p in clash.tolist()]
    else:
        uniq, _ = unique_rows(np.stack([tv, tt, tl], 1))
        dup = (np.diff(uniq[:, 0]) == 0) & (np.diff(uniq[:, 1]) == 0)
        conflicts = sorted({(int(uniq[j, 0]), int(uniq[j, 1])) for j in np.flatnonzero(dup).tolist()})
    for v, track in conflicts:
        rows_vt = tr[(tv == v) & (tt == track)]
        labs = t.label[rows_vt]
        names = [t.labels[int(lab)] for lab in dict.fromkeys(labs.tolist())]
        row = int(rows_vt[np.flatnonzero(labs != labs[0])[0]])
        message = f"track {track} carries labels {', '.join(map(repr, names))}; allowed: one label per track"
        r.problems.append(_problem("track_label_conflict", message, r.vids[v], int(r.ids[row])))


def _mask_keys(offsets: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A hash of each row's mask RLE bytes (CSR ``offsets`` of n + 1 into ``counts``), 0 for a row without a mask."""
    keys = np.zeros(offsets.shape[0] - 1, np.int64)
    for i in np.flatnonzero(offsets[1:] > offsets[:-1]).tolist():
        keys[i] = hash(counts[offsets[i] : offsets[i + 1]].tobytes())
    return keys


def _duplicate_problems(r: _Rows) -> set[int]:
    """duplicate_annotation: same video, kind, label, view, frames, box (and mask bytes) as an earlier row;
    returns the duplicate rows."""
    t = r.table
    kind, start, end, box = t.kind, t.start_frame, t.end_frame, t.box
    mask_key = _mask_keys(t.mask_offsets, t.mask_counts)
    cols = [t.video, kind, t.label, t.view, start, end, box[:, 0], box[:, 1], box[:, 2], box[:, 3], mask_key]
    dup_set = set()
    for i, j in _duplicates(cols, r.ids):
        dup_set.add(i)
        r.problems.append(
            _problem(
                "duplicate_annotation",
                f"same {KINDS[kind[i]]} as annotation {int(r.ids[j])} (label {t.labels[t.label[i]]!r}, "
                f"frames {start[i]}..{end[i]}, box {box[i].tolist() if kind[i] != _MARKER else None})",
                r.vids[t.video[i]],
                int(r.ids[i]),
            )
        )
    return dup_set


#: What two rows that ``duplicate_annotation`` reports have in common, as warnings and reports word it.
SAME_ANNOTATION = "same kind, label, view, frames, box and mask"


def added_duplicates(
    stored: dict[str, np.ndarray] | None, new: dict[str, np.ndarray]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The rows of ``new`` (rows about to be added to one video) that ``duplicate_annotation`` would report.

    Rows compare as ``duplicate_annotation`` compares them (kind, label, view, frames, box and mask bytes).

    Parameters
    ----------
    stored : dict of column name -> array, or None
        The video's stored rows, as the dataset's chunks hold them (``annotation_id``, ``kind``... with
        ``mask_offsets`` of ``n + 1``); None or no rows when nothing is stored.
    new : dict of column name -> array
        The rows being added, the same columns; their ids are above every stored id, in row order.

    Returns
    -------
    twice : list of (int, int)
        ``(row of new, annotation id of stored)`` for each new row equal to a stored row that is not rejected:
        the rows of a file added twice.
    repeated : list of (int, int)
        ``(row of new, earlier row of new)`` for each row of ``new`` equal to an earlier one, neither rejected:
        a file that holds one annotation twice.
    """
    return duplicates_of_keys(None if stored is None else duplicate_keys(stored), duplicate_keys(new))


def duplicate_keys(cols: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What :func:`duplicates_of_keys` compares of rows (``duplicate_annotation``'s fields, each mask's bytes as a
    hash, status and annotation id), without the masks' and attributes' bytes: the keys of a large import's
    batches are kept while the rows are not.

    Parameters
    ----------
    cols : dict of column name -> array
        Rows as the dataset's chunks hold them (``mask_offsets`` of n + 1).

    Returns
    -------
    dict of column name -> array
        ``kind``, ``label``, ``view``, ``start_frame``, ``end_frame`` (N,), ``box`` (N, 4) float,
        ``mask_key`` (N,) int64, ``status`` (N,) and ``annotation_id`` (N,) int64.
    """
    keys = {k: cols[k] for k in ("kind", "label", "view", "start_frame", "end_frame", "box", "status")}
    keys["annotation_id"] = cols["annotation_id"]
    keys["mask_key"] = _mask_keys(cols["mask_offsets"], cols["mask_counts"])
    return keys


def duplicates_of_keys(
    stored: Mapping[str, np.ndarray] | None, new: Mapping[str, np.ndarray]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """:func:`added_duplicates` of rows given by their :func:`duplicate_keys`."""
    rejected = STATUSES.index("rejected")
    keep = np.flatnonzero(stored["status"] != rejected) if stored is not None else np.zeros(0, np.int64)
    n_stored = keep.size
    if stored is not None and n_stored:
        both = {k: np.concatenate([np.asarray(stored[k])[keep], new[k]]) for k in new}
    else:
        both = dict(new)
    cols = [both["kind"], both["label"], both["view"], both["start_frame"], both["end_frame"], *both["box"].T]
    cols.append(both["mask_key"])
    ids = both["annotation_id"]
    twice = []
    if n_stored:
        twice = [(r - n_stored, int(ids[f])) for r, f in _duplicates(cols, ids) if r >= n_stored and f < n_stored]
    live = n_stored + np.flatnonzero(new["status"] != rejected)
    repeated = [
        (int(live[r]) - n_stored, int(live[f]) - n_stored) for r, f in _duplicates([c[live] for c in cols], ids[live])
    ]
    return twice, sorted(repeated)


def _track_frame_problems(r: _Rows, duplicates: set[int]) -> None:
    """track_frame_conflict: one track with two objects on a frame (per kind and view), duplicates aside."""
    t = r.table
    tsel = np.flatnonzero((t.track_id >= 0) & r.spatial)
    if not tsel.size:
        return
    sub = [c[tsel] for c in (t.video, t.track_id, t.kind, t.view, t.start_frame)]
    for a, b in _duplicates(sub, r.ids[tsel]):
        i, j = int(tsel[a]), int(tsel[b])
        if i in duplicates:
            continue
        r.problems.append(
            _problem(
                "track_frame_conflict",
                f"track {t.track_id[i]} already has {KINDS[t.kind[i]]} annotation {int(r.ids[j])} on frame "
                f"{t.start_frame[i]}",
                r.vids[t.video[i]],
                int(r.ids[i]),
            )
        )


def _duplicates(cols: Sequence[np.ndarray], ids: np.ndarray) -> list[tuple[int, int]]:
    """(row, earlier equal row) pairs of rows equal in every column (NaN equal to NaN).

    One sort of a 64-bit row hash finds the candidates; candidates are then compared exactly.
    """
    h = row_hash(cols)
    hs = np.sort(h)
    repeated = np.unique(hs[1:][hs[1:] == hs[:-1]])
    if repeated.size == 0:
        return []
    groups: dict[int, list[int]] = {}
    cand = np.flatnonzero(np.isin(h, repeated))
    for r in cand[np.argsort(ids[cand], kind="stable")].tolist():
        groups.setdefault(int(h[r]), []).append(r)
    out: list[tuple[int, int]] = []
    for members in groups.values():
        firsts: list[int] = []
        for r in members:
            for f in firsts:
                if all(_eq(c[r], c[f]) for c in cols):
                    out.append((r, f))
                    break
            else:
                firsts.append(r)
    return out


def _eq(a: Any, b: Any) -> bool:
    return bool(a == b) or (isinstance(a, float | np.floating) and np.isnan(a) and np.isnan(b))


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(
        problems,
        key=lambda p: (
            p.video_id or "",
            -1 if p.annotation_id is None else p.annotation_id,
            p.code,
        ),
    )


def attribute_summary(table: AnnotationTable, schema: Mapping[str, Mapping[str, str]]) -> list[str]:
    """One line per label with attributes: each attribute's type and how many of the label's rows give it,
    e.g. ``"person (120 rows): occluded (bool) on 118, visibility (number) on 97"``."""
    import json

    counts: dict[int, dict[str, int]] = {}
    offsets, data = table.attr_offsets, table.attr_bytes
    if offsets is not None and data is not None and data.size:
        raw = data.tobytes()
        for i in np.flatnonzero(np.diff(offsets)).tolist():
            per = counts.setdefault(int(table.label[i]), {})
            for name in json.loads(raw[int(offsets[i]) : int(offsets[i + 1])]):
                per[name] = per.get(name, 0) + 1
    out = []
    for label, names in schema.items():
        code = table.labels.index(label) if label in table.labels else -1
        rows = int((table.label == code).sum())
        given = counts.get(code, {})
        listed = ", ".join(f"{k} ({t}) on {given.get(k, 0)}" for k, t in sorted(names.items()))
        out.append(f"{label} ({rows} rows): {listed}")
    return out
