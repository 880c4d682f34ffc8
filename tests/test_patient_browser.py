import math
import threading
from pathlib import Path

import pytest
from icl.patient.annotate import make_server
from icl.patient.schema import load_reports
from icl.patient.screenshot import CHROMIUM, CHROMIUM_ARGS, PAGE, canvas_point

pytestmark = pytest.mark.browser

RULER_MM, DISTANCE_MM = 52.9, 400.0
K = 200.0 / RULER_MM * DISTANCE_MM  # CSS px per unit tangent
ONE_PX_DEG = math.degrees(1.0 / K)  # ~0.038 deg: mouse positions are whole CSS pixels


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: `make test-deps` installs Debian's chromium")
    from playwright.sync_api import sync_playwright  # test extra; `make test` installs it

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, url):
    ctx = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = ctx.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return ctx, page, requests, errors


def test_calibrate_draw_export_validates_and_stays_offline(browser, tmp_path):
    url = PAGE.resolve().as_uri()
    ctx, page, requests, errors = open_page(browser, url)
    page.fill("#rulerMm", str(RULER_MM))
    page.fill("#distMm", str(DISTANCE_MM))
    page.click("#applyCal")
    page.fill("#patientId", "SYN-042")
    page.check("#consent")
    box = page.locator("#canvas").bounding_box()
    size = (box["width"] - 2, box["height"] - 2)
    page.mouse.move(*canvas_point(box, size, K, 2.0, 1.0))
    page.mouse.down()
    page.mouse.move(*canvas_point(box, size, K, 3.0, 1.0), steps=4)
    page.mouse.move(*canvas_point(box, size, K, 4.0, 1.0), steps=4)
    page.mouse.up()
    page.fill("#ed_band_width_deg_", "0.35")
    page.press("#ed_band_width_deg_", "Tab")
    page.check("#ed_confirmed_by_the_participant")
    page.select_option("#q_presence", "v:yes")
    page.select_option("#q_visibility", "v:7")

    page.click("#nextRepeat")  # repeat R1 kept, shapes and answers cleared
    assert page.text_content("#repeatId") == "R2"
    assert page.locator("#featlist button").count() == 0
    assert page.input_value("#q_presence") == "no_answer"
    page.select_option("#q_presence", "v:no")
    page.check("#reviewed")
    with page.expect_download() as dl:
        page.click("#exportBtn")
    out = tmp_path / "export.json"
    dl.value.save_as(out)
    ctx.close()

    reports = load_reports(out)  # JSON schema plus the cross-field rules
    r1, r2 = reports.records
    assert (r1["repeat_id"], r2["repeat_id"]) == ("R1", "R2")
    assert (
        r1["target_id"] == "SYN-042|V1|OD|P01" and r1["presence"] == "present" and r2["presence"] == "absent"
    )
    assert (
        r1["calibration"]["ruler_mm"] == RULER_MM and r1["calibration"]["viewing_distance_mm"] == DISTANCE_MM
    )
    (f,) = r1["features"]
    assert f["kind"] == "circle" and f["source_id"] == "L1" and f["confirmed"] is True
    assert f["width_deg"] == 0.35
    # the page maps pixels back with atan; a whole-pixel mouse position is good to about one pixel
    assert f["cx_deg"] == pytest.approx(2.0, abs=1.5 * ONE_PX_DEG)
    assert f["cy_deg"] == pytest.approx(1.0, abs=1.5 * ONE_PX_DEG)
    assert f["rx_deg"] == pytest.approx(2.0, abs=3 * ONE_PX_DEG)
    assert r1["symptoms"]["visibility"] == 7 and r2["features"] == [] and r2["symptoms"]["visibility"] is None
    assert r1["status"]["draft"] is False and r1["status"]["calibration_changed"] is False
    assert not errors
    assert requests == [url], requests  # no request beyond the page file itself


def test_served_page_makes_no_other_request(browser):
    server = make_server(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_address[1]}/"
        ctx, page, requests, errors = open_page(browser, origin)
        page.click("#addNumeric")
        assert page.locator("#featlist button").count() == 1
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.tagName") in ("INPUT", "SELECT", "BUTTON")
        ctx.close()
        assert not errors
        assert requests and all(u.startswith(origin) for u in requests), requests
    finally:
        server.shutdown()
        server.server_close()


def test_an_export_error_appears_beside_the_field_it_names(browser):
    ctx, page, requests, errors = open_page(browser, PAGE.resolve().as_uri())
    page.fill("#patientId", "SYN|042")  # '|' is refused: the target id would not split
    page.click("#exportBtn")  # at the bottom of the page; the focus jumps to the patient id at the top
    problem = page.locator("#fieldProblem")
    assert problem.is_visible() and problem.text_content().startswith("Not exported: repeat R1: patient_id")
    assert page.evaluate("document.activeElement.id") == "patientId"
    assert page.evaluate("document.getElementById('patientId').nextElementSibling.id") == "fieldProblem"
    assert page.get_attribute("#patientId", "aria-describedby") == "fieldProblem"
    box, view = problem.bounding_box(), page.viewport_size
    assert 0 <= box["y"] and box["y"] + box["height"] <= view["height"]  # on screen where the user looks
    assert page.text_content("#exportMsg") == problem.text_content()
    page.fill("#patientId", "SYN-042")
    page.click("#nextRepeat")  # a later success clears the message
    assert page.locator("#fieldProblem").count() == 0
    ctx.close()
    assert not errors
