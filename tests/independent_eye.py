"""An independent thick eye for the hole-causality energies (C05, D02): read from a case's data package alone.

Nothing of :mod:`icl.eye` or :mod:`icl.optics` is used: rays parallel to the axis (an on-axis source) start at
entrance-pupil points, are traced through the conic cornea, the ICL (lens path) or the aqueous in its hole
(hole path) and the spherical crystalline lens, and their optical path is taken to the reference sphere
centred on the axial retinal point through the host eye's paraxial exit pupil (the stop, in the plane of the
ICL anterior vertex, imaged by the crystalline lens). Each pupil cell's share of the hole and lens paths is
found by 4 x 4 supersampling (hole: inside the cylinder at both ICL surfaces; lens: outside it at both; the
rest meets the hole wall). The energy inside the detector window is the integral of the far-field intensity
over the window by a matrix Fourier transform at Gauss-Legendre nodes.
"""

from __future__ import annotations

import math

import numpy as np

SUPERSAMPLE = 4
START_Z = -2.0  # mm, a plane in air where every ray starts (one plane wavefront)


def _v(pkg: dict, dotted: str) -> float:
    f, k = dotted.split(".")
    return pkg[f][k]["value"]


def _intersect(p: np.ndarray, d: np.ndarray, z0: float, radius: float, conic: float = 0.0):
    """Intersection with a conic of vertex z0 (the root on the vertex's side) and the unit normal there."""
    c = 1.0 / radius
    x, y, z = p[0], p[1], p[2] - z0
    l, m, n = d
    a = c * (l * l + m * m + (1 + conic) * n * n)
    b = 2 * c * (x * l + y * m + (1 + conic) * z * n) - 2 * n
    cc = c * (x * x + y * y + (1 + conic) * z * z) - 2 * z
    q = -0.5 * (b + np.sign(b) * np.sqrt(np.maximum(b * b - 4 * a * cc, 0.0)))
    t1 = cc / q  # the root that stays finite as the surface flattens
    with np.errstate(divide="ignore", invalid="ignore"):
        t2 = np.where(a != 0, q / np.where(a != 0, a, 1.0), np.inf)
    t = np.where(np.abs(z + t1 * n) <= np.abs(z + t2 * n), t1, t2)
    hx, hy, hz = x + t * l, y + t * m, z + t * n
    nrm = np.stack([c * hx, c * hy, c * (1 + conic) * hz - 1.0])
    return t, nrm / np.sqrt((nrm * nrm).sum(0))


def _refract(d: np.ndarray, nrm: np.ndarray, n1: float, n2: float) -> np.ndarray:
    cosi = -(nrm * d).sum(0)
    nrm = np.where(cosi < 0, -nrm, nrm)
    cosi = np.abs(cosi)
    mu = n1 / n2
    return mu * d + (mu * cosi - np.sqrt(1 - mu * mu * (1 - cosi * cosi))) * nrm


class IndependentEye:
    """The package's thick eye and ICL (constant indices, no Fresnel losses, centred ICL)."""

    def __init__(self, pkg: dict):
        v = lambda d: _v(pkg, d)  # noqa: E731
        self.pkg = pkg
        acd, vault, t = v("eye.anterior_chamber_depth"), v("implant.vault"), v("implant.central_thickness")
        self.na, self.ni, self.nv = v("eye.aqueous_index"), v("implant.index"), v("eye.vitreous_index")
        self.front = [(0.0, v("eye.cornea_anterior_radius"), v("eye.cornea_anterior_conic"), 1.0, v("eye.cornea_index")),
                      (v("eye.cornea_thickness"), v("eye.cornea_posterior_radius"), 0.0, v("eye.cornea_index"), self.na)]
        self.icl = [(acd - vault - t, v("implant.anterior_radius"), 0.0, self.na, self.ni),
                    (acd - vault, v("implant.posterior_radius"), 0.0, self.ni, self.na)]
        self.back = [(acd, v("eye.lens_anterior_radius"), 0.0, self.na, v("eye.lens_index")),
                     (acd + v("eye.lens_thickness"), v("eye.lens_posterior_radius"), 0.0, v("eye.lens_index"), self.nv)]
        self.retina = v("eye.axial_length")
        self.hole_r = 0.5 * v("implant.hole_diameter")
        # Host exit pupil: the stop (ICL anterior vertex plane) imaged by the crystalline lens (paraxial).
        (z1, r1, _, n0, n1), (z2, r2, _, _, n2) = self.back
        vg = n0 / (self.icl[0][0] - z1) + (n1 - n0) / r1
        vg = n1 / (n1 / vg - (z2 - z1)) + (n2 - n1) / r2
        self.ref_radius = self.retina - (z2 + n2 / vg)

    def _start(self, u: np.ndarray, w: np.ndarray):
        p = np.stack([u, w, np.full(u.shape, START_Z)])
        d = np.stack([np.zeros(u.shape), np.zeros(u.shape), np.ones(u.shape)])
        return p, d

    def _through(self, p, d, surfaces, opl):
        for z0, r, k, n1, n2 in surfaces:
            t, nrm = _intersect(p, d, z0, r, k)
            p, opl = p + t * d, opl + n1 * t
            d = _refract(d, nrm, n1, n2)
        return p, d, opl

    def opd_mm(self, u: np.ndarray, w: np.ndarray, path: str, own_piston: bool = False) -> np.ndarray:
        """Optical path on the reference sphere of the lens or the hole path minus that of the host eye's
        axial ray (the hole path's), so the optic's extra path is kept; ``own_piston`` subtracts the path's
        own axial ray instead (the optic's piston dropped, as the thin model states it).
        """
        def opl(uu, ww, p_name):
            p, d = self._start(uu, ww)
            icl = self.icl if p_name == "lens" else []
            p, d, o = self._through(p, d, self.front + icl + self.back, np.zeros(uu.shape))
            px, py, pz = p[0], p[1], p[2] - self.retina
            b = px * d[0] + py * d[1] + pz * d[2]
            c = px * px + py * py + pz * pz - self.ref_radius**2
            return o + self.nv * (-b - np.sqrt(np.maximum(b * b - c, 0.0)))

        return opl(u, w, path) - opl(np.zeros(1), np.zeros(1), path if own_piston else "hole")[0]

    def path_of(self, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(in hole, in lens) for rays at entrance-pupil points: the hole's cylinder at both ICL surfaces."""
        p, d = self._start(u, w)
        p, d, _ = self._through(p, d, self.front, np.zeros(u.shape))
        (zf, rf, _, na, ni), (zb, rb, _, _, _) = self.icl
        tf, nf = _intersect(p, d, zf, rf)
        pf = p + tf * d
        tb, _ = _intersect(p, d, zb, rb)
        pb = p + tb * d  # the aqueous ray at the back surface
        dl = _refract(d, nf, na, ni)
        tl, _ = _intersect(pf, dl, zb, rb)
        pl = pf + tl * dl  # the optic's ray at the back surface
        h = lambda q: np.hypot(q[0], q[1])  # noqa: E731
        return (h(pf) <= self.hole_r) & (h(pb) <= self.hole_r), (h(pf) > self.hole_r) & (h(pl) > self.hole_r)

    def window_energy(self, hole_model: str, n: int = 384, nodes: int = 384, lam_nm: float = 550.0,
                      hole_phase_waves: float = 0.0, own_piston: bool = False) -> dict[str, float]:
        """Blocked and recorded fractions of the incident flux for ``hole_model`` (solid, clear, black).

        ``hole_phase_waves`` adds a piston to the hole path (to measure how the interference term moves);
        ``own_piston`` drops the optic's piston over the hole (:meth:`opd_mm`).
        """
        d_pupil = _v(self.pkg, "eye.pupil_diameter")
        det = self.pkg["detector"]
        half = det["n"]["value"] * det["pitch_arcsec"]["value"] / 120.0 * math.pi / (180 * 60)  # rad
        du = d_pupil / n
        g = (np.arange(n) - (n - 1) / 2) * du
        uu, ww = np.meshgrid(g, g)
        off = ((np.arange(SUPERSAMPLE) + 0.5) / SUPERSAMPLE - 0.5) * du
        cov = {"pupil": 0.0, "hole": 0.0, "lens": 0.0}
        for ox in off:
            for oy in off:
                u, w = (uu + ox).ravel(), (ww + oy).ravel()
                inside = (u * u + w * w <= (0.5 * d_pupil) ** 2).reshape(uu.shape)
                hole, lens = (x.reshape(uu.shape) for x in self.path_of(u, w))
                if hole_model == "solid":
                    hole, lens = np.zeros_like(hole), np.ones_like(lens)
                cov["pupil"] = cov["pupil"] + inside
                cov["hole"] = cov["hole"] + (inside & hole)
                cov["lens"] = cov["lens"] + (inside & lens)
        cov = {key: c / SUPERSAMPLE**2 for key, c in cov.items()}
        k = 2 * math.pi / (lam_nm * 1e-6)
        field = cov["lens"] * np.exp(1j * k * self.opd_mm(uu.ravel(), ww.ravel(), "lens", own_piston).reshape(uu.shape))
        passed = cov["lens"].sum()
        if hole_model == "clear":
            w_hole = self.opd_mm(uu.ravel(), ww.ravel(), "hole").reshape(uu.shape)
            field = field + cov["hole"] * np.exp(1j * (k * w_hole + 2 * math.pi * hole_phase_waves))
            passed += cov["hole"].sum()
        x, wt = np.polynomial.legendre.leggauss(nodes)
        th, wt = x * half, wt * half
        lam = lam_nm * 1e-9
        m = np.exp(-2j * math.pi * np.outer(th, g * 1e-3) / lam)
        far = m @ field @ m.T
        recorded = float(np.einsum("i,j,ij->", wt, wt, np.abs(far) ** 2)) * (du * 1e-3) ** 2 / lam**2
        return {"blocked": 1.0 - passed / cov["pupil"].sum(), "recorded": recorded / cov["pupil"].sum()}
