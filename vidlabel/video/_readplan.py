"""ReadPlan: any list of requested frames, arranged so each keyframe interval is decoded once.

Spec: "Reading a list of frames you chose: ReadPlan". The requests of one
video are grouped by keyframe interval into :class:`Chunk` objects; inside a
chunk the distinct frames are read in increasing order, and a frame requested
``k`` times is decoded once and yields ``k`` samples. Chunks (not frames) are
what gets shuffled each epoch and split between workers and ranks. The plan
depends only on the requests, the frame indexes, ``seed``, ``block`` and the
epoch, so the same inputs give the same order on any machine (NumPy's PCG64
generator seeded with ``(seed, epoch)``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.errors import FrameOutOfRangeError, OptionError, check_flag
from vidlabel.spec import FrameIndex

__all__ = ["Chunk", "ReadPlan", "epoch_rng", "shuffled"]

# Distinguishes the random streams drawn from one (seed, epoch): chunk order, video order, shuffle buffers.
STREAM_CHUNK_ORDER = 0
STREAM_VIDEO_ORDER = 1
STREAM_SHUFFLE_BUFFER = 2


def check_nonneg_int(value: Any, name: str) -> int:
    """``value`` as an int; OptionError unless it is a non-negative integer (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise OptionError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an int; OptionError unless it is an integer >= 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise OptionError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_shards(shard: int | None, num_shards: int) -> None:
    """OptionError unless ``num_shards`` is an integer >= 1 and ``shard`` (unless None) lies in ``[0, num_shards)``."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
        raise OptionError(f"num_shards must be an integer >= 1, got {num_shards!r}")
    if shard is not None and (
        isinstance(shard, bool) or not isinstance(shard, (int, np.integer)) or not 0 <= shard < num_shards
    ):
        raise OptionError(f"shard {shard!r} out of range [0, {num_shards})")


def check_world(num_shards: int, world_size: int) -> int:
    """``world_size`` as an int; OptionError unless it is an integer >= 1 that divides ``num_shards``."""
    if isinstance(world_size, bool) or not isinstance(world_size, (int, np.integer)) or world_size < 1:
        raise OptionError(f"world_size must be an integer >= 1, got {world_size!r}")
    if num_shards % world_size:
        raise OptionError(
            f"num_shards {num_shards} must be world_size {world_size} x the DataLoader workers of each rank"
        )
    return int(world_size)


def _int_column(value: Any, name: str) -> np.ndarray:
    """``value`` (an array-like of integers, 1-D) as an int64 array; OptionError on another dtype or shape."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise OptionError(f"{name} must be a 1-D array of integers, got an array of shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        first = arr.reshape(-1)[:1].tolist()[0]
        raise OptionError(
            f"{name} must be a 1-D array of integers, got dtype {arr.dtype} (first value {first!r}); "
            "frame numbers and codes are never rounded"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise OptionError(f"{name} holds {int(arr.max())}, beyond int64")
    return arr.astype(np.int64)


def epoch_rng(seed: int, epoch: int, stream: int, *extra: int) -> np.random.Generator:
    """The deterministic generator for one purpose of one epoch.

    Parameters
    ----------
    seed, epoch : int
        Non-negative integers.
    stream : int
        Which random stream (chunk order, video order, shuffle buffer).
    *extra : int
        Further non-negative integers mixed in (e.g. the shard number).

    Returns
    -------
    numpy.random.Generator
        PCG64 seeded by ``SeedSequence([seed, epoch, stream, *extra])``: the
        same numbers on every platform.

    Raises
    ------
    OptionError
        If ``seed`` or ``epoch`` is not a non-negative integer.
    """
    entropy = [check_nonneg_int(seed, "seed"), check_nonneg_int(epoch, "epoch"), int(stream), *map(int, extra)]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def samples_per_rank(total: int, world_size: int, drop_last: bool) -> int:
    """Samples each of ``world_size`` ranks yields in an epoch of ``total``: ``ceil(total / world_size)``
    (the last rank's part wraps to the start of the order, as ``DistributedSampler`` pads by repeating), or
    ``floor`` with ``drop_last``. Every rank the same, so every rank runs the same number of batches."""
    return total // world_size if drop_last else -(-total // world_size)


def worker_span(per_rank: int, worker: int, workers: int) -> tuple[int, int]:
    """``[lo, hi)``: the contiguous part of a rank's ``per_rank`` samples that DataLoader worker ``worker`` of
    ``workers`` yields. Sizes depend on ``per_rank`` alone (they differ by at most one), so worker ``w``
    yields as many samples on every rank."""
    base, extra = divmod(per_rank, workers)
    lo = worker * base + min(worker, extra)
    return lo, lo + base + (1 if worker < extra else 0)


def shuffled(items: Iterable[Any], buffer_size: int, rng: np.random.Generator) -> Iterator[Any]:
    """Mix a stream through a buffer of ``buffer_size`` items (0 or 1: unchanged order).

    Each incoming item replaces a uniformly drawn item of the full buffer,
    which is yielded; the remainder is yielded in random order at the end.
    Every item comes out exactly once.
    """
    if buffer_size <= 1:
        yield from items
        return
    buf: list[Any] = []
    for item in items:
        if len(buf) < buffer_size:
            buf.append(item)
            continue
        j = int(rng.integers(buffer_size))
        out, buf[j] = buf[j], item
        yield out
    for j in rng.permutation(len(buf)):
        yield buf[int(j)]


@dataclass(frozen=True, eq=False)
class Chunk:
    """The requests of one keyframe interval of one video: one sequential decode.

    Attributes
    ----------
    video_id : str
    interval : int
        Keyframe-interval number in the video (for a video without a frame
        index: block number, ``frame // block``).
    start_frame : int
        Where decoding starts: the interval's keyframe (or the block start).
    frames : (K,) int64
        The distinct requested frames, increasing.
    repeats : (K,) int64
        How many times each frame was requested (>= 1): the samples it yields.
    n_samples : int
        ``repeats.sum()``: samples this chunk yields.
    """

    video_id: str
    interval: int
    start_frame: int
    frames: np.ndarray
    repeats: np.ndarray
    n_samples: int

    @property
    def est_decoded_frames(self) -> int:
        """Frames decoded to read this chunk: from ``start_frame`` to its last frame, inclusive."""
        return int(self.frames[-1]) - self.start_frame + 1

    def __repr__(self) -> str:
        return (
            f"Chunk(video_id={self.video_id!r}, interval={self.interval}, frames={int(self.frames[0])}.."
            f"{int(self.frames[-1])} ({self.frames.size} distinct), n_samples={self.n_samples})"
        )


def _sorted_requests(
    video_ids: tuple[str, ...], codes: np.ndarray, frames: np.ndarray
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """The video ids sorted, and the requests' (video position in them, frame) sorted by video, then frame."""
    n = int(frames.size)
    # Videos in sorted order, so the plan does not depend on the order of first appearance.
    order_of_ids = sorted(range(len(video_ids)), key=lambda i: video_ids[i])
    rank = np.empty(len(video_ids), np.int64)
    rank[order_of_ids] = np.arange(len(video_ids))
    sorted_ids = tuple(video_ids[i] for i in order_of_ids)
    vcode = rank[codes] if n else codes
    # Sort requests by (video, frame); the interval follows the frame within a video.
    order = np.lexsort((frames, vcode)) if n else np.zeros(0, np.int64)
    return sorted_ids, vcode[order], frames[order]


def _intervals(
    sorted_ids: tuple[str, ...],
    sv: np.ndarray,
    sf: np.ndarray,
    indexes: Mapping[str, FrameIndex | None],
    block: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Each sorted request's keyframe interval and the frame decoding it starts from (blocks of ``block``
    frames in a video without an index); the bounds of each video's requests; the videos without an index.

    Raises
    ------
    FrameOutOfRangeError
        If a requested frame lies outside its video's index.
    """
    n = int(sf.size)
    si = np.empty(n, np.int64)
    ss = np.empty(n, np.int64)
    edges = np.searchsorted(sv, np.arange(len(sorted_ids) + 1))
    no_index: list[str] = []
    for v, video_id in enumerate(sorted_ids):
        a, b = int(edges[v]), int(edges[v + 1])
        if a == b:
            continue
        f = sf[a:b]
        index = indexes.get(video_id)
        lo, hi = int(f[0]), int(f[-1])
        if lo < 0 or (index is not None and hi >= index.frame_count):
            bad = lo if lo < 0 else hi
            limit = f"[0, {index.frame_count})" if index is not None else "[0, ...)"
            raise FrameOutOfRangeError(
                f"requested frame {bad} out of range {limit} in video {video_id!r}", video_id=video_id
            )
        if index is None or index.keyframes.size == 0:
            no_index.append(video_id)
            iv = f // block
            si[a:b] = iv
            ss[a:b] = iv * block
        else:
            iv = index.interval_of(f)
            si[a:b] = iv
            ss[a:b] = np.where(f < index.keyframes[0], 0, index.keyframes[iv])
    return si, ss, edges, no_index


def _chunks_of(
    sorted_ids: tuple[str, ...], sv: np.ndarray, sf: np.ndarray, si: np.ndarray, ss: np.ndarray
) -> tuple[tuple[Chunk, ...], int]:
    """The chunks of sorted requests (one per video and interval, repeats of a frame counted) and the
    number of distinct (video, frame) requests."""
    n = int(sf.size)
    new_frame = np.ones(n, bool)
    if n:
        new_frame[1:] = (sv[1:] != sv[:-1]) | (sf[1:] != sf[:-1])
    first = np.flatnonzero(new_frame)
    repeats = np.diff(np.append(first, n)).astype(np.int64)
    uv, uf, ui, us = sv[first], sf[first], si[first], ss[first]
    new_chunk = np.ones(first.size, bool)
    if first.size:
        new_chunk[1:] = (uv[1:] != uv[:-1]) | (ui[1:] != ui[:-1])
    bounds = np.append(np.flatnonzero(new_chunk), first.size)
    chunks = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        fr = uf[a:b].copy()
        rp = repeats[a:b].copy()
        fr.setflags(write=False)
        rp.setflags(write=False)
        chunks.append(
            Chunk(
                video_id=sorted_ids[int(uv[a])],
                interval=int(ui[a]),
                start_frame=int(us[a]),
                frames=fr,
                repeats=rp,
                n_samples=int(rp.sum()),
            )
        )
    return tuple(chunks), int(first.size)


def greedy_shards(order: Sequence[int], sizes: Sequence[int], num_shards: int) -> list[list[int]]:
    """In ``order``, each item goes to the shard with the fewest so far (ties: lowest shard); final sizes
    differ by at most one item's size."""
    shards: list[list[int]] = [[] for _ in range(num_shards)]
    heap = [(0, s) for s in range(num_shards)]
    for c in order:
        size, s = heapq.heappop(heap)
        shards[s].append(c)
        heapq.heappush(heap, (size + int(sizes[c]), s))
    return shards


def even_pieces(
    order: Sequence[int], sizes: Sequence[int], rank: int, world: int, worker: int, workers: int, drop_last: bool
) -> list[tuple[int, int, int]]:
    """``(item, lo, hi)`` pieces of the epoch's items laid end to end in ``order``, that worker ``worker`` of
    rank ``rank`` reads: each rank ``ceil(total / world)`` units (``floor`` with ``drop_last``), the last
    rank's part wrapping to the start of the order, each rank's part cut into ``workers`` contiguous parts."""
    ordered = np.asarray([int(sizes[c]) for c in order], np.int64)
    total = int(ordered.sum())
    if total == 0:
        return []
    per_rank = samples_per_rank(total, world, drop_last)
    w_lo, w_hi = worker_span(per_rank, worker, workers)
    count = w_hi - w_lo
    lo = (rank * per_rank + w_lo) % total
    ranges = [(lo, min(lo + count, total))]
    if lo + count > total:
        ranges.append((0, lo + count - total))
    ends = np.cumsum(ordered)
    starts = ends - ordered
    pieces: list[tuple[int, int, int]] = []
    for a, b in ranges:
        if a >= b:
            continue
        for k in range(int(np.searchsorted(ends, a, side="right")), len(order)):
            if starts[k] >= b:
                break
            pieces.append(
                (int(order[k]), max(a, int(starts[k])) - int(starts[k]), min(b, int(ends[k])) - int(starts[k]))
            )
    return pieces


class ReadPlan:
    """Requested frames grouped by keyframe interval into chunks, with a seeded chunk order per epoch.

    Parameters
    ----------
    requests : sequence of (video_id, frame)
        Any list, in any order, repeats allowed. Frames are 0-based.
    indexes : mapping of video_id to FrameIndex or None
        The frame index of each video. A video without one (None or absent)
        is cut into blocks of ``block`` frames and its cost estimate is
        approximate.
    seed : int
        Non-negative; with the epoch it decides the chunk order.
    block : int
        Block length, in frames, for videos without a frame index.

    Raises
    ------
    FrameOutOfRangeError
        If a frame is negative or beyond the video's frame index.
    OptionError
        On a malformed request, a negative seed or ``block`` outside ``[1, 2**63)``.

    Examples
    --------
    >>> plan = ReadPlan([("a", 5), ("a", 7), ("a", 5)], indexes={}, seed=0)
    >>> plan.summary()["chunks"], plan.chunks[0].repeats.tolist()
    (1, [2, 1])
    """

    def __init__(
        self,
        requests: Iterable[tuple[str, int]],
        *,
        indexes: Mapping[str, FrameIndex | None],
        seed: int,
        block: int = 250,
    ) -> None:
        codes_of: dict[str, int] = {}
        codes: list[int] = []
        frames: list[int] = []
        for i, req in enumerate(requests):
            try:
                video_id, frame = req
            except (TypeError, ValueError) as err:
                raise OptionError(f"request {i} must be a (video_id, frame) pair, got {req!r}") from err
            if not isinstance(video_id, str):
                raise OptionError(f"request {i}: video_id must be a string, got {video_id!r}")
            if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
                raise OptionError(f"request {i}: frame must be an integer, got {frame!r}")
            codes.append(codes_of.setdefault(video_id, len(codes_of)))
            frames.append(int(frame))
        self._build(
            tuple(codes_of),
            np.asarray(codes, dtype=np.int64),
            np.asarray(frames, dtype=np.int64),
            indexes=indexes,
            seed=seed,
            block=block,
        )

    @classmethod
    def from_arrays(
        cls,
        video_ids: Sequence[str],
        video_codes: np.ndarray,
        frames: np.ndarray,
        *,
        indexes: Mapping[str, FrameIndex | None],
        seed: int,
        block: int = 250,
    ) -> ReadPlan:
        """Build a plan from columns instead of pairs (fast for millions of requests).

        Parameters
        ----------
        video_ids : sequence of str
            The videos the codes refer to.
        video_codes : (R,) int
            Index into ``video_ids`` of each request.
        frames : (R,) int
            Frame of each request.
        indexes, seed, block
            As for :class:`ReadPlan`.

        Raises
        ------
        OptionError
            If ``video_codes`` or ``frames`` is not a 1-D array of integers
            (floats such as 1.7 and bools are refused, never rounded), they
            differ in length, a code lies outside ``[0, len(video_ids))``, or
            ``video_ids`` is one string; as for :class:`ReadPlan` otherwise.
        FrameOutOfRangeError
            As for :class:`ReadPlan`.
        """
        if isinstance(video_ids, (str, bytes)):
            raise OptionError(f"video_ids must be a sequence of video ids, got the single string {video_ids!r}")
        codes = _int_column(video_codes, "video_codes")
        fr = _int_column(frames, "frames")
        if codes.shape != fr.shape:
            raise OptionError(f"video_codes and frames differ in length: {codes.size} and {fr.size}")
        if codes.size and (codes.min() < 0 or codes.max() >= len(video_ids)):
            bad = int(codes[(codes < 0) | (codes >= len(video_ids))][0])
            raise OptionError(f"video_codes must lie in [0, {len(video_ids)}), got {bad}")
        plan = cls.__new__(cls)
        plan._build(tuple(video_ids), codes, fr, indexes=indexes, seed=seed, block=block)
        return plan

    def _build(
        self,
        video_ids: tuple[str, ...],
        codes: np.ndarray,
        frames: np.ndarray,
        *,
        indexes: Mapping[str, FrameIndex | None],
        seed: int,
        block: int,
    ) -> None:
        self._seed = check_nonneg_int(seed, "seed")
        if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 1 <= block < 2**63:
            raise OptionError(f"block must be an integer in [1, 2**63), got {block!r}")
        self._block = int(block)
        n = int(frames.size)
        sorted_ids, sv, sf = _sorted_requests(video_ids, codes, frames)
        si, ss, edges, no_index = _intervals(sorted_ids, sv, sf, indexes, self._block)
        self._video_ids = tuple(v for k, v in enumerate(sorted_ids) if edges[k] < edges[k + 1])  # requested ones
        self._videos_without_index = tuple(no_index)
        self._n_samples = n
        self._est_one_by_one = int((sf - ss).sum() + n) if n else 0
        self._chunks, self._distinct = _chunks_of(sorted_ids, sv, sf, si, ss)
        self._assign_cache: dict[tuple[int, int], list[list[int]]] = {}

    # -- what the plan holds ------------------------------------------------------------------

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """All chunks in canonical order (video id, then interval)."""
        return self._chunks

    @property
    def seed(self) -> int:
        """The seed the epoch orders derive from."""
        return self._seed

    @property
    def block(self) -> int:
        """Block length used for videos without a frame index."""
        return self._block

    @property
    def video_ids(self) -> tuple[str, ...]:
        """The requested videos, sorted."""
        return self._video_ids

    def __len__(self) -> int:
        """Number of samples (requests) one epoch yields."""
        return self._n_samples

    def __repr__(self) -> str:
        return f"ReadPlan(samples={self._n_samples}, chunks={len(self._chunks)}, videos={len(self._video_ids)})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_assign_cache"] = {}
        return state

    def summary(self) -> dict[str, Any]:
        """What the plan reads, and what it saves.

        Returns
        -------
        dict
            ``samples`` (requests, repeats counted), ``distinct_frames``,
            ``chunks``, ``videos``, ``videos_without_index`` (cut into blocks),
            ``est_decoded_frames`` (frames this plan decodes: each chunk from
            its keyframe to its last frame) and
            ``est_decoded_frames_one_by_one`` (reading each request on its own
            from its keyframe).
        """
        return {
            "samples": self._n_samples,
            "distinct_frames": self._distinct,
            "chunks": len(self._chunks),
            "videos": len(self._video_ids),
            "videos_without_index": len(self._videos_without_index),
            "est_decoded_frames": int(sum(c.est_decoded_frames for c in self._chunks)),
            "est_decoded_frames_one_by_one": self._est_one_by_one,
        }

    # -- epochs and shards ----------------------------------------------------------------------

    def order(self, epoch: int) -> list[int]:
        """Chunk order of an epoch: a permutation of ``range(len(chunks))`` drawn from ``(seed, epoch)``.

        Raises
        ------
        OptionError
            If ``epoch`` is not a non-negative integer.
        """
        rng = epoch_rng(self._seed, epoch, STREAM_CHUNK_ORDER)
        return [int(i) for i in rng.permutation(len(self._chunks))]

    def _assignment(self, epoch: int, num_shards: int) -> list[list[int]]:
        # checked before the cache: int(1.9) or int(True) must not find epoch 1's assignment
        key = (check_nonneg_int(epoch, "epoch"), int(num_shards))
        cached = self._assign_cache.get(key)
        if cached is not None:
            return cached
        shards = greedy_shards(self.order(epoch), [c.n_samples for c in self._chunks], num_shards)
        if len(self._assign_cache) > 8:
            self._assign_cache.clear()
        self._assign_cache[key] = shards
        return shards

    def shard(
        self, epoch: int, shard: int, num_shards: int, *, world_size: int = 1, drop_last: bool = False
    ) -> list[Chunk]:
        """The chunks one worker/rank reads in an epoch, in the order to read them.

        With ``world_size=1`` (one process, its DataLoader workers) every
        chunk belongs to exactly one shard; shard sizes (in samples) differ by
        at most the samples of one chunk.

        With ``world_size > 1`` (distributed ranks, ``num_shards = world_size
        x workers``, ``shard = rank x workers + worker``) every rank must run
        the same number of batches, or the last collective hangs. So the
        epoch's samples are laid end to end in chunk order and cut into
        ``world_size`` parts of exactly ``ceil(len(plan) / world_size)``
        samples, the last part wrapping to the start of the order (as
        ``torch.utils.data.DistributedSampler`` pads by repeating), or
        ``floor`` with ``drop_last`` (the tail is not read that epoch). Each
        rank's part is cut into ``workers`` contiguous parts whose sizes
        depend only on the part's length (so worker ``w`` yields as many
        samples on every rank). A chunk cut between two parts becomes two
        pieces, each decoded from the keyframe. When ``len(plan)`` is a
        multiple of ``world_size``, every request is still read exactly once.

        Parameters
        ----------
        epoch : int
        shard : int
            In ``[0, num_shards)``, e.g. ``rank * num_workers + worker``.
        num_shards : int
            >= 1; a multiple of ``world_size``.
        world_size : int
            Distributed ranks among the shards (>= 1).
        drop_last : bool
            With ``world_size > 1``: drop the tail instead of repeating the start of the order.

        Returns
        -------
        list of Chunk

        Raises
        ------
        OptionError
            If ``shard`` is outside ``[0, num_shards)``, ``num_shards < 1``, ``world_size < 1``,
            ``num_shards`` is not a multiple of ``world_size``, or ``drop_last`` is not True or False.
        """
        drop_last = check_flag("drop_last", drop_last)
        check_shards(shard, num_shards)
        world = check_world(int(num_shards), world_size)
        if world == 1:
            return [self._chunks[c] for c in self._assignment(epoch, int(num_shards))[int(shard)]]
        workers = int(num_shards) // world
        return self._even_part(epoch, int(shard) // workers, world, int(shard) % workers, workers, drop_last)

    def _even_part(self, epoch: int, rank: int, world: int, worker: int, workers: int, drop_last: bool) -> list[Chunk]:
        """Chunk pieces of samples ``[lo, lo + count)`` (modulo the epoch's length) of the epoch's sequence."""
        sizes = [c.n_samples for c in self._chunks]
        pieces: list[Chunk] = []
        for c, o1, o2 in even_pieces(self.order(epoch), sizes, rank, world, worker, workers, drop_last):
            chunk = self._chunks[c]
            if o1 == 0 and o2 == chunk.n_samples:
                pieces.append(chunk)
                continue
            frames, repeats = np.unique(np.repeat(chunk.frames, chunk.repeats)[o1:o2], return_counts=True)
            frames = frames.astype(np.int64)
            repeats = repeats.astype(np.int64)
            frames.setflags(write=False)
            repeats.setflags(write=False)
            pieces.append(Chunk(chunk.video_id, chunk.interval, chunk.start_frame, frames, repeats, int(o2 - o1)))
        return pieces

    def shard_sizes(self, epoch: int, num_shards: int, *, world_size: int = 1, drop_last: bool = False) -> list[int]:
        """Samples each shard yields in an epoch (distributed training wants them equal: see :meth:`shard`)."""
        drop_last = check_flag("drop_last", drop_last)
        check_shards(None, num_shards)
        if check_world(int(num_shards), world_size) == 1:
            return [sum(self._chunks[c].n_samples for c in s) for s in self._assignment(epoch, int(num_shards))]
        return [
            sum(c.n_samples for c in self.shard(epoch, s, num_shards, world_size=world_size, drop_last=drop_last))
            for s in range(int(num_shards))
        ]

    def iter_requests(
        self, epoch: int, shard: int = 0, num_shards: int = 1, *, world_size: int = 1, drop_last: bool = False
    ) -> Iterator[tuple[str, int]]:
        """The (video_id, frame) requests of a shard in reading order, each repeated as requested (no decoding).

        ``world_size`` and ``drop_last`` as in :meth:`shard`."""
        for chunk in self.shard(epoch, shard, num_shards, world_size=world_size, drop_last=drop_last):
            for f, k in zip(chunk.frames.tolist(), chunk.repeats.tolist()):
                for _ in range(k):
                    yield chunk.video_id, f
