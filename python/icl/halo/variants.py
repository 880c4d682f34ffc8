"""The held-out ``test`` split: keyed variants of the fourteen development cases that need the model.

Each variant tests what its development case tests (a move, a wavelength, a pupil, a flux, a finite
source, a power change, a cylinder axis, a decentre, a hole, a spectrum, a negative control, an edge),
and both conditions of a pair are built together. What the development answers cannot give is the
eye the pair is seen through: every test condition is drawn on a keyed eye that no similarity transform
of a development image can follow (translation, scaling by ``lambda / D``, rotation, convolution with a
disk, flux scaling: :mod:`icl.halo.dev_warp` tries all of them). The ingredients:

* a residual defocus between the eye's myopic excess and the ICL's power, fixed in dioptres, so that its
  phase in waves changes with the wavelength and with the square of the pupil;
* a cylinder of keyed magnitude; a central hole of keyed diameter that is ``clear`` (the eye's excess
  only), ``black`` (no light) or ``index_matched`` (the optic's own phase); an optic zone smaller than
  the pupil (the eye's excess alone acts in the ring outside it);
* polychromatic spectra, several sources of different spectra and fluxes in one scene, disks of other
  sizes.

:func:`shape` sums up what fixes a source's pattern up to a similarity; :func:`make_variant` refuses a
test condition whose shape equals that of the development condition of the same label.

Every parameter of variant ``v`` of case ``Hnn`` is drawn from ``key.rng("halo", "Hnn", v)``
(:mod:`icl.keys`): the variants are a deterministic function of the release key, and without the key
(kept in ``private/release.key``) nobody can produce them before the release is published.

Placement rule: every wick (source position plus the prism of the decentred optic, its cylinder's
included) lies at least ``AXIS_GAP`` = 2 arcmin from both axes and within ``FIELD_LIMIT`` = 10 arcmin of
them (edge variants of H14 excepted). A wick on an axis is its own mirror image, so it could not tell a
submission with a flipped axis from a correct one; 2 arcmin is more than two main-lobe radii at the
longest wavelength and smallest pupil used (0.97 arcmin at 650 nm, 2.8 mm).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np

from icl.halo.cases import CONDITION_LABELS, HaloCase, check_pair, make_condition
from icl.halo.geometry import ARCMIN_RAD as ARCMIN
from icl.halo.geometry import prism_arcmin, wicks_arcmin
from icl.keys import ReleaseKey

TEST_VARIANTS = 4
AXIS_GAP = 2.0
FIELD_LIMIT = 10.0
EDGE_BAND = (16.1, 16.8)  # H14: wick this far from the centre, so the pattern crosses the window edge
MAX_DRAWS = 1000
LAMBDA_NM = (450.0, 650.0)
PUPIL_MM = (2.8, 5.0)
EXCESS_D = (3.0, 14.0)  # the eye's myopic excess that the ICL corrects
# Residual defocus in waves at the edge of the pupil, |delta| (D/2)^2 / (2 lambda). The development set
# holds 0 and 1.16 waves (H07_b); from 1.8 waves on, no development pattern is near enough to be
# warped into the answer (at 0.5 waves the Airy peak already falls to about a third).
RESIDUAL_WAVES = (1.8, 3.0)


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


def _fmt(p: tuple[float, float]) -> str:
    return f"({p[0]:.3f}, {p[1]:.3f})"


def _direction(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(0.0, 360.0)), 1)


def _decentre(rng: np.random.Generator, lo: float, hi: float) -> tuple[list[float], float, float]:
    m, psi = float(rng.uniform(lo, hi)), _direction(rng)
    return [round(m * math.cos(math.radians(psi)), 4), round(m * math.sin(math.radians(psi)), 4)], m, psi


def _wavelength(rng: np.random.Generator, lo: float = LAMBDA_NM[0], hi: float = LAMBDA_NM[1]) -> float:
    return round(float(rng.uniform(lo, hi)), 1)


def _pupil(rng: np.random.Generator, lo: float = PUPIL_MM[0], hi: float = PUPIL_MM[1]) -> float:
    return round(float(rng.uniform(lo, hi)), 2)


def waves(dioptres: float, pupil_mm: float, lambda_nm: float) -> float:
    """Peak wavefront of a defocus (or cylinder) of ``dioptres`` at the pupil edge, in waves."""
    return dioptres * (pupil_mm * 5e-4) ** 2 / (2 * lambda_nm * 1e-9)


def _residual(
    rng: np.random.Generator,
    pupil_mm: float,
    lambda_nm: float,
    lo: float = RESIDUAL_WAVES[0],
    hi: float = RESIDUAL_WAVES[1],
) -> float:
    """Draw a residual defocus (D, either sign, 0.01 D steps) of ``lo``-``hi`` waves here."""

    def make(r):
        target = float(r.uniform(lo, hi)) * float(r.choice((-1.0, 1.0)))
        return (round(target * 2 * lambda_nm * 1e-9 / (pupil_mm * 5e-4) ** 2, 2),)

    return _draw(rng, make, lambda v: lo <= abs(waves(v[0], pupil_mm, lambda_nm)) <= hi)[0]


def _excess(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(*EXCESS_D)) * 4) / 4


def _eye(
    diameter: float,
    excess: float,
    residual: float,
    *,
    cylinder: float = 0.0,
    axis: float = 0.0,
    decentre: tuple[float, float] = (0.0, 0.0),
    zone: float = 6.0,
    hole: float = 0.0,
    kind: str = "clear",
) -> dict:
    """Build the pupil JSON of an eye of myopic ``excess`` whose ICL leaves ``residual`` D uncorrected."""
    return {
        "diameter_mm": diameter,
        "eye_excess_d": excess,
        "icl": {
            "power_d": round(residual - excess, 2),
            "cylinder_d": cylinder,
            "axis_deg": axis,
            "decentre_mm": list(decentre),
            "optic_zone_mm": zone,
            "hole_mm": hole,
            "hole": kind,
        },
    }


def _source(
    sid: str, point: tuple[float, float], flux: float, spectrum: list, disk: float | None = None
) -> dict:
    return {
        "id": sid,
        "x_arcmin": point[0],
        "y_arcmin": point[1],
        "flux": flux,
        "spectrum": [list(x) for x in spectrum],
        "extent": {"kind": "point"} if disk is None else {"kind": "disk", "diameter_arcmin": disk},
    }


def _scene(detector: dict, pupil: dict, sources: list[dict]) -> dict:
    return {"pupil": pupil, "detector": copy.deepcopy(detector), "sources": sources}


def _spectrum(rng: np.random.Generator, lines: int) -> list[list[float]]:
    """``lines`` wavelengths in 450-650 nm at least 30 nm apart, keyed weights in tenths summing to 1."""
    lams = _draw(
        rng,
        lambda r: tuple(sorted(_wavelength(r) for _ in range(lines))),
        lambda v: all(b - a >= 30.0 for a, b in zip(v[:-1], v[1:], strict=True)),
    )
    cuts = sorted(int(x) for x in rng.choice(np.arange(1, 10), lines - 1, replace=False))
    tenths = np.diff([0, *cuts, 10])
    return [[lam, round(float(t) / 10, 1)] for lam, t in zip(lams, tenths, strict=True)]


def _mean_nm(spectrum: list) -> float:
    return sum(lam * w for lam, w in spectrum) / sum(w for _, w in spectrum)


def _hole(
    rng: np.random.Generator, kinds: tuple[str, ...], lo: float = 0.3, hi: float = 0.6
) -> tuple[float, str]:
    return round(float(rng.uniform(lo, hi)), 2), str(rng.choice(kinds))


def _eye_text(p: dict) -> str:
    """Describe a keyed eye in a few words for a title."""
    icl = p["icl"]
    net = p["eye_excess_d"] + icl["power_d"]
    parts = [
        f"{p['diameter_mm']:.2f} mm pupil",
        f"eye +{p['eye_excess_d']:.2f} D, ICL {icl['power_d']:.2f} D",
    ]
    parts.append(f"{net:+.2f} D residual" if round(net, 2) else "full correction")
    if icl["cylinder_d"]:
        parts.append(f"{icl['cylinder_d']:.2f} D cylinder at {icl['axis_deg']:.1f} deg")
    if icl["optic_zone_mm"] < p["diameter_mm"]:
        parts.append(f"{icl['optic_zone_mm']:.2f} mm optic zone")
    if icl["hole_mm"]:
        parts.append(f"{icl['hole_mm']:.2f} mm {icl['hole'].replace('_', '-')} hole")
    return ", ".join(parts)


# Each builder returns (title, expectation, (label_a, scene_a), (label_b, scene_b)) from the
# development scenes ``a`` and ``b`` of its case (only their detector is reused).


def _h01(rng, a, b):
    d, lam = _pupil(rng), _wavelength(rng)
    eye = _eye(d, _excess(rng), _residual(rng, d, lam))
    p, q = _draw(rng, lambda r: (_place(r), _place(r)), lambda v: math.dist(*v) >= 3.0)
    spec = [[lam, 1.0]]
    return (
        f"Point source at {lam:.1f} nm moved from {_fmt(p)} to {_fmt(q)} arcmin; {_eye_text(eye)}",
        f"The whole defocused pattern translates by ({q[0] - p[0]:.3f}, {q[1] - p[1]:.3f}) arcmin and "
        "keeps its shape about the wick.",
        (f"source at {_fmt(p)}", _scene(a["detector"], eye, [_source("L1", p, 1.0, spec)])),
        (f"source at {_fmt(q)}", _scene(a["detector"], eye, [_source("L1", q, 1.0, spec)])),
    )


def _pair(c: tuple[float, float], phi: float, s: float) -> list[tuple[float, float]]:
    h = s / 2
    return [
        (round(c[0] - h * math.cos(phi), 3), round(c[1] - h * math.sin(phi), 3)),
        (round(c[0] + h * math.cos(phi), 3), round(c[1] + h * math.sin(phi), 3)),
    ]


def _h02(rng, a, b):
    def make(r):
        c, phi = _place(r), math.radians(float(r.uniform(0.0, 180.0)))
        return c, phi, round(float(r.uniform(1.5, 3.0)), 3), round(float(r.uniform(5.0, 10.0)), 3)

    c, phi, sa, sb = _draw(rng, make, lambda v: _placeable(_pair(v[0], v[1], v[2]) + _pair(v[0], v[1], v[3])))
    d, lam1 = _pupil(rng), _wavelength(rng)
    lam2 = _draw(rng, _wavelength, lambda x: abs(x - lam1) >= 60.0)
    f1, f2 = round(float(rng.uniform(0.3, 1.0)), 3), round(float(rng.uniform(0.3, 1.0)), 3)
    h, kind = _hole(rng, ("black",))
    eye = _eye(d, _excess(rng), _residual(rng, d, 0.5 * (lam1 + lam2)), hole=h, kind=kind)
    scenes = []
    for s in (sa, sb):
        p1, p2 = _pair(c, phi, s)
        scenes.append(
            _scene(
                a["detector"],
                eye,
                [_source("L1", p1, f1, [[lam1, 1.0]]), _source("L2", p2, f2, [[lam2, 1.0]])],
            )
        )

    def where(sc: dict) -> str:
        return " and ".join(_fmt((s["x_arcmin"], s["y_arcmin"])) for s in sc["sources"])

    return (
        f"Two point sources ({lam1:.1f} nm, flux {f1:.3f}; {lam2:.1f} nm, flux {f2:.3f}) {sa:.3f} arcmin "
        f"apart moved to {sb:.3f} arcmin apart; {_eye_text(eye)}",
        "Two independent source contributions add linearly, each with its own wavelength and flux; the "
        "bright overlap is not a third source's ring.",
        (f"sources at {where(scenes[0])}", scenes[0]),
        (f"sources at {where(scenes[1])}", scenes[1]),
    )


def _h03(rng, a, b):
    la, lb = _draw(rng, lambda r: (_wavelength(r), _wavelength(r)), lambda v: abs(v[0] - v[1]) >= 100.0)
    d = _pupil(rng)
    delta = _residual(rng, d, 0.5 * (la + lb))
    eye = _eye(d, _excess(rng), delta)
    p = _place(rng)
    wa, wb = waves(delta, d, la), waves(delta, d, lb)
    return (
        f"Wavelength {la:.1f} nm to {lb:.1f} nm at {_fmt(p)} arcmin; {_eye_text(eye)}",
        f"The diffraction scale lambda / D grows by {lb / la:.4f} while the residual defocus, fixed in "
        f"dioptres, goes from {abs(wa):.3f} to {abs(wb):.3f} waves: the pattern does not simply scale.",
        (f"{la:.1f} nm", _scene(a["detector"], eye, [_source("L1", p, 1.0, [[la, 1.0]])])),
        (f"{lb:.1f} nm", _scene(a["detector"], eye, [_source("L1", p, 1.0, [[lb, 1.0]])])),
    )


def _h04(rng, a, b):
    da, db = _draw(rng, lambda r: (_pupil(r, 2.8, 5.5), _pupil(r, 2.8, 5.5)), lambda v: v[1] - v[0] >= 1.0)
    zone = round(float(rng.uniform(da + 0.3, db - 0.3)), 2)
    lam = _wavelength(rng)
    delta = _residual(rng, da, lam)
    excess = _excess(rng)
    eye_a, eye_b = _eye(da, excess, delta, zone=zone), _eye(db, excess, delta, zone=zone)
    p = _place(rng)
    spec = [[lam, 1.0]]
    return (
        f"Pupil diameter {da:.2f} mm to {db:.2f} mm at {lam:.1f} nm, {zone:.2f} mm optic zone, "
        f"eye +{excess:.2f} D, {eye_a['icl']['power_d'] + excess:+.2f} D residual, at {_fmt(p)} arcmin",
        f"Inside the optic zone the residual defocus grows with the square of the pupil "
        f"({abs(waves(delta, da, lam)):.3f} waves at {da:.2f} mm); beyond it the ring of pupil outside the "
        "zone sees the eye's whole excess and throws its light far out.",
        (f"{da:.2f} mm pupil", _scene(a["detector"], eye_a, [_source("L1", p, 1.0, spec)])),
        (f"{db:.2f} mm pupil", _scene(a["detector"], eye_b, [_source("L1", p, 1.0, spec)])),
    )


def _h05(rng, a, b):
    fa, fb = round(float(rng.uniform(0.1, 0.5)), 3), round(float(rng.uniform(0.6, 1.0)), 3)
    spec = _spectrum(rng, 2)
    d = _pupil(rng)
    h, kind = _hole(rng, ("index_matched",))
    eye = _eye(d, _excess(rng), _residual(rng, d, _mean_nm(spec)), hole=h, kind=kind)
    p = _place(rng)
    label = " + ".join(f"{w:.1f} x {lam:.1f} nm" for lam, w in spec)
    return (
        f"Source flux {fa:.3f} to {fb:.3f} at {_fmt(p)} arcmin, spectrum {label}; {_eye_text(eye)}",
        f"Every linear pixel value multiplies by {fb / fa:.4f} and the geometry does not change.",
        (f"flux {fa:.3f}", _scene(a["detector"], eye, [_source("L1", p, fa, spec)])),
        (f"flux {fb:.3f}", _scene(a["detector"], eye, [_source("L1", p, fb, spec)])),
    )


def _h06(rng, a, b):
    disk = _draw(rng, lambda r: (round(float(r.uniform(0.5, 4.0)), 3),), lambda v: abs(v[0] - 1.5) >= 0.25)[0]
    d, lam = _pupil(rng), _wavelength(rng)
    eye = _eye(d, _excess(rng), _residual(rng, d, lam))
    p = _place(rng)
    spec = [[lam, 1.0]]
    return (
        f"Point source to a uniform incoherent disk {disk:.3f} arcmin across at {_fmt(p)} arcmin, "
        f"{lam:.1f} nm, same total flux; {_eye_text(eye)}",
        "Integrate (convolve) the defocused pattern over the finite source; a bloom filter is no substitute.",
        ("point source", _scene(a["detector"], eye, [_source("L1", p, 1.0, spec)])),
        (f"{disk:.3f} arcmin uniform disk", _scene(a["detector"], eye, [_source("L1", p, 1.0, spec, disk)])),
    )


def _h07(rng, a, b):
    d, lam = _pupil(rng, 3.8, 5.0), _wavelength(rng)
    zone = round(d * float(rng.uniform(0.75, 0.88)), 2)
    excess = _excess(rng)
    delta = _residual(rng, d, lam)
    h = round(float(rng.uniform(0.3, 0.5)), 2)
    eye_a = _eye(d, excess, 0.0, zone=zone, hole=h)
    eye_b = _eye(d, excess, delta, zone=zone, hole=h)
    p = _place(rng)
    spec = [[lam, 1.0]]
    pa, pb = eye_a["icl"]["power_d"], eye_b["icl"]["power_d"]
    return (
        f"ICL power {pa:.2f} D to {pb:.2f} D on an eye of +{excess:.2f} D at {lam:.1f} nm, {d:.2f} mm pupil, "
        f"{zone:.2f} mm optic zone, {h:.2f} mm clear hole, at {_fmt(p)} arcmin",
        "Compute the 2-D field and radial profile from the changed phase; the light through the hole and "
        "outside the optic zone keeps the eye's whole excess whatever the optic's power.",
        (f"{pa:.2f} D (full correction)", _scene(a["detector"], eye_a, [_source("L1", p, 1.0, spec)])),
        (
            f"{pb:.2f} D ({delta:+.2f} D residual)",
            _scene(a["detector"], eye_b, [_source("L1", p, 1.0, spec)]),
        ),
    )


def _axes(rng, gap: float) -> tuple[float, float]:
    def sep(v):
        diff = abs(v[0] - v[1]) % 180.0
        return min(diff, 180.0 - diff) >= gap

    return _draw(rng, lambda r: (round(float(r.uniform(0, 180)), 1), round(float(r.uniform(0, 180)), 1)), sep)


def _h08(rng, a, b):
    ta, tb = _axes(rng, 30.0)
    d, lam = _pupil(rng), _wavelength(rng)
    # The development cylinder is 1.75 waves (0.75 D, 3.2 mm, 550 nm); here 0.6-1.2 or 2.4-3.5 waves.
    cw = float(rng.uniform(0.6, 1.2)) if rng.random() < 0.5 else float(rng.uniform(2.4, 3.5))
    cyl = round(cw * 2 * lam * 1e-9 / (d * 5e-4) ** 2, 2)
    excess = _excess(rng)
    delta = _residual(rng, d, lam)
    eye_a = _eye(d, excess, delta, cylinder=cyl, axis=ta)
    eye_b = _eye(d, excess, delta, cylinder=cyl, axis=tb)
    p = _place(rng)
    spec = [[lam, 1.0]]
    return (
        f"Plus-cylinder {cyl:.2f} D, axis {ta:.1f} deg to {tb:.1f} deg at {_fmt(p)} arcmin, {lam:.1f} nm; "
        f"{d:.2f} mm pupil, eye +{excess:.2f} D, {delta:+.2f} D residual sphere",
        "The non-circular structure turns with the axis; compare 2-D fields and angular profiles.",
        (
            f"{cyl:.2f} D cylinder at {ta:.1f} deg",
            _scene(a["detector"], eye_a, [_source("L1", p, 1.0, spec)]),
        ),
        (
            f"{cyl:.2f} D cylinder at {tb:.1f} deg",
            _scene(a["detector"], eye_b, [_source("L1", p, 1.0, spec)]),
        ),
    )


def _decentred(rng, make_eye: Callable[[tuple[float, float]], dict], spec, lo: float, hi: float):
    """Draw a source point and a decentre that keep both wicks (centred and decentred optic) placeable."""

    def make(r):
        p = _place(r)
        dec, m, psi = _decentre(r, lo, hi)
        sa = _scene({}, make_eye((0.0, 0.0)), [_source("L1", p, 1.0, spec)])
        sb = _scene({}, make_eye(tuple(dec)), [_source("L1", p, 1.0, spec)])
        return p, sa, sb, m, psi

    return _draw(rng, make, lambda v: _placeable(wicks_arcmin(v[1]) + wicks_arcmin(v[2])))


def _h09(rng, a, b):
    d = _pupil(rng)
    spec = _spectrum(rng, 2)
    excess, delta = _excess(rng), _residual(rng, d, _mean_nm(spec))
    p, sa, sb, m, psi = _decentred(rng, lambda c: _eye(d, excess, delta, decentre=c), spec, 0.1, 0.3)
    for s in (sa, sb):
        s["detector"] = copy.deepcopy(a["detector"])
    dec = sb["pupil"]["icl"]["decentre_mm"]
    px, py = prism_arcmin(sb)
    label = " + ".join(f"{w:.1f} x {lam:.1f} nm" for lam, w in spec)
    return (
        f"ICL decentred 0 to {m:.3f} mm towards {psi:.1f} deg, source at {_fmt(p)} arcmin, {label}; "
        f"{_eye_text(sa['pupil'])}",
        f"A pure prism: the whole defocused pattern moves by ({px:.4f}, {py:.4f}) arcmin = K_icl times the "
        "decentre and keeps its shape about the wick.",
        ("centred optic", sa),
        (f"optic decentred ({dec[0]:.4f}, {dec[1]:.4f}) mm", sb),
    )


def _h10(rng, a, b):
    d, lam = _pupil(rng, 2.8, 4.0), _wavelength(rng)
    h = round(float(rng.uniform(0.3, 0.7)), 2)
    excess = _excess(rng)
    delta = _residual(rng, d, lam)
    eye_a = _eye(d, excess, delta, hole=h, kind="index_matched")
    eye_b = _eye(d, excess, delta, hole=h, kind="clear")
    p = _place(rng)
    spec = [[lam, 1.0]]
    return (
        f"A {h:.2f} mm central hole filled to match the optic, then clear, at {_fmt(p)} arcmin, "
        f"{lam:.1f} nm; "
        f"{d:.2f} mm pupil, eye +{excess:.2f} D, {delta:+.2f} D residual",
        "An index-matched hole acts as the optic; a clear hole passes light without the optic's correcting "
        f"phase, defocused by the eye's whole +{excess:.2f} D: a weak, broad differential halo.",
        (f"{h:.2f} mm index-matched hole", _scene(a["detector"], eye_a, [_source("L1", p, 1.0, spec)])),
        (f"{h:.2f} mm clear hole", _scene(a["detector"], eye_b, [_source("L1", p, 1.0, spec)])),
    )


def _h11(rng, a, b):
    d, lam = _pupil(rng), _wavelength(rng)
    axis = round(float(rng.uniform(0, 180)), 1)
    cyl = round(float(rng.uniform(0.25, 1.0)), 2)
    h, kind = _hole(rng, ("clear", "black"))
    excess, delta = _excess(rng), _residual(rng, d, lam)
    spec = [[lam, 1.0]]

    def make_eye(c):
        return _eye(d, excess, delta, cylinder=cyl, axis=axis, decentre=c, hole=h, kind=kind)

    p, sa, sb, m, psi = _decentred(rng, make_eye, spec, 0.1, 0.3)
    for s in (sa, sb):
        s["detector"] = copy.deepcopy(a["detector"])
    dec = sb["pupil"]["icl"]["decentre_mm"]
    return (
        f"{h:.2f} mm {kind} hole and {cyl:.2f} D cylinder at {axis:.1f} deg; optic decentre (0, 0) to "
        f"({dec[0]:.4f}, {dec[1]:.4f}) mm, source at {_fmt(p)} arcmin, {lam:.1f} nm; {d:.2f} mm pupil, "
        f"eye +{excess:.2f} D, {delta:+.2f} D residual",
        "Keep the 2-D structure; the pattern shifts with the prism of the optic and its cylinder, and the "
        "hole moves within the pupil; several peaks or no unique centre are acceptable answers.",
        ("centred optic", sa),
        (f"optic decentred ({dec[0]:.4f}, {dec[1]:.4f}) mm", sb),
    )


def _h12(rng, a, b):
    spec = _spectrum(rng, 3)
    lam = spec[1][0]
    d = _pupil(rng)
    eye = _eye(d, _excess(rng), _residual(rng, d, lam))
    p = _place(rng)
    label = "/".join(f"{x:.1f}" for x, _ in spec) + " nm, weights " + "/".join(f"{w:.1f}" for _, w in spec)
    return (
        f"{lam:.1f} nm to {label} at {_fmt(p)} arcmin; {_eye_text(eye)}",
        "Intensities of the three wavelengths add incoherently on the common angular grid; the residual "
        "defocus is a different number of waves at each.",
        (f"{lam:.1f} nm", _scene(a["detector"], eye, [_source("L1", p, 1.0, [[lam, 1.0]])])),
        (label, _scene(a["detector"], eye, [_source("L1", p, 1.0, spec)])),
    )


def _h13(rng, a, b):
    f, g = round(float(rng.uniform(0.25, 1.0)), 3), round(float(rng.uniform(0.25, 1.0)), 3)
    p, q = _draw(rng, lambda r: (_place(r), _place(r)), lambda v: math.dist(*v) >= 5.0)
    d, lam1 = _pupil(rng), _wavelength(rng)
    lam2 = _draw(rng, _wavelength, lambda x: abs(x - lam1) >= 60.0)
    h, kind = _hole(rng, ("clear", "black", "index_matched"))
    eye = _eye(d, _excess(rng), _residual(rng, d, lam1), hole=h, kind=kind)
    other = _source("L2", q, g, [[lam2, 1.0]])
    return (
        f"Source L1 ({lam1:.1f} nm) at {_fmt(p)} arcmin from flux 0 to {f:.3f}, beside L2 ({lam2:.1f} nm, "
        f"flux {g:.3f}) at {_fmt(q)} arcmin; {_eye_text(eye)}",
        "Without flux L1's component is exact zeros even beside a bright source: a halo is not a default, "
        "and L2's light is L2's.",
        ("L1 flux 0", _scene(a["detector"], eye, [_source("L1", p, 0.0, [[lam1, 1.0]]), other])),
        (
            f"L1 flux {f:.3f}",
            _scene(a["detector"], eye, [_source("L1", p, f, [[lam1, 1.0]]), copy.deepcopy(other)]),
        ),
    )


def _h14(rng, a, b):
    p = _place(rng)
    side = int(rng.integers(0, 4))  # +x, +y, -x, -y edge
    dist = round(float(rng.uniform(*EDGE_BAND)), 3)
    t = _coordinate(rng, AXIS_GAP, 12.0)
    q = [(dist, t), (t, dist), (-dist, t), (t, -dist)][side]
    d, lam = _pupil(rng), _wavelength(rng)
    eye = _eye(d, _excess(rng), _residual(rng, d, lam))
    spec = [[lam, 1.0]]
    return (
        f"Source at {lam:.1f} nm moved from {_fmt(p)} to {_fmt(q)} arcmin, next to the detector edge; "
        f"{_eye_text(eye)}",
        "Part of the pattern leaves the window; report the recorded coverage without wrapping light to the "
        "other side.",
        (f"source at {_fmt(p)}", _scene(a["detector"], eye, [_source("L1", p, 1.0, spec)])),
        (f"source at {_fmt(q)}", _scene(b["detector"], eye, [_source("L1", q, 1.0, spec)])),
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


def shape(scene: dict, k: int) -> tuple:
    """Sum up what fixes the pattern of source ``k`` up to a similarity transform (rounded; hashable).

    Per wavelength and relative weight: the residual defocus and the cylinder in waves, the eye's excess
    in waves where light escapes the optic (a clear hole, an optic zone inside the pupil), the hole's
    kind and its diameter, the optic zone and the decentre in units of the pupil, and the disk's
    diameter in units of ``lambda / D``. Two sources with equal shapes differ by a translation, a
    scaling, a rotation and a flux factor only.
    """
    pupil, src = scene["pupil"], scene["sources"][k]
    icl = pupil.get("icl") or {}
    d = pupil["diameter_mm"]
    total = sum(w for _, w in src["spectrum"]) or 1.0
    zone_inside = icl.get("optic_zone_mm", math.inf) < d + 2 * math.hypot(*icl.get("decentre_mm", (0, 0)))
    kind = icl.get("hole", "clear") if icl.get("hole_mm", 0.0) else "none"
    escapes = zone_inside or kind == "clear"
    disk = src.get("extent", {}).get("diameter_arcmin", 0.0)
    per_line = []
    for lam, w in src["spectrum"]:
        lod = lam * 1e-9 / (d * 1e-3) / ARCMIN
        per_line.append(
            (
                round(w / total, 3),
                round(waves(pupil["eye_excess_d"] + icl.get("power_d", 0.0), d, lam), 2),
                round(waves(icl.get("cylinder_d", 0.0), d, lam), 2),
                round(waves(pupil["eye_excess_d"], d, lam), 1) if escapes else None,
                round(disk / lod, 2),
            )
        )
    ratio = [round(lam / src["spectrum"][0][0], 3) for lam, _ in src["spectrum"]]
    geometry = (
        kind,
        round(icl.get("hole_mm", 0.0) / d, 3) if kind != "none" else None,
        round(icl.get("optic_zone_mm", 0.0) / d, 3) if zone_inside else None,
        tuple(round(c / d, 3) for c in icl.get("decentre_mm", (0, 0)))
        if kind != "none" or zone_inside
        else None,
    )
    return (tuple(per_line), tuple(ratio), geometry)


def variant_id(case_id: str, variant: int) -> str:
    """Id of a test case: ``H01_t1`` for the first variant of H01 (conditions ``H01_t1_a``, ``H01_t1_b``)."""
    return f"{case_id}_t{variant}"


def make_variant(case: HaloCase, key: ReleaseKey, variant: int) -> HaloCase:
    """Build variant ``variant`` (1-based) of a development case.

    Every parameter comes from ``key.rng("halo", case.id, variant)``. Test conditions are complex fields,
    never calibration rings: a pure Airy pattern is a similarity transform of a development answer.

    Raises
    ------
    RuntimeError
        If a lit source of a test condition has the shape (:func:`shape`) of a lit source of the
        development condition of the same label: its answer would follow from the development answer.

    """
    build = BUILDERS.get(case.id)
    if build is None:
        raise ValueError(f"{case.file}: no test-variant rule for case {case.id}")
    rng = key.rng("halo", case.id, variant)
    a, b = (c.scene_json for c in case.conditions)
    title, expectation, *pair = build(rng, copy.deepcopy(a), copy.deepcopy(b))
    vid = variant_id(case.id, variant)
    where = f"{case.file} (test variant {variant})"
    for (_, scene), dev in zip(pair, case.conditions, strict=True):
        dev_shapes = {shape(dev.scene_json, j) for j in range(len(dev.scene_json["sources"]))}
        for k, src in enumerate(scene["sources"]):
            if src["flux"] > 0 and shape(scene, k) in dev_shapes:
                raise RuntimeError(f"{where}: source {src['id']} is a similarity transform of {dev.id}")
    conds = tuple(
        make_condition(
            vid,
            label,
            {"label": text, "scene": scene, "calibration_ring": False, "complex_field": True},
            where,
        )
        for label, (text, scene) in zip(CONDITION_LABELS, pair, strict=True)
    )
    check_pair(conds, where)
    return HaloCase(vid, title, case.purpose, case.predict, expectation, conds, where)


def build_test_split(cases: list[HaloCase], key: ReleaseKey, variants: int = TEST_VARIANTS) -> list[HaloCase]:
    """Build the test split: ``variants`` keyed variants of every case, ordered by case then variant."""
    if variants < 0:
        raise ValueError(f"test variants must be >= 0, got {variants}")
    return [make_variant(case, key, v) for case in cases for v in range(1, variants + 1)]
