"""Refractive indices of the ocular media and of the synthetic implant material.

The ocular media follow the dispersion model of Navarro, Santamaria & Bescos (1985), JOSA A 2(8):1273,
equation 2: ``n(lambda) = a1 n** + a2 n_F + a3 n_C + a4 n*`` with Herzberger-type weights
``a_i = A_i + B_i lambda^2 + C_i / (lambda^2 - l0) + D_i / (lambda^2 - l0)^2`` (lambda in um, l0 = 0.028 um^2).
The reference indices (n** at 365 nm, n_F at 486.1 nm, n_C at 656.3 nm, n* at 1014 nm) are those of the
paper's Table 1. ``B_1`` is -0.40352796: the printed -0.040352796 is a known misprint of Herzberger's
coefficient (Atchison & Smith 2005, JOSA A 22(1):29, discuss this model); only the corrected value makes
the four weights sum to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icl import linalg

_L0 = 0.028  # um^2
# Rows a1..a4; columns A, B (um^-2), C (um^2), D (um^4).
_HERZBERGER = np.array([
    [0.66147196, -0.40352796, -0.28046790, 0.03385979],
    [-4.20146383, 2.73508956, 1.50543784, -0.11593235],
    [6.29834237, -4.69409935, -1.57508650, 0.10293038],
    [-1.75835059, 2.36253794, 0.35011657, -0.02085782],
])
# (n**, n_F, n_C, n*) of Navarro et al. (1985) Table 1, unaccommodated lens.
NAVARRO_REFERENCE = {
    "cornea": (1.3975, 1.3807, 1.37405, 1.3668),
    "aqueous": (1.3593, 1.3422, 1.3354, 1.3278),
    "lens": (1.4492, 1.42625, 1.4175, 1.4097),
    "vitreous": (1.3565, 1.3407, 1.3341, 1.3273),
}


def navarro_weights(wavelength_nm: float) -> np.ndarray:
    """The four Herzberger weights ``a_i(lambda)`` (they sum to 1 at every wavelength)."""
    l2 = (wavelength_nm * 1e-3) ** 2
    d = l2 - _L0
    h = _HERZBERGER
    return h[:, 0] + h[:, 1] * l2 + h[:, 2] / d + h[:, 3] / d**2


@dataclass(frozen=True)
class Medium:
    """A homogeneous medium: either one of Navarro's ocular media or a constant index.

    Parameters
    ----------
    name : str
        ``cornea``, ``aqueous``, ``lens``, ``vitreous``, ``air`` or any label for a constant index.
    constant : float or None
        Index used at every wavelength (``None`` for the Navarro dispersion model).
    reference : tuple of float or None
        Indices (n** at 365 nm, n_F at 486.1 nm, n_C at 656.3 nm, n* at 1014 nm) fed to the Navarro
        dispersion model; ``None`` takes Navarro's Table 1 entry for ``name``.

    """

    name: str
    constant: float | None = None
    reference: tuple[float, float, float, float] | None = None

    def index(self, wavelength_nm: float) -> float:
        """Refractive index at ``wavelength_nm`` (nm)."""
        if self.constant is not None:
            return float(self.constant)
        ref = self.reference if self.reference is not None else NAVARRO_REFERENCE[self.name]
        return linalg.dot(ref, navarro_weights(wavelength_nm))


AIR = Medium("air", 1.0)
CORNEA = Medium("cornea")
AQUEOUS = Medium("aqueous")
LENS = Medium("lens")
VITREOUS = Medium("vitreous")
NAVARRO_MEDIA = {m.name: m for m in (CORNEA, AQUEOUS, LENS, VITREOUS)}
