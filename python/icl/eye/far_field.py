"""Second wave path for the thick eye: the traced pupil at the matrix-Fourier solver's own nodes.

The FFT engine (:mod:`icl.optics.render`) takes a :class:`~icl.eye.pupil.ThickPupil` on its square pupil
grid (one traced ray per grid node, cell coverages of fitted footprint circles) and propagates it with
pruned FFTs and band-limited pixel taps. This path shares none of that: it takes the same eye, implant,
field and paths and

- **finds each path's footprint on the entrance pupil itself**: along ``n_azimuths`` azimuths the
  radius where the path's rays (apertures and hole wall on) stop passing is bisected, and a circle is
  fitted to those points (:func:`footprints`);
- **writes the pupil as terms over intersections of disks**: the pupil disk with each path's inside
  circles, and, for a path that lies outside a circle (the lens path around the hole, the edge path around
  the optic zone), inclusion-exclusion (``1_{A minus B} = 1_A - 1_{A and B}``);
- **traces every quadrature node** of the matrix-Fourier solver (:func:`icl.optics.mft.region_nodes`:
  edge-exact Gauss-Legendre, nodes set by the largest traced wavefront slope on the region plus the
  largest angle evaluated) along each path with apertures off (OPD on the host reference sphere and
  the Fresnel amplitude; the wavefront is smooth across the region's edges), and once more with
  apertures on, to check each node's transmission against the region it was placed in;
- **transforms and integrates the pixels** with :func:`icl.optics.mft.pixel_flux` (direct sums onto
  sub-pixel Gauss nodes).

Only the ray tracer (``icl._core.trace_rays`` through :func:`icl.eye.wavefront.opd`) is common to the two
paths; it is checked on its own against optiland (:mod:`icl.eye.optiland_check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from icl import linalg
from icl.eye.model import PRIMARY_PATHS
from icl.eye.paraxial import paraxial
from icl.eye.pupil import ThickPupil
from icl.eye.trace import TraceOptions
from icl.eye.wavefront import Reference, host_reference, opd
from icl.optics.mft import MftSampling, Quadrature, pixel_flux, region_nodes
from icl.optics.model import Scene

Disk = tuple[float, float, float]  # centre u, centre v, radius (mm)


@dataclass(frozen=True)
class ThickMftSampling:
    """Numerical parameters of the thick second path (see ``bench/thick_crosscheck.py --convergence``).

    Parameters
    ----------
    mft : MftSampling
        Pupil nodes per cycle, minimum nodes, sub-pixel nodes of the matrix-Fourier solver.
    n_azimuths : int
        Azimuths along which each footprint boundary is bisected.
    n_bisect : int
        Bisection steps per azimuth (the boundary to ``range / 2**n_bisect``).
    slope_points : int
        Points per side of the grid on which each path's largest wavefront slope is measured.
    slope_margin : float
        Factor on the measured largest slope (the grid may miss the maximum by a little).

    """

    mft: MftSampling = MftSampling()
    n_azimuths: int = 48
    n_bisect: int = 44
    slope_points: int = 25
    slope_margin: float = 1.25


@dataclass(frozen=True)
class Circle:
    """A footprint boundary (mm, entrance pupil): the path passes inside (``side`` +1) or outside (-1)."""

    cu: float
    cv: float
    radius: float
    side: int
    roundness: float  # largest distance of a bisected boundary point from the circle (mm)


def _paths(pupil: ThickPupil) -> tuple[str, ...]:
    if pupil.implant is None:
        return ("host",)
    bad = [p for p in pupil.paths if p not in PRIMARY_PATHS]
    if bad:
        raise ValueError(f"paths {bad}: the matrix-Fourier path takes the primary paths {PRIMARY_PATHS} only")
    return tuple(p for p in pupil.paths if p != "hole" or pupil.implant.hole_mm > 0)


def _trace(pupil: ThickPupil, path: str, u: np.ndarray, v: np.ndarray, lam_nm: float, ref: Reference,
           apertures: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OPD (mm), Fresnel weight and flags of rays through entrance-pupil points (u, v) (mm)."""
    opts = TraceOptions(apertures=apertures, fresnel=pupil.fresnel)
    implant = None if path == "host" else pupil.implant
    return opd(pupil.eye, implant, "host" if path == "host" else path, np.ravel(u), np.ravel(v),
               pupil.field_arcmin, lam_nm, opts, ref)


def _bisect(pupil: ThickPupil, path: str, centre: tuple[float, float], r_in: float, r_out: float,
            alive_inside: bool, lam_nm: float, ref: Reference, smp: ThickMftSampling) -> Circle:
    """Boundary where the path's rays stop (``alive_inside``) or start passing, fitted by a circle."""
    phi = 2.0 * math.pi * (np.arange(smp.n_azimuths) + 0.5) / smp.n_azimuths
    lo, hi = np.full(phi.size, r_in), np.full(phi.size, r_out)
    for _ in range(smp.n_bisect):
        mid = 0.5 * (lo + hi)
        u, v = centre[0] + mid * np.cos(phi), centre[1] + mid * np.sin(phi)
        _, _, flags = _trace(pupil, path, u, v, lam_nm, ref, True)
        outward = (flags == 0) == alive_inside
        lo, hi = np.where(outward, mid, lo), np.where(outward, hi, mid)
    r = 0.5 * (lo + hi)
    x, y = centre[0] + r * np.cos(phi), centre[1] + r * np.sin(phi)
    # Least-squares circle through the points, solved for the centre with the radius eliminated.
    xm, ym = x.mean(), y.mean()
    a = np.column_stack([x - xm, y - ym])
    b = 0.5 * ((x - xm) ** 2 + (y - ym) ** 2 - np.mean((x - xm) ** 2 + (y - ym) ** 2))
    du, dv = linalg.lstsq(a, b)
    cu, cv = xm + du, ym + dv
    dist = np.hypot(x - cu, y - cv)
    radius = float(dist.mean())
    return Circle(float(cu), float(cv), radius, 1 if alive_inside else -1, float(np.abs(dist - radius).max()))


def footprints(pupil: ThickPupil, lam_nm: float,
               smp: ThickMftSampling | None = None) -> dict[str, list[Circle]]:
    """Each enabled path's footprint circles on the entrance pupil, bisected on traced rays (apertures on).

    Hole: inside one circle (hole front and wall). Lens: inside the optic zone's circle and outside the
    hole's (with its wall shadow). Edge: outside the optic zone's circle. The search is centred on the
    implant centre's paraxial preimage.
    """
    smp = smp or ThickMftSampling()
    imp = pupil.implant
    if imp is None:
        return {"host": []}
    ref = host_reference(pupil.eye, pupil.field_arcmin, lam_nm)
    m = paraxial(pupil.eye, None, lam_nm).entrance_pupil_mag
    c0 = (imp.decentre_mm[0] / m, imp.decentre_mm[1] / m)
    rh, roz = imp.hole_mm / 2 / m, imp.optic_zone_mm / 2 / m
    # Past about 1.5 optic-zone radii rays may miss the cornea, which would break the bisection.
    far = 1.5 * roz
    out: dict[str, list[Circle]] = {}
    near = 2.0 * rh + 0.05

    def search(p: str, r_in: float, r_out: float, alive_inside: bool) -> Circle:
        return _bisect(pupil, p, c0, r_in, r_out, alive_inside, lam_nm, ref, smp)

    for p in _paths(pupil):
        if p == "hole":
            out[p] = [search(p, 0.0, near, True)]
        elif p == "edge":
            out[p] = [search(p, 0.5 * roz, far, False)]
        else:
            inner = [search(p, 0.0, near, False)] if imp.hole_mm > 0 else []
            out[p] = inner + [search(p, max(near, 0.5 * roz), far, True)]
    return out


Term = tuple[tuple[Disk, ...], list[tuple[float, str]]]


def _terms(rp: float, circles: dict[str, list[Circle]]) -> list[Term]:
    """Split the pupil into ``sum over terms of 1_region sum (sign x path field)`` over disk intersections.

    A circle that contains the pupil disk is dropped (inside) or empties the path (outside); one that
    misses it is dropped (outside) or empties the path (inside). The rest: outside circles by
    inclusion-exclusion.
    """
    out = []
    for path, cs in circles.items():
        inside, outside, empty = [], [], False
        for c in cs:
            d = math.hypot(c.cu, c.cv)
            contains, misses = d + rp <= c.radius, d >= rp + c.radius
            if c.side > 0:
                empty |= misses
                if not contains:
                    inside.append((c.cu, c.cv, c.radius))
            else:
                empty |= contains
                if not misses:
                    outside.append((c.cu, c.cv, c.radius))
        if empty:
            continue
        for k in range(len(outside) + 1):
            for sub in combinations(outside, k):
                out.append((((0.0, 0.0, rp), *inside, *sub), [((-1.0) ** k, path)]))
    return out


def _max_slope(pupil: ThickPupil, path: str, disks: tuple[Disk, ...], lam_nm: float, ref: Reference,
               smp: ThickMftSampling) -> tuple[float, int]:
    """Largest |grad OPD| (rad) of the path over the region's smallest disk, and the rays it traced."""
    cu, cv, r = min(disks, key=lambda d: d[2])
    g = np.linspace(-r, r, smp.slope_points)
    u, v = np.meshgrid(cu + g, cv + g)
    keep = (u - cu) ** 2 + (v - cv) ** 2 <= r * r * (1 + 1e-9)
    u, v = u[keep], v[keep]
    h = 1e-4 * max(r, 1e-3)
    steps = ((h, 0), (-h, 0), (0, h), (0, -h))
    w = [_trace(pupil, path, u + du, v + dv, lam_nm, ref, False)[0] for du, dv in steps]
    return smp.slope_margin * float(np.hypot(w[0] - w[1], w[2] - w[3]).max()) / (2 * h), 4 * u.size


@dataclass
class TracedQuadrature:
    """The thick pupil at its quadrature nodes, for one wavelength.

    ``stats`` (of the last wavelength): quadrature nodes, rays traced (footprint search, slope estimate,
    nodes with apertures off and on), transmission mismatches, footprint circles and their roundness.
    """

    pupil: ThickPupil
    smp: ThickMftSampling
    stats: dict

    def __call__(self, lam: float, theta_max: tuple[float, float]) -> Quadrature:
        """Nodes (m) and complex weights of the pupil at ``lam`` (m), resolving angles up to ``theta_max``."""
        pupil, smp = self.pupil, self.smp
        lam_nm = pupil.wavelength_nm or lam * 1e9
        ref = host_reference(pupil.eye, pupil.field_arcmin, lam_nm)
        circles = footprints(pupil, lam_nm, smp)
        rp = pupil.diameter_mm / 2.0
        k = 2.0 * math.pi / (lam * 1e3)  # per mm
        quad, nodes, mismatch = [], 0, 0
        rays = smp.n_azimuths * smp.n_bisect * sum(len(cs) for cs in circles.values())
        slopes: dict[tuple, float] = {}
        for disks, parts in _terms(rp, circles):
            slope = 0.0
            for _, path in parts:
                key = (path, disks)
                if key not in slopes:
                    slopes[key], traced = _max_slope(pupil, path, disks, lam_nm, ref, smp)
                    rays += traced
                slope = max(slope, slopes[key])
            fu, fv = ((slope + t) / lam for t in theta_max)
            disks_m = tuple((1e-3 * a, 1e-3 * b, 1e-3 * c) for a, b, c in disks)
            for u, v, w in region_nodes(disks_m, fu, fv, smp.mft):
                uu = np.broadcast_to(u[:, None], v.shape) * 1e3
                vv = v * 1e3
                c = np.zeros(v.shape, dtype=complex)
                for sign, path in parts:
                    w_mm, weight, flags = _trace(pupil, path, uu, vv, lam_nm, ref, False)
                    if np.any(flags != 0):
                        lost = int(np.sum(flags != 0))
                        raise ValueError(f"path {path}: {lost} rays fail without apertures")
                    c += sign * (np.sqrt(weight) * np.exp(1j * k * w_mm)).reshape(v.shape)
                    mismatch += _transmission_mismatch(pupil, path, uu, vv, circles, lam_nm, ref)
                    rays += 2 * v.size
                quad.append((u, v, w * c))
                nodes += v.size
        self.stats = {"wavelength_nm": lam_nm, "terms": len(_terms(rp, circles)), "nodes": nodes,
                      "rays": rays, "transmission_mismatch": mismatch,
                      "footprints": {p: [[round(c.cu, 6), round(c.cv, 6), round(c.radius, 6), c.side]
                                         for c in cs] for p, cs in circles.items()},
                      "roundness_mm": max([c.roundness for cs in circles.values() for c in cs] or [0.0])}
        return quad


def _transmission_mismatch(pupil: ThickPupil, path: str, u: np.ndarray, v: np.ndarray,
                           circles: dict[str, list[Circle]], lam_nm: float, ref: Reference) -> int:
    """Nodes whose traced transmission (apertures on) contradicts the path's region, away from its edges.

    Nodes within the boundary's roundness (plus 1e-6 mm) of a circle are not counted: there the fitted
    circle and the traced boundary may legitimately differ.
    """
    cs = circles.get(path, [])
    if not cs:
        return 0
    _, _, flags = _trace(pupil, path, u, v, lam_nm, ref, True)
    uu, vv = np.ravel(u), np.ravel(v)
    expect = np.ones(uu.shape, dtype=bool)
    near = np.zeros(uu.shape, dtype=bool)
    for c in cs:
        d = np.hypot(uu - c.cu, vv - c.cv) - c.radius
        expect &= (d < 0) if c.side > 0 else (d > 0)
        near |= np.abs(d) <= 2.0 * c.roundness + 1e-6
    return int(np.sum(((flags == 0) != expect) & ~near))


def render_thick_mft(scene: Scene, rows: np.ndarray | None = None, cols: np.ndarray | None = None,
                     sampling: ThickMftSampling | None = None) -> tuple[np.ndarray, list[dict]]:
    """Components ``[n_sources, len(rows), len(cols)]`` of point sources through a ThickPupil ``scene.pupil``.

    Returns the components and, per source, the quadrature's statistics (nodes traced, transmission
    mismatches, footprints). The pattern is placed at each source as the FFT engine places it.
    """
    if not isinstance(scene.pupil, ThickPupil):
        raise TypeError("render_thick_mft takes a scene whose pupil is an icl.eye.ThickPupil")
    smp = sampling or ThickMftSampling()
    comps, stats = [], []
    for src in scene.sources:
        quad = TracedQuadrature(scene.pupil, smp, {})
        comps.append(pixel_flux(quad, scene.pupil.diameter_mm, scene, src, rows, cols, smp.mft))
        stats.append(quad.stats)
    return np.stack(comps), stats
