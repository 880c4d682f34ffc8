"""Gallery: every image loads in headless Chromium and the page logs no console error."""

import shutil

import pytest
from icl.halo.cases import load_cases
from icl.halo.gallery import LOG_MAX, LOG_MIN, log_flux, signed_log
from icl.halo.release import build_reference

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_display_mapping_is_fixed():
    import numpy as np

    a = np.array([0.0, 1e-12, 1e-9, 1e-5, 1e-1])
    np.testing.assert_allclose(log_flux(a), [LOG_MIN, LOG_MIN, -9.0, -5.0, LOG_MAX])
    np.testing.assert_allclose(signed_log(np.array([-1e-5, 0.0, 1e-5])), [-4.0, 0.0, 4.0])


@pytest.mark.browser
def test_gallery_loads_in_chromium(tmp_path):
    from icl.halo.gallery import case_png, write_gallery
    from playwright import sync_api as playwright

    assert shutil.which("chromium"), "Debian's chromium is missing: `make test-deps` installs it"

    cases, _ = load_cases()
    cases = [c for c in cases if c.id in ("H01", "H11", "H14")]  # three cases keep the test fast
    refs = {cond.id: build_reference(cond) for case in cases for cond in case.conditions}
    write_gallery(tmp_path / "gallery", cases,
                  {case.id: case_png((case, {c.id: refs[c.id] for c in case.conditions})) for case in cases})
    errors, requests = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto((tmp_path / "gallery" / "index.html").as_uri())
        page.wait_for_load_state("load")
        widths = page.eval_on_selector_all("img", "els => els.map(e => e.complete ? e.naturalWidth : 0)")
        browser.close()
    assert len(widths) == 3 and all(w == 1224 for w in widths), widths
    assert errors == []
    assert all(u.startswith("file://") for u in requests)  # the page fetches nothing from the network
