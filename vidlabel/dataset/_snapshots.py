"""Snapshots, validation and releases of a :class:`~vidlabel.dataset.Dataset` (a mixin of it)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.dataset._annotations import load_chunks
from vidlabel.dataset._chunks import Cols, take
from vidlabel.dataset._db import (
    SCHEMA_VERSION,
    attribute_schema,
    fetch_views,
    label_names,
    now,
    video_from_record,
)
from vidlabel.dataset._release import (
    Release,
    copy_release,
    read_release,
)
from vidlabel.dataset._validate import (
    Problem,
    validate_table,
    video_file_problems,
)
from vidlabel.dataset._validate import for_export as export_severity
from vidlabel.errors import (
    AnnotationError,
    ReleaseCorruptError,
    ReleaseNotFoundError,
    check_flag,
)
from vidlabel.spec import STATUSES, AnnotationTable, VideoMetadata, View

_LIVE_STATUSES = ("unreviewed", "approved")


class SnapshotMixin:
    """Snapshots, validation and the releases of a dataset (part of :class:`~vidlabel.dataset.Dataset`)."""

    if TYPE_CHECKING:
        # What the mixin uses of Dataset, for the type checker (defined in vidlabel.dataset._dataset).
        _path: Path
        _releases: dict[str, Release]

        @property
        def _db_file(self) -> str: ...

        def _write(self, operation: str) -> AbstractContextManager[sqlite3.Connection]: ...
        def _read(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _con(self) -> sqlite3.Connection: ...
        def _refuse_if_read_only(self, operation: str) -> None: ...
        def videos(self) -> list[VideoMetadata]: ...

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
        table = _live_table(labels, video_ids, view_ids, video_rows, view_rows, cols, vcodes, statuses)
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


def _live_table(
    labels: tuple[str, ...],
    video_ids: tuple[str, ...],
    view_ids: tuple[str, ...],
    video_rows: list[Any],
    view_rows: dict[str, tuple[int, View]],
    cols: Cols,
    vcodes: np.ndarray,
    statuses: Sequence[str],
) -> AnnotationTable:
    """The rows of ``cols`` (of videos ``vcodes``, database codes) whose status is one of ``statuses``, sorted by
    annotation id, as the table of :meth:`SnapshotMixin.snapshot`: its video and view codes become positions in
    ``video_ids`` and ``view_ids``."""
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
    return AnnotationTable(
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
