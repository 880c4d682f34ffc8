import copy
import json

import pytest
from icl.errors import InputError
from icl.pro.catalog import GROUP_WEIGHTS, default_path, load_catalog


def test_catalog_shape():
    c = load_catalog()
    assert [t.id for t in c.templates] == [f"{g}0{k}" for g in "ABCDEF" for k in range(1, 7)]
    assert c.weights == {g: float(w) for g, w in GROUP_WEIGHTS.items()} and sum(c.weights.values()) == 100
    for t in c.templates:
        assert len(t.checks) >= 3 and 1 <= t.difficulty <= 5
        assert t.truth["type"] in ("analytic", "independent_numerical", "measured")
    titles = {t.id: t.title for t in c.templates}
    assert "black disk" in titles["C05"] and "index-matched" in titles["C05"]
    assert "off-axis exception" in titles["D04"] and "several solutions" in titles["E01"]


def test_catalog_rejects_bad_weight(tmp_path):
    data = json.loads(default_path().read_text())
    bad = copy.deepcopy(data)
    bad["groups"]["A"]["weight"] = 16
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="groups"):
        load_catalog(p)


def test_catalog_rejects_expert_with_tolerance(tmp_path):
    data = json.loads(default_path().read_text())
    data["templates"][0]["checks"][-1]["tolerance"] = 0.1
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match="templates.0.checks.3"):
        load_catalog(p)


def test_e06_text_states_what_is_graded():
    # Issue 31 item 3: the catalogue said 0.25 while the scorer grades the calibrated width rule.
    from icl.pro.generate import E06_GRID, E06_WIDTH_FACTOR, E06_WIDTH_SLACK

    ch = next(c for c in load_catalog().template("E06").checks if c.id == "E06.1")
    assert ch.tolerance is None
    for number in (E06_WIDTH_FACTOR, E06_WIDTH_SLACK, E06_GRID):
        assert f"{number:g}" in ch.text, number
