"""Shared by the store, export and torch-store tests: a small annotated dataset with known truth, store comparison.

(No tests here; the module is named so that the store tests own it.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.media import decode_all, encode_clip, object_box
from vidlabel import Dataset, probe
from vidlabel.store import backend_for, find_stores
from vidlabel.store._layout import SEGMENT_FIELDS, VIDEO_ARRAYS, region_names

W, H = 64, 48
LABELS = ["obj", "person", "event"]
VIEW = ("left", (0, 8, 40, 48), (20, 20))  # view_id, crop, output_size
MASK_FRAME = 5
MARKER = (10, 20)  # inclusive
EMPTY_MARKER_FRAME = 15  # inside the marker, no box or mask


def disc_mask(cx: int = 40, cy: int = 30, r: int = 6) -> np.ndarray:
    """An (H, W) uint8 disc."""
    y, x = np.mgrid[0:H, 0:W]
    return ((x - cx) ** 2 + (y - cy) ** 2 <= r * r).astype(np.uint8)


def annotation_rows(n_frames: int, *, box_every: int = 2) -> list[dict[str, Any]]:
    """Boxes of the moving object on every ``box_every``-th frame (track 1); a model 'person' box on frames 6..9;
    a mask on frame 5; an 'event' marker on frames 10..20; two boxes made in view 'left' on frames 3 and 7."""
    rows: list[dict[str, Any]] = []
    for n in range(0, n_frames, box_every):
        rows.append({"kind": "box", "label": "obj", "start_frame": n, "box": object_box(n, W, H), "track_id": 1})
    rows = [r for r in rows if not 14 <= r["start_frame"] <= 17]  # marker frames without boxes, 15 among them
    for n in range(6, min(10, n_frames)):
        rows.append({"kind": "box", "label": "person", "start_frame": n, "box": (30.0, 20.0, 50.0, 44.0),
                     "origin": "model", "confidence": 0.8})  # fmt: skip
    if n_frames > MASK_FRAME:
        rows.append({"kind": "mask", "label": "person", "start_frame": MASK_FRAME, "mask": disc_mask()})
    if n_frames > MARKER[0]:
        rows.append(
            {"kind": "marker", "label": "event", "start_frame": MARKER[0], "end_frame": min(MARKER[1], n_frames - 1)}
        )
    for n in (3, 7):
        if n < n_frames:
            rows.append({"kind": "box", "label": "obj", "start_frame": n, "box": (4.0, 12.0, 24.0, 30.0),
                         "view_id": VIEW[0]})  # fmt: skip
    return rows


def make_dataset(
    root: Path, *, videos: tuple[str, ...] = ("cam",), n_frames: int = 30, gop: int = 12, box_every: int = 2
) -> Dataset:
    """A dataset in ``root/ds`` with one generated clip per video id and :func:`annotation_rows`, built once."""
    root.mkdir(parents=True, exist_ok=True)
    ds = Dataset.create(root / "ds")
    ds.add_labels(LABELS)
    ds.add_view(VIEW[0], crop=VIEW[1], output_size=VIEW[2])
    for i, vid in enumerate(videos):
        path = root / f"{vid}.mp4"
        encode_clip(path, n_frames=n_frames + i, width=W, height=H, gop=gop)
        ds.add_video(probe(path, video_id=vid))
        ds.add_annotations(annotation_rows(n_frames + i, box_every=box_every), vid)
    ds.build()
    return ds


def reference_frames(root: Path, video_id: str) -> list[np.ndarray]:
    """Every frame of a generated clip by plain sequential decoding."""
    return decode_all(root / f"{video_id}.mp4")


def store_contents(path: Path) -> dict[str, Any]:
    """Everything a store holds except its creation time: root attributes and index, and per video its
    attributes, every array and every decoded frame. Two stores are equal when these are equal."""
    out: dict[str, Any] = {}
    for folder in find_stores(path):
        backend = backend_for(folder)
        attrs, index = backend.read_root()
        attrs = {k: v for k, v in attrs.items() if k != "created"}
        entry: dict[str, Any] = {"attrs": attrs, "index": index.tolist(), "videos": {}}
        for vid in attrs.get("video_ids", []):
            video = backend.open_video(vid)
            arrays = {}
            names = [*VIDEO_ARRAYS, "frames_crc32c"]
            if not attrs.get("frames_only"):
                names += [f"regions/{n}" for n in region_names(video.attrs)]
                names += [f"segments/{n}" for n in SEGMENT_FIELDS]
            for name in names:
                arr = video.array(name)
                arrays[name] = (str(arr.dtype), arr.shape, np.nan_to_num(arr, nan=-7).tolist())
            frames = video.frames()
            pixels = [frames.read_chunk(c)[: frames.chunk_rows(c)].tolist() for c in range(frames.n_chunks)]
            entry["videos"][vid] = {"attrs": video.attrs, "arrays": arrays, "frames": pixels, "shape": frames.shape}
            frames.close()
            video.close()
        out[folder.name if folder != path else "."] = entry
    return out


def assert_same_sample(a: dict[str, Any], b: dict[str, Any], *, pixel_tolerance: int = 0) -> None:
    """Two sample dicts (NumPy or tensors) are equal: keys, dtypes, shapes, targets; pixels within a tolerance."""
    assert set(a) == set(b), (sorted(a), sorted(b))
    for key in a:
        x, y = a[key], b[key]
        if hasattr(x, "numpy"):
            x = x.numpy()
        if hasattr(y, "numpy"):
            y = y.numpy()
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, (key, x.shape, y.shape)
            if key == "image" and pixel_tolerance:
                assert np.abs(x.astype(int) - y.astype(int)).max() <= pixel_tolerance, key
            elif x.dtype.kind == "f":
                np.testing.assert_allclose(x, y, rtol=0, atol=1e-4, err_msg=key)
            else:
                np.testing.assert_array_equal(x, y, err_msg=key)
        else:
            assert x == y, (key, x, y)
