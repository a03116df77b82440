"""Names, dtypes and format version of the frame store layout, the same for HDF5 and Zarr.

The layout (every array and attribute, and how each backend lays it out on disk) is described once, in
``docs/concepts/store-layout.md``; :mod:`vidlabel.store._hdf5` and :mod:`vidlabel.store._zarr` hold the
backends. A store is always a folder ``OUT``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from vidlabel._words import plural
from vidlabel.errors import StoreCorruptError
from vidlabel.store._fs import STORE_CHANGED

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FORMAT_VERSION_PLAIN",
    "LABELS_KEY_ATTRS",
    "REGION_ATTRIBUTE_FIELDS",
    "REGION_FIELDS",
    "SEGMENT_FIELDS",
    "VIDEO_ARRAYS",
    "class_names_problem",
    "digest",
    "format_version_problem",
    "frames_key",
    "identity_problem",
    "index_rows",
    "labels_key",
    "pixel_key",
    "region_names",
    "root_videos_problem",
    "summary_problem",
    "summary_problems",
    "video_ids_problem",
    "video_problems",
]

#: Value of the root attribute ``format``.
FORMAT = "vidlabel-store"
#: Layout version; a reader refuses a newer one (SchemaVersionError). A store whose regions carry attributes
#: (:data:`REGION_ATTRIBUTE_FIELDS`) is written as version 2, any other as version 1, so that a vidlabel
#: that reads version 1 refuses the first by its version instead of taking the arrays it does not know for damage.
FORMAT_VERSION = 2
#: The version of a store whose regions carry no attributes.
FORMAT_VERSION_PLAIN = 1

#: Per-row arrays of a video group (besides ``frames``).
VIDEO_ARRAYS: dict[str, Any] = {
    "frame_number": np.int64,
    "timestamp_us": np.int64,
    "is_annotated": np.bool_,
}

#: Arrays under ``regions/``: name -> (dtype, trailing shape). ``row_offsets`` has T + 1 entries,
#: ``mask_offsets`` N + 1, ``mask_counts`` M bytes, the others one entry per region.
REGION_FIELDS: dict[str, tuple[Any, tuple[int, ...]]] = {
    "row_offsets": (np.int64, ()),
    "bbox_xyxy": (np.float32, (4,)),
    "label_index": (np.int64, ()),
    "track_id": (np.int64, ()),
    "annotation_id": (np.int64, ()),
    "confidence": (np.float32, ()),
    "origin": (np.uint8, ()),
    "mask_offsets": (np.int64, ()),
    "mask_counts": (np.uint8, ()),
}

#: Arrays under ``regions/`` of a video whose release rows carry attributes (its attribute
#: ``region_attributes`` is true): each region's attributes as canonical JSON, CSR like the release's
#: ``attr_offsets``/``attr_bytes``. ``attr_offsets`` has N + 1 entries; a region without attributes is empty.
REGION_ATTRIBUTE_FIELDS: dict[str, tuple[Any, tuple[int, ...]]] = {
    "attr_offsets": (np.int64, ()),
    "attr_bytes": (np.uint8, ()),
}


def region_names(attrs: dict[str, Any]) -> list[str]:
    """The names of the arrays under ``regions/`` of a video group with attributes ``attrs``."""
    names = list(REGION_FIELDS)
    if attrs.get("region_attributes") is True:
        names += list(REGION_ATTRIBUTE_FIELDS)
    return names


#: Arrays under ``segments/`` (time markers), one entry per marker. ``end_frame`` is inclusive;
#: ``start_index``/``end_index`` are MediaSequence's: the first stored row at or after the start and the
#: last stored row at or before the end (-1 when no stored row lies inside the marker).
SEGMENT_FIELDS: dict[str, Any] = {
    "start_frame": np.int64,
    "end_frame": np.int64,
    "start_index": np.int64,
    "end_index": np.int64,
    "start_timestamp_us": np.int64,
    "end_timestamp_us": np.int64,
    "label_index": np.int64,
    "annotation_id": np.int64,
}


def index_rows(raw: np.ndarray, store: str) -> np.ndarray:
    """A store's ``/index`` as read, checked to be what every backend writes: (N, 2) integers (video, row).

    Raises
    ------
    StoreCorruptError
        If it has another shape or holds other values (a hand-edited root: a reshape would read a third
        column as more samples), naming the store.
    """
    if raw.ndim != 2 or raw.shape[1] != 2 or raw.dtype.kind not in "iu":
        raise StoreCorruptError(
            f"/index of store {store!r} is {raw.dtype} of shape {raw.shape}, not (N, 2) integers (video, row): "
            f"{STORE_CHANGED}",
            path=store,
        )
    return raw.astype(np.int64, copy=False)


def class_names_problem(value: Any) -> str | None:
    """A phrase when a store root's ``class_names`` is not a list of names (strings), else None."""
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        return None
    return f"its class_names {_short(value)} are not a list of names"


def video_ids_problem(value: Any) -> str | None:
    """A phrase when a store root's ``video_ids`` is not a list of distinct video ids (strings), else None (a
    list of numbers was a raw TypeError from the file-name quoting, a string read as one video per character)."""
    if not isinstance(value, list):
        return f"its video_ids {_short(value)} are not a list of video ids"
    for video_id in value:
        if not isinstance(video_id, str):
            return f"its video_ids hold {_short(video_id)}, not a video id (a string)"
    if len(set(value)) != len(value):
        again = next(v for i, v in enumerate(value) if v in value[:i])
        return f"its video_ids list video {again!r} twice"
    return None


def format_version_problem(value: Any) -> str | None:
    """A phrase when a store root's ``format_version`` (missing: 0, a store older than the attribute) is not a
    whole number >= 0, else None (a bare ``int()`` of an edited value raised Python's own error)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"its format_version {_short(value)} is not a whole number >= 0"
    return None


#: The fields of a root ``videos`` entry that are counts (``vidlabel info`` adds up ``frames``).
_ROOT_VIDEO_COUNTS = ("frames", "width", "height")


def root_videos_problem(value: Any) -> str | None:
    """A phrase when a store root's ``videos`` (per video id, a summary of the video: ``frames``, ``width``,
    ``height``, ``content_hash``, ...) is not a mapping of video ids to mappings whose counts
    (:data:`_ROOT_VIDEO_COUNTS`) are whole numbers >= 0, else None. Names the first video and field found wrong."""
    if not isinstance(value, dict):
        return f"its videos attribute is {type(value).__name__} {_short(value)}, not a mapping of video ids"
    for video_id, entry in value.items():
        if not isinstance(entry, dict):
            return f"its videos entry of video {video_id!r} is {_short(entry)}, not a mapping of fields"
        for field in _ROOT_VIDEO_COUNTS:
            count = entry.get(field, 0)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                return f"its videos entry of video {video_id!r} has {field} {_short(count)}, not a whole number >= 0"
    return None


def summary_problems(summary: dict[str, Any], video_ids: Sequence[str]) -> list[str]:
    """Phrases for a store root's ``videos`` summary whose videos are not the store's ``video_ids`` (an entry
    missing, or one for a video the store does not hold); ``vidlabel info`` prints its counts."""
    problems = [f"its videos summary has no entry for video {v!r}" for v in video_ids if v not in summary]
    held = set(video_ids)
    problems += [
        f"its videos summary lists video {v!r}, which the store does not hold" for v in summary if v not in held
    ]
    return problems


def summary_problem(video_id: str, entry: dict[str, Any], own: dict[str, Any]) -> str | None:
    """A phrase when a store root's summary of a video (``entry``, its ``videos`` item) differs from what the
    video's own file says (``own``: ``frames``, ``width``, ``height``, ``content_hash``, ``labels_key``; a value None is not
    compared), else None. The export writes both from one plan: they differ only where one was changed."""
    for field, value in own.items():
        if value is not None and field in entry and entry[field] != value:
            return (
                f"its videos summary says video {video_id!r} has {field} {_short(entry[field])}, its file says "
                f"{_short(value)}"
            )
    return None


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (a message names an edited value, not a whole file of it)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _lengths(
    group: str, arrays: dict[str, np.ndarray], tails: dict[str, tuple[int, ...]]
) -> tuple[int | None, list[str]]:
    """The length most of ``arrays`` share (None when no length has a majority) and a phrase for each array
    that differs from it, or one listing every array's length when they disagree with no majority. ``group``
    names the arrays in the phrases ("per-row", "segment"); ``tails`` gives each array's trailing shape."""
    found = {name: (int(arr.shape[0]) if arr.ndim else None) for name, arr in arrays.items()}
    counts: dict[int | None, int] = {}
    for length in found.values():
        counts[length] = counts.get(length, 0) + 1
    length, votes = max(counts.items(), key=lambda kv: kv[1])
    if length is None or 2 * votes <= len(arrays):
        listed = ", ".join(f"{name} {tuple(arrays[name].shape)}" for name in arrays)
        return None, [f"the {group} arrays' lengths disagree ({listed})"]
    problems = []
    for name, arr in arrays.items():
        want = (length, *tails.get(name, ()))
        if found[name] is not None and found[name] != length:
            problems.append(
                f"{name} has shape {tuple(arr.shape)}: {found[name]} entries, the other {group} arrays {length}"
            )
        elif arr.shape != want:
            problems.append(f"{name} has shape {tuple(arr.shape)}, expected {want}")
    return length, problems


def _not_numbers(
    arrays: dict[str, np.ndarray], regions: dict[str, np.ndarray] | None, segments: dict[str, np.ndarray] | None
) -> list[str]:
    """A phrase for each array that holds no numbers (strings, read as h5py reads them: the checks of
    :func:`array_problems` and :func:`export_problems` failed on them with Python's own TypeError)."""
    every = {**arrays}
    every.update({f"regions/{k}": v for k, v in (regions or {}).items()})
    every.update({f"segments/{k}": v for k, v in (segments or {}).items()})
    return [f"{name} holds {a.dtype} values, not numbers" for name, a in every.items() if a.dtype.kind not in "biuf"]


def array_problems(
    arrays: dict[str, np.ndarray],
    regions: dict[str, np.ndarray] | None,
    segments: dict[str, np.ndarray] | None,
    *,
    n_classes: int,
) -> list[str]:
    """What is wrong with a stored video's small arrays, one phrase each (empty: they fit together).

    Checked: the per-row arrays have one length T, ``frame_number`` strictly increases,
    ``regions/row_offsets`` is a CSR offset array over the T rows and the N regions, the per-region arrays
    have one length N, ``mask_offsets`` covers ``mask_counts``, the segment arrays have one length, every
    ``label_index`` lies in [0, ``n_classes``), and each segment starts no later than it ends (frames, and
    stored rows where it has any, which lie in [0, T)). Where arrays that should have one length do not, the
    phrase names those that differ from the others' length (or lists them all when no length has a
    majority). ``vidlabel verify`` and a store's first read of a video's arrays
    (:meth:`FrameStore.video_data`) both refuse a video with any.

    Parameters
    ----------
    arrays : dict of str to ndarray
        The per-row arrays, :data:`VIDEO_ARRAYS`.
    regions, segments : dict of str to ndarray, or None
        The arrays under ``regions/`` (:data:`REGION_FIELDS`) and ``segments/`` (:data:`SEGMENT_FIELDS`),
        by their names there; None for a frames-only store.
    n_classes : int
        The size of the store's vocabulary (its root's ``class_names``).

    Returns
    -------
    list of str
    """
    odd = _not_numbers(arrays, regions, segments)
    if odd:
        return odd
    t, problems = _lengths("per-row", arrays, {})
    fn = arrays["frame_number"]
    if t is not None and fn.shape == (t,) and t > 1 and not np.all(np.diff(fn) > 0):
        problems.append("frame_number is not strictly increasing")
    if regions is not None:
        tails = {f"regions/{k}": tail for k, (_dtype, tail) in REGION_FIELDS.items()}
        per_region = {f"regions/{k}": v for k, v in regions.items() if k not in _NOT_PER_REGION}
        n, found = _lengths("per-region", per_region, tails)
        problems += found
        off = regions["row_offsets"]
        if t is not None and n is not None:
            if off.shape != (t + 1,) or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 0):
                problems.append(f"regions/row_offsets is not a CSR offset array over {t} rows and {n} regions")
        if n is not None:
            mo = regions["mask_offsets"]
            if mo.shape != (n + 1,) or (mo[0] != 0 or mo[-1] != regions["mask_counts"].shape[0]):
                problems.append("regions/mask_offsets does not cover regions/mask_counts")
            ao = regions.get("attr_offsets")
            if ao is not None and (
                ao.shape != (n + 1,)
                or ao[0] != 0
                or ao[-1] != regions["attr_bytes"].shape[0]
                or np.any(np.diff(ao) < 0)
            ):
                problems.append("regions/attr_offsets does not cover regions/attr_bytes")
        problems += _label_problems("regions/label_index", regions["label_index"], n_classes)
    if segments is not None:
        m, found = _lengths("segment", {f"segments/{k}": v for k, v in segments.items()}, {})
        problems += found
        problems += _label_problems("segments/label_index", segments["label_index"], n_classes)
        if m is not None and not found:
            problems += _segment_problems(segments, t)
    return problems


#: Arrays under ``regions/`` that do not have one entry per region.
_NOT_PER_REGION = ("row_offsets", "mask_offsets", "mask_counts", "attr_offsets", "attr_bytes")


def _label_problems(name: str, labels: np.ndarray, n_classes: int) -> list[str]:
    """A phrase when a ``label_index`` array holds a value outside the vocabulary, [0, ``n_classes``)."""
    bad = np.flatnonzero((labels < 0) | (labels >= n_classes))
    if not bad.size:
        return []
    i = int(bad[0])
    return [
        f"{name} has {plural(bad.size, 'value')} outside [0, {n_classes}) (the store has "
        f"{plural(n_classes, 'class name')}), the first {int(labels.flat[i])} at entry {i}"
    ]


def _segment_problems(segments: dict[str, np.ndarray], t: int | None) -> list[str]:
    """Each segment's start no later than its end, in frames and in stored rows (where it has any: both -1 when
    none, else in [0, T))."""
    problems: list[str] = []
    start, end = segments["start_frame"], segments["end_frame"]
    bad = np.flatnonzero(start > end)
    if bad.size:
        i = int(bad[0])
        problems.append(
            f"segments/start_frame is after segments/end_frame in {plural(bad.size, 'segment')}, the first "
            f"(entry {i}) frames {int(start[i])}..{int(end[i])}"
        )
    first, last = segments["start_index"], segments["end_index"]
    none = (first == -1) & (last == -1)
    inside = (first >= 0) & (first <= last) & (t is None or last < t)
    bad = np.flatnonzero(~(none | inside))
    if bad.size:
        i = int(bad[0])
        rows = "the stored rows" if t is None else f"[0, {t})"
        problems.append(
            f"segments/start_index..end_index is neither a range of rows in {rows} nor -1..-1 (none) in "
            f"{plural(bad.size, 'segment')}, the first (entry {i}) rows {int(first[i])}..{int(last[i])}"
        )
    return problems


@functools.cache
def _dtype_name(dtype: np.dtype[Any]) -> bytes:
    """``str(dtype)``, encoded: NumPy takes about 2 us to make it, a video's labels key needs 20."""
    return str(dtype).encode()


def digest(*parts: Any) -> str:
    """A short stable hex digest (SHA-256, 20 hex digits) of JSON-able values and NumPy arrays."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            h.update(_dtype_name(part.dtype))
            h.update(str(part.shape).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def pixel_key(
    *,
    content_hash: str | None,
    crop: tuple[int, int, int, int] | None,
    view_size: tuple[int, int] | None,
    output_size: tuple[int, int] | None,
    codec: str,
) -> str:
    """What the pixels of a stored frame depend on: the video's content, the view, the size and the codec.

    Never the labels: a new release of the same videos reuses stored frames.
    """
    return digest("pixels", content_hash, crop, view_size, output_size, codec)


def frames_key(pixels: str, chunk_frames: int, frame_numbers: np.ndarray) -> str:
    """Key of one stored ``frames`` array: its pixel key, chunking and which frames it holds."""
    return digest("frames", pixels, int(chunk_frames), np.asarray(frame_numbers, dtype=np.int64))


#: The attributes of a video group that its ``labels_key`` covers: all that an export's plan gives it
#: before the key itself (attributes added when it is published, ``complete`` and a Zarr group's
#: ``frames_unit``, are not covered).
LABELS_KEY_ATTRS = (
    "video_id", "content_hash", "source_uri", "fps", "frame_count", "source_width", "source_height", "rotation",
    "width", "height", "view_id", "crop", "view_output_size", "output_size", "codec", "chunk_frames",
    "frames_key", "pixel_key", "region_attributes",
)  # fmt: skip


def labels_key(attrs: dict[str, Any], arrays: dict[str, np.ndarray], class_names: Sequence[str] | None = None) -> str:
    """The key of a stored video's labels: its :data:`LABELS_KEY_ATTRS` attributes (those it has), the store's
    class names (what its ``label_index`` values name) and every one of its small arrays (``arrays`` by their
    names in the group, ``regions/...`` and ``segments/...``).

    An export records it as the attribute ``labels_key``; a store's first read of a video and ``vidlabel
    verify`` recompute it from what they read (:func:`export_problems`). Attributes are JSON in both backends,
    so those read back give the digest the plan's values gave. ``class_names`` None gives the key of stores
    of the earlier layout, whose key did not cover the class names (a store's root holds them: renaming them
    there relabelled every region without a word).
    """
    covered = {k: attrs[k] for k in LABELS_KEY_ATTRS if k in attrs}
    if class_names is None:
        return digest("labels", covered, *[arrays[k] for k in sorted(arrays)])
    return digest("labels", covered, {"class_names": list(class_names)}, *[arrays[k] for k in sorted(arrays)])


def export_problems(
    attrs: dict[str, Any],
    arrays: dict[str, np.ndarray],
    regions: dict[str, np.ndarray] | None,
    segments: dict[str, np.ndarray] | None,
    class_names: Sequence[str],
) -> list[str]:
    """How a stored video differs from what its export recorded, one phrase each (empty: no difference seen).

    Checked: its ``frame_number`` against its ``frames_key`` (:func:`frame_number_fits_key`), and its
    attributes and small arrays against its ``labels_key`` (:func:`labels_key`): a box moved, offsets shifted or
    a label changed in place keeps every invariant :func:`array_problems` checks and is found here, and so are
    the store's class names renamed or reordered. Every export gives each video a ``labels_key``, so a video
    without one was changed too (deleting the key would otherwise turn the check off). A key made the way of
    stores of the earlier layout (without the class names) is accepted too. ``vidlabel verify`` and a
    store's first read of a video's arrays (:meth:`FrameStore.video_data`) both refuse a video with any.

    Parameters
    ----------
    attrs : dict
        The video group's attributes, as read.
    arrays, regions, segments : dict of str to ndarray
        As for :func:`array_problems` (``regions`` and ``segments`` None or empty for a frames-only store).
    class_names : sequence of str
        The store's class names (its root's ``class_names``).

    Returns
    -------
    list of str
    """
    want = attrs.get("labels_key")
    if want is not None:
        stored = {**arrays, **{f"regions/{k}": v for k, v in (regions or {}).items()}}
        stored.update({f"segments/{k}": v for k, v in (segments or {}).items()})
        if want == labels_key(attrs, stored, class_names) or want == labels_key(attrs, stored):
            # as exported (the second key only for stores of the earlier layout): frame_number too
            return []
    problems = []
    if not frame_number_fits_key(attrs, arrays["frame_number"]):
        problems.append("frame_number differs from the frame numbers its frames key was made from")
    if want is None:
        problems.append("it has no labels_key attribute, which every export gives a video")
    else:
        problems.append("its arrays, attributes or the store's class names differ from those exported (labels_key)")
    return problems


def video_problems(
    video_id: str,
    attrs: dict[str, Any],
    arrays: dict[str, np.ndarray],
    regions: dict[str, np.ndarray] | None,
    segments: dict[str, np.ndarray] | None,
    class_names: Sequence[str],
) -> list[str]:
    """Every problem of a stored video's small arrays and attributes, one phrase each (empty: none): another
    video's file in its place (:func:`identity_problem`), then what :func:`array_problems` and
    :func:`export_problems` find, in that order. The one check that ``vidlabel verify`` and a store's first read
    of a video (:meth:`FrameStore.video_data`) both make.

    Parameters
    ----------
    video_id : str
        The video the store's root says this file is.
    attrs, arrays, regions, segments, class_names
        As for :func:`export_problems` (``regions`` and ``segments`` None for a frames-only store).

    Returns
    -------
    list of str
    """
    identity = identity_problem(video_id, attrs)
    odd = _not_numbers(arrays, regions, segments)
    if odd:
        return ([identity] if identity else []) + odd
    return ([identity] if identity else []) + (
        array_problems(arrays, regions, segments, n_classes=len(class_names))
        + export_problems(attrs, arrays, regions, segments, class_names)
    )


def identity_problem(video_id: str, attrs: dict[str, Any]) -> str | None:
    """A phrase when a stored video's file (its attributes ``attrs``) is another video's, else None.

    Every export records the video's id in its file (attribute ``video_id``). Another video's file copied into
    this one's place is consistent in itself (its labels key, its frames key and its frames are that video's),
    so only its recorded id tells: without this check its frames and boxes were read as this video's.
    """
    recorded = attrs.get("video_id")
    if recorded is None or recorded == video_id:
        return None
    return f"its file is the file of video {recorded!r}, not of video {video_id!r}"


def frame_number_fits_key(attrs: dict[str, Any], frame_number: np.ndarray) -> bool:
    """Whether a stored video's ``frame_number`` is the one its ``frames_key`` was made from (with its
    ``pixel_key`` and ``chunk_frames``): the key names the frames unit, so an edited ``frame_number`` would
    label the unit's frames with other numbers. True where the attributes to check with are missing."""
    key, pixels, chunk_frames = attrs.get("frames_key"), attrs.get("pixel_key"), attrs.get("chunk_frames")
    if key is None or pixels is None or chunk_frames is None:
        return True
    return bool(frames_key(str(pixels), int(chunk_frames), frame_number) == key)
