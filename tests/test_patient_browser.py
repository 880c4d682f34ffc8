import math
import threading
from pathlib import Path

import pytest
from icl.patient.annotate import make_server
from icl.patient.schema import load_reports
from icl.browser import CHROMIUM, CHROMIUM_ARGS
from icl.patient.screenshot import PAGE, canvas_point

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


SCREENS = [(1024, 768), (1366, 768)]  # the smallest screen the page is made for, and a common laptop


def open_page(browser, url, size=(1366, 768)):
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, accept_downloads=True)
    page = ctx.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return ctx, page, requests, errors


def fill_identity(page, patient):
    """The identity fields start empty: fill every one of them."""
    page.fill("#patientId", patient)
    page.fill("#visitId", "V1")
    page.select_option("#eye", "OD")
    page.select_option("#conditionId", "P01")
    page.fill("#protocolId", "PROTO-1")


def draw_shape(page, k=K):
    """Drag from (2, 1) to (4, 2.5) deg with the selected tool (a diagonal: an ellipse gets both axes)."""
    box = page.locator("#canvas").bounding_box()
    size = (box["width"] - 2, box["height"] - 2)
    page.mouse.move(*canvas_point(box, size, k, 2.0, 1.0))
    page.mouse.down()
    page.mouse.move(*canvas_point(box, size, k, 4.0, 2.5), steps=4)
    page.mouse.up()


def test_calibrate_draw_export_validates_and_stays_offline(browser, tmp_path):
    url = PAGE.resolve().as_uri()
    ctx, page, requests, errors = open_page(browser, url)
    page.fill("#rulerMm", str(RULER_MM))
    page.fill("#distMm", str(DISTANCE_MM))
    page.click("#applyCal")
    fill_identity(page, "SYN-042")
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
    fill_identity(page, "SYN-042")
    page.click("#nextRepeat")  # a later success clears the message
    assert page.locator("#fieldProblem").count() == 0
    ctx.close()
    assert not errors


CLIPPED = """() => {
  const panel = document.getElementById('panel'), box = panel.getBoundingClientRect();
  const right = box.left + panel.clientWidth;
  const cut = [];
  panel.querySelectorAll('label, input, select, button, th, legend, p, span').forEach((el) => {
    const r = el.getBoundingClientRect();
    const off = r.right > right + 0.5 || r.left < box.left - 0.5;
    if (r.width && off) cut.push(el.id || el.textContent.trim().slice(0, 40));
  });
  const c = document.getElementById('canvas').getBoundingClientRect();
  return {cut, panelScroll: panel.scrollWidth - panel.clientWidth,
          pageScroll: [document.documentElement.scrollWidth - innerWidth,
                       document.documentElement.scrollHeight - innerHeight],
          canvas: [c.left, c.top, c.right, c.bottom]};
}"""


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_every_field_is_whole_on_the_screen(browser, size):
    ctx, page, requests, errors = open_page(browser, PAGE.resolve().as_uri(), size)
    for stage in ("empty", "shape selected", "review shown"):
        if stage == "shape selected":
            draw_shape(page)
            assert page.locator("#ed_band_width_deg_").is_visible()
        if stage == "review shown":
            page.click("#reviewBtn")
        got = page.evaluate(CLIPPED)
        assert got["cut"] == [] and got["panelScroll"] == 0, (stage, got)
        assert got["pageScroll"] == [0, 0], (stage, got)  # one screen: only the record scrolls, inside itself
        left, top, right, bottom = got["canvas"]
        assert 0 <= left and right <= size[0] and 0 <= top and bottom <= size[1], (stage, got)
    for field in ("#visitId", "#conditionId", "#consent", "#deidentified", "#exportBtn"):
        page.locator(field).scroll_into_view_if_needed()
        box = page.locator(field).bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= size[0], field
        assert 0 <= box["y"] and box["y"] + box["height"] <= size[1], field
    ctx.close()
    assert not errors


def test_identity_starts_empty_and_is_required(browser):
    ctx, page, requests, errors = open_page(browser, PAGE.resolve().as_uri(), SCREENS[0])
    for field in ("#patientId", "#visitId", "#protocolId", "#eye", "#conditionId"):
        assert page.input_value(field) == "", field  # nothing pre-filled that a tired operator would keep
    page.fill("#patientId", "SYN-001")
    for field, problem in (("#visitId", "visit_id"), ("#eye", "eye"), ("#conditionId", "condition")):
        page.click("#exportBtn")
        assert problem in page.text_content("#fieldProblem"), field
        assert page.evaluate("document.activeElement.id") == field[1:]
        if field == "#visitId":
            page.fill(field, "V1")
        else:
            page.select_option(field, index=1)
    page.click("#exportBtn")
    assert "protocol id is required" in page.text_content("#fieldProblem")
    ctx.close()
    assert not errors


def test_every_coordinate_states_its_unit(browser):
    ctx, page, requests, errors = open_page(browser, PAGE.resolve().as_uri())
    page.select_option("#nSources", "2")
    headers = page.locator("#sourceRows").locator("xpath=../thead//th").all_text_contents()
    assert [h for h in headers if h != "id" and "(deg)" not in h] == [], headers
    labels = page.locator("#sourceRows input").evaluate_all(
        "els => els.map((e) => e.getAttribute('aria-label'))"
    )
    assert [a for a in labels if not a.endswith(" id") and "(deg)" not in a] == [], labels
    for tool in ("circle", "ellipse", "arc"):
        page.click(f"#tools [data-tool={tool}]")
        draw_shape(page)
        texts = page.locator("#editor .pair label").all_text_contents()
        coord_words = ("x", "y", "radius", "start", "sweep", "width")
        coords = [t for t in texts if t.split(" (")[0].split()[-1] in coord_words]
        assert coords and all("(deg" in t for t in coords), texts
        page.click("#editor button")  # delete it again
    ctx.close()
    assert not errors


@pytest.mark.parametrize("answer", ["no_answer", "unsure", "v:no"])
def test_a_drawing_that_contradicts_the_presence_answer_is_not_exported(browser, answer):
    ctx, page, requests, errors = open_page(browser, PAGE.resolve().as_uri())
    fill_identity(page, "SYN-001")
    draw_shape(page)
    if answer != "no_answer":
        page.select_option("#q_presence", answer)
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    for button in ("#exportBtn", "#nextRepeat"):
        page.click(button)
        assert page.evaluate("document.activeElement.id") == "q_presence"
        assert "shapes are drawn" in page.text_content("#fieldProblem")
    assert page.text_content("#repeatId") == "R1" and downloads == []  # neither saved nor exported
    page.select_option("#q_presence", "v:yes")  # the drawing now agrees with the answer
    with page.expect_download():
        page.click("#exportBtn")
    ctx.close()
    assert not errors
