"""vidlabel's environment switches: on/off spellings, the default when unset, and a warning for anything else."""

from __future__ import annotations

import warnings

import pytest

from vidlabel import _env
from vidlabel._env import env_switch


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_on_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("VIDLABEL_TEST_SWITCH", value)
    assert env_switch("VIDLABEL_TEST_SWITCH", False) is True


@pytest.mark.parametrize("value", ["0", "false", "No", "off "])
def test_off_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("VIDLABEL_TEST_SWITCH", value)
    assert env_switch("VIDLABEL_TEST_SWITCH", True) is False


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_or_empty_is_the_default_without_a_warning(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("VIDLABEL_TEST_SWITCH", raising=False)
    else:
        monkeypatch.setenv("VIDLABEL_TEST_SWITCH", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env_switch("VIDLABEL_TEST_SWITCH", True) is True
        assert env_switch("VIDLABEL_TEST_SWITCH", None) is None


def test_anything_else_warns_once_and_gives_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_env, "_WARNED", set())
    monkeypatch.setenv("VIDLABEL_TEST_SWITCH", "maybe")
    with pytest.warns(RuntimeWarning, match=r"VIDLABEL_TEST_SWITCH='maybe' is not an on/off value \(1, true, yes, on / 0, false, no, off\): the switch is decided by vidlabel"):  # fmt: skip
        assert env_switch("VIDLABEL_TEST_SWITCH", None) is None
    with warnings.catch_warnings():  # once per value: a switch read at every batch does not repeat it
        warnings.simplefilter("error")
        assert env_switch("VIDLABEL_TEST_SWITCH", None) is None
    monkeypatch.setenv("VIDLABEL_SHM_POOL", "O")
    with pytest.warns(RuntimeWarning, match=r"VIDLABEL_SHM_POOL='O' is not an on/off value .*: the switch is on"):
        assert env_switch("VIDLABEL_SHM_POOL", True) is True


def test_the_warning_is_a_vidlabel_warning_the_command_line_prints_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: a RuntimeWarning, which the command line printed as Python does, with file and line
    from vidlabel.cli import _show_warning
    from vidlabel.errors import SwitchValueWarning, VidlabelWarning

    monkeypatch.setattr(_env, "_WARNED", set())
    monkeypatch.setenv("VIDLABEL_SHM_POOL", "maybe")
    with pytest.warns(SwitchValueWarning) as got:
        env_switch("VIDLABEL_SHM_POOL", True)
    w = got[0]
    assert issubclass(w.category, VidlabelWarning) and issubclass(w.category, RuntimeWarning)
    _show_warning(w.message, w.category, w.filename, w.lineno)
    assert capsys.readouterr().err == (
        "vidlabel: warning: VIDLABEL_SHM_POOL='maybe' is not an on/off value (1, true, yes, on / 0, false, no, off): "
        "the switch is on\n"
    )


def test_the_command_line_writes_a_warning_line_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    # DataLoader workers forked from the command line share its stderr: a message and its newline written
    # separately came out as two warnings on one line (found by a fresh-user pass)
    import sys

    from vidlabel.cli import _show_warning
    from vidlabel.errors import SwitchValueWarning

    class Writes:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            self.parts.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    writes = Writes()
    monkeypatch.setattr(sys, "stderr", writes)
    _show_warning(SwitchValueWarning("VIDLABEL_SHM_POOL='x' ..."), SwitchValueWarning, "f.py", 1)
    assert writes.parts == ["vidlabel: warning: VIDLABEL_SHM_POOL='x' ...\n"]
