"""keep_heap_top: its setting (the effect on page faults is measured by scripts/bench_stream.py, not here:
it depends on glibc's heap heuristics and on what else the process allocated)."""

from __future__ import annotations

import pytest

from vidlabel.errors import OptionError
from vidlabel.torch_data import _common
from vidlabel.torch_data._common import keep_heap_top


def test_bad_pad_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "_heap_tuned_pid", -1)
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

    monkeypatch.setattr(_common.ctypes, "CDLL", lambda name: FakeLibc())
    monkeypatch.setattr(_common.sys, "platform", "linux")
    for pad, want in ((None, [(-2, 64 << 20)]), ("1048576", [(-2, 1 << 20)]), ("0", [])):
        calls.clear()
        monkeypatch.setattr(_common, "_heap_tuned_pid", -1)
        if pad is None:
            monkeypatch.delenv("VIDLABEL_MALLOC_TOP_PAD", raising=False)
        else:
            monkeypatch.setenv("VIDLABEL_MALLOC_TOP_PAD", pad)
        keep_heap_top()
        keep_heap_top()  # once per process
        assert calls == want
