"""The thick eye as a pupil model for the far-field engine of :mod:`icl.optics.render`.

``field()`` traces one ray per grid node of the entrance pupil along each enabled path (lens, hole, edge)
and returns ``sum_path f_path sqrt(w_path) exp(2 pi i OPD_path / lambda)``, where ``f_path`` is the exact
area fraction of the node's cell that the path covers. The covered regions are found by tracing: the
boundary of each path's footprint on the entrance pupil is located by bisection along 64 azimuths (with
apertures and the hole wall on) and fitted by a circle; cell fractions then use the exact disk coverage,
as the thin model does for its own edges: plain, or, when the far-field engine passes its edge filter
(:func:`icl.optics.sampling.edge_filter`), taken on finer cells and filtered onto the grid, which removes
the cells' ``sinc`` from the far field's wings (``takes_edge_filter``). OPDs are traced with apertures
off, so each path's wavefront is smooth across its boundary (and over the filter's guard cells).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icl import linalg
from icl._core_loader import core
from icl.eye.model import GHOST_PATHS, PRIMARY_PATHS, Eye, Implant
from icl.eye.paraxial import paraxial
from icl.eye.trace import TraceOptions
from icl.eye.wavefront import host_reference, opd
from icl.optics.sampling import EdgeFilter
from icl.optics.thin import circle_overlap

N_AZIMUTHS = 64
N_BISECT = 48
# Largest wavefront change between neighbouring pupil samples of one path (waves): beyond it the FFT
# aliases the path's light.
MAX_STEP_WAVES = 0.5
# Cells a path covers by less than this fraction of their area are left out of the sampling check: they
# carry at most 1e-12 of a cell's energy each (the filtered coverages' far tails and round-off, e.g. 1 - (1
# - 7e-16) where a path is absent), so a steep wavefront there cannot alias light that matters, and
# round-off cannot decide whether a cell is checked.
MIN_CHECKED_COVERAGE = 1e-6


class PupilUndersampled(ValueError):
    """A path's wavefront changes by more than :data:`MAX_STEP_WAVES` between pupil samples."""

    def __init__(self, path: str, waves: float):
        super().__init__(
            f"path {path}: the wavefront changes by {waves:.2f} waves between pupil samples (> {MAX_STEP_WAVES}): "
            "its far field is wider than the sampled window; sample the pupil more finely "
            "(Sampling.min_pupil_samples), widen the window (Sampling.support_arcmin, coarser pitch) or render "
            "the path geometrically")
        self.path = path
        self.waves = waves


@dataclass(frozen=True)
class Footprint:
    """A circle on the entrance pupil (mm) and whether the path lies inside (+1) or outside (-1) it."""

    cu: float
    cv: float
    radius: float
    side: int
    roundness: float  # max |r(phi) - radius| of the traced boundary (mm)


@dataclass(frozen=True)
class ThickPupil:
    """Thick eye with an optional thick ICL, seen from one field angle at one design wavelength set.

    Parameters
    ----------
    eye : Eye
        Host eye; its ``pupil_diameter_mm`` is the entrance pupil diameter.
    implant : Implant or None
        The ICL, or ``None`` for the host eye alone.
    field_arcmin : tuple of float
        Source direction (x, y) in arcmin.
    paths : tuple of str
        Enabled paths: any of ``lens``, ``hole``, ``edge`` (summed coherently; the others are treated as
        opaque: ablation), or a single ghost path ``ghost_icl`` / ``ghost_icl_lens`` on its own. A ghost is
        its own component, added in intensity: its extra path (2 n t ~ 0.3 mm or more) exceeds the coherence
        length of any broadband source by far.
    fresnel : bool
        Include Fresnel transmission in the amplitude.
    wavelength_nm : float or None
        Fix the index dispersion to this wavelength; ``None`` uses each rendered wavelength.

    """

    eye: Eye
    implant: Implant | None
    field_arcmin: tuple[float, float] = (0.0, 0.0)
    paths: tuple[str, ...] = PRIMARY_PATHS
    fresnel: bool = True
    wavelength_nm: float | None = None
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    takes_edge_filter = True  # the far-field engine may pass its edge filter to field()

    @property
    def diameter_mm(self) -> float:
        """Entrance pupil diameter (mm)."""
        return self.eye.pupil_diameter_mm

    def _paths(self) -> tuple[str, ...]:
        if self.implant is None:
            return ("host",)
        unknown = [p for p in self.paths if p not in PRIMARY_PATHS + GHOST_PATHS]
        ghosts = [p for p in self.paths if p in GHOST_PATHS]
        if unknown or (ghosts and len(self.paths) > 1):
            raise ValueError(f"paths {self.paths}: give primary paths {PRIMARY_PATHS} or one of {GHOST_PATHS}")
        if ghosts:
            return tuple(ghosts)
        out = [p for p in self.paths if p in PRIMARY_PATHS]
        if self.implant.hole_mm == 0:
            out = [p for p in out if p != "hole"]
        return tuple(out)

    def footprints(self, wavelength_nm: float = 550.0) -> dict[str, list[Footprint]]:
        """Footprint circles of each enabled path on the entrance pupil (traced, then fitted)."""
        key = ("fp", wavelength_nm)
        if key not in self._cache:
            self._cache[key] = self._footprints(wavelength_nm)
        return self._cache[key]

    def _boundary(self, path: str, r_lo: float, r_hi: float, inside_alive: bool, centre: tuple[float, float],
                  wavelength_nm: float) -> Footprint:
        """Bisect, along each azimuth from ``centre``, the radius where the path's rays stop passing."""
        phi = 2.0 * math.pi * np.arange(N_AZIMUTHS) / N_AZIMUTHS
        lo, hi = np.full(N_AZIMUTHS, r_lo), np.full(N_AZIMUTHS, r_hi)
        ref = host_reference(self.eye, self.field_arcmin, wavelength_nm)
        for _ in range(N_BISECT):
            mid = 0.5 * (lo + hi)
            u, v = centre[0] + mid * np.cos(phi), centre[1] + mid * np.sin(phi)
            _, _, flags = opd(self.eye, self.implant, path, u, v, self.field_arcmin, wavelength_nm,
                              TraceOptions(fresnel=False), ref)
            alive = flags == 0
            go_out = alive if inside_alive else ~alive
            lo, hi = np.where(go_out, mid, lo), np.where(go_out, hi, mid)
        rb = 0.5 * (lo + hi)
        x, y = centre[0] + rb * np.cos(phi), centre[1] + rb * np.sin(phi)
        # Algebraic circle fit (exact for a circle; the boundary of a tilted beam is nearly one).
        a = np.column_stack([x, y, np.ones_like(x)])
        sol = linalg.lstsq(a, x * x + y * y)
        cu, cv = sol[0] / 2, sol[1] / 2
        radius = math.sqrt(sol[2] + cu * cu + cv * cv)
        roundness = float(np.max(np.abs(np.hypot(x - cu, y - cv) - radius)))
        return Footprint(float(cu), float(cv), radius, +1 if inside_alive else -1, roundness)

    def _footprints(self, wavelength_nm: float) -> dict[str, list[Footprint]]:
        if self.implant is None:
            return {"host": []}
        imp = self.implant
        par = paraxial(self.eye, None, wavelength_nm)
        # Map the implant centre to the entrance pupil roughly, to centre the bisection.
        scale = 1.0 / par.entrance_pupil_mag
        c0 = (imp.decentre_mm[0] * scale, imp.decentre_mm[1] * scale)
        rh, roz = imp.hole_mm / 2 * scale, imp.optic_zone_mm / 2 * scale
        big = 1.6 * roz  # beyond this the cornea may be missed, which would break the bisection's monotony
        out: dict[str, list[Footprint]] = {}
        for p in self._paths():
            if p == "hole":
                out[p] = [self._boundary(p, 0.0, 2.0 * rh + 0.05, True, c0, wavelength_nm)]
            elif p == "edge":
                out[p] = [self._boundary(p, 0.0, big, False, c0, wavelength_nm)]
            else:  # lens or ghost: an annulus (inner edge: hole and its wall; outer edge: the optic zone)
                fps = []
                if imp.hole_mm > 0:
                    fps.append(self._boundary(p, 0.0, 2.0 * rh + 0.05, False, c0, wavelength_nm))
                fps.append(self._boundary(p, max(2.0 * rh, 0.5 * roz), big, True, c0, wavelength_nm))
                out[p] = fps
        return out

    def _fraction(self, fps: list[Footprint], n: int, du: float, edge: EdgeFilter | None) -> np.ndarray:
        frac = np.ones((n, n))
        for fp in fps:
            cov = _coverage(fp.cu, fp.cv, fp.radius, n, du, edge)
            frac = frac * (cov if fp.side > 0 else 1.0 - cov)
        return frac

    def field(self, n: int, du: float, wavelength: float, edge: EdgeFilter | None = None) -> np.ndarray:
        """Complex pupil on an n x n grid of pitch ``du`` (m), row = v, column = u (see module docstring).

        With ``edge`` the coverages are filtered (they then reach ``edge.spread`` cells beyond each edge).
        """
        lam_nm = self.wavelength_nm or wavelength * 1e9
        r = self.diameter_mm / 2.0
        pupil = _coverage(0.0, 0.0, r, n, du, edge)
        out = np.zeros((n, n), dtype=complex)
        idx = np.nonzero(pupil != 0)
        g = (np.arange(n) - (n - 1) / 2.0) * du * 1e3
        u, v = g[idx[1]], g[idx[0]]
        ref = host_reference(self.eye, self.field_arcmin, lam_nm)
        opts = TraceOptions(apertures=False, fresnel=self.fresnel)
        fps = self.footprints(lam_nm)
        k = 2.0 * math.pi / (wavelength * 1e3)  # per mm
        for p in self._paths():
            w_mm, weight, flags = opd(self.eye, self.implant, p, u, v, self.field_arcmin, lam_nm, opts, ref)
            if np.any(flags != 0):
                raise ValueError(f"path {p}: {int(np.sum(flags != 0))} rays fail without apertures")
            frac = self._fraction(fps[p], n, du, edge)[idx]
            _check_sampling(p, w_mm, frac, idx, n, wavelength * 1e3)
            out[idx] += frac * np.sqrt(weight) * np.exp(1j * k * w_mm)
        out[idx] *= pupil[idx]
        return out

    def blocked_fraction(self) -> float:
        """Fraction of the entrance pupil that no enabled path covers (hole wall shadow, ablated paths)."""
        fps = self.footprints(self.wavelength_nm or 550.0)
        rp = self.diameter_mm / 2.0
        area = math.pi * rp * rp
        covered = 0.0
        for p, circles in fps.items():
            if p == "host":
                covered += area
                continue
            part = area
            for fp in circles:
                inter = circle_overlap(rp, fp.radius, math.hypot(fp.cu, fp.cv))
                part = part - area + inter if fp.side > 0 else part - inter
            covered += part
        return max(0.0, 1.0 - covered / area)


def _coverage(cu: float, cv: float, r: float, n: int, du: float, edge: EdgeFilter | None) -> np.ndarray:
    """Cell coverage of a disk (centre and radius in mm): exact areas, or filtered with ``edge``."""
    if edge is None:
        return core.disk_coverage(cu * 1e-3, cv * 1e-3, r * 1e-3, n, du)
    return core.disk_coverage_filtered(cu * 1e-3, cv * 1e-3, r * 1e-3, n, du, list(edge.taps), edge.sub)


def max_step_waves(w_mm: np.ndarray, frac: np.ndarray, idx: tuple, n: int, lam_mm: float) -> float:
    """Largest wavefront change (waves) between neighbouring samples both covered by at least
    :data:`MIN_CHECKED_COVERAGE` of the path.
    """
    grid = np.full((n, n), np.nan)
    grid[idx] = np.where(frac >= MIN_CHECKED_COVERAGE, w_mm, np.nan)
    steps = [np.abs(np.diff(grid, axis=a)) for a in (0, 1)]
    worst = max(float(np.nanmax(d)) if np.any(np.isfinite(d)) else 0.0 for d in steps)
    return worst / lam_mm


def _check_sampling(path: str, w_mm: np.ndarray, frac: np.ndarray, idx: tuple, n: int, lam_mm: float) -> None:
    """Refuse a grid on which the path's wavefront changes by more than half a wave between neighbours.

    Such a phase is aliased by the FFT (light lands at wrong angles); a finer pupil grid resolves it
    (:func:`icl.pro.thick.render_thick` refines until it does), strongly defocused ghosts need a far-field
    window wide enough for their spread or the geometric component (:mod:`icl.eye.ghosts`).
    """
    waves = max_step_waves(w_mm, frac, idx, n, lam_mm)
    if waves > MAX_STEP_WAVES:
        raise PupilUndersampled(path, waves)
