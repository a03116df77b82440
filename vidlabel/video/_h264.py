"""H.264 packets a decoder may leave undecoded: those holding only non-reference slices.

Read off the length-prefixed bitstream H.264 has in mp4 and mkv (avcC
extradata); the reader skips such frames on the way to a later one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["avcc_length", "h264_nonref"]


def avcc_length(ctx: Any) -> int:
    """Size in bytes of the NAL length prefix of H.264 stored as in mp4/mkv (avcC extradata); 0 for anything else.

    Parameters
    ----------
    ctx : av.codec.context.CodecContext
        A decoder's codec context.
    """
    extradata = ctx.extradata
    if ctx.name != "h264" or not extradata or len(extradata) < 7 or extradata[0] != 1:
        return 0
    return (extradata[4] & 3) + 1


def h264_nonref(data: memoryview, length_size: int) -> bool:
    """True if a length-prefixed H.264 packet is well formed and holds only non-reference slices.

    Such a frame can be left undecoded: no other frame refers to it. A packet
    that does not parse (corrupt) is never called non-reference, so decoding it
    still reports its error.

    Parameters
    ----------
    data : memoryview
        The packet's bytes.
    length_size : int
        From :func:`avcc_length`; 0 gives False.
    """
    if not length_size:
        return False
    pos, end, slices = 0, len(data), 0
    while pos < end:
        if pos + length_size > end:
            return False
        size = int.from_bytes(data[pos : pos + length_size], "big")
        pos += length_size
        if size <= 0 or pos + size > end:
            return False
        header = data[pos]
        if header & 0x80:  # forbidden_zero_bit: not H.264
            return False
        kind = header & 31
        if kind == 1 and not header & 0x60:  # a slice with nal_ref_idc 0
            slices += 1
        elif kind not in (6, 9, 12):  # anything but SEI, delimiter, filler: keep it
            return False
        pos += size
    return slices > 0
