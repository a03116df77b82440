"""probe, read_frame_index and content_hash on generated clips, checked against the generator's truth."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from tests.media import ClipTruth, decode_all, encode_clip, read_frame_number
from vidlabel.errors import NoVideoStreamError, VideoDecodeError, VideoNotFoundError, VidlabelWarning
from vidlabel.spec import FrameIndex
from vidlabel.video._probe import content_hash, probe, read_frame_index
from vidlabel.video._reader import FrameReader


def seconds(index: FrameIndex) -> list[Fraction]:
    tb = Fraction(index.timebase["num"], index.timebase["den"])
    return [int(p) * tb for p in index.pts]


def test_probe_counts_decoded_frames_of_every_clip(any_clip: ClipTruth) -> None:
    meta = probe(any_clip.path)
    assert meta.frame_count == any_clip.frame_count
    assert meta.frame_index is not None and meta.frame_index.frame_count == any_clip.frame_count
    assert (meta.width, meta.height) == (any_clip.width, any_clip.height)
    assert meta.rotation == any_clip.rotation
    assert meta.video_id == any_clip.path.stem
    assert meta.sources[0]["uri"] == str(any_clip.path.absolute())
    assert meta.content_hash == "sha256:" + hashlib.sha256(any_clip.path.read_bytes()).hexdigest()
    assert meta.frame_index.content_hash == meta.content_hash


@pytest.mark.parametrize(
    "name", ["clip", "clip_bframes", "clip_vfr", "clip_long_gop", "clip_odd_ffv1", "clip_editlist", "clip_corrupt"]
)
def test_index_times_are_the_encoded_times(request: pytest.FixtureRequest, name: str) -> None:
    truth: ClipTruth = request.getfixturevalue(name)
    index = probe(truth.path).frame_index
    assert index is not None
    expected = [truth.seconds(n) for n in range(truth.frame_count)]
    got = seconds(index)
    # Containers store time in their own timebase: equal to within half a tick.
    tick = Fraction(index.timebase["num"], index.timebase["den"])
    assert all(abs(g - e) <= tick / 2 for g, e in zip(got, expected, strict=True))


def test_keyframes_every_gop(clip: ClipTruth, clip_long_gop: ClipTruth) -> None:
    assert probe(clip.path).frame_index.keyframes.tolist() == [0, 12, 24, 36]  # type: ignore[union-attr]
    assert probe(clip_long_gop.path).frame_index.keyframes.tolist() == [0, 250]  # type: ignore[union-attr]


def test_fps_is_exact(clip: ClipTruth, clip_odd_ffv1: ClipTruth, clip_vfr: ClipTruth) -> None:
    assert probe(clip.path).fps == {"num": 30, "den": 1}
    assert probe(clip_odd_ffv1.path).fps == {"num": 30, "den": 1}
    vfr = probe(clip_vfr.path).fps
    # Variable rate: the stream's average, close to frames / duration.
    assert 10 < vfr["num"] / vfr["den"] < 20


def test_stream_properties(clip: ClipTruth, clip_odd_ffv1: ClipTruth) -> None:
    meta = probe(clip.path)
    assert (meta.codec, meta.pix_fmt, meta.bit_depth) == ("h264", "yuv420p", 8)
    odd = probe(clip_odd_ffv1.path)
    assert (odd.codec, odd.width, odd.height) == ("ffv1", 67, 37)


def test_probe_without_index(clip: ClipTruth) -> None:
    meta = probe(clip.path, video_id="cam1", with_index=False)
    assert meta.frame_index is None and meta.video_id == "cam1" and meta.frame_count == 48


def test_matroska_header_has_no_count_but_probe_counts(clip_odd_ffv1: ClipTruth) -> None:
    import av

    with av.open(str(clip_odd_ffv1.path)) as container:
        assert container.streams.video[0].frames == 0
    assert probe(clip_odd_ffv1.path).frame_count == 24


def test_truncated_file_counts_what_decodes(clip_truncated: ClipTruth) -> None:
    import av

    with av.open(str(clip_truncated.path)) as container:
        assert container.streams.video[0].frames == clip_truncated.extra["claimed_frames"]
    meta = probe(clip_truncated.path)
    assert meta.frame_count == clip_truncated.frame_count < 60
    assert meta.frame_index.method == "decode"  # type: ignore[union-attr]
    assert read_frame_index(clip_truncated.path).frame_count == clip_truncated.frame_count


def test_corrupt_file_keeps_frame_numbers(clip_corrupt: ClipTruth) -> None:
    # Frames lost to decode errors keep their numbers: the index has all 48 and keyframes stay at 12-multiples.
    index = probe(clip_corrupt.path).frame_index
    assert index is not None and index.frame_count == 48
    assert index.keyframes.tolist() == [0, 12, 24, 36]


def test_methods(
    clip: ClipTruth, clip_editlist: ClipTruth, clip_truncated: ClipTruth, clip_pts_from_dts: ClipTruth
) -> None:
    demuxed = read_frame_index(clip.path)
    assert demuxed.method == "demux"
    assert read_frame_index(clip.path, method="demux") == demuxed
    decoded = read_frame_index(clip.path, method="decode")
    assert decoded.method == "demux"  # a full decode that agrees with demuxing is labelled so
    assert np.array_equal(decoded.pts, demuxed.pts)
    for truth in (clip_editlist, clip_truncated, clip_pts_from_dts):
        index = read_frame_index(truth.path)
        assert index.method == "decode" and index.frame_count == truth.frame_count
        assert index == probe(truth.path).frame_index


def test_edit_list_hidden_frames_are_not_indexed(clip_editlist: ClipTruth) -> None:
    index = read_frame_index(clip_editlist.path)
    assert index.frame_count == 35 == clip_editlist.frame_count
    assert int(index.pts[0]) == 0
    with pytest.raises(VideoDecodeError, match=r"cannot index .*editlist\.mp4.* by demuxing: 5 packets marked discard"):
        read_frame_index(clip_editlist.path, method="demux")


def test_decoder_permuted_labels_are_kept(clip_pts_from_dts: ClipTruth) -> None:
    index = read_frame_index(clip_pts_from_dts.path)
    assert index.decoder_pts is not None
    assert not np.array_equal(index.decoder_pts, index.pts)
    assert np.array_equal(np.sort(index.decoder_pts), index.pts)
    assert FrameIndex.from_dict(index.to_dict()) == index
    # The frames themselves are in the right order when decoded plainly.
    assert len(decode_all(clip_pts_from_dts.path)) == 40


@pytest.mark.parametrize("fps", [Fraction(30), Fraction(2000)])
def test_stream_without_usable_timestamps_is_timed_by_its_frame_rate(tmp_path: Path, fps: Fraction) -> None:
    # A raw H.264 stream has no timestamps (its demuxer's time base is 1/1200000); at 2000 fps Matroska's
    # millisecond time base repeats every second pts. Frames are numbered by position either way; their times
    # were those positions in the stream's time base (1,200,000 or 1000 fps, 0, 0, 1, 2, ... us), so frames
    # shared a timestamp and MediaSequence records matched by timestamp went to the wrong frame.
    path = tmp_path / ("raw.h264" if fps == 30 else "repeated_pts.mkv")
    truth = encode_clip(path, n_frames=30, fps=fps, gop=10, bframes=2)
    meta = probe(truth.path)
    assert meta.fps == {"num": fps.numerator, "den": fps.denominator}
    index = meta.frame_index
    assert index is not None and index.frame_count == 30
    assert seconds(index) == [n / fps for n in range(30)]
    assert index.timestamp_us().tolist() == [n * 1_000_000 // fps for n in range(30)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", VidlabelWarning)  # no "the index disagrees with the decoder" on every open
        with FrameReader.for_video(meta) as reader:
            assert [read_frame_number(reader.read(n)) for n in (17, 3, 29, 0)] == [17, 3, 29, 0]
            assert [read_frame_number(image) for _, image in reader.iter_frames()] == list(range(30))


def test_content_hash_streams_and_caches(tmp_path: Path) -> None:
    path = tmp_path / "bytes.bin"
    data = np.random.default_rng(0).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    assert content_hash(path) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert content_hash(path) == content_hash(str(path))
    path.write_bytes(data[:-1])  # another size: not served from the cache
    assert content_hash(path) == "sha256:" + hashlib.sha256(data[:-1]).hexdigest()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoNotFoundError, match=r"video file not found: .*nope\.mp4"):
        probe(tmp_path / "nope.mp4")
    with pytest.raises(VideoNotFoundError, match=r"nope\.mp4"):
        read_frame_index(tmp_path / "nope.mp4")
    with pytest.raises(VideoNotFoundError, match=r"nope\.mp4"):
        content_hash(tmp_path / "nope.mp4")


def test_empty_file(empty_file: Path) -> None:
    with pytest.raises(VideoDecodeError, match=r"empty\.mp4.* is empty \(0 bytes\)"):
        probe(empty_file)


def test_folder(tmp_path: Path) -> None:
    with pytest.raises(VideoDecodeError, match="is a folder"):
        read_frame_index(tmp_path, method="decode")


def test_not_media(not_media: Path) -> None:
    with pytest.raises(NoVideoStreamError, match=r"cannot open .*not_media\.mp4.* as media"):
        probe(not_media)


def test_cut_before_index(cut_before_index: Path) -> None:
    with pytest.raises(NoVideoStreamError, match=r"cut_before_index\.mp4.*(not a media file|cut before its header)"):
        probe(cut_before_index)


def test_audio_only(audio_only: Path) -> None:
    with pytest.raises(NoVideoStreamError, match=r"no video stream in .*audio_only\.mp4.* \(streams: audio\)"):
        probe(audio_only)
    with pytest.raises(NoVideoStreamError, match="no video stream"):
        read_frame_index(audio_only)


def test_unknown_method(clip: ClipTruth) -> None:
    with pytest.raises(ValueError, match="method must be 'auto', 'demux' or 'decode', got 'fast'"):
        read_frame_index(clip.path, method="fast")  # type: ignore[arg-type]


def test_index_round_trips(clip_bframes: ClipTruth) -> None:
    index = read_frame_index(clip_bframes.path)
    assert FrameIndex.from_dict(index.to_dict()) == index
    assert "decoder_pts" not in index.to_dict()


def test_a_stream_that_changes_frame_size_is_refused_naming_the_frame_and_both_sizes(tmp_path: Path) -> None:
    """Two raw H.264 streams of different sizes joined (as `cat a.h264 b.h264` makes) registered at the first
    size while the reader gave frames of the second size past the join; probe now refuses the file."""
    first = encode_clip(tmp_path / "a.h264", n_frames=12, width=64, height=48, gop=6)
    second = encode_clip(tmp_path / "b.h264", n_frames=10, width=80, height=64, gop=5)
    joined = tmp_path / "joined.h264"
    joined.write_bytes(first.path.read_bytes() + second.path.read_bytes())
    with pytest.raises(
        VideoDecodeError,
        match=r"the frames of '.*joined\.h264' change size: frames 0\.\.11 are 64x48, frame 12 is 80x64 \(coded sizes\); "
        r"vidlabel reads one frame size per video: re-encode it to one size, e\.g\. ffmpeg -i IN -vf scale=64:48 ",
    ):
        probe(joined)
    assert probe(first.path).frame_count == 12  # each part alone is fine


def test_vidlabel_probe_stays_callable_after_the_probe_module_is_imported(clip: ClipTruth) -> None:
    """``from vidlabel.probe import ...`` binds the module to ``vidlabel.probe``; calling it still probes."""
    code = (
        "import sys, vidlabel\n"
        "from vidlabel.probe import probe, read_frame_index\n"
        "assert isinstance(vidlabel.probe, type(sys))\n"
        "meta = vidlabel.probe(sys.argv[1], video_id='v')\n"
        "assert meta == probe(sys.argv[1], video_id='v') and vidlabel.probe.read_frame_index is read_frame_index\n"
        "print(meta.frame_count, meta.video_id)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code, str(clip.path)], capture_output=True, text=True, cwd=root, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(clip.frame_count), "v"]
