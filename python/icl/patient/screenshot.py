"""Regenerate ``docs/img/patient_annotate.png``: the annotation page on a 1366x768 screen with two shapes.

Run ``python -m icl.patient.screenshot docs/img/patient_annotate.png``. Needs the ``playwright`` package (test
extra) and Debian's chromium at ``/usr/bin/chromium``; no browser is downloaded.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from icl.browser import CHROMIUM, CHROMIUM_ARGS

PAGE = Path(__file__).with_name("annotate.html")


def canvas_point(
    box: dict, size: tuple[float, float], k: float, x_deg: float, y_deg: float
) -> tuple[float, float]:
    """Viewport coordinates of an angle on the drawing area (the page's own mapping, +y up)."""
    w, h = size
    return (
        box["x"] + 1 + w / 2 + k * math.tan(math.radians(x_deg)),
        box["y"] + 1 + h / 2 - k * math.tan(math.radians(y_deg)),
    )


def main(out: str) -> None:
    """Drive the page and write the screenshot to ``out``."""
    from playwright.sync_api import sync_playwright

    ruler_mm, distance_mm = 52.9, 400.0
    k = 200.0 / ruler_mm * distance_mm
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(PAGE.resolve().as_uri())
        page.fill("#rulerMm", str(ruler_mm))
        page.fill("#distMm", str(distance_mm))
        page.click("#applyCal")
        page.fill("#patientId", "SYN-001")  # the identity fields start empty
        page.fill("#visitId", "V1")
        page.select_option("#eye", "OD")
        page.select_option("#conditionId", "P01")
        box = page.locator("#canvas").bounding_box()
        size = (box["width"] - 2, box["height"] - 2)
        for tool, (x0, y0), (x1, y1) in (("arc", (0, 0), (2.6, 2.2)), ("circle", (0.2, 0.1), (1.8, 0.1))):
            page.click(f"#tools [data-tool={tool}]")
            page.mouse.move(*canvas_point(box, size, k, x0, y0))
            page.mouse.down()
            page.mouse.move(*canvas_point(box, size, k, x1, y1), steps=8)
            page.mouse.up()
        page.fill("#ed_band_width_deg_", "0.3")
        page.press("#ed_band_width_deg_", "Tab")
        page.evaluate("document.getElementById('panel').scrollTop = 0")
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=out)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/patient_annotate.png")
