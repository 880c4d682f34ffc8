"""Scene description of the thin-phase eye (DESIGN.md sections 3-4) with strict JSON round-trip.

Units: pupil lengths in mm, powers in dioptres, axes in degrees counter-clockwise from +x, angles on
the sky in arcmin, detector pitch in arcsec, wavelengths in nm.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from icl.errors import InputError

ARCMIN = math.pi / (180.0 * 60.0)  # radians per arcmin
ARCSEC = ARCMIN / 60.0
HOLE_MODES = ("clear", "black", "index_matched")
EXTENT_KINDS = ("point", "disk", "image")


def _num(
    value: Any,
    field_name: str,
    file: str | None,
    *,
    lo: float | None = None,
    lo_open: bool = False,
    hi: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
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


def _check_keys(d: Any, allowed: set[str], where: str, file: str | None) -> dict:
    if not isinstance(d, dict):
        raise InputError(f"expected an object, got {type(d).__name__}", file, where or None)
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise InputError(f"unknown field(s) {unknown}; allowed: {sorted(allowed)}", file, where or None)
    return d


def _sub(where: str, key: str) -> str:
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

    """

    power_d: float = -8.0
    cylinder_d: float = 0.0
    axis_deg: float = 0.0
    decentre_mm: tuple[float, float] = (0.0, 0.0)
    optic_zone_mm: float = 6.0
    hole_mm: float = 0.0
    hole: str = "clear"

    @classmethod
    def from_dict(cls, d: Any, where: str = "pupil.icl", file: str | None = None) -> ICL:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {f.name for f in fields(cls)}, where, file)
        kw: dict[str, Any] = {}
        for key in ("power_d", "cylinder_d", "axis_deg"):
            if key in d:
                kw[key] = _num(d[key], _sub(where, key), file)
        if "optic_zone_mm" in d:
            kw["optic_zone_mm"] = _num(
                d["optic_zone_mm"], _sub(where, "optic_zone_mm"), file, lo=0, lo_open=True
            )
        if "hole_mm" in d:
            kw["hole_mm"] = _num(d["hole_mm"], _sub(where, "hole_mm"), file, lo=0)
        if "decentre_mm" in d:
            dec = d["decentre_mm"]
            if not isinstance(dec, list) or len(dec) != 2:
                raise InputError("expected [u_mm, v_mm]", file, _sub(where, "decentre_mm"))
            kw["decentre_mm"] = tuple(
                _num(v, f"{_sub(where, 'decentre_mm')}[{i}]", file) for i, v in enumerate(dec)
            )
        if "hole" in d:
            if d["hole"] not in HOLE_MODES:
                raise InputError(
                    f"must be one of {list(HOLE_MODES)}, got {d['hole']!r}", file, _sub(where, "hole")
                )
            kw["hole"] = d["hole"]
        icl = cls(**kw)
        if icl.hole_mm >= icl.optic_zone_mm:
            raise InputError("hole must be smaller than the optic zone", file, _sub(where, "hole_mm"))
        return icl


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

    @classmethod
    def from_dict(cls, d: Any, where: str = "pupil", file: str | None = None) -> Pupil:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"diameter_mm", "eye_excess_d", "icl"}, where, file)
        kw: dict[str, Any] = {}
        if "diameter_mm" in d:
            kw["diameter_mm"] = _num(
                d["diameter_mm"], _sub(where, "diameter_mm"), file, lo=0, lo_open=True, hi=12
            )
        if "eye_excess_d" in d:
            kw["eye_excess_d"] = _num(d["eye_excess_d"], _sub(where, "eye_excess_d"), file)
        if "icl" in d:
            kw["icl"] = None if d["icl"] is None else ICL.from_dict(d["icl"], _sub(where, "icl"), file)
        return cls(**kw)

    def field(self, n: int, du: float, wavelength: float) -> np.ndarray:
        """Complex pupil on an n x n grid of pitch ``du`` (m) at ``wavelength`` (m) (:mod:`icl.optics.thin`)."""
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
    """Square detector on the observation-angle tangent plane (DESIGN.md section 2).

    Parameters
    ----------
    n : int
        Pixels per side.
    pitch_arcsec : float
        Pixel pitch (arcsec).

    """

    n: int = 512
    pitch_arcsec: float = 4.0

    @classmethod
    def from_dict(cls, d: Any, where: str = "detector", file: str | None = None) -> Detector:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"n", "pitch_arcsec"}, where, file)
        kw: dict[str, Any] = {}
        if "n" in d:
            n = d["n"]
            if isinstance(n, bool) or not isinstance(n, int) or not 8 <= n <= 8192:
                raise InputError(f"must be an integer in [8, 8192], got {n!r}", file, _sub(where, "n"))
            kw["n"] = n
        if "pitch_arcsec" in d:
            kw["pitch_arcsec"] = _num(
                d["pitch_arcsec"], _sub(where, "pitch_arcsec"), file, lo=0, lo_open=True
            )
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
        return cls(
            "disk", _num(d["diameter_arcmin"], _sub(where, "diameter_arcmin"), file, lo=0, lo_open=True)
        )

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
        Point or uniform disk.

    """

    id: str = "L1"
    x_arcmin: float = 0.0
    y_arcmin: float = 0.0
    flux: float = 1.0
    spectrum: tuple[tuple[float, float], ...] = ((550.0, 1.0),)
    extent: Extent = field(default_factory=Extent)

    @classmethod
    def from_dict(cls, d: Any, where: str, file: str | None = None) -> Source:
        """Build from a JSON object, naming the field of any error."""
        d = _check_keys(d, {"id", "x_arcmin", "y_arcmin", "flux", "spectrum", "extent"}, where, file)
        kw: dict[str, Any] = {}
        if "id" in d:
            sid = d["id"]
            if not isinstance(sid, str) or not sid or any(c in sid for c in "/\\|\0") or len(sid) > 64:
                raise InputError(
                    "must be a non-empty string of at most 64 characters without / \\ |",
                    file,
                    _sub(where, "id"),
                )
            kw["id"] = sid
        for key in ("x_arcmin", "y_arcmin"):
            if key in d:
                kw[key] = _num(d[key], _sub(where, key), file, lo=-600, hi=600)
        if "flux" in d:
            kw["flux"] = _num(d["flux"], _sub(where, "flux"), file, lo=0)
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
                pairs.append(
                    (_num(pair[0], fw + "[0]", file, lo=200, hi=2000), _num(pair[1], fw + "[1]", file, lo=0))
                )
            kw["spectrum"] = tuple(pairs)
        if "extent" in d:
            kw["extent"] = Extent.from_dict(d["extent"], _sub(where, "extent"), file)
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
    """Sources seen through one pupil onto one detector."""

    sources: tuple[Source, ...]
    pupil: Pupil = field(default_factory=Pupil)
    detector: Detector = field(default_factory=Detector)

    @classmethod
    def from_dict(cls, d: Any, file: str | None = None) -> Scene:
        """Build from the JSON form of DESIGN.md section 4; errors name the file and field."""
        d = _check_keys(d, {"pupil", "detector", "sources"}, "", file)
        if "sources" not in d:
            raise InputError("required", file, "sources")
        srcs = d["sources"]
        if not isinstance(srcs, list) or not srcs:
            raise InputError("expected a non-empty list", file, "sources")
        sources = tuple(Source.from_dict(s, f"sources[{i}]", file) for i, s in enumerate(srcs))
        ids = [s.id for s in sources]
        if len(set(ids)) != len(ids):
            raise InputError(f"source ids must be unique, got {ids}", file, "sources")
        pupil = Pupil.from_dict(d.get("pupil", {}), "pupil", file)
        detector = Detector.from_dict(d.get("detector", {}), "detector", file)
        return cls(sources, pupil, detector)

    def to_dict(self) -> dict:
        """JSON form (round-trips through :meth:`from_dict`)."""
        return {
            "pupil": self.pupil.to_dict(),
            "detector": asdict(self.detector),
            "sources": [s.to_dict() for s in self.sources],
        }
