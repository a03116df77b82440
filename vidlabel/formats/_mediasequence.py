"""MediaSequence (TensorFlow / MediaPipe) ``tf.train.SequenceExample`` records in TFRecord files.

Import (``import_labels(ds, "mediasequence", PATH)``; PATH a TFRecord file or a folder of shards:
``*.tfrecord``, ``*.tfrecords`` and TensorFlow's ``NAME-00000-of-00010``; an export that did not finish
is refused): each record's video is its ``clip/media_id`` when that is a registered video id, else the registered video whose uri is its ``clip/data_path`` (``videos=`` maps either to a
video id; ``video_id=`` takes every record for one video); a record naming no registered video is
refused with the known ids. Frames are found by time, never by position: each feature-list entry's
``region/timestamp`` (else ``image/timestamp``) is looked up in the registered video's frame index
(the nearest frame, within half the gap to its neighbours). Boxes ``region/bbox/{ymin,xmin,ymax,xmax}``
are normalized: they are scaled by the registered video's width and height. Labels are read by name
(``region/label/string``); each distinct ``region/track/string`` of a video becomes one track (an
empty string: no track), and so does each distinct ``region/track/index`` (MediaSequence's integer track
ids, read when a record has no strings); a finite ``region/label/confidence`` makes a ``model`` row with that
confidence (``vidlabel/region/origin``, when present, says the origin, else MediaSequence's
``region/is_generated``: 1 a ``model`` row, 0 a ``human`` one). MediaSequence's predicted regions
(``PREDICTED/region/*``, the same keys under MediaPipe's ``PREDICTED`` prefix) are ``model`` rows, their
tracks others than the unprefixed regions'. Masks are the PNGs of
``INSTANCE_SEGMENTATION/image/multi_encoded``, one per mask region of the frame in region order
(``vidlabel/region/kind`` says which regions are masks; without it, a frame with as many PNGs as
regions is all masks). Segments become markers from the first frame at or after
``segment/start/timestamp`` to the last at or before ``segment/end/timestamp``; clip labels become
markers over the clip (``vidlabel/clip/label/{start,end}/timestamp`` when present, else
``clip/{start,end}/timestamp``); image labels (``image/label/string``) become markers of their image's
frame. A marker repeated in several records of one video (a marker spanning clips) is imported once, and
so is a box or mask several records of a video hold (clips that overlap). Records exported with a view
(``vidlabel/view_id``) are refused: their boxes are relative to the view's crop. Labels the import has no rows for (points, regions under another
prefix, segmentation images) are counted in the report's "not imported", as the other formats count shapes they do
not import; a record whose labels cannot be read (labels of no box, label indices without strings) is refused,
naming each key (:func:`_unread_labels`).

Export through ``export_labels(ds, "mediasequence", OUT)`` writes labels-only records (no images:
MediaPipe's metadata stage); ``vidlabel.export(ds, OUT, format="mediasequence")`` writes the images too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel._words import shown
from vidlabel.dataset import Release
from vidlabel.geometry import resize_mask
from vidlabel.spec import VideoMetadata

from ._common import ImportContext, Parsed, VideoRows, fail, no_file
from ._mediasequence_keys import CONTEXT, FEATURE_LISTS, PROTO_FIELD
from ._report import ExportLabelsReport

__all__ = ["export_mediasequence_labels", "import_mediasequence", "read_records"]

#: MediaSequence's prefix of predicted regions (``media_sequence.py``'s ``PREDICTED_PREFIX``, ``add_predicted_bbox``).
PREDICTED = "PREDICTED/"

_REGION_LISTS = (
    "region/bbox/ymin", "region/bbox/xmin", "region/bbox/ymax", "region/bbox/xmax", "region/label/index",
    "region/label/string", "region/label/confidence", "region/track/string", "region/track/index", "vidlabel/region/kind",
    "vidlabel/region/origin", "region/is_generated",
)  # fmt: skip


# -- reading TFRecord files ------------------------------------------------------------------------------------


#: TFRecord file names in a folder: ``*.tfrecord``, ``*.tfrecords``, and TensorFlow's shard names
#: ``NAME-00000-of-00010`` (MediaPipe's datasets, Beam's ``WriteToTFRecord``), with or without an extension before.
_SHARD_NAME = re.compile(r"(\.tfrecords?|-\d+-of-\d+)$")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        names = {p.name for p in path.iterdir()}
        partial = sorted(n for n in names if n.endswith(".partial") and _SHARD_NAME.search(n[: -len(".partial")]))
        if partial or ("_plan.json" in names and "_SUCCESS" not in names):
            raise fail(
                path, None, "is a MediaSequence export that did not finish (" + (f"{', '.join(partial[:3])} half "
                "written" if partial else "_plan.json without _SUCCESS") + "): its records are not all there; "
                "rerun the export to finish it, then import",
            )  # fmt: skip
        files = sorted(p for p in path.iterdir() if p.is_file() and _SHARD_NAME.search(p.name))
        if not files:
            raise fail(path, None, "folder holds no TFRecord file (*.tfrecord, *.tfrecords, NAME-00000-of-00010)")
        return files
    if not path.is_file():
        raise no_file(path)
    return [path]


def read_records(path: Path) -> Iterator[tuple[Path, int, Any]]:
    """``(file, record number, SequenceExample)`` of every record of a TFRecord file or folder of shards.

    The framing is TFRecord's (length, masked CRC-32C of the length, data, masked CRC-32C of the
    data); both CRCs are checked.

    Raises
    ------
    FormatError
        On a file cut short, a CRC that does not match, or a record that is not a SequenceExample.
    """
    from vidlabel.export._tfrecord import iter_records, messages

    # messages() says which extra to install when protobuf is missing, before protobuf is imported here
    sequence_example = messages().SequenceExample
    from google.protobuf.message import DecodeError

    for file in _files(path):
        with open(file, "rb") as fh:
            for number, data, problem in iter_records(fh):
                where = f"record {number}"
                if data is None:
                    raise fail(file, where, str(problem))
                try:
                    example = sequence_example.FromString(data)
                except DecodeError as err:
                    raise fail(file, where, f"not a tf.train.SequenceExample ({err})") from err
                _check_types(file, where, example)
                yield file, number, example


def _check_types(file: Path, where: str, example: Any) -> None:
    """Every known key holds the type MediaSequence gives it (an unknown key is left alone)."""
    for key, feature in example.context.feature.items():
        if key in CONTEXT:
            _check_kind(file, where, key, feature, CONTEXT[key])
    for key, flist in example.feature_lists.feature_list.items():
        base = key.removeprefix(PREDICTED)
        if base in FEATURE_LISTS and (base == key or base.startswith("region/")):
            for j, feature in enumerate(flist.feature):
                _check_kind(file, f"{where} frame {j}", key, feature, FEATURE_LISTS[base])


def _check_kind(file: Path, where: str, key: str, feature: Any, spec: tuple[str, bool]) -> None:
    kind, is_list = spec
    got = feature.WhichOneof("kind")
    if got is not None and got != PROTO_FIELD[kind]:
        raise fail(file, where, f"{key} holds a {got}; MediaSequence's {key} is a {PROTO_FIELD[kind]}")
    if not is_list and len(getattr(feature, PROTO_FIELD[kind]).value) != 1:
        n = len(getattr(feature, PROTO_FIELD[kind]).value)
        raise fail(file, where, f"{key} holds {n} values; it holds one")


def _context(example: Any, key: str) -> list[Any] | None:
    if key not in example.context.feature:
        return None
    kind = CONTEXT[key][0]
    return list(getattr(example.context.feature[key], PROTO_FIELD[kind]).value)


def _one(example: Any, key: str) -> Any:
    values = _context(example, key)
    return None if not values else values[0]


def _lists(example: Any, key: str, prefix: str = "") -> list[list[Any]] | None:
    if prefix + key not in example.feature_lists.feature_list:
        return None
    kind = FEATURE_LISTS[key][0]
    return [list(getattr(f, PROTO_FIELD[kind]).value) for f in example.feature_lists.feature_list[prefix + key].feature]


# -- import ----------------------------------------------------------------------------------------------------


class _Video:
    """One registered video: its frame times, its track strings, its markers per record."""

    def __init__(self, meta: VideoMetadata) -> None:
        from vidlabel.export._plan import timestamps_us

        self.meta = meta
        self.ts = timestamps_us(meta, np.arange(meta.frame_count, dtype=np.int64))
        self.tracks: dict[tuple[str, str, Any], int] = {}
        self.markers: Counter[tuple[Any, ...]] = Counter()
        self.marker_where: dict[tuple[Any, ...], str] = {}
        self.regions: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]] = {}
        #: regions and markers another record of the video held too, imported once (said in a note)
        self.repeats: Counter[str] = Counter()

    def keep_regions(self, found: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]]) -> None:
        """Keep one record's regions: a region another record of the video holds too (clips that overlap: the
        same frame, label, box or mask, track, origin and confidence) is kept as often as one record holds it."""
        for key, rows in found.items():
            have = len(self.regions.get(key, ()))
            self.repeats["region"] += min(have, len(rows))
            if len(rows) > have:
                self.regions[key] = rows

    def frames(self, file: Path, where: str, ts: Sequence[int]) -> np.ndarray:
        """The frame of each timestamp: the nearest, within half the gap to its neighbours."""
        t = self.ts
        asked = np.asarray(ts, dtype=np.int64)
        if t.size == 0:
            raise fail(file, where, f"video {self.meta.video_id!r} has no frames")
        # a timestamp near the int64 limits (2**62, -2**63) wrapped around in the differences below and
        # passed as the first or last frame: pulled in to 2**50 us (35 years) off the video, it stays refused
        want = np.clip(asked, int(t[0]) - 2**50, int(t[-1]) + 2**50)
        pos = np.clip(np.searchsorted(t, want), 1, max(1, t.size - 1)) if t.size > 1 else np.zeros(want.size, int)
        if t.size > 1:
            pos = np.where(np.abs(t[pos - 1] - want) <= np.abs(t[pos] - want), pos - 1, pos)
        gaps = np.diff(t)
        left = np.concatenate([[2**60], gaps])[pos] if t.size > 1 else np.full(want.size, 10**12)
        right = np.concatenate([gaps, [2**60]])[pos] if t.size > 1 else np.full(want.size, 10**12)
        off = np.abs(t[pos] - want)
        bad = np.flatnonzero(2 * off > np.minimum(left, right))
        if bad.size:
            j = int(bad[0])
            raise fail(
                file,
                where,
                f"timestamp {int(asked[j])} us (entry {j}) is no frame of video {self.meta.video_id!r} "
                f"(frames 0..{t.size - 1} at {int(t[0])}..{int(t[-1])} us; nearest frame {int(pos[j])} at "
                f"{int(t[pos[j]])} us)",
            )
        shared = np.flatnonzero(np.minimum(left, right) == 0)
        if shared.size:
            j = int(shared[0])
            first = int(pos[j]) - 1 if left[j] == 0 else int(pos[j])
            raise fail(
                file,
                where,
                f"timestamp {int(asked[j])} us (entry {j}) is the time of frames {first} and {first + 1} of video "
                f"{self.meta.video_id!r}: its frame index gives them one time, so no timestamp tells them apart "
                "(a stream without timestamps, registered before vidlabel timed its frames by the frame rate); "
                "re-register the video (vidlabel add-video DATASET FILE --video-id ID --replace) and import again",
            )
        return pos.astype(np.int64)

    def track(self, name: bytes | int, prefix: str = "") -> int | None:
        """The track of a ``region/track/string`` (empty: none) or ``region/track/index`` value in this video
        (``PREDICTED/`` tracks are others than the unprefixed ones of the same name)."""
        if isinstance(name, bytes):
            if not name:
                return None
            return self.tracks.setdefault((prefix, "string", name), len(self.tracks))
        return self.tracks.setdefault((prefix, "index", int(name)), len(self.tracks))


def _resolve(ctx: ImportContext, uris: dict[str, str], file: Path, where: str, example: Any) -> VideoMetadata:
    """The registered video of a record: ``video_id=``, ``videos=``, ``clip/media_id`` or ``clip/data_path``."""
    media_id = (_one(example, "clip/media_id") or b"").decode("utf-8", "replace")
    data_path = (_one(example, "clip/data_path") or b"").decode("utf-8", "replace")
    if ctx.video_id is not None and not ctx.video_map:
        ctx.video_id_used = True
        return ctx.videos[ctx.video_id]
    for key in (media_id, data_path):
        if key and key in ctx.video_map:
            ctx.map_keys_used.add(key)
            vid = ctx.video_map[key]
            if vid not in ctx.videos:
                raise fail(file, where, f"videos= maps {key!r} to {vid!r}, which is not registered")
            return ctx.videos[vid]
    if media_id in ctx.videos:
        ctx.matched_by_id.append(media_id)
        return ctx.videos[media_id]
    if data_path in uris:
        return ctx.videos[uris[data_path]]
    raise fail(
        file,
        where,
        f"clip/media_id {media_id!r} / clip/data_path {data_path!r} names no registered video; known ids: "
        f"{', '.join(sorted(ctx.videos)) or '(none)'} (pass videos={{media_id: video id}}, --video-map)",
    )


def _origin_conf(origins: list[bytes] | None, conf: list[float] | None, k: int) -> dict[str, Any]:
    c = conf[k] if conf is not None and k < len(conf) else math.nan
    if origins is not None:
        origin = origins[k].decode("ascii", "replace")
    else:
        origin = "model" if math.isfinite(c) else "human"
    out: dict[str, Any] = {"origin": origin} if origin != "human" else {}
    if math.isfinite(c):
        out["confidence"] = float(c)
    return out


def import_mediasequence(ctx: ImportContext) -> Parsed:
    """Read MediaSequence records into rows (see the module docstring)."""
    parsed = Parsed()
    uris = {str(s.get("uri")): vid for vid, m in ctx.videos.items() for s in m.sources}
    videos: dict[str, _Video] = {}
    for file, number, example in read_records(ctx.path):
        where = f"record {number}"
        meta = _resolve(ctx, uris, file, where, example)
        _unread_labels(file, where, example, parsed.skipped)
        view = _one(example, "vidlabel/view_id")
        if view:
            try:
                named = shown(view.decode("utf-8"))
            except UnicodeDecodeError:  # named by its bytes: no view id of a dataset is such text
                named = f"{shown(view)} (not UTF-8)"
            raise fail(
                file, where, f"was exported with view {named}: its boxes are relative to the view's crop; "
                "import a full-frame export",
            )  # fmt: skip
        video = videos.setdefault(meta.video_id, _Video(meta))
        parsed.videos.setdefault(meta.video_id, VideoRows(meta))
        found: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]] = {}
        _import_regions(file, where, example, video, found, label_map=ctx.label_map)
        _import_regions(file, where, example, video, found, PREDICTED, ctx.label_map)
        video.keep_regions(found)
        _import_markers(file, where, example, video)
    for vid, video in videos.items():
        vr = parsed.videos[vid]
        if video.repeats.total():
            held = " and ".join(f"{n} {what}{'s' if n != 1 else ''}" for what, n in sorted(video.repeats.items()) if n)
            parsed.notes.append(
                f"video {vid!r}: {held} that another record of the video holds too (a marker spanning clips, clips that "
                "overlap, or a record given twice) imported once"
            )
        for rows in video.regions.values():
            for row, at in rows:
                vr.add(row, at)
        for key, n in video.markers.items():
            label, start, end, extra = key
            for _ in range(n):
                vr.add({"kind": "marker", "label": label, "start_frame": start, "end_frame": end, **dict(extra)},
                       video.marker_where[key])  # fmt: skip
    return parsed


#: Feature-list keys of labels the import has no rows for, and why.
_UNREAD = {
    "INSTANCE_SEGMENTATION/image/encoded": "one image of instance ids per frame; vidlabel reads one PNG per "
    "instance, INSTANCE_SEGMENTATION/image/multi_encoded, with the region/bbox/* of each",
    "CLASS_SEGMENTATION/image/encoded": "class segmentation images: vidlabel has no per-pixel class labels",
    "CLASS_SEGMENTATION/image/multi_encoded": "class segmentation images: vidlabel has no per-pixel class labels",
}
_POINT_KEYS = ("region/point/", "region/3d_point/", "region/radius")
_BOX_KEYS = ("region/bbox/ymin", "region/bbox/xmin", "region/bbox/ymax", "region/bbox/xmax")


def _unread_labels(file: Path, where: str, example: Any, skipped: Counter[str]) -> None:
    """Count the labels of a record the import has no rows for, as the other formats count the shapes they do not
    import (CVAT's points, COCO's crowd regions): points, regions under another prefix than ``PREDICTED``,
    segmentation images, each under its reason in ``skipped`` (the report's "not imported"). Refuse a record whose
    labels cannot be read as MediaSequence writes them: some of a region's four ``region/bbox/*`` keys, region labels
    or masks of no box, label indices without the strings labels are read by."""
    lists = example.feature_lists.feature_list
    context = set(example.context.feature)
    counted: dict[str, int] = {}  # reason -> values of its keys, the most of any one key (a point's x and y: one)
    for key in sorted(lists):
        at = key.find("region/")
        if at < 0 or (at > 0 and key[at - 1] != "/"):
            if key in _UNREAD:
                reason = f"{key} ({_UNREAD[key]})"
                counted[reason] = max(counted.get(reason, 0), sum(1 for f in lists[key].feature if _values_of(f)))
            continue
        prefix, base = key[:at], key[at:]
        if base.startswith(_POINT_KEYS):
            reason = f"{prefix}region/point (points: vidlabel has no point annotations)"
        elif prefix not in ("", PREDICTED) and base.startswith(("region/bbox/", "region/label/", "region/track/")):
            reason = (
                f"{prefix}region/* (regions under the prefix {prefix[:-1]!r}: vidlabel reads region/* and "
                f"{PREDICTED}region/*)"
            )
        else:
            continue
        counted[reason] = max(counted.get(reason, 0), sum(_values_of(f) for f in lists[key].feature))
    for reason, n in counted.items():
        if n:
            skipped[reason] += n
    problems: list[str] = []
    for prefix in ("", PREDICTED):
        boxes = [prefix + k for k in _BOX_KEYS if prefix + k in lists]
        if boxes and len(boxes) < len(_BOX_KEYS):
            missing = [prefix + k for k in _BOX_KEYS if prefix + k not in lists]
            problems.append(f"{', '.join(boxes)} without {', '.join(missing)}")
        elif not boxes:
            labels = [prefix + k for k in ("region/label/string", "region/label/index") if prefix + k in lists]
            if labels:
                problems.append(f"{', '.join(labels)} without {prefix}region/bbox/* (labels of no region)")
    if "INSTANCE_SEGMENTATION/image/multi_encoded" in lists and "region/bbox/ymin" not in lists:
        problems.append("INSTANCE_SEGMENTATION/image/multi_encoded without region/bbox/* and region/label/string")
    for base, keys in (("clip/label", context), ("segment/label", context), ("image/label", set(lists))):
        if f"{base}/index" in keys and f"{base}/string" not in keys:
            problems.append(f"{base}/index without {base}/string (labels are imported by name)")
    if problems:
        raise fail(
            file, where, f"holds labels the import cannot read, so nothing is imported: {'; '.join(problems)}; "
            "remove those keys from the records to import the rest",
        )  # fmt: skip


def _values_of(feature: Any) -> int:
    """How many values one frame's feature holds."""
    kind = feature.WhichOneof("kind")
    return len(getattr(feature, kind).value) if kind else 0


def _import_regions(
    file: Path, where: str, example: Any, video: _Video, found: dict[tuple[Any, ...], list[tuple[dict[str, Any], str]]],
    prefix: str = "", label_map: dict[int, str] | None = None,
) -> None:  # fmt: skip
    """The regions of one record into ``found`` (by what they hold): ``region/*``, or with ``prefix``
    ``PREDICTED`` MediaSequence's predicted boxes (``PREDICTED/region/*``, ``add_predicted_bbox``), which are
    ``model`` rows."""
    lists = {k: _lists(example, k, "" if k.startswith("vidlabel/") else prefix) for k in _REGION_LISTS}
    if prefix:  # our own keys describe the unprefixed regions only
        lists["vidlabel/region/kind"] = lists["vidlabel/region/origin"] = None
    ymin = lists["region/bbox/ymin"]
    if ymin is None:
        return
    time_key = prefix + "region/timestamp" if _lists(example, "region/timestamp", prefix) else "image/timestamp"
    times = _lists(example, "region/timestamp", prefix) or _lists(example, "image/timestamp")
    if times is None:
        raise fail(file, where, f"has {prefix}region/bbox/* but neither {prefix}region/timestamp nor image/timestamp")
    n_frames = len(ymin)
    masks = None if prefix else _lists(example, _MASKS_KEY)
    named = [(prefix + k if not k.startswith("vidlabel/") else k, v) for k, v in lists.items()]
    _check_frame_counts(file, where, prefix, [*named, (time_key, times), (_MASKS_KEY, masks)], n_frames)
    frames = video.frames(file, f"{where} {time_key}", [t[0] for t in times])
    width, height = video.meta.width, video.meta.height
    for j in range(n_frames):
        at = f"{where} frame {j}"
        n = len(ymin[j])
        for key, values in named:
            if values is not None and len(values[j]) != n:
                raise fail(file, at, f"{key} holds {len(values[j])} values; the frame has {n} regions")
        if n == 0:
            continue
        strings = lists["region/label/string"]
        if strings is None:
            strings = _named_indices(file, at, prefix, lists["region/label/index"], label_map)
        frame_masks = masks[j] if masks is not None else []
        is_mask = _mask_flags(file, at, _at(lists["vidlabel/region/kind"], j), frame_masks, n)
        xmin, ymax, xmax = (lists[f"region/bbox/{c}"] for c in ("xmin", "ymax", "xmax"))
        assert xmin is not None and ymax is not None and xmax is not None
        tracks = lists["region/track/string"]
        if tracks is None:  # MediaSequence's other track key: integer ids
            tracks = lists["region/track/index"]
        m = 0
        for k in range(n):
            row: dict[str, Any] = {"label": strings[j][k].decode("utf-8", "replace"), "start_frame": int(frames[j])}
            png = None
            if is_mask[k]:
                png = bytes(frame_masks[m])
                row["kind"], row["mask"] = "mask", _decode_mask(file, at, png, width, height)
                m += 1
            else:
                box = (xmin[j][k] * width, ymin[j][k] * height, xmax[j][k] * width, ymax[j][k] * height)
                if not all(math.isfinite(v) for v in box):
                    raise fail(file, at, f"region {k} has a box that is not finite: {box}")
                row["kind"], row["box"] = "box", box
            track = video.track(tracks[j][k], prefix) if tracks is not None else None
            if track is not None:
                row["track_id"] = track
            row.update(_origin_conf(_origins(lists, j, n, prefix), _at(lists["region/label/confidence"], j), k))
            same = (row["kind"], row["label"], row["start_frame"], row.get("box"), png, row.get("track_id"),
                    row.get("origin"), row.get("confidence"))  # fmt: skip
            found.setdefault(same, []).append((row, f"{file.name} {at} {prefix}region {k}"))


#: MediaSequence's instance-segmentation PNGs of a frame, one per mask region.
_MASKS_KEY = "INSTANCE_SEGMENTATION/image/multi_encoded"


def _check_frame_counts(
    file: Path, where: str, prefix: str, keyed: list[tuple[str, list[Any] | None]], n_frames: int
) -> None:
    """Every per-frame list of a record holds one entry a frame, as ``region/bbox/ymin`` does."""
    for key, values in keyed:
        if values is not None and len(values) != n_frames:
            raise fail(
                file, where, f"{key} has {len(values)} entries; {prefix}region/bbox/ymin has {n_frames} (one a frame)"
            )


def _mask_flags(file: Path, at: str, kinds: list[Any] | None, frame_masks: list[Any], n: int) -> list[bool]:
    """Which of a frame's ``n`` regions are masks: by ``vidlabel/region/kind``, else all or none by the PNG count."""
    if kinds is not None:
        is_mask = [k == b"mask" for k in kinds]
    elif len(frame_masks) in (0, n):
        is_mask = [bool(frame_masks)] * n
    else:
        raise fail(file, at, f"{len(frame_masks)} instance masks for {n} regions and no vidlabel/region/kind")
    if sum(is_mask) != len(frame_masks):
        raise fail(file, at, f"{sum(is_mask)} mask regions but {len(frame_masks)} instance-segmentation PNGs")
    return is_mask


def _origins(lists: dict[str, Any], j: int, n: int, prefix: str) -> list[Any] | None:
    """The origins of frame ``j``'s ``n`` regions: predicted ones are a model's, else ours or MediaSequence's
    ``region/is_generated``."""
    origins = [b"model"] * n if prefix else _at(lists["vidlabel/region/origin"], j)
    generated = lists["region/is_generated"]
    if origins is None and generated is not None:  # MediaSequence's 1: generated, 0: annotated by hand
        origins = [b"model" if g else b"human" for g in generated[j]]
    return origins


def _named_indices(
    file: Path, at: str, prefix: str, indices: list[list[Any]] | None, label_map: dict[int, str] | None
) -> list[list[bytes]]:
    """Label names of regions that give ``region/label/index`` only, through ``label_map`` (``--label-map``)."""
    if indices is None or label_map is None:
        raise fail(
            file,
            at,
            f"regions without {prefix}region/label/string (labels are imported by name; regions with "
            f"{prefix}region/label/index take names from label_map, --label-map 0=person,...)",
        )
    out = []
    for frame in indices:
        unknown = sorted({int(i) for i in frame} - set(label_map))
        if unknown:
            raise fail(
                file,
                at,
                f"{prefix}region/label/index {unknown[0]} is not in the label map (known: "
                f"{', '.join(f'{k}={v}' for k, v in sorted(label_map.items()))})",
            )
        out.append([label_map[int(i)].encode() for i in frame])
    return out


def _at(values: list[list[Any]] | None, j: int) -> list[Any] | None:
    return None if values is None else values[j]


#: How many times the registered video's width (and height) a mask PNG may declare: masks of a record whose
#: video was registered at a lower resolution are scaled down; a larger one is a hostile size, refused before
#: it is decoded (a 16000x16000 16-bit PNG of 2 MB took 2.8 GB to decode).
MAX_MASK_SCALE = 4


def _png_size(png: bytes) -> tuple[int, int] | None:
    """``(width, height)`` a PNG's IHDR chunk declares, read from its first 24 bytes; None if it starts otherwise."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return None
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _decode_mask(file: Path, where: str, png: bytes, width: int, height: int) -> np.ndarray:
    """A PNG instance mask as a 0/1 mask of the registered video's size (nearest-neighbour when it differs); a PNG
    declaring more than :data:`MAX_MASK_SCALE` times the video's width or height is refused before decoding."""
    import av

    declared = _png_size(png)
    if declared is not None and (declared[0] > MAX_MASK_SCALE * width or declared[1] > MAX_MASK_SCALE * height):
        raise fail(
            file,
            where,
            f"an INSTANCE_SEGMENTATION PNG declares {declared[0]}x{declared[1]} pixels, more than {MAX_MASK_SCALE} "
            f"times the video's {width}x{height}: refused before decoding",
        )
    try:
        ctx = av.CodecContext.create("png", "r")
        frames = ctx.decode(av.Packet(bytes(png)))  # type: ignore[attr-defined]
        image = frames[0].to_ndarray(format="gray")  # type: ignore[union-attr]
    except (av.error.FFmpegError, IndexError, ValueError) as err:
        raise fail(file, where, f"an INSTANCE_SEGMENTATION PNG does not decode ({err})") from err
    return resize_mask((image > 0).astype(np.uint8), (width, height))


def _image_labels(file: Path, where: str, example: Any, video: _Video, found: Counter[tuple[Any, ...]]) -> None:
    """``image/label/string`` (MediaSequence's labels of one image, ``add_image_label_string``): each a marker
    of that image's frame, found by its ``image/timestamp``; a finite ``image/label/confidence`` makes it a
    ``model`` marker."""
    labels = _lists(example, "image/label/string")
    if labels is None:
        return
    times, conf = _lists(example, "image/timestamp"), _lists(example, "image/label/confidence")
    if times is None:
        raise fail(file, where, "has image/label/string but no image/timestamp (the frame of each image's labels)")
    for key, values in (("image/timestamp", times), ("image/label/confidence", conf)):
        if values is not None and len(values) != len(labels):
            raise fail(
                file, where, f"{key} has {len(values)} entries; image/label/string has {len(labels)} (one an image)"
            )
    frames = video.frames(file, f"{where} image/timestamp", [t[0] for t in times])
    for j, names in enumerate(labels):
        if conf is not None and len(conf[j]) != len(names):
            raise fail(
                file, f"{where} frame {j}", f"image/label/confidence holds {len(conf[j])} values; "
                f"image/label/string {len(names)}",
            )  # fmt: skip
        for k, name in enumerate(names):
            extra = tuple(sorted(_origin_conf(None, conf[j] if conf is not None else None, k).items()))
            found[(name.decode("utf-8", "replace"), int(frames[j]), int(frames[j]), extra)] += 1


def _one_per_label(file: Path, where: str, example: Any, group: str, n: int) -> None:
    """``{group}/label/index``, ``/confidence`` and our origins hold one value per ``{group}/label/string``."""
    origin = "vidlabel/clip/label/origin" if group == "clip" else "vidlabel/segment/origin"
    for key in (f"{group}/label/index", f"{group}/label/confidence", origin):
        values = _context(example, key)
        if values is not None and len(values) != n:
            raise fail(file, where, f"{key} holds {len(values)} values; {group}/label/string holds {n} (one a label)")


def _import_markers(file: Path, where: str, example: Any, video: _Video) -> None:
    """Segments, clip labels and image labels of one record into the video's markers (a repeat in another record
    counts once)."""
    found: Counter[tuple[Any, ...]] = Counter()
    _image_labels(file, where, example, video, found)
    seg_start, seg_end = _context(example, "segment/start/timestamp"), _context(example, "segment/end/timestamp")
    seg_labels = _context(example, "segment/label/string")
    if seg_start is not None or seg_labels is not None:
        if (
            seg_start is None
            or seg_end is None
            or seg_labels is None
            or not len(seg_start) == len(seg_end) == len(seg_labels)
        ):
            raise fail(
                file, where, "segment/start/timestamp, segment/end/timestamp and segment/label/string must be "
                "present together with one value per segment",
            )  # fmt: skip
        _one_per_label(file, where, example, "segment", len(seg_labels))
        origins, conf = _context(example, "vidlabel/segment/origin"), _context(example, "segment/label/confidence")
        for k, (a, b) in enumerate(zip(seg_start, seg_end)):
            first = int(np.searchsorted(video.ts, a, "left"))
            last = int(np.searchsorted(video.ts, b, "right")) - 1
            if first > last or first >= video.ts.size or last < 0:
                raise fail(
                    file, where, f"segment {k} ({a}..{b} us) holds no frame of video {video.meta.video_id!r} "
                    f"(frames at {int(video.ts[0])}..{int(video.ts[-1])} us)",
                )  # fmt: skip
            extra = tuple(sorted(_origin_conf(origins, conf, k).items()))
            found[(seg_labels[k].decode("utf-8", "replace"), first, last, extra)] += 1
    clip_labels = _context(example, "clip/label/string")
    if clip_labels:
        starts = _context(example, "vidlabel/clip/label/start/timestamp")
        ends = _context(example, "vidlabel/clip/label/end/timestamp")
        if starts is None or ends is None:
            image_ts = _lists(example, "image/timestamp") or _lists(example, "region/timestamp") or []
            a = _one(example, "clip/start/timestamp")
            b = _one(example, "clip/end/timestamp")
            a = a if a is not None else (image_ts[0][0] if image_ts else None)
            b = b if b is not None else (image_ts[-1][0] if image_ts else None)
            if a is None or b is None:
                raise fail(file, where, "clip/label/string without clip/start/timestamp, clip/end/timestamp or images")
            starts, ends = [a] * len(clip_labels), [b] * len(clip_labels)
        if not len(starts) == len(ends) == len(clip_labels):
            raise fail(file, where, "vidlabel/clip/label/{start,end}/timestamp must hold one value per clip label")
        _one_per_label(file, where, example, "clip", len(clip_labels))
        origins, conf = _context(example, "vidlabel/clip/label/origin"), _context(example, "clip/label/confidence")
        span = video.frames(file, f"{where} clip label", [*starts, *ends])
        n = len(clip_labels)
        for k in range(n):
            extra = tuple(sorted(_origin_conf(origins, conf, k).items()))
            found[(clip_labels[k].decode("utf-8", "replace"), int(span[k]), int(span[n + k]), extra)] += 1
    for key, count in found.items():
        video.repeats["marker"] += min(count, video.markers[key])
        if count > video.markers[key]:
            video.markers[key] = count
            video.marker_where.setdefault(key, f"{file.name} {where}")


# -- labels-only export ----------------------------------------------------------------------------------------


def export_mediasequence_labels(release: Release, out: Path, videos: Sequence[str]) -> ExportLabelsReport:
    """Labels-only MediaSequence records of a release (no images) in ``out/part-*.tfrecord``, as the export's."""
    from vidlabel.errors import FormatError
    from vidlabel.export._mediasequence import export_mediasequence
    from vidlabel.export._options import check_options
    from vidlabel.export._plan import plan_export, select_frames
    from vidlabel.export._report import ExportReport
    from vidlabel.store._fs import StoreLock

    unknown = [v for v in videos if v not in release.videos]
    if unknown:
        raise FormatError(
            f"video(s) {', '.join(unknown)} not in release {release.release_id}; known: {', '.join(sorted(release.videos))}"
        )
    opts = check_options(
        out, release, format="mediasequence", codec=None, view_id=None, frames="annotated", kinds=("box", "mask"),
        stride=1, output_size=None, chunk_frames=None, workers=1, progress=False, roots=(), frames_only=False,
    )  # fmt: skip
    plan = plan_export(select_frames(release, opts, release.info.get("dataset")), opts)
    if videos:
        plan.videos = [v for v in plan.videos if v.video_id in set(videos)]
    report = ExportReport(out=str(out), format="mediasequence", codec="", release_id=release.release_id)
    with StoreLock(out):
        export_mediasequence(plan, opts, report, images=False)
    result = ExportLabelsReport(format="mediasequence", release_id=release.release_id)
    result.paths = sorted(str(p) for p in Path(out).glob("part-*.tfrecord"))
    result.counts["records"] = report.records
    result.counts["frames"] = report.samples
    if report.markers_not_written:
        why = "marker of a video with no box or mask (MediaSequence records hold a video's annotated frames)"
        result.not_written[why] += sum(report.markers_not_written.values())
    for kind in ("box", "mask"):  # on frames without a trustworthy picture: never stored, so in no record
        if plan.not_stored[kind]:
            result.not_written[f"{kind} on a frame without a trustworthy picture (no record holds it)"] += int(
                plan.not_stored[kind]
            )
    t = release.table
    chosen = [t.video_ids.index(v) for v in (videos or release.videos) if v in t.video_ids]
    offsets = t.attr_offsets
    if t.has_attributes and offsets is not None:
        with_attrs = int(((np.diff(offsets) > 0) & np.isin(t.video, chosen)).sum())
        if with_attrs:
            result.not_written["attributes of a row (MediaSequence holds none; the rows are written)"] += with_attrs
    return result
