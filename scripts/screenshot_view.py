"""The viewer's screenshot in the docs (docs/images/view.png), made with the browser tests' machinery.

Runs the demo (a generated 640x360 clip with tracked boxes, a mask and a marker) into a temporary folder,
opens ``vidlabel view`` over its dataset's release in headless Chromium (tests/view/browser.py) at a frame
inside the marker, and saves the page. The PNG is reduced to a 256-colour palette when Pillow is installed,
which keeps it small.

Usage: python scripts/screenshot_view.py [OUT.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.view.browser import browser_missing, chromium, open_page, wait_frame

OUT = Path(__file__).resolve().parents[1] / "docs" / "images" / "view.png"
FRAME = 104


def main() -> int:
    missing = browser_missing()
    if missing:
        print(f"screenshot_view: {missing}", file=sys.stderr)
        return 1
    import vidlabel
    from vidlabel.demo import demo_truth, run_demo

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    with tempfile.TemporaryDirectory() as tmp:
        truth = demo_truth(frame_count=150, width=640, height=360)
        made = run_demo(Path(tmp) / "demo", progress=False, epochs=1, num_workers=0, truth=truth, log=None)
        with vidlabel.view(made["paths"]["dataset"]) as server, chromium(1100, 760) as context:
            page = open_page(context, f"{server.url}#video=demo&n={FRAME}")
            wait_frame(page, FRAME)
            page.screenshot(path=str(out), full_page=True)
    try:
        from PIL import Image
    except ImportError:
        pass
    else:
        Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
