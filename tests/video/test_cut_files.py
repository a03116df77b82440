"""Files cut short (issue 12, item 1): no frame the reader returns differs from the intact file's frame.

Each clip is encoded here, cut with Python at byte offsets chosen from its packet layout (inside a packet,
one byte into it, and exactly at its end, where the container's own structure cannot tell a cut), registered
in a dataset, and read whole; every frame read is compared with a plain PyAV decode of the intact file.
The frames the decoder marks corrupt, those that follow a packet marked corrupt before the next keyframe,
and those a reordering decoder gives out only when drained at the end of a cut file are untrusted: recorded
in ``untrusted_frames`` and refused by the reader.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from tests.media import decode_all, encode_clip, packet_layout, read_frame_number
from vidlabel import Dataset, FrameReader, probe
from vidlabel.errors import NoVideoStreamError, VideoDecodeError, VidlabelError, VidlabelWarning
from vidlabel.spec import VideoMetadata

W, H = 96, 64
CLIPS = {
    "mpeg4.avi": {"codec": "mpeg4"},
    "mpeg4_bframes.avi": {"codec": "mpeg4", "bframes": 2},
    "msmpeg4.avi": {"codec": "msmpeg4"},
    "h264_bframes.mp4": {"bframes": 2, "container_options": {"movflags": "+faststart"}},
    "h264_bframes.mkv": {"bframes": 2},
    "h264_bframes.ts": {"bframes": 2},
    "mpeg4.mkv": {"codec": "mpeg4"},
}


@pytest.fixture(scope="module")
def intact(media_dir: Path) -> dict[str, tuple[Path, list[np.ndarray]]]:
    """Each clip of CLIPS (48 frames, a keyframe every 12) with its frames by plain PyAV decoding."""
    out = {}
    for name, options in CLIPS.items():
        truth = encode_clip(media_dir / f"intact_{name}", n_frames=48, width=W, height=H, gop=12, **options)
        frames = decode_all(truth.path)
        assert len(frames) == 48
        if name != "msmpeg4.avi":  # msmpeg4 blurs the number blocks; it has no B-frames, so decoding order is shown
            assert [read_frame_number(f) for f in frames] == list(range(48))  # the reference is in display order
        out[name] = (truth.path, frames)
    return out


def cut_offsets(path: Path) -> list[int]:
    """Byte offsets to cut at: for every fifth video packet, one byte in, half way and exactly at its end."""
    size = path.stat().st_size
    offsets = set()
    for _, pos, length, _ in packet_layout(path)[2::5]:
        offsets.update({pos + 1, pos + length // 2, pos + length})
    return sorted(o for o in offsets if o < size)


def read_registered(ds: Dataset, meta: VideoMetadata) -> dict[int, np.ndarray]:
    """Every frame a reader of the registered video gives: in order (skipping refused ones) and one by one in
    reverse (seeks, rewinds), which must agree."""
    got: dict[int, np.ndarray] = {}
    registered = ds.video(meta.video_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)  # "skipping frames that cannot be trusted"
        with FrameReader.for_video(registered, on_corrupt="skip") as reader:
            got = dict(reader.iter_frames())
            for n in reversed(range(reader.frame_count)):
                try:
                    image = reader.read(n)
                except VideoDecodeError as err:
                    assert n not in got and f"cannot read frame {n} of video {meta.video_id!r}" in str(err)
                else:
                    assert np.array_equal(image, got[n])
    return got


def test_no_frame_of_a_cut_file_differs_from_the_intact_file(tmp_path: Path, intact: dict) -> None:
    ds = Dataset.create(tmp_path / "ds")
    cuts = frames_read = untrusted = 0
    wrong: list[str] = []
    for name, (path, reference) in intact.items():
        data = path.read_bytes()
        for offset in cut_offsets(path):
            cut = tmp_path / f"{offset}_{name}"
            cut.write_bytes(data[:offset])
            try:
                meta = probe(cut, video_id=f"{name.replace('.', '_')}_{offset}")
            except (NoVideoStreamError, VideoDecodeError):
                continue  # cut before the header or before any frame: refused whole
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", VidlabelWarning)  # "no trustworthy picture"
                ds.add_video(meta)
            cuts += 1
            untrusted += meta.untrusted_count
            got = read_registered(ds, meta)
            assert set(got).isdisjoint(np.flatnonzero(meta.untrusted_mask()).tolist())
            frames_read += len(got)
            wrong += [f"{name} cut at {offset}: frame {n}" for n, image in got.items()
                      if not np.array_equal(image, reference[n])]  # fmt: skip
    assert cuts >= 6 * len(CLIPS) and frames_read > 20 * cuts
    assert untrusted > 0  # the cuts do leave frames the decoder cannot vouch for
    assert wrong == []


@pytest.fixture(scope="module")
def cut_avi(intact: dict, media_dir: Path) -> Path:
    """The issue's reproduction in small: an mpeg4 AVI cut half way into the packet of frame 30."""
    path, _ = intact["mpeg4.avi"]
    _, pos, length, _ = packet_layout(path)[30]
    cut = media_dir / "cut_in_packet_30.avi"
    cut.write_bytes(path.read_bytes()[: pos + length // 2])
    return cut


def test_a_frame_cut_in_half_is_registered_untrusted_and_refused(cut_avi: Path, intact: dict) -> None:
    meta = probe(cut_avi, video_id="t")
    assert meta.frame_count == 31 and meta.untrusted_frames == ((30, 30),)
    with FrameReader.for_video(meta) as reader:
        assert read_frame_number(reader.read(29)) == 29
        with pytest.raises(VideoDecodeError, match=r"cannot read frame 30 of video 't' .*frame 30: "):
            reader.read(30)


def test_a_reader_without_metadata_refuses_the_half_frame_too(cut_avi: Path) -> None:
    """The reader's own rule (a packet marked corrupt taints its frame), not only probe's record."""
    with FrameReader(cut_avi) as reader:
        with pytest.raises(VideoDecodeError, match="frame 30: it follows a decode error"):
            reader.read(30)


def test_a_reordered_frame_drained_from_a_cut_file_is_untrusted(intact: dict, media_dir: Path) -> None:
    """Cut exactly after a packet: the decoder gives out the frame it held for reordering at the end, in the
    place of the B-frames that were cut; that frame is untrusted."""
    path, reference = intact["mpeg4_bframes.avi"]
    layout = packet_layout(path)
    _, pos, length, _ = layout[30]
    cut = media_dir / "cut_after_packet_30.avi"
    cut.write_bytes(path.read_bytes()[: pos + length])
    meta = probe(cut, video_id="b")
    last = meta.frame_count - 1
    assert meta.untrusted_frames and meta.untrusted_frames[-1][1] == last
    with FrameReader.for_video(meta) as reader:
        with pytest.raises(VideoDecodeError, match=f"frame {last}: probe recorded it as untrusted"):
            reader.read(last)
        first_bad = meta.untrusted_frames[0][0]
        assert all(np.array_equal(reader.read(n), reference[n]) for n in range(first_bad))


def test_b_frames_cut_off_an_mpeg_ts_on_a_packet_boundary_leave_no_renumbered_frame(
    intact: dict, media_dir: Path
) -> None:
    """A transport stream cut where a B-frame's first 188-byte packet starts: the B-frames shown before the last
    P-frame kept are gone without a trace in the packets, and that P-frame was frame n - 1, the picture of frame
    n. The hole in the pts at the end (a constant frame rate) now says the file is cut: it is untrusted."""
    path, reference = intact["h264_bframes.ts"]
    layout = packet_layout(path)  # file order: (pts, pos, size, keyframe)
    later = max(i for i in range(1, len(layout)) if layout[i][0] < max(p for p, *_ in layout[:i]) and i < 40)
    offset = layout[later][1]
    assert offset % 188 == 0  # on a transport packet boundary: the file's size shows nothing
    cut = media_dir / "cut_at_a_b_frame.ts"
    cut.write_bytes(path.read_bytes()[:offset])
    meta = probe(cut, video_id="ts")
    assert meta.untrusted_frames and meta.untrusted_frames[-1][1] == meta.frame_count - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VidlabelWarning)  # "skipping frames that cannot be trusted"
        with FrameReader.for_video(meta, on_corrupt="skip") as reader:
            got = dict(reader.iter_frames())
    assert got and all(np.array_equal(image, reference[n]) for n, image in got.items())


def read_against(
    reader: FrameReader, reference: list[np.ndarray], where: str, wrong: list[str]
) -> tuple[int, list[str]]:
    """Read every frame of ``reader`` one by one; each that differs from ``reference`` is added to ``wrong``
    (``where``, the frame and the number its pixels show). Returns (frames read, the refusals' messages)."""
    read, refusals = 0, []
    for n in range(reader.frame_count):
        try:
            image = reader.read(n)
        except VideoDecodeError as err:
            refusals.append(str(err))
            continue
        read += 1
        if not np.array_equal(image, reference[n]):
            wrong.append(f"{where}: frame {n} shows {read_frame_number(image)}")
    return read, refusals


def test_a_reader_without_metadata_never_gives_a_later_frame_of_a_cut_bframe_file(tmp_path: Path, intact: dict) -> None:
    """A bare ``FrameReader(path)`` has no probe record of the frames a reordering decoder gave out only when
    drained at the end of a cut file, whose B-frames may be gone: it returned them, and such a frame showed a
    later picture (frame 47 of a cut MKV showed 48; the last frame of cut AVIs and MP4s likewise). It now reads
    the signs probe reads off its own index pass (a header counting more packets, a duration past the last
    packet, a hole in the pts among the last frames) and refuses those frames: every frame it returns equals
    the intact file's."""
    wrong: list[str] = []
    refused_for_the_hole = refused_drained = frames_read = 0
    for name, (path, reference) in intact.items():
        if not CLIPS[name].get("bframes"):
            continue
        data = path.read_bytes()
        for offset in cut_offsets(path) + [len(data) * k // 100 for k in range(70, 100, 3)]:
            cut = tmp_path / f"{offset}_{name}"
            cut.write_bytes(data[:offset])
            try:
                reader = FrameReader(cut)
            except VidlabelError:
                continue  # cut before the header or before any frame: refused whole
            with reader:
                read, refusals = read_against(reader, reference, f"{name} cut at {offset}", wrong)
            frames_read += read
            refused_for_the_hole += sum("the pts skip a frame before it" in r for r in refusals)
            refused_drained += sum("only when drained at the end of a file that looks cut short" in r for r in refusals)
    assert frames_read > 1000
    assert wrong == []
    # the cuts do leave such frames, and both signs refuse some: the file's own (its header counts more
    # packets, its duration runs on) and, where the file shows nothing, the hole in the pts
    assert refused_drained > 0 and refused_for_the_hole > 0


def test_cut_tail_needs_a_constant_rate_and_a_hole_among_the_last_frames() -> None:
    from vidlabel.video._cut import cut_tail

    steady = np.arange(20) * 33
    assert cut_tail(steady) == frozenset()
    assert cut_tail(np.append(steady, steady[-1] + 66)) == frozenset({20})  # one frame missing before the last
    jitter = np.cumsum([0] + [33, 34, 33] * 6)  # 1/1000 time base at 30 fps: steps of 33 and 34
    assert cut_tail(np.append(jitter, jitter[-1] + 67)) == frozenset({jitter.size})
    early = np.concatenate([steady[:5], steady[6:]])  # a hole in the middle: not the cut-off tail's sign
    assert cut_tail(early) == frozenset()
    variable = np.cumsum([0, 33, 40, 33, 50, 33, 33, 33, 33, 33, 66])  # a variable rate: nothing to tell
    assert cut_tail(variable) == frozenset()
    assert cut_tail(np.array([0, 33, 99])) == frozenset()  # too few frames to tell
    assert cut_tail(np.array([0, 33, 99]), declared=33) == frozenset({2})  # ... but for the declared rate
    assert cut_tail(np.array([0, 20, 99]), declared=33) == frozenset()  # a step shorter: not that rate
    assert cut_tail(np.array([0, 33, 66]), declared=33) == frozenset()


def read_ts_cuts(
    tmp_path: Path, data: bytes, reference: list[np.ndarray], offsets: Iterable[int]
) -> tuple[list[str], list[str], int]:
    """The transport stream ``data`` cut at each of ``offsets``, every frame read by a bare reader and through
    probe's record against ``reference``: (frames that differ, the refusals' messages, frames read). Cuts before
    any frame decodes are left out."""
    wrong: list[str] = []
    refusals: list[str] = []
    frames_read = 0
    for offset in offsets:
        cut = tmp_path / f"{offset}.ts"
        cut.write_bytes(data[:offset])
        try:
            meta = probe(cut, video_id=f"ts_{offset}")
            bare = FrameReader(cut)
        except VidlabelError:
            continue  # nothing decodes yet
        with bare, FrameReader.for_video(meta) as registered:
            for reader, how in ((bare, "bare"), (registered, "registered")):
                read, refused = read_against(reader, reference, f"{how}, cut at {offset}", wrong)
                frames_read += read
                refusals += refused
    return wrong, refusals, frames_read


def test_a_transport_stream_cut_within_its_first_frames_gives_no_later_picture(tmp_path: Path, intact: dict) -> None:
    """An MPEG-TS with B-frames cut on a 188-byte packet boundary within its first keyframe intervals: with
    one or two frames before the drained ones there were too few steps for the rate, so neither probe nor
    a bare reader saw the hole, and frame 2 showed picture 4 (helper-45). The stream's declared frame rate
    now stands for it. Every cut up to a third of the file, read through probe's record and by a bare reader:
    no frame differs from the intact file's."""
    path, reference = intact["h264_bframes.ts"]
    data = path.read_bytes()
    wrong, refusals, frames_read = read_ts_cuts(tmp_path, data, reference, range(188, len(data) // 3, 188))
    assert frames_read > 200 and len(refusals) > 0
    assert wrong == []


@pytest.mark.parametrize(("bframes", "n_frames", "gop"), [(0, 40, 10), (2, 90, 30)])
def test_a_transport_stream_cut_inside_a_frame_s_later_packets_gives_no_half_picture(
    tmp_path: Path, bframes: int, n_frames: int, gop: int
) -> None:
    """A frame bigger than one 188-byte transport packet, cut inside one of its later transport packets: the
    demuxer gives out the frame's packet short, unmarked, at the end of the file, and it decoded without error
    into a half-wrong picture that ``FrameReader(path)`` and probe's record both gave out as the frame (frame 3
    of the 320x240 H.264 clip without B-frames cut at 2822; frame 0 of the one with B-frames cut at 1506). A
    transport stream whose size is no whole number of its packets now taints its last video packet like one
    marked corrupt: every frame read equals the intact file's, and the cut frames are refused, named."""
    truth = encode_clip(tmp_path / "intact.ts", n_frames=n_frames, width=320, height=240, gop=gop, bframes=bframes)
    reference = decode_all(truth.path)
    data = truth.path.read_bytes()
    # a PES packet's first transport packet holds about 170 bytes of the frame: cut in its later ones
    offsets = [o for _, pos, size, _ in packet_layout(truth.path) for o in range(pos + 190, pos + size + 60, 47)]
    offsets = [o for o in offsets if o % 188 and o < len(data)]
    assert len(offsets) >= 10
    wrong, refusals, frames_read = read_ts_cuts(tmp_path, data, reference, offsets)
    assert all("cannot read frame " in r for r in refusals)
    assert wrong == []
    assert frames_read > 100 and len(refusals) > 0
