"""Gallery: fixed mapping, readable text, the detector edge, and in headless Chromium the H10 ring of added
light visible in the change panel where its profile marks it."""

import math
import shutil

import numpy as np
import pytest
from icl.halo.cases import load_cases
from icl.halo.gallery import (
    CHANGE_DECADES,
    FIG_PX,
    FONT,
    LOG_MAX,
    LOG_MIN,
    change_map,
    draw_case,
    fmt,
    log_flux,
)
from icl.halo.release import build_reference

_REFS = {}


def refs_of(case_id):
    case = next(c for c in load_cases()[0] if c.id == case_id)
    if case_id not in _REFS:
        _REFS[case_id] = {c.id: build_reference(c) for c in case.conditions}
    return case, _REFS[case_id]


def test_display_mapping_is_fixed():
    a = np.array([0.0, 1e-12, 1e-9, 1e-5, 1e-1])
    np.testing.assert_allclose(log_flux(a), [LOG_MIN, LOG_MIN, -9.0, -5.0, LOG_MAX])


def test_change_map_is_symmetric_and_numbers_have_no_negative_zero():
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64)) * 1e-4, rng.random((64, 64)) * 1e-4
    np.testing.assert_allclose(change_map(a, b, 4 / 60), -change_map(b, a, 4 / 60), atol=1e-12)
    assert not np.any(change_map(a, a, 4 / 60))
    assert np.abs(change_map(a, 100 * b, 4 / 60)).max() == CHANGE_DECADES  # clipped, never rescaled
    assert fmt(-1e-6) == "+0.0000" and fmt(-0.0) == "+0.0000" and fmt(-0.00006) == "-0.0001"
    assert fmt(-1e-9, sign=False) == "0.0000"


def test_figure_text_size_and_outside_of_the_detector():
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    case, refs = refs_of("H14")
    fig, geometry = draw_case(case, refs)
    try:
        sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip()]
        assert min(sizes) >= FONT  # 12 pt at 72 dpi: 12 px in the PNG at its natural size
        texts = [t.get_text() for t in fig.findobj(Text)]
        assert "outside detector" in texts and not any("-0.0000" in t for t in texts)
        hatched = [p for ax in fig.axes for p in ax.patches if p.get_hatch()]
        assert hatched  # the zoom window beyond the detector edge is hatched grey, not white
        assert fig.get_size_inches()[0] * fig.dpi == FIG_PX[0]
        assert geometry["ring_radius_arcmin"] is None  # the pattern moved: no ring of added light is claimed
    finally:
        plt.close(fig)


@pytest.mark.browser
def test_gallery_in_chromium_shows_the_h10_ring(tmp_path):
    from icl.halo.gallery import case_figure, write_gallery
    from icl.halo.screenshot import VIEWPORT, capture, redness_profile
    from icl.browser import CHROMIUM, CHROMIUM_ARGS
    from playwright import sync_api as playwright

    assert shutil.which("chromium"), "Debian's chromium is missing: `make test-deps` installs it"
    ids = ("H01", "H10", "H14")
    cases, refs, figures = [], {}, {}
    for cid in ids:
        case, r = refs_of(cid)
        cases.append(case)
        refs.update(r)
        figures[cid] = case_figure((case, r))
    write_gallery(
        tmp_path / "gallery",
        cases,
        {k: v[0] for k, v in figures.items()},
        refs,
        {k: v[1] for k, v in figures.items()},
    )
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto((tmp_path / "gallery" / "index.html").as_uri())
        page.wait_for_load_state("load")
        widths = page.eval_on_selector_all("img", "els => els.map(e => e.complete ? e.naturalWidth : 0)")
        text = page.inner_text("body")
        small = page.evaluate("""() => [...document.querySelectorAll('body *')]
            .filter(e => e.childNodes.length
            && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
            && parseFloat(getComputedStyle(e).fontSize) < 12).length""")
        rgb, geometry = capture(page, "H10", tmp_path / "H10.png")
        page.set_viewport_size({"width": 1024, "height": 768})  # a small screen scrolls, never shrinks text
        shown = page.eval_on_selector_all("img", "els => els.map(e => e.getBoundingClientRect().width)")
        browser.close()
    assert all(w >= FIG_PX[0] for w in shown), shown  # the natural width (plus the 1 px border)
    assert widths == [FIG_PX[0]] * 3, widths
    assert errors == [] and all(u.startswith("file://") for u in requests)  # nothing from the network
    assert small == 0 and "-0.0000" not in text
    for word in ("wick", "ring centre", "Offset", "outside"):
        assert word in text, word

    # The H10 profile has a ring of added light (the hole's defocused light); the change panel must show it
    # there: red well above the panel's inner part, and the reddest circle beyond 3 lambda/D at that radius.
    ring = geometry["ring_radius_arcmin"]
    assert ring is not None and 5.0 < ring < 11.0 and geometry["ring_gain_decades"] >= 0.1
    radii = np.arange(0.25, 12.0, 0.25)
    red = redness_profile(rgb, geometry, radii, FIG_PX[0])
    at_ring = np.nanmean(red[np.abs(radii - ring) <= 0.75])
    inner = np.nanmean(red[radii <= 5.0])
    assert at_ring >= 0.15 and at_ring >= 3 * max(inner, 0.0), (at_ring, inner)
    lod = refs["H10_b"].condition.lambda_over_d_arcmin()
    beyond = radii > 3 * lod
    assert abs(radii[beyond][np.nanargmax(red[beyond])] - ring) <= 1.0
    assert math.isfinite(at_ring)
