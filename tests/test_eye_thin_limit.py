"""The thick ICL in the limit of vanishing thickness reproduces the thin-phase model's PSF.

Both sides share the host eye's traced wavefront W_eye (Navarro 1985 made 8 D myopic): (a) the thick eye
with the ICL traced along its lens and hole paths; (b) W_eye plus the thin ICL of docs/conventions.md on
the ICL plane (:class:`icl.eye.compare.TracedThinPupil`), its power and effective centre fitted to the
traced lens path. The comparison therefore tests only what the thin model claims about the ICL.
"""

import numpy as np
import pytest
from icl.eye import navarro_1985
from icl.eye.compare import thin_on_traced
from icl.eye.paraxial import correcting_icl, retina_for_excess
from icl.eye.pupil import ThickPupil
from icl.optics import Detector, Scene, Source, render

DET = Detector(256, 4.0)
VANISHING_MM = 1e-6  # centre thickness: its collamer-vs-aqueous piston is (1.45 - 1.336) t = 2e-4 waves
# Relative L1 allowed by the thin-limit claim; the measured floor (~0.007) is the ICL's change of the
# downstream aberration (0.0013 waves rms, a thin lens 0.5 mm in front of the crystalline lens).
L1_LIMIT = 1e-2

CASES = {
    "clear": {"hole_mm": 0.0},
    "hole": {"hole_mm": 0.36},
    "decentred": {"hole_mm": 0.36, "decentre_mm": (0.2, 0.1)},
}


@pytest.fixture(scope="module")
def eye():
    e0 = navarro_1985()
    return e0.with_vitreous(retina_for_excess(e0, 8.0))


def rel_l1(eye, thickness_mm, **kw):
    imp = correcting_icl(eye, thickness_mm=thickness_mm, **kw)
    thick = ThickPupil(eye, imp, paths=("lens", "hole"), fresnel=False)
    a = render(Scene((Source(),), thick, DET)).components[0]
    b = render(Scene((Source(),), thin_on_traced(thick), DET)).components[0]
    return float(np.abs(a - b).sum() / b.sum())


@pytest.mark.parametrize("case", list(CASES))
def test_vanishing_thickness_matches_thin_model(eye, case):
    assert rel_l1(eye, VANISHING_MM, **CASES[case]) <= L1_LIMIT


def test_real_thickness_departs_through_the_hole_piston(eye):
    # At 0.1 mm the optic centre delays light by (1.45 - 1.336) x 0.1 mm ~ 20.7 waves against the hole: the
    # interference at the hole edge changes and the thin model no longer holds (measured 0.116).
    assert rel_l1(eye, 0.1, **CASES["hole"]) > 5 * L1_LIMIT
