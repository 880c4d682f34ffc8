"""Seed 003 rules the first scorer missed: constant output, half-up totals, re-validated ranking, versions."""

import copy
import json
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.contest import parse_thresholds, score_result
from icl.contest.pr import item_area
from icl.contest.rank import rank_records
from icl.contest.safety import total
from icl.contest.scoring import record_digest
from icl.errors import InputError

EXAMPLE = cases_dir() / "contest" / "example_team.json"
PUBLISHED = parse_thresholds(
    {"published": True, "thresholds": [{"item": "S", "metric": "value", "min": 0.1}]}
)


@pytest.fixture
def doc():
    return json.loads(EXAMPLE.read_text())


# ------------------------------------------------------------------------- constant output


@pytest.mark.parametrize("item", ["NH", "DUP", "SPL"])
def test_constant_output_is_a_complete_failure(item):
    labels = [1] * 10 + [0] * 90
    area = item_area(item, [0.5] * 100, labels)
    assert area.value == 0.0 and "constant output" in area.reason
    assert area.positives == 10 and area.negatives == 90


def test_a_constant_item_makes_s_zero(doc):
    for item in ("NH", "DUP", "SPL"):
        d = copy.deepcopy(doc)
        d["items"][item]["scores"] = [0.7] * len(d["items"][item]["scores"])
        r = score_result(d)
        assert r["items"][item]["value"] == 0.0 and r["S"] == 0.0
        assert r["zero_rule"] == f"{item} not computable"
    d = copy.deepcopy(doc)
    for item in ("NH", "DUP", "SPL"):
        d["items"][item]["scores"] = [0.0] * len(d["items"][item]["scores"])
    r = score_result(d)
    assert r["S"] == 0.0 and r["w_s"] == pytest.approx(0.4)


def test_two_distinct_scores_are_not_constant():
    area = item_area("DUP", [0.9] + [0.1] * 9, [1] + [0] * 9)
    assert area.reason is None and area.value == 1.0


# ---------------------------------------------------------------------------- rounding


def _half_up(text: str) -> float:
    return float(Decimal(text).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def test_track7_boundary_values_round_half_up():
    # Every clinical score with five decimals ending in 5: 100 C ends in a 5 at the third decimal.
    wrong = [
        c for k in range(10_000) if total(None, float(c := f"0.{k:04d}5")) != _half_up(str(Decimal(c) * 100))
    ]
    assert wrong == []
    assert total(None, 0.50045) == 50.05  # float64 100 * 0.50045 = 50.044999999999995


def test_safety_track_totals_round_on_the_exact_decimal():
    # S = 1: T = 100 (0.2 + 0.8 C); C = 0.0000625 gives 20.005 exactly.
    assert total(1.0, 0.0000625) == 20.01
    rng = np.random.default_rng(3)
    for s, c in (rng.integers(0, 10_000, size=(2000, 2)) / 10_000).tolist():
        exact = Decimal(repr(s)) * (Decimal("0.2") + Decimal("0.2") * (1 - Decimal(repr(s))))
        exact += Decimal(repr(c)) * (1 - Decimal("0.2") - Decimal("0.2") * (1 - Decimal(repr(s))))
        assert total(float(s), float(c)) == _half_up(str(100 * exact))
    assert total(0.8, 0.75) == 76.2  # the rule's worked example


def test_record_total_uses_the_exact_rule(doc):
    doc["track"] = 7
    doc["clinical_score"] = 0.50045
    assert score_result(doc)["T"] == 50.05


# ------------------------------------------------------------------- ranking re-validation


def _edited(record, digest_recomputed, **changes):
    r = copy.deepcopy(record)
    r.update(changes)
    if digest_recomputed:
        r["record_sha256"] = record_digest(r)
    return r


EDITS = [
    ({"T": True}, "T"),
    ({"rankable": "no"}, "rankable"),
    ({"track": "3"}, "track"),
    ({"T": 99.99}, "T"),
    ({"S": 0.99}, "S"),
    ({"rankable": False}, "rankable"),
    ({"team": 5}, "team"),
    ({"C": -1}, "C"),
]


@pytest.mark.parametrize("digest_recomputed", [False, True], ids=["plain-edit", "digest-recomputed"])
@pytest.mark.parametrize(
    "change,field", EDITS, ids=[f"{next(iter(c))}={c[next(iter(c))]!r}" for c, _ in EDITS]
)
def test_rank_revalidates_every_record(doc, change, field, digest_recomputed):
    good = score_result(doc, PUBLISHED, "a.json")
    assert good["rankable"]
    bad = _edited(good, digest_recomputed, **change)
    with pytest.raises(InputError) as err:
        rank_records([("a.json", good), ("b.json", bad)])
    assert err.value.file == "b.json"
    assert err.value.field == (field if digest_recomputed else "record_sha256")


def test_rank_cli_gives_one_line_errors(tmp_path, doc):
    good = score_result(doc, PUBLISHED)
    for k, change in enumerate(({"T": True}, {"rankable": "no"}, {"track": "3"})):
        path = tmp_path / f"r{k}.json"
        path.write_text(json.dumps(_edited(good, True, **change)))
        res = CliRunner().invoke(main, ["contest-rank", str(path), "--output", str(tmp_path / "rank.json")])
        assert res.exit_code == 2 and "Traceback" not in res.output and str(path) in res.output
        assert not (tmp_path / "rank.json").exists()


# ---------------------------------------------------------------------------------- versions


def test_records_carry_scoring_and_model_versions(doc):
    r = score_result(doc, PUBLISHED)
    assert r["versions"]["model"] == doc["model_version"]
    scoring = r["versions"]["scoring"]
    assert scoring["package"].startswith("icl-bench ") and len(scoring["source_sha256"]) == 64
    del doc["model_version"]
    r = score_result(doc, PUBLISHED)
    assert r["versions"]["model"] is None and not r["rankable"]
    assert any("model version" in why for why in r["gate"]["reasons"])
