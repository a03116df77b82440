"""Keeping freed memory at the top of the glibc heap in a process that decodes frames.

``VIDLABEL_MALLOC_TOP_PAD``: bytes of freed memory glibc keeps at the top of
the heap in a process that decodes or reads samples (default 64 MiB; 0 leaves
malloc's settings alone). Used by the PyTorch datasets of
:mod:`vidlabel.torch_data` and by the export's unit writer
(:func:`vidlabel.export._units.run_unit`).
"""

from __future__ import annotations

import ctypes
import os
import sys

from vidlabel.errors import OptionError

__all__ = ["keep_heap_top"]

_M_TOP_PAD = -2  # glibc's mallopt parameter number
_HEAP_TOP_PAD = 64 << 20
_heap_tuned_pid = -1


def keep_heap_top() -> None:
    """Once per process (glibc only): keep ``VIDLABEL_MALLOC_TOP_PAD`` bytes (64 MiB) of freed memory at the
    top of the heap instead of giving it back to the OS after every free.

    A decoded frame is a fresh multi-megabyte buffer (FFmpeg's, under ``to_ndarray``), allocated while the
    previous frame is still held. With glibc's default trimming the heap top is given back and taken again
    for nearly every frame, so each frame's pages are faulted in anew: hundreds of minor faults per 720p
    frame, a large share of the CPU of decoding it, against almost none with the pad (``scripts/bench_stream.py``
    and ``scripts/bench_exportwrite.py`` print the faults a frame).
    The memory kept is at most the pad, and only pages already used.

    Raises
    ------
    OptionError
        If ``VIDLABEL_MALLOC_TOP_PAD`` is set to something other than an integer.
    """
    global _heap_tuned_pid
    if _heap_tuned_pid == os.getpid():
        return
    _heap_tuned_pid = os.getpid()
    value = os.environ.get("VIDLABEL_MALLOC_TOP_PAD", "")
    try:
        pad = _HEAP_TOP_PAD if value == "" else int(value)
    except ValueError as err:
        raise OptionError(f"environment variable VIDLABEL_MALLOC_TOP_PAD must be an integer, got {value!r}") from err
    if pad <= 0 or not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt(_M_TOP_PAD, min(pad, 2**31 - 1))
