"""What an import or an export of a label file did: rows per kind, ids, and what was left out and why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ExportLabelsReport", "ImportReport", "VideoImport"]


def _reasons(counter: Counter[str] | dict[str, int]) -> str:
    return "; ".join(f"{reason}: {n}" for reason, n in sorted(counter.items()))


@dataclass
class VideoImport:
    """The rows one video received from a label file.

    Attributes
    ----------
    video_id : str
    counts : dict kind -> int
        Rows added (or, on a dry run, that would be added) of each kind ("box", "mask", "marker").
    annotation_ids : list of int
        The new annotation ids in row order (empty on a dry run).
    """

    video_id: str
    counts: dict[str, int] = field(default_factory=dict)
    annotation_ids: list[int] = field(default_factory=list)


@dataclass
class ImportReport:
    """What ``import_labels`` did with one file.

    Attributes
    ----------
    format : str
        The format name (a key of ``FORMATS``).
    path : str
        The file read.
    dry_run : bool
        True when nothing was written.
    videos : dict video_id -> VideoImport
    skipped : collections.Counter reason -> int
        What the file holds that was not imported, counted per reason
        ("unsupported shape type: polygon", "consider flag 0 (gt column 7)", ...).
    notes : list of str
        Conventions applied that the user should know of (frames taken from file-name digits,
        attributes not stored, a ``framesCount`` that disagrees, ...).
    labels_added : list of str
        Labels added to the dataset because ``add_labels`` was given (or that would be, on a dry run).
    duplicates : list of str
        On a dry run, what the import would warn of, per video: rows of the file that repeat an earlier row,
        and rows equal to annotations already stored (as validate's ``duplicate_annotation`` compares them),
        each with its first example by line or element. An import warns them instead (``VidlabelWarning``).
    attributes_added : dict label -> {name: type}
        Attributes the file's rows carry that the dataset's schema lacked, added to it with the rows (or that
        would be, on a dry run).
    """

    format: str
    path: str
    dry_run: bool = False
    videos: dict[str, VideoImport] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    labels_added: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    attributes_added: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Rows added over all videos (or that would be added, on a dry run)."""
        return sum(sum(v.counts.values()) for v in self.videos.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the report (``vidlabel import --json`` prints it)."""
        return {
            "format": self.format,
            "path": self.path,
            "dry_run": self.dry_run,
            "rows": self.rows,
            "videos": {
                v.video_id: {"counts": dict(v.counts), "annotation_ids": list(v.annotation_ids)}
                for v in self.videos.values()
            },
            "skipped": dict(self.skipped),
            "notes": list(self.notes),
            "labels_added": list(self.labels_added),
            "duplicates": list(self.duplicates),
            "attributes_added": {k: dict(v) for k, v in self.attributes_added.items()},
        }

    def __str__(self) -> str:
        verb = "would add" if self.dry_run else "added"
        lines = [f"{self.path} ({self.format}): {verb} {self.rows} rows"]
        for v in self.videos.values():
            kinds = ", ".join(f"{n} {k}" for k, n in v.counts.items() if n) or "nothing"
            ids = f" (ids {v.annotation_ids[0]}..{v.annotation_ids[-1]})" if v.annotation_ids else ""
            lines.append(f"  video {v.video_id!r}: {kinds}{ids}")
        if self.labels_added:
            lines.append(f"  labels {'to add' if self.dry_run else 'added'}: {', '.join(self.labels_added)}")
        if self.attributes_added:
            added = "; ".join(
                f"{label}: " + ", ".join(f"{k} ({t})" for k, t in sorted(names.items()))
                for label, names in self.attributes_added.items()
            )
            lines.append(f"  attributes {'to add' if self.dry_run else 'added'} to the schema: {added}")
        if self.skipped:
            lines.append(f"  not imported: {_reasons(self.skipped)}")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.extend(f"  duplicate: {d}" for d in self.duplicates)
        return "\n".join(lines)


@dataclass
class ExportLabelsReport:
    """What ``export_labels`` wrote.

    Attributes
    ----------
    format : str
    release_id : str or None
    paths : list of str
        The files written.
    counts : dict kind -> int
        Rows written of each kind.
    not_written : collections.Counter reason -> int
        Rows the format cannot hold ("mask (MOT holds no masks)", "marker (COCO-VID holds no markers)", ...).
    notes : list of str
    """

    format: str
    release_id: str | None
    paths: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    not_written: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the report."""
        return {
            "format": self.format,
            "release_id": self.release_id,
            "paths": list(self.paths),
            "counts": dict(self.counts),
            "not_written": dict(self.not_written),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.counts.items()) if n) or "nothing"
        where = self.paths[0] if len(self.paths) == 1 else f"{len(self.paths)} files"
        lines = [f"release {self.release_id} as {self.format}: wrote {kinds} to {where}"]
        if self.not_written:
            lines.append(f"  not written (the format cannot hold them): {_reasons(self.not_written)}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)
