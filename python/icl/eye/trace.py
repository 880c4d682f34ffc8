"""Python side of the ray tracer: surfaces, rigid placement and ray batches (structure of arrays).

Lengths in mm; the eye's optical axis is +z (light travels towards +z), +x right, +y up (docs/conventions.md).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from icl import linalg
from icl._core_loader import core

# Flag bits set by the kernel (cpp/raytrace.hpp).
MISSED, TIR, CLIPPED, WALL, NO_CONVERGE = 1, 2, 4, 8, 16
FLAG_NAMES = {MISSED: "missed", TIR: "total_internal_reflection", CLIPPED: "clipped", WALL: "hole_wall",
              NO_CONVERGE: "no_converge"}


@dataclass(frozen=True)
class Placement:
    """Rigid transform of an element: decentre, axial position, tilts and rotation about its own axis.

    The element frame is rotated by ``Rz(rotation) Ry(tilt_y) Rx(tilt_x)`` (degrees, right-handed) about the
    pivot ``(decentre_x, decentre_y, z)`` (mm), which is the element's reference vertex.
    """

    decentre_x: float = 0.0
    decentre_y: float = 0.0
    z: float = 0.0
    tilt_x_deg: float = 0.0
    tilt_y_deg: float = 0.0
    rotation_deg: float = 0.0

    def matrix(self) -> np.ndarray:
        """3x3 matrix whose columns are the element's axes in eye coordinates."""
        ax, ay, az = (math.radians(a) for a in (self.tilt_x_deg, self.tilt_y_deg, self.rotation_deg))
        rx = np.array([[1, 0, 0], [0, math.cos(ax), -math.sin(ax)], [0, math.sin(ax), math.cos(ax)]])
        ry = np.array([[math.cos(ay), 0, math.sin(ay)], [0, 1, 0], [-math.sin(ay), 0, math.cos(ay)]])
        rz = np.array([[math.cos(az), -math.sin(az), 0], [math.sin(az), math.cos(az), 0], [0, 0, 1]])
        return linalg.matmul(linalg.matmul(rz, ry), rx)

    @property
    def pivot(self) -> np.ndarray:
        """Pivot point (mm)."""
        return np.array([self.decentre_x, self.decentre_y, self.z])


@dataclass(frozen=True)
class Surface:
    """One surface of an element, in the element's frame.

    Parameters
    ----------
    name : str
        Label used in ledgers and files.
    radius : float
        Vertex radius of curvature (mm); ``inf`` for a plane. Positive when the centre lies towards +z.
    conic : float
        Conic constant k (Q in Navarro's notation); 0 sphere, -1 paraboloid.
    asphere : tuple of float
        Even polynomial coefficients (a4, a6, a8, a10) in mm^(1-2j).
    offset : float
        Vertex position along the element's axis (mm) relative to the element pivot.
    aperture : tuple of float
        Annular clear aperture (r_inner, r_outer) in mm, measured in the element frame.
    wall : tuple of (float, int)
        Hole wall bounding the segment that reaches this surface: (radius mm, side); side +1 the ray must stay
        inside, -1 outside, 0 none.
    reflect : bool
        Take the reflected (Fresnel R) branch instead of the refracted one.

    """

    name: str
    radius: float = math.inf
    conic: float = 0.0
    asphere: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    offset: float = 0.0
    aperture: tuple[float, float] = (0.0, math.inf)
    wall: tuple[float, int] = (0.0, 0)
    reflect: bool = False

    @property
    def curvature(self) -> float:
        """1 / radius (0 for a plane)."""
        return 0.0 if math.isinf(self.radius) else 1.0 / self.radius

    def sag(self, r: np.ndarray | float) -> np.ndarray:
        """Sag z(r) in the surface frame (mm)."""
        r2 = np.asarray(r, dtype=float) ** 2
        c, k = self.curvature, self.conic
        z = c * r2 / (1.0 + np.sqrt(1.0 - (1.0 + k) * c * c * r2))
        a4, a6, a8, a10 = self.asphere
        return z + r2 * r2 * (a4 + r2 * (a6 + r2 * (a8 + r2 * a10)))

    def flipped(self, **changes) -> Surface:
        """A copy with some fields changed (used to build reflected branches)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Step:
    """A surface placed in the eye with the indices on either side at one wavelength."""

    surface: Surface
    placement: Placement
    n1: float
    n2: float

    def to_core(self) -> core.RaySurface:
        """Kernel struct: global-to-local rotation and the vertex in eye coordinates."""
        s = self.surface
        out = core.RaySurface()
        if math.isinf(s.radius):
            out.kind = core.SurfaceKind.plane
        elif any(s.asphere):
            out.kind = core.SurfaceKind.asphere
        else:
            out.kind = core.SurfaceKind.conic
        out.c, out.k = s.curvature, s.conic
        out.a4, out.a6, out.a8, out.a10 = s.asphere
        out.origin, out.rot = _frame(self.placement, s.offset)
        out.r_inner = float(s.aperture[0])
        out.r_outer = float(min(s.aperture[1], 1e300))
        out.wall_radius, out.wall_side = float(s.wall[0]), int(s.wall[1])
        out.n1, out.n2 = float(self.n1), float(self.n2)
        out.reflect = bool(s.reflect)
        return out


@functools.lru_cache(maxsize=4096)
def _frame(placement: Placement, offset: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Kernel frame of a surface at ``offset`` along a placed element's axis: its vertex in eye coordinates
    and the global-to-local rotation (row-major). Cached: a trace converts every step on every call, and
    building the rotation costs more than tracing a few rays."""
    rot = placement.matrix()
    origin = tuple(float(v) for v in placement.pivot + rot[:, 2] * offset)
    return origin, tuple(float(v) for v in rot.T.ravel())


@dataclass
class Rays:
    """A batch of rays as separate contiguous arrays (mm, unit direction cosines, optical path in mm)."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    l: np.ndarray  # noqa: E741 - the optical name of the x direction cosine
    m: np.ndarray
    n: np.ndarray
    opl: np.ndarray
    w: np.ndarray
    flags: np.ndarray

    @classmethod
    def start(cls, x, y, z, l, m, n, w=None) -> Rays:  # noqa: E741
        """Rays at points (x, y, z) with directions (l, m, n) (normalised here), zero path, weight ``w``."""
        x, y, z, l, m, n = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x, y, z, l, m, n)))
        norm = np.sqrt(l * l + m * m + n * n)
        w = np.ones(x.shape) if w is None else np.broadcast_to(np.asarray(w, dtype=float), x.shape)
        flat = [np.ascontiguousarray(a, dtype=float).ravel() for a in (x, y, z, l / norm, m / norm, n / norm)]
        return cls(*flat, np.zeros(flat[0].size), np.array(w, dtype=float).ravel(),
                   np.zeros(flat[0].size, dtype=np.uint32))

    @property
    def alive(self) -> np.ndarray:
        """Rays that passed every surface so far."""
        return self.flags == 0

    def copy(self) -> Rays:
        """Deep copy."""
        return Rays(*(a.copy() for a in self.arrays()))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(x, y, z, l, m, n, opl, w, flags)."""
        return (self.x, self.y, self.z, self.l, self.m, self.n, self.opl, self.w, self.flags)


@dataclass(frozen=True)
class TraceOptions:
    """Switches of the tracer (all on by default)."""

    apertures: bool = True
    fresnel: bool = True
    opl: bool = True

    def to_core(self) -> core.TraceOptions:
        """Kernel struct."""
        o = core.TraceOptions()
        o.apertures, o.fresnel, o.opl = self.apertures, self.fresnel, self.opl
        return o


def trace(
    steps: list[Step] | list[core.RaySurface],
    rays: Rays,
    options: TraceOptions = TraceOptions(),
    *,
    in_place: bool = False,
) -> Rays:
    """Trace ``rays`` through ``steps`` in order (C++ kernel, GIL released); returns a new batch.

    With ``in_place`` the batch's own arrays are overwritten and ``rays`` is returned: no new arrays to
    allocate and touch, which at a million rays costs more than the tracing itself.
    """
    surfaces = [s.to_core() if isinstance(s, Step) else s for s in steps]
    if in_place:
        core.trace_rays_inplace(surfaces, options.to_core(), *rays.arrays())
        return rays
    return Rays(*core.trace_rays(surfaces, options.to_core(), *rays.arrays()))


def to_plane(rays: Rays, z: float, index: float) -> Rays:
    """Propagate alive rays to the plane ``z`` (mm) in a medium of ``index``, adding optical path."""
    out = rays.copy()
    a = out.alive
    t = (z - out.z[a]) / out.n[a]
    out.x[a] += t * out.l[a]
    out.y[a] += t * out.m[a]
    out.z[a] = z
    out.opl[a] += index * t
    return out
