"""Zarr stores at a URL (object stores): read, and written straight by an export (no rename there).

Frames units live at ``units/<frames key>/`` (their ``zarr.json`` with ``complete`` written last) and each video
group points to its unit with a ``frames_unit`` attribute; writes are create-only or conditional
(:class:`~vidlabel.store._remote.ObjectStore`), so of two exporters on one URL one publishes.
"""

from __future__ import annotations

import functools
import math
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from vidlabel.errors import OptionError, StoreCorruptError, StoreError, StoreLockedError
from vidlabel.store._backend import (
    Backend,
    FramesReader,
    FramesWriter,
    VideoReader,
    node_name,
    node_video_id,
)
from vidlabel.store._codecs import Codec
from vidlabel.store._fs import (
    refuse_overdeclared,
)
from vidlabel.store._layout import index_rows
from vidlabel.store._remote import ObjectStore, StoreConflict, is_url, parse_json
from vidlabel.store._zarr import (
    UNITS,
    _array_objects,
    _declared_bytes,
    _decode_small,
    _frames_layout,
    _frames_meta,
    _is_small,
    _meta_bytes,
    _open_large_array,
    _recorded_id,
    _small_chunk_key,
    damaged_group,
)

__all__ = ["ZarrURLBackend"]


def _url_array(store: ObjectStore, group: str, name: str, video_id: str) -> np.ndarray:
    """Array ``name`` of the video group at key ``group``, whole (small ones straight from their chunk,
    others through Zarr)."""
    key = f"{group}/{name}"
    meta = store.get_json(f"{key}/zarr.json")
    if meta is None or meta.get("node_type") != "array":
        raise StoreError(
            f"no Zarr array {name!r} in video {video_id!r} at {store.url_of(key)!r}",
            path=store.url_of(key),
            video_id=video_id,
        )
    if not _is_small(meta, store.url_of(key)):
        return _read_large_url_array(store, key, meta)
    size = math.prod(meta["shape"])
    data = store.get(f"{key}/{_small_chunk_key(meta['shape'])}") if size else None
    return _decode_small(meta, data, store.url_of(key))


def _read_large_url_array(store: ObjectStore, key: str, meta: dict[str, Any]) -> np.ndarray:
    """The multi-chunk array at ``key`` (checked ``meta``; one vidlabel did not write, e.g. rewritten with
    zarr-python), whole, through Zarr, which allocates its declared shape (chunks never written read as the fill
    value): refused first, as in a local store (:func:`_read_array`), when it declares more than 1024 times the
    bytes of its objects, which are listed, not read.

    Raises
    ------
    StoreCorruptError
        Naming the array's URL, its declared shape and both sizes.
    """
    where = store.url_of(key)
    refuse_overdeclared(
        f"Zarr array {where!r} declares shape {meta['shape']} {meta['data_type']}", _declared_bytes(meta),
        sum(store.sizes(key).values()), "its objects hold", where,
    )  # fmt: skip
    return np.asarray(_open_large_array(where, store.storage_options)[...])


class ZarrURLFramesReader(FramesReader):
    """Chunks of a ``frames`` array fetched from an object store (:class:`~vidlabel.store._remote.ObjectStore`)."""

    backend = "zarr"

    def __init__(self, store: ObjectStore, key: str, meta: dict[str, Any], video_id: str) -> None:
        shape, chunk_frames, codec, attrs = _frames_layout(meta, store.url_of(key))
        super().__init__(shape, chunk_frames, codec)
        self.store = store
        self.key = key
        self.attrs = attrs
        self.unit_key = attrs.get("key")
        self.video_id = video_id
        self.path = store.url_of(key)  # identity in cache keys, and messages
        self._pending: dict[int, bytes | None] = {}

    def stored_checksums(self) -> np.ndarray:
        return _url_array(self.store, self.key.rpartition("/")[0], "frames_crc32c", self.video_id)

    def _chunk_key(self, index: int) -> str:
        return f"{self.key}/c.{index}.0.0.0"

    def chunk_file(self, index: int) -> str:
        return self.store.url_of(self._chunk_key(index))

    def prefetch(self, indices: Iterable[int]) -> None:
        """Fetch chunks ``indices`` concurrently now; the next :meth:`raw_chunk` of each takes its bytes."""
        wanted = [int(i) for i in indices if 0 <= int(i) < self.n_chunks]
        got = self.store.get_many(self._chunk_key(i) for i in wanted)
        self._pending = {i: got[self._chunk_key(i)] for i in wanted}

    def raw_chunk(self, index: int) -> bytes:
        data = self._pending.pop(index, b"") if index in self._pending else self.store.get(self._chunk_key(index))
        if not data:
            first = index * self.chunk_frames
            rows = f"rows {first}..{first + max(1, self.chunk_rows(index)) - 1}"
            absent = self.store.absent_from_process()
            # a complete unit's every chunk was written before its ``complete``: one missing is damage, unless
            # this process cannot see the store at all (a memory:// store in another process)
            damaged = absent is None and self.attrs.get("complete") is True
            raise (StoreCorruptError if damaged else StoreError)(
                f"chunk {index} ({rows}) of video {self.video_id!r} is missing at {self.store.url_of(self._chunk_key(index))!r}"
                + ("" if absent is None else f": {absent}"),
                path=self.path,
                video_id=self.video_id,
            )
        return data


class ZarrURLVideoReader(VideoReader):
    """A video group read from an object store; :meth:`preload` fetches its small arrays in two round trips."""

    def __init__(self, store: ObjectStore, key: str, attrs: dict[str, Any], video_id: str) -> None:
        self.store = store
        self.key = key
        self.attrs = attrs
        self.video_id = video_id
        self._arrays: dict[str, np.ndarray] = {}

    def preload(self, names: Iterable[str]) -> None:
        names = [n for n in names if n not in self._arrays]
        keys = {n: self._array_key(n) for n in names}
        got = self.store.get_many_json(f"{keys[n]}/zarr.json" for n in names)
        metas = {n: got[f"{keys[n]}/zarr.json"] for n in names}
        small = {
            n: m
            for n, m in metas.items()
            if m and m.get("node_type") == "array" and _is_small(m, self.store.url_of(keys[n]))
        }
        chunk_keys = {n: f"{keys[n]}/{_small_chunk_key(m['shape'])}" for n, m in small.items()}
        chunks = self.store.get_many(k for n, k in chunk_keys.items() if math.prod(small[n]["shape"]) > 0)
        for n, m in small.items():
            self._arrays[n] = _decode_small(m, chunks.get(chunk_keys[n]), self.store.url_of(keys[n]))

    def array(self, name: str) -> np.ndarray:
        if name in self._arrays:
            return self._arrays.pop(name)
        key = self._array_key(name)
        group = key[: -len(name) - 1]  # the video group, or the frames unit that holds its frames
        return _url_array(self.store, group, name, self.video_id)

    def _array_key(self, name: str) -> str:
        unit = self.attrs.get("frames_unit")
        if isinstance(unit, str) and name in ("frames", "frames_crc32c") and _safe_unit_key(unit):
            return f"{unit}/{name}"  # exported straight into the object store: the frames unit's own arrays
        return f"{self.key}/{name}"

    def frames(self) -> ZarrURLFramesReader:
        key = self._array_key("frames")
        meta = self.store.get_json(f"{key}/zarr.json")
        if meta is None:
            raise StoreError(
                f"video {self.video_id!r} has no Zarr frames array at {self.store.url_of(key)!r}",
                path=self.store.url_of(key),
                video_id=self.video_id,
            )
        return ZarrURLFramesReader(self.store, key, meta, self.video_id)


def _safe_unit_key(unit: str) -> bool:
    """True for a group's ``frames_unit`` that names a unit of this store (``units/<key>``, nothing else)."""
    head, _, key = unit.partition("/")
    return head == UNITS and bool(key) and all(c in "0123456789abcdef" for c in key)


class ZarrURLFramesWriter(FramesWriter):
    """Writes a frames unit straight into an object store, at ``units/<key>/``: every object create-only.

    Each chunk is one PUT of its whole bytes (never a read-modify-write), under a key that depends only on
    what its pixels depend on, so two attempts at one unit (an engine that runs a task twice, a zombie
    worker) write the same bytes to the same keys and the second finds them there. The unit's group
    ``zarr.json`` with ``complete`` is written last: until then no reader or exporter takes the unit as
    done. Chunk PUTs run on a few threads, at most ``in_flight`` waiting.
    """

    backend = "zarr"

    def __init__(
        self, store: ObjectStore, key: str, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec,
        attrs: dict[str, Any], *, threads: int = 4, in_flight: int = 8,
    ) -> None:  # fmt: skip
        from concurrent.futures import ThreadPoolExecutor

        self.store = store
        self.prefix = f"{UNITS}/{key}"
        self.attrs = {**attrs, "key": key, "codec": codec.spec, "chunk_frames": chunk_frames}
        self.meta = _frames_meta(shape, chunk_frames, codec, dict(self.attrs))
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=f"vidlabel-put-{key[:8]}")
        self._slots = threading.BoundedSemaphore(in_flight)
        self._futures: list[Any] = []

    def _put(self, key: str, data: bytes) -> None:
        try:
            self.store.put_new(key, data)  # False: an earlier attempt wrote these very bytes
        finally:
            self._slots.release()

    def _submit(self, key: str, data: bytes) -> None:
        for fut in [f for f in self._futures if f.done()]:
            self._futures.remove(fut)
            fut.result()  # the first failed PUT stops the unit
        self._slots.acquire()
        self._futures.append(self._pool.submit(self._put, key, data))

    def _wait(self) -> None:
        futures, self._futures = self._futures, []
        for fut in futures:
            fut.result()

    def write_chunk(self, index: int, data: bytes | np.ndarray) -> None:
        payload = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
        self._submit(f"{self.prefix}/frames/c.{index}.0.0.0", payload)

    def commit(self, *, frame_number: np.ndarray, crc32c: np.ndarray) -> None:
        try:
            self._wait()
            for name, arr in (
                ("frame_number", np.asarray(frame_number, dtype=np.int64)),
                ("frames_crc32c", np.asarray(crc32c, dtype=np.uint32)),
            ):
                for sub, data in _array_objects(arr).items():
                    self._submit(f"{self.prefix}/{name}/{sub}", data)
            meta = {**self.meta, "attributes": {**self.meta["attributes"], "complete": True}}
            self._submit(f"{self.prefix}/frames/zarr.json", _meta_bytes(meta))
            self._wait()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
        group = {"zarr_format": 3, "node_type": "group", "attributes": {**self.attrs, "complete": True}}
        self.store.put_new(f"{self.prefix}/zarr.json", _meta_bytes(group))  # published: complete last

    def abort(self) -> None:
        # what was written stays: the same bytes a rerun writes; the export's end deletes unused units
        self._pool.shutdown(wait=True, cancel_futures=True)


class ZarrURLBackend(Backend):
    """A Zarr store at an fsspec URL: read, and written straight into the object store by an export.

    Parameters
    ----------
    url : str
        The store's URL (``s3://bucket/store``, ``file:///data/store``, ``memory://store``, ...).
    storage_options : mapping, optional
        Keyword arguments of the fsspec filesystem.

    Notes
    -----
    Writing needs conditional writes (:meth:`ObjectStore.conditional_kind`: S3 and S3-compatible servers,
    ``memory://``, ``file://``). An export's objects:

    - ``units/<frames_key>/`` a frames unit (``frames``, ``frames_crc32c``, ``frame_number``), every object
      created only if absent, its group ``zarr.json`` (``complete``) last (:class:`ZarrURLFramesWriter`);
    - ``videos/<id>/`` the video group: its small arrays, then its ``zarr.json`` with ``complete`` and
      ``frames_unit: "units/<frames_key>"`` (readers take ``frames`` and ``frames_crc32c`` from there:
      an object store has no rename or link to put them under the group);
    - ``zarr.json`` the root: rewritten at the start with ``complete: false`` and a fresh ``export_token``,
      conditionally (If-Match on the tag of the root read, or create-only), so of two exports starting at
      once one fails; at the end, after ``index``, written with ``complete: true`` If-Match on the tag of
      that start root, so an export whose root was taken over by another cannot publish.
    """

    name = "zarr"

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.store = ObjectStore(url, storage_options)
        self.url = self.store.url
        self._strays: list[str] = []
        self.folder = self.url  # type: ignore[assignment]  # a URL, not a Path: used in messages only
        self._tag: str | None = None  # tag of the root this export wrote (None: it wrote none yet)
        self._token = ""

    @classmethod
    def detect(cls, folder: Path) -> bool:
        if not is_url(str(folder)):
            return False
        meta = ObjectStore(str(folder)).get_json("zarr.json")
        return bool(meta and meta.get("node_type") == "group" and meta.get("attributes", {}).get("format"))

    def read_root(self) -> tuple[dict[str, Any], np.ndarray]:
        got = self.store.get_many_json(["zarr.json", "index/zarr.json"])
        meta = got["zarr.json"]
        if meta is None:
            absent = self.store.absent_from_process()
            if absent is not None:
                raise StoreError(f"no vidlabel frame store at {self.url!r}: {absent}", path=self.url)
            return {}, np.zeros((0, 2), np.int64)
        index = np.zeros((0, 2), np.int64)
        index_meta = got["index/zarr.json"]
        if index_meta is not None:
            index = index_rows(self._index(index_meta), self.url)
        return dict(meta.get("attributes", {})), index

    def _index(self, meta: dict[str, Any]) -> np.ndarray:
        if not _is_small(meta, self.store.url_of("index")):
            return _read_large_url_array(self.store, "index", meta)
        data = self.store.get(f"index/{_small_chunk_key(meta['shape'])}") if math.prod(meta["shape"]) else None
        return _decode_small(meta, data, self.store.url_of("index"))

    # -- writing: the root ------------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Raise :class:`~vidlabel.errors.OptionError` if this URL has no conditional writes (an export needs them)."""
        if self.store.conditional_kind() is None:
            raise OptionError(
                f"cannot export to {self.url!r}: exporting straight into an object store needs conditional writes "
                "(create-only and If-Match), which vidlabel does on s3:// (and S3-compatible servers), file:// "
                f"and memory://; export to a local folder with format='zarr' and upload it: `vidlabel upload OUT {self.url}`"
            )

    def _conflict(self, what: str) -> StoreLockedError:
        return StoreLockedError(
            f"frame store {self.url!r}: {what}: another export is writing it (its root changed since this export "
            "read it); one export at a time: this one stops without publishing (the other's result stands; "
            "rerun once it has finished to resume)",
            path=self.url,
        )

    def _root_bytes(self, attrs: dict[str, Any], complete: bool) -> bytes:
        attrs = {**attrs, "complete": complete}
        if not complete:
            attrs["export_token"] = self._token  # two exports' roots never have the same bytes (or ETag)
        else:
            attrs.pop("export_token", None)
        return _meta_bytes({"zarr_format": 3, "node_type": "group", "attributes": attrs})

    def mark_incomplete(self, attrs: dict[str, Any]) -> None:
        if self._tag is None:  # the export starts: take the root over, conditionally
            self.check_writable()
            _data, tag = self.store.get_tagged("zarr.json")
            self._token = uuid.uuid4().hex
            try:
                self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, False), tag)
            except StoreConflict as err:
                raise self._conflict("starting an export") from err
            for group in ("videos", UNITS):
                self.store.put_new(f"{group}/zarr.json", _meta_bytes(_GROUP))
            return
        try:
            self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, False), self._tag)
        except StoreConflict as err:
            raise self._conflict("marking it incomplete") from err

    def check_owner(self, what: str) -> None:
        """Raise :class:`StoreLockedError` if another export took the root over since this one started."""
        if self._tag is not None and self.store.get_tagged("zarr.json")[1] != self._tag:
            raise self._conflict(what)

    def write_root(self, attrs: dict[str, Any], index: np.ndarray, video_ids: list[str], videos: Any = None) -> None:
        if self._tag is None:
            raise StoreError(f"frame store {self.url!r}: the root is written by an export that marked it first")
        self.check_owner("publishing the root")
        missing = [v for v in video_ids if (self.video_attrs(v) or {}).get("complete") is not True]
        if missing:
            raise StoreError(f"frame store {self.url!r}: video groups {missing[:5]} are not published; not publishing")
        index_objects = _array_objects(np.asarray(index, dtype=np.int64).reshape(-1, 2))
        self.store.put_many({f"index/{k}": v for k, v in index_objects.items()})
        try:
            self._tag = self.store.put_if("zarr.json", self._root_bytes(attrs, True), self._tag)
        except StoreConflict as err:
            raise self._conflict("publishing the root") from err

    # -- writing: frames units ----------------------------------------------------------------------------------

    def discard_unit(self, key: str) -> None:
        self.store.delete([f"{UNITS}/{key}/zarr.json"])  # no longer complete, then gone
        self.store.delete_prefix(f"{UNITS}/{key}")

    def unit_published(self, key: str, video_id: str | None = None) -> bool:
        meta = self.store.get_json(f"{UNITS}/{key}/zarr.json")
        return bool(meta and meta.get("attributes", {}).get("complete") is True)

    def frames_units(self) -> dict[str, dict[str, Any]]:
        self.store.refresh()
        names = [n for n in self.store.list_dirs(UNITS) if _safe_unit_key(f"{UNITS}/{n}")]
        got = self.store.get_many_json(f"{UNITS}/{n}/zarr.json" for n in names)
        out = {}
        for n in names:
            attrs = (got[f"{UNITS}/{n}/zarr.json"] or {}).get("attributes", {})
            if attrs.get("complete") is True and attrs.get("key") == n:
                out[n] = dict(attrs)
        return out

    def open_frames_unit(self, key: str) -> FramesReader:
        prefix = f"{UNITS}/{key}/frames"
        meta = self.store.get_json(f"{prefix}/zarr.json")
        if meta is None or not self.unit_published(key):
            raise StoreError(f"frame store {self.url!r} has no frames unit {key!r}", path=self.url)
        return ZarrURLFramesReader(self.store, prefix, meta, str(meta.get("attributes", {}).get("video_id", key)))

    def unit_frame_number(self, key: str) -> np.ndarray:
        return self._unit_array(key, "frame_number").astype(np.int64)

    def _unit_array(self, key: str, name: str) -> np.ndarray:
        prefix = f"{UNITS}/{key}/{name}"
        meta = self.store.get_json(f"{prefix}/zarr.json")
        if meta is None:
            raise StoreError(f"frame store {self.url!r} has no frames unit {key!r}", path=self.url)
        size = math.prod(meta["shape"])
        data = self.store.get(f"{prefix}/{_small_chunk_key(meta['shape'])}") if size else None
        return _decode_small(meta, data, self.store.url_of(prefix))

    def frames_writer(
        self, key: str, *, shape: tuple[int, int, int, int], chunk_frames: int, codec: Codec, attrs: dict[str, Any]
    ) -> FramesWriter:
        self.check_writable()
        return ZarrURLFramesWriter(self.store, key, shape, chunk_frames, codec, attrs)

    # -- videos ------------------------------------------------------------------------------------------------

    def _video_key(self, video_id: str) -> str:
        return f"videos/{node_name(video_id)}"

    def video_ids(self) -> list[str]:
        self.store.refresh()
        names = self.store.list_dirs("videos")
        # an object key with a '', '.' or '..' part is no part of a store (keys never leave it): listed, not read
        self._strays = [f"videos/{n}/" for n in names if n in ("", ".", "..")]
        names = [n for n in names if n not in ("", ".", "..")]
        keys = {n: f"videos/{n}/zarr.json" for n in names}
        got = self.store.get_many(keys.values())
        metas = {n: parse_json(got[key], self.store.url_of(key)) for n, key in keys.items() if got[key] is not None}
        found = (node_video_id(n, functools.partial(_recorded_id, meta)) for n, meta in metas.items())
        return sorted(v for v in found if v is not None)

    def video_attrs(self, video_id: str) -> dict[str, Any] | None:
        meta = self.store.get_json(f"{self._video_key(video_id)}/zarr.json")
        return None if meta is None else dict(meta.get("attributes", {}))

    def write_video(
        self, video_id: str, *, attrs: dict[str, Any], arrays: dict[str, np.ndarray], frames_key: str
    ) -> None:
        if not self.unit_published(frames_key):
            raise StoreError(
                f"frame store {self.url!r}: frames unit {frames_key!r} of video {video_id!r} is missing",
                path=self.url,
                video_id=video_id,
            )
        self.check_owner(f"publishing video {video_id!r}")
        key = self._video_key(video_id)
        self.store.delete([f"{key}/zarr.json"])  # no reader takes the old group for the new one meanwhile
        objects: dict[str, bytes] = {}
        for sub in {name.rpartition("/")[0] for name in arrays if "/" in name}:
            objects[f"{key}/{sub}/zarr.json"] = _meta_bytes(_GROUP)
        for name, arr in arrays.items():
            objects.update({f"{key}/{name}/{k}": v for k, v in _array_objects(arr).items()})
        self.store.put_many(objects)
        group_attrs = {k: v for k, v in attrs.items() if k != "complete"}
        group_attrs.update({"frames_unit": f"{UNITS}/{frames_key}", "complete": True})
        group = {"zarr_format": 3, "node_type": "group", "attributes": group_attrs}
        self.store.put(f"{key}/zarr.json", _meta_bytes(group))  # after its arrays

    def stray_keys(self) -> list[str]:
        return list(self._strays)

    def open_video(self, video_id: str) -> ZarrURLVideoReader:
        key = self._video_key(video_id)
        data = self.store.get(f"{key}/zarr.json")
        meta = parse_json(data, self.store.url_of(f"{key}/zarr.json"))
        if data is not None and meta is None:
            raise damaged_group(self.url, video_id, self.store.url_of(f"{key}/zarr.json"))
        if meta is None:
            absent = self.store.absent_from_process()
            raise StoreError(
                f"frame store {self.url!r} has no group for video {video_id!r} ({self.store.url_of(key)})"
                + ("" if absent is None else f": {absent}"),
                path=self.url,
                video_id=video_id,
            )
        return ZarrURLVideoReader(self.store, key, dict(meta.get("attributes", {})), video_id)

    def remove_video(self, video_id: str) -> None:
        self.store.delete_prefix(self._video_key(video_id))

    def collect_garbage(self, keep_units: set[str]) -> None:
        self.store.refresh()
        for name in self.store.list_dirs(UNITS):
            if name not in keep_units and _safe_unit_key(f"{UNITS}/{name}"):
                self.store.delete_prefix(f"{UNITS}/{name}")

    def size_on_disk(self) -> int:
        return self.store.total_size()


_GROUP: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": {}}
