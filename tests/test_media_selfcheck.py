"""The test clip generator itself: numbers read back from plain decoding."""

from tests.media import decode_all, read_frame_number


def test_generated_clip_numbers_decode(clip):
    frames = decode_all(clip.path)
    assert len(frames) == clip.frame_count
    assert [read_frame_number(f) for f in frames] == list(range(clip.frame_count))


def test_bframe_clip_numbers_decode(clip_bframes):
    frames = decode_all(clip_bframes.path)
    assert [read_frame_number(f) for f in frames] == list(range(clip_bframes.frame_count))
