"""Release to MediaSequence: one ``tf.train.SequenceExample`` per video (or per clip) in TFRecord shards.

:func:`export_mediasequence` is :func:`vidlabel.export`'s ``format="mediasequence"``: the same options
record (:mod:`._options`), the same frame selection and per-video plan (:mod:`._plan`: stored frames,
their regions in stored pixels, markers as segments) and the same decode-once frame iterator
(:func:`._units.unit_frames`) as the HDF5/Zarr export; only the writing differs. The keys are those of
MediaPipe's MediaSequence (:mod:`vidlabel.formats._mediasequence_keys`); the records are serialized
and framed by :mod:`vidlabel.export._tfrecord` (no TensorFlow, no clash with its protos).

Layout of ``OUT``: ``part-00000-of-000NN.tfrecord`` shards (records in video order, then clip order; a
shard is closed once it holds ``shard_frames`` frames), ``_plan.json`` (what the shards hold, written
first) and ``_SUCCESS`` (counts, written last). Every shard is written as ``<name>.partial`` and renamed
into place when full. A rerun of the same export keeps the shards in place and writes the others; a
folder holding the shards of another plan (another release or other options) is refused.

Conventions (docs/how-to/tensorflow.md): boxes are normalized to [0, 1] by the
stored image's size, y first; timestamps are the frame index's presentation times in microseconds,
absolute (a stream whose first frame is at 233 ms keeps 233333); segment indices are positions in the
record's frames, ``segment/start/index`` the first frame at or after the start and
``segment/end/index`` the last at or before the end (inclusive, so a marker between two stored frames
has ``end < start``). A marker covering every frame of a record is a clip label (its exact range in
``vidlabel/clip/label/{start,end}/timestamp``); the others are segments of each record they overlap
(a marker overlapping no record goes to the video's first). Masks are one single-channel PNG (0/1) per
mask region of a frame in ``INSTANCE_SEGMENTATION/image/multi_encoded``, in region order;
``vidlabel/region/kind`` says which regions are masks.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._version import __version__
from vidlabel.errors import StoreError, VidlabelWarning
from vidlabel.export._options import ExportOptions
from vidlabel.export._plan import ExportPlan, VideoPlan, check_video_files
from vidlabel.export._report import markers_not_written_words
from vidlabel.export._tfrecord import TFRecordWriter
from vidlabel.export._units import UnitJob, inline_frame_threads, unit_frames
from vidlabel.geometry import decode_rle
from vidlabel.spec import ORIGINS
from vidlabel.store._layout import digest

__all__ = ["PLAN_NAME", "SUCCESS_NAME", "RecordSpan", "encode_png_mask", "export_mediasequence", "record_datum"]

SUCCESS_NAME = "_SUCCESS"
PLAN_NAME = "_plan.json"
_PARTIAL = ".partial"
_MODEL = ORIGINS.index("model")


@dataclass(frozen=True)
class RecordSpan:
    """One SequenceExample: rows ``[start, stop)`` of video ``video``'s stored frames, in shard ``shard``."""

    video: int
    start: int
    stop: int
    shard: int = 0

    @property
    def frames(self) -> int:
        return self.stop - self.start


def shard_name(i: int, n: int) -> str:
    """``part-00000-of-00012.tfrecord``."""
    return f"part-{i:05d}-of-{n:05d}.tfrecord"


def plan_records(plan: ExportPlan, opts: ExportOptions) -> list[RecordSpan]:
    """Every record of the export in order, each assigned to its shard (a shard closes at ``shard_frames``)."""
    spans: list[RecordSpan] = []
    shard = held = 0
    for v, video in enumerate(plan.videos):
        t = int(video.frame_number.size)
        if t == 0:
            continue
        step = opts.clip_frames or t
        for start in range(0, t, step):
            stop = min(t, start + step)
            if held >= opts.shard_frames:
                shard, held = shard + 1, 0
            spans.append(RecordSpan(v, start, stop, shard))
            held += stop - start
    return spans


def plan_key(plan: ExportPlan, opts: ExportOptions, spans: list[RecordSpan]) -> str:
    """What the shards hold: the release, the options that shape records, each video's labels and pixels."""
    return digest(
        "mediasequence",
        plan.release.release_id,
        {"codec": opts.codec.spec, "view_id": opts.view_id, "frames": opts.frames, "kinds": list(opts.kinds),
         "stride": opts.stride, "output_size": opts.output_size, "clip_frames": opts.clip_frames,
         "shard_frames": opts.shard_frames},
        [(v.video_id, v.attrs["labels_key"], v.pixel_key, v.frames_key) for v in plan.videos],
        [(s.video, s.start, s.stop, s.shard) for s in spans],
    )  # fmt: skip


# -- the folder ------------------------------------------------------------------------------------------------


def _check_folder(folder: Path, key: str, names: list[str]) -> set[str]:
    """Check ``folder`` holds nothing but this export's files (writing nothing); return the names it holds.

    Raises
    ------
    StoreError
        If the folder holds other files, or the shards of another plan.
    """
    from vidlabel.store._fs import LOCK_NAME

    allowed = {LOCK_NAME, PLAN_NAME, SUCCESS_NAME, *names, *(n + _PARTIAL for n in names)}
    present = {p.name for p in folder.iterdir()}
    plan_file = folder / PLAN_NAME
    if plan_file.exists():
        try:
            old = json.loads(plan_file.read_text(encoding="utf-8")).get("plan_key")
        except (OSError, ValueError, AttributeError):
            old = None
        if old != key:
            raise StoreError(
                f"{str(folder)!r} holds a MediaSequence export of another release or other options (plan {old}, "
                f"this export's {key}); export to a new or empty folder, or remove the old shards",
                path=str(folder),
            )
    others = sorted(present - allowed)
    if others:
        raise StoreError(
            f"{str(folder)!r} holds files that are not this MediaSequence export's ({', '.join(others[:5])}); "
            "export to a new or empty folder",
            path=str(folder),
        )
    return present


def _prepare_folder(folder: Path, key: str, names: list[str], present: set[str]) -> set[str]:
    """Set ``folder`` (checked by :func:`_check_folder`, holding ``present``) up for the export: drop what a
    killed export left, write the plan; return the shards already in place."""
    plan_file = folder / PLAN_NAME
    for name in present:
        if name.endswith(_PARTIAL):  # left by a killed export
            (folder / name).unlink()
    kept = {n for n in names if n in present}
    if len(kept) < len(names) and SUCCESS_NAME in present:
        (folder / SUCCESS_NAME).unlink()
    if not plan_file.exists():
        _write_json(plan_file, {"format": "mediasequence", "plan_key": key, "shards": names})
    return kept


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + _PARTIAL)
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


# -- the export ------------------------------------------------------------------------------------------------


def export_mediasequence(
    plan: ExportPlan, opts: ExportOptions, report: Any, bar: Any = None, *, images: bool = True
) -> None:
    """Write ``plan`` as MediaSequence records into ``opts.out`` (locked by the caller); fill ``report``.

    ``images=False`` writes labels-only records (nothing decoded): ``export_labels(ds, "mediasequence", ...)``.

    Raises
    ------
    StoreError
        If ``opts.out`` holds other files or another plan's shards.
    VideoNotFoundError
        If the file of a video with a record to write cannot be found, before anything is written (one error
        names every such video).
    VideoDecodeError, VideoChangedError
        From the reader.
    """
    folder = Path(opts.out)
    spans = plan_records(plan, opts)
    _markers_without_record(plan, spans, report, folder if images else None)
    n_shards = (spans[-1].shard + 1) if spans else 0
    names = [shard_name(i, n_shards) for i in range(n_shards)]
    key = plan_key(plan, opts, spans)
    present = _check_folder(folder, key, names)
    if images:  # every video with a record to write is decoded: find their files before writing anything
        todo = {s.video for s in spans if s.frames and names[s.shard] not in present}
        check_video_files((plan.videos[v].meta for v in sorted(todo)), opts.roots)
    kept = _prepare_folder(folder, key, names, present)
    context = _MarkerContext(plan)
    writer: Any = None
    current = -1

    def close_current() -> None:
        nonlocal writer
        if writer is not None:
            writer.close()
            final = folder / names[current]
            final.with_name(final.name + _PARTIAL).replace(final)
            writer = None

    try:
        for span, encoded in _records_to_write(plan, opts, spans, kept, report, bar, images):
            if span.shard != current:
                close_current()
                current = span.shard
                writer = TFRecordWriter(str(folder / (names[current] + _PARTIAL)))
            ctx, seq = record_datum(plan, opts, span, encoded, context, plan_records_of(spans, span.video))
            writer.write(ctx, seq)
        close_current()
    finally:
        if writer is not None:
            writer.close()
    report.frames_reused = sum(s.frames for s in spans if names[s.shard] in kept)
    shards = [
        {"name": names[i], "records": sum(1 for s in spans if s.shard == i),
         "frames": sum(s.frames for s in spans if s.shard == i), "bytes": (folder / names[i]).stat().st_size}
        for i in range(n_shards)
    ]  # fmt: skip
    report.records, report.shards = len(spans), n_shards
    report.samples = sum(s.frames for s in spans)
    report.videos = len({s.video for s in spans})
    _write_json(
        folder / SUCCESS_NAME,
        {"format": "mediasequence", "plan_key": key, "release_id": plan.release.release_id,
         "records": len(spans), "frames": report.samples, "videos": report.videos, "shards": shards,
         "codec": opts.codec.spec, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
         "vidlabel_version": __version__},
    )  # fmt: skip


def _markers_without_record(plan: ExportPlan, spans: list[RecordSpan], report: Any, folder: Path | None) -> None:
    """Count (and, given the export's ``folder``, warn about) the markers of videos with no record: no frame of theirs is stored, so
    no record holds them (``report.markers_not_written``); they leave ``markers_without_stored_frames``, whose
    markers are kept as segments."""
    recorded = {s.video for s in spans}
    lost = {
        video.video_id: int(video.arrays["segments/start_frame"].size)
        for v, video in enumerate(plan.videos)
        if v not in recorded and video.arrays.get("segments/start_frame", np.zeros(0)).size
    }
    report.markers_not_written = lost
    report.markers_without_stored_frames = max(0, report.markers_without_stored_frames - sum(lost.values()))
    if lost and folder is not None:
        warnings.warn(
            f"export to {str(folder)!r}: {markers_not_written_words(lost)}; export with "
            "frames='all' (`vidlabel export ... --frames all`) to write them",
            VidlabelWarning,
            stacklevel=4,
        )


def plan_records_of(spans: list[RecordSpan], video: int) -> list[RecordSpan]:
    """The records of one video, in order."""
    return [s for s in spans if s.video == video]


def _records_to_write(
    plan: ExportPlan, opts: ExportOptions, spans: list[RecordSpan], kept: set[str], report: Any, bar: Any,
    images: bool,
) -> Iterator[tuple[RecordSpan, list[bytes] | None]]:  # fmt: skip
    """(record, its encoded images) of every record whose shard is not in place, decoding each video once."""
    n_shards = (spans[-1].shard + 1) if spans else 0
    for v, video in enumerate(plan.videos):
        todo = [s for s in spans if s.video == v and shard_name(s.shard, n_shards) not in kept]
        if not todo:
            continue
        if not images:
            yield from ((span, None) for span in todo)
            continue
        rows = np.concatenate([np.arange(s.start, s.stop) for s in todo])
        frames = video.frame_number[rows]
        job = UnitJob(
            folder=opts.out, key=video.frames_key, meta=video.meta, view=plan.view, size=video.size,
            chunk_frames=1, frame_number=frames, decode=frames, sources=[], attrs={},
        )  # fmt: skip
        counts = {"decoded": 0, "copied": 0}
        decoded = unit_frames(job, opts, counts, inline_frame_threads())
        for span in todo:
            encoded = []
            for _ in range(span.frames):
                encoded.append(encode_image(next(decoded), opts))
                if bar is not None:
                    bar.update(1)
            yield span, encoded
        decoded.close()
        report.frames_decoded += counts["decoded"]


def encode_image(image: np.ndarray, opts: ExportOptions) -> bytes:
    """One stored frame as JPEG or PNG bytes (the store's own image codecs)."""
    return bytes(opts.codec.encode(image[None], "hdf5"))  # type: ignore[arg-type]


def encode_png_mask(mask: np.ndarray) -> bytes:
    """An (H, W) 0/1 mask as a single-channel 8-bit PNG (PyAV's encoder, exact)."""
    import av

    m = np.ascontiguousarray(mask, dtype=np.uint8)
    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = int(m.shape[1]), int(m.shape[0]), "gray"
    packets = list(ctx.encode(av.VideoFrame.from_ndarray(m, format="gray")))  # type: ignore[attr-defined]
    packets += list(ctx.encode(None))
    return b"".join(bytes(p) for p in packets)


# -- one record ------------------------------------------------------------------------------------------------


class _MarkerContext:
    """Markers' origin and confidence (the plan's segments hold their annotation ids)."""

    def __init__(self, plan: ExportPlan) -> None:
        table = plan.release.table
        self.order = np.argsort(table.annotation_id, kind="stable")
        self.ids = table.annotation_id[self.order]
        self.table = table

    def origin_confidence(self, annotation_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = self.order[np.searchsorted(self.ids, annotation_ids)]
        return self.table.origin[rows].astype(np.int64), self.table.confidence[rows].astype(np.float64)


def _origin_names(codes: np.ndarray) -> list[bytes]:
    return [ORIGINS[int(c)].encode() for c in codes.tolist()]


def record_datum(
    plan: ExportPlan, opts: ExportOptions, span: RecordSpan, images: list[bytes] | None,
    markers: _MarkerContext, video_spans: list[RecordSpan],
) -> tuple[dict[str, tuple[Any, str]], dict[str, tuple[list[Any], str]]]:  # fmt: skip
    """The ``(context, feature_lists)`` of one record in the ``tfrecord`` writer's ``{key: (value, type)}`` form.

    ``images`` None writes a labels-only record (no ``image/encoded``, ``image/format`` ... : MediaPipe's
    metadata stage, which its pipeline fills with images).
    """
    video: VideoPlan = plan.videos[span.video]
    a = video.arrays
    rows = slice(span.start, span.stop)
    frames = video.frame_number[rows]
    ts = a["timestamp_us"][rows].astype(np.int64)
    width, height = video.size
    name = Path(plan.dataset_path).name if plan.dataset_path else "vidlabel"
    release_id = plan.release.release_id
    whole = len(video_spans) == 1
    ctx: dict[str, tuple[Any, str]] = {
        "example/id": ((video.video_id if whole else f"{video.video_id}/{frames[0]}-{frames[-1]}").encode(), "byte"),
        "example/dataset_name": ((f"{name}@{release_id}" if release_id else name).encode(), "byte"),
        "clip/data_path": ((video.meta.uri or "").encode(), "byte"),
        "clip/media_id": (video.video_id.encode(), "byte"),
        "clip/start/timestamp": (int(ts[0]), "int"),
        "clip/end/timestamp": (int(ts[-1]), "int"),
        "vidlabel/release_id": ((release_id or "").encode(), "byte"),
    }
    if opts.view_id is not None:
        ctx["vidlabel/view_id"] = (opts.view_id.encode(), "byte")
    seq: dict[str, tuple[list[Any], str]] = {}
    if images is not None:
        seconds = (int(ts[-1]) - int(ts[0])) / 1e6
        fps = video.meta.fps["num"] / video.meta.fps["den"]
        ctx["image/format"] = (b"JPEG" if opts.codec.name == "jpeg" else b"PNG", "byte")
        ctx["image/channels"] = (3, "int")
        ctx["image/height"] = (int(height), "int")
        ctx["image/width"] = (int(width), "int")
        ctx["image/frame_rate"] = ((len(frames) - 1) / seconds if seconds > 0 else float(fps), "float")
        seq["image/encoded"] = (images, "byte")
        seq["image/timestamp"] = (ts.tolist(), "int")
    _markers(ctx, plan, video, span, video_spans, markers)
    _regions(ctx, seq, plan, video, span, ts)
    return ctx, seq


def _markers(
    ctx: dict[str, tuple[Any, str]], plan: ExportPlan, video: VideoPlan, span: RecordSpan,
    video_spans: list[RecordSpan], markers: _MarkerContext,
) -> None:  # fmt: skip
    """Clip labels (markers covering every frame of the record) and segments (the others overlapping it)."""
    a = video.arrays
    start, end = a["segments/start_frame"], a["segments/end_frame"]
    if start.size == 0:
        return
    fn = video.frame_number
    first, last = int(fn[span.start]), int(fn[span.stop - 1])
    covers = (start <= first) & (end >= last)
    overlaps = (start <= last) & (end >= first)
    if span is video_spans[0]:  # markers overlapping no record of the video go to its first
        anywhere = np.zeros(start.size, bool)
        for s in video_spans:
            anywhere |= (start <= int(fn[s.stop - 1])) & (end >= int(fn[s.start]))
        overlaps |= ~anywhere
    origin, conf = markers.origin_confidence(a["segments/annotation_id"])
    names = plan.class_names
    label = a["segments/label_index"]
    for sel, prefix in ((covers, "clip/label"), (overlaps & ~covers, "segment/label")):
        idx = np.flatnonzero(sel)
        if not idx.size:
            continue
        ctx[f"{prefix}/index"] = (label[idx].tolist(), "int")
        ctx[f"{prefix}/string"] = ([names[int(k)].encode() for k in label[idx].tolist()], "byte")
        if (origin[idx] == _MODEL).any():
            ctx[f"{prefix}/confidence"] = (conf[idx].tolist(), "float")
        ctx[f"vidlabel/{prefix.split('/')[0]}{'/label' if prefix.startswith('clip') else ''}/origin"] = (
            _origin_names(origin[idx]),
            "byte",
        )
        if prefix == "clip/label":
            ctx["vidlabel/clip/label/start/timestamp"] = (a["segments/start_timestamp_us"][idx].tolist(), "int")
            ctx["vidlabel/clip/label/end/timestamp"] = (a["segments/end_timestamp_us"][idx].tolist(), "int")
        else:
            clip_frames = fn[span.start : span.stop]
            ctx["segment/start/timestamp"] = (a["segments/start_timestamp_us"][idx].tolist(), "int")
            ctx["segment/end/timestamp"] = (a["segments/end_timestamp_us"][idx].tolist(), "int")
            ctx["segment/start/index"] = (np.searchsorted(clip_frames, start[idx], "left").tolist(), "int")
            ctx["segment/end/index"] = ((np.searchsorted(clip_frames, end[idx], "right") - 1).tolist(), "int")


def _regions(
    ctx: dict[str, tuple[Any, str]], seq: dict[str, tuple[list[Any], str]], plan: ExportPlan, video: VideoPlan,
    span: RecordSpan, ts: np.ndarray,
) -> None:  # fmt: skip
    """Per-frame region lists: boxes normalized (y first), labels, tracks, confidence, masks as PNG."""
    a = video.arrays
    offsets = a["regions/row_offsets"]
    r0, r1 = int(offsets[span.start]), int(offsets[span.stop])
    width, height = video.size
    box = a["regions/bbox_xyxy"].astype(np.float64)
    norm = (box / np.array([width, height, width, height], np.float64)).astype(np.float32)
    mask_off = a["regions/mask_offsets"]
    is_mask = mask_off[1:] > mask_off[:-1]
    origin = a["regions/origin"]
    names = [n.encode() for n in plan.class_names]
    with_conf = bool((origin[r0:r1] == _MODEL).any())
    with_masks = bool(is_mask[r0:r1].any())
    keys = ["region/bbox/ymin", "region/bbox/xmin", "region/bbox/ymax", "region/bbox/xmax", "region/label/index",
            "region/label/string", "region/track/string", "region/is_generated", "vidlabel/region/kind",
            "vidlabel/region/origin"]  # fmt: skip
    if with_conf:
        keys.append("region/label/confidence")
    if with_masks:
        keys.append("INSTANCE_SEGMENTATION/image/multi_encoded")
    lists: dict[str, list[Any]] = {k: [] for k in keys}
    for j in range(span.start, span.stop):
        a0, a1 = int(offsets[j]), int(offsets[j + 1])
        lists["region/bbox/ymin"].append(norm[a0:a1, 1].tolist())
        lists["region/bbox/xmin"].append(norm[a0:a1, 0].tolist())
        lists["region/bbox/ymax"].append(norm[a0:a1, 3].tolist())
        lists["region/bbox/xmax"].append(norm[a0:a1, 2].tolist())
        labels = a["regions/label_index"][a0:a1].tolist()
        lists["region/label/index"].append(labels)
        lists["region/label/string"].append([names[k] for k in labels])
        lists["region/track/string"].append(
            [b"" if t < 0 else str(t).encode() for t in a["regions/track_id"][a0:a1].tolist()]
        )
        lists["vidlabel/region/kind"].append([b"mask" if m else b"box" for m in is_mask[a0:a1].tolist()])
        lists["vidlabel/region/origin"].append(_origin_names(origin[a0:a1]))
        lists["region/is_generated"].append((origin[a0:a1] == _MODEL).astype(np.int64).tolist())
        if with_conf:
            lists["region/label/confidence"].append(a["regions/confidence"][a0:a1].astype(np.float64).tolist())
        if with_masks:
            lists["INSTANCE_SEGMENTATION/image/multi_encoded"].append(
                [_mask_png(a, k, video.size) for k in range(a0, a1) if is_mask[k]]
            )
    types = {"region/label/index": "int", "region/label/string": "byte", "region/track/string": "byte",
             "region/is_generated": "int",
             "vidlabel/region/kind": "byte", "vidlabel/region/origin": "byte",
             "INSTANCE_SEGMENTATION/image/multi_encoded": "byte"}  # fmt: skip
    for k, v in lists.items():
        seq[k] = (v, types.get(k, "float"))
    seq["region/is_annotated"] = (_region_annotated(a)[span.start : span.stop].astype(np.int64).tolist(), "int")
    seq["region/timestamp"] = (ts.tolist(), "int")
    if with_masks:
        seq["INSTANCE_SEGMENTATION/image/timestamp"] = (ts.tolist(), "int")
        ctx["INSTANCE_SEGMENTATION/image/format"] = (b"PNG", "byte")
        ctx["INSTANCE_SEGMENTATION/image/height"] = (int(height), "int")
        ctx["INSTANCE_SEGMENTATION/image/width"] = (int(width), "int")


def _region_annotated(a: dict[str, np.ndarray]) -> np.ndarray:
    """(T,) bool ``region/is_annotated`` of a video's stored rows (docs/how-to/tensorflow.md, key table: 1 for a frame with a box or
    mask annotation): 1 on a frame with a region; also on a frame the store calls annotated (a selected annotation
    on it) that no selected marker covers, whose boxes were annotated and left the exported view (an empty frame
    of that crop); else 0.

    MediaSequence reads 1 with no boxes as "annotated, and empty", and 0 as padding whose boxes may be ignored:
    before, the store's ``is_annotated`` was written as it is, so a frame annotated only by a marker taught a
    detector that it held no objects, and with ``kinds=("marker",)`` a frame's written boxes sat under a 0.
    """
    annotated = a["is_annotated"].astype(bool)
    offsets = a["regions/row_offsets"]
    has_regions = offsets[1:] > offsets[:-1]
    start, end = a.get("segments/start_index"), a.get("segments/end_index")
    if start is None or end is None:
        return has_regions | annotated
    under_marker = np.zeros(annotated.size + 1, np.int64)
    used = start >= 0
    np.add.at(under_marker, start[used], 1)
    np.add.at(under_marker, end[used] + 1, -1)
    return has_regions | (annotated & (np.cumsum(under_marker)[:-1] == 0))


def _mask_png(a: dict[str, np.ndarray], k: int, size: tuple[int, int]) -> bytes:
    counts = a["regions/mask_counts"][int(a["regions/mask_offsets"][k]) : int(a["regions/mask_offsets"][k + 1])]
    mask = decode_rle({"size": [size[1], size[0]], "counts": counts.tobytes()})
    return encode_png_mask(mask)
