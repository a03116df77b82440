"""What an export did (:class:`ExportReport`), and the words for what it could not do."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vidlabel._words import plural
from vidlabel.dataset._release import Release
from vidlabel.errors import VideoChangedError, VideoDecodeError, VidlabelError, VidlabelWarning, replace_command

__all__ = [
    "ExportReport",
    "changed_failure",
    "decode_failure",
    "lost_reasons",
    "markers_not_written_words",
    "report_damaged",
    "report_plan",
]

_IDS_SHOWN = 10  # annotation ids the summary names of those not stored


@dataclass
class ExportReport:
    """What an export did.

    Attributes
    ----------
    out : str
        The store folder.
    format, codec : str
    release_id : str or None
    videos : int
        Videos in the store.
    samples : int
        Samples of the store (rows of ``/index``): the stored frames, or with ``clip`` the selected ones.
    frames_decoded : int
        Frames decoded from the videos by this run.
    frames_copied : int
        Frames taken from frames already stored (a different frame set).
    frames_reused : int
        Frames of units reused whole (nothing read or written).
    videos_up_to_date : int
        Videos already published identically (a resumed or repeated export).
    not_stored : dict
        Box/mask annotations whose frame is not stored: ``{"box": n, "mask": n,
        "untrusted": n, "untrusted_by_video": {video_id: n}, "by_video":
        {video_id: n}, "annotation_ids": [...] (first 1000)}``. ``box`` and
        ``mask`` count them all; ``untrusted`` counts those whose frame has no
        trustworthy picture (the video's ``untrusted_frames``: never stored);
        the rest are left out by ``stride``, or by ``frames="annotated"`` with
        other ``kinds``.
    untrusted_frames : int
        Frames of the frame list (before ``stride``) left out because they have
        no trustworthy picture.
    markers_without_stored_frames : int
        Markers none of whose frames is stored (still kept as segments).
    markers_not_written : dict
        MediaSequence: ``{video_id: n}`` markers of videos none of whose frames is stored: a record holds a
        video's stored frames, so such a video has no record and its markers are not written.
    rows_outside_video : int
        Annotations whose frame lies outside their video (left out, as FrameSamples does).
    damaged_units : list of str
        Stored frames units this run found damaged (a chunk failing its
        CRC-32C, or unreadable) and wrote again instead of reusing, in words.
    seconds : float
    size_bytes : int
        Size of the store folder afterwards.
    records, shards : int
        MediaSequence: SequenceExamples and TFRecord shards of the export (0 for a frame store).
    context_frames : int
        With ``clip``: frames stored only for the clips of the samples (not samples themselves).
    clips_skipped : int
        With ``clip`` and ``edge="skip"``: samples whose clip was left out (no context stored for them).
    """

    out: str
    format: str
    codec: str
    release_id: str | None
    videos: int = 0
    samples: int = 0
    frames_decoded: int = 0
    frames_copied: int = 0
    frames_reused: int = 0
    videos_up_to_date: int = 0
    not_stored: dict[str, Any] = field(
        default_factory=lambda: {"box": 0, "mask": 0, "untrusted": 0, "untrusted_by_video": {}, "by_video": {}}
    )
    untrusted_frames: int = 0
    markers_without_stored_frames: int = 0
    markers_not_written: dict[str, int] = field(default_factory=dict)
    rows_outside_video: int = 0
    damaged_units: list[str] = field(default_factory=list)
    seconds: float = 0.0
    size_bytes: int = 0
    records: int = 0
    shards: int = 0
    context_frames: int = 0
    clips_skipped: int = 0

    def summary(self) -> str:
        """A few lines for the command line."""
        fps = (self.frames_decoded + self.frames_copied) / self.seconds if self.seconds > 0 else 0.0
        lines = [
            f"store {self.out} ({self.format}, codec {self.codec}, release {self.release_id})",
            *(
                [f"{plural(self.records, 'SequenceExample')} in {plural(self.shards, 'TFRecord shard')}"]
                if self.shards
                else []
            ),
            f"{plural(self.videos, 'video')}, {plural(self.samples + self.context_frames, 'frame')} stored; decoded {self.frames_decoded}, "
            f"copied {self.frames_copied}, reused {self.frames_reused}; {plural(self.videos_up_to_date, 'video')} "
            "up to date",
            f"{self.seconds:.1f} s ({fps:.0f} frames/s), {self.size_bytes / 2**20:.1f} MiB on disk",
        ]
        lost = self.not_stored["box"] + self.not_stored["mask"]
        if lost:
            lines.append(
                f"NOT STORED: {self.not_stored['box']} box and {self.not_stored['mask']} mask annotations lie on "
                f"frames this export does not store ({lost_reasons(self.not_stored)})"
            )
            ids = sorted(self.not_stored.get("annotation_ids", []))
            if ids:
                shown = ", ".join(str(i) for i in ids[:_IDS_SHOWN])
                more = f" and {lost - min(len(ids), _IDS_SHOWN)} more" if lost > _IDS_SHOWN else ""
                where = " (ExportReport.not_stored['annotation_ids'] in Python)" if more else ""
                lines.append(f"  not stored: annotation ids {shown}{more}{where}")
        if self.context_frames or self.clips_skipped:
            lines.append(
                f"clip context: {plural(self.context_frames, 'more frame')} stored for the samples' clips"
                + (f"; {plural(self.clips_skipped, 'clip')} left out at the videos' edges (edge='skip')"
                   if self.clips_skipped else "")
            )  # fmt: skip
        if self.untrusted_frames:
            lines.append(
                f"{plural(self.untrusted_frames, 'frame')} without a trustworthy picture left out (truncated or corrupt "
                "video files; `vidlabel validate` reports the annotations on them as untrusted_frame)"
            )
        if self.damaged_units:
            lines.append(
                f"{plural(len(self.damaged_units), 'damaged frames unit')} written again: "
                f"{'; '.join(self.damaged_units)}"
            )
        if self.markers_without_stored_frames:
            n = self.markers_without_stored_frames
            lines.append(f"{plural(n, 'marker')} {'has' if n == 1 else 'have'} no stored frame (kept as segments)")
        if self.markers_not_written:
            lines.append(f"NOT WRITTEN: {markers_not_written_words(self.markers_not_written)}")
        return "\n".join(lines)


def markers_not_written_words(by_video: dict[str, int]) -> str:
    """'3 markers of video 'b' (no stored frame, so no record to hold them)' for a MediaSequence export."""
    n = sum(by_video.values())
    videos = ", ".join(repr(v) for v in sorted(by_video))
    return (
        f"{plural(n, 'marker')} of {'video' if len(by_video) == 1 else 'videos'} {videos}: no frame of "
        f"{'it' if len(by_video) == 1 else 'them'} is stored (no box or mask), and a MediaSequence record holds a "
        "video's stored frames, so none holds these markers"
    )


def lost_reasons(not_stored: dict[str, Any], other: str = "stride / frames / kinds") -> str:
    """Why annotations are not stored, in words: how many lie on untrusted frames, how many on others."""
    untrusted = int(not_stored.get("untrusted", 0))
    if not untrusted:
        return other
    rest = not_stored["box"] + not_stored["mask"] - untrusted
    videos = ", ".join(repr(v) for v in not_stored.get("untrusted_by_video", {}))
    parts = [
        f"{untrusted} on frames without a trustworthy picture in video {videos}: the file is truncated or "
        "corrupt, the reader refuses those frames"
    ]
    if rest:
        parts.append(f"{rest} by {other}")
    return "; ".join(parts)


def decode_failure(err: VideoDecodeError, rel: Release, folder: Path, dataset: str | None) -> VideoDecodeError:
    """The error for a frame the reader refused during an export: why a rerun cannot help, and what does."""
    meta = rel.videos.get(err.video_id or "")
    vid = err.video_id if meta is None else meta.video_id
    file = err.path or (meta.uri if meta is not None else None)
    redo = (
        f"re-register the video (`{replace_command(dataset, file, str(vid))}`, or Dataset.update_video(probe(FILE, video_id={vid!r}))), "
        "build a new release and export that; the annotations on frames without a trustworthy picture are then "
        "reported, not stored"
    )
    if meta is not None and meta.untrusted_frames is None:
        why = (
            f"Video {vid!r} was registered before vidlabel recorded which frames have no trustworthy picture, "
            "so this export could not leave them out, and running it again fails the same way"
        )
    else:
        why = (
            f"Probe did not find this frame of video {vid!r} untrusted when the video was registered: the file "
            "may have changed or been damaged since, and running this export again fails the same way"
        )
    return VideoDecodeError(
        f"export to {str(folder)!r} stopped: {err}. {why}. To export it: {redo}. {_LEFT_INCOMPLETE}",
        path=err.path,
        video_id=err.video_id,
    )


def changed_failure(
    err: VideoChangedError, folder: Path, dataset: str | None, ds: Any, rel: Release, *, written: bool = True
) -> VideoChangedError:
    """The error for a video whose file changed since the release was built, naming the dataset in the remedy
    (or, when the dataset already holds the file's new registration, saying to build a new release).
    ``written`` False: found before the export wrote anything (an update checks first), which it says."""
    from vidlabel.video._reader import video_changed_message

    why = str(err)
    if err.video_id and err.path and err.expected_hash and err.actual_hash:
        why = video_changed_message(err.video_id, err.path, err.expected_hash, err.actual_hash, dataset=dataset)
        try:
            registered = ds.video(err.video_id).content_hash if hasattr(ds, "video") else None
        except VidlabelError:
            registered = None
        if registered is not None and registered == err.actual_hash:
            why = (
                f"release {rel.release_id} pins video {err.video_id!r} at content hash {err.expected_hash[:19]}..., "
                f"but the video was re-registered since with the file now at {str(err.path)!r} "
                f"({err.actual_hash[:19]}...): build a new release (`vidlabel build {dataset or 'DATASET'}`)"
            )
    outcome = f"stopped: {why}; then export again. {_LEFT_INCOMPLETE}"
    if not written:
        outcome = f"refused: {why}; then export again. (Nothing was written: the store is as it was.)"
    return VideoChangedError(
        f"export to {str(folder)!r} {outcome}",
        path=err.path,
        video_id=err.video_id,
        expected_hash=err.expected_hash,
        actual_hash=err.actual_hash,
    )


_LEFT_INCOMPLETE = (
    "(The store is left incomplete; the videos already written are kept and reused by the next export to this folder.)"
)


def report_plan(report: ExportReport, plan: Any, opts: Any, *, stacklevel: int = 2) -> None:
    """Copy what the plan leaves out into ``report`` and warn about it (``plan``: an ``ExportPlan``,
    ``opts``: the ``ExportOptions``; ``stacklevel`` as :func:`warnings.warn`'s, counted from the caller).

    Warns
    -----
    VidlabelWarning
        When box or mask annotations lie on frames the store does not hold, frames have no trustworthy picture, or
        (a frame store) video ids differ only in case.
    """
    report.not_stored = plan.not_stored
    report.markers_without_stored_frames = plan.markers_without_stored_frames
    report.rows_outside_video = plan.rows_outside_video
    report.untrusted_frames = plan.untrusted_frames
    lost_total = report.not_stored["box"] + report.not_stored["mask"]
    parts = []
    if lost_total:
        why = lost_reasons(report.not_stored, f"stride={opts.stride}, frames={opts.frames!r}, kinds={list(opts.kinds)}")
        parts.append(
            f"{report.not_stored['box']} box and {report.not_stored['mask']} mask annotations lie on frames "
            f"this export does not store ({why}); they are not in the store (ExportReport.not_stored lists "
            "them; the command line's summary names the first ids)"
        )
    if report.untrusted_frames:
        n = report.untrusted_frames
        parts.append(f"{plural(n, 'frame')} without a trustworthy picture {'is' if n == 1 else 'are'} not stored")
    if opts.format != "mediasequence":  # a frame store names a file or folder after each video id
        parts.extend(_case_collisions([v.video_id for v in plan.videos]))
    if parts:
        warnings.warn(f"export to {report.out!r}: {'; '.join(parts)}", VidlabelWarning, stacklevel=stacklevel + 1)


def _case_collisions(video_ids: list[str]) -> list[str]:
    """Words for video ids that differ only in case (``Cam``, ``cam``): a frame store keeps a file or folder per
    video id, and those collide on a case-insensitive file system (the macOS and Windows defaults), where one
    video's data would take the other's place."""
    by_fold: dict[str, list[str]] = {}
    for video_id in video_ids:
        by_fold.setdefault(video_id.casefold(), []).append(video_id)
    groups = [ids for ids in by_fold.values() if len(ids) > 1]
    if not groups:
        return []
    named = "; ".join(" and ".join(repr(v) for v in ids) for ids in groups[:5]) + ("; ..." if len(groups) > 5 else "")
    return [
        f"video ids that differ only in case ({named}) name files that collide on a case-insensitive file system "
        "(the macOS and Windows defaults): keep this store on a case-sensitive one, or register the videos "
        "under other ids"
    ]


def report_damaged(report: ExportReport, damaged: dict[str, str], *, stacklevel: int = 2) -> None:
    """Record and warn about stored units found damaged (they are written again, not reused).

    Warns
    -----
    VidlabelWarning
        When a stored frames unit fails its CRC-32C check.
    """
    if not damaged:
        return
    report.damaged_units = list(damaged.values())
    warnings.warn(
        f"export to {report.out!r}: {plural(len(damaged), 'stored frames unit')} "
        f"{'is damaged and is' if len(damaged) == 1 else 'are damaged and are'} written again instead of reused "
        f"({'; '.join(report.damaged_units)})",
        VidlabelWarning,
        stacklevel=stacklevel + 1,
    )
