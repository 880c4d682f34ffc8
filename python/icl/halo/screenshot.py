"""Screenshots of the halo gallery in headless Chromium, and reading the change panel back from them.

``python -m icl.halo.screenshot docs/img`` regenerates ``docs/img/halo_gallery_H10.png`` and
``docs/img/halo_gallery_H14.png``: the gallery of the development cases H10 and H14 drawn, opened in
Chromium at 1500 x 900 and each case's figure captured as shown. Needs the ``playwright`` package (test
extra) and Debian's chromium at ``/usr/bin/chromium``; no browser is downloaded.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from icl.browser import CHROMIUM, CHROMIUM_ARGS

VIEWPORT = {"width": 1500, "height": 900}


def build_gallery(folder: str | Path, case_ids: tuple[str, ...]) -> None:
    """Render the development cases ``case_ids`` and write their gallery into ``folder``."""
    from icl.halo.cases import load_cases
    from icl.halo.gallery import case_figure, write_gallery
    from icl.halo.release import build_reference

    cases = [c for c in load_cases()[0] if c.id in case_ids]
    refs = {cond.id: build_reference(cond) for case in cases for cond in case.conditions}
    figures = {case.id: case_figure((case, {c.id: refs[c.id] for c in case.conditions})) for case in cases}
    write_gallery(
        folder, cases, {k: v[0] for k, v in figures.items()}, refs, {k: v[1] for k, v in figures.items()}
    )


def capture(page, case_id: str, path: str | Path | None = None) -> tuple[np.ndarray, dict]:
    """Screenshot of one case's figure as the page shows it: (RGB array, its panel geometry)."""
    from io import BytesIO

    from PIL import Image

    img = page.locator(f"#{case_id} img")
    img.scroll_into_view_if_needed()
    png = img.screenshot(path=None if path is None else str(path))
    geometry = json.loads(img.get_attribute("data-geometry"))
    rgb = np.asarray(Image.open(BytesIO(png)).convert("RGB"), dtype=float) / 255.0
    return rgb, geometry


def redness_profile(rgb: np.ndarray, geometry: dict, radii: np.ndarray, natural_width: float) -> np.ndarray:
    """Mean of red minus blue along circles about the change panel's centre, read from a screenshot.

    ``rgb`` is the captured figure (scaled from its natural width ``natural_width`` if the page shrank it).
    Pixels darker than 0.4 in every channel (the dotted marker, text) are left out, so a drawn circle does
    not count as a ring; each radius averages 720 points, NaN where none lie inside the panel.
    """
    s = rgb.shape[1] / natural_width
    panel = geometry["change_panel"]
    x0, top, x1, bottom = (v * s for v in panel["box_px"])
    (xa, xb), (ya, yb) = panel["xlim"], panel["ylim"]
    cx, cy = geometry["change_centre_arcmin"]
    phi = np.linspace(0, 2 * math.pi, 720, endpoint=False)
    out = np.full(len(radii), np.nan)
    for k, r in enumerate(radii):
        x, y = cx + r * np.cos(phi), cy + r * np.sin(phi)
        col = x0 + (x - xa) / (xb - xa) * (x1 - x0)
        row = top + (yb - y) / (yb - ya) * (bottom - top)
        inside = (x > xa) & (x < xb) & (y > ya) & (y < yb)
        px = rgb[row[inside].astype(int), col[inside].astype(int)]
        px = px[px.max(axis=1) > 0.4]
        if len(px):
            out[k] = float(np.mean(px[:, 0] - px[:, 2]))
    return out


def main(out_dir: str) -> None:
    """Draw the gallery of H10 and H14, open it in Chromium and write the two screenshots into ``out_dir``."""
    import tempfile

    from playwright.sync_api import sync_playwright

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        build_gallery(tmp, ("H10", "H14"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto((Path(tmp) / "index.html").as_uri())
            page.wait_for_load_state("load")
            for cid in ("H10", "H14"):
                rgb, _ = capture(page, cid)
                _small_png(rgb, out / f"halo_gallery_{cid}.png")
            browser.close()


def _small_png(rgb: np.ndarray, path: Path) -> None:
    """Write a screenshot as a 256-colour PNG (a third of the size; the figures use few colours)."""
    from PIL import Image

    img = Image.fromarray(np.round(rgb * 255).astype(np.uint8), "RGB")
    img.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
