"""``FrameReader(frame_threads=N)`` (issue 15: an export in one process decodes on the core its single decoder
left idle): the same frames as single-threaded decoding, and the first fault turns frame threading off, so a
damaged file reads exactly as it does without it. The catalogue-wide truth checks are in ``test_frames.py``
(``frame_threads`` 0 and 2)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.media import ClipTruth, encode_clip, read_frame_number
from vidlabel import Dataset, export, open_store, probe
from vidlabel.errors import VidlabelWarning
from vidlabel.video._reader import FrameReader


def read_whole(path: Path, frame_threads: int) -> tuple[list[tuple[int, np.ndarray]], list[int], FrameReader]:
    reader = FrameReader(path, on_corrupt="skip", frame_threads=frame_threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)  # "skipping frames" on the damaged clip
        got = list(reader.iter_frames())
    return got, list(reader.skipped), reader


def test_a_clean_clip_decodes_with_frame_threads_the_whole_way(clip_bframes: ClipTruth) -> None:
    got, skipped, reader = read_whole(clip_bframes.path, 2)
    try:
        assert reader._stream.codec_context.thread_type.name == "FRAME"
        assert reader._stream.codec_context.thread_count == 2
        assert reader._frame_threads == 2 and reader.stats["rewinds"] == 0
        assert [n for n, _ in got] == list(range(clip_bframes.frame_count)) and skipped == []
        assert [read_frame_number(im) for _, im in got] == list(range(clip_bframes.frame_count))
    finally:
        reader.close()


def test_a_decode_error_turns_frame_threads_off_and_reads_as_a_single_thread(clip_corrupt: ClipTruth) -> None:
    plain, plain_skipped, r0 = read_whole(clip_corrupt.path, 0)
    threaded, threaded_skipped, r2 = read_whole(clip_corrupt.path, 2)
    try:
        assert r2._frame_threads == 0 and r2.stats["rewinds"] >= 1  # dropped at the first error, started over
        assert r2._stream.codec_context.thread_type.name != "FRAME"
        assert threaded_skipped == plain_skipped == clip_corrupt.extra["untrusted"]
        assert [n for n, _ in threaded] == [n for n, _ in plain]
        for (n, a), (_, b) in zip(threaded, plain, strict=True):
            np.testing.assert_array_equal(a, b)
            assert read_frame_number(a) == n
    finally:
        r0.close()
        r2.close()


def test_an_index_the_decoder_disagrees_with_is_first_retried_single_threaded(clip_bframes: ClipTruth) -> None:
    meta = probe(clip_bframes.path)
    index = meta.frame_index
    assert index is not None
    with FrameReader(clip_bframes.path, index=index, frame_threads=2) as reader:
        reader._fallback("made up for the test")
        assert reader._frame_threads == 0 and reader._mode == "label"  # the index is kept
        assert read_frame_number(reader.read(37)) == 37
        with pytest.warns(VidlabelWarning, match="disagrees with the decoder"):
            reader._fallback("made up again")
        assert reader._mode == "count"  # a second disagreement: the usual fallback


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_frame_threads_must_be_a_count(clip: ClipTruth, bad: Any) -> None:
    with pytest.raises(ValueError, match=r"frame_threads must be an integer >= 0, got"):
        FrameReader(clip.path, frame_threads=bad)


def test_an_export_decodes_without_frame_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # damage FFmpeg conceals silently is concealed differently with frame threads: the store would disagree
    # with FrameReader there, so an export (and a MediaSequence export) never asks for them
    path = encode_clip(tmp_path / "c.mp4", n_frames=30, width=64, height=48, gop=10, bframes=2).path
    ds = Dataset.create(tmp_path / "ds")
    ds.add_labels(["a"])
    ds.add_video(probe(path, video_id="v"))
    ds.add_annotations([{"kind": "box", "label": "a", "start_frame": 0, "box": (1, 1, 9, 9)}], "v")
    ds.build()
    asked: list[int] = []
    real = FrameReader.for_video.__func__  # type: ignore[attr-defined]

    def spy(cls: type[FrameReader], meta: Any, **kwargs: Any) -> FrameReader:
        asked.append(kwargs.get("frame_threads", 0))
        return real(cls, meta, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(FrameReader, "for_video", classmethod(spy))
    export(ds, tmp_path / "store", frames="all", progress=False)
    assert asked == [0]
    sel = open_store(tmp_path / "store").select()
    assert [read_frame_number(sel.sample(j)["image"]) for j in range(len(sel))] == list(range(30))
    export(ds, tmp_path / "records", format="mediasequence", codec="png", progress=False)  # one process too
    assert asked == [0, 0]
