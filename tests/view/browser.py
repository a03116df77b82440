"""A real Chromium for the viewer's tests, its screenshot and its benchmark (Playwright driving Debian's browser).

Playwright's own browser download is never used: ``executable_path`` names the
system Chromium (``VIDLABEL_CHROMIUM``, default ``/usr/bin/chromium``), started
headless with an empty profile and nothing that reaches the network.
(No tests here; the module is named so that the viewer's tests own it.)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM = os.environ.get("VIDLABEL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "pip's playwright is not installed (pip install playwright; its browser download is not needed)"
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set VIDLABEL_CHROMIUM)"
    return None


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A Playwright browser context over the system Chromium with a fresh, empty profile."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="vidlabel-chromium-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": width, "height": height},
            device_scale_factor=1,
        )
        try:
            yield context
        finally:
            context.close()


def open_page(context: Any, url: str) -> Any:
    """A new tab on the viewer at ``url``, once the page has shown its first frame."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url)
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    assert page.get_attribute("body", "data-ready") == "1", (page.inner_text("#message"), errors)
    page.js_errors = errors
    return page


def wait_frame(page: Any, frame: int) -> None:
    """Wait until the page has painted ``frame`` (picture and overlay)."""
    page.wait_for_selector(f'#stage[data-frame="{frame}"]', timeout=30_000)


def canvas_pixels(page: Any, canvas: str) -> np.ndarray:
    """(H, W, 4) uint8 RGBA of a canvas of the page (``frame``: the picture; ``overlay``: boxes and masks)."""
    width, height, data = page.evaluate(
        """(id) => { const c = document.getElementById(id);
                     const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                     return [c.width, c.height, Array.from(d)]; }""",
        canvas,
    )
    return np.asarray(data, dtype=np.uint8).reshape(height, width, 4)
