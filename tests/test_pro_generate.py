import math

import numpy as np
import pytest

from icl.pro import references as ref
from icl.pro.catalog import load_catalog
from icl.pro.generate import generate, plan
from icl.pro.splits import SplitLeakageError, check_leakage


def test_plan_counts_and_groups():
    recs = plan(load_catalog(), 8, seed=3)
    counts = {s: sum(r["split"] == s for r in recs) for s in ("train", "dev", "test", "ood")}
    assert counts == {"train": 72, "dev": 72, "test": 144, "ood": 36}
    assert check_leakage(recs)["base_eye"] >= 4


def test_leaked_split_fails_loudly():
    recs = plan(load_catalog(), 8, seed=3)
    test_eye = next(r["base_eye"] for r in recs if r["split"] == "test")
    recs[0] = dict(recs[0], base_eye=test_eye)  # a train instance on a test eye
    with pytest.raises(SplitLeakageError, match=test_eye):
        check_leakage(recs)


def test_deterministic_bytes(tmp_path):
    a = generate(tmp_path / "a", per_template=4, seed=5, progress=False, only=["C05", "E01"])
    generate(tmp_path / "b", per_template=4, seed=5, progress=False, only=["C05", "E01"])
    fa = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    fb = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert fa == fb and a["instances"]["test"] == 4
    for rel in fa:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_paraxial_navarro_anchor():
    # Escudero-Sanz & Navarro eye: about 60.4 D and emmetropic at 24.0 mm (tolerance: 0.05 D, the B01 tolerance).
    s = [ref.Surface(0, 7.72, 1.376), ref.Surface(0.55, 6.5, 1.3374), ref.Surface(3.6, 10.2, 1.42),
         ref.Surface(7.6, -6.0, 1.336)]
    assert ref.equivalent_power_d(s) == pytest.approx(60.416, abs=0.01)
    assert abs(ref.ocular_refraction_d(s, 24.0)) < 0.05


def test_reference_physics():
    # Strehl of defocus: closed form against direct pupil averaging (1e-4: 2000-point radial quadrature).
    r = np.linspace(0, 1.6e-3, 20001)
    phase = 2 * np.pi * (-(0.5 / 2) * r**2) / 550e-9
    w = 2 * r / (1.6e-3) ** 2
    direct = abs(np.trapezoid(w * np.exp(1j * phase), r)) ** 2
    assert ref.strehl_defocus(0.5, 3.2, 550) == pytest.approx(direct, abs=1e-4)
    assert ref.encircled_energy_airy_first_dark() == pytest.approx(0.8378, abs=1e-4)
    # Exact ray at small height tends to the paraxial focus.
    assert abs(ref.longitudinal_sa(7.72, -0.26, 1.376, 0.01)) < 1e-5
    assert ref.airy_radius_arcmin(ref.AIRY_BRIGHT, 550, 3.2) == pytest.approx(0.96589, abs=1e-5)
    assert math.isclose(ref.fresnel_r(1.0, 1.5), 0.04)
