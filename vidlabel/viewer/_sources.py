"""What the viewer shows: the videos, frames, rows and markers of a dataset's release or of a frame store.

Both sources answer the same questions with JSON-ready values, so the server
never asks which one it has. Frame numbers are 0-based displayed frames; boxes
are xyxy pixels in the frame served; a marker's ``end_frame`` is inclusive.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import (
    DatasetNotFoundError,
    FrameOutOfRangeError,
    OptionError,
    ReleaseNotFoundError,
    UnknownVideoError,
)
from vidlabel.geometry import rle_counts
from vidlabel.spec import KINDS, ORIGINS, STATUSES

#: How many decoded frames a source keeps (720p RGB: 2.7 MB each).
FRAME_CACHE = 32
#: A video frame at most this far past the last one read is reached by decoding on, keeping those between.
CATCH_UP = 8


def _known(video_id: str, known: Any, where: str) -> UnknownVideoError:
    names = sorted(known)
    shown = ", ".join(repr(v) for v in names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    return UnknownVideoError(f"unknown video {video_id!r} in {where}; known: {shown or '(none)'}")


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _mask(counts: bytes, height: int, width: int) -> dict[str, Any] | None:
    """A COCO compressed RLE as uncompressed run lengths (zeros first, column-major), which the page paints."""
    if not counts:
        return None
    return {"size": [height, width], "counts": rle_counts(counts).tolist()}


class _Frames:
    """A small LRU of decoded frames behind one lock (readers and stores are not shared between threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()

    def get(self, key: tuple[str, int], read: Any) -> np.ndarray:
        with self.lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            image = read()
            self.put(key, image)
            return image

    def put(self, key: tuple[str, int], image: np.ndarray) -> None:
        """Keep ``image`` (called with the lock held, from inside a read)."""
        self._cache[key] = image
        self._cache.move_to_end(key)
        while len(self._cache) > FRAME_CACHE:
            self._cache.popitem(last=False)


class DatasetSource:
    """The videos of a dataset with the rows of one release (or the live rows, every status), frames decoded.

    Parameters
    ----------
    path : path
        The dataset folder.
    release : str
        A release id, ``"latest"`` or ``"live"`` (the rows as they are now, rejected ones included, so the
        review-status filter has something to hide).

    Raises
    ------
    DatasetNotFoundError, ReleaseNotFoundError, ReleaseCorruptError
        From :class:`~vidlabel.Dataset`.
    """

    kind = "dataset"

    def __init__(self, path: Path, release: str) -> None:
        from vidlabel.dataset._dataset import Dataset

        self.path = Path(path).absolute()
        ds = Dataset.open(self.path)
        try:
            self.release = ds.snapshot(statuses=STATUSES) if release == "live" else ds.release(release)
        except ReleaseNotFoundError as err:
            raise ReleaseNotFoundError(f"{err}; or view the live rows with --release live", path=err.path) from err
        finally:
            ds.close()
        self.release_id = self.release.release_id
        self.labels = list(self.release.labels)
        table = self.release.table
        self._metas = self.release.videos
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._markers: dict[str, np.ndarray] = {}
        marker = KINDS.index("marker")
        for code, video_id in enumerate(table.video_ids):
            mine = np.flatnonzero(table.video == code)
            regions = mine[table.kind[mine] != marker]
            regions = regions[np.argsort(table.start_frame[regions], kind="stable")]
            self._rows[video_id] = (regions, table.start_frame[regions])
            self._markers[video_id] = mine[table.kind[mine] == marker]
        self._readers: dict[str, Any] = {}
        self._last: dict[str, int] = {}
        self._frames = _Frames()

    @property
    def title(self) -> str:
        """What the page's heading names."""
        release = self.release_id or "live rows"
        return f"dataset {self.path.name} ({release})"

    def video_ids(self) -> list[str]:
        return sorted(self._metas)

    def _meta(self, video_id: str) -> Any:
        if video_id not in self._metas:
            raise _known(video_id, self._metas, f"dataset {self.path}")
        return self._metas[video_id]

    def video(self, video_id: str) -> dict[str, Any]:
        """The page's record of one video: size, rate, frames, annotated frames and row counts by kind."""
        meta = self._meta(video_id)
        table = self.release.table
        regions, starts = self._rows.get(video_id, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        markers = self._markers.get(video_id, np.zeros(0, np.int64))
        per_kind = np.bincount(table.kind[np.concatenate([regions, markers])], minlength=len(KINDS))
        counts = {k: int(per_kind[i]) for i, k in enumerate(KINDS)}
        return {
            "video_id": video_id,
            "width": int(meta.width),
            "height": int(meta.height),
            "fps": f"{meta.fps['num']}/{meta.fps['den']}",
            "frame_count": int(meta.frame_count),
            "frames": None,
            "annotated": sorted({int(n) for n in starts}),
            "counts": counts,
        }

    def check_frame(self, video_id: str, frame: int) -> None:
        """Raise FrameOutOfRangeError naming the range unless ``frame`` is one of the video's frames."""
        count = int(self._meta(video_id).frame_count)
        if not 0 <= frame < count:
            raise FrameOutOfRangeError(f"frame {frame} out of range [0, {count}) in video {video_id!r}")

    def frame(self, video_id: str, frame: int) -> np.ndarray:
        """(H, W, 3) uint8 RGB: exactly displayed frame ``frame`` of the video's file (FrameReader)."""
        self.check_frame(video_id, frame)

        def read() -> np.ndarray:
            if video_id not in self._readers:
                from vidlabel.video._reader import FrameReader

                self._readers[video_id] = FrameReader.for_video(self._meta(video_id))
            last = self._last.get(video_id, -1)
            if last < frame <= last + CATCH_UP:
                # A page asks for the frames ahead out of order: the ones skipped on the way are decoded anyway.
                wanted = list(range(last + 1, frame + 1))
            elif frame < last:
                # Stepping back seeks to a keyframe and decodes up to the frame: keep the ones just before it too.
                wanted = list(range(max(0, frame - CATCH_UP), frame + 1))
            else:
                wanted = [frame]
            images = self._readers[video_id].read_many(wanted)
            self._last[video_id] = frame
            for n, image in zip(wanted[:-1], images[:-1]):
                self._frames.put((video_id, n), np.asarray(image))
            return np.asarray(images[-1])

        return self._frames.get((video_id, frame), read)

    def rows(self, video_id: str, frame: int) -> list[dict[str, Any]]:
        """The boxes and masks on one frame, by annotation id."""
        self.check_frame(video_id, frame)
        regions, starts = self._rows.get(video_id, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        lo, hi = np.searchsorted(starts, [frame, frame + 1])
        t = self.release.table
        out = []
        for i in sorted(regions[lo:hi], key=lambda i: int(t.annotation_id[i])):
            box = [float(v) for v in t.box[i]]
            counts = bytes(t.mask_counts[t.mask_offsets[i] : t.mask_offsets[i + 1]])
            h, w = (int(v) for v in t.mask_size[i])
            row = {
                "annotation_id": int(t.annotation_id[i]),
                "kind": KINDS[int(t.kind[i])],
                "label": t.labels[int(t.label[i])],
                "track_id": int(t.track_id[i]) if t.track_id[i] >= 0 else None,
                "origin": ORIGINS[int(t.origin[i])],
                "confidence": _finite(float(t.confidence[i])),
                "status": STATUSES[int(t.status[i])],
                "box": box if all(math.isfinite(v) for v in box) else None,
                "mask": _mask(counts, h, w) if h and w else None,
                "view": t.view_ids[int(t.view[i])] if t.view[i] >= 0 else None,
            }
            attributes = t.attributes(i)
            if attributes:
                row["attributes"] = attributes
            out.append(row)
        return out

    def segments(self, video_id: str) -> list[dict[str, Any]]:
        """The video's time markers (``end_frame`` inclusive), by start frame."""
        self._meta(video_id)
        t = self.release.table
        out = [
            {
                "annotation_id": int(t.annotation_id[i]),
                "label": t.labels[int(t.label[i])],
                "start_frame": int(t.start_frame[i]),
                "end_frame": int(t.end_frame[i]),
                "origin": ORIGINS[int(t.origin[i])],
                "confidence": _finite(float(t.confidence[i])),
                "status": STATUSES[int(t.status[i])],
            }
            for i in self._markers.get(video_id, [])
        ]
        return sorted(out, key=lambda s: (s["start_frame"], s["annotation_id"]))

    def close(self) -> None:
        """Close the open readers."""
        with self._frames.lock:
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()


class StoreSource:
    """The videos of a frame store (local folder or URL): stored frames, regions and segments as exported.

    A store keeps no review status (its rows are those of the release exported), so rows have ``status``
    None; its frames are those exported (every frame, or the annotated ones).

    Parameters
    ----------
    path : path or str
        A store folder, a folder of stores, or a Zarr store's URL.
    storage_options : mapping, optional
        fsspec options for a URL.

    Raises
    ------
    StoreError, StoreIncompleteError, SchemaVersionError
        From :func:`~vidlabel.store.open_store`.
    """

    kind = "store"

    def __init__(self, path: str | os.PathLike[str], storage_options: Any = None) -> None:
        from vidlabel.store import open_store

        self.path = path
        self.store = open_store(path, storage_options=storage_options)
        self.release_id = self.store.release_id
        self.labels = list(self.store.class_names)
        self._frames = _Frames()

    @property
    def title(self) -> str:
        """What the page's heading names."""
        name = str(self.path).rstrip("/").rsplit("/", 1)[-1]
        return f"store {name} ({self.release_id or 'frames only'})"

    def video_ids(self) -> list[str]:
        return list(self.store.video_ids)

    def _data(self, video_id: str) -> Any:
        if video_id not in self.store.video_ids:
            raise _known(video_id, self.store.video_ids, f"store {self.path}")
        with self._frames.lock:
            return self.store.video_data(video_id)

    def video(self, video_id: str) -> dict[str, Any]:
        """The page's record of one video: size, rate, stored frames, annotated frames and region counts."""
        data = self._data(video_id)
        numbers = data.frame_number
        last = int(numbers[-1]) + 1 if numbers.size else 0
        count = max(last, int(data.attrs.get("frame_count") or 0))
        fps = data.attrs.get("fps") or {}
        regions = data.regions
        masks = 0
        if regions:
            masks = int(np.count_nonzero(np.diff(regions["mask_offsets"])))
        boxes = int(regions["annotation_id"].size) - masks if regions else 0
        return {
            "video_id": video_id,
            "width": data.size[0],
            "height": data.size[1],
            "fps": f"{fps.get('num')}/{fps.get('den')}" if fps else None,
            "frame_count": count,
            "frames": None if numbers.size == count else [int(n) for n in numbers],
            "annotated": [int(n) for n in numbers[data.is_annotated]],
            "counts": {"box": boxes, "mask": masks, "marker": len(data.segments.get("start_frame", ()))},
        }

    def _row(self, video_id: str, frame: int) -> int:
        data = self._data(video_id)
        row = data.row_of(frame)
        if row is None:
            numbers = data.frame_number
            held = f"frames {int(numbers[0])}..{int(numbers[-1])}" if numbers.size else "no frames"
            raise FrameOutOfRangeError(
                f"frame {frame} of video {video_id!r} is not in the store {self.path} "
                f"({numbers.size} stored frames, {held}; export with frames='all' to hold every frame)"
            )
        return row

    def check_frame(self, video_id: str, frame: int) -> None:
        """Raise FrameOutOfRangeError unless the store holds ``frame`` of the video."""
        self._row(video_id, frame)

    def frame(self, video_id: str, frame: int) -> np.ndarray:
        """(H, W, 3) uint8 RGB: the stored picture of frame ``frame`` (FrameStore.read_row)."""
        row = self._row(video_id, frame)
        return self._frames.get((video_id, frame), lambda: np.asarray(self.store.read_row(video_id, row)))

    def rows(self, video_id: str, frame: int) -> list[dict[str, Any]]:
        """The stored regions of one frame, by annotation id."""
        row = self._row(video_id, frame)
        data = self._data(video_id)
        r = data.regions
        if not r:
            return []
        w, h = data.size
        lo, hi = int(r["row_offsets"][row]), int(r["row_offsets"][row + 1])
        out = []
        for i in range(lo, hi):
            counts = bytes(r["mask_counts"][r["mask_offsets"][i] : r["mask_offsets"][i + 1]])
            box = [float(v) for v in r["bbox_xyxy"][i]]
            track = int(r["track_id"][i])
            out.append({
                "annotation_id": int(r["annotation_id"][i]),
                "kind": "mask" if counts else "box",
                "label": self.labels[int(r["label_index"][i])],
                "track_id": track if track >= 0 else None,
                "origin": ORIGINS[int(r["origin"][i])],
                "confidence": _finite(float(r["confidence"][i])),
                "status": None,
                "box": box if all(math.isfinite(v) for v in box) else None,
                "mask": _mask(counts, h, w),
                "view": data.attrs.get("view_id"),
            })  # fmt: skip
        return sorted(out, key=lambda row: row["annotation_id"])

    def segments(self, video_id: str) -> list[dict[str, Any]]:
        """The video's stored time markers (``end_frame`` inclusive), by start frame."""
        s = self._data(video_id).segments
        if not s:
            return []
        out = [
            {
                "annotation_id": int(s["annotation_id"][i]),
                "label": self.labels[int(s["label_index"][i])],
                "start_frame": int(s["start_frame"][i]),
                "end_frame": int(s["end_frame"][i]),
                "origin": None,
                "confidence": None,
                "status": None,
            }
            for i in range(s["start_frame"].size)
        ]
        return sorted(out, key=lambda seg: (seg["start_frame"], seg["annotation_id"]))

    def close(self) -> None:
        """Close the store."""
        with self._frames.lock:
            self.store.close()


def open_source(path: Any, *, release: str | None = None, storage_options: Any = None) -> Any:
    """A :class:`DatasetSource` or :class:`StoreSource` for ``path``, or a one-line error naming what it is not.

    Raises
    ------
    DatasetNotFoundError
        If ``path`` does not exist, or is neither a dataset nor a frame store.
    OptionError
        If ``release`` is given for a store, or ``path`` is not a path or URL.
    """
    from vidlabel.dataset._dataset import DB_NAME, Dataset
    from vidlabel.store._remote import is_url

    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise OptionError(f"path must be a dataset folder, a frame store or a store's URL, not {path!r}")
    if is_url(str(path)):
        if release is not None:
            raise OptionError(f"--release is for a dataset; the store at {path} holds one release")
        return StoreSource(str(path), storage_options)
    local = Path(path)
    if Dataset.is_dataset(local):
        return DatasetSource(local, release or "latest")
    if not local.exists():
        raise DatasetNotFoundError(f"{local} does not exist (expected a dataset folder or a frame store)")
    from vidlabel.store._framestore import find_stores, not_a_store_hint

    if not local.is_dir() or not find_stores(local):
        raise DatasetNotFoundError(
            f"{str(local)!r} is neither a vidlabel dataset (it has no {DB_NAME}) nor a frame store "
            f"(no store in it, nor directly inside it); give a dataset folder or a store{not_a_store_hint(local)}"
        )
    if release is not None:
        raise OptionError(f"--release is for a dataset; the store {local} holds one release")
    return StoreSource(local, storage_options)
