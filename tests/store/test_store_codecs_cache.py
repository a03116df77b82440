"""Frame codecs (parsing, exact round trips, jpeg tolerance) and the byte-bounded LRU chunk cache."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidlabel.errors import OptionError, StoreError
from vidlabel.store import CODECS, DEFAULT_CODEC, ChunkCache, get_codec


def picture(h: int = 32, w: int = 48, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    return np.clip((x * 3 + y * 2)[..., None] + rng.normal(0, 3, (h, w, 3)) + 40, 0, 255).astype(np.uint8)


def test_parse_codecs() -> None:
    assert get_codec(None).spec == DEFAULT_CODEC and get_codec(None).lossless
    assert get_codec("zstd").spec == "zstd:1" and get_codec("ZSTD:5").level == 5
    assert get_codec("jpeg").spec == "jpeg:90" and not get_codec("jpeg").lossless
    assert get_codec("png").per_frame and not get_codec("lz4").per_frame
    with pytest.raises(OptionError, match=r"unknown codec 'webp'; allowed: none, lz4, zstd, gzip, png, jpeg"):
        get_codec("webp")
    with pytest.raises(OptionError, match=r"quality of codec 'jpeg' must be an integer in \[1, 100\], got '0'"):
        get_codec("jpeg:0")
    with pytest.raises(OptionError, match=r"codec 'lz4' takes no level"):
        get_codec("lz4:3")
    with pytest.raises(OptionError, match=r"codec must be a string"):
        get_codec(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["hdf5", "zarr"])
@pytest.mark.parametrize("name", CODECS)
def test_codec_round_trip(name: str, backend: str) -> None:
    codec = get_codec(name)
    n = 1 if codec.per_frame else 3
    chunk = np.stack([picture(seed=k) for k in range(n)])
    data = codec.encode(chunk, backend)
    out = np.empty_like(chunk)
    codec.decode(data, out, backend)
    if codec.lossless:
        np.testing.assert_array_equal(out, chunk)
    else:  # jpeg q90 on a smooth noisy picture: a few levels
        assert np.abs(out.astype(int) - chunk).mean() < 3


def test_codec_errors() -> None:
    with pytest.raises(StoreError, match=r"codec 'jpeg' stores one picture per chunk; got a chunk of 2 frames"):
        get_codec("jpeg").encode(np.zeros((2, 8, 8, 3), np.uint8), "hdf5")
    with pytest.raises(StoreError, match=r"cannot decode a none chunk of shape \(1, 8, 8, 3\)"):
        get_codec("none").decode(b"short", np.zeros((1, 8, 8, 3), np.uint8), "hdf5")
    with pytest.raises(StoreError, match=r"cannot decode a gzip:1 chunk"):
        get_codec("gzip").decode(b"not gzip", np.zeros((1, 8, 8, 3), np.uint8), "zarr")


def test_lz4_incompressible_chunk_is_stored_raw() -> None:
    chunk = np.random.default_rng(1).integers(0, 256, (1, 16, 16, 3), dtype=np.uint8)
    data = get_codec("lz4").encode(chunk, "hdf5")
    assert len(data) == chunk.nbytes + 16
    out = np.empty_like(chunk)
    get_codec("lz4").decode(data, out, "hdf5")
    np.testing.assert_array_equal(out, chunk)


def test_cache_lru_order_and_readonly() -> None:
    cache = ChunkCache(300)
    a, b, c = (np.zeros(100, np.uint8) + k for k in range(3))
    for key, arr in zip("abc", (a, b, c)):
        cache.put(key, arr)
    assert cache.get("a") is a and not a.flags.writeable
    cache.put("d", np.zeros(100, np.uint8))  # evicts b, the least recently used
    assert "b" not in cache and "a" in cache and cache.nbytes == 300
    assert cache.get("b") is None and cache.hits == 1 and cache.misses == 1
    big = np.zeros(1000, np.uint8)
    cache.put("big", big)  # larger than the bound: held alone
    assert len(cache) == 1 and cache.nbytes == 1000
    cache.clear()
    assert len(cache) == 0 and cache.nbytes == 0
    with pytest.raises(OptionError, match=r"cache_bytes must be an integer >= 0, got -1"):
        ChunkCache(-1)
    assert ChunkCache(0).put("x", a) is a and len(ChunkCache(0)) == 0


@settings(max_examples=60, deadline=None)
@given(
    max_bytes=st.integers(0, 5000),
    ops=st.lists(st.tuples(st.integers(0, 12), st.integers(1, 2500), st.booleans()), max_size=60),
)
def test_cache_never_holds_more_than_bound_plus_one_chunk(max_bytes: int, ops: list[tuple[int, int, bool]]) -> None:
    cache = ChunkCache(max_bytes)
    largest = 0
    for key, size, read in ops:
        if read:
            got = cache.get(key)
            assert got is None or got.nbytes > 0
        else:
            cache.put(key, np.zeros(size, np.uint8))
            largest = max(largest, size)
        assert cache.nbytes <= max_bytes + largest
        assert cache.nbytes == sum(cache._items[k].nbytes for k in cache._items)
        if len(cache) > 1:
            assert cache.nbytes <= max_bytes
