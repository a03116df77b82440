"""``import_labels`` and ``export_labels``: a format's file in through ``Dataset.add_annotations``, a release out."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import plural
from vidlabel.dataset import Dataset, Release
from vidlabel.dataset._batches import add_annotation_batches, annotation_duplicates_batches
from vidlabel.dataset._dataset import _LABEL_ALLOWED, label_problem
from vidlabel.dataset._validate import SAME_ANNOTATION
from vidlabel.errors import AnnotationError, FormatError, VidlabelWarning, check_flag

from ._common import ImportContext, Parsed, VideoRows, fail, gc_paused, mapping_arg, where_text
from ._registry import label_format
from ._report import ExportLabelsReport, ImportReport, VideoImport

__all__ = ["export_labels", "import_labels"]


#: Rows of one video written (or checked, on a dry run) per ``add_annotations`` batch: a file's rows are turned
#: back into row dicts and checked this many at a time, so an import holds a batch of dicts, not the file's.
_BATCH_ROWS = 16_384

#: import_labels' own keywords, for the hint on a misspelt one.
_KEYWORDS = ("video_id", "videos", "label_map", "label", "add_labels", "dry_run", "clip", "track_ids")


def _did_you_mean(unknown: list[str], format: str) -> str:
    """'; did you mean video_id=?' for keywords close to a known one (``video=`` is the dataset's video)."""
    import difflib

    known = (*_KEYWORDS, *label_format(format).options)
    guesses = []
    for name in unknown:
        close = (
            ["video_id"]
            if name in ("video", "video_ids", "videoid")
            else difflib.get_close_matches(name, known, 1, 0.75)
        )
        if close:
            guesses.append(f"{name}= -> {close[0]}=")
    return f"; did you mean {', '.join(guesses)}?" if guesses else ""


def import_labels(
    ds: Dataset,
    format: str,
    path: str | os.PathLike[str],
    *,
    video_id: str | None = None,
    videos: Mapping[Any, str] | None = None,
    label_map: Mapping[int, str] | None = None,
    label: str | None = None,
    add_labels: bool = False,
    dry_run: bool = False,
    **format_options: Any,
) -> ImportReport:
    """Import one label file into a dataset: every row through ``Dataset.add_annotations``, the file all or nothing.

    Parameters
    ----------
    ds : Dataset
    format : {"mot", "cvat-video", "ytvis", "coco-vid", "label-studio", "mediasequence"}
        A key of ``FORMATS`` (docs/reference/label-formats.md); each format's conventions (frame bases, box forms, interpolation)
        are in docs/how-to/label-formats.md and in its module.
    path : str or os.PathLike
        The file (``gt.txt``, ``annotations.xml``, a JSON file; for MediaSequence a ``.tfrecord``
        file or a folder of ``*.tfrecord`` shards), or the folder ``export_labels`` wrote: MOT
        sequences (``<sequence>/gt/gt.txt``, MOT Challenge's ``train/<sequence>/`` too), CVAT ``*.xml``.
    video_id : str, optional
        The dataset video of a file that holds one video.
    videos : mapping, optional
        For a file of several videos: the file's video key (JSON id, name, first file-name folder,
        Label Studio task id or video file stem) -> dataset video id. Without it, a key that is a
        registered video id is used.
    label_map : mapping int -> str, optional
        Class id -> label for the formats that name classes by id: MOT (default: ``labels.txt`` beside
        the file, line k = class k), COCO-VID and YouTube-VIS (over the file's ``categories``, or for a
        file without them), MediaSequence (``region/label/index`` of regions without label strings).
    label : str, optional
        One label for every row of a file without classes (MOT ``det.txt``).
    add_labels : bool
        Add labels named in the file that the dataset lacks (default: refuse the file, listing them).
    dry_run : bool
        Read and check the file against the dataset (videos, frames, labels, every row as
        ``Dataset.add_annotations`` checks it), write nothing; the report's ``duplicates`` say what the
        import would warn of (rows of the file repeated, rows already stored).
    **format_options
        Per format: MOT ``one_based_pixels``, ``include_ignored``, ``read_as`` ("auto", "gt", "results":
        how 10-column lines are read), ``include_det`` (a folder's ``det/det.txt``); YouTube-VIS ``frames``
        ("auto", "position", "digits"); Label Studio ``frames_count_mismatch`` ("error", "warn");
        every format ``clip`` (default True: boxes leaving the frame are clipped, counted in notes)
        and ``track_ids`` ("new", the default: when the video already holds tracks, the file's tracks
        are numbered after them, so a second file never merges into the first file's tracks; "keep":
        the file's track ids as they are).

    Returns
    -------
    ImportReport

    Raises
    ------
    FormatError
        On a malformed file, an XML entity declaration, a frame outside the video, a label the
        dataset lacks (without ``add_labels``), a file that disagrees with the registered video, or
        a row ``add_annotations`` refuses; the message names file, line or element and value.
        Nothing is written.
    UnknownVideoError
        If ``video_id`` is not registered.

    Warns
    -----
    VidlabelWarning
        If the file yields no rows at all (and none were skipped): an empty file, or a file of another
        shape (``{"a": 1}`` as Label Studio); the warning names the file and what the format holds rows in.
        As ``Dataset.add_annotations`` (not on a dry run, which reports them): rows of a video that repeat an
        earlier row of the file, or equal rows already stored.
    """
    fmt = label_format(format)
    p = Path(path)
    options = dict(format_options)
    clip, track_ids = _check_arguments(ds, p, format, video_id, videos, options)
    metas = {m.video_id: m for m in ds.videos()}
    ctx = ImportContext(
        path=p,
        videos=metas,
        video_id=video_id,
        video_map=mapping_arg(videos),
        label_map={int(k): str(v) for k, v in label_map.items()} if label_map else None,
        label=label,
        options=options,
    )
    with gc_paused():
        parsed: Parsed = fmt.importer(ctx)
    _check_routing(p, format, video_id, ctx, parsed)
    report = ImportReport(format=format, path=str(p), dry_run=dry_run, skipped=parsed.skipped, notes=parsed.notes)
    if not any(len(vr) for vr in parsed.videos.values()) and not parsed.skipped:
        expected = fmt.rows_in
        warnings.warn(
            f"{p} ({format}) yields no rows: nothing to import; expected {expected}",
            VidlabelWarning,
            stacklevel=2,
        )
    _check_frames(p, parsed)
    missing = _missing_labels(p, ds, parsed, add_labels)
    report.labels_added = missing
    report.attributes_added = _new_attributes(p, ds, parsed)
    if clip:
        _count_clipped(parsed)
    for vid, vr in parsed.videos.items():
        report.videos[vid] = VideoImport(vid, vr.kind_counts())
    if dry_run:
        _dry_run(ds, p, parsed, report, clip=clip, track_ids=track_ids)
    else:
        _write(ds, p, parsed, report, clip=clip, track_ids=track_ids)
    return report


def _check_arguments(
    ds: Dataset,
    p: Path,
    format: str,
    video_id: str | None,
    videos: Mapping[Any, str] | None,
    options: dict[str, Any],
) -> tuple[bool, str]:
    """Check import_labels' keywords before the file is read, popping ``clip`` and ``track_ids`` from ``options``."""
    fmt = label_format(format)
    if video_id is not None:
        ds.video(video_id)  # UnknownVideoError with the known ids
        if videos:  # the importers follow the map and never read video_id then: the rows went elsewhere
            raise FormatError(
                f"{p}: video_id={video_id!r} (--video) and videos= (--video-map) are both given; give video_id for "
                "a file of one video, or videos= to map the file's videos, not both",
                path=str(p),
            )
    clip = check_flag("clip", options.pop("clip", True))
    track_ids = options.pop("track_ids", "new")
    if track_ids not in ("new", "keep"):
        raise FormatError(f"{p}: option track_ids={track_ids!r}; allowed: 'new' (the default), 'keep'")
    unknown = sorted(set(options) - set(fmt.options))
    if unknown:
        known = ", ".join(fmt.options) or "none besides clip and track_ids"
        raise FormatError(
            f"format {format!r} takes no option(s) {', '.join(unknown)} (its options: {known}){_did_you_mean(unknown, format)}"
        )
    return clip, track_ids


def _check_routing(p: Path, format: str, video_id: str | None, ctx: ImportContext, parsed: Parsed) -> None:
    """Refuse options the importer left unread, a ``video_id`` for a file of several videos, and a mistyped map key."""
    if ctx.options:
        raise FormatError(f"format {format!r} takes no option(s) {', '.join(sorted(ctx.options))}")
    if video_id is not None and not ctx.video_id_used and parsed.videos:
        # a file of several videos (or tasks): each went where its id or name led, not to video_id
        raise FormatError(
            f"{p}: video_id={video_id!r} (--video) names the dataset video of a file of one video, but this file "
            f"holds several, which would go to {', '.join(map(repr, parsed.videos))} by their ids or names; map "
            "them with videos= (--video-map K=ID,...)",
            path=str(p),
        )
    unused = [k for k in ctx.video_map if k not in ctx.map_keys_used]
    if unused and ctx.matched_by_id:
        # a mistyped key: the video it meant went where its name led instead (a map shared by several files,
        # each holding some of its videos, leaves keys unused too, but then every video of the file is mapped)
        raise FormatError(
            f"{p}: videos= (--video-map) key(s) {', '.join(map(repr, unused))} match no video of the file, whose "
            f"video(s) {', '.join(map(repr, dict.fromkeys(ctx.matched_by_id)))} the map does not name went to the "
            "registered video(s) of that name; key a video by its id in the file, its name or its first "
            "file-name folder",
            path=str(p),
        )


def _missing_labels(p: Path, ds: Dataset, parsed: Parsed, add_labels: bool) -> list[str]:
    """The file's labels the dataset lacks, in order of first use; refused unless ``add_labels``."""
    have = ds.labels()
    used: list[str] = []
    for vr in parsed.videos.values():
        for lab in vr.labels():
            if lab not in used:
                used.append(lab)
    _check_labels(p, parsed, [lab for lab in used if lab not in have])
    missing = [lab for lab in used if lab not in have]
    if missing and not add_labels:
        raise fail(
            p,
            None,
            f"label(s) {', '.join(map(repr, missing))} are not in the dataset (known: {', '.join(have) or '(none)'}); "
            "add them first (vidlabel add-labels) or pass add_labels=True (--add-labels)",
        )
    return missing


def _dry_run(ds: Dataset, p: Path, parsed: Parsed, report: ImportReport, *, clip: bool, track_ids: str) -> None:
    """Check every row as add_annotations checks it and report what it would warn of, writing nothing."""
    if track_ids == "new":
        _number_tracks_after_existing(ds, parsed)
    for vid, vr in parsed.videos.items():
        try:
            twice, repeated = annotation_duplicates_batches(
                ds,
                vr.batches(_BATCH_ROWS),
                vid,
                clip=clip,
                more_labels=report.labels_added,
                more_schema=report.attributes_added,
                total=len(vr),
            )
        except AnnotationError as err:
            raise _refused(p, vid, vr, err) from err
        report.duplicates.extend(_duplicate_lines(vid, vr, twice, repeated))


def _write(ds: Dataset, p: Path, parsed: Parsed, report: ImportReport, *, clip: bool, track_ids: str) -> None:
    """Store the file's new labels, attributes and rows, filling each video's ``annotation_ids`` in ``report``."""
    missing = report.labels_added
    # the file is one transaction: its new labels and every video's annotations, or nothing of them; the
    # tracks already held are read inside it, so an import running beside this one cannot take the same numbers
    with ds.transaction(operation="import_labels"):
        if track_ids == "new":
            _number_tracks_after_existing(ds, parsed)
        if missing:
            ds.add_labels(missing)
        for label, names in report.attributes_added.items():
            ds.set_attribute_schema(label, names)
        for vid, vr in parsed.videos.items():
            try:
                ids = add_annotation_batches(
                    ds, vr.batches(_BATCH_ROWS), vid, clip=clip, source=(str(p), _where_of(vr)), total=len(vr)
                )
            except AnnotationError as err:
                raise _refused(p, vid, vr, err) from err
            report.videos[vid].annotation_ids = ids.tolist()


def _check_labels(path: Path, parsed: Parsed, labels: list[str]) -> None:
    """A label of the file that no dataset may hold (too long, a control or bidirectional character) is an error
    naming the first row that carries it."""
    for label in labels:
        problem = label_problem(label)
        if problem is None:
            continue
        where = next((vr.where[vr.labels()[label]] for vr in parsed.videos.values() if label in vr.labels()), None)
        raise fail(path, where, f"label {problem}; a label is {_LABEL_ALLOWED}")


def _new_attributes(path: Path, ds: Dataset, parsed: Parsed) -> dict[str, dict[str, str]]:
    """The attributes the file's rows carry that the dataset's schema lacks (label -> name -> type), added to the
    schema with the rows; one the schema gives another type is a FormatError naming both."""
    have = ds.attribute_schema()
    out: dict[str, dict[str, str]] = {}
    for label, names in parsed.attributes.items():
        for name, kind in names.items():
            known = have.get(label, {}).get(name)
            if known is not None and known != kind:
                raise fail(
                    path,
                    None,
                    f"attribute {name!r} of label {label!r} is {kind!r} in the file but {known!r} in the dataset's "
                    "schema; a schema keeps its types",
                )
            if known is None:
                out.setdefault(label, {})[name] = kind
    return out


def _where_of(vr: VideoRows) -> Callable[[int], str]:
    """Row of ``vr`` -> its line or element in the file (``"line 4"``), as warnings of rows name them."""
    return lambda i: where_text(vr.where_at(i))


def _refused(path: Path, vid: str, vr: VideoRows, err: AnnotationError) -> FormatError:
    """The FormatError of a row ``add_annotations`` refuses, naming the file's line or element of the row."""
    row, detail = getattr(err, "row", None), getattr(err, "detail", None)
    where = vr.where_at(row) if row is not None and detail is not None and 0 <= row < len(vr) else None
    text = str(err) if where is None else str(detail)
    if f"video {vid!r}" not in text:  # add_annotations' own message names the video: say it once
        text = f"video {vid!r}: {text}"
    return fail(path, where, text)


def _duplicate_lines(
    vid: str, vr: VideoRows, twice: list[tuple[int, int]], repeated: list[tuple[int, int]]
) -> list[str]:
    """What a dry run reports of rows an import would warn of: rows of the file that repeat an earlier one,
    and rows equal to annotations already stored, each with its first example named by line or element."""
    out = []
    if repeated:
        row, first = repeated[0]
        same = f"{where_text(vr.where[first])} and {where_text(vr.where[row])} are the same annotation"
        if len(repeated) == 1:
            head = f"{same} ({SAME_ANNOTATION}); an import keeps it"
        else:
            head = (
                f"{len(repeated)} rows repeat an earlier row of the file ({same}: {SAME_ANNOTATION}); an import "
                "keeps them"
            )
        out.append(f"video {vid!r}: {head} and warns (validate warns duplicate_annotation)")
    if twice:
        row, stored = twice[0]
        equal = f"{where_text(vr.where[row])} equals annotation {stored} already stored"
        if len(twice) == 1:
            head = f"{equal} ({SAME_ANNOTATION}), as when one file is imported twice; an import keeps it"
        else:
            head = (
                f"{len(twice)} rows equal annotations already stored ({equal}: {SAME_ANNOTATION}), as when one file "
                "is imported twice; an import keeps them"
            )
        out.append(f"video {vid!r}: {head} and warns (validate warns duplicate_annotation)")
    return out


def _number_tracks_after_existing(ds: Dataset, parsed: Parsed) -> None:
    """Shift the file's track ids (>= 0) of each video past the largest track id the video already holds.

    A tool numbers its tracks from 0 or 1 in every file, so a second file imported into the same video
    would otherwise continue the first file's tracks (a box of another object added to track 0). The
    shift is said in the report's notes.
    """
    for vid, vr in parsed.videos.items():
        largest = ds.largest_track_id(vid)
        tracks = vr.track_ids()
        if largest is None or not tracks.size:
            continue
        low, high = int(tracks.min()), int(tracks.max())
        offset = largest + 1 - low
        vr.shift_tracks(offset)
        parsed.notes.append(
            f"video {vid!r} already holds tracks up to {largest}: the file's tracks {low}..{high} "
            f"are stored as {low + offset}..{high + offset} (track_ids='keep' keeps them as they are)"
        )


def _check_frames(path: Path, parsed: Parsed) -> None:
    """A row on a frame outside its video is an error naming the file's line or element and the range."""
    for vid, vr in parsed.videos.items():
        n = vr.meta.frame_count
        starts, ends = vr.frame_columns()[:2]
        bad = np.flatnonzero((starts < 0) | (starts >= n) | (ends < 0) | (ends >= n)).tolist()[:1]
        # a frame past int64 (a 20-digit number in the file) or of another type is held as given: read one by one
        for i in vr.frame_columns()[2]:
            row = vr.row(i)
            start: Any = row.get("start_frame")
            end: Any = row.get("end_frame")
            end = end if isinstance(end, int | float) else start
            if isinstance(start, int | float) and not (0 <= start < n and 0 <= end < n):
                bad.append(i)
                break
        if bad:
            i = min(bad)
            row = vr.row(i)
            start = row["start_frame"]
            f = start if not 0 <= start < n else row.get("end_frame", start)
            raise fail(
                path,
                vr.where_at(i),
                f"frame {f} (0-based) is outside video {vid!r}: frames 0..{n - 1} ({n} frames)",
            )


def _count_clipped(parsed: Parsed) -> None:
    n = 0
    for vr in parsed.videos.values():
        b = vr.boxes()
        if b.size:
            w, h = vr.meta.width, vr.meta.height
            n += int(((b[:, 0] < 0) | (b[:, 1] < 0) | (b[:, 2] > w) | (b[:, 3] > h)).sum())
    if n:
        parsed.notes.append(
            f"{plural(n, 'box')} reaching outside the frame {'was' if n == 1 else 'were'} clipped to it "
            "(clip=False or --no-clip refuses them)"
        )


def export_labels(
    ds: Dataset,
    format: str,
    out: str | os.PathLike[str],
    *,
    release: str | Release = "latest",
    videos: Sequence[str] = (),
) -> ExportLabelsReport:
    """Write a release's rows (never live rows) as a label file of another tool.

    Parameters
    ----------
    ds : Dataset
    format : {"mot", "cvat-video", "ytvis", "coco-vid", "label-studio", "mediasequence"}
    out : str or os.PathLike
        A file (``.json``; ``.xml`` or ``.txt`` for a release of one video) or a folder: MOT writes
        ``out/<video_id>/gt/gt.txt`` (+ ``det/det.txt`` for model rows, ``seqinfo.ini``,
        ``gt/labels.txt``); CVAT one ``out/<video_id>.xml`` per video; MediaSequence labels-only
        records (no images) in ``out/part-*.tfrecord`` (``vidlabel.export(..., format="mediasequence")``
        writes the images too).
    release : str or Release
        A release id, ``"latest"``, or a :class:`~vidlabel.Release`.
    videos : sequence of str
        Only these videos (default: every video of the release).

    Returns
    -------
    ExportLabelsReport
        Files written, rows per kind, and rows the format cannot hold, counted per reason (also the view of
        rows that have one: no label format holds views, so the rows are written without it).

    Raises
    ------
    ReleaseNotFoundError
        On an unknown release id.
    FormatError
        On an unknown format, ``release=None`` (live rows are never exported) or a video not in the release.
    """
    exporter = label_format(format).exporter
    if release is None:
        raise FormatError(
            "export_labels writes a release, never live rows: pass a release id or 'latest' (vidlabel build)"
        )
    rel = release if isinstance(release, Release) else ds.release(release)
    report: ExportLabelsReport = exporter(rel, Path(out), list(videos))
    t = rel.table
    chosen = [t.video_ids.index(v) for v in (videos or rel.videos) if v in t.video_ids]
    with_view = int(((t.view >= 0) & np.isin(t.video, chosen)).sum())
    if with_view:  # boxes and masks are full-frame pixels: they are written, their view is not
        report.not_written["view of a row (the label formats hold no views: written without it)"] += with_view
    return report
