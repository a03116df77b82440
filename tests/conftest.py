"""Session fixtures: small generated clips (no network, nothing outside the repository)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from tests.media import (
    ClipTruth,
    corrupt_frames,
    decode_tolerant,
    encode_audio_only,
    encode_clip,
    read_frame_number,
    truncate_file,
)
from tests.services import Bucket, DaskCluster, MotoServer, start_dask, start_moto


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def clip(media_dir: Path) -> ClipTruth:
    """48 frames, 64x48, H.264, 30 fps, a keyframe every 12 frames, no B-frames."""
    return encode_clip(media_dir / "clip.mp4", n_frames=48, gop=12)


@pytest.fixture(scope="session")
def clip_bframes(media_dir: Path) -> ClipTruth:
    """60 frames, 64x48, H.264 with 3 B-frames, a keyframe every 20."""
    return encode_clip(media_dir / "clip_bframes.mp4", n_frames=60, gop=20, bframes=3)


# ---- the reader's clip catalogue (one tiny clip per way video reading goes wrong) ----

VFR_PTS_MS = [0, 33, 66, 100, 200, 210, 220, 230, 400, 433, 466, 500, 1500, 1510, 1520, 1530, 1540, 1600, 1700,
              1733, 1766, 1800, 1833, 1866, 1900, 2000, 2033, 2066, 2100, 2133]  # fmt: skip


@pytest.fixture(scope="session")
def clip_vfr(media_dir: Path) -> ClipTruth:
    """30 frames at variable frame rate (steps of 10 ms to 1 s), H.264, a keyframe every 10."""
    return encode_clip(
        media_dir / "vfr.mp4", n_frames=len(VFR_PTS_MS), pts=VFR_PTS_MS, time_base=Fraction(1, 1000), gop=10
    )


@pytest.fixture(scope="session")
def clip_long_gop(media_dir: Path) -> ClipTruth:
    """300 frames with a keyframe every 250 (so a random read decodes up to 250 frames)."""
    return encode_clip(media_dir / "long_gop.mp4", n_frames=300, gop=250)


@pytest.fixture(scope="session")
def clip_rot90(media_dir: Path) -> ClipTruth:
    """24 frames coded 64x48 with a display matrix of 90 degrees counter-clockwise: displayed 48x64."""
    return encode_clip(media_dir / "rot90.mp4", n_frames=24, rotation=90)


@pytest.fixture(scope="session")
def clip_rot270(media_dir: Path) -> ClipTruth:
    """24 frames coded 64x48 rotated -90 degrees (90 clockwise, as phones write it): displayed 48x64."""
    return encode_clip(media_dir / "rot270.mp4", n_frames=24, rotation=-90)


@pytest.fixture(scope="session")
def clip_odd_ffv1(media_dir: Path) -> ClipTruth:
    """24 frames of 67x37 (odd: libx264 refuses it), FFV1 in Matroska (whose header holds no frame count)."""
    return encode_clip(media_dir / "odd_ffv1.mkv", n_frames=24, width=67, height=37, codec="ffv1", gop=8)


@pytest.fixture(scope="session")
def clip_odd_mpeg4(media_dir: Path) -> ClipTruth:
    """30 frames of 67x37, MPEG-4 Part 2 with 2 B-frames in AVI."""
    return encode_clip(media_dir / "odd_mpeg4.avi", n_frames=30, width=67, height=37, codec="mpeg4", gop=10, bframes=2)


@pytest.fixture(scope="session")
def clip_editlist(media_dir: Path) -> ClipTruth:
    """40 encoded frames, the first 5 at negative pts: the mp4 edit list hides them, 35 are displayed."""
    return encode_clip(media_dir / "editlist.mp4", n_frames=40, pts=list(range(-5, 35)), bframes=2)


@pytest.fixture(scope="session")
def clip_start_offset(media_dir: Path) -> ClipTruth:
    """36 frames whose first pts is 7 frames in (non-zero start time), B-frames, Matroska."""
    return encode_clip(media_dir / "start_offset.mkv", n_frames=36, pts=list(range(7, 43)), bframes=2)


@pytest.fixture(scope="session")
def clip_pts_from_dts(media_dir: Path) -> ClipTruth:
    """40 frames with 3 B-frames stored with pts = dts: the decoder labels frames with a permutation of pts."""
    return encode_clip(media_dir / "pts_from_dts.mp4", n_frames=40, bframes=3, pts_from_dts=True)


@pytest.fixture(scope="session")
def clip_truncated(media_dir: Path) -> ClipTruth:
    """A 60-frame faststart mp4 cut at 90% of its bytes: the header still claims 60 frames.

    The truth's frame count is what plain PyAV decodes of it (checked to be a prefix 0..k-1).
    """
    whole = encode_clip(
        media_dir / "whole_for_truncation.mp4", n_frames=60, gop=12, container_options={"movflags": "+faststart"}
    )
    path = truncate_file(whole.path, media_dir / "truncated.mp4", 0.9)
    frames, errors = decode_tolerant(path)
    numbers = [read_frame_number(image) for _, image in frames]
    assert errors >= 1 and numbers == list(range(len(numbers))) and len(numbers) < 60
    return ClipTruth(
        path=path, frame_count=len(numbers), width=64, height=48, fps=whole.fps, pts=whole.pts,
        time_base=whole.time_base, keyframe_interval=12, extra={"claimed_frames": 60},
    )  # fmt: skip


@pytest.fixture(scope="session")
def clip_corrupt(media_dir: Path) -> ClipTruth:
    """48 frames, a keyframe every 12, the packets of frames 15 and 16 overwritten with 0xFF.

    Frames 15..23 (from the first bad packet to the next keyframe) cannot be trusted; all others must read exactly.
    """
    whole = encode_clip(media_dir / "whole_for_corruption.mp4", n_frames=48, gop=12)
    path = corrupt_frames(whole.path, media_dir / "corrupt.mp4", [15, 16])
    return ClipTruth(
        path=path, frame_count=48, width=64, height=48, fps=whole.fps, pts=whole.pts, time_base=whole.time_base,
        keyframe_interval=12, extra={"untrusted": list(range(15, 24))},
    )  # fmt: skip


@pytest.fixture(scope="session")
def audio_only(media_dir: Path) -> Path:
    """An AAC mp4 with no video stream."""
    return encode_audio_only(media_dir / "audio_only.mp4")


@pytest.fixture(scope="session")
def not_media(media_dir: Path) -> Path:
    """A text file with a video extension."""
    path = media_dir / "not_media.mp4"
    path.write_text("this is not a video\n" * 50)
    return path


@pytest.fixture(scope="session")
def empty_file(media_dir: Path) -> Path:
    """Zero bytes."""
    path = media_dir / "empty.mp4"
    path.write_bytes(b"")
    return path


@pytest.fixture(scope="session")
def cut_before_index(media_dir: Path, clip: ClipTruth) -> Path:
    """An mp4 whose index (moov, written at the end) was cut away: nothing to open."""
    return truncate_file(clip.path, media_dir / "cut_before_index.mp4", 0.5)


#: Every readable clip of the catalogue, by fixture name.
READABLE_CLIPS = (
    "clip", "clip_bframes", "clip_vfr", "clip_long_gop", "clip_rot90", "clip_rot270", "clip_odd_ffv1",
    "clip_odd_mpeg4", "clip_editlist", "clip_start_offset", "clip_pts_from_dts", "clip_truncated", "clip_corrupt",
)  # fmt: skip


@pytest.fixture(scope="session", params=READABLE_CLIPS)
def any_clip(request: pytest.FixtureRequest) -> ClipTruth:
    """Each readable clip of the catalogue in turn."""
    return request.getfixturevalue(request.param)


# -- real services on 127.0.0.1 (tests/services.py): started once per session, only when a test asks --------------


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A ``moto_server`` S3 API on a free loopback port; stopped by PID at the end of the session."""
    server = start_moto(tmp_path_factory.mktemp("moto"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(moto_server: MotoServer) -> Bucket:
    """A fresh, empty bucket on the moto server (``.url(key)``, ``.storage_options``, ``.obstore()``)."""
    return moto_server.make_bucket()


@pytest.fixture
def s3_env(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """AWS_* variables pointing at the moto server, for this test only (e.g. for a CLI run in a subprocess)."""
    for name, value in moto_server.env().items():
        monkeypatch.setenv(name, value)
    return moto_server


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    """``dask scheduler`` + ``dask worker --nworkers 2 --nthreads 1`` on 127.0.0.1, importing this checkout."""
    cluster = start_dask(tmp_path_factory.mktemp("dask"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def mem() -> Iterator[str]:
    """A fresh ``memory://`` prefix (fsspec's in-process object store), removed afterwards."""
    import fsspec

    prefix = f"memory://vidlabel-test-{uuid.uuid4().hex[:8]}"
    yield prefix
    fs = fsspec.filesystem("memory")
    if fs.exists(prefix):
        fs.rm(prefix, recursive=True)
