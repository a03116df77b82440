"""Shared helpers of the label-format tests: datasets without media, row comparison, random tracks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from vidlabel import Dataset, VideoMetadata
from vidlabel.geometry import decode_rle


def meta(video_id: str = "cam1", frame_count: int = 30, width: int = 64, height: int = 48, fps: int = 25):
    return VideoMetadata(
        video_id=video_id,
        frame_count=frame_count,
        fps={"num": fps, "den": 1},
        width=width,
        height=height,
        sources=[{"uri": f"/videos/{video_id}.mp4"}],
    )


def dataset(path: Path, labels=("person", "car", "goal"), videos=None) -> Dataset:
    ds = Dataset.create(path)
    for m in videos or [meta()]:
        ds.add_video(m)
    if labels:
        ds.add_labels(list(labels))
    return ds


def rows_of(ds: Dataset, video_id: str | None = None) -> list[dict[str, Any]]:
    return ds.annotations(video_id)


def canonical(rows: list[dict[str, Any]], *, origin: bool = True) -> tuple[list[tuple], list[set[int]], np.ndarray]:
    """(sorted comparable rows without boxes, track partition as sets of positions in that order, (N, 4) boxes).

    Masks are decoded to bytes; a track is compared as the set of positions it holds, so ids may
    differ between datasets. Compare two with :func:`assert_same_rows` (boxes within 0.01 px).
    """
    keyed = []
    for r in rows:
        box = (np.nan,) * 4 if r["box"] is None else tuple(float(v) for v in r["box"])
        mask = None if r["mask"] is None else decode_rle(r["mask"]).tobytes()
        key: tuple = (r["video_id"], r["kind"], r["label"], r["start_frame"], r["end_frame"], mask)
        if origin:
            conf = None if r["confidence"] is None else round(float(r["confidence"]), 4)
            key = (*key, r["origin"], conf)
        keyed.append((key, box, r["track_id"]))
    keyed.sort(key=lambda kbt: (repr(kbt[0]), kbt[1]))
    tracks: dict[Any, set[int]] = {}
    for i, (_, _, t) in enumerate(keyed):
        if t is not None:
            tracks.setdefault(t, set()).add(i)
    boxes = np.array([b for _, b, _ in keyed], np.float64).reshape(-1, 4)
    return [k for k, _, _ in keyed], sorted(tracks.values(), key=min), boxes


def assert_same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]], *, origin: bool = True) -> None:
    """Same rows (boxes within 0.01 px, masks equal), the same track partition."""
    g, w = canonical(got, origin=origin), canonical(want, origin=origin)
    assert g[0] == w[0]
    assert g[1] == w[1]
    assert g[2].shape == w[2].shape
    assert np.allclose(g[2], w[2], atol=0.01, rtol=0, equal_nan=True), np.abs(g[2] - w[2]).max()


@st.composite
def random_tracks(
    draw,
    *,
    frame_count: int = 20,
    width: int = 64,
    height: int = 48,
    masks: bool = False,
    markers: bool = False,
    max_tracks: int = 3,
    untracked: bool = False,
    labels=("person", "car"),
):
    """Rows of tracks with gaps: each track a label and a sorted random subset of frames, a box per frame."""
    rows: list[dict[str, Any]] = []
    for t in range(draw(st.integers(1, max_tracks))):
        label = draw(st.sampled_from(labels))
        frames = sorted(draw(st.sets(st.integers(0, frame_count - 1), min_size=1, max_size=8)))
        kind = "mask" if masks and draw(st.booleans()) else "box"
        for f in frames:
            if kind == "mask":
                x0 = draw(st.integers(0, width - 4))
                y0 = draw(st.integers(0, height - 4))
                m = np.zeros((height, width), np.uint8)
                m[y0 : y0 + draw(st.integers(1, 4)), x0 : x0 + draw(st.integers(1, 4))] = 1
                rows.append({"kind": "mask", "label": label, "start_frame": f, "mask": m, "track_id": t})
            else:
                x0 = draw(st.floats(0, width - 10, allow_nan=False).map(lambda v: round(v, 3)))
                y0 = draw(st.floats(0, height - 10, allow_nan=False).map(lambda v: round(v, 3)))
                w = draw(st.floats(1, 9).map(lambda v: round(v, 3)))
                h = draw(st.floats(1, 9).map(lambda v: round(v, 3)))
                rows.append(
                    {"kind": "box", "label": label, "start_frame": f, "box": (x0, y0, x0 + w, y0 + h), "track_id": t}
                )
    if untracked:
        for _ in range(draw(st.integers(0, 3))):
            f = draw(st.integers(0, frame_count - 1))
            rows.append({"kind": "box", "label": labels[0], "start_frame": f, "box": (1.0, 2.0, 11.5, 12.25)})
    if markers:
        start = 0
        for _ in range(draw(st.integers(0, 3))):
            a = start + draw(st.integers(0, 4))
            b = a + draw(st.integers(0, 4))
            if b >= frame_count:
                break
            rows.append({"kind": "marker", "label": "goal", "start_frame": a, "end_frame": b})
            start = b + 2  # markers of one label never touch: a format holding per-frame tags merges touching ones
    return rows


def uncompressed_rle(mask: np.ndarray) -> list[int]:
    """COCO uncompressed RLE counts of a mask: column-major runs, zeros first (computed pixel by pixel)."""
    runs, cur, n = [], 0, 0
    for v in np.asarray(mask).flatten(order="F").tolist():
        if v != cur:
            runs.append(n)
            cur, n = v, 0
        n += 1
    runs.append(n)
    return runs
