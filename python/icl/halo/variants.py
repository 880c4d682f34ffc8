"""The held-out ``test`` split: keyed variants of the fourteen development cases.

Each variant tests what its development case tests, at places the development set does not use: the
pair is moved to a keyed point of the field, and the quantity the case changes (a position, a
wavelength, a pupil, an axis, a decentre direction, a hole ...) takes keyed values inside the seed's
ranges. Both conditions of a pair are built together, so no pair is ever split across splits.

Every parameter of variant ``v`` of case ``Hnn`` is drawn from ``key.rng("halo", "Hnn", v)``
(:mod:`icl.keys`): the variants are a deterministic function of the release key, and without the key
(kept in ``private/release.key``) nobody can produce them before the release is published.

Placement rule: every wick (source position plus the prism of a decentred optic) lies at least
``AXIS_GAP`` = 2 arcmin from both axes, and within ``FIELD_LIMIT`` = 10 arcmin of them (edge variants of
H14 excepted). A wick on an axis is its own mirror image, so such a variant could not tell a submission
with a flipped axis from a correct one; 2 arcmin is more than two main-lobe radii at the longest
wavelength and smallest pupil used (0.97 arcmin at 650 nm, 2.8 mm). The 10 arcmin limit keeps the main
lobe and the first rings far inside the 17 arcmin half-window; the broad light a hole adds (out to about
9 arcmin from the wick) may leave the window in part, as the energy ledger of the reference records.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np

from icl.halo.cases import CONDITION_LABELS, HaloCase, check_pair, make_condition
from icl.keys import ReleaseKey
from icl.optics.model import ARCMIN

TEST_VARIANTS = 4
AXIS_GAP = 2.0
FIELD_LIMIT = 10.0
EDGE_BAND = (16.1, 16.8)  # H14: wick this far from the centre, so the first ring crosses the window edge
MAX_DRAWS = 1000


def _coordinate(rng: np.random.Generator, lo: float = AXIS_GAP, hi: float = FIELD_LIMIT) -> float:
    return round(float(rng.choice((-1.0, 1.0)) * rng.uniform(lo, hi)), 3)


def _place(rng: np.random.Generator) -> tuple[float, float]:
    """Draw a keyed point with both coordinates in ``[AXIS_GAP, FIELD_LIMIT]`` in magnitude, any signs."""
    return _coordinate(rng), _coordinate(rng)


def _placeable(points: list[tuple[float, float]]) -> bool:
    return all(AXIS_GAP <= abs(c) <= FIELD_LIMIT for p in points for c in p)


def _draw(
    rng: np.random.Generator, make: Callable[[np.random.Generator], tuple], ok: Callable[[tuple], bool]
):
    """Draw ``make(rng)`` until ``ok`` accepts it (a deterministic sequence of draws for a given stream)."""
    for _ in range(MAX_DRAWS):
        value = make(rng)
        if ok(value):
            return value
    raise RuntimeError("no acceptable draw in 1000 tries: the variant's ranges are inconsistent")


def _prism(scene: dict) -> tuple[float, float]:
    icl = scene["pupil"]["icl"]
    return tuple(icl["power_d"] * c * 1e-3 / ARCMIN for c in icl["decentre_mm"])


def _wicks(scene: dict) -> list[tuple[float, float]]:
    px, py = _prism(scene)
    return [(s["x_arcmin"] + px, s["y_arcmin"] + py) for s in scene["sources"]]


def _at(scene: dict, point: tuple[float, float]) -> dict:
    """Copy a one-source scene with its source moved to ``point``."""
    out = copy.deepcopy(scene)
    out["sources"][0]["x_arcmin"], out["sources"][0]["y_arcmin"] = point
    return out


def _fmt(p: tuple[float, float]) -> str:
    return f"({p[0]:.3f}, {p[1]:.3f})"


def _direction(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(0.0, 360.0)), 1)


def _decentre(rng: np.random.Generator, lo: float, hi: float) -> tuple[list[float], float, float]:
    m, psi = float(rng.uniform(lo, hi)), _direction(rng)
    return [round(m * math.cos(math.radians(psi)), 4), round(m * math.sin(math.radians(psi)), 4)], m, psi


# Each builder returns (title, expectation, (label_a, scene_a), (label_b, scene_b)) from the development
# scenes ``a`` and ``b`` of its case.


def _h01(rng, a, b):
    p, q = _draw(rng, lambda r: (_place(r), _place(r)), lambda v: math.dist(*v) >= 3.0)
    return (
        f"Point source moved from {_fmt(p)} to {_fmt(q)} arcmin",
        f"The whole pattern translates by ({q[0] - p[0]:.3f}, {q[1] - p[1]:.3f}) arcmin; the ring radius is "
        "unchanged and follows the wick.",
        (f"source at {_fmt(p)}", _at(a, p)),
        (f"source at {_fmt(q)}", _at(a, q)),
    )


def _h02(rng, a, b):
    def make(r):
        c, phi = _place(r), math.radians(float(r.uniform(0.0, 180.0)))
        return c, phi, round(float(r.uniform(1.5, 3.0)), 3), round(float(r.uniform(5.0, 10.0)), 3)

    def pair(c, phi, s):
        h = s / 2
        return [
            (round(c[0] - h * math.cos(phi), 3), round(c[1] - h * math.sin(phi), 3)),
            (round(c[0] + h * math.cos(phi), 3), round(c[1] + h * math.sin(phi), 3)),
        ]

    c, phi, sa, sb = _draw(rng, make, lambda v: _placeable(pair(v[0], v[1], v[2]) + pair(v[0], v[1], v[3])))
    scenes = []
    for s in (sa, sb):
        sc = copy.deepcopy(a)
        for src, pt in zip(sc["sources"], pair(c, phi, s), strict=True):
            src["x_arcmin"], src["y_arcmin"] = pt
        scenes.append(sc)

    def where(sc: dict) -> str:
        return " and ".join(_fmt((s["x_arcmin"], s["y_arcmin"])) for s in sc["sources"])

    return (
        f"Two point sources {sa:.3f} arcmin apart moved to {sb:.3f} arcmin apart; 0.36 mm clear hole",
        "Two independent source contributions add linearly; the bright overlap is not a third source's ring.",
        (f"sources at {where(scenes[0])}", scenes[0]),
        (f"sources at {where(scenes[1])}", scenes[1]),
    )


def _h03(rng, a, b):
    la, lb = _draw(
        rng,
        lambda r: (round(float(r.uniform(450, 650)), 1), round(float(r.uniform(450, 650)), 1)),
        lambda v: abs(v[0] - v[1]) >= 100.0,
    )
    p = _place(rng)
    sa, sb = _at(a, p), _at(a, p)
    sa["sources"][0]["spectrum"] = [[la, 1.0]]
    sb["sources"][0]["spectrum"] = [[lb, 1.0]]
    return (
        f"Wavelength {la:.1f} nm to {lb:.1f} nm at {_fmt(p)} arcmin, aberration-free circular pupil",
        f"The first bright ring scales with wavelength, by {lb / la:.4f}; the pattern stays centred on the "
        "source.",
        (f"{la:.1f} nm", sa),
        (f"{lb:.1f} nm", sb),
    )


def _h04(rng, a, b):
    da, db = _draw(
        rng,
        lambda r: (round(float(r.uniform(2.8, 4.8)), 2), round(float(r.uniform(2.8, 4.8)), 2)),
        lambda v: abs(v[0] - v[1]) >= 1.0,
    )
    p = _place(rng)
    sa, sb = _at(a, p), _at(a, p)
    sa["pupil"]["diameter_mm"], sb["pupil"]["diameter_mm"] = da, db
    return (
        f"Pupil diameter {da:.2f} mm to {db:.2f} mm at {_fmt(p)} arcmin, aberration-free",
        f"The first bright ring scales as 1 / D, by {da / db:.4f}; a pure diffraction control.",
        (f"{da:.2f} mm pupil", sa),
        (f"{db:.2f} mm pupil", sb),
    )


def _h05(rng, a, b):
    fa, fb, p = round(float(rng.uniform(0.1, 0.5)), 3), round(float(rng.uniform(0.6, 1.0)), 3), _place(rng)
    sa, sb = _at(a, p), _at(a, p)
    sa["sources"][0]["flux"], sb["sources"][0]["flux"] = fa, fb
    return (
        f"Source flux {fa:.3f} to {fb:.3f} at {_fmt(p)} arcmin",
        f"Every linear pixel value multiplies by {fb / fa:.4f} and the geometry does not change.",
        (f"flux {fa:.3f}", sa),
        (f"flux {fb:.3f}", sb),
    )


def _h06(rng, a, b):
    d, p = round(float(rng.uniform(0.75, 3.0)), 3), _place(rng)
    sb = _at(a, p)
    sb["sources"][0]["extent"] = {"kind": "disk", "diameter_arcmin": d}
    return (
        f"Point source to a uniform incoherent disk {d:.3f} arcmin across at {_fmt(p)} arcmin, "
        "same total flux",
        "Integrate (convolve) over the finite source; a sharp ring is not required.",
        ("point source", _at(a, p)),
        (f"{d:.3f} arcmin uniform disk", sb),
    )


def _h07(rng, a, b):
    delta = round(float(rng.choice((-1.0, 1.0)) * rng.uniform(0.25, 1.0)), 2)
    p = _place(rng)
    sb = _at(a, p)
    power = round(a["pupil"]["icl"]["power_d"] + delta, 2)
    sb["pupil"]["icl"]["power_d"] = power
    net = round(a["pupil"]["eye_excess_d"] + power, 2)
    return (
        f"ICL power {a['pupil']['icl']['power_d']:.2f} D to {power:.2f} D at {_fmt(p)} arcmin",
        "Compute the 2-D field and radial profile from the changed phase; energy moves out of the core.",
        ("full correction", _at(a, p)),
        (f"{power:.2f} D ({net:+.2f} D residual)", sb),
    )


def _axes(rng, gap: float) -> tuple[float, float]:
    def sep(v):
        d = abs(v[0] - v[1]) % 180.0
        return min(d, 180.0 - d) >= gap

    return _draw(rng, lambda r: (round(float(r.uniform(0, 180)), 1), round(float(r.uniform(0, 180)), 1)), sep)


def _h08(rng, a, b):
    ta, tb = _axes(rng, 30.0)
    p = _place(rng)
    sa, sb = _at(a, p), _at(a, p)
    sa["pupil"]["icl"]["axis_deg"], sb["pupil"]["icl"]["axis_deg"] = ta, tb
    cyl = a["pupil"]["icl"]["cylinder_d"]
    return (
        f"Plus-cylinder {cyl:.2f} D, axis {ta:.1f} deg to {tb:.1f} deg at {_fmt(p)} arcmin",
        "The non-circular structure turns with the axis; compare 2-D fields and angular profiles.",
        (f"{cyl:.2f} D cylinder at {ta:.1f} deg", sa),
        (f"{cyl:.2f} D cylinder at {tb:.1f} deg", sb),
    )


def _decentred(rng, a, lo, hi):
    """Draw a source point and a decentre that keep both wicks (centred and decentred optic) placeable."""

    def make(r):
        p = _place(r)
        dec, m, psi = _decentre(r, lo, hi)
        sb = _at(a, p)
        sb["pupil"]["icl"]["decentre_mm"] = dec
        return p, sb, m, psi

    return _draw(rng, make, lambda v: _placeable([v[0]] + _wicks(v[1])))


def _h09(rng, a, b):
    p, sb, m, psi = _decentred(rng, a, 0.1, 0.3)
    dec = sb["pupil"]["icl"]["decentre_mm"]
    px, py = _prism(sb)
    return (
        f"ICL decentred 0 to {m:.3f} mm towards {psi:.1f} deg, source at {_fmt(p)} arcmin, no hole",
        f"A pure prism: the pattern moves by ({px:.4f}, {py:.4f}) arcmin = K_icl times the decentre, "
        "opposite "
        "to the decentre for a minus lens; the ring stays concentric with the wick.",
        ("centred optic", _at(a, p)),
        (f"optic decentred ({dec[0]:.4f}, {dec[1]:.4f}) mm", sb),
    )


def _h10(rng, a, b):
    h, p = round(float(rng.uniform(0.2, 0.5)), 3), _place(rng)
    sb = _at(b, p)
    sb["pupil"]["icl"]["hole_mm"] = h
    return (
        f"Clear central hole 0 mm to {h:.3f} mm at {_fmt(p)} arcmin",
        "The hole transmits without the correcting phase: a weak, broad differential halo about the wick.",
        ("no hole", _at(a, p)),
        (f"{h:.3f} mm clear hole", sb),
    )


def _h11(rng, a, b):
    axis = round(float(rng.uniform(0, 180)), 1)
    a = copy.deepcopy(a)
    a["pupil"]["icl"]["axis_deg"] = axis
    p, sb, m, psi = _decentred(rng, a, 0.1, 0.25)
    dec = sb["pupil"]["icl"]["decentre_mm"]
    icl = a["pupil"]["icl"]
    return (
        f"{icl['hole_mm']:.2f} mm hole and {icl['cylinder_d']:.2f} D cylinder at {axis:.1f} deg; "
        "optic decentre "
        f"(0, 0) to ({dec[0]:.4f}, {dec[1]:.4f}) mm, source at {_fmt(p)} arcmin",
        "Keep the 2-D structure; the whole pattern shifts with the prism; several peaks or no unique "
        "centre are "
        "acceptable answers.",
        ("centred optic", _at(a, p)),
        (f"optic decentred ({dec[0]:.4f}, {dec[1]:.4f}) mm", sb),
    )


def _h12(rng, a, b):
    lam = round(float(rng.uniform(480, 620)), 1)
    lo, hi = round(float(rng.uniform(450, lam - 30)), 1), round(float(rng.uniform(lam + 30, 650)), 1)
    k1 = int(rng.integers(1, 5))
    k2 = int(rng.integers(2, 10 - k1))
    weights = [k1 / 10, k2 / 10, (10 - k1 - k2) / 10]
    p = _place(rng)
    sb = _at(b, p)
    sb["sources"][0]["spectrum"] = [[lo, weights[0]], [lam, weights[1]], [hi, weights[2]]]
    sa = _at(a, p)
    sa["sources"][0]["spectrum"] = [[lam, 1.0]]
    label = (
        "/".join(f"{x:.1f}" for x in (lo, lam, hi)) + " nm, weights " + "/".join(f"{w:.1f}" for w in weights)
    )
    return (
        f"{lam:.1f} nm to {label} at {_fmt(p)} arcmin",
        "Intensities of the three wavelengths add incoherently on the common angular grid.",
        (f"{lam:.1f} nm", sa),
        (label, sb),
    )


def _h13(rng, a, b):
    f, p = round(float(rng.uniform(0.25, 1.0)), 3), _place(rng)
    sb = _at(b, p)
    sb["sources"][0]["flux"] = f
    return (
        f"Source flux 0 to {f:.3f} at {_fmt(p)} arcmin",
        "Without a source the ideal optical model gives exact zeros; a halo is not a default.",
        ("flux 0", _at(a, p)),
        (f"flux {f:.3f}", sb),
    )


def _h14(rng, a, b):
    p = _place(rng)
    side = int(rng.integers(0, 4))  # +x, +y, -x, -y edge
    d = round(float(rng.uniform(*EDGE_BAND)), 3)
    t = _coordinate(rng, AXIS_GAP, 12.0)
    q = [(d, t), (t, d), (-d, t), (t, -d)][side]
    return (
        f"Source moved from {_fmt(p)} to {_fmt(q)} arcmin, next to the detector edge",
        "The first ring leaves the window in part; report the recorded coverage without wrapping light "
        "to the "
        "other side.",
        (f"source at {_fmt(p)}", _at(a, p)),
        (f"source at {_fmt(q)}", _at(b, q)),
    )


BUILDERS = {
    "H01": _h01,
    "H02": _h02,
    "H03": _h03,
    "H04": _h04,
    "H05": _h05,
    "H06": _h06,
    "H07": _h07,
    "H08": _h08,
    "H09": _h09,
    "H10": _h10,
    "H11": _h11,
    "H12": _h12,
    "H13": _h13,
    "H14": _h14,
}


def variant_id(case_id: str, variant: int) -> str:
    """Id of a test case: ``H01_t1`` for the first variant of H01 (conditions ``H01_t1_a``, ``H01_t1_b``)."""
    return f"{case_id}_t{variant}"


def make_variant(case: HaloCase, key: ReleaseKey, variant: int) -> HaloCase:
    """Build variant ``variant`` (1-based) of a development case.

    Every parameter comes from ``key.rng("halo", case.id, variant)``.
    """
    build = BUILDERS.get(case.id)
    if build is None:
        raise ValueError(f"{case.file}: no test-variant rule for case {case.id}")
    rng = key.rng("halo", case.id, variant)
    a, b = (c.scene_json for c in case.conditions)
    title, expectation, *pair = build(rng, copy.deepcopy(a), copy.deepcopy(b))
    vid = variant_id(case.id, variant)
    where = f"{case.file} (test variant {variant})"
    conds = tuple(
        make_condition(
            vid,
            label,
            {
                "label": text,
                "scene": scene,
                "calibration_ring": dev.calibration_ring,
                "complex_field": dev.complex_field,
            },
            where,
        )
        for label, (text, scene), dev in zip(CONDITION_LABELS, pair, case.conditions, strict=True)
    )
    check_pair(conds, where)
    return HaloCase(vid, title, case.purpose, case.predict, expectation, conds, where)


def build_test_split(cases: list[HaloCase], key: ReleaseKey, variants: int = TEST_VARIANTS) -> list[HaloCase]:
    """Build the test split: ``variants`` keyed variants of every case, ordered by case then variant."""
    if variants < 0:
        raise ValueError(f"test variants must be >= 0, got {variants}")
    return [make_variant(case, key, v) for case in cases for v in range(1, variants + 1)]
