"""Codecs are classes registered by name: a codec defined outside vidlabel (tests/store/toy_codec.py) and
registered in one line is chosen by ``export(codec=...)``, written by both backends and read back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.media import read_frame_number
from tests.store.toy_codec import XorCodec
from tests.store_support import make_dataset, reference_frames
from vidlabel import export, open_store
from vidlabel.errors import OptionError
from vidlabel.store import CODECS, get_codec
from vidlabel.store._codecs import _base, codec_names, register_codec


@pytest.fixture
def xor_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))
    register_codec(XorCodec)


def test_an_unregistered_codec_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(OptionError, match=r"unknown codec 'xor'; allowed: none, lz4, zstd, gzip, png, jpeg"):
        get_codec("xor")


def test_the_shipped_codecs_are_the_registry_in_order() -> None:
    assert CODECS == codec_names() == ("none", "lz4", "zstd", "gzip", "png", "jpeg")
    assert all(get_codec(name).name == name for name in CODECS)


def test_a_name_registered_twice_is_refused(xor_registered: None) -> None:
    class Other(XorCodec):
        pass

    with pytest.raises(OptionError, match=r"codec 'xor' is registered already \(XorCodec\)"):
        register_codec(Other)
    register_codec(XorCodec)  # the same class again: nothing changes
    assert codec_names()[-1] == "xor"


def test_a_codec_name_must_be_one_lower_case_word() -> None:
    class Bad(XorCodec):
        name = "Xor:1"

    with pytest.raises(OptionError, match=r"a codec name is a lower-case word without ':', got 'Xor:1'"):
        register_codec(Bad)


def test_a_registered_codec_takes_no_level_unless_it_declares_a_range(xor_registered: None) -> None:
    assert get_codec("XOR") == XorCodec() and get_codec("xor").spec == "xor"
    with pytest.raises(OptionError, match=r"codec 'xor' takes no level, got 'xor:3'"):
        get_codec("xor:3")


@pytest.mark.parametrize("store_format", ["hdf5", "zarr"])
def test_a_registered_codec_round_trips_through_an_export(
    tmp_path: Path, xor_registered: None, store_format: str
) -> None:
    ds = make_dataset(tmp_path / "w", n_frames=6)
    out = tmp_path / "store"
    export(ds, out, format=store_format, codec="xor", frames="all", progress=False)
    reference = reference_frames(tmp_path / "w", "cam")
    store = open_store(out)
    sel = store.select()
    images = [sel.sample(j)["image"] for j in range(len(sel))]
    assert [read_frame_number(im) for im in images] == list(range(6))
    np.testing.assert_array_equal(np.stack(images), np.stack(reference))
    # the stored bytes are the codec's, not the pixels: chunk 0 is frame 0 XOR 0x5A
    if store_format == "hdf5":
        (unit,) = (out / "frames").glob("*.h5")
        with h5py.File(unit, "r") as f:
            assert json.loads(f.attrs["codec"]) == "xor"
            assert f["frames"].id.get_create_plist().get_filter(0)[0] == 309
            _, raw = f["frames"].id.read_direct_chunk((0, 0, 0, 0))
    else:
        frames = out / "videos" / "cam" / "frames"
        assert json.loads((frames / "zarr.json").read_text())["codecs"] == [{"name": "test.xor", "configuration": {}}]
        raw = (frames / "c.0.0.0.0").read_bytes()
    assert np.array_equal(np.frombuffer(raw, np.uint8), (reference[0] ^ 0x5A).reshape(-1))
