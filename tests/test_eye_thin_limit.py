"""The thick ICL in the limit of vanishing thickness reproduces the thin-phase model's PSF.

Both sides share the host eye's traced wavefront W_eye (Navarro 1985 made 8 D myopic): (a) the thick eye
with the ICL traced along its lens and hole paths; (b) W_eye plus the thin ICL of docs/conventions.md on
the ICL plane (:class:`icl.eye.compare.TracedThinPupil`), its power and effective centre fitted to the
traced lens path. The comparison therefore tests only what the thin model claims about the ICL.
"""

import numpy as np
import pytest
from icl.eye import navarro_1985
from icl.eye.media import AQUEOUS
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


def rel_l1(eye, thickness_mm, piston=True, **kw):
    imp = correcting_icl(eye, thickness_mm=thickness_mm, **kw)
    thick = ThickPupil(eye, imp, paths=("lens", "hole"), fresnel=False)
    a = render(Scene((Source(),), thick, DET)).components[0]
    b = render(Scene((Source(),), thin_on_traced(thick, piston=piston), DET)).components[0]
    return float(np.abs(a - b).sum() / b.sum())


@pytest.mark.parametrize("case", list(CASES))
def test_vanishing_thickness_matches_thin_model(eye, case):
    assert rel_l1(eye, VANISHING_MM, **CASES[case]) <= L1_LIMIT


@pytest.mark.parametrize("case", ["hole", "decentred"])
def test_real_thickness_agrees_once_the_thin_model_states_the_optics_phase(eye, case):
    """At 0.1 mm the optic's centre delays its light by (1.45 - 1.336) x 0.1 mm ~ 20.7 waves against the
    hole's: an optic of zero optical thickness departs from the thick eye (measured 0.116 and 0.117), the
    thin model with that piston stated (``optic_opd_um``) agrees at the floor (0.0064 and 0.0083)."""
    assert rel_l1(eye, 0.1, piston=False, **CASES[case]) > 5 * L1_LIMIT
    assert rel_l1(eye, 0.1, **CASES[case]) <= L1_LIMIT


def test_stated_piston_is_the_traced_one(eye):
    """The thin model's piston (n_icl - n_aqueous) t is the traced lens path's optical path over the host's
    at the optic's centre (to 0.01 waves)."""
    from icl.eye.compare import optic_opd_mm
    from icl.eye.trace import TraceOptions
    from icl.eye.wavefront import host_reference, opd

    imp = correcting_icl(eye, thickness_mm=0.1, hole_mm=0.0)
    thick = ThickPupil(eye, imp, paths=("lens",), fresnel=False)
    ref = host_reference(eye, (0.0, 0.0), 550.0)
    opts = TraceOptions(apertures=False, fresnel=False)
    zero = np.zeros(1)
    w_lens = opd(eye, imp, "lens", zero, zero, (0.0, 0.0), 550.0, opts, ref)[0][0]
    w_host = opd(eye, None, "host", zero, zero, (0.0, 0.0), 550.0, opts, ref)[0][0]
    assert (w_lens - w_host) == pytest.approx(optic_opd_mm(thick), abs=0.01 * 550e-6)
    assert optic_opd_mm(thick) == pytest.approx(0.1 * (1.45 - AQUEOUS.index(550.0)), rel=1e-12)
