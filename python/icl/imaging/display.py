"""One fixed display mapping from linear retinal images to 8-bit previews.

The mapping is the same for every image it is given: no per-image normalisation, no auto-exposure.
Pixel flux is first turned into mean flux per square arcmin (so the preview does not depend on the
pixel pitch), multiplied by each source's display colour, then passed through a fixed logarithmic
tone curve ``d = log(1 + E / knee) / log(1 + white / knee)`` clipped to [0, 1]. ``white`` is the
exposure: the flux density that reaches full display value. Rows are flipped so +y is up on screen;
the arrays themselves are never flipped. The preview is a display of the optics, not a model of what
a person perceives.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

# Display primaries of the wavelengths used by the example spectra (a plain lookup, not a colour-
# appearance model); anything else is interpolated in wavelength.
_PRIMARY_NM = np.array([400.0, 450.0, 500.0, 550.0, 600.0, 650.0, 700.0])
_PRIMARY_RGB = np.array([[0.3, 0.0, 1.0], [0.0, 0.2, 1.0], [0.0, 0.8, 0.6], [0.5, 1.0, 0.0],
                         [1.0, 0.55, 0.0], [1.0, 0.0, 0.0], [0.6, 0.0, 0.0]])


@dataclass(frozen=True)
class DisplayMapping:
    """Fixed exposure and tone curve.

    Parameters
    ----------
    white : float
        Flux density (source-flux units per arcmin^2) shown at full value.
    knee : float
        Flux density where the tone curve turns from linear to logarithmic.

    """

    white: float = 1.0
    knee: float = 1e-4

    def to_dict(self) -> dict:
        """JSON form with the formula, for exposure statements."""
        return {**asdict(self), "curve": "d = clip(log(1 + E/knee) / log(1 + white/knee), 0, 1)",
                "E": "pixel flux / pixel area in arcmin^2, times the source's display colour",
                "per_image_normalisation": False}

    def tone(self, density: np.ndarray) -> np.ndarray:
        """Tone curve on a flux density array (any shape)."""
        return np.clip(np.log1p(np.maximum(density, 0.0) / self.knee) / math.log1p(self.white / self.knee), 0.0, 1.0)


def spectrum_rgb(spectrum: tuple[tuple[float, float], ...]) -> np.ndarray:
    """Display colour of a spectrum, scaled so that its brightest channel is 1."""
    rgb = np.zeros(3)
    for lam, w in spectrum:
        rgb += w * np.array([np.interp(lam, _PRIMARY_NM, _PRIMARY_RGB[:, c]) for c in range(3)])
    peak = rgb.max()
    return rgb / peak if peak > 0 else rgb


def to_rgb8(components: np.ndarray, colours: np.ndarray, pitch_arcsec: float, mapping: DisplayMapping) -> np.ndarray:
    """8-bit RGB preview (+y up) of per-source components with per-source display colours.

    Parameters
    ----------
    components : ndarray, shape (n_src, n, n)
        Linear pixel flux.
    colours : ndarray, shape (n_src, 3)
        Display colour of each source.
    pitch_arcsec : float
        Pixel pitch, to turn pixel flux into flux per arcmin^2.
    mapping : DisplayMapping

    """
    area = (pitch_arcsec / 60.0) ** 2
    density = np.einsum("kij,kc->ijc", np.asarray(components, dtype=float), np.asarray(colours, dtype=float)) / area
    return np.round(255.0 * mapping.tone(density[::-1])).astype(np.uint8)
