"""MOT Challenge ``gt.txt`` / ``det.txt`` / results files (+ ``seqinfo.ini``, ``labels.txt``).

Columns (comma separated, spaces after commas allowed, any sort order)::

    6:  frame, id, x, y, w, h
    7:  frame, id, x, y, w, h, score
    9:  frame, id, x, y, w, h, consider, class, visibility        (gt)
    10: frame, id, x, y, w, h, score, X, Y, Z                      (det / results; X Y Z are -1)

frame = column 1 - 1 (MOT frames are 1-based); track id = column 2 - 1 (ids <= 0 are untracked, and a
note counts them); x, y, w, h are taken as they are (pass ``one_based_pixels=True`` for files whose pixels are 1-based). A score makes the
row a model row with that confidence (scores outside [0, 1] are not kept as confidence, and
counted). gt rows with consider = 0 are skipped and counted (``include_ignored=True`` keeps them); a consider
flag other than 0 or 1 is refused.
"""

from __future__ import annotations

import configparser
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import plural, shown
from vidlabel.dataset import Release

from ._common import (
    BOX,
    MODEL,
    ImportContext,
    Parsed,
    VideoRows,
    fail,
    float32_value,
    read_text,
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
    txt = path.parent / "labels.txt"
    if not txt.is_file():
        return None
    names = [line.strip() for line in read_text(txt).splitlines()]
    return {i + 1: name for i, name in enumerate(names) if name}


def import_mot(ctx: ImportContext) -> Parsed:
    """Read a MOT Challenge file into rows of one video (see the module docstring for the columns)."""
    path = ctx.path
    one_based = bool(ctx.option("one_based_pixels", False, (True, False)))
    include_ignored = bool(ctx.option("include_ignored", False, (True, False)))
    text = read_text(path)
    info = _seqinfo(path)
    if ctx.video_id is None and info is not None and info[1].get("name"):
        meta = ctx.resolve([info[1].get("name")], 1, None)
    else:
        meta = ctx.resolve([], 1, None)
    if info is not None:
        _check_seqinfo(*info, meta)
    label_map = ctx.label_map
    if label_map is None and ctx.label is None:
        label_map = _labels_txt(path)
    parsed = Parsed()
    vr = VideoRows(meta)
    parsed.videos[meta.video_id] = vr
    shift = 1.0 if one_based else 0.0
    counts: Counter[str] = Counter()
    classes: dict[int, int] = {}
    widths: set[int] = set()
    for number, line in enumerate(text.splitlines(), 1):
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
        widths.add(n)
        if n == 9 and extra[0] not in (0, 1):  # 2, -1 or nan would be kept as considered without a word
            raise fail(
                path,
                number,
                f"consider flag (column 7) is {line.split(',')[6].strip()!r}; gt lines hold 0 (ignore) or 1",
            )
        if n == 9 and extra[0] == 0 and not include_ignored:
            counts["ignored"] += 1
            continue
        _label_row(ctx, path, number, row, n, extra, label_map, counts, classes)
        if "track_id" not in row:  # id <= 0: untracked, as the label formats guide says; said in a note
            counts["untracked"] += 1
            counts["id_zero"] += float(line.split(",")[1]) == 0
        vr.rows.append(row)
        vr.where.append(number)
    if counts["ignored"]:
        parsed.skipped[
            "consider flag 0 (gt column 7; include_ignored=True or --option include_ignored=true keeps them)"
        ] += counts["ignored"]
    if counts["unknown_score"]:
        parsed.notes.append(
            f"{plural(counts['unknown_score'], 'score')} outside [0, 1] not kept as confidence (the rows are kept)"
        )
    if counts["untracked"]:
        zero = ""
        if counts["id_zero"]:
            zero = (
                f"; {plural(counts['id_zero'], 'row')} with id 0: a tracker that numbers its ids from 0 loses "
                "object 0's track (renumber its ids from 1)"
            )
        parsed.notes.append(
            f"{plural(counts['untracked'], 'row')} with a track id <= 0 (column 2) imported untracked "
            f"(MOT ids are 1-based: an id <= 0 is untracked, see docs/how-to/label-formats.md, MOT){zero}"
        )
    if 9 in widths:
        parsed.notes.append("visibility (gt column 9) is not stored")
    if one_based:
        parsed.notes.append("pixels shifted by -1 (one_based_pixels=True)")
    return parsed


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
    ctx: ImportContext, path: Path, number: int, row: dict[str, Any], n: int, extra: list[float],
    label_map: dict[int, str] | None, counts: Counter[str], classes: dict[int, int],
) -> None:  # fmt: skip
    """The row's label (9-column gt: column 8 through the label map; else ``label=``) and, for 7- and
    10-column results, origin ``model`` with the score as confidence. ``classes``: class -> its first line, of the
    gt rows imported so far under ``label=`` (a second class is refused)."""
    if n == 9:
        if not extra[1].is_integer():  # 1.5, nan and inf name no class
            raise fail(path, number, f"class {extra[1]} (column 8) is not a whole number")
        cls = int(extra[1])
        if ctx.label is not None:
            classes.setdefault(cls, number)  # the first line of each class
            if len(classes) > 1:  # one label over several classes would merge them without a word
                other, line = next((k, v) for k, v in classes.items() if k != cls)
                raise fail(
                    path,
                    number,
                    f"class {cls} (column 8) with label={ctx.label!r}, which gives every row one label, but line "
                    f"{line} is class {other}: the file holds several classes; give label_map (--label-map "
                    "1=person,3=car) or a labels.txt beside the file",
                )
            row["label"] = ctx.label
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
    if ctx.label is None:
        raise fail(path, number, f"a {n}-column MOT file has no class column: give label= (--label NAME)")
    row["label"] = ctx.label
    if n in (7, 10):
        row["origin"] = "model"
        if 0.0 <= extra[0] <= 1.0:
            row["confidence"] = extra[0]
        else:
            counts["unknown_score"] += 1


def _fmt(v: float) -> str:
    return repr(float(v))


def export_mot(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """Write ``out/<video_id>/gt/gt.txt`` (9 columns, human rows), ``det/det.txt`` (10 columns, model rows),
    ``gt/labels.txt`` and ``seqinfo.ini`` per video; frames + 1, boxes xywh."""
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
            f"imWidth={meta.width}\nimHeight={meta.height}\n",
        )
        for sel, sub, model_rows in ((boxes[~model], "gt", False), (boxes[model], "det", True)):
            if sub == "det" and sel.size == 0:
                continue
            b = t.box[sel]
            frame = t.start_frame[sel] + 1
            tid = np.where(t.track_id[sel] >= 0, t.track_id[sel] + 1, -1)
            xywh = np.column_stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]])
            order = np.lexsort((tid, frame))
            lines = []
            if model_rows:
                conf = t.confidence[sel].astype(np.float64)
                conf = np.where(np.isnan(conf), -1.0, conf)
                if len(np.unique(t.label[sel])) > 1:
                    report.not_written["label of model rows (MOT results hold no class)"] += int(sel.size)
                for i in order.tolist():
                    x, y, w, h = map(_fmt, xywh[i])
                    lines.append(f"{frame[i]},{tid[i]},{x},{y},{w},{h},{_fmt(float32_value(conf[i]))},-1,-1,-1\n")
            else:
                cls = t.label[sel] + 1
                for i in order.tolist():
                    x, y, w, h = map(_fmt, xywh[i])
                    lines.append(f"{frame[i]},{tid[i]},{x},{y},{w},{h},1,{cls[i]},1\n")
            target = folder / sub / f"{sub}.txt"
            write_text(target, "".join(lines))
            report.paths.append(str(target))
            report.counts["box"] += int(sel.size)
        write_text(folder / "gt" / "labels.txt", labels_txt)
        report.paths.extend([str(folder / "gt" / "labels.txt"), str(folder / "seqinfo.ini")])
    return report
