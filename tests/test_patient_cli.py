import json
import re
import threading
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.patient.annotate import make_server, page_bytes
from icl.patient.schema import load_reports


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    res = CliRunner().invoke(main, ["patient-demo", "--output", str(out)])
    assert res.exit_code == 0, res.output
    return out


def score(ref, pred, out, *extra):
    return CliRunner().invoke(
        main,
        ["patient-score", "--reference", str(ref), "--predictions", str(pred), "--output", str(out), *extra],
    )


def test_demo_is_deterministic_and_fictional(demo, tmp_path):
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["patient-demo", "--output", str(again)]).exit_code == 0
    files = sorted(p.relative_to(demo).as_posix() for p in demo.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "manifest.json",
        "predictions/demo_prediction.json",
        "private/oracle_prediction.json",
        "private/reference.json",
        "public/targets.json",
    ]
    for rel in files:
        assert (demo / rel).read_bytes() == (again / rel).read_bytes(), rel
        assert "fictional" in (demo / rel).read_text().lower(), rel
    reports = load_reports(demo / "private" / "reference.json")
    assert len(reports.records) == 48 and reports.fictional and reports.data_kind == "synthetic"
    assert {r["condition_id"] for r in reports.records} == {f"P0{k}" for k in range(1, 8)}
    public = (demo / "public" / "targets.json").read_text()
    assert '"presence"' not in public and '"features"' not in public and '"symptoms"' not in public


def test_demo_scores(demo, tmp_path):
    ref = demo / "private" / "reference.json"
    out = {}
    for name, pred in (
        ("demo", demo / "predictions" / "demo_prediction.json"),
        ("oracle", demo / "private" / "oracle_prediction.json"),
    ):
        res = score(ref, pred, tmp_path / f"{name}.json")
        assert res.exit_code == 0, res.output
        assert "Patient-perception development score" in res.output
        out[name] = json.loads((tmp_path / f"{name}.json").read_text())
    d, o = out["demo"], out["oracle"]
    assert d["clinical_score"] is None and d["mechanistic_understanding_score"] is None
    assert d["validated_instrument"] is False and d["fictional"] is True
    # golden values of the seeded demo set (same package version, same seed): a regression guard
    assert d["patient_perception_score"] == pytest.approx(56.18, abs=0.01)
    assert o["patient_perception_score"] == pytest.approx(76.99, abs=0.01)
    assert d["counts"]["eligible_repeats"] == 42 and d["counts"]["excluded_records"] == 6
    assert d["exclusions"]["by_reason"] == {
        "draft": 1,
        "fewer_than_2_repeats": 1,
        "presence_unsure": 1,
        "recall": 1,
        "screen_match": 1,
        "source_uncertain": 1,
    }
    lo, hi = d["ci95_patient_bootstrap"]
    assert lo < d["patient_perception_score"] < hi
    assert (
        o["radius_interval"]["n"] == 0 and o["radius_interval"]["coverage"] is None
    )  # no interval, no claim


def test_score_file_is_byte_reproducible(demo, tmp_path):
    ref, pred = demo / "private" / "reference.json", demo / "predictions" / "demo_prediction.json"
    score(ref, pred, tmp_path / "a.json")
    score(ref, pred, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_bad_reference_exits_2_naming_file_and_field(demo, tmp_path):
    obj = json.loads((demo / "private" / "reference.json").read_text())
    obj["records"][5]["features"][0]["width_deg"] = "wide"
    bad = tmp_path / "ref.json"
    bad.write_text(json.dumps(obj))
    res = score(bad, demo / "predictions" / "demo_prediction.json", tmp_path / "s.json")
    assert res.exit_code == 2
    assert str(bad) in res.output and "records[5].features[0].width_deg" in res.output
    assert not (tmp_path / "s.json").exists()


def test_broken_prediction_file_scores_zero_with_reason(demo, tmp_path):
    bad = tmp_path / "pred.json"
    bad.write_text('{"predictions": [')
    res = score(demo / "private" / "reference.json", bad, tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["patient_perception_score"] == 0.0
    assert all(str(bad) in m["reason"] and "invalid JSON" in m["reason"] for m in s["missing_or_invalid"])
    assert len(s["missing_or_invalid"]) == s["counts"]["eligible_targets"] == 15


def test_raster_option_is_bounded(demo, tmp_path):
    res = score(
        demo / "private" / "reference.json",
        demo / "predictions" / "demo_prediction.json",
        tmp_path / "s.json",
        "--raster",
        "1024",
    )
    assert res.exit_code == 2 and "64<=x<=512" in res.output


def test_page_is_self_contained():
    html = page_bytes().decode()
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import", html, re.I)
    assert (
        "url(" not in html
    )  # no CSS resource of any kind (URL.createObjectURL is the download, not a fetch)
    assert not re.search(r"<(link|img|iframe|object|embed|audio|video|source)\b|\bsrc=", html, re.I)
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon|importScripts)\b", html)
    assert "connect-src 'none'" in html and "default-src 'none'" in html
    assert "localStorage" in html and 'id="keepDraft"' in html


def test_server_serves_only_the_page_on_localhost():
    server = make_server(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            assert resp.read() == page_bytes()
            assert "connect-src 'none'" in resp.headers["Content-Security-Policy"]
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/etc/passwd", timeout=5)
        assert exc.value.code == 404
        exc.value.close()
    finally:
        server.shutdown()
        server.server_close()
