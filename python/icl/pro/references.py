"""Reference physics for the professional track, independent of any submission.

Paraxial y-nu tracing through a surface stack, exact Snell tracing of a conic surface, Fresnel
reflectance, Airy constants, Strehl ratio of defocus, PSF moments, and thin-phase PSFs through
:func:`icl.optics.render`. Lengths in mm unless named otherwise, powers in dioptres, angles in arcmin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icl import linalg

RAD_TO_ARCMIN = 180.0 * 60.0 / math.pi
AIRY_DARK = (1.2196698912665045, 2.2331305943815286)  # first zeros of J1(pi x) / (pi x), x in lambda / D
# First bright ring, lambda / D: the maximum of (2 J1(pi x) / (pi x))^2 lies where J2(pi x) = 0, x = j_{2,1} / pi
# = 1.63472 (0.96589 arcmin at 550 nm and 3.2 mm; the 0.9661 of the halo case table comes from 1.635).
AIRY_BRIGHT = 1.634719350381845
ENGINE = "icl.optics.render (thin-phase)"


@dataclass(frozen=True)
class Surface:
    """A refracting surface: vertex depth ``z`` (mm from the anterior corneal vertex), radius (mm,
    positive when the centre of curvature lies behind the vertex; ``inf`` for a plane) and the index
    of the medium behind it.
    """

    z: float
    radius: float
    n_after: float


def _mul2(p: tuple, m: tuple) -> tuple:
    """2 x 2 product ``p @ m`` in Python floats: each entry ``p[i][0] m[0][j] + p[i][1] m[1][j]``, rounded as
    :func:`icl.linalg.matmul` rounds it (two products, one sum, no fused multiply-add), 50 times faster."""
    return ((p[0][0] * m[0][0] + p[0][1] * m[1][0], p[0][0] * m[0][1] + p[0][1] * m[1][1]),
            (p[1][0] * m[0][0] + p[1][1] * m[1][0], p[1][0] * m[0][1] + p[1][1] * m[1][1]))


def system_matrix(surfaces: Sequence[Surface], z_end: float, n0: float = 1.0) -> np.ndarray:
    """Reduced-angle (y, n u) transfer matrix from just before the first surface to depth ``z_end``."""
    m = ((1.0, 0.0), (0.0, 1.0))
    n, z = n0, surfaces[0].z
    for s in surfaces:
        m = _mul2(((1.0, (s.z - z) / n), (0.0, 1.0)), m)
        power = 0.0 if math.isinf(s.radius) else (s.n_after - n) / s.radius
        m = _mul2(((1.0, 0.0), (-power, 1.0)), m)
        n, z = s.n_after, s.z
    return np.array(_mul2(((1.0, (z_end - z) / n), (0.0, 1.0)), m))


def equivalent_power_d(surfaces: Sequence[Surface]) -> float:
    """Equivalent power (D) of the stack in air object space."""
    return -1000.0 * system_matrix(surfaces, surfaces[-1].z)[1, 0]


def ocular_refraction_d(surfaces: Sequence[Surface], axial_length: float) -> float:
    """Object vergence (D) at the first vertex that focuses on the retina at ``axial_length``.

    A ray of height y from an object of vergence V has reduced angle -V y; the image is on the retina
    when M00 - M01 V = 0. Myopic eyes give negative values.
    """
    m = system_matrix(surfaces, axial_length)
    return 1000.0 * m[0, 0] / m[0, 1]


def conic_sag(r: np.ndarray | float, radius: float, conic: float) -> np.ndarray:
    """Sag ``c r^2 / (1 + sqrt(1 - (1 + Q) c^2 r^2))`` of a conic surface (mm)."""
    c = 1.0 / radius
    r = np.asarray(r, dtype=float)
    return c * r * r / (1.0 + np.sqrt(1.0 - (1.0 + conic) * c * c * r * r))


def longitudinal_sa(radius: float, conic: float, n: float, h: float) -> float:
    """Paraxial focus minus the axial crossing of the exact ray at height ``h`` (collimated, air to n)."""
    c = 1.0 / radius
    z = float(conic_sag(h, radius, conic))
    slope = c * h / math.sqrt(1.0 - (1.0 + conic) * c * c * h * h)  # dz/dr
    normal = np.array([-slope, 1.0]) / math.hypot(slope, 1.0)  # (r, z), pointing into the medium
    d = np.array([0.0, 1.0])
    mu = 1.0 / n
    cos_i = linalg.dot(normal, d)
    k = 1.0 - mu * mu * (1.0 - cos_i * cos_i)
    t = mu * d + (math.sqrt(k) - mu * cos_i) * normal
    crossing = z + (-h) * t[1] / t[0]
    return n * radius / (n - 1.0) - crossing


def fresnel_r(n1: float, n2: float) -> float:
    """Normal-incidence intensity reflectance."""
    return ((n1 - n2) / (n1 + n2)) ** 2


def fresnel_unpolarised(n1: float, n2: float, incidence_deg: float) -> float:
    """Intensity reflectance of unpolarised light, ``(R_s + R_p) / 2``, at an angle of incidence in medium 1."""
    ti = math.radians(incidence_deg)
    st = n1 / n2 * math.sin(ti)
    if st >= 1.0:
        return 1.0
    ci, ct = math.cos(ti), math.sqrt(1.0 - st * st)
    rs = (n1 * ci - n2 * ct) / (n1 * ci + n2 * ct)
    rp = (n2 * ci - n1 * ct) / (n2 * ci + n1 * ct)
    return 0.5 * (rs * rs + rp * rp)


def prentice_shift_arcmin(thin_power_d: float, decentre_mm: float) -> float:
    """Visual shift (arcmin) of the light through a thin lens decentred by ``decentre_mm``.

    Prentice's rule: the prism is ``|P| c`` (P in D, c in cm). The pupil looks through the lens at ``-c`` from
    its centre; a minus lens is thicker toward its edge, so the base points away from the decentre (toward it
    for a plus lens). An object seen through a prism appears displaced toward the apex, so the pattern shifts
    by ``-P c`` (radians, c in m) along the decentre: toward it for a minus lens ("with motion"), away from it
    for a plus lens.
    """
    return -thin_power_d * decentre_mm * 1e-3 * RAD_TO_ARCMIN


def strehl_defocus(residual_d: float, pupil_mm: float, wavelength_nm: float) -> float:
    """Strehl ratio of pure defocus ``W = -(K/2) r^2`` over a uniform circular pupil.

    The mean of ``exp(i a r^2)`` over the disk is ``(exp(i a R^2) - 1) / (i a R^2)``, so the ratio is
    ``sinc^2(a R^2 / 2)`` with ``a = pi K / lambda``.
    """
    r = pupil_mm * 0.5e-3
    x = math.pi * residual_d * r * r / (wavelength_nm * 1e-9) / 2.0
    return 1.0 if x == 0 else (math.sin(x) / x) ** 2


def airy_radius_arcmin(factor: float, wavelength_nm: float, pupil_mm: float) -> float:
    """``factor * lambda / D`` in arcmin."""
    return factor * wavelength_nm * 1e-9 / (pupil_mm * 1e-3) * RAD_TO_ARCMIN


def limiting_aperture_mm(pupil_mm: float, optic_zone_mm: float) -> float:
    """Diameter of the aperture whose Airy pattern is the diffraction-limited core of an eye the ICL corrects,
    under the thin model (a centred optic zone coplanar with the pupil): the pupil, or the optic zone where
    the pupil is wider. Light outside the zone keeps the eye excess K and spreads over K times its radius
    (tens of arcmin), so it adds no ring near the core.
    """
    return min(pupil_mm, optic_zone_mm)


def encircled_energy_airy(radius_arcmin: float, wavelength_nm: float, pupil_mm: float) -> float:
    """Fraction of an Airy pattern within ``radius_arcmin``: ``1 - J0(v)^2 - J1(v)^2``, ``v = pi D theta / lambda``
    (about 0.8378 at the first dark ring).
    """
    from scipy.special import j0, j1

    v = math.pi * pupil_mm * 1e-3 * radius_arcmin / RAD_TO_ARCMIN / (wavelength_nm * 1e-9)
    return float(1.0 - j0(v) ** 2 - j1(v) ** 2)


def centroid_arcmin(psf: np.ndarray, axis: np.ndarray) -> list[float]:
    """Intensity centroid ``[x, y]`` (arcmin) of a PSF on the detector grid (row = +y)."""
    total = psf.sum()
    return [float((psf.sum(axis=0) * axis).sum() / total), float((psf.sum(axis=1) * axis).sum() / total)]


def orientation_deg(psf: np.ndarray, axis: np.ndarray) -> float:
    """Major-axis direction of the second moments, degrees counter-clockwise from +x in [0, 180)."""
    x, y = np.meshgrid(axis, axis)
    total = psf.sum()
    cx, cy = (psf * x).sum() / total, (psf * y).sum() / total
    sxx = (psf * (x - cx) ** 2).sum() / total
    syy = (psf * (y - cy) ** 2).sum() / total
    sxy = (psf * (x - cx) * (y - cy)).sum() / total
    return float(math.degrees(0.5 * math.atan2(2.0 * sxy, sxx - syy)) % 180.0)


def encircled(psf: np.ndarray, axis: np.ndarray, radius_arcmin: float, centre=(0.0, 0.0)) -> float:
    """Sum of the pixels whose centres lie within ``radius_arcmin`` of ``centre``."""
    x, y = np.meshgrid(axis, axis)
    return float(psf[(x - centre[0]) ** 2 + (y - centre[1]) ** 2 <= radius_arcmin**2].sum())


def annulus_fraction(pupil_mm: float, zone_mm: float) -> float:
    """Fraction of a centred pupil outside a concentric optic zone."""
    return max(0.0, 1.0 - (zone_mm / pupil_mm) ** 2)


def reference_sampling(scene_dict: dict, **over: float):
    """Sampling of a reference render: the engine's defaults, with a longer FFT period when light passes
    outside the optic zone.

    That light keeps the whole eye excess K: it spreads over a disk of angular radius K times the pupil
    radius (170 arcmin for 16.7 D and a 6 mm pupil), and with the default 140-arcmin period its periodic
    copies fold back onto the window (relative L1 0.07 against a converged render). A period of 2.4 times
    that radius converges it (1e-4 at 400 arcmin against 700).
    """
    from icl.optics.sampling import Sampling

    pupil = scene_dict["pupil"]
    icl = pupil.get("icl")
    base = Sampling()
    period = base.min_period_arcmin
    if icl is not None:
        reach = 0.5 * pupil["diameter_mm"] + math.hypot(*icl.get("decentre_mm", (0.0, 0.0)))
        if reach > 0.5 * icl["optic_zone_mm"]:
            blur = abs(pupil["eye_excess_d"]) * 0.5 * pupil["diameter_mm"] * 1e-3 * RAD_TO_ARCMIN
            period = max(period, 2.4 * blur)
    return Sampling(**{"min_period_arcmin": period, **over})


def render_psf(scene_dict: dict, **sampling: float) -> tuple[np.ndarray, dict, np.ndarray]:
    """Render a scene (docs/formats.md) with :func:`reference_sampling`; return (scene image, ledger of
    the whole scene, axis). ``sampling`` overrides fields of the sampling (a second method).
    """
    from icl.optics import Scene, render

    res = render(Scene.from_dict(scene_dict), reference_sampling(scene_dict, **sampling))
    return res.scene, res.ledger, res.x_arcmin
