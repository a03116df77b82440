"""vidlabel.cli.main: one-line errors and warnings, exit codes."""

import warnings

import pytest

from vidlabel import cli
from vidlabel.cli import _dataset, _store
from vidlabel.errors import UnknownVideoError, VidlabelWarning


def test_vidlabel_warning_prints_one_line(monkeypatch, capsys, tmp_path):
    def command(args):
        warnings.warn("3 annotations lie on frames this export does not store", VidlabelWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(_dataset, "_cmd_create", command)
    with warnings.catch_warnings():
        warnings.simplefilter("always", VidlabelWarning)
        assert cli.main(["create", str(tmp_path / "ds")]) == 0
    err = capsys.readouterr().err
    assert err == "vidlabel: warning: 3 annotations lie on frames this export does not store\n"


def test_vidlabel_error_prints_one_line_and_exits_1(monkeypatch, capsys, tmp_path):
    def command(args):
        raise UnknownVideoError("unknown video 'cam9'; known: cam1, cam2")

    monkeypatch.setattr(_dataset, "_cmd_create", command)
    assert cli.main(["create", str(tmp_path / "ds")]) == 1
    assert capsys.readouterr().err == "vidlabel: error: unknown video 'cam9'; known: cam1, cam2\n"


@pytest.mark.parametrize(
    ("command", "argv", "said"),
    [
        ((_store, "_cmd_export"), ["export", "ds", "store"], "vidlabel: interrupted; the same command resumes it\n"),
        ((_store, "_cmd_cache"), ["cache", "ds", "cache"], "vidlabel: interrupted; the same command resumes it\n"),
        (
            (_store, "_cmd_upload"),
            ["upload", "store", "file:///b/s"],
            "vidlabel: interrupted; the same command resumes it\n",
        ),
        ((_dataset, "_cmd_create"), ["create", "ds"], "vidlabel: interrupted\n"),
    ],
)
def test_ctrl_c_says_whether_the_same_command_resumes(monkeypatch, capsys, command, argv, said):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(*command, interrupted)
    assert cli.main(argv) == 130
    assert capsys.readouterr().err == said


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit, match="2"):
        cli.main(["export"])
    assert "the following arguments are required" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    # `vidlabel info STORE | head -1`: the pipe closes while the command still prints
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from vidlabel import cli\n"
        "from vidlabel.cli import _dataset\n"
        "def command(args):\n"
        "    for i in range(200000):\n"
        "        print('line', i)\n"
        "    return 0\n"
        "_dataset._cmd_create = command\n"
        f"sys.exit(cli.main(['create', {str(tmp_path / 'ds')!r}]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"line 0\n"
    proc.stdout.close()  # as head does after its first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == "", err  # no "vidlabel: error: BrokenPipeError" and no traceback at exit


def test_an_extra_argument_is_refused_with_the_commands_usage(capsys):
    # before: argparse's top-level usage ("usage: vidlabel [-h] [--version] COMMAND ...") for `verify STORE extra`
    with pytest.raises(SystemExit, match="2"):
        cli.main(["verify", "store", "extra"])
    err = capsys.readouterr().err
    assert err.startswith("usage: vidlabel verify [-h] OUT\n"), err
    assert err.endswith("vidlabel verify: error: unrecognized arguments: extra\n"), err


def test_verify_counts_of_one_are_singular(monkeypatch, capsys):
    import vidlabel.store

    report = {"ok": True, "problems": [], "stores": ["s"], "videos": 1, "frames": 1, "bytes": 0}
    report |= {"chunks": 1, "chunks_total": 1}
    monkeypatch.setattr(vidlabel.store, "verify_store", lambda path, progress: report)
    assert cli.main(["verify", "s"]) == 0
    assert capsys.readouterr().out == "ok: 1 store, 1 video, 1 frame, 1 chunk (0.0 MiB) checked\n"
    monkeypatch.setattr(
        vidlabel.store, "verify_store", lambda path, progress: {**report, "videos": 2, "chunks": 3, "chunks_total": 3}
    )
    assert cli.main(["verify", "s"]) == 0
    assert capsys.readouterr().out == "ok: 1 store, 2 videos, 1 frame, 3 chunks (0.0 MiB) checked\n"


def test_progress_bars_stay_off_output_that_is_not_a_terminal(tmp_path, capsys, clip):
    """A command whose stderr goes to a file or a pipe printed tqdm's bars into it (README: clean output)."""
    ds = tmp_path / "ds"
    assert cli.main(["create", str(ds)]) == 0
    assert cli.main(["add-video", str(ds), str(clip.path)]) == 0
    assert cli.main(["build", str(ds)]) == 0
    assert cli.main(["export", str(ds), str(tmp_path / "store"), "--frames", "all"]) == 0
    assert cli.main(["verify", str(tmp_path / "store")]) == 0
    err = capsys.readouterr().err
    assert "%|" not in err and "frame/s" not in err, err


@pytest.mark.parametrize(
    ("argv", "option", "taken"),
    [
        (["validate", "--roots", "/videos", "ds"], "--roots", "/videos ds"),
        (["validate", "--roots", "/a", "--json"], None, None),  # an option ends the list: DATASET was not given
        (["export-labels", "--videos", "cam1", "ds", "coco-vid", "out.json"], "--videos", "cam1 ds coco-vid out.json"),
    ],
)
def test_a_list_option_that_took_the_positional_arguments_is_named(capsys, argv, option, taken):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "the following arguments are required" in err
    if option is None:
        assert "took every value" not in err
    else:
        assert f"({option} took every value after it: {taken}; end its list with `--`" in err


def test_a_list_option_ended_with_double_dash_leaves_the_positional_argument(tmp_path, capsys):
    missing = tmp_path / "no_dataset"
    assert cli.main(["validate", "--roots", str(tmp_path), "--", str(missing)]) == 1
    assert f"no dataset at {missing}" in capsys.readouterr().err
