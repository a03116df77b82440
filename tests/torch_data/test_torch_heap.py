"""keep_heap_top (vidlabel.video._heap; torch_data and the export unit writer call it): its setting (the effect on page faults is measured by scripts/bench_stream.py, not here:
it depends on glibc's heap heuristics and on what else the process allocated)."""

from __future__ import annotations

import pytest

from vidlabel.errors import OptionError
from vidlabel.torch_data._common import keep_heap_top as torch_keep_heap_top
from vidlabel.video import _heap
from vidlabel.video._heap import keep_heap_top


def test_bad_pad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_heap, "_heap_tuned_pid", -1)
    monkeypatch.setenv("VIDLABEL_MALLOC_TOP_PAD", "lots")
    with pytest.raises(OptionError, match="VIDLABEL_MALLOC_TOP_PAD must be an integer, got 'lots'"):
        keep_heap_top()


def test_once_per_process_and_zero_leaves_malloc_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, int]] = []

    class Mallopt:
        argtypes: object = None

        def __call__(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    class FakeLibc:
        mallopt = Mallopt()

    monkeypatch.setattr(_heap.ctypes, "CDLL", lambda name: FakeLibc())
    monkeypatch.setattr(_heap.sys, "platform", "linux")
    for pad, want in ((None, [(-2, 64 << 20)]), ("1048576", [(-2, 1 << 20)]), ("0", [])):
        calls.clear()
        monkeypatch.setattr(_heap, "_heap_tuned_pid", -1)
        if pad is None:
            monkeypatch.delenv("VIDLABEL_MALLOC_TOP_PAD", raising=False)
        else:
            monkeypatch.setenv("VIDLABEL_MALLOC_TOP_PAD", pad)
        keep_heap_top()
        keep_heap_top()  # once per process
        assert calls == want


def test_torch_data_uses_the_same_setting() -> None:
    assert torch_keep_heap_top is keep_heap_top
