"""Case files: schema, loader errors naming file and field, flags and analytic anchors."""

import json
import shutil

import pytest
from icl.errors import InputError
from icl.halo.cases import FIRST_BRIGHT, FIRST_DARK, halo_dir, load_case, load_cases


def test_all_cases_load():
    runnable, research = load_cases()
    assert [c.id for c in runnable] == [f"H{i:02d}" for i in range(1, 15)]
    assert [r.id for r in research] == [f"R{i}" for i in range(15, 21)]
    cal = {c.id for case in runnable for c in case.conditions if c.calibration_ring}
    assert {
        "H01_a",
        "H01_b",
        "H03_a",
        "H03_b",
        "H04_a",
        "H04_b",
        "H05_a",
        "H05_b",
        "H09_a",
        "H09_b",
        "H14_a",
        "H14_b",
    } <= cal
    cx = {c.id for case in runnable for c in case.conditions if c.complex_field}
    assert {"H06_b", "H07_b", "H08_a", "H08_b", "H11_a", "H11_b", "H12_b"} <= cx
    assert not cal & cx


def test_analytic_constants():
    # Airy zeros (Born & Wolf): first dark ring 1.21967, first bright ring 1.63472 lambda/D.
    assert FIRST_DARK == pytest.approx(1.219670, abs=1e-6)
    assert FIRST_BRIGHT == pytest.approx(1.634720, abs=1e-6)
    h09 = load_case(halo_dir() / "H09.json").conditions[1]
    assert h09.prism_arcmin()[0] == pytest.approx(-5.5004, abs=1e-4)
    assert h09.analytic()["first_bright_ring_arcmin"] == pytest.approx(0.9661, rel=5e-4)


def test_common_parameters():
    for case in load_cases()[0]:
        for c in case.conditions:
            p = c.scene.pupil
            assert p.eye_excess_d == 8.0 and p.icl.optic_zone_mm == 6.0 and p.icl.hole in ("clear",)
            assert c.scene.detector.n == 512 and c.scene.detector.pitch_arcsec == 4.0


@pytest.fixture
def case_copy(tmp_path):
    shutil.copy(halo_dir() / "H09.json", tmp_path / "H09.json")
    return tmp_path / "H09.json"


def _edit(path, fn):
    d = json.loads(path.read_text())
    fn(d)
    path.write_text(json.dumps(d))


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["conditions"]["a"].pop("label"), "conditions.a"),
        (
            lambda d: d["conditions"]["b"]["scene"]["pupil"]["icl"].update(hole="glass"),
            "conditions.b.scene.pupil.icl.hole",
        ),
        (
            lambda d: d["conditions"]["a"]["scene"]["pupil"]["icl"].update(power_d=-7.0),
            "conditions.a.calibration_ring",
        ),
        (lambda d: d.update(predict=["ring_colour"]), "predict.0"),
        (lambda d: d["conditions"]["a"].update(complex_field=True), "conditions.a.complex_field"),
        (lambda d: d.update(id="H10"), "id"),
    ],
    ids=["missing-label", "bad-hole", "calibration-defocus", "bad-item", "both-flags", "id-mismatch"],
)
def test_bad_case_names_file_and_field(case_copy, edit, field):
    _edit(case_copy, edit)
    with pytest.raises(InputError) as exc:
        load_case(case_copy)
    assert exc.value.file == str(case_copy)
    assert exc.value.field == field


def test_research_cards_have_no_numbers():
    for r in load_cases()[1]:
        with open(r.file) as fh:
            d = json.load(fh)
        assert d["scored"] is False
        assert not any(ch.isdigit() for ch in d["truth"] + d["question"])
