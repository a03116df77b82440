"""MOT Challenge ``gt.txt`` / ``det.txt`` / results files (+ ``seqinfo.ini``, ``labels.txt``), or a folder of them.

Columns (comma separated, spaces after commas allowed, any sort order)::

    6:  frame, id, x, y, w, h
    7:  frame, id, x, y, w, h, score
    9:  frame, id, x, y, w, h, consider, class, visibility        (gt, MOT16 on)
    10: frame, id, x, y, w, h, score, X, Y, Z                      (det / results; X Y Z are -1)
    10: frame, id, x, y, w, h, consider, -1, -1, -1                (MOT15 gt: no class)

frame = column 1 - 1 (MOT frames are 1-based); track id = column 2 - 1 (ids <= 0 are untracked, and a
note counts them); x, y, w, h are taken as they are (pass ``one_based_pixels=True`` for files whose pixels are
1-based). A score makes the row a model row with that confidence (scores outside [0, 1] are not kept as
confidence, and counted). gt rows with consider = 0 are skipped and counted (``include_ignored=True`` keeps
them); a consider flag other than 0 or 1 is refused. The visibility column of 9-column gt is the row's attribute
``visibility``; the export writes it back (1 for a row without one).

10-column lines are ambiguous: ``read_as="auto"`` (the default) reads them as MOT15 ground truth when the file
is ``gt.txt`` and column 7 holds only 0 and 1, else as tracker results; the report's notes say which reading
was taken and why, and ``read_as="gt"`` / ``"results"`` (``--read-as``) forces one. 10-column ground truth has
no class: its label is ``label=``, or the one name of the label map.

A folder is read as MOT sequences: the folder itself (``gt/gt.txt``), its sub-folders (``export_labels``'s
``<video_id>/gt/gt.txt``, MOT Challenge's ``train/<sequence>/``) or theirs (a MOT Challenge root); each
sequence is the video its ``seqinfo.ini`` name or its folder name finds (``videos=`` maps them).
``det/det.txt`` is read when ``gt/labels.txt`` (which ``export_labels`` writes) is beside it, its model rows
labelled by ``label=`` or the one name of ``labels.txt``; MOT Challenge's public detections are counted, not
imported, unless ``include_det=True``.
"""

from __future__ import annotations

import configparser
import functools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import plural, shown
from vidlabel.dataset import Release
from vidlabel.spec import AnnotationTable

from ._common import (
    BOX,
    MODEL,
    ImportContext,
    Parsed,
    VideoRows,
    fail,
    float32_value,
    read_lines,
    read_text,
    row_attributes,
    video_tables,
    write_text,
)
from ._report import ExportLabelsReport

__all__ = ["export_mot", "import_mot"]


def _seqinfo(path: Path) -> tuple[Path, configparser.SectionProxy] | None:
    for folder in (path.parent, path.parent.parent):
        ini = folder / "seqinfo.ini"
        if ini.is_file():
            cp = configparser.ConfigParser(interpolation=None)  # a '%' in a name is text, not a reference
            try:
                cp.read_string(read_text(ini))
            except configparser.Error as err:
                raise fail(ini, None, f"not a valid seqinfo.ini ({err})") from err
            if "Sequence" not in cp:
                raise fail(ini, None, "has no [Sequence] section")
            return ini, cp["Sequence"]
    return None


def _labels_txt(path: Path) -> dict[int, str] | None:
    """Class k -> line k of ``labels.txt`` beside the file (for ``det/det.txt``, the sequence's ``gt/labels.txt``,
    where vidlabel's export writes it)."""
    txt = path.parent / "labels.txt"
    if not txt.is_file() and path.name == "det.txt":
        txt = path.parent.parent / "gt" / "labels.txt"
    if not txt.is_file():
        return None
    names = [line.strip() for line in read_text(txt).splitlines()]
    return {i + 1: name for i, name in enumerate(names) if name}


def import_mot(ctx: ImportContext) -> Parsed:
    """Read a MOT Challenge file, or a folder of sequences, into rows (see the module docstring)."""
    opts = _Options(
        one_based=bool(ctx.option("one_based_pixels", False, (True, False))),
        include_ignored=bool(ctx.option("include_ignored", False, (True, False))),
        read_as=str(ctx.option("read_as", "auto", ("auto", "gt", "results"))),
        include_det=ctx.option("include_det", None, (None, True, False)),
    )
    parsed = Parsed()
    if ctx.path.is_dir():
        _import_folder(ctx, opts, parsed)
    else:
        _import_file(ctx, ctx.path, opts, parsed, keys=[], n_in_file=1, prefix="")
    if opts.one_based:
        parsed.notes.append("pixels shifted by -1 (one_based_pixels=True)")
    return parsed


@dataclass(frozen=True)
class _Options:
    one_based: bool
    include_ignored: bool
    read_as: str  # "auto", "gt" or "results": how 10-column lines are read
    include_det: bool | None  # det/det.txt of a folder: None reads it when vidlabel's labels.txt is beside gt


def _sequences(folder: Path) -> list[Path]:
    """The sequence folders of a MOT folder: the folder itself (``gt/gt.txt`` or ``det/det.txt`` in it), else
    its sub-folders that hold one (vidlabel's export, MOT Challenge's ``train/``), else theirs (a MOT Challenge
    root with ``train/`` and ``test/``)."""

    def is_sequence(p: Path) -> bool:
        return (p / "gt" / "gt.txt").is_file() or (p / "det" / "det.txt").is_file()

    if is_sequence(folder):
        return [folder]
    for depth in (1, 2):
        found = sorted(p for p in folder.glob("/".join(["*"] * depth)) if p.is_dir() and is_sequence(p))
        if found:
            return found
    raise fail(
        folder,
        None,
        "is a folder holding no MOT sequence: expected gt/gt.txt (or det/det.txt) in it, in its sub-folders "
        "(<sequence>/gt/gt.txt, as export_labels writes) or one level below (MOT Challenge's train/<sequence>/)",
    )


def _import_folder(ctx: ImportContext, opts: _Options, parsed: Parsed) -> None:
    """Every sequence of a MOT folder: its ``gt/gt.txt``, and its ``det/det.txt`` (see :class:`_Options`), each
    sequence one video found by its ``seqinfo.ini`` name or its folder name."""
    seqs = _sequences(ctx.path)
    det_skipped = 0
    for seq in seqs:
        rel = seq.relative_to(ctx.path).as_posix()
        keys = [] if seq == ctx.path else [seq.name]
        gt, det = seq / "gt" / "gt.txt", seq / "det" / "det.txt"
        ours = (seq / "gt" / "labels.txt").is_file()
        if gt.is_file():
            _import_file(ctx, gt, opts, parsed, keys=keys, n_in_file=len(seqs), prefix=_prefix(rel, "gt/gt.txt"))
        if det.is_file():
            if opts.include_det or (opts.include_det is None and ours):
                _import_file(ctx, det, opts, parsed, keys=keys, n_in_file=len(seqs), prefix=_prefix(rel, "det/det.txt"))
            else:
                det_skipped += sum(1 for line in read_lines(det) if line.strip())
    if det_skipped:
        parsed.skipped[
            "det/det.txt line (a sequence's detections, without vidlabel's gt/labels.txt: MOT Challenge's public "
            "detections; include_det=True imports them as model rows)"
        ] += det_skipped


def _prefix(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"


def _import_file(
    ctx: ImportContext, path: Path, opts: _Options, parsed: Parsed, *, keys: list[str], n_in_file: int, prefix: str
) -> None:
    """One MOT file's rows into ``parsed`` (the video found by ``seqinfo.ini``'s name, ``keys`` or ``video_id``);
    ``prefix`` names the file within an imported folder in the rows' places and the notes."""
    each_line = functools.partial(read_lines, path)
    notes: list[str] = []
    # a first pass over the lines, which also finds a byte that is not UTF-8 before anything else is said
    ten_as_gt = _ten_column_reading(path, each_line, opts.read_as, notes)
    info = _seqinfo(path)
    name = info[1].get("name") if info is not None else None
    found = [name, *keys] if name else keys
    meta = ctx.resolve(found, n_in_file, prefix or None)
    if info is not None:
        _check_seqinfo(*info, meta)
    label_map = ctx.label_map
    if label_map is None:
        label_map = _labels_txt(path)
    label: str | None = ctx.label
    if path.name == "det.txt" and label is None and label_map is not None and len(label_map) == 1:
        label = next(iter(label_map.values()))  # vidlabel's export of a release of one label
    vr = parsed.videos.setdefault(meta.video_id, VideoRows(meta))
    with_visibility: dict[Any, None] = {}
    counts = _read_lines(ctx, path, each_line, opts, vr, label, label_map, ten_as_gt, prefix, with_visibility)
    for lab in with_visibility:
        parsed.declare(lab, "visibility", "number")
    if counts["ignored"]:
        parsed.skipped[
            "consider flag 0 (gt column 7; include_ignored=True or --option include_ignored=true keeps them)"
        ] += counts["ignored"]
    _count_notes(counts, notes)
    at = f"{prefix}: " if prefix else ""
    parsed.notes.extend(at + n for n in notes)


def _read_lines(
    ctx: ImportContext, path: Path, each_line: Callable[[], Iterator[str]], opts: _Options, vr: VideoRows, label: str | None,
    label_map: dict[int, str] | None, ten_as_gt: bool, prefix: str, with_visibility: dict[Any, None],
) -> Counter[str]:  # fmt: skip
    """The rows of a MOT file's lines into ``vr``; what was counted on the way (ignored, untracked...). The labels
    of rows given a visibility attribute are added to ``with_visibility`` in order of first use."""
    meta = vr.meta
    shift = 1.0 if opts.one_based else 0.0
    counts: Counter[str] = Counter()
    classes: dict[int, int] = {}
    for number, line in enumerate(each_line(), 1):
        if not line.strip():
            continue
        row, n, extra = _mot_line(path, number, line, shift)
        if not 0 <= row["start_frame"] < meta.frame_count:  # said as the file writes it: 1-based
            raise fail(
                path,
                number,
                f"frame {row['start_frame'] + 1} (column 1, 1-based) is outside video {meta.video_id!r}: "
                f"frames 1..{meta.frame_count} ({meta.frame_count} frames)",
            )
        counts[f"width {n}"] += 1
        gt = n == 9 or (n == 10 and ten_as_gt)
        if gt and extra[0] not in (0, 1):  # 2, -1 or nan would be kept as considered without a word
            raise fail(
                path,
                number,
                f"consider flag (column 7) is {line.split(',')[6].strip()!r}; gt lines hold 0 (ignore) or 1",
            )
        if gt and extra[0] == 0 and not opts.include_ignored:
            counts["ignored"] += 1
            continue
        if n == 10 and ten_as_gt:
            _gt10_label(path, number, row, label, label_map)
        else:
            _label_row(path, number, row, n, extra, label, label_map, counts, classes)
        if n == 9:  # the visibility column: an attribute of the row
            if not np.isfinite(extra[2]):
                raise fail(path, number, f"visibility {extra[2]} (column 9) is not a finite number")
            row["attributes"] = {"visibility": extra[2]}
            with_visibility[row["label"]] = None
        if "track_id" not in row:  # id <= 0: untracked, as the label formats guide says; said in a note
            counts["untracked"] += 1
            counts["id_zero"] += float(line.split(",")[1]) == 0
        vr.add(row, f"{prefix} line {number}" if prefix else number)
    return counts


def _count_notes(counts: Counter[str], notes: list[str]) -> None:
    if counts["unknown_score"]:
        notes.append(
            f"{plural(counts['unknown_score'], 'score')} outside [0, 1] not kept as confidence (the rows are kept)"
        )
    if counts["untracked"]:
        zero = ""
        if counts["id_zero"]:
            zero = (
                f"; {plural(counts['id_zero'], 'row')} with id 0: a tracker that numbers its ids from 0 loses "
                "object 0's track (renumber its ids from 1)"
            )
        notes.append(
            f"{plural(counts['untracked'], 'row')} with a track id <= 0 (column 2) imported untracked "
            f"(MOT ids are 1-based: an id <= 0 is untracked, see docs/how-to/label-formats.md, MOT){zero}"
        )
    if counts["width 9"]:
        notes.append("visibility (gt column 9) stored as the rows' attribute 'visibility'")


def _ten_column_reading(path: Path, each_line: Callable[[], Iterator[str]], read_as: str, notes: list[str]) -> bool:
    """Whether the 10-column lines of a file are ground truth (MOT15's ``gt.txt``: ``frame, id, x, y, w, h,
    consider, -1, -1, -1``) rather than tracker results or detections (column 7 a score); the note says which
    reading was taken and why. ``read_as`` ("gt", "results") forces one; "auto" decides from the file's name
    and column 7: a ``gt.txt`` whose column 7 holds only 0 and 1 is ground truth, anything else results."""
    flags: set[str] = set()
    other: tuple[int, str] | None = None
    lines = 0
    for number, line in enumerate(each_line(), 1):
        cells = line.split(",")
        if len(cells) != 10:
            continue
        lines += 1
        cell = cells[6].strip()
        try:
            flag = float(cell) in (0.0, 1.0)
        except ValueError:
            flag = False  # refused with its line when the line is read
        if flag:
            flags.add(cell)
        elif other is None:
            other = (number, cell)
    if not lines:
        return False
    named_gt = path.name == "gt.txt"
    if read_as != "auto":
        notes.append(
            f"{plural(lines, '10-column line')} read as {'ground truth' if read_as == 'gt' else 'tracker results'} "
            f"(read_as={read_as!r})"
        )
        return read_as == "gt"
    if named_gt and other is None:
        notes.append(
            f"{plural(lines, '10-column line')} read as ground truth (MOT15's gt: column 7 the consider flag, no "
            "class): the file is gt.txt and column 7 holds only 0 and 1; read_as='results' (--read-as results) "
            "reads them as tracker results"
        )
        return True
    if named_gt:
        why = f"the file is gt.txt, but column 7 holds {other[1]!r} on line {other[0]}, a score"  # type: ignore[index]
    elif other is None:
        why = "the file is not gt.txt (column 7 holds only 0 and 1, as a gt file's consider flag would)"
    else:
        why = f"the file is not gt.txt and column 7 holds scores ({other[1]!r} on line {other[0]})"
    notes.append(
        f"{plural(lines, '10-column line')} read as tracker results (column 7 a score, model rows): {why}; "
        "read_as='gt' (--read-as gt) reads them as ground truth"
    )
    return False


def _gt10_label(
    path: Path, number: int, row: dict[str, Any], label: str | None, label_map: dict[int, str] | None
) -> None:
    """The label of a 10-column ground-truth line, which has no class column: ``label=``, else the one name of
    the label map (MOT15's pedestrians)."""
    if label is not None:
        row["label"] = label
    elif label_map is not None and len(label_map) == 1:
        row["label"] = next(iter(label_map.values()))
    else:
        known = "" if not label_map else f" (the label map names {len(label_map)} classes)"
        raise fail(
            path,
            number,
            f"10-column ground truth (MOT15: frame, id, x, y, w, h, consider, -1, -1, -1) has no class column: "
            f"give label= (--label NAME){known}",
        )


def _check_seqinfo(ini: Path, seq: Mapping[str, str], meta: Any) -> None:
    """A size, length or frame rate in ``seqinfo.ini`` that disagrees with the registered video is an error."""
    checks = [("imWidth", meta.width, "width"), ("imHeight", meta.height, "height")]
    checks.append(("seqLength", meta.frame_count, "frame count"))
    for key, have, what in checks:
        if key in seq and _seq_number(ini, seq, key, whole=True) != have:
            raise fail(ini, key, f"{key}={seq[key]} disagrees with video {meta.video_id!r}, whose {what} is {have}")
    if "frameRate" in seq:
        fps = meta.fps["num"] / meta.fps["den"]
        if abs(_seq_number(ini, seq, "frameRate", whole=False) - fps) > 0.5:
            raise fail(
                ini,
                "frameRate",
                f"frameRate={seq['frameRate']} disagrees with video {meta.video_id!r}, whose rate is {fps:.3f} fps",
            )


def _seq_number(ini: Path, seq: Mapping[str, str], key: str, *, whole: bool) -> float:
    """A ``seqinfo.ini`` value as a number (a whole one for sizes and lengths); anything else names the key."""
    try:
        value = float(seq[key])
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or (whole and not value.is_integer()):
        raise fail(ini, key, f"{key}={shown(seq[key])}; expected {'a whole number' if whole else 'a number'}")
    return value


def _whole_number(cell: str) -> int | None:
    """A frame or id cell as an exact int: integer digits as they are (a float parses ids past 2**53 to a
    neighbour, merging two tracks), a whole float (``3.0``) up to 2**53; None for anything else."""
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        value = float(text)  # ValueError for text that is no number
    if not value.is_integer() or abs(value) > 2**53:
        return None
    return int(value)


def _mot_line(path: Path, number: int, line: str, shift: float) -> tuple[dict[str, Any], int, list[float]]:
    """(box row without label, column count, columns 7.. as numbers) of one MOT line: frame and track id
    1-based whole numbers (id <= 0: untracked), xywh as written (``shift`` for 1-based pixels)."""
    cells = line.split(",")
    n = len(cells)
    if n not in (6, 7, 9, 10):
        raise fail(path, number, f"has {n} columns ({shown(line.strip())}); MOT lines have 6, 7, 9 or 10")
    if any("_" in c for c in cells):  # Python's int() and float() read '1_0' as 10
        raise fail(path, number, f"not a number in {shown(line.strip())} (a digit separator '_')")
    if not line.isascii():  # Python's int() and float() read other scripts' digits (U+0661 as 1)
        raise fail(path, number, f"not a number in {shown(line.strip())} (a character that is not ASCII)")
    try:
        whole = [_whole_number(c) for c in cells[:2]]
        x, y, w, h = (float(c) for c in cells[2:6])
        extra = [float(c) for c in cells[6:]]
    except ValueError as err:
        raise fail(path, number, f"not a number in {shown(line.strip())} ({str(err)[:80]})") from err
    if None in whole:
        raise fail(
            path,
            number,
            f"frame {shown(cells[0].strip())} and id {shown(cells[1].strip())} (columns 1, 2) must be whole numbers, "
            f"written as integers beyond 2**53 (a float such as 1e16 holds no exact id there)",
        )
    frame, tid = whole[0], whole[1]
    assert frame is not None and tid is not None
    if not (math.isfinite(x + y + w + h) and w > 0 and h > 0):
        raise fail(path, number, f"box x={x}, y={y}, w={w}, h={h}; a MOT box needs finite x, y and w, h > 0")
    row: dict[str, Any] = {
        "kind": "box",
        "start_frame": frame - 1,
        "box": (x - shift, y - shift, x - shift + w, y - shift + h),
    }
    if tid > 0:
        row["track_id"] = tid - 1
    return row, n, extra


def _label_row(
    path: Path, number: int, row: dict[str, Any], n: int, extra: list[float], label: str | None,
    label_map: dict[int, str] | None, counts: Counter[str], classes: dict[int, int],
) -> None:  # fmt: skip
    """The row's label (9-column gt: column 8 through the label map; else ``label=``) and, for 7- and
    10-column results, origin ``model`` with the score as confidence. ``classes``: class -> its first line, of the
    gt rows imported so far under ``label=`` (a second class is refused)."""
    if n == 9:
        if not extra[1].is_integer():  # 1.5, nan and inf name no class
            raise fail(path, number, f"class {extra[1]} (column 8) is not a whole number")
        cls = int(extra[1])
        if label is not None:
            classes.setdefault(cls, number)  # the first line of each class
            if len(classes) > 1:  # one label over several classes would merge them without a word
                other, line = next((k, v) for k, v in classes.items() if k != cls)
                raise fail(
                    path,
                    number,
                    f"class {cls} (column 8) with label={label!r}, which gives every row one label, but line "
                    f"{line} is class {other}: the file holds several classes; give label_map (--label-map "
                    "1=person,3=car) or a labels.txt beside the file",
                )
            row["label"] = label
        elif label_map is None:
            raise fail(
                path,
                number,
                f"class {cls} (column 8) has no label: give label_map (--label-map 1=person,...), "
                "a labels.txt beside the file, or label= (--label)",
            )
        elif cls not in label_map:
            raise fail(
                path,
                number,
                f"class {cls} (column 8) is not in the label map (known classes: "
                f"{', '.join(f'{k}={v}' for k, v in sorted(label_map.items()))})",
            )
        else:
            row["label"] = label_map[cls]
        return
    if label is None:
        raise fail(path, number, f"a {n}-column MOT file has no class column: give label= (--label NAME)")
    row["label"] = label
    if n in (7, 10):
        row["origin"] = "model"
        if 0.0 <= extra[0] <= 1.0:
            row["confidence"] = extra[0]
        else:
            counts["unknown_score"] += 1


def _fmt(v: float) -> str:
    return repr(float(v))


def export_mot(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """Write ``out/<video_id>/gt/gt.txt`` (9 columns, human rows), ``det/det.txt`` (10 columns, model rows; with
    ``det/labels.txt`` naming their label when they have one), ``gt/labels.txt`` and ``seqinfo.ini`` per video;
    frames + 1, boxes xywh."""
    t = release.table
    report = ExportLabelsReport("mot", release.release_id)
    labels_txt = "".join(f"{name}\n" for name in release.labels)
    for vt in video_tables(release, videos):
        meta = vt.meta
        rows = vt.rows
        kind = t.kind[rows]
        for k, why in (
            (1, "mask (MOT holds no masks; its box is not written either)"),
            (2, "marker (MOT holds no markers)"),
        ):
            if (kind == k).any():
                report.not_written[why] += int((kind == k).sum())
        boxes = rows[kind == BOX]
        model = t.origin[boxes] == MODEL
        folder = out / meta.video_id
        fps = meta.fps["num"] / meta.fps["den"]
        write_text(
            folder / "seqinfo.ini",
            f"[Sequence]\nname={meta.video_id}\nframeRate={round(fps, 3):g}\nseqLength={meta.frame_count}\n"
            f"imWidth={meta.width}\nimHeight={meta.height}\nimDir=img1\nimExt=.jpg\n",
        )
        for sel, sub, model_rows in ((boxes[~model], "gt", False), (boxes[model], "det", True)):
            if sub == "det" and sel.size == 0:
                continue
            lines = _det_lines(release, sel, folder, report) if model_rows else _gt_lines(release, sel, report)
            target = folder / sub / f"{sub}.txt"
            write_text(target, "".join(lines))
            report.paths.append(str(target))
            report.counts["box"] += int(sel.size)
        write_text(folder / "gt" / "labels.txt", labels_txt)
        report.paths.extend([str(folder / "gt" / "labels.txt"), str(folder / "seqinfo.ini")])
    return report


def _columns(t: AnnotationTable, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MOT's frame (1-based), track id (1-based, -1 untracked) and xywh box of the rows ``sel``, and the order
    (by frame, then track) their lines are written in."""
    b = t.box[sel]
    frame = t.start_frame[sel] + 1
    tid = np.where(t.track_id[sel] >= 0, t.track_id[sel] + 1, -1)
    xywh = np.column_stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]])
    return frame, tid, xywh, np.lexsort((tid, frame))


def _det_lines(release: Release, sel: np.ndarray, folder: Path, report: ExportLabelsReport) -> list[str]:
    """The 10-column ``det.txt`` lines of model rows ``sel``, writing ``det/labels.txt`` when they share a label."""
    t = release.table
    frame, tid, xywh, order = _columns(t, sel)
    lines = []
    conf = t.confidence[sel].astype(np.float64)
    conf = np.where(np.isnan(conf), -1.0, conf)
    if len(np.unique(t.label[sel])) > 1:
        report.not_written["label of model rows (MOT results hold no class)"] += int(sel.size)
    else:  # their one label, which the import reads back (det/labels.txt beside det.txt)
        write_text(folder / "det" / "labels.txt", f"{release.labels[int(t.label[sel[0]])]}\n")
        report.paths.append(str(folder / "det" / "labels.txt"))
    for i in order.tolist():
        x, y, w, h = map(_fmt, xywh[i])
        lines.append(f"{frame[i]},{tid[i]},{x},{y},{w},{h},{_fmt(float32_value(conf[i]))},-1,-1,-1\n")
    return lines


def _gt_lines(release: Release, sel: np.ndarray, report: ExportLabelsReport) -> list[str]:
    """The 9-column ``gt.txt`` lines of human rows ``sel``: class id from 1, ``visibility`` attribute."""
    t = release.table
    frame, tid, xywh, order = _columns(t, sel)
    lines = []
    cls = t.label[sel] + 1
    attrs = [row_attributes(t, int(r)) for r in sel.tolist()]
    vis = [a.get("visibility", 1.0) for a in attrs]
    others = sum(any(k != "visibility" for k in a) for a in attrs)
    if others:
        report.not_written["attributes other than visibility (MOT holds none; the rows are written)"] += others
    for i in order.tolist():
        x, y, w, h = map(_fmt, xywh[i])
        v = _fmt(vis[i]) if vis[i] != 1.0 else "1"
        lines.append(f"{frame[i]},{tid[i]},{x},{y},{w},{h},1,{cls[i]},{v}\n")
    return lines
