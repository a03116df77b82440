"""Benchmark clips: from a frame store and from video, against a memcpy and the peers, on the same clip positions.

On generated H.264 clips whose frames show their frame number (1280x720 with a
keyframe every 250 frames, 848x480 with one every 30), for clips of 16 frames at
step 1 and of 8 frames at step 4, with the clip positions drawn once (seeded)
and used by every reader, it prints:

- store: clips/s of ``StoreClips[i]`` (and of the bare ``read_clip``) over a store exported with
  ``clip=ClipSpec(T, step)`` (codec none, page cache warm) against a memcpy of the same bytes
  (target >= 0.8x) and against torchcodec's ``clips_at_random_indices`` (target >= 20x);
- video: clips/s of ``FrameReader.read_many`` of each clip's frames (a reader on the path alone, and one given
  the index probe recorded, as VideoClips and ClipStream read) against torchcodec's ``get_frames_at`` (exact
  seek mode), its ``clips_at_random_indices`` and decord's ``get_batch`` on the same clips (target >= 1.5x
  each), with the wrong frames of each (a frame's number read from its pixels);
- wrong frames on a box-like clip (``--box``: by default the real ``box.mp4`` of the shared data, a phone
  clip with out-of-order decoder timestamps), each returned frame matched against a plain sequential decode;
- memory: peak RSS of a 2-worker DataLoader over 720p batches of 8 clips x 16 frames, per process, above
  its idle size, against the batch's bytes (target <= 2x).

Every ratio is measured in this run, rounds alternating. The peers run in their own virtual environment
(``--peers-python``); without one the script says so and prints vidlabel's figures alone. To make one::

    python3 -m venv /work/venv-peers
    # torchcodec needs torch: point the venv at one that has it, or pip install torch into it
    echo /path/to/a/venv/with/torch/lib/python3.11/site-packages > /work/venv-peers/lib/python3.11/site-packages/torch.pth
    /work/venv-peers/bin/pip install --no-deps torchcodec decord
    apt-get install ffmpeg   # torchcodec loads FFmpeg's shared libraries

Usage::

    python scripts/bench_clips.py [--dir /tmp/vidlabel_bench_clips] [--frames 600] [--clips 24] \\
        [--video-clips 8] [--repeat 3] [--peers-python /work/venv-peers/bin/python] [--small]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPECS = ((16, 1), (8, 4))
VIDEOS = {"720p": (1280, 720, 250), "480p": (848, 480, 30)}
DEFAULT_PEERS = "/work/venv-peers/bin/python"
DEFAULT_BOX = "/work/shared/data/videos/box.mp4"


# -- what runs in the peers' environment too (NumPy only) -------------------------------------------------------


def number_of(image: np.ndarray) -> int:
    """The frame number drawn by scripts/_benchlib.py's synthetic_frame (16 blocks of 16x16 px)."""
    gray = image[:32, :128].astype(np.float32).mean(axis=2)
    n = 0
    for k in range(16):
        r, c = divmod(k, 8)
        if gray[r * 16 + 4 : (r + 1) * 16 - 4, c * 16 + 4 : (c + 1) * 16 - 4].mean() > 128:
            n |= 1 << k
    return n


def signature(image: np.ndarray) -> np.ndarray:
    """A 12x16 grey thumbnail of a frame, to match it against a sequential decode."""
    h, w = image.shape[:2]
    gray = image.astype(np.float32).mean(axis=2)
    return gray[: h // 12 * 12, : w // 16 * 16].reshape(12, h // 12, 16, w // 16).mean(axis=(1, 3))


def peer_main(request: dict[str, Any]) -> dict[str, Any]:
    """Time one peer on the clips of ``request`` (in the peers' environment); its wrong frames too."""
    path, clips, method = request["path"], request["clips"], request["method"]
    frames = 0
    wrong = 0
    sigs = []
    # imports before the clock starts: the peers' import time is not what is compared
    if method == "decord":
        import decord
    else:
        from torchcodec.decoders import VideoDecoder
        from torchcodec.samplers import clips_at_random_indices
    t0 = time.perf_counter()
    if method == "decord":
        vr = decord.VideoReader(path, ctx=decord.cpu(0))
        got = (vr.get_batch(c).asnumpy() for c in clips)
    else:
        dec = VideoDecoder(path, seek_mode="exact")
        if method == "torchcodec_random":
            t, step = request["spec"]
            batch = clips_at_random_indices(
                dec, num_clips=len(clips), num_frames_per_clip=t, num_indices_between_frames=step
            )
            seconds = time.perf_counter() - t0
            return {"clips_per_s": len(clips) / seconds, "wrong": None, "frames": int(batch.data.shape[0] * t)}
        got = (dec.get_frames_at(c).data.permute(0, 2, 3, 1).numpy() for c in clips)
    for want, images in zip(clips, got):
        frames += len(images)
        if request.get("signatures"):
            sigs.extend(signature(im).tolist() for im in images)
        else:
            wrong += sum(number_of(im) != f for im, f in zip(images, want))
    seconds = time.perf_counter() - t0
    return {"clips_per_s": len(clips) / seconds, "wrong": wrong, "frames": frames, "signatures": sigs}


def run_peer(python: str | None, request: dict[str, Any]) -> dict[str, Any] | None:
    """One peer measurement in a fresh process of the peers' Python (None: no such environment)."""
    if python is None:
        return None
    out = subprocess.run(
        [python, __file__, "--peer", json.dumps(request)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if out.returncode != 0:
        print(f"    ({request['method']} failed: {out.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def peers_available(python: str | None) -> dict[str, bool]:
    """Which peers import in the peers' Python."""
    found = {"torchcodec": False, "decord": False}
    if python is None or not Path(python).exists():
        return found
    for name in found:
        code = f"import {name}" + ("; from torchcodec.decoders import VideoDecoder" if name == "torchcodec" else "")
        found[name] = subprocess.run([python, "-c", code], capture_output=True, check=False).returncode == 0
    return found


# -- vidlabel side -------------------------------------------------------------------------------------------------


def clip_positions(frame_count: int, t: int, step: int, n: int, seed: int) -> list[list[int]]:
    """``n`` clips (frame lists) at seeded random first frames, the same for every reader."""
    rng = np.random.default_rng(seed)
    span = (t - 1) * step + 1
    firsts = np.sort(rng.choice(frame_count - span + 1, size=n, replace=False))
    return [[int(f) + step * k for k in range(t)] for f in firsts]


def build_store(workdir: Path, video: Path, name: str, clips: list[list[int]], spec: tuple[int, int]) -> Path:
    """A dataset with a box on each clip's first frame, exported with the clip context (cached by name)."""
    from vidlabel import ClipSpec, Dataset, export, probe

    out = workdir / f"store-{name}-{spec[0]}x{spec[1]}"
    if (out / ".done").exists():
        return out
    ds_path = workdir / f"ds-{name}-{spec[0]}x{spec[1]}"
    if ds_path.exists():
        import shutil

        shutil.rmtree(ds_path)
    ds = Dataset.create(ds_path)
    ds.add_labels(["obj"])
    ds.add_video(probe(video, video_id=name))
    ds.add_annotations(
        [{"kind": "box", "label": "obj", "start_frame": c[0], "box": (10.0, 10.0, 90.0, 90.0)} for c in clips], name
    )
    ds.build()
    export(ds, out, clip=ClipSpec(spec[0], step=spec[1]), progress=False)
    (out / ".done").write_text("")
    return out


def time_rounds(fns: dict[str, Any], repeat: int) -> dict[str, list[float]]:
    """Per name, clips/s of each round (rounds alternating between names)."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            n = fn()
            out[k].append(n / (time.perf_counter() - t0))
    return out


def med(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f}/s ({min(values):,.1f}-{max(values):,.1f})"


def ratio(a: list[float], b: list[float]) -> str:
    r = [x / y for x, y in zip(a, b)]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"


def bench_store(store: Path, clips: list[list[int]], repeat: int, peer: dict[str, Any] | None) -> None:
    from vidlabel.torch_data import StoreClips

    dataset = StoreClips(store)
    assert [list(f) for f in dataset.frame_indices.tolist()] == clips, "the store's clips are not the positions"
    order = np.random.default_rng(1).permutation(len(dataset)).tolist()
    shape = tuple(dataset[0]["image"].shape)
    nbytes = int(np.prod(shape))
    out = np.empty((shape[0], shape[2], shape[3], 3), np.uint8)
    # memcpy source: 4 clips' worth, so that the bytes come from memory, not the CPU cache, as a read's do
    source = np.random.default_rng(2).integers(0, 255, (4, *out.shape), dtype=np.uint8)

    def memcpy() -> int:
        for k in range(len(order)):
            np.copyto(out, source[k % 4])
        return len(order)

    def read_clip() -> int:
        for j in order:
            dataset.clips.read(j, out)
        return len(order)

    def samples() -> int:
        for j in order:
            dataset[j]
        return len(order)

    unchecked = StoreClips(store, verify_checksums=False)

    def samples_unchecked() -> int:
        for j in order:
            unchecked[j]
        return len(order)

    def read_unchecked() -> int:
        for j in order:
            unchecked.clips.read(j, out)
        return len(order)

    wrong = sum(
        number_of(f.permute(1, 2, 0).numpy()) != n
        for j in range(len(dataset))
        for f, n in zip(dataset[j]["image"], clips[j])
    )
    samples()  # warm: the page cache and the process's open files
    read_unchecked()
    fns = {"memcpy": memcpy, "read_clip": read_clip, "unchecked": read_unchecked, "StoreClips[i]": samples,
           "StoreClips[i] unchecked": samples_unchecked}  # fmt: skip
    runs = time_rounds(fns, repeat)
    print(f"    store clip = {nbytes / 2**20:.1f} MiB; wrong frames {wrong}")
    print(f"    memcpy of the same bytes   {med(runs['memcpy'])}")
    print(
        f"    FrameStore.read_clip       {med(runs['read_clip'])}  = {ratio(runs['read_clip'], runs['memcpy'])} memcpy"
    )
    print(
        f"    read_clip without CRC-32C  {med(runs['unchecked'])}  = {ratio(runs['unchecked'], runs['memcpy'])} memcpy"
        " (verify_checksums=False)"
    )
    print(
        f"    StoreClips[i] (targets)    {med(runs['StoreClips[i]'])}  = {ratio(runs['StoreClips[i]'], runs['memcpy'])}"
        " memcpy (target >= 0.8x)"
    )
    print(
        f"    StoreClips[i] without CRC  {med(runs['StoreClips[i] unchecked'])}  = "
        f"{ratio(runs['StoreClips[i] unchecked'], runs['memcpy'])} memcpy (verify_checksums=False)"
    )
    if peer is not None:
        rate = statistics.median(runs["StoreClips[i]"])
        print(
            f"    torchcodec clips_at_random_indices {peer['clips_per_s']:.2f}/s: StoreClips = "
            f"{rate / peer['clips_per_s']:.0f}x (target >= 20x)"
        )


def bench_video(
    video: Path, clips: list[list[int]], repeat: int, peers_python: str | None, have: dict, random_peer: dict | None
) -> dict:
    """FrameReader.read_many against torchcodec and decord on the same clips (one fresh decoder per round):
    a reader on the path alone (it indexes the file and checks seeking once, as torchcodec's exact mode scans
    it) and a reader given the index probe recorded at registration (as VideoClips and ClipStream read)."""
    from vidlabel import FrameReader, probe

    meta = probe(video)

    def read_clips(reader: FrameReader) -> int:
        wrong = 0
        with reader:
            for c in clips:
                wrong += sum(number_of(im) != f for im, f in zip(reader.read_many(c), c))
        return wrong

    def ours() -> int:
        ours.wrong = read_clips(FrameReader(video))  # type: ignore[attr-defined]
        return len(clips)

    def registered() -> int:
        registered.wrong = read_clips(FrameReader.for_video(meta))  # type: ignore[attr-defined]
        return len(clips)

    rates: dict[str, list[float]] = {"vidlabel": [], "registered": [], "torchcodec": [], "decord": []}
    wrong: dict[str, int | None] = {"vidlabel": 0, "registered": 0, "torchcodec": None, "decord": None}
    for _ in range(repeat):
        rates["vidlabel"] += time_rounds({"v": ours}, 1)["v"]
        wrong["vidlabel"] = ours.wrong  # type: ignore[attr-defined]
        rates["registered"] += time_rounds({"v": registered}, 1)["v"]
        wrong["registered"] = registered.wrong  # type: ignore[attr-defined]
        for peer in ("torchcodec", "decord"):
            if have[peer]:
                got = run_peer(peers_python, {"path": str(video), "clips": clips, "method": peer})
                if got is not None:
                    rates[peer].append(got["clips_per_s"])
                    wrong[peer] = got["wrong"]
    print(f"    FrameReader.read_many      {med(rates['vidlabel'])}, wrong frames {wrong['vidlabel']}")
    print(f"      with the registered index {med(rates['registered'])}, wrong frames {wrong['registered']}")
    for peer in ("torchcodec", "decord"):
        if rates[peer]:
            print(
                f"    {peer:<26} {med(rates[peer])}, wrong frames {wrong[peer]}: vidlabel = "
                f"{ratio(rates['vidlabel'], rates[peer])}, with the registered index "
                f"{ratio(rates['registered'], rates[peer])} (target >= 1.5x)"
            )
        else:
            print(f"    {peer:<26} absent")
    if random_peer is not None:
        tc = random_peer["clips_per_s"]
        print(
            f"    torchcodec clips_at_random_indices {tc:,.1f}/s (as many clips, its own positions): vidlabel = "
            f"{statistics.median(rates['vidlabel']) / tc:.2f}x, with the registered index "
            f"{statistics.median(rates['registered']) / tc:.2f}x (target >= 1.5x)"
        )
    return rates


def bench_box(box: Path, n: int, peers_python: str | None, have: dict) -> None:
    """Wrong frames on a real phone clip: every returned frame matched to the nearest of a sequential decode."""
    import av

    from vidlabel import FrameReader

    with av.open(str(box)) as container:
        truth = np.stack([signature(f.to_ndarray(format="rgb24")) for f in container.decode(video=0)])
    count = truth.shape[0]
    print(f"== box-like clip {box} ({count} frames decoded in order): wrong frames of {n} clips of 16 at step 1")
    clips = clip_positions(count, 16, 1, n, seed=7)

    def wrong_of(sigs: np.ndarray) -> int:
        want = np.array([f for c in clips for f in c])
        dist = np.abs(sigs[:, None] - truth[None]).mean(axis=(2, 3))
        return int((dist.argmin(axis=1) != want).sum())

    reader = FrameReader(box)
    ours = np.stack([signature(im) for c in clips for im in reader.read_many(c)])
    reader.close()
    print(f"    FrameReader.read_many      wrong frames {wrong_of(ours)} of {ours.shape[0]}")
    for peer in ("torchcodec", "decord"):
        got = None
        if have[peer]:
            got = run_peer(peers_python, {"path": str(box), "clips": clips, "method": peer, "signatures": True})
        if got is None:
            print(f"    {peer:<26} absent")
        else:
            print(f"    {peer:<26} wrong frames {wrong_of(np.array(got['signatures']))} of {len(got['signatures'])}")


# -- memory ----------------------------------------------------------------------------------------------------


def _status_kb(pid: int | str, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _worker_idle(folder: str, worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: record this worker's RSS (all, and without file pages) before it reads."""
    rss, file = _status_kb("self", "VmRSS"), _status_kb("self", "RssFile")
    Path(folder, f"idle-{worker_id}.json").write_text(json.dumps([rss, rss - file]))


def measure_memory(store: str, batches: int) -> dict[str, Any]:
    """In a fresh process: a 2-worker DataLoader of 8 clips a batch; each process's peak RSS (its high-water
    mark) and the peak of its RSS without file pages (anonymous and shared memory: the frames file's pages a
    read maps are page cache, shared and reclaimable), sampled every 10 ms, each above its own idle size."""
    import functools
    import tempfile
    import threading

    import torch
    from torch.utils.data import DataLoader

    from vidlabel.torch_data import StoreClips, collate_clips

    dataset = StoreClips(store)
    first = dataset[0]["image"]
    batch_bytes = 8 * first.numel()
    del first
    folder = tempfile.mkdtemp()
    rss, file = _status_kb("self", "VmRSS"), _status_kb("self", "RssFile")
    idle = {"main": [rss, rss - file]}
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the idle size
    loader = DataLoader(
        dataset, batch_size=8, shuffle=True, num_workers=2, collate_fn=collate_clips, persistent_workers=True,
        worker_init_fn=functools.partial(_worker_idle, folder),
    )  # fmt: skip
    it = iter(loader)
    pids = {"main": os.getpid(), **{f"worker {k}": w.pid for k, w in enumerate(it._workers)}}  # type: ignore[attr-defined]
    no_file = dict.fromkeys(pids, 0)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for name, pid in pids.items():
                no_file[name] = max(no_file[name], _status_kb(pid, "VmRSS") - _status_kb(pid, "RssFile"))
            time.sleep(0.01)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    seen = 0
    while seen < batches:
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            continue
        assert batch["image"].shape[0] <= 8 and batch["image"].dtype == torch.uint8
        seen += 1
        del batch
    done.set()
    watcher.join()
    peaks = {name: _status_kb(pid, "VmHWM") for name, pid in pids.items()}
    for k in range(2):
        idle[f"worker {k}"] = json.loads(Path(folder, f"idle-{k}.json").read_text())
    del it
    return {"idle_kb": idle, "peaks_kb": peaks, "no_file_kb": no_file, "batch_bytes": batch_bytes, "batches": seen}


def bench_memory(store: Path, batches: int) -> None:
    out = subprocess.run(
        [sys.executable, __file__, "--measure-memory", str(store), str(batches)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        print(f"    memory measurement failed: {out.stderr.strip()[-500:]}")
        return
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mib = r["batch_bytes"] / 2**20
    print(
        f"== memory: 2-worker DataLoader, batches of 8 clips x 16 frames 720p ({mib:.0f} MiB), {r['batches']} batches"
    )
    for name, peak in r["peaks_kb"].items():
        idle, idle_no_file = r["idle_kb"][name]
        above = (peak - idle) * 1024 / r["batch_bytes"]
        no_file = (r["no_file_kb"][name] - idle_no_file) * 1024 / r["batch_bytes"]
        print(
            f"    {name:<8} peak RSS {peak / 1024:,.0f} MiB (idle {idle / 1024:,.0f}): {above:.2f}x the batch above "
            f"idle (target <= 2x); without the frames file's mapped pages {no_file:.2f}x"
        )


# -- main ----------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/vidlabel_bench_clips")
    parser.add_argument("--frames", type=int, default=600, help="frames of each generated video")
    parser.add_argument("--clips", type=int, default=24, help="clips per store")
    parser.add_argument("--video-clips", type=int, default=8, help="clips per video read from video")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peers-python", default=DEFAULT_PEERS)
    parser.add_argument("--box", default=DEFAULT_BOX)
    parser.add_argument("--memory-batches", type=int, default=6)
    parser.add_argument("--small", action="store_true", help="a quick run: 300 frames, 8 clips, 3 video clips")
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--measure-memory", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        print(json.dumps(peer_main(json.loads(args.peer))))
        return 0
    sys.path.insert(0, str(ROOT))
    if args.measure_memory:
        print(json.dumps(measure_memory(args.measure_memory[0], int(args.measure_memory[1]))))
        return 0
    from scripts._benchlib import machine, make_clip

    if args.small:
        args.frames, args.clips, args.video_clips, args.memory_batches = 300, 8, 3, 3
    workdir = Path(args.dir)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    peers_python = args.peers_python if Path(args.peers_python).exists() else None
    have = peers_available(peers_python)
    print(
        "peers: "
        + ", ".join(f"{k} {'in ' + str(peers_python) if v else 'absent'}" for k, v in have.items())
        + ("" if any(have.values()) else " (see the docstring to install them in their own venv)")
    )
    for name, (w, h, gop) in VIDEOS.items():
        video = make_clip(workdir / f"{name}-gop{gop}-{args.frames}.mp4", args.frames, w, h, gop=gop)
        for t, step in SPECS:
            print(f"== {name} GOP {gop}, clips of {t} frames at step {step}")
            clips = clip_positions(args.frames, t, step, args.clips, seed=t * 100 + step)
            store = build_store(workdir, video, f"{name}-{args.frames}", clips, (t, step))
            peer = None
            if have["torchcodec"]:
                peer = run_peer(peers_python, {"path": str(video), "clips": clips[: args.video_clips],
                                               "method": "torchcodec_random", "spec": [t, step]})  # fmt: skip
            bench_store(store, clips, args.repeat, peer)
            bench_video(video, clips[: args.video_clips], args.repeat, peers_python, have, peer)
    if Path(args.box).exists():
        bench_box(Path(args.box), args.video_clips, peers_python, have)
    else:
        print(f"== box-like clip: {args.box} not found (give --box PATH)")
    store = workdir / f"store-720p-{args.frames}-16x1"
    bench_memory(store, args.memory_batches)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
