"""Session fixtures: small generated clips (no network, no ../shared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.media import ClipTruth, encode_clip


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
