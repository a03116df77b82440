"""Options of the wrong type are refused with a vidlabel error naming the option, never taken for their truth
value or left to fail deep inside (found by a fresh-user pass): ``overwrite="no"`` is true to Python and must
not overwrite a store; a path where a Dataset is expected, a Dataset or None where a store path is expected."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from tests.store_support import make_dataset
from vidlabel import Dataset, FrameSamples, export, open_store
from vidlabel.errors import OptionError, check_flag
from vidlabel.formats import import_labels
from vidlabel.store import FrameStore
from vidlabel.torch_data import StoreFrames, StoreStream, VideoStream


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, Path]:
    root = tmp_path_factory.mktemp("flags")
    ds = make_dataset(root, n_frames=8)
    export(ds, root / "store", progress=False)
    return ds, root / "store"


def digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.bool_(False)])
def test_a_flag_is_true_or_false_numpy_bools_included(value: object) -> None:
    assert check_flag("x", value) is bool(value)


@pytest.mark.parametrize("value", ["no", "false", "", 0, 1, None, 1.0, np.int64(1), [True]])
def test_anything_else_is_refused_not_taken_for_its_truth_value(value: object) -> None:
    with pytest.raises(
        OptionError, match=rf"^overwrite must be True or False, got {__import__('re').escape(repr(value))}$"
    ):
        check_flag("overwrite", value)


def test_export_overwrite_no_is_refused_and_the_store_is_left_as_it_was(exported: tuple[Dataset, Path]) -> None:
    ds, store = exported
    before = digest(store)
    with pytest.raises(OptionError, match=r"^overwrite must be True or False, got 'no'$"):
        export(ds, store, overwrite="no", progress=False)
    assert digest(store) == before


@pytest.mark.parametrize("option", ["progress", "frames_only", "overwrite"])
def test_every_export_flag_is_checked_before_anything_is_written(
    exported: tuple[Dataset, Path], tmp_path: Path, option: str
) -> None:
    ds, _ = exported
    with pytest.raises(OptionError, match=rf"^{option} must be True or False, got 'false'$"):
        export(ds, tmp_path / "out", **{option: "false"})
    assert not (tmp_path / "out").exists()


def test_export_of_a_dataset_path_says_to_open_it_first(exported: tuple[Dataset, Path], tmp_path: Path) -> None:
    ds, _ = exported
    with pytest.raises(
        OptionError,
        match=r"^export takes a Dataset or a Release, got '.*ds' \(open a dataset folder with "
        r"vidlabel\.Dataset\.open\(path\) first\)$",
    ):
        export(str(ds.path), tmp_path / "out", progress=False)
    with pytest.raises(OptionError, match=r"^export takes a Dataset or a Release, got 3$"):
        export(3, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("opener", [open_store, FrameStore, StoreFrames])
def test_a_store_is_opened_from_a_path_or_a_url_only(opener: object, exported: tuple[Dataset, Path]) -> None:
    ds, _ = exported
    for bad in (None, 3):
        with pytest.raises(OptionError, match=rf"^a frame store is opened from a folder path or a URL, got {bad}$"):
            opener(bad)  # type: ignore[operator]
    with pytest.raises(
        OptionError,
        match=r"^a frame store is opened from a folder path or a URL, got .*Dataset.* \(a Dataset is read through "
        r"a store: export it with vidlabel\.export\(ds, out\), then open out\)$",
    ):
        opener(ds)  # type: ignore[operator]
    with pytest.raises(
        OptionError,
        match=r"^a frame store is opened from a folder path or a URL, got .*Release.* \(a Release is read through "
        r"a store: export it with vidlabel\.export\(ds, out\), then open out\)$",
    ):
        opener(ds.release("latest"))  # type: ignore[operator]


def test_sample_flags_are_checked(exported: tuple[Dataset, Path]) -> None:
    ds, store = exported
    with pytest.raises(OptionError, match=r"^with_masks must be True or False, got 'no'$"):
        StoreFrames(store, with_masks="no")
    with pytest.raises(OptionError, match=r"^normalized must be True or False, got 1$"):
        StoreFrames(store, normalized=1)
    with pytest.raises(OptionError, match=r"^with_masks must be True or False, got 'no'$"):
        FrameSamples(ds, with_masks="no")
    with pytest.raises(OptionError, match=r"^normalized must be True or False, got 'yes'$"):
        FrameSamples(ds, normalized="yes")
    with pytest.raises(OptionError, match=r"^verify_checksums must be True or False, got 'off'$"):
        open_store(store, verify_checksums="off")
    with pytest.raises(OptionError, match=r"^shuffle must be True or False, got 'yes'$"):
        StoreStream(store, shuffle="yes")
    with pytest.raises(OptionError, match=r"^drop_last must be True or False, got None$"):
        StoreStream(store, drop_last=None)
    with pytest.raises(OptionError, match=r"^shuffle_videos must be True or False, got 'no'$"):
        VideoStream(FrameSamples(ds), shuffle_videos="no")
    assert StoreFrames(store, with_masks=np.bool_(True)).samples.with_masks is True


def test_import_clip_flag_is_checked(exported: tuple[Dataset, Path], tmp_path: Path) -> None:
    ds, _ = exported
    n = len(ds.annotations())
    (tmp_path / "gt.txt").write_text("1,1,10,10,20,20,1,-1,-1,-1\n")
    with pytest.raises(OptionError, match=r"^clip must be True or False, got 'no'$"):
        import_labels(ds, "mot", tmp_path / "gt.txt", video_id="cam", clip="no")
    assert len(ds.annotations()) == n


def test_frame_samples_takes_a_dataset_and_says_what_to_do_with_anything_else(
    exported: tuple[Dataset, Path],
) -> None:
    ds, store = exported
    with pytest.raises(
        OptionError,
        match=r"^FrameSamples takes a Dataset, got '.*ds' \(open a dataset folder with vidlabel\.Dataset\.open\(path\) "
        r"first\)$",
    ):
        FrameSamples(str(ds.path))
    release = ds.release("latest")
    with pytest.raises(
        OptionError,
        match=r"^FrameSamples takes a Dataset, got .* \(for a Release in hand: FrameSamples\.from_release\(release\)\)$",
    ):
        FrameSamples(release)
    with pytest.raises(OptionError, match=r"^FrameSamples takes a Dataset, got None$"):
        FrameSamples(None)
    with pytest.raises(OptionError, match=r"^FrameSamples takes a Dataset, got FrameStore\(.*\)$"):
        FrameSamples(open_store(store))
    assert len(FrameSamples.from_release(release)) == len(FrameSamples(ds)) > 0


def test_dataset_validate_flags_are_checked(exported: tuple[Dataset, Path]) -> None:
    ds, _ = exported
    for name in ("check_files", "hash_files", "for_export"):
        with pytest.raises(OptionError, match=rf"^{name} must be True or False, got 'no'$"):
            ds.validate(**{name: "no"})
    assert ds.validate(for_export=np.bool_(True)) == []


def test_cli_import_refuses_an_option_that_has_a_flag_of_its_own(
    exported: tuple[Dataset, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: clip=false reached import_labels twice, a TypeError traceback ("got multiple values for 'clip'")
    from vidlabel.cli import main

    ds, _ = exported
    n = len(ds.annotations())
    (tmp_path / "gt.txt").write_text("1,1,10,10,20,20,1,-1,-1,-1\n")
    for option, flag in (("clip=false", r"--no-clip \(clipping is the default\)"), ("dry_run=true", "--dry-run")):
        key = option.split("=")[0]
        args = ["import", str(ds.path), "mot", str(tmp_path / "gt.txt"), "--video", "cam", "--option", option]
        assert main(args) == 1
        out, err = capsys.readouterr()
        assert out == "" and re.fullmatch(
            rf"vidlabel: error: --option {key}=\.\.\. is set by a flag of its own here: use {flag}\n", err
        ), err
    assert len(ds.annotations()) == n
