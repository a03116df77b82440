"""DataLoader workers forked after the main process decoded: no hang, every sample exact.

A process forked while FFmpeg's decoder threads run holds a copy of the parent's decoders but not their
threads; a child that decodes with, or frees, such a copy can wait forever for threads that do not exist.
The datasets keep readers per process (a child drops the parent's without closing them and opens its
own). The loop runs in a subprocess with a timeout, so that a hang fails the test instead of blocking it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.samples.test_samples_video import CLIPS, VideoDataset, build_video_dataset

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from torch.utils.data import DataLoader
    from tests.media import read_frame_number
    from vidlabel import ClipSpec, Dataset, FrameSamples
    from vidlabel.torch_data import ClipStream, VideoFrames, VideoStream, collate_clips, collate_frames

    path, release, kind = sys.argv[1:]
    samples = FrameSamples(Dataset.open(path), release=release, kinds=("box",))
    if kind == "frames":
        dataset, collate = VideoFrames(samples), collate_frames
        dataset[3]  # the parent decodes, and keeps its reader open
    elif kind == "stream":
        dataset, collate = VideoStream(samples), collate_frames
        running = iter(dataset)
        next(running)  # the parent's decoder stays open mid-video while the workers are forked
    else:
        dataset, collate = ClipStream(samples.clips(ClipSpec(3, step=1))), collate_clips
        running = iter(dataset)
        next(running)
    out = []
    for epoch in range(2):
        loader = DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=collate, multiprocessing_context="fork")
        for batch in loader:
            if kind == "clips":
                for clip, frames in zip(batch["image"], batch["frame_indices"]):
                    shown = [read_frame_number(f.permute(1, 2, 0).numpy()) for f in clip]
                    out.append([shown, frames.tolist()])
            else:
                for image, frame in zip(batch["image"], batch["frame_index"]):
                    out.append([read_frame_number(image.permute(1, 2, 0).numpy()), int(frame)])
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def vds(tmp_path_factory: pytest.TempPathFactory) -> VideoDataset:
    return build_video_dataset(tmp_path_factory.mktemp("fork_after_decode"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork workers need os.fork")
@pytest.mark.parametrize("kind", ["frames", "stream", "clips"])
def test_fork_workers_after_the_parent_decoded_do_not_hang(vds: VideoDataset, kind: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for name in ("RANK", "WORLD_SIZE", "VIDLABEL_WORKER", "VIDLABEL_NUM_WORKERS"):
        env.pop(name, None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(vds.path), vds.release_id, kind],
            capture_output=True, text=True, timeout=240, cwd=ROOT, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"DataLoader fork workers over {kind} after the parent decoded hung (no result in 240 s)")
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = json.loads(done.stdout.strip().splitlines()[-1])
    assert pairs and all(shown == frame for shown, frame in pairs)
    if kind != "clips":
        assert len(pairs) == 2 * sum(n for n, _ in CLIPS.values())  # every annotated frame, once an epoch
