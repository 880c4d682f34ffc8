"""Scene description of the thin-phase eye with strict JSON round-trip (docs/conventions.md, docs/formats.md).

Units: pupil lengths in mm, powers in dioptres, axes in degrees counter-clockwise from +x, angles on
the sky in arcmin, detector pitch in arcsec, wavelengths in nm.

Every rule on a value lives in one place, the dataclasses' ``__post_init__``: the Python API refuses
what the command line refuses, with the field named (:class:`icl.errors.InputError`). ``from_dict``
only checks JSON types and adds the file and the field's path to the message.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from icl.errors import InputError

ARCMIN = math.pi / (180.0 * 60.0)  # radians per arcmin
ARCSEC = ARCMIN / 60.0
HOLE_MODES = ("clear", "black", "index_matched")
# How a scene's images are drawn on the sky (docs/conventions.md, "Frames"). ``visual``: as the observer sees
# them, for sources and for what the eye's optics do to their light alike (a minus optic decentred toward +x
# moves its pattern toward +x, "with motion"). ``halo``: the halo track's stated sign convention, in which a
# pupil tilt W = a . u draws the pattern at +a (the same optic moves it toward -x) while sources stay where
# they are seen.
FRAMES = ("visual", "halo")
EXTENT_KINDS = ("point", "disk", "image")
MAX_PUPIL_MM = 12.0
MAX_OFFSET_ARCMIN = 600.0
WAVELENGTH_RANGE_NM = (200.0, 2000.0)
# Refuse a scene whose render would need more memory than this (upper estimate, see
# :func:`render_memory_estimate`); documented in docs/conventions.md.
MAX_RENDER_BYTES = 8 * 2**30


def _num(
    value: Any,
    field_name: str,
    file: str | None,
    *,
    lo: float | None = None,
    lo_open: bool = False,
    hi: float | None = None,
) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InputError(f"expected a number, got {type(value).__name__}", file, field_name)
    try:
        v = float(value)
    except OverflowError:
        raise InputError("number too large for a double", file, field_name) from None
    if not math.isfinite(v):
        raise InputError("must be finite", file, field_name)
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise InputError(f"must be {'>' if lo_open else '>='} {lo}, got {v}", file, field_name)
    if hi is not None and v > hi:
        raise InputError(f"must be <= {hi}, got {v}", file, field_name)
    return v


def _typed(value: Any, field_name: str, file: str | None) -> float:
    """Return a JSON number as float (type and finiteness only; ranges are the dataclasses' business)."""
    return _num(value, field_name, file)


@contextmanager
def _located(where: str, file: str | None) -> Iterator[None]:
    """Add the file and the field's JSON path to an error raised by a dataclass's own checks."""
    try:
        yield
    except InputError as exc:
        if exc.file is not None:
            raise
        raise InputError(exc.reason, file, _sub(where, exc.field or "") or None) from None


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # frozen dataclasses: normalise a field in __post_init__


def _check_keys(d: Any, allowed: set[str], where: str, file: str | None) -> dict:
    if not isinstance(d, dict):
        raise InputError(f"expected an object, got {type(d).__name__}", file, where or None)
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise InputError(f"unknown field(s) {unknown}; allowed: {sorted(allowed)}", file, where or None)
    return d


def _sub(where: str, key: str) -> str:
    if not key:
        return where
    return f"{where}.{key}" if where else key


@dataclass(frozen=True)
class ICL:
    """Implantable collamer lens on the thin-phase eye.

    Parameters
    ----------
    power_d : float
        Spherical power of the optic (D); -8 corrects the default +8 D myopic excess.
    cylinder_d : float
        Plus-cylinder power (D) along ``axis_deg``.
    axis_deg : float
        Cylinder axis, degrees counter-clockwise from +x.
    decentre_mm : tuple of float
        Decentre (u, v) of the optic, its cylinder and its hole (mm).
    optic_zone_mm : float
        Optic zone diameter (mm); outside it only the eye term acts.
    hole_mm : float
        Central hole diameter (mm); 0 means no hole.
    hole : {'clear', 'black', 'index_matched'}
        What fills the hole: uncorrected light, nothing, or the optic's own correction.
    optic_opd_um : float
        Optical path (um) that the optic's centre adds over the light that passes beside it (through a
        clear hole or outside the optic zone): ``(n_optic - n_aqueous) * centre thickness`` for a real
        optic. It is a piston of the optic's wavefront: it sets the phase between the optic's light and the
        hole's (and the zone edge's) light. 0 (the default) is an optic of zero optical thickness.

    """

    power_d: float = -8.0
    cylinder_d: float = 0.0
    axis_deg: float = 0.0
    decentre_mm: tuple[float, float] = (0.0, 0.0)
    optic_zone_mm: float = 6.0
    hole_mm: float = 0.0
    hole: str = "clear"
    optic_opd_um: float = 0.0

    def __post_init__(self) -> None:
        for key in ("power_d", "cylinder_d", "axis_deg", "optic_opd_um"):
            _set(self, key, _num(getattr(self, key), key, None))
        dec = self.decentre_mm
        if isinstance(dec, (str, bytes)) or not hasattr(dec, "__len__") or len(dec) != 2:
            raise InputError("expected (u_mm, v_mm)", None, "decentre_mm")
        _set(self, "decentre_mm", tuple(_num(v, f"decentre_mm[{i}]", None) for i, v in enumerate(dec)))
        _set(self, "optic_zone_mm", _num(self.optic_zone_mm, "optic_zone_mm", None, lo=0, lo_open=True))
        _set(self, "hole_mm", _num(self.hole_mm, "hole_mm", None, lo=0))
        if self.hole_mm >= self.optic_zone_mm:
            raise InputError(
                f"the hole ({self.hole_mm} mm) must be smaller than the optic zone ({self.optic_zone_mm} mm)",
                None,
                "hole_mm",
            )
        if self.hole not in HOLE_MODES:
            raise InputError(f"must be one of {list(HOLE_MODES)}, got {self.hole!r}", None, "hole")

    @classmethod
    def from_dict(cls, d: Any, where: str = "pupil.icl", file: str | None = None) -> ICL:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {f.name for f in fields(cls)}, where, file)
        kw: dict[str, Any] = {}
        for key in ("power_d", "cylinder_d", "axis_deg", "optic_zone_mm", "hole_mm", "optic_opd_um"):
            if key in d:
                kw[key] = _typed(d[key], _sub(where, key), file)
        if "decentre_mm" in d:
            dec = d["decentre_mm"]
            if not isinstance(dec, list) or len(dec) != 2:
                raise InputError("expected [u_mm, v_mm]", file, _sub(where, "decentre_mm"))
            kw["decentre_mm"] = tuple(
                _typed(v, f"{_sub(where, 'decentre_mm')}[{i}]", file) for i, v in enumerate(dec)
            )
        if "hole" in d:
            kw["hole"] = d["hole"]
        with _located(where, file):
            return cls(**kw)


@dataclass(frozen=True)
class Pupil:
    """Thin-phase eye: uniform circular pupil, myopic excess, optional ICL.

    Parameters
    ----------
    diameter_mm : float
        Entrance pupil diameter (mm).
    eye_excess_d : float
        Myopic excess of the eye over the whole pupil (D).
    icl : ICL or None
        The implanted lens; ``None`` for an eye without ICL.

    """

    diameter_mm: float = 3.2
    eye_excess_d: float = 8.0
    icl: ICL | None = field(default_factory=ICL)

    def __post_init__(self) -> None:
        _set(
            self,
            "diameter_mm",
            _num(self.diameter_mm, "diameter_mm", None, lo=0, lo_open=True, hi=MAX_PUPIL_MM),
        )
        _set(self, "eye_excess_d", _num(self.eye_excess_d, "eye_excess_d", None))
        if self.icl is not None and not isinstance(self.icl, ICL):
            raise InputError(f"expected an ICL or None, got {type(self.icl).__name__}", None, "icl")

    @classmethod
    def from_dict(cls, d: Any, where: str = "pupil", file: str | None = None) -> Pupil:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"diameter_mm", "eye_excess_d", "icl"}, where, file)
        kw: dict[str, Any] = {}
        for key in ("diameter_mm", "eye_excess_d"):
            if key in d:
                kw[key] = _typed(d[key], _sub(where, key), file)
        if "icl" in d:
            kw["icl"] = None if d["icl"] is None else ICL.from_dict(d["icl"], _sub(where, "icl"), file)
        with _located(where, file):
            return cls(**kw)

    def field(self, n: int, du: float, wavelength: float) -> np.ndarray:
        """Complex pupil on an n x n grid of pitch ``du`` (m) at ``wavelength`` (m) (icl.optics.thin)."""
        from icl.optics.thin import pupil_field

        return pupil_field(self, n, du, wavelength)

    def blocked_fraction(self) -> float:
        """Exact opaque fraction of the pupil area."""
        from icl.optics.thin import blocked_fraction

        return blocked_fraction(self)

    def to_dict(self) -> dict:
        """JSON form."""
        out = asdict(self)
        if self.icl is not None:
            out["icl"]["decentre_mm"] = list(self.icl.decentre_mm)
        return out


@dataclass(frozen=True)
class Detector:
    """Square detector on the observation-angle tangent plane (docs/conventions.md).

    Parameters
    ----------
    n : int
        Pixels per side.
    pitch_arcsec : float
        Pixel pitch (arcsec).

    """

    n: int = 512
    pitch_arcsec: float = 4.0

    def __post_init__(self) -> None:
        n = self.n
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 8 <= n <= 8192:
            raise InputError(f"must be an integer in [8, 8192], got {n!r}", None, "n")
        _set(self, "n", int(n))
        _set(self, "pitch_arcsec", _num(self.pitch_arcsec, "pitch_arcsec", None, lo=0, lo_open=True))

    @classmethod
    def from_dict(cls, d: Any, where: str = "detector", file: str | None = None) -> Detector:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"n", "pitch_arcsec"}, where, file)
        kw: dict[str, Any] = {}
        if "n" in d:
            if isinstance(d["n"], float):  # JSON 512.0 is not an integer count
                raise InputError(f"must be an integer in [8, 8192], got {d['n']!r}", file, _sub(where, "n"))
            kw["n"] = d["n"]
        if "pitch_arcsec" in d:
            kw["pitch_arcsec"] = _typed(d["pitch_arcsec"], _sub(where, "pitch_arcsec"), file)
        with _located(where, file):
            return cls(**kw)

    @property
    def axis_arcmin(self) -> np.ndarray:
        """Pixel-centre coordinates ``(j - (n-1)/2) * pitch`` in arcmin (same for x and y)."""
        return (np.arange(self.n) - (self.n - 1) / 2.0) * (self.pitch_arcsec / 60.0)

    @property
    def half_width_arcmin(self) -> float:
        """Half the detector's side (arcmin)."""
        return self.n * self.pitch_arcsec / 120.0


@dataclass(frozen=True)
class Extent:
    """Angular extent of a source: a point, a uniform incoherent disk, or a linear radiance map.

    A map is an :class:`icl.optics.image_source.ImageMap`; every kind carries the same total flux.
    """

    kind: str = "point"
    diameter_arcmin: float = 0.0
    image: Any = None

    def __post_init__(self) -> None:
        if self.kind not in EXTENT_KINDS:
            raise InputError(f"must be one of {list(EXTENT_KINDS)}, got {self.kind!r}", None, "kind")
        if self.kind == "disk":
            _set(
                self,
                "diameter_arcmin",
                _num(self.diameter_arcmin, "diameter_arcmin", None, lo=0, lo_open=True),
            )
        elif self.diameter_arcmin != 0.0:
            raise InputError(f"a {self.kind} extent has no diameter", None, "diameter_arcmin")
        if self.kind == "image":
            from icl.optics.image_source import ImageMap

            if not isinstance(self.image, ImageMap):
                raise InputError("an image extent needs an ImageMap", None, "image")
        elif self.image is not None:
            raise InputError(f"a {self.kind} extent has no image", None, "image")

    @classmethod
    def from_dict(cls, d: Any, where: str, file: str | None = None) -> Extent:
        """Build from a JSON object, naming the field of any error."""
        image_keys = {"path", "map", "pitch_arcsec"}
        d = _check_keys(d, {"kind", "diameter_arcmin"} | image_keys, where, file)
        kind = d.get("kind", "point")
        if kind not in EXTENT_KINDS:
            raise InputError(f"must be one of {list(EXTENT_KINDS)}, got {kind!r}", file, _sub(where, "kind"))
        if kind == "image":
            from icl.optics.image_source import ImageMap

            if "diameter_arcmin" in d:
                raise InputError("an image extent has no diameter", file, _sub(where, "diameter_arcmin"))
            return cls("image", image=ImageMap.from_dict(d, where, file))
        if image_keys & set(d):
            key = sorted(image_keys & set(d))[0]
            raise InputError("only an image extent has this field", file, _sub(where, key))
        if kind == "point":
            if "diameter_arcmin" in d:
                raise InputError("a point source has no diameter", file, _sub(where, "diameter_arcmin"))
            return cls()
        if "diameter_arcmin" not in d:
            raise InputError("a disk needs diameter_arcmin", file, _sub(where, "diameter_arcmin"))
        with _located(where, file):
            return cls("disk", _typed(d["diameter_arcmin"], _sub(where, "diameter_arcmin"), file))

    @property
    def radius_arcmin(self) -> float:
        """Radius of the extent (0 for a point; half the diagonal of an image)."""
        return self.image.radius_arcmin if self.kind == "image" else 0.5 * self.diameter_arcmin

    def to_dict(self) -> dict:
        """JSON form."""
        if self.kind == "image":
            return {"kind": "image", **self.image.to_dict()}
        return (
            {"kind": "point"}
            if self.kind == "point"
            else {"kind": self.kind, "diameter_arcmin": self.diameter_arcmin}
        )


@dataclass(frozen=True)
class Source:
    """An incoherent source seen at (x, y) arcmin from fixation.

    Parameters
    ----------
    id : str
        Identifier (no path separators).
    x_arcmin, y_arcmin : float
        Position on the tangent plane (+x right, +y up).
    flux : float
        Total flux in units of the source flux; components scale linearly with it.
    spectrum : tuple of (wavelength_nm, weight)
        Wavelengths and weights, used as given (not renormalised).
    extent : Extent
        Point, uniform disk or radiance map.

    """

    id: str = "L1"
    x_arcmin: float = 0.0
    y_arcmin: float = 0.0
    flux: float = 1.0
    spectrum: tuple[tuple[float, float], ...] = ((550.0, 1.0),)
    extent: Extent = field(default_factory=Extent)

    def __post_init__(self) -> None:
        sid = self.id
        if not isinstance(sid, str) or not sid or any(c in sid for c in "/\\|\0") or len(sid) > 64:
            raise InputError("must be a non-empty string of at most 64 characters without / \\ |", None, "id")
        for key in ("x_arcmin", "y_arcmin"):
            _set(self, key, _num(getattr(self, key), key, None, lo=-MAX_OFFSET_ARCMIN, hi=MAX_OFFSET_ARCMIN))
        _set(self, "flux", _num(self.flux, "flux", None, lo=0))
        spec = self.spectrum
        if isinstance(spec, (str, bytes)) or not hasattr(spec, "__len__") or len(spec) == 0:
            raise InputError("expected a non-empty list of (wavelength_nm, weight)", None, "spectrum")
        pairs = []
        lo, hi = WAVELENGTH_RANGE_NM
        for i, pair in enumerate(spec):
            if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
                raise InputError("expected (wavelength_nm, weight)", None, f"spectrum[{i}]")
            pairs.append(
                (
                    _num(pair[0], f"spectrum[{i}][0]", None, lo=lo, hi=hi),
                    _num(pair[1], f"spectrum[{i}][1]", None, lo=0),
                )
            )
        _set(self, "spectrum", tuple(pairs))
        if not isinstance(self.extent, Extent):
            raise InputError(f"expected an Extent, got {type(self.extent).__name__}", None, "extent")

    @classmethod
    def from_dict(cls, d: Any, where: str, file: str | None = None) -> Source:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"id", "x_arcmin", "y_arcmin", "flux", "spectrum", "extent"}, where, file)
        kw: dict[str, Any] = {}
        if "id" in d:
            kw["id"] = d["id"]
        for key in ("x_arcmin", "y_arcmin", "flux"):
            if key in d:
                kw[key] = _typed(d[key], _sub(where, key), file)
        if "spectrum" in d:
            spec = d["spectrum"]
            if not isinstance(spec, list) or not spec:
                raise InputError(
                    "expected a non-empty list of [wavelength_nm, weight]", file, _sub(where, "spectrum")
                )
            pairs = []
            for i, pair in enumerate(spec):
                fw = f"{_sub(where, 'spectrum')}[{i}]"
                if not isinstance(pair, list) or len(pair) != 2:
                    raise InputError("expected [wavelength_nm, weight]", file, fw)
                pairs.append((_typed(pair[0], fw + "[0]", file), _typed(pair[1], fw + "[1]", file)))
            kw["spectrum"] = tuple(pairs)
        if "extent" in d:
            kw["extent"] = Extent.from_dict(d["extent"], _sub(where, "extent"), file)
        with _located(where, file):
            return cls(**kw)

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            "id": self.id,
            "x_arcmin": self.x_arcmin,
            "y_arcmin": self.y_arcmin,
            "flux": self.flux,
            "spectrum": [list(p) for p in self.spectrum],
            "extent": self.extent.to_dict(),
        }


@dataclass(frozen=True)
class Scene:
    """Sources seen through one pupil onto one detector.

    ``pupil`` is a :class:`Pupil` or any eye model with the same interface (a thick eye). ``frame`` says
    how the images are drawn (:data:`FRAMES`; docs/conventions.md, "Frames"): ``visual`` (the default) as
    the observer sees them, ``halo`` in the halo track's stated sign convention. A scene whose render would
    need more than :data:`MAX_RENDER_BYTES` (:func:`render_memory_estimate`) is refused: the support window
    grows with the farthest source, and the FFT plane with its square.
    """

    sources: tuple[Source, ...]
    pupil: Pupil = field(default_factory=Pupil)
    detector: Detector = field(default_factory=Detector)
    frame: str = "visual"

    def __post_init__(self) -> None:
        if self.frame not in FRAMES:
            raise InputError(f"must be one of {list(FRAMES)}, got {self.frame!r}", None, "frame")
        srcs = self.sources
        if isinstance(srcs, Source) or not isinstance(srcs, (tuple, list)) or not srcs:
            raise InputError("expected a non-empty tuple of Source", None, "sources")
        for i, src in enumerate(srcs):
            if not isinstance(src, Source):
                raise InputError(f"expected a Source, got {type(src).__name__}", None, f"sources[{i}]")
        _set(self, "sources", tuple(srcs))
        ids = [s.id for s in self.sources]
        if len(set(ids)) != len(ids):
            raise InputError(f"source ids must be unique, got {ids}", None, "sources")
        if not isinstance(self.detector, Detector):
            raise InputError(f"expected a Detector, got {type(self.detector).__name__}", None, "detector")
        diameter = getattr(self.pupil, "diameter_mm", None)
        if not (isinstance(diameter, (int, float)) and math.isfinite(diameter) and diameter > 0):
            raise InputError("expected a pupil model with a positive diameter_mm", None, "pupil")
        need = render_memory_estimate(self)
        if need > MAX_RENDER_BYTES:
            far = max(
                self.sources, key=lambda s: max(abs(s.x_arcmin), abs(s.y_arcmin)) + s.extent.radius_arcmin
            )
            raise InputError(
                f"rendering needs about {need / 2**30:.3g} GiB, more than the "
                f"{MAX_RENDER_BYTES / 2**30:g} GiB cap: the support window reaches the farthest source "
                f"({far.id} at ({far.x_arcmin:g}, {far.y_arcmin:g}) arcmin); move it closer or use a "
                "coarser detector pitch",
                None,
                "sources",
            )

    @classmethod
    def from_dict(cls, d: Any, file: str | None = None) -> Scene:
        """Build from the JSON form (docs/formats.md); errors name the file and field."""
        d = _check_keys(d, {"pupil", "detector", "sources", "frame"}, "", file)
        if "sources" not in d:
            raise InputError("required", file, "sources")
        srcs = d["sources"]
        if not isinstance(srcs, list) or not srcs:
            raise InputError("expected a non-empty list", file, "sources")
        sources = tuple(Source.from_dict(s, f"sources[{i}]", file) for i, s in enumerate(srcs))
        pupil = Pupil.from_dict(d.get("pupil", {}), "pupil", file)
        detector = Detector.from_dict(d.get("detector", {}), "detector", file)
        with _located("", file):
            return cls(sources, pupil, detector, d.get("frame", "visual"))

    def to_dict(self) -> dict:
        """JSON form (round-trips through :meth:`from_dict`)."""
        return {
            "pupil": self.pupil.to_dict(),
            "detector": asdict(self.detector),
            "sources": [s.to_dict() for s in self.sources],
            "frame": self.frame,
        }


def decentre_shift_arcmin(power_d: float, decentre_mm: float, frame: str = "visual") -> float:
    """Where a thin optic of power ``power_d`` decentred by ``decentre_mm`` moves its pattern (arcmin), along
    the decentre, in ``frame``.

    The optic's wavefront ``-(K/2)|u - c|^2`` holds the tilt ``K c``: the light through the pupil centre is
    deviated by ``K c`` (Prentice; toward -c for a minus optic). Seen, the pattern moves by ``-K c`` (with the
    optic for a minus lens, "with motion"): the ``visual`` frame. The ``halo`` frame draws it at ``+K c``.
    """
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
    tilt = power_d * decentre_mm * 1e-3 / ARCMIN
    return -tilt if frame == "visual" else tilt


def render_memory_estimate(scene: Scene, fft_factor: float | None = None) -> int:
    """Upper estimate (bytes) of the largest allocation a render of ``scene`` makes.

    One complex128 FFT plane of side ``m``, where ``m`` is the largest of ``fft_factor`` times the
    support window (detector half-width + farthest source offset + largest extent radius, at the
    detector pitch), the pupil-sampling bound and the period bound of the default
    :class:`icl.optics.sampling.Sampling`; plus the float64 components and their sum. Point sources
    are sampled up to 2-3 pixels apart, so the estimate is high by up to an order of magnitude there.
    """
    from icl.optics.sampling import Sampling

    smp = Sampling() if fft_factor is None else Sampling(fft_factor=fft_factor)
    det = scene.detector
    offset = max(max(abs(s.x_arcmin), abs(s.y_arcmin)) for s in scene.sources)
    radius = det.half_width_arcmin + offset + max(s.extent.radius_arcmin for s in scene.sources)
    support = 2.0 * radius * 60.0 / det.pitch_arcsec
    pitch = det.pitch_arcsec * ARCSEC
    lam = min(w for s in scene.sources for w, _ in s.spectrum) * 1e-9
    m_pupil = smp.min_pupil_samples * lam / (scene.pupil.diameter_mm * 1e-3 * pitch)
    m_period = smp.min_period_arcmin * ARCMIN / pitch
    m = max(smp.fft_factor * support, m_pupil, m_period)
    return int(16 * m * m + 8 * (len(scene.sources) + 1) * det.n * det.n)
