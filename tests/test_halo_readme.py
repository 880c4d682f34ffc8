"""The public README is the whole contract: a participant with only ``public/`` can compute every answer.

``_render`` below is written from the README's text alone with NumPy (it imports nothing of ``icl``): the
pupil, the eye and the optic, the three hole kinds, an optic zone smaller than the pupil, several
wavelengths and sources, a uniform disk, the pixel integral and the flux rule. Scored by the halo
evaluator against the release's private references, its arrays lose less than a point.
"""

import json
import math

import jsonschema
import numpy as np
import pytest
from icl.halo.cases import halo_dir
from icl.halo.evaluate import TERMS, load_release, score_condition
from icl.io import load_json
from icl.sandbox.layout import ALLOWED_DISTRIBUTIONS
from test_halo_release import shared_release

ARCMIN = math.pi / 10800.0  # README: 1 arcmin = pi / 10800 rad


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return shared_release(tmp_path_factory)


def _pupil_field(pupil: dict, lam: float, du_max: float = 6e-6, sub: int = 4):
    """Samples of P(u) = A exp(2 pi i W / lambda) at cell centres of pitch <= du_max (m).

    Each cell carries the share of its area in the optic's region and in the eye-only region (sub x sub
    points) with the phase of that region at the cell centre.
    """
    d = pupil["diameter_mm"] * 1e-3
    icl = pupil["icl"]
    n = math.ceil(d / du_max)
    du = d / n
    u = (np.arange(n) - (n - 1) / 2) * du
    fine = (u[:, None] + ((np.arange(sub) + 0.5) / sub - 0.5)[None, :] * du).ravel()
    fu, fv = np.meshgrid(fine, fine)  # rows along v, columns along u
    c = np.array(icl["decentre_mm"]) * 1e-3
    rc2 = (fu - c[0]) ** 2 + (fv - c[1]) ** 2
    in_pupil = fu**2 + fv**2 <= (d / 2) ** 2
    in_zone = rc2 <= (icl["optic_zone_mm"] * 1e-3 / 2) ** 2
    in_hole = rc2 < (icl["hole_mm"] * 1e-3 / 2) ** 2
    # README: clear hole = eye only, black hole = no light, index-matched hole = the optic
    optic = in_zone & ~(in_hole & (icl["hole"] != "index_matched"))
    lit = in_pupil & ~(in_hole & (icl["hole"] == "black"))

    def share(mask):
        return mask.reshape(n, sub, n, sub).mean(axis=(1, 3))

    uu, vv = np.meshgrid(u, u)
    w_eye = -(pupil["eye_excess_d"] / 2) * (uu**2 + vv**2)
    ru, rv = uu - c[0], vv - c[1]
    alpha = math.radians(icl["axis_deg"])
    dperp = -ru * math.sin(alpha) + rv * math.cos(alpha)
    w_optic = w_eye - (icl["power_d"] / 2) * (ru**2 + rv**2) - (icl["cylinder_d"] / 2) * dperp**2
    k = 2 * math.pi / lam
    p = share(lit & optic) * np.exp(1j * k * w_optic) + share(lit & ~optic) * np.exp(1j * k * w_eye)
    return u, du, p


def _point(pupil: dict, lam: float, at: tuple[float, float], axis: np.ndarray) -> np.ndarray:
    """Pixel flux of a unit point source: |U(theta - s)|^2 / (pi D^2 / 4) integrated over each pixel."""
    u, du, p = _pupil_field(pupil, lam)
    rows, cols = np.flatnonzero(np.abs(p).sum(axis=1)), np.flatnonzero(np.abs(p).sum(axis=0))
    p = p[np.ix_(rows, cols)].astype(np.complex64)
    pitch = (axis[1] - axis[0]) * ARCMIN
    nodes, weights = np.polynomial.legendre.leggauss(2)  # 2 x 2 Gauss points per pixel
    tx = ((axis[:, None] - at[0]) * ARCMIN + nodes[None, :] * pitch / 2).ravel()
    ty = ((axis[:, None] - at[1]) * ARCMIN + nodes[None, :] * pitch / 2).ravel()
    # U(theta) = (1 / lambda) integral P(u) exp(-2 pi i theta.u / lambda) du
    ex = np.exp(-2j * math.pi * np.outer(tx, u[cols]) / lam).astype(np.complex64)
    ey = np.exp(-2j * math.pi * np.outer(ty, u[rows]) / lam).astype(np.complex64)
    e = (ey @ p @ ex.T) * (du * du / lam)
    d = pupil["diameter_mm"] * 1e-3
    inten = np.abs(e.astype(np.complex128)) ** 2 / (math.pi * d * d / 4)
    m = len(axis)
    w2 = np.outer(weights, weights) / 4
    return (inten.reshape(m, 2, m, 2) * w2[None, :, None, :]).sum(axis=(1, 3)) * pitch * pitch


def _disk(diameter: float, pitch: float, fine: int = 8) -> np.ndarray:
    """A uniform disk of unit integral on the pixel grid (each pixel's share from fine x fine points)."""
    half = math.ceil(diameter / 2 / pitch) + 1
    g = (
        np.arange(-half, half + 1)[:, None] + ((np.arange(fine) + 0.5) / fine - 0.5)[None, :]
    ).ravel() * pitch
    k = (g[None, :] ** 2 + g[:, None] ** 2 <= (diameter / 2) ** 2).astype(float)
    k = k.reshape(2 * half + 1, fine, 2 * half + 1, fine).mean(axis=(1, 3))
    return k / k.sum()


def _render(scene: dict, axis: np.ndarray) -> np.ndarray:
    """One component per source: flux x sum_j w_j x pattern_j, a disk convolved (zero-padded, no wrap)."""
    out = []
    for src in scene["sources"]:
        img = np.zeros((len(axis), len(axis)))
        if src["flux"] > 0:
            for lam, w in src["spectrum"]:
                img += w * _point(scene["pupil"], lam * 1e-9, (src["x_arcmin"], src["y_arcmin"]), axis)
            img *= src["flux"]
            if src["extent"]["kind"] == "disk":
                k = _disk(src["extent"]["diameter_arcmin"], axis[1] - axis[0])
                size = [len(axis) + len(k) - 1] * 2
                full = np.fft.irfft2(np.fft.rfft2(img, size) * np.fft.rfft2(k, size), size)
                h = len(k) // 2
                img = full[h : h + len(axis), h : h + len(axis)]
        out.append(img)
    return np.array(out)


# Test conditions rebuilt: every hole kind at least twice, optic zones smaller than the pupil, two
# sources, two wavelengths, a decentred optic with a cylinder, a disk.
REBUILT = ("H10_t1_a", "H05_t1_b", "H10_t1_b", "H07_t1_a", "H02_t1_a", "H11_t1_b", "H04_t1_b", "H06_t1_b")


def test_numpy_model_of_the_public_readme_matches_the_reference(release):
    readme = (release / "public" / "README.md").read_text()
    for phrase in (
        "W_eye = -(E / 2) |u|^2",
        "`clear` keeps `W = W_eye`",
        "`black` sets `A = 0`",
        "index_matched",
    ):
        assert phrase in readme, phrase
    pub = load_json(release / "public" / "halo_cases_test.json")
    scenes = {c["id"]: c["scene"] for case in pub["cases"] for c in case["conditions"]}
    axis = np.asarray(pub["grid"]["x_arcmin"])
    refs = {r.id: r for _, pair in load_release(release, "test") for r in pair}
    kinds = [scenes[c]["pupil"]["icl"]["hole"] for c in REBUILT if scenes[c]["pupil"]["icl"]["hole_mm"]]
    assert all(kinds.count(k) >= 2 for k in ("clear", "black", "index_matched")), kinds
    zones = [
        c for c in REBUILT if scenes[c]["pupil"]["icl"]["optic_zone_mm"] < scenes[c]["pupil"]["diameter_mm"]
    ]
    assert len(zones) >= 2, zones
    for cid in REBUILT:
        mine = _render(scenes[cid], axis)
        doc = score_condition(refs[cid], mine)
        assert doc["score"] >= 99.0, (cid, doc)
        for name, term in doc["terms"].items():
            assert term["error"] <= 0.03 * term["scale"], (cid, name, term)


def test_readme_states_the_whole_contract(release):
    public = release / "public"
    readme = (public / "README.md").read_text()
    # the units of every scene field
    for field in (
        "pupil.diameter_mm",
        "pupil.eye_excess_d",
        "pupil.icl.power_d",
        "pupil.icl.cylinder_d",
        "pupil.icl.axis_deg",
        "pupil.icl.decentre_mm",
        "pupil.icl.optic_zone_mm",
        "pupil.icl.hole_mm",
        "pupil.icl.hole",
        "detector.pitch_arcsec",
        "sources[].x_arcmin",
        "sources[].flux",
        "sources[].spectrum",
        "sources[].extent",
    ):
        assert f"| `{field}`" in readme, field
    assert "nanometres in vacuum" in readme
    # the flux rule of every source kind
    for kind in (
        "| point, one wavelength |",
        "| point, several wavelengths |",
        "| uniform disk",
        "| flux 0 |",
    ):
        assert kind in readme, kind
    # every scoring term with its weight and scale, the validity tolerances, the pair and case rules
    for name, (weight, scale) in TERMS.items():
        assert f"| `{name}` |" in readme and f"| {weight:.0%}" in readme and f"| {scale:g} |" in readme, name
    for rule in ("-1e-12", "1e-6 sum abs", "(1 + 1e-6)", "64 MiB", "paired = 100 exp(-rel / 0.3)", "70%"):
        assert rule in readme, rule
    # scored and diagnostic; the sandbox contract per split
    assert "**Scored**" in readme and "**Diagnostic, never in the headline**" in readme
    for phrase in (
        "/submission/run /input /output",
        "`--split dev` or `--split test`",
        '"track"',
        "exit with status 0",
    ):
        assert phrase in readme, phrase
    assert all(name in readme for name in ALLOWED_DISTRIBUTIONS)
    # the prediction schema ships in public/ and accepts a test condition's id
    schema = json.loads((public / "prediction.schema.json").read_text())
    assert schema == json.loads((halo_dir() / "prediction.schema.json").read_text())
    example = json.loads((public / "prediction_example.json").read_text())
    jsonschema.validate(example, schema)
    jsonschema.validate({**example, "condition": "H09_t3_b"}, schema)
