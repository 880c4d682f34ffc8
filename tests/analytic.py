"""Analytic references for the optics tests."""

from __future__ import annotations

import numpy as np
from scipy.special import j1

RAD_PER_ARCMIN = np.pi / (180 * 60)


def airy_pixel_flux(x_arcmin, y_arcmin, pitch_arcsec, wavelength_m, diameter_m, centre=(0.0, 0.0), order=8):
    """Unit-flux Airy pattern integrated over each pixel by order x order Gauss-Legendre.

    The pattern varies on the scale lambda/D (>= 20 arcsec here) and pixels are 4 arcsec wide, so
    8 x 8 nodes integrate it to ~1e-10 relative.
    """
    g, w = np.polynomial.legendre.leggauss(order)
    p = pitch_arcsec / 60 * RAD_PER_ARCMIN
    x = (np.asarray(x_arcmin) - centre[0]) * RAD_PER_ARCMIN
    y = (np.asarray(y_arcmin) - centre[1]) * RAD_PER_ARCMIN
    out = np.zeros((y.size, x.size))
    peak = np.pi * diameter_m**2 / (4 * wavelength_m**2)  # intensity at the centre of a unit-flux Airy
    for gi, wi in zip(g, w):
        for gj, wj in zip(g, w):
            th = np.hypot(x[None, :] + gj * p / 2, y[:, None] + gi * p / 2)
            a = np.pi * diameter_m * th / wavelength_m
            with np.errstate(invalid="ignore", divide="ignore"):
                v = np.where(a > 0, (2 * j1(a) / np.where(a > 0, a, 1)) ** 2, 1.0)
            out += wi * wj / 4 * v
    return out * peak * p * p


def radial_extremum(image, x_arcmin, y_arcmin, centre, guess, half_band=0.12, kind="max", degree=6):
    """Radius of a radial extremum: polynomial fit of pixel values against their radius.

    Every pixel with radius within ``guess * (1 +/- half_band)`` is a sample of the (nearly) radially
    symmetric pattern; a degree-6 polynomial fitted to hundreds of such samples locates the extremum
    to ~1e-4 relative.
    """
    r = np.hypot(x_arcmin[None, :] - centre[0], y_arcmin[:, None] - centre[1])
    sel = np.abs(r - guess) <= half_band * guess
    rr, vv = r[sel] / guess - 1.0, image[sel]
    coef = np.polynomial.polynomial.polyfit(rr, vv, degree)
    fine = np.linspace(-half_band * 0.8, half_band * 0.8, 20001)
    val = np.polynomial.polynomial.polyval(fine, coef)
    i = np.argmax(val) if kind == "max" else np.argmin(val)
    return guess * (1.0 + fine[i])
