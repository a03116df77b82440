"""Property test: export-then-read equals the reader's frames and FrameSamples' targets, for both backends."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.media import decode_all, encode_clip, read_frame_number
from tests.store_support import LABELS, VIEW, H, W, annotation_rows, assert_same_sample
from vidlabel import Dataset, FrameSamples, export, open_store, probe
from vidlabel.errors import VidlabelWarning
from vidlabel.store import CODECS, get_codec

_CLIPS: dict[int, tuple[Path, list[np.ndarray]]] = {}


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("roundtrip_clips")


def clip(clip_dir: Path, n: int) -> tuple[Path, list[np.ndarray]]:
    if n not in _CLIPS:
        path = clip_dir / f"clip{n}.mp4"
        encode_clip(path, n_frames=n, width=W, height=H, gop=8)
        _CLIPS[n] = (path, decode_all(path))
    return _CLIPS[n]


@pytest.mark.parametrize("fmt", ["hdf5", "zarr"])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n_frames=st.sampled_from([6, 17, 33]),
    chunk_frames=st.integers(1, 5),
    stride=st.integers(1, 3),
    codec=st.sampled_from(CODECS),
    frames=st.sampled_from(["annotated", "all"]),
    box_every=st.integers(1, 4),
    view=st.booleans(),
)
def test_export_then_read_equals_reader_and_targets(
    clip_dir: Path, fmt: str, n_frames: int, chunk_frames: int, stride: int, codec: str, frames: str,
    box_every: int, view: bool,
) -> None:  # fmt: skip
    path, reference = clip(clip_dir, n_frames)
    if get_codec(codec).per_frame:
        chunk_frames = 1
    view_id = VIEW[0] if view else None
    with tempfile.TemporaryDirectory() as tmp:
        ds = Dataset.create(Path(tmp) / "ds")
        ds.add_labels(LABELS)
        ds.add_view(VIEW[0], crop=VIEW[1], output_size=VIEW[2])
        ds.add_video(probe(path, video_id="v"))
        ds.add_annotations(annotation_rows(n_frames, box_every=box_every), "v")
        ds.build()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VidlabelWarning)  # stride may leave annotations out (tested elsewhere)
            report = export(
                ds, Path(tmp) / "out", format=fmt, codec=codec, chunk_frames=chunk_frames, stride=stride,
                frames=frames, view_id=view_id, progress=False,
            )  # fmt: skip
        fs = FrameSamples(ds, frames=frames, stride=stride, view_id=view_id, with_masks=True)
        store = open_store(Path(tmp) / "out")
        sel = store.select(with_masks=True)
        assert store.index == sel.index == list(fs.index) and report.samples == len(fs)
        data = store.video_data("v")
        assert data.frame_number.tolist() == [f for _, f in fs.index]
        np.testing.assert_array_equal(data.timestamp_us, data.frame_number * 1_000_000 // 30)
        tolerance = 0 if get_codec(codec).lossless else 12
        order = np.random.default_rng(n_frames).permutation(len(sel)).tolist()  # random access order
        targets = list(fs.targets())
        for j in order:
            target = targets[j]
            got = sel.sample(j)
            n = got["frame_index"]
            want = fs.view.size if fs.view is not None else (W, H)
            assert got["image"].shape == (want[1], want[0], 3)
            if fs.view is None:
                expected = reference[n]
                assert np.abs(got["image"].astype(int) - expected.astype(int)).mean() <= (0 if not tolerance else 3)
                assert np.abs(got["image"].astype(int) - expected.astype(int)).max() <= (tolerance or 0) * 4
                if tolerance == 0:
                    assert read_frame_number(got["image"]) == n
            image = got.pop("image")
            assert_same_sample(got, {k: v for k, v in target.items()})
            assert_same_sample({**got, "image": image}, fs.sample("v", n, image))
        store.close()
