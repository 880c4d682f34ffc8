import json

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.errors import InputError
from icl.io import load_json, write_json
from icl.pro.generate import generate
from icl.pro.score import score_run
from icl.review import agreement
from icl.review.merge import merge
from icl.review.packets import load_packets, make_packets

SALT = "00" * 16
# Planted grades of the eight packets, in (submission, instance) order: three disagreements (2, 4, 6).
FIRST = [1, 1, 1, 0.5, 0.5, 0, 0, 1]
SECOND = [1, 1, 0.5, 0.5, 0, 0, 1, 1]
ARBITER = {2: 1, 6: 0}  # packet 4 stays unsettled


def test_weighted_kappa_by_hand():
    # Linear weights: 1 on the diagonal, 1/2 one grade apart, 0 for 0 against 1.
    # p_o = (5 + 1/2 + 1/2 + 0) / 8 = 3/4. Both reviewers' marginals are (1/4, 1/4, 1/2), so
    # p_e = 1/4 (1/4 + 1/8) + 1/4 (1/8 + 1/4 + 1/4) + 1/2 (1/8 + 1/2) = 9/16 and
    # kappa = (3/4 - 9/16) / (1 - 9/16) = 3/7.
    assert agreement.weighted_kappa(FIRST, SECOND) == pytest.approx(3 / 7, abs=1e-12)
    assert agreement.percent_agreement(FIRST, SECOND) == 5 / 8
    assert agreement.weighted_kappa(FIRST, FIRST) == pytest.approx(1.0)
    assert agreement.weighted_kappa([1, 1], [1, 1]) is None  # chance agreement 1: undefined
    lo, hi = agreement.kappa_interval(FIRST, SECOND, n=500)
    assert -1 <= lo < 3 / 7 < hi <= 1
    assert agreement.kappa_interval(FIRST, SECOND, n=500) == [lo, hi]  # seeded


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny release (A01, A03: 4 test instances) and two fictional submissions' runs."""
    root = tmp_path_factory.mktemp("review")
    rel = root / "rel"
    generate(rel, per_template=4, seed=11, progress=False, only=["A01", "A03"])
    subs, runs = {}, {}
    for name in ("alpha", "beta"):
        sub, run = root / f"sub_{name}", root / f"run_{name}"
        (sub / "model").mkdir(parents=True)
        (sub / "report.md").write_text(f"# Report of {name.upper()}\nThe ICL sits in front of the lens.\n")
        write_json(sub / "model" / "eye.json", {"cornea": {"value": 7.8}})
        write_json(sub / "manifest.json", {"model": {"name": f"model-{name}"}})
        for iid in ("A01-02", "A01-03", "A03-02", "A03-03"):
            write_json(
                run / "results" / iid / "base" / "metrics.json", {"note": f"by model-{name}", "vault_mm": 0.5}
            )
        subs[name], runs[name] = sub, run
    pk = root / "packets"
    make_packets(rel, runs, pk, submissions=subs, salt=SALT)
    return rel, subs, runs, pk


def _reviewer_files(pk, tmp_path):
    packets, ident = load_packets(pk)
    order = sorted(ident, key=lambda p: (ident[p]["submission"], ident[p]["instance"]))
    assert len(order) == 8
    files = {}
    for who, grades in (("R-ada", FIRST), ("R-bo", SECOND)):
        files[who] = tmp_path / f"{who}.json"
        write_json(
            files[who],
            {
                "format": "icl-review/1",
                "reviewer": who,
                "reviews": [
                    {"packet": p, "score": g, "evidence": f"grade from the report of {p}"}
                    for p, g in zip(order, grades, strict=True)
                ],
            },
        )
    files["R-cy"] = tmp_path / "R-cy.json"
    write_json(
        files["R-cy"],
        {
            "format": "icl-review/1",
            "reviewer": "R-cy",
            "reviews": [
                {"packet": order[k], "score": g, "evidence": f"arbiter's reason {k}"}
                for k, g in ARBITER.items()
            ],
        },
    )
    return order, ident, files


def test_packets_are_blind(world):
    rel, subs, runs, pk = world
    text = (pk / "packets.json").read_text()
    assert "alpha" not in text.lower() and "beta" not in text.lower()
    packets, ident = load_packets(pk)
    assert len(packets) == 8 and {p["check"] for p in packets} == {"A01.4", "A03.4"}
    p = packets[0]
    assert set(p["rubric"]) == {"0", "0.5", "1"} and p["text"]
    names = [a["name"] for a in p["artifacts"]]
    assert "report.md" in names and "model/eye.json" in names and "base/metrics.json" in names
    assert "[submission]" in next(a["text"] for a in p["artifacts"] if a["name"] == "report.md")
    assert sorted({v["submission"] for v in ident.values()}) == ["alpha", "beta"]
    # Same salt, same ids; the ids of the two submissions are not related.
    again = pk.parent / "again"
    make_packets(rel, runs, again, submissions=subs, salt=SALT)
    assert load_json(again / "packets.json") == load_json(pk / "packets.json")


def test_merge_kappa_arbitration_and_score(world, tmp_path):
    rel, subs, runs, pk = world
    order, ident, files = _reviewer_files(pk, tmp_path)
    out = tmp_path / "merged"
    rep = merge(pk, files["R-ada"], files["R-bo"], out, files["R-cy"], bootstrap_n=300)
    assert rep["agreement"]["weighted_kappa"] == pytest.approx(3 / 7, abs=1e-12)
    assert rep["agreement"]["percent_agreement"] == 5 / 8
    assert rep["unsettled"] == [order[4]]
    settled = {d["packet"]: d for d in rep["disagreements"]}
    assert settled[order[2]]["decision"] == 1 and settled[order[2]]["reason"] == "arbiter's reason 2"
    assert settled[order[6]]["decision"] == 0 and settled[order[4]]["decision"] is None
    arb = load_json(out / "arbitration_packets.json")["packets"]
    assert [p["packet"] for p in arb] == [order[4]] and len(arb[0]["prior_reviews"]) == 2
    assert "R-ada" not in json.dumps(arb)  # the third reviewer does not see who graded what

    expected = {}  # (submission, instance) -> final expert grade, or None when still pending
    for k, p in enumerate(order):
        g = FIRST[k] if FIRST[k] == SECOND[k] else ARBITER.get(k)
        expected[(ident[p]["submission"], ident[p]["instance"])] = g
    for name in ("alpha", "beta"):
        before = score_run(rel, runs[name])
        assert before["pending_expert_checks"] == 4 and before["reviews"] is None
        after = score_run(rel, runs[name], reviews=out / "reviews" / f"{name}.json")
        want_pending = sum(g is None for (s, _), g in expected.items() if s == name)
        assert after["pending_expert_checks"] == want_pending
        for iid, v in after["instances"].items():
            autos = [c["score"] for c in before["checks"] if c["instance"] == iid and c["mode"] == "auto"]
            g = expected[(name, iid)]
            assert v["score"] == pytest.approx(
                sum(autos + ([g] if g is not None else [])) / (len(autos) + (g is not None))
            )
        assert after["reviews"]["reviewers"] == ["R-ada", "R-bo"] and after["reviews"]["arbiter"] == "R-cy"
        assert after["reviews"]["agreement"]["weighted_kappa"] == pytest.approx(3 / 7)
        for c in after["checks"]:
            if c["mode"] == "expert" and c["score"] is not None:
                g = expected[(name, c["instance"])]
                assert c["score"] == g
                res = c["review"]["resolution"]
                assert res == (
                    "agreement" if len(set(c["review"]["scores"].values())) == 1 else "arbitration"
                )
                if res == "arbitration":
                    assert c["review"]["arbiter"] == "R-cy" and c["review"]["reason"].startswith(
                        "arbiter's reason"
                    )
    # One arbitrated packet moves its submission's score by (decision - nothing) over the instance's checks.
    assert any(d["decision"] is not None for d in rep["disagreements"])


def test_bad_review_files_name_file_and_field(world, tmp_path):
    rel, subs, runs, pk = world
    order, ident, files = _reviewer_files(pk, tmp_path)
    bad = tmp_path / "bad.json"
    write_json(
        bad,
        {
            "format": "icl-review/1",
            "reviewer": "R-x",
            "reviews": [{"packet": order[0], "score": 1, "evidence": "  "}],
        },
    )
    with pytest.raises(InputError, match=r"reviews\[0\]\.evidence"):
        merge(pk, files["R-ada"], bad, tmp_path / "m")
    write_json(
        bad,
        {
            "format": "icl-review/1",
            "reviewer": "R-x",
            "reviews": [{"packet": order[0], "score": 0.7, "evidence": "x"}],
        },
    )
    with pytest.raises(InputError, match=r"reviews\[0\]\.score"):
        merge(pk, files["R-ada"], bad, tmp_path / "m")
    with pytest.raises(InputError, match="two independent reviewers"):
        merge(pk, files["R-ada"], files["R-ada"], tmp_path / "m")
    with pytest.raises(InputError, match="arbiter"):
        merge(pk, files["R-ada"], files["R-bo"], tmp_path / "m", files["R-bo"])


def test_cli_packets_and_merge(world, tmp_path):
    rel, subs, runs, pk = world
    r = CliRunner().invoke(
        main,
        [
            "review-packets",
            str(rel),
            "--run",
            f"alpha={runs['alpha']}",
            "--submission",
            f"alpha={subs['alpha']}",
            "--output",
            str(tmp_path / "pk"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "4 packets" in r.output
    order, ident, files = _reviewer_files(pk, tmp_path)
    r = CliRunner().invoke(
        main,
        [
            "review-merge",
            str(pk),
            str(files["R-ada"]),
            str(files["R-bo"]),
            "--arbitration",
            str(files["R-cy"]),
            "--output",
            str(tmp_path / "m"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "weighted kappa 0.429" in r.output and "1 awaiting arbitration" in r.output
    r = CliRunner().invoke(main, ["review-page", "--output", str(tmp_path / "page.html")])
    assert r.exit_code == 0 and "Content-Security-Policy" in (tmp_path / "page.html").read_text()
