"""ClipPlan: a list of clips grouped by keyframe interval, with a seeded order per epoch and shards.

The clip counterpart of :class:`~vidlabel.video._readplan.ReadPlan`. A clip
(a row of frame numbers, :class:`vidlabel.clip.ClipSpec`) belongs to the
keyframe interval of its first frame; the clips of one interval of one video
form a :class:`ClipChunk`, read by one sequential decode from the interval's
keyframe to the chunk's last frame, so frames that several clips share are
decoded once. Chunks are what gets shuffled each epoch and split between
DataLoader workers and ranks, by the same rules as ``ReadPlan.shard``: whole
chunks per shard in one process, equal counts per rank (the last rank's part
wrapping to the start of the order) under several ranks. A clip that reaches
into the next interval decodes that interval's first frames again in the next
chunk: the cost of a clip is at most one interval more than its own frames.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.errors import FrameOutOfRangeError, OptionError, check_flag
from vidlabel.spec import FrameIndex
from vidlabel.video._readplan import (
    STREAM_CHUNK_ORDER,
    check_nonneg_int,
    check_shards,
    check_world,
    epoch_rng,
    even_pieces,
    greedy_shards,
)

__all__ = ["ClipChunk", "ClipPlan"]


@dataclass(frozen=True, eq=False)
class ClipChunk:
    """The clips whose first frame lies in one keyframe interval of one video: one sequential decode.

    Attributes
    ----------
    video_id : str
    interval : int
        Keyframe-interval number of the clips' first frames (for a video
        without a frame index: block number, ``frame // block``).
    start_frame : int
        Where decoding starts: the interval's keyframe (or the block start).
    clips : (K,) int64
        Positions of the clips in the plan's clip list, by first frame.
    frames : (K, T) int64
        The frame numbers of each clip.
    """

    video_id: str
    interval: int
    start_frame: int
    clips: np.ndarray
    frames: np.ndarray

    @property
    def n_clips(self) -> int:
        """Clips this chunk yields."""
        return int(self.clips.size)

    @property
    def est_decoded_frames(self) -> int:
        """Frames decoded to read this chunk: from ``start_frame`` to its last frame, inclusive."""
        return int(self.frames.max()) - self.start_frame + 1 if self.frames.size else 0

    def take(self, lo: int, hi: int) -> ClipChunk:
        """The piece holding clips ``[lo, hi)`` of this chunk."""
        return ClipChunk(self.video_id, self.interval, self.start_frame, self.clips[lo:hi], self.frames[lo:hi])

    def __repr__(self) -> str:
        return (
            f"ClipChunk(video_id={self.video_id!r}, interval={self.interval}, frames={int(self.frames.min())}.."
            f"{int(self.frames.max())}, n_clips={self.n_clips})"
        )


class ClipPlan:
    """Clips grouped by the keyframe interval of their first frame into chunks, with a seeded chunk order.

    Parameters
    ----------
    video_ids : sequence of str
        The videos the codes refer to.
    video_codes : (K,) int
        Index into ``video_ids`` of each clip.
    frames : (K, T) int
        Frame numbers of each clip (as :meth:`vidlabel.clip.ClipSpec.frames` gives them: ascending).
    indexes : mapping of video_id to FrameIndex or None
        The frame index of each video; a video without one is cut into blocks of ``block`` frames.
    seed : int
        Non-negative; with the epoch it decides the chunk order.
    block : int
        Block length, in frames, for videos without a frame index.

    Raises
    ------
    OptionError
        If ``frames`` is not a 2-D integer array with one row per code, a code lies outside
        ``[0, len(video_ids))``, or ``seed`` / ``block`` is bad.
    FrameOutOfRangeError
        If a frame is negative or beyond its video's frame index.
    """

    def __init__(
        self,
        video_ids: Sequence[str],
        video_codes: Any,
        frames: Any,
        *,
        indexes: Mapping[str, FrameIndex | None],
        seed: int,
        block: int = 250,
    ) -> None:
        codes = np.asarray(video_codes)
        fr = np.asarray(frames)
        if fr.ndim != 2 or (fr.size and fr.dtype.kind not in "iu") or codes.shape != (fr.shape[0],):
            raise OptionError(
                f"a ClipPlan takes (K,) video codes and (K, T) integer frames, got shapes {codes.shape} and {fr.shape}"
            )
        if codes.size and (codes.dtype.kind not in "iu" or codes.min() < 0 or codes.max() >= len(video_ids)):
            raise OptionError(f"video codes must be integers in [0, {len(video_ids)})")
        self._seed = check_nonneg_int(seed, "seed")
        if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or not 1 <= block < 2**63:
            raise OptionError(f"block must be an integer in [1, 2**63), got {block!r}")
        self._block = int(block)
        self._video_ids = tuple(video_ids)
        self._n = int(codes.size)
        self._frames_per_clip = int(fr.shape[1])
        codes = codes.astype(np.int64)
        fr = fr.astype(np.int64)
        chunks: list[ClipChunk] = []
        # One sort: by video (in video id order), then first frame, then position.
        id_rank = np.empty(len(self._video_ids), np.int64)
        id_rank[sorted(range(len(self._video_ids)), key=lambda c: self._video_ids[c])] = np.arange(len(self._video_ids))
        ranked = id_rank[codes] if codes.size else codes
        order = np.lexsort((np.arange(codes.size), fr[:, 0] if codes.size else codes, ranked))
        bounds = np.flatnonzero(np.diff(ranked[order], prepend=-1, append=-2) != 0)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            positions = order[a:b]
            chunks.extend(self._video_chunks(self._video_ids[int(codes[positions[0]])], positions, fr, indexes))
        self._chunks = tuple(chunks)

    def _video_chunks(
        self, video_id: str, positions: np.ndarray, fr: np.ndarray, indexes: Mapping[str, FrameIndex | None]
    ) -> list[ClipChunk]:
        """The chunks of one video's clips (``positions``, sorted by first frame)."""
        vf = fr[positions]
        index = indexes.get(video_id)
        lo, hi = int(vf.min()), int(vf.max())
        if lo < 0 or (index is not None and hi >= index.frame_count):
            limit = f"[0, {index.frame_count})" if index is not None else "[0, ...)"
            raise FrameOutOfRangeError(
                f"clip frame {lo if lo < 0 else hi} out of range {limit} in video {video_id!r}", video_id=video_id
            )
        first = vf[:, 0]
        if index is None or index.keyframes.size == 0:
            iv = first // self._block
            starts = iv * self._block
        else:
            iv = index.interval_of(first)
            starts = np.where(first < index.keyframes[0], 0, index.keyframes[iv])
        out = []
        bounds = np.append(np.flatnonzero(np.diff(iv, prepend=-1) != 0), iv.size)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            clips, cf = positions[a:b].copy(), vf[a:b].copy()
            clips.setflags(write=False)
            cf.setflags(write=False)
            out.append(ClipChunk(video_id, int(iv[a]), int(starts[a]), clips, cf))
        return out

    @property
    def chunks(self) -> tuple[ClipChunk, ...]:
        """All chunks in canonical order (video id, then interval)."""
        return self._chunks

    @property
    def seed(self) -> int:
        """The seed the epoch orders derive from."""
        return self._seed

    @property
    def video_ids(self) -> tuple[str, ...]:
        """The videos the plan's codes refer to."""
        return self._video_ids

    def __len__(self) -> int:
        """Clips one epoch yields."""
        return self._n

    def __repr__(self) -> str:
        return f"ClipPlan(clips={self._n}, frames_per_clip={self._frames_per_clip}, chunks={len(self._chunks)})"

    def summary(self) -> dict[str, int]:
        """``clips``, ``chunks``, ``clip_frames`` (T x clips), ``distinct_frames`` (frames the clips hold,
        each counted once per video), ``est_decoded_frames`` (each chunk from its keyframe to its last
        frame) and ``est_decoded_frames_one_by_one`` (each clip read on its own from its keyframe)."""
        distinct = 0
        by_video: dict[str, list[np.ndarray]] = {}
        one_by_one = 0
        for c in self._chunks:
            by_video.setdefault(c.video_id, []).append(c.frames.reshape(-1))
            one_by_one += int((c.frames[:, -1] - c.start_frame + 1).sum())
        for parts in by_video.values():
            distinct += int(np.unique(np.concatenate(parts)).size)
        return {
            "clips": self._n,
            "chunks": len(self._chunks),
            "clip_frames": self._n * self._frames_per_clip,
            "distinct_frames": distinct,
            "est_decoded_frames": sum(c.est_decoded_frames for c in self._chunks),
            "est_decoded_frames_one_by_one": one_by_one,
        }

    def order(self, epoch: int) -> list[int]:
        """Chunk order of an epoch: a permutation of ``range(len(chunks))`` drawn from ``(seed, epoch)``."""
        rng = epoch_rng(self._seed, epoch, STREAM_CHUNK_ORDER)
        return [int(i) for i in rng.permutation(len(self._chunks))]

    def shard(
        self, epoch: int, shard: int, num_shards: int, *, world_size: int = 1, drop_last: bool = False
    ) -> list[ClipChunk]:
        """The chunks (or pieces of chunks) one worker of one rank reads in an epoch, in reading order.

        With ``world_size`` 1 every chunk goes whole to one shard (sizes differ by at most one chunk).
        With ``world_size > 1`` (``num_shards = world_size x workers``, ``shard = rank x workers + worker``)
        every rank reads exactly ``ceil(len(plan) / world_size)`` clips (``floor`` with ``drop_last``), the
        last rank's part wrapping to the start of the order, and worker ``w`` as many on every rank, as
        :meth:`vidlabel.readplan.ReadPlan.shard` does; every clip is read exactly once when ``len(plan)`` is
        a multiple of ``world_size``.

        Raises
        ------
        OptionError
            If ``shard`` lies outside ``[0, num_shards)``, ``num_shards < 1``, ``world_size < 1`` or does not
            divide ``num_shards``, ``epoch`` is negative, or ``drop_last`` is not True or False.
        """
        drop_last = check_flag("drop_last", drop_last)
        check_shards(shard, num_shards)
        check_world(int(num_shards), world_size)
        order = self.order(epoch)
        sizes = [c.n_clips for c in self._chunks]
        if world_size == 1:
            return [self._chunks[c] for c in greedy_shards(order, sizes, int(num_shards))[int(shard)]]
        workers = int(num_shards) // int(world_size)
        rank, worker = divmod(int(shard), workers)
        pieces = even_pieces(order, sizes, rank, int(world_size), worker, workers, drop_last)
        return [self._chunks[c] if (lo, hi) == (0, sizes[c]) else self._chunks[c].take(lo, hi) for c, lo, hi in pieces]
