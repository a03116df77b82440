"""Single random reads from a frame store against a memcpy of the same frames and against the peers, and
``FrameStore.read_rows`` against StoreFrames' batch reads over it, in one run.

On a generated 640x480 H.264 clip (cup.mp4's size; a noise texture whose frames show their frame number),
exported with ``--frames all``, codec none (HDF5, the page cache warm), it prints, each as the median and range
of per-round ratios (rounds alternating between the methods, every method reading the same random positions):

1. ``StoreFrames[i]`` single random reads against a memcpy of the same frames (all of them held in memory, each
   copied into a fresh array: target >= 0.6x), with the per-chunk CRC-32C check on (the default) and off; the
   bare ``FrameStore.read_row``; and against the peers in the same loop (target >= 2x each): h5py reading the
   store's own frames file (``dataset[i]``), LitData (``StreamingDataset[i]`` over a ``BinaryWriter`` output of
   the same frames) and MosaicML Streaming (``StreamingDataset.get_item(i)`` over an ``MDSWriter`` output,
   ``ndarray:uint8`` column), the last two in their own virtual environment, in a fresh process each round
   (each timed after a warm pass over the same positions).
2. ``FrameStore.read_rows`` of a batch's rows against ``StoreFrames.__getitems__`` of the same samples, batches of
   8 random samples, one-frame chunks and chunks of 8 frames (target >= 1x: the lower layer is never slower).

Every frame read is checked against the frame number drawn into it. The peers' environment: a virtual
environment whose Python has litdata and mosaicml-streaming (``pip install litdata mosaicml-streaming``);
without one the script says so and prints vidlabel's figures alone.

Usage::

    python scripts/bench_storeread.py [--dir /tmp/vidlabel_bench_storeread] [--frames 300] [--reads 1500] \\
        [--repeat 5] [--peers-python /tmp/venv-sr/bin/python]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 640, 480
DEFAULT_PEERS = "/tmp/venv-sr/bin/python"


# -- the peers' side (NumPy only) -----------------------------------------------------------------------------------


def _no_transformers() -> None:
    """MosaicML Streaming imports a few of transformers' types (batch and tokenizer classes) at import: where
    transformers is not installed, any ``transformers.*`` module is a stand-in whose names are ``dict`` (this
    script writes and reads datasets; it never batches or tokenizes through them)."""
    import importlib.abc
    import importlib.machinery

    try:
        import transformers  # noqa: F401
    except ImportError:

        def stand_in(attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            return dict

        class StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
                if name == "transformers" or name.startswith("transformers."):
                    return importlib.machinery.ModuleSpec(name, self, is_package=True)
                return None

            def create_module(self, spec: Any) -> Any:
                module = types.ModuleType(spec.name)
                module.__path__ = []
                module.__getattr__ = stand_in  # type: ignore[method-assign]
                return module

            def exec_module(self, module: Any) -> None:
                pass

        sys.meta_path.insert(0, StandIn())


def peer_write(request: dict[str, Any]) -> dict[str, Any]:
    """Write the frames file's frames as a LitData and an MDS dataset (raw uint8, no compression)."""
    frames = np.load(request["frames"], mmap_mode="r")
    out = Path(request["out"])
    from litdata.streaming.writer import BinaryWriter

    writer = BinaryWriter(str(out / "litdata"), chunk_bytes="64MB")
    for i in range(frames.shape[0]):
        writer[i] = {"image": np.ascontiguousarray(frames[i])}
    writer.done()
    writer.merge()
    _no_transformers()
    from streaming import MDSWriter

    with MDSWriter(out=str(out / "mds"), columns={"image": "ndarray:uint8"}, size_limit=1 << 26) as mds:
        for i in range(frames.shape[0]):
            mds.write({"image": np.ascontiguousarray(frames[i])})
    return {"ok": True}


def peer_read(request: dict[str, Any]) -> dict[str, Any]:
    """Reads/s of one peer over ``request['positions']`` (after a warm pass), and its wrong frames."""
    out, positions = Path(request["out"]), request["positions"]
    if request["method"] == "litdata":
        from litdata import StreamingDataset

        dataset: Any = StreamingDataset(str(out / "litdata"))

        def get(i: int) -> np.ndarray:
            return np.asarray(dataset[i]["image"])
    else:
        _no_transformers()
        from streaming import StreamingDataset as MDSDataset

        dataset = MDSDataset(local=str(out / "mds"), shuffle=False, batch_size=1)

        def get(i: int) -> np.ndarray:
            return np.asarray(dataset.get_item(i)["image"])

    for i in positions:
        get(i)
    t0 = time.perf_counter()
    for i in positions:
        get(i)
    rate = len(positions) / (time.perf_counter() - t0)
    wrong = sum(number_of(get(i).reshape(HEIGHT, WIDTH, 3)) != i for i in positions[:50])
    return {"rate": rate, "wrong": wrong}


def run_peer(python: str | None, request: dict[str, Any]) -> dict[str, Any] | None:
    if python is None:
        return None
    done = subprocess.run(
        [python, __file__, "--peer", json.dumps(request)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        print(f"    ({request['method']} failed: {done.stderr.strip().splitlines()[-1:]})", flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def number_of(image: np.ndarray) -> int:
    """The frame number drawn by scripts/_benchlib.py's synthetic_frame (16 blocks of 16x16 px)."""
    gray = image[:32, :128].astype(np.float32).mean(axis=2)
    n = 0
    for k in range(16):
        r, c = divmod(k, 8)
        if gray[r * 16 + 4 : (r + 1) * 16 - 4, c * 16 + 4 : (c + 1) * 16 - 4].mean() > 128:
            n |= 1 << k
    return n


# -- vidlabel's side --------------------------------------------------------------------------------------------


def build(work: Path, frames: int) -> dict[str, Path]:
    """The clip, its dataset (a box on every frame) and its stores with one-frame and eight-frame chunks."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from _benchlib import make_clip

    from vidlabel import Dataset, export, probe

    clip = make_clip(work / f"clip_{WIDTH}x{HEIGHT}_{frames}.mp4", frames, WIDTH, HEIGHT, gop=30)
    stores = {"cf1": work / f"store_cf1_{frames}", "cf8": work / f"store_cf8_{frames}"}
    if all((p / ".done").exists() for p in stores.values()):
        return stores
    ds_path = work / f"ds_{frames}"
    shutil.rmtree(ds_path, ignore_errors=True)
    ds = Dataset.create(ds_path)
    ds.add_labels(["box"])
    ds.add_video(probe(clip, video_id="cup"))
    boxes = [{"kind": "box", "label": "box", "start_frame": n, "box": (10.0 + n % 50, 20.0, 200.0, 240.0)}
             for n in range(frames)]  # fmt: skip
    ds.add_annotations(boxes, "cup")
    ds.build()
    for name, cf in (("cf1", 1), ("cf8", 8)):
        shutil.rmtree(stores[name], ignore_errors=True)
        export(ds, stores[name], frames="all", codec="none", chunk_frames=cf, progress=False)
        (stores[name] / ".done").write_text("")
    return stores


def frames_file(store: Path) -> Path:
    (path,) = (store / "frames").glob("*.h5")
    return path


def rounds(fns: dict[str, Any], repeat: int, items: int, peers: dict[str, Any] | None = None) -> dict[str, list[float]]:
    """Per name, items/s of each round, the names alternating within a round; ``peers`` (name -> a function
    returning items/s or None) run after vidlabel's in each round."""
    out: dict[str, list[float]] = {k: [] for k in [*fns, *(peers or {})]}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[k].append(items / (time.perf_counter() - t0))
        for k, peer in (peers or {}).items():
            rate = peer()
            if rate is not None:
                out[k].append(rate)
    return out


def ratio(a: list[float], b: list[float]) -> str:
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})" if r else "n/a"


def rate(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f}/s ({min(values):,.0f}-{max(values):,.0f})" if values else "n/a"


def single_reads(stores: dict[str, Path], work: Path, args: argparse.Namespace) -> dict[str, Any]:
    import h5py

    from vidlabel.store import open_store
    from vidlabel.torch_data import StoreFrames

    store_dir = stores["cf1"]
    checked, unchecked = StoreFrames(store_dir), StoreFrames(store_dir, verify_checksums=False)
    bare = open_store(store_dir)
    n = len(checked)
    positions = np.random.default_rng(0).integers(0, n, args.reads).tolist()
    held = np.stack(bare.read_rows("cup", list(range(n))))  # memcpy's source: the same frames, in memory
    assert [number_of(f) for f in held] == list(range(n)), "the store's rows are not the clip's frames"
    h5 = h5py.File(frames_file(store_dir), "r")["frames"]
    for p in positions[:50]:
        image = checked[p]["image"].permute(1, 2, 0).numpy()
        assert number_of(image) == p and np.array_equal(image, held[p]) and np.array_equal(h5[p], held[p])
    peer_python = args.peers_python if args.peers_python and Path(args.peers_python).exists() else None
    peers: dict[str, Any] = {}
    if peer_python is not None:
        np.save(work / "frames.npy", held)
        shutil.rmtree(work / "peers", ignore_errors=True)
        wrote = run_peer(
            peer_python, {"method": "write", "frames": str(work / "frames.npy"), "out": str(work / "peers")}
        )
        for name in ("litdata", "mds") if wrote else ():
            request = {"method": name, "out": str(work / "peers"), "positions": positions}

            def peer(request: dict[str, Any] = request) -> float | None:
                got = run_peer(peer_python, request)
                if got is not None and got["wrong"]:
                    print(f"    ({request['method']}: {got['wrong']} wrong frames of 50)")
                return None if got is None else float(got["rate"])

            peers[name] = peer
    else:
        print(f"no peers' Python at {args.peers_python!r}: LitData and MosaicML Streaming are left out", flush=True)

    def memcpy() -> None:
        for p in positions:
            np.copyto(np.empty(held.shape[1:], np.uint8), held[p])

    def each(read: Any) -> Any:
        # each result dropped before the next read, as memcpy's is (a list of them all would time page faults)
        def loop() -> None:
            for p in positions:
                read(p)

        return loop

    fns = {
        "memcpy": memcpy,
        "StoreFrames[i]": each(checked.__getitem__),
        "StoreFrames[i] unchecked": each(unchecked.__getitem__),
        "FrameStore.read_row": each(lambda p: bare.read_row("cup", p)),
        "h5py dataset[i]": each(h5.__getitem__),
    }
    for fn in fns.values():  # warm: every chunk read (and checked) once
        fn()
    runs = rounds(fns, args.repeat, len(positions), peers)
    print(f"1. single random reads, {WIDTH}x{HEIGHT}, {n} frames, {len(positions)} reads a round, {args.repeat} rounds")
    for name, values in runs.items():
        line = f"    {name:26s} {rate(values):>26s}  {ratio(values, runs['memcpy'])} memcpy"
        if name == "StoreFrames[i]":
            line += " (target >= 0.6x)"
        print(line, flush=True)
    print(
        f"    CRC-32C check on/off (StoreFrames[i]): {ratio(runs['StoreFrames[i]'], runs['StoreFrames[i] unchecked'])}"
    )
    for name in ("h5py dataset[i]", *peers):
        if runs[name]:
            print(f"    StoreFrames[i] vs {name}: {ratio(runs['StoreFrames[i]'], runs[name])} (target >= 2x)")
    return {k: statistics.median(v) for k, v in runs.items() if v}


def batch_reads(stores: dict[str, Path], args: argparse.Namespace) -> dict[str, Any]:
    from vidlabel.torch_data import StoreFrames

    out: dict[str, Any] = {}
    print("2. FrameStore.read_rows against StoreFrames.__getitems__ of the same batches of 8 random samples")
    for name, store_dir in stores.items():
        frames = StoreFrames(store_dir)
        store = frames.store
        positions = np.random.default_rng(1).integers(0, len(frames), args.reads // 8 * 8).tolist()
        batches = [positions[k : k + 8] for k in range(0, len(positions), 8)]
        rows = [[frames.samples.locate(i)[1] for i in b] for b in batches]
        got = store.read_rows("cup", rows[0])
        assert [number_of(f) for f in got] == rows[0]

        def by_batch(frames: Any = frames, batches: list[list[int]] = batches) -> None:
            for batch in batches:  # each batch dropped before the next is read
                frames.__getitems__(batch)

        def by_rows(store: Any = store, rows: list[list[int]] = rows) -> None:
            for batch in rows:
                store.read_rows("cup", batch)

        fns = {"StoreFrames batch": by_batch, "read_rows": by_rows}
        for fn in fns.values():
            fn()
        runs = rounds(fns, args.repeat, len(positions))
        out[name] = statistics.median(a / b for a, b in zip(runs["read_rows"], runs["StoreFrames batch"]))
        print(f"    {name}: StoreFrames batch {rate(runs['StoreFrames batch'])}, read_rows {rate(runs['read_rows'])}: "
              f"{ratio(runs['read_rows'], runs['StoreFrames batch'])} (target >= 1x)", flush=True)  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/vidlabel_bench_storeread", help="work folder (clip and stores kept)")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--reads", type=int, default=1500, help="random reads a round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds")
    parser.add_argument("--peers-python", default=DEFAULT_PEERS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        request = json.loads(args.peer)
        print(json.dumps(peer_write(request) if request["method"] == "write" else peer_read(request)))
        return 0
    # after PYTHONPATH: PYTHONPATH=/path/to/another/checkout measures that checkout's vidlabel with this script
    sys.path.append(str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    from _benchlib import machine

    import vidlabel

    print(f"machine: {machine()}; vidlabel from {Path(vidlabel.__file__).parent.parent}", flush=True)
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    stores = build(work, args.frames)
    single_reads(stores, work, args)
    batch_reads(stores, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
