import base64
import threading
import zlib
from pathlib import Path

import pytest
from icl.io import write_json
from icl.browser import CHROMIUM, CHROMIUM_ARGS
from icl.review.merge import load_review_file
from icl.review.page import PAGE, make_server

pytestmark = pytest.mark.browser


def _png() -> str:
    raw = b"\x00\xff\x00\x00"  # one red pixel, filter byte first

    def chunk(t, d):
        return len(d).to_bytes(4, "big") + t + d + zlib.crc32(t + d).to_bytes(4, "big")

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", (1).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(png).decode()


HOSTILE = '<img src="http://127.0.0.1:9/x" onerror="document.title=\'owned\'">'


def _packets(path: Path) -> list[str]:
    ids = ["P-aaaaaaaaaaaa", "P-bbbbbbbbbbbb", "P-cccccccccccc"]
    rubric = {"0": "wrong", "0.5": "partly", "1": "right"}
    write_json(
        path,
        {
            "format": "icl-review-packets/1",
            "split": "test",
            "packets": [
                {
                    "packet": p,
                    "template": "A01",
                    "title": "Axial layers",
                    "check": "A01.4",
                    "text": "Explain the layers.",
                    "rubric": rubric,
                    "undeterminable": ["haptic contact"],
                    "artifacts": [
                        {
                            "name": "report.md",
                            "kind": "text",
                            "bytes": 60,
                            "truncated": False,
                            "text": HOSTILE,
                        },
                        {"name": "base/preview.png", "kind": "image", "bytes": 70, "data_url": _png()},
                    ],
                }
                for p in ids
            ],
        },
    )
    return ids


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: `make test-deps` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_mark_packets_export_and_stay_offline(browser, tmp_path):
    from playwright.sync_api import expect

    ids = _packets(tmp_path / "packets.json")
    url = PAGE.resolve().as_uri()
    ctx = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = ctx.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.set_input_files("#packetsFile", str(tmp_path / "packets.json"))
    expect(page.locator("#packetSel option")).to_have_count(3)
    assert page.text_content("#pTitle").startswith(ids[0])
    assert page.text_content("#r05") == "partly"
    assert HOSTILE in page.text_content("#artifacts pre")  # shown as text, never as markup
    assert page.locator("#artifacts img.artifact").count() == 1
    page.check("#g05")
    page.fill("#evidence", "layers named, gaps not described")
    page.click("#nextBtn")
    page.check("#g1")
    page.fill("#evidence", "complete with units")
    page.click("#nextBtn")
    page.check("#g0")  # graded without evidence: export refuses
    page.fill("#reviewerId", "R-ada")
    page.click("#exportBtn")
    assert ids[2] in page.text_content("#exportState")
    page.fill("#evidence", "puts the ICL behind the lens")
    page.click("#prevBtn")  # stored when leaving; going back shows the earlier grade
    assert page.is_checked("#g1") and page.input_value("#evidence") == "complete with units"
    with page.expect_download() as dl:
        page.click("#exportBtn")
    out = tmp_path / "review.json"
    dl.value.save_as(out)
    rid, rows = load_review_file(out, set(ids))
    assert rid == "R-ada"
    assert {p: r["score"] for p, r in rows.items()} == {ids[0]: 0.5, ids[1]: 1.0, ids[2]: 0.0}
    assert rows[ids[2]]["evidence"] == "puts the ICL behind the lens"
    assert page.title() != "owned" and not errors
    assert all(u == url or u.startswith(("data:", "blob:")) for u in requests), requests

    # resume: a new page restores the exported grades
    page2 = ctx.new_page()
    page2.goto(url)
    page2.set_input_files("#packetsFile", str(tmp_path / "packets.json"))
    expect(page2.locator("#packetSel option")).to_have_count(3)
    page2.set_input_files("#resumeFile", str(out))
    expect(page2.locator("#progress")).to_have_text("3 of 3 graded with evidence")
    assert page2.input_value("#reviewerId") == "R-ada" and page2.is_checked("#g05")
    ctx.close()


def test_served_page_has_csp_and_no_other_request(browser):
    server = make_server(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_address[1]}/"
        ctx = browser.new_context()
        page = ctx.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        resp = page.goto(origin)
        assert "connect-src 'none'" in resp.headers["content-security-policy"]
        assert page.evaluate("fetch('http://127.0.0.1:9/').then(() => 'sent', () => 'blocked')") == "blocked"
        ctx.close()
        assert requests == [origin], requests
    finally:
        server.shutdown()
        server.server_close()
