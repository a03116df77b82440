"""The viewer's fixtures: a generated dataset and its store (pixels encode the frame number), servers, a browser."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.store_support import make_dataset
from tests.view.browser import browser_missing, chromium
from vidlabel import Release, export, view

#: The annotation rejected after the release was built: only ``--release live`` shows it.
REJECTED_FRAME = 8


@dataclass(frozen=True)
class ViewData:
    """A dataset (one 30-frame 64x48 clip ``cam``, its release built) and its store of the annotated frames."""

    root: Path
    dataset: Path
    store: Path
    release: Release
    rejected_id: int


@pytest.fixture(scope="session")
def view_data(tmp_path_factory: pytest.TempPathFactory) -> ViewData:
    root = tmp_path_factory.mktemp("view")
    ds = make_dataset(root, n_frames=30)
    release = ds.release("latest")
    export(ds, root / "store", progress=False)
    t = ds.snapshot().table
    (rejected,) = t.annotation_id[(t.start_frame == REJECTED_FRAME) & (t.label == t.labels.index("obj"))
                                  & (t.view < 0)]  # fmt: skip
    ds.set_status([int(rejected)], "rejected")
    ds.close()
    return ViewData(root, root / "ds", root / "store", release, int(rejected))


@pytest.fixture(scope="session")
def servers(view_data: ViewData) -> Iterator[dict[str, Any]]:
    """Running viewers on 127.0.0.1 and free ports: the dataset's latest release, its live rows, the store."""
    running = {
        "dataset": view(view_data.dataset),
        "live": view(view_data.dataset, release="live"),
        "store": view(view_data.store),
    }
    yield running
    for server in running.values():
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    missing = browser_missing()
    if missing:
        pytest.skip(missing)
    with chromium() as context:
        yield context
