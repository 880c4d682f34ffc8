"""Screenshots of a built board site in headless Chromium (the images of docs/operator.md).

``python -m icl.board.screenshot SITE BOARD ENTRY docs/img`` opens ``SITE/BOARD/index.html`` and
``SITE/BOARD/ENTRY.html`` at 1024 x 800 and writes ``board_page.png`` and ``board_entry.png`` (whole
pages), ``board_phone.png`` (the board at 390 px) and, when the site has one, ``board_scratch.png`` (the
professional from-scratch board). Needs the ``playwright`` package and Debian's
chromium at ``/usr/bin/chromium``; no browser is downloaded.
"""

from __future__ import annotations

import sys
from pathlib import Path

from icl.browser import CHROMIUM, CHROMIUM_ARGS


def capture(site: str | Path, board: str, entry: str, out: str | Path) -> list[Path]:
    """Write the three screenshots into ``out``; return their paths."""
    from playwright.sync_api import sync_playwright

    site, out = Path(site), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shots = [
        (site / board / "index.html", 1024, out / "board_page.png"),
        (site / board / f"{entry}.html", 1024, out / "board_entry.png"),
        (site / board / "index.html", 390, out / "board_phone.png"),
    ]
    if (site / "pro-test-from-scratch" / "index.html").is_file():
        shots.append((site / "pro-test-from-scratch" / "index.html", 1024, out / "board_scratch.png"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for page_file, width, png in shots:
            page = browser.new_page(viewport={"width": width, "height": 800})
            page.goto(page_file.resolve().as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(png), full_page=True)
            page.close()
        browser.close()
    return [png for _, _, png in shots]


if __name__ == "__main__":  # pragma: no cover - a maintenance script
    for path in capture(*sys.argv[1:5]):
        print(path)
