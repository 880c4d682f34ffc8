"""Image-extent sources (part of the engine): a linear radiance map placed through the band-limited PSF.

A map source is ``L(theta) = sum_ab w_ab box_q(theta - phi_ab)``: uniform square cells of side ``q``
(the map's own pitch) centred on the source position, with relative weights ``w`` scaled so that the
total flux equals the source flux. The detector value of pixel ``i`` is
``[PSF conv L conv box_p](theta_i)``. The PSF samples are band-limited below the band edge ``xb`` (in
cycles per detector pixel), so the convolution equals a discrete, zero-padded linear convolution of
the PSF samples with the taps of ``L conv box_p`` low-passed by the same tapered response the point
and disk kernels use (:mod:`icl.optics.sampling`). The taps are computed in the Fourier domain:

``G(f) = sinc(f_x) sinc(f_y) sinc(r f_x) sinc(r f_y) sum_ab w_ab exp(-2 pi i f . phi_ab)``

with ``r = q / p`` and ``f`` in cycles per detector pixel, times the taper, on a frequency grid fine
enough that the taps do not wrap.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from icl._core_loader import core
from icl.errors import InputError

if TYPE_CHECKING:
    from icl.optics.model import Scene, Source
    from icl.optics.sampling import Sampling

MAX_MAP_SIDE = 2048  # cells per side of an image extent
MAP_KEYS = ("map", "pitch_arcsec")


class ImageMap:
    """Relative radiance of an extended source on its own square angular grid.

    Parameters
    ----------
    values : array_like, shape (rows, cols)
        Non-negative, finite linear radiance; row index grows with +y, column with +x
        (docs/conventions.md). Only the shape of the distribution matters: it is scaled to unit sum, and the
        source's ``flux`` sets the total.
    pitch_arcsec : float
        Side of one map cell (arcsec). The map is centred on the source position.
    path : str, optional
        File the map was read from (kept for the JSON round trip).

    Equality and hashing use the SHA-256 of the normalised map and the pitch.

    """

    def __init__(self, values: Any, pitch_arcsec: float, path: str | None = None, *,
                 file: str | None = None, where: str = "extent"):
        try:
            arr = np.array(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError("map must be a 2-D array of numbers", file, f"{where}.map") from None
        if arr.ndim != 2 or min(arr.shape) < 1:
            raise InputError(f"map must be 2-D and non-empty, got shape {arr.shape}", file, f"{where}.map")
        if max(arr.shape) > MAX_MAP_SIDE:
            raise InputError(f"map side {max(arr.shape)} exceeds {MAX_MAP_SIDE}", file, f"{where}.map")
        if not np.all(np.isfinite(arr)):
            raise InputError("map values must be finite", file, f"{where}.map")
        if np.any(arr < 0):
            raise InputError("map values must be >= 0 (a radiance)", file, f"{where}.map")
        total = float(arr.sum())
        if not total > 0:
            raise InputError("map must carry some light (its sum is 0)", file, f"{where}.map")
        if isinstance(pitch_arcsec, bool) or not isinstance(pitch_arcsec, (int, float, np.floating)) \
                or not math.isfinite(float(pitch_arcsec)) or float(pitch_arcsec) <= 0:
            raise InputError(f"must be a positive finite number, got {pitch_arcsec!r}", file,
                             f"{where}.pitch_arcsec")
        arr = arr / total
        arr.setflags(write=False)
        self.values = arr
        self.pitch_arcsec = float(pitch_arcsec)
        self.path = path
        h = hashlib.sha256(np.ascontiguousarray(arr).tobytes())
        h.update(repr((arr.shape, self.pitch_arcsec)).encode())
        self.digest = h.hexdigest()

    @classmethod
    def from_dict(cls, d: dict, where: str, file: str | None = None) -> ImageMap:
        """Build from ``{"kind": "image", "path": ...}`` or ``{"kind": "image", "map": [[...]], "pitch_arcsec": q}``.

        A relative ``path`` is resolved against the folder of ``file``; the ``.npz`` holds the arrays
        ``map`` (2-D) and ``pitch_arcsec`` (scalar).
        """
        has_path, has_map = "path" in d, "map" in d
        if has_path == has_map:
            raise InputError("an image extent needs exactly one of path or map", file, f"{where}.path")
        if has_map:
            if "pitch_arcsec" not in d:
                raise InputError("an inline map needs pitch_arcsec", file, f"{where}.pitch_arcsec")
            return cls(d["map"], d["pitch_arcsec"], file=file, where=where)
        if "pitch_arcsec" in d:
            raise InputError("the pitch of a map file is stored in the file", file, f"{where}.pitch_arcsec")
        rel = d["path"]
        if not isinstance(rel, str) or not rel:
            raise InputError("expected a file path", file, f"{where}.path")
        full = Path(rel) if Path(rel).is_absolute() or file is None else Path(file).parent / rel
        arrays = load_map_npz(full)
        pitch = arrays["pitch_arcsec"]
        if pitch.shape != () or pitch.dtype.kind not in "fiu":
            raise InputError("pitch_arcsec must be a numeric scalar", str(full), "pitch_arcsec")
        if arrays["map"].dtype.kind not in "fiu":
            raise InputError(f"map must be numeric, got dtype {arrays['map'].dtype}", str(full), "map")
        return cls(arrays["map"], float(pitch), path=rel, file=str(full), where="")

    @property
    def shape(self) -> tuple[int, int]:
        """Cells (rows, cols)."""
        return self.values.shape  # type: ignore[return-value]

    @property
    def radius_arcmin(self) -> float:
        """Half the diagonal of the map (arcmin): every cell lies within it."""
        return 0.5 * math.hypot(*self.shape) * self.pitch_arcsec / 60.0

    def to_dict(self) -> dict:
        """JSON fields (without ``kind``): the file path if read from one, else the inline map."""
        if self.path is not None:
            return {"path": self.path}
        return {"map": self.values.tolist(), "pitch_arcsec": self.pitch_arcsec}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ImageMap) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"ImageMap(shape={self.shape}, pitch_arcsec={self.pitch_arcsec}, sha256={self.digest[:12]})"


def load_map_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Load an image-extent ``.npz`` (arrays ``map`` and ``pitch_arcsec``) with :func:`icl.io.load_npz`."""
    from icl.io import load_npz

    return load_npz(path, required=MAP_KEYS)


def write_map_npz(path: str | Path, values: np.ndarray, pitch_arcsec: float) -> None:
    """Write an image-extent ``.npz`` byte-reproducibly."""
    from icl.io import write_npz

    write_npz(path, map=np.asarray(values, dtype=float), pitch_arcsec=np.float64(pitch_arcsec))


def image_kernel(image: ImageMap, delta_y: float, delta_x: float, ratio: float, xb: float,
                 tol: float) -> tuple[np.ndarray, int, int]:
    """Taps ``g(b - K + delta)`` of the pixel-integrated, band-limited map, in detector pixels.

    Parameters
    ----------
    image : ImageMap
        The map (unit sum).
    delta_y, delta_x : float
        Sub-pixel offsets in [0, 1) of the source position, as for the point taps.
    ratio : float
        Map pitch over detector pitch.
    xb : float
        Band edge of the PSF in cycles per detector pixel.
    tol : float
        Relative truncation level of the pixel taps.

    Returns
    -------
    kernel : ndarray, shape (2 Ky + 1, 2 Kx + 1)
    ky, kx : int

    """
    from icl.optics.sampling import design_band, taper, taper_halfwidth

    rows, cols = image.shape
    k_tap = taper_halfwidth(design_band(xb), tol)
    ky = int(math.ceil(rows * ratio / 2.0)) + k_tap + 1
    kx = int(math.ceil(cols * ratio / 2.0)) + k_tap + 1

    def axis(k: int, cells: int, delta: float) -> tuple[np.ndarray, np.ndarray]:
        # Frequency grid over one period of the taps; twice the kernel span keeps the taper's tails
        # (below tol beyond k_tap) from wrapping onto the kernel.
        n = int(core.fast_length(max(64, 2 * (2 * k + 1))))
        f = np.fft.fftfreq(n)
        centres = (np.arange(cells) - (cells - 1) / 2.0) * ratio
        roll = taper(f, design_band(xb))
        # phase(f, a) = exp(2 pi i f (delta - phi_a)): the sub-pixel shift and the cell positions.
        e = np.exp(2j * np.pi * f[:, None] * (delta - centres[None, :]))
        return (np.sinc(f) * np.sinc(ratio * f) * roll)[:, None] * e, np.arange(-k, k + 1) % n

    ey, iy = axis(ky, rows, delta_y)
    ex, ix = axis(kx, cols, delta_x)
    spectrum = ey @ image.values @ ex.T
    g = np.fft.ifft2(spectrum).real
    return np.ascontiguousarray(g[np.ix_(iy, ix)]), ky, kx


def place_image(samples: np.ndarray, source: Source, scene: Scene, band: float, sampling: Sampling) -> np.ndarray:
    """Pixel flux of an image-extent source of unit flux: PSF samples convolved with the map's taps.

    Same contract as :func:`icl.optics.render.place` (the caller multiplies by the flux); the
    convolution is linear and zero-padded, and nothing is renormalised.
    """
    from icl.optics.render import pixel_offsets

    det = scene.detector
    n = det.n
    s = samples.shape[0]
    base_y, base_x = pixel_offsets(source, det)
    fx, fy = math.floor(base_x), math.floor(base_y)
    image = source.extent.image
    kern, ky, kx = image_kernel(image, base_y - fy, base_x - fx, image.pitch_arcsec / det.pitch_arcsec,
                                band, sampling.tap_tolerance)
    return core.convolve_linear(samples, kern, fy + ky + s // 2, fx + kx + s // 2, n, n)
