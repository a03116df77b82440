"""Per-sample cost of the frame store path: first pass against warm, the store read in the process
that exported it, and DataLoader workers with torch's defaults.

Generated H.264 clips (noise texture) are exported with ``--frames all``, codec none, HDF5. Every ratio is
measured in this run against its baseline, runs alternating; a row prints the median and range over runs.

1. StoreFrames first pass over a page-cached store in a fresh process against the warm second pass of the
   same process (batches of 8 random samples, ``__getitems__``, each batch kept until the next one is read, as
   ``for batch in loader`` keeps it; "dropped": each batch dropped at once, so that one batch buffer serves the
   whole pass and stays in the processor's cache, the setting of this row before 2026-12-03), at 640x480 and
   1280x720, for each way the
   first read of a chunk meets the memory map (``vidlabel.store._hdf5_frames.FIRST_TOUCH``: "populate", the default,
   "pread" and "fault", the plain page faults), and the default over the same frames
   exported chunk by chunk with HDF5's ``write_direct_chunk`` (``_hdf5.REGION_WRITE = False``:
   "chunkwise"; the stores are otherwise written in whole 2 MiB blocks). Each line also gives how much of the frames file the first pass mapped in 2 MiB pages (``FilePmdMapped`` of ``/proc/self/smaps_rollup``) and the first batch's share
   of the first pass (its buffer is fresh memory of the process). The store is read once before each
   measurement (page-cached). Then what the machine itself charges for a first pass (:func:`child_bare`: a bare
   loop of copies and checksums in a fresh process, a second thread mapping every chunk ahead of it), and the
   most a reader could give here: the default's own warm pass plus that charge. The charge depends on how the
   kernel holds the file in the page cache (the 2 MiB share above). Then "populate" and "fault"
   over a store at least 3 times the L3 cache and 1 GiB (:func:`large_frames`), closer to a training set: the
   stores above (277 and 415 MB) fit the L3 cache of some machines, so their
   warm pass can read frames the first pass left in the cache, and their passes are short, so the first
   batch's fixed cost (the frames file's open, fresh batch buffers) weighs more. The table line gives both. Goal: first pass >= 0.8x warm, warm rate kept.
2. The HDF5 store read in the same process that just exported it (300 random reads, second pass) against the
   same store opened in a new process. Goal >= 0.8x.
3. DataLoader 2 workers against 0 over StoreFrames, 1280x720, batch 8 and 32, RandomSampler,
   ``persistent_workers=False`` (each epoch starts new workers), 5 epochs of 150 samples (the clip's frames)
   in a fresh process, rates over epochs 1-2 (the issue's setting), 2-3 and 4-5; over a store holding two frame
   sizes (640x480 + 768x576, ``shuffle=True``, batch 8); epochs of 1,500 samples drawn with replacement;
   each beside the same loader over as many integers (what torch's worker start, hand-over and join cost
   alone, with the same batch size and epoch length); for 1280x720 at batch 8 (epochs of 150, 600 and 1,500
   samples) also beside the torch-only ceiling: the same 2-worker loader over a dataset returning one
   preallocated image of the same shape (:class:`PreallocatedFrames`, torch's ``default_collate``), whose
   rate is what worker start, transfer and join of such batches allow (goal >= 0.9x of it, and 2 workers
   >= 1.3x of 0 at 1,500). Each case also prints the most 2 workers could give on
   this machine (:func:`ceiling`): torch's own epoch and CPU plus the samples' work at the main process's
   cost. Goal >= 1x.

4. CPU a 1280x720 chunk of a chunk's first read in a fresh process (half the chunks in a random order, 8
   output frames taken in turn, checksums verified), one chunk at a time, for each way it can meet the file:
   "pread" (the DataLoader workers' way, ``_hdf5_frames.WORKER_FIRST_TOUCH``: read and checksummed block by block),
   "pread_whole" (one ``preadv`` of the whole chunk, then its CRC: the workers' way before 2026-12-03),
   "populate" and "fault" (as in row 1), against a warm read of the same chunks
   (the second pass, from the map): what a DataLoader worker, a fresh process every epoch, pays on every read.
   Then what mapping an adopted batch slab costs a forked worker (``_shm.SlabPool._ready``): an 88 MB shared
   slab (32 frames of 1280x720) filled by this process, mapped by a forked child with
   ``MADV_POPULATE_READ`` (the pool's way) or ``MADV_POPULATE_WRITE``, and a new slab of the same size made in
   the child (``_shm._new_shared``: made in shared memory directly, its pages not yet mapped) mapped both ways
   (milliseconds, runs alternating).

touches. Row 1's first touches only ("populate", "fault", "pread"), over the four stores of row 1 (640x480
   and 1280x720, the small and the large store), the modes alternating in each repeat (their order reversed
   every other repeat), so that more repeats fit in the time of one row-1 run: first/warm and the share of
   the file mapped in 2 MiB pages for each, median and range. Not in the default ``--only``.

folios. What the page cache's folio sizes do to a first pass, with no vidlabel code: a 1 GiB file of random
   bytes written through the page cache in the three ways its bytes can arrive (:func:`write_file`): chunk by
   chunk as HDF5's ``write_direct_chunk`` writes a 1280x720 / 640x480 frame (one ``pwrite`` of 2,764,800 /
   921,600 bytes at an unaligned offset, the store's default), and in whole aligned 2 MiB blocks (what
   ``_hdf5.REGION_WRITE`` does); then, in fresh processes with the file page-cached as written, a pass
   copying it frame by frame out of a read-only map (plain page faults), against a second pass in the same
   process: first/warm, faults and the share mapped in 2 MiB pages (median and range over ``--repeat``
   processes for each file). A kernel that reclaims idle page cache (DAMON pageout, printed on the machine line)
   reads evicted pages back in its own folio sizes and so blurs the three. Not in the default ``--only``.

Usage: python scripts/bench_storeframes.py [--repeat 3] [--workdir DIR] [--only 1,2,3,4,touches,folios]
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import machine, make_clip, minor_faults

from vidlabel import Dataset, export, open_store, probe

SCRIPT = Path(__file__).resolve()


def dataset(workdir: Path, name: str, clips: dict[str, Path]) -> Dataset:
    path = workdir / f"ds_store_{name}"
    if path.exists():
        return Dataset.open(path)
    ds = Dataset.create(path)
    ds.add_labels(["a"])
    for video_id, clip in clips.items():
        meta = probe(clip, video_id=video_id)
        ds.add_video(meta)
        ds.add_annotations(
            [{"kind": "box", "label": "a", "start_frame": f, "box": (10, 10, 40, 30)} for f in range(meta.frame_count)],
            video_id,
        )
    ds.build()
    return ds


def store_for(workdir: Path, name: str, clips: dict[str, Path], chunkwise: bool = False) -> Path:
    """The store of ``clips`` exported ``--frames all`` (with ``chunkwise``, chunk by chunk with HDF5's
    ``write_direct_chunk``; else in whole 2 MiB blocks, the default), exported
    again when the marker beside it names another writer."""
    from vidlabel.store import _hdf5

    out = workdir / (f"store_{name}" + ("_chunkwise" if chunkwise else ""))
    marker, writer = out.with_name(out.name + ".writer"), "chunks" if chunkwise else "2mib"
    if not (out / "store.h5").exists() or not marker.exists() or marker.read_text() != writer:
        shutil.rmtree(out, ignore_errors=True)
        default = _hdf5.REGION_WRITE
        _hdf5.REGION_WRITE = not chunkwise
        try:
            export(dataset(workdir, name, clips), out, frames="all", progress=False)
        finally:
            _hdf5.REGION_WRITE = default
        marker.write_text(writer)
    return out


def file_pmd_mapped() -> int:
    """Bytes of file pages this process maps with 2 MiB page-table entries (0 where not reported)."""
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("FilePmdMapped:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def child_passes(store: str, mode: str, batch: int, hold: bool = True) -> dict[str, float]:
    """In a fresh process: two passes of random batches; rates and minor faults per sample of each. With
    ``hold`` each batch is kept until the next one is read, as ``for batch in loader`` keeps it (two batch
    buffers take turns); without, each batch is dropped at once, so every batch of a pass reuses one buffer,
    which then stays in the processor's cache (a 22 MB batch of 720p frames fits this VM's L3)."""
    from vidlabel.store import _hdf5_frames
    from vidlabel.torch_data import StoreFrames

    _hdf5_frames.FIRST_TOUCH = mode
    data = StoreFrames(store)
    idx = np.random.default_rng(0).permutation(len(data))
    batches = [idx[a : a + batch].tolist() for a in range(0, len(idx), batch)]
    out: dict[str, float] = {}
    for name in ("first", "warm"):
        f0, t = minor_faults(), time.perf_counter()
        held: Any = None
        for k, b in enumerate(batches):
            got = data.__getitems__(b)
            held = got if hold else None
            if k == 0:
                out[name + "_batch0_s"] = time.perf_counter() - t
        del held, got
        out[name + "_s"] = time.perf_counter() - t
        out[name] = len(idx) / out[name + "_s"]
        out[name + "_faults"] = (minor_faults() - f0) / len(idx)
        if name == "first":
            out["pmd_share"] = file_pmd_mapped() / sum(p.stat().st_size for p in Path(store).glob("frames/*.h5"))
    return out


def child_bare(store: str, batch: int) -> dict[str, float]:
    """In a fresh process: what the machine itself charges for a first pass, with none of vidlabel's work. The
    frames file's chunks (of one frame) are read in the order of :func:`child_passes` by a bare loop that
    copies each chunk's bytes 512 KiB at a time into one of two batch buffers taken in turn (their pages
    mapped beforehand), with the CRC-32C of each block. On the first pass a second thread maps every chunk's
    pages of the file (``madvise(MADV_POPULATE_READ)``, without the GIL) ahead of the copying thread, in the
    same order: the most generous a reader on two cores could be. Seconds of each pass."""
    import threading

    import google_crc32c
    import h5py

    from vidlabel.store._fs import populate

    path = sorted(Path(store).glob("frames/*.h5"))[0]
    offsets: list[int] = []
    with h5py.File(path, "r") as f:
        frames = f["frames"]
        assert frames.chunks is not None and frames.chunks[0] == 1, "the bare loop reads chunks of one frame"
        frame_bytes = int(np.prod(frames.shape[1:]))
        frames.id.chunk_iter(lambda info: offsets.append(int(info.byte_offset)))
    order = np.random.default_rng(0).permutation(len(offsets)).tolist()
    fd = os.open(path, os.O_RDONLY)
    mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    source = np.frombuffer(mapped, np.uint8)
    base = source.ctypes.data

    def map_ahead() -> None:
        for i in order:
            start = offsets[i] - offsets[i] % mmap.PAGESIZE
            populate(base + start, offsets[i] + frame_bytes - start)

    buffers = [np.ones(batch * frame_bytes, np.uint8) for _ in range(2)]
    block, out = 512 << 10, {}
    for name in ("first", "warm"):
        ahead = threading.Thread(target=map_ahead) if name == "first" else None
        t = time.perf_counter()
        if ahead is not None:
            ahead.start()
        for k, i in enumerate(order):
            offset = offsets[i]
            dest = buffers[(k // batch) % 2][(k % batch) * frame_bytes : (k % batch + 1) * frame_bytes]
            value = 0
            for a in range(0, frame_bytes, block):
                piece = dest[a : a + block]
                np.copyto(piece, source[offset + a : offset + a + piece.size])
                value = google_crc32c.extend(value, piece)
        out[name + "_s"] = time.perf_counter() - t
        if ahead is not None:
            ahead.join()
    del source
    mapped.close()
    os.close(fd)
    return out


def child_reads(store: str, export_from: str | None) -> float:
    """300 random single reads, second pass; with ``export_from``, export that dataset to ``store`` first."""
    from vidlabel.torch_data import StoreFrames

    if export_from is not None:
        shutil.rmtree(store, ignore_errors=True)
        export(Dataset.open(export_from), store, frames="all", progress=False)
    data = StoreFrames(open_store(store))
    idx = np.random.default_rng(1).integers(0, len(data), 300).tolist()
    rate = 0.0
    for _ in range(2):
        t = time.perf_counter()
        for i in idx:
            data[i]
        rate = len(idx) / (time.perf_counter() - t)
    return rate


def child_first_reads(store: str, mode: str) -> dict[str, float]:
    """In a fresh process (as a DataLoader worker of a new epoch is): read half the chunks of the store's frames
    file in a random order into 8 output frames taken in turn (already touched, as an adopted slab is), then the
    same chunks again; CPU ms a chunk of each pass, checksums verified. ``mode`` is how a chunk's first read in
    a process meets the file (``HDF5FramesReader``: "pread", the workers' way, "populate", "fault"), or
    "pread_whole": one ``preadv`` of the whole chunk, then its CRC-32C (the workers' way before 2026-12-03)."""
    import google_crc32c

    from vidlabel.store._hdf5_frames import HDF5FramesReader

    path = sorted(Path(store).glob("frames/*.h5"))[0]
    reader = HDF5FramesReader(path, Path(store))
    reader.verify_checksums = True
    reader._first_touch = "pread" if mode == "pread_whole" else mode
    chunks = np.random.default_rng(2).permutation(reader.n_chunks)[: reader.n_chunks // 2].tolist()
    outs = np.zeros((8, reader.chunk_frames, *reader.shape[1:]), np.uint8)
    out: dict[str, float] = {}
    for name in ("first", "warm"):
        c0 = time.process_time()
        for k, c in enumerate(chunks):
            buf = outs[k % 8]
            if name == "first" and mode == "pread_whole":
                assert reader._offsets is not None
                os.preadv(reader._fd, [memoryview(buf.reshape(-1).data)], int(reader._offsets[c]))
                reader.check_crc(c, google_crc32c.value(buf))
                reader._touched[c] = 1
            else:
                reader.read_chunk(c, buf)
        out[name] = (time.process_time() - c0) * 1000 / len(chunks)
    reader.close()
    return out


def run_child(*args: str) -> Any:
    out = subprocess.run([sys.executable, str(SCRIPT), "--child", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def page_cache(store: Path) -> None:
    """Read every file of ``store`` once, so that it is in the page cache (uncompressed HDF5 units larger than a
    quarter of the free memory are written with O_DIRECT: a store just exported may not be)."""
    for path in sorted(store.rglob("*")):
        if path.is_file():
            with path.open("rb", buffering=0) as fh:
                while fh.read(8 << 20):
                    pass


def l3_bytes() -> int:
    """Bytes of this machine's last-level (L3) cache as Linux reports it for CPU 0, or 0 where not reported."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "3":
                size = (index / "size").read_text().strip()
                scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
                return int(size.rstrip("KMG")) * scale
        except (OSError, ValueError):
            continue
    return 0


def large_frames(width: int, height: int, small: int) -> int:
    """Frames of a store of ``width`` x ``height`` at least 3 times the L3 cache and 1 GiB (at most 4 GiB): its
    warm pass cannot come from the processor's cache, as a store that fits it partly does."""
    want = min(max(3 * l3_bytes(), 1 << 30), 4 << 30)
    return max(small, -(-want // (width * height * 3)))


def row1_lines(label: str, runs: dict[str, list[dict[str, float]]], reference: str) -> None:
    """One line a mode: rates, faults, the 2 MiB share, the first batch's share and first/warm."""
    ref_warm = [r["warm"] for r in runs[reference]]
    for m, rs in runs.items():
        firsts = [r["first"] / r["warm"] for r in rs]
        warm_vs_ref = [r["warm"] / w for r, w in zip(rs, ref_warm)]
        batch0 = statistics.median(r["first_batch0_s"] / r["first_s"] for r in rs)
        print(
            f"  {label} {m:9s}: first {statistics.median(r['first'] for r in rs):7,.0f}/s "
            f"({statistics.median(r['first_faults'] for r in rs):.1f} faults/sample, "
            f"{statistics.median(r['pmd_share'] for r in rs):.0%} of the file in 2 MiB pages, first batch "
            f"{batch0:.0%} of the pass), warm {statistics.median(r['warm'] for r in rs):7,.0f}/s; first/warm "
            f"{spread(firsts)}; warm vs {reference!r} warm {spread(warm_vs_ref)}"
        )


def row1(stores: dict[str, tuple[Path, Path, Path]], repeat: int) -> None:
    from vidlabel.store import _hdf5_frames

    default = _hdf5_frames.FIRST_TOUCH  # "dropped" and "chunkwise" read the default way, and the table line gives it
    modes = ("dropped", "populate", "pread", "fault", "chunkwise")
    large_modes = ("populate", "fault")
    for label, (store, store_chunkwise, large) in stores.items():
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        large_runs: dict[str, list[dict[str, float]]] = {m: [] for m in large_modes}
        bare: list[dict[str, float]] = []
        for _ in range(repeat):
            for m in modes:
                path = store_chunkwise if m == "chunkwise" else store
                page_cache(path)
                mode = default if m in ("chunkwise", "dropped") else m
                runs[m].append(run_child("passes", str(path), mode, "8", "0" if m == "dropped" else "1"))
            page_cache(store)
            bare.append(run_child("bare", str(store), "8"))
            for m in large_modes:
                page_cache(large)
                large_runs[m].append(run_child("passes", str(large), m, "8", "1"))
        small_mb, large_mb = (sum(p.stat().st_size for p in s.glob("frames/*.h5")) / 1e6 for s in (store, large))
        l3 = f"the {l3_bytes() / 2**20:,.0f} MiB L3 cache" if l3_bytes() else "the L3 cache (size not reported)"
        print(f"  {label}, a store of {small_mb:,.0f} MB:")
        row1_lines(label, runs, "fault")
        # the machine's own first-pass charge (the bare loop's first pass less its second), added to this
        # run's own warm pass: about the best first/warm a reader that copies the frames out could reach here
        bare_ratio = [r["warm_s"] / r["first_s"] for r in bare]
        caps = [r["warm_s"] / (r["warm_s"] + b["first_s"] - b["warm_s"]) for r, b in zip(runs[default], bare)]
        print(
            f"  {label} bare loop (copy and CRC-32C, a second thread mapping ahead): first/warm {spread(bare_ratio)} "
            f"(first pass {statistics.median(b['first_s'] for b in bare) * 1000:.1f} ms, warm "
            f"{statistics.median(b['warm_s'] for b in bare) * 1000:.1f} ms); the most a reader could give here "
            f"({default}'s warm pass, the default's, plus the bare loop's first-pass charge): {spread(caps)}"
        )
        print(f"  {label}, a store of {large_mb:,.0f} MB (larger than {l3}, from which a warm pass over the store "
              "above can read; a longer pass, over which the first batch's fixed cost weighs less):")  # fmt: skip
        row1_lines(label, large_runs, "fault")
        firsts = [r["first"] / r["warm"] for r in runs[default]]
        large_firsts = [r["first"] / r["warm"] for r in large_runs[default]]
        old = [r["first"] / r["warm"] for r in runs["chunkwise"]]
        dropped = [r["first"] / r["warm"] for r in runs["dropped"]]
        print(f"| StoreFrames first pass vs warm, fresh process, {label} ({default}) | {large_mb:,.0f} MB store: "
              f"{spread(large_firsts)}; {small_mb:,.0f} MB store: {spread(firsts)} (written chunk by chunk: "
              f"{spread(old)}; each batch dropped at once: {spread(dropped)}) | >= 0.8x |")  # fmt: skip


def first_touches(stores: dict[str, Path], repeat: int) -> None:
    """Row 1's first touches alone over ``stores``, alternating (see the module's "touches")."""
    modes = ("populate", "fault", "pread")
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(s, m): [] for s in stores for m in modes}
    for r in range(repeat):
        for label, store in stores.items():
            for m in modes if r % 2 == 0 else modes[::-1]:
                page_cache(store)
                runs[label, m].append(run_child("passes", str(store), m, "8", "1"))
    for label in stores:
        words = []
        for m in modes:
            rs = runs[label, m]
            words.append(f"{m} {spread([r['first'] / r['warm'] for r in rs])} "
                         f"({statistics.median(r['pmd_share'] for r in rs):.0%} in 2 MiB pages)")  # fmt: skip
        print(f"  first touches, {label}, first/warm: {'; '.join(words)}")


FOLIO_FILE_BYTES = 1 << 30
#: How :func:`write_file` writes the file: (bytes a ``pwrite``, byte offset of the first).
FOLIO_WRITES = {"1280x720 chunks": (2_764_800, 4096), "640x480 chunks": (921_600, 4096), "2 MiB blocks": (2 << 20, 0)}


def write_file(path: Path, step: int, start: int) -> dict[str, float]:
    """Write ``path``: ``FOLIO_FILE_BYTES`` of random bytes through the page cache, ``step`` bytes a ``pwrite``
    from byte ``start`` (the bytes before it written first), then ``fsync`` (clean pages, as a store's are
    once written back). Returns the seconds and the system CPU seconds of the writes (before the fsync)."""
    block = np.random.default_rng(step).integers(0, 256, step, dtype=np.uint8)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t, sys0 = time.perf_counter(), os.times().system
        if start:
            os.pwrite(fd, bytes(start), 0)
        for offset in range(start, FOLIO_FILE_BYTES, step):
            os.pwrite(fd, block[: min(step, FOLIO_FILE_BYTES - offset)], offset)
        took = {"write_s": time.perf_counter() - t, "write_sys_s": os.times().system - sys0}
        os.fsync(fd)
    finally:
        os.close(fd)
    return took


def child_map_passes(path: str, frame_bytes: int) -> dict[str, float]:
    """In a fresh process: two passes copying ``path`` frame by frame (``frame_bytes``) out of a read-only map
    into one buffer, in a random order of frames; seconds, minor faults and the share mapped in 2 MiB pages."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        mapped = np.frombuffer(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
    out = np.empty(frame_bytes, np.uint8)
    out.fill(0)
    order = np.random.default_rng(0).permutation(size // frame_bytes) * frame_bytes
    result: dict[str, float] = {}
    for name in ("first", "warm"):
        f0, t = minor_faults(), time.perf_counter()
        for offset in order.tolist():
            np.copyto(out, mapped[offset : offset + frame_bytes])
        result[name + "_s"] = time.perf_counter() - t
        result[name + "_faults"] = float(minor_faults() - f0)
        if name == "first":
            result["pmd_share"] = file_pmd_mapped() / size
    return result


def folios(workdir: Path, repeat: int) -> None:
    """The module's "folios": first/warm of a plain map copy over a file written each way of FOLIO_WRITES."""
    for label, (step, start) in FOLIO_WRITES.items():
        path = workdir / "folios.bin"
        path.unlink(missing_ok=True)
        writes = [write_file(path, step, start) for _ in range(repeat)]  # the last one stays for the passes
        runs = [run_child("mappasses", str(path), "2764800") for _ in range(repeat)]
        path.unlink()
        ratio = [r["warm_s"] / r["first_s"] for r in runs]
        print(
            f"  file written in {label}: {statistics.median(r['pmd_share'] for r in runs):.0%} mapped in 2 MiB pages, "
            f"{statistics.median(r['first_faults'] for r in runs):,.0f} faults a first pass over "
            f"{FOLIO_FILE_BYTES >> 20:,} MiB; first pass {statistics.median(r['first_s'] for r in runs) * 1000:.0f} ms, "
            f"warm {statistics.median(r['warm_s'] for r in runs) * 1000:.0f} ms; first/warm {spread(ratio)}; "
            f"the writes {statistics.median(w['write_s'] for w in writes):.2f} s "
            f"({statistics.median(w['write_sys_s'] for w in writes):.2f} s system CPU)"
        )


def row2(workdir: Path, ds_path: Path, repeat: int) -> None:
    same, fresh = [], []
    store = workdir / "store_same_process"
    for _ in range(repeat):
        same.append(run_child("reads", str(store), str(ds_path)))
        fresh.append(run_child("reads", str(store), ""))
    ratios = [a / b for a, b in zip(same, fresh)]
    print(
        f"  same process after export {statistics.median(same):,.0f}/s, new process {statistics.median(fresh):,.0f}/s"
    )
    print(f"| HDF5 store read in the process that exported it vs a new process, 640x480 | {spread(ratios)} | >= 0.8x |")


def loader_rate(store: Path, workers: int, batch: int, shuffle: bool, epoch_samples: int = 0,
                epochs: int = 5) -> dict[str, Any]:  # fmt: skip
    """In this (fresh) process: ``epochs`` epochs of a DataLoader; per epoch the samples and seconds, the first
    batch's wait, and CPU seconds and minor faults a sample in this process and in the workers
    (``RUSAGE_CHILDREN``: torch joins an epoch's workers at its end). ``epoch_samples`` > 0: epochs of that
    many samples drawn with replacement; ``store`` "ints:N": a dataset of N integers (torch's own cost)."""
    import resource

    import torch
    from torch.utils.data import DataLoader, RandomSampler

    from vidlabel.torch_data import StoreFrames, collate_frames

    ints = str(store).startswith("ints:")
    arrays = str(store).startswith("arrays:")
    data: Any
    if ints:
        data = list(range(int(str(store)[5:])))
    elif arrays:
        data = PreallocatedFrames(*(int(v) for v in str(store)[7:].split(":")))
    else:
        data = StoreFrames(store)
    collate = None if ints or arrays else collate_frames
    gen = torch.Generator().manual_seed(0)
    sampler = None
    if epoch_samples:
        sampler = RandomSampler(data, replacement=True, num_samples=epoch_samples, generator=gen)
    elif not shuffle:
        sampler = RandomSampler(data, generator=gen)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, shuffle=shuffle if sampler is None else None,
                        num_workers=workers, collate_fn=collate)  # fmt: skip
    me0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    counts, seconds, firsts = [], [], []
    for _epoch in range(epochs):
        t_epoch, n = time.perf_counter(), 0
        for k, b in enumerate(loader):
            if k == 0:
                firsts.append(time.perf_counter() - t_epoch)
            n += len(b) if isinstance(b, torch.Tensor) else len(b["image"])
        counts.append(n)
        seconds.append(time.perf_counter() - t_epoch)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = sum(counts)

    def cpu(a: Any, b: Any) -> float:
        return (b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime) * 1000 / total

    return {"counts": counts, "seconds": seconds, "first_batch_ms": statistics.median(firsts) * 1000,
            "main_cpu_ms": cpu(me0, me), "worker_cpu_ms": cpu(kids0, kids),
            "main_faults": (me.ru_minflt - me0.ru_minflt) / total,
            "worker_faults": (kids.ru_minflt - kids0.ru_minflt) / total}  # fmt: skip


class PreallocatedFrames:
    """The torch-only ceiling's dataset: ``n`` samples, each ``{"image": (3, height, width) uint8}`` made once
    here (no read, no decode), batched by torch's ``default_collate``: what worker start, hand-over and join
    of batches of that shape cost alone."""

    def __init__(self, n: int, height: int, width: int) -> None:
        import torch

        self.n = n
        self.image = torch.full((3, height, width), 7, dtype=torch.uint8)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"image": self.image}


def rate(run: dict[str, Any], epochs: slice) -> float:
    return sum(run["counts"][epochs]) / sum(run["seconds"][epochs])


def row3(store720: Path, mixed: Path, repeat: int) -> None:
    """Each measurement: 5 epochs in a fresh process. "epochs 1-2" is the setting of the issue's table (a fresh
    process, two epochs of 150 samples: the first epoch's workers make the slabs); "epochs 2-3" the epochs
    whose new workers adopt the slabs of the epoch before; "epochs 4-5" the same once the pools have settled
    (a worker that needs one slab more than the pool it adopted makes one, in fresh memory, which a worker of
    a later epoch of this VM's long-running process can take 10-20 times longer to map than the first epoch's
    workers did: 175 against 20-29 ms for an 88 MB slab, ad hoc). Each case is measured beside torch alone:
    the same loader (2 workers, same batch size, sampler and epoch length) over as many integers, whose epoch
    is what torch's worker start, hand-over of as many batches and join cost with no sample work at all (before
    2026-12-03 one run over 150 integers in batches of 8 served every case, which understated torch's share of
    the 450-sample epochs of two frame sizes and so overstated their ceiling)."""
    cases = [("1280x720, batch 8", store720, 8, False, 0, (720, 1280)),
             ("1280x720, batch 32", store720, 32, False, 0, None),
             ("two frame sizes (640x480 + 768x576), shuffle=True, batch 8", mixed, 8, True, 0, None),
             ("1280x720, batch 8, epochs of 600 samples drawn with replacement", store720, 8, False, 600, (720, 1280)),
             ("1280x720, batch 8, epochs of 1,500 samples drawn with replacement", store720, 8, False, 1500,
              (720, 1280))]  # fmt: skip
    for label, store, batch, shuffle, epoch_samples, frame in cases:
        n = len(open_store(store))
        ints = f"ints:{n}"
        arrays = f"arrays:{n}:{frame[0]}:{frame[1]}" if frame else None
        zero, two, alone, ceiling_runs = [], [], [], []
        for _ in range(repeat):
            args = (str(batch), str(int(shuffle)), str(epoch_samples))
            zero.append(run_child("loader", str(store), "0", *args))
            two.append(run_child("loader", str(store), "2", *args))
            alone.append(run_child("loader", ints, "2", *args))
            if arrays:
                ceiling_runs.append(run_child("loader", arrays, "2", *args))
        named = [("0 workers", zero), ("2 workers", two), (f"torch alone ({n} integers), 2 workers", alone)]
        if ceiling_runs:
            named.append((f"torch-only ceiling ({n} preallocated {frame[1]}x{frame[0]} images), 2 workers",
                          ceiling_runs))  # fmt: skip
        for name, runs in named:
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k not in ("counts", "seconds")}
            print(
                f"  {label}, {name}: epochs 1-2 {statistics.median(rate(r, slice(0, 2)) for r in runs):,.0f}/s, "
                f"epochs 2-3 {statistics.median(rate(r, slice(1, 3)) for r in runs):,.0f}/s, "
                f"epochs 4-5 {statistics.median(rate(r, slice(3, 5)) for r in runs):,.0f}/s "
                f"({runs[0]['counts'][0]} samples an epoch), first batch of an epoch after "
                f"{m['first_batch_ms']:.0f} ms; CPU ms/sample main {m['main_cpu_ms']:.2f} + workers "
                f"{m['worker_cpu_ms']:.2f}; faults/sample main {m['main_faults']:.0f} + workers {m['worker_faults']:.0f}"
            )
        early = [rate(b, slice(0, 2)) / rate(a, slice(0, 2)) for a, b in zip(zero, two)]
        late = [rate(b, slice(1, 3)) / rate(a, slice(1, 3)) for a, b in zip(zero, two)]
        settled = [rate(b, slice(3, 5)) / rate(a, slice(3, 5)) for a, b in zip(zero, two)]
        print(f"| DataLoader 2 workers vs 0, {label}, persistent_workers=False | epochs 1-2 {spread(early)}; "
              f"epochs 2-3 {spread(late)}; epochs 4-5 {spread(settled)} | >= 1x |")  # fmt: skip
        caps = [ceiling(a, t) for a, t in zip(zero, alone)]
        print(f"  the most 2 workers can give here, from torch alone's epoch and the 0-worker CPU: {spread(caps)}")
        if ceiling_runs:
            of_ceiling = [rate(b, slice(0, 5)) / rate(c, slice(0, 5)) for b, c in zip(two, ceiling_runs)]
            print(f"| DataLoader 2 workers over StoreFrames vs the torch-only ceiling (the same loader over "
                  f"preallocated images), {label}, epochs 1-5 | {spread(of_ceiling)} | >= 0.9x |")  # fmt: skip


def row4(store720: Path, repeat: int) -> None:
    """What a chunk's first read in a fresh process costs against a warm read (a DataLoader worker with
    ``persistent_workers=False`` is a fresh process every epoch, so all its reads are first reads)."""
    modes = ("pread", "pread_whole", "populate", "fault")
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for _ in range(repeat):
        for m in modes:
            page_cache(store720)
            runs[m].append(run_child("firstreads", str(store720), m))
    med = {m: statistics.median(r["first"] for r in runs[m]) for m in modes}
    warm = statistics.median(r["warm"] for m in modes for r in runs[m] if m != "pread_whole")
    print(f"| CPU ms a 1280x720 chunk, first read in a fresh process: pread {med['pread']:.2f} (a whole-chunk pread "
          f"then its CRC, before 2026-12-03: {med['pread_whole']:.2f}), populate {med['populate']:.2f}, fault "
          f"{med['fault']:.2f}; a warm read {warm:.2f} (4) | - | - |")  # fmt: skip


def slab_mapping(repeat: int) -> None:
    """Milliseconds a forked child takes to map an 88 MB shared slab in one ``madvise`` call, read or write
    advice, for a slab this process filled (an adopted pool's) and for a new one (row 4's second line)."""
    import torch

    from vidlabel.store._fs import populate, populate_available
    from vidlabel.torch_data import _shm

    if not populate_available() or not hasattr(os, "fork"):
        print("  slab mapping: not measured here (no madvise(MADV_POPULATE_*) or no fork)")
        return
    nbytes = 32 * 1280 * 720 * 3
    filled = _shm._new_shared(nbytes)
    torch.empty(0, dtype=torch.uint8).set_(filled).fill_(1)
    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        for case in ("filled read", "filled write", "new read", "new write"):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: map and say how long it took
                os.close(r)
                slab = filled if case.startswith("filled") else _shm._new_shared(nbytes)
                t = time.perf_counter()
                populate(slab.data_ptr(), nbytes, write=case.endswith("write"))
                os.write(w, str(time.perf_counter() - t).encode())
                os._exit(0)
            os.close(w)
            with os.fdopen(r) as fh:
                out.setdefault(case, []).append(float(fh.read()) * 1000)
            os.waitpid(pid, 0)
    m = {k: statistics.median(v) for k, v in out.items()}
    print(f"| ms to map an 88 MB slab in a forked worker, filled by an earlier worker (adopted): read advice "
          f"{m['filled read']:.1f}, write advice {m['filled write']:.1f}; a new slab: read {m['new read']:.1f}, write "
          f"{m['new write']:.1f} (4) | - | - |")  # fmt: skip


def ceiling(zero: dict[str, Any], torch_alone: dict[str, Any]) -> float:
    """The best ratio 2 workers could reach on this machine, from two runs of this script: the 0-worker epoch
    takes ``T0`` seconds and ``C0`` seconds of CPU; torch's own 2-worker epoch over integers (fork, start,
    hand-over, join: no sample work at all) takes ``X`` seconds and ``Ct`` of CPU. With 2 workers the epoch
    needs at least ``X`` and, on this machine's cores, at least ``(Ct + C0) / cores`` (the samples' work at
    the main process's own CPU cost, spread perfectly): so the ratio is at most
    ``T0 / max(X, (Ct + C0) / cores)``, whatever the dataset code does."""
    n0 = zero["counts"][1] + zero["counts"][2]
    t0 = sum(zero["seconds"][1:3]) / 2
    c0 = zero["main_cpu_ms"] / 1000 * n0 / 2
    nt = sum(torch_alone["counts"][1:3])
    xt = sum(torch_alone["seconds"][1:3]) / 2
    ct = (torch_alone["main_cpu_ms"] + torch_alone["worker_cpu_ms"]) / 1000 * nt / 2
    return t0 / max(xt, (ct + c0) / (os.cpu_count() or 1))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, store, *rest = argv[1:]
        if kind == "passes":
            print(json.dumps(child_passes(store, rest[0], int(rest[1]), rest[2] == "1")))
        elif kind == "mappasses":
            print(json.dumps(child_map_passes(store, int(rest[0]))))
        elif kind == "bare":
            print(json.dumps(child_bare(store, int(rest[0]))))
        elif kind == "firstreads":
            print(json.dumps(child_first_reads(store, rest[0])))
        elif kind == "loader":
            print(json.dumps(loader_rate(Path(store), int(rest[0]), int(rest[1]), rest[2] == "1", int(rest[3]))))
        else:
            print(json.dumps(child_reads(store, rest[0] or None)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "vidlabel_bench")
    ap.add_argument("--only", default="1,2,3,4")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    print(f"machine: {machine()}")
    if "folios" in only:
        folios(args.workdir, args.repeat)
        if only == {"folios"}:
            return 0
    c480 = make_clip(args.workdir / "clip_640x480.mp4", 300, 640, 480)
    c576 = make_clip(args.workdir / "clip_768x576.mp4", 150, 768, 576)
    c720 = make_clip(args.workdir / "clip_1280x720.mp4", 150, 1280, 720)
    s480 = store_for(args.workdir, "480", {"c480": c480})
    s720 = store_for(args.workdir, "720", {"c720": c720})
    if "1" in only or "touches" in only:
        b480 = store_for(args.workdir, "480", {"c480": c480}, chunkwise=True)
        b720 = store_for(args.workdir, "720", {"c720": c720}, chunkwise=True)
        n480, n720 = large_frames(640, 480, 300), large_frames(1280, 720, 150)
        large480 = make_clip(args.workdir / f"clip_640x480_{n480}.mp4", n480, 640, 480)
        large720 = make_clip(args.workdir / f"clip_1280x720_{n720}.mp4", n720, 1280, 720)
        l480 = store_for(args.workdir, f"480_{n480}", {"c480": large480})
        l720 = store_for(args.workdir, f"720_{n720}", {"c720": large720})
        if "1" in only:
            row1({"640x480": (s480, b480, l480), "1280x720": (s720, b720, l720)}, args.repeat)
        if "touches" in only:
            sizes = {"640x480": (s480, l480), "1280x720": (s720, l720)}
            first_touches({f"{k}, {n / 1e6:,.0f} MB store": st for k, pair in sizes.items() for st in pair
                           for n in [sum(f.stat().st_size for f in st.glob("frames/*.h5"))]}, args.repeat)  # fmt: skip
    if "2" in only:
        row2(args.workdir, args.workdir / "ds_store_480", args.repeat)
    if "3" in only:
        mixed = store_for(args.workdir, "mixed", {"c480": c480, "c576": c576})
        row3(s720, mixed, args.repeat)
    if "4" in only:
        row4(s720, args.repeat)
        slab_mapping(args.repeat)
    os.environ.pop("_", None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
