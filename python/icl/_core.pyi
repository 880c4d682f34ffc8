"""C++ kernels of ICL-Bench: pupil, FFT propagation, convolution, ray tracing
"""
from __future__ import annotations

import collections.abc
import typing

import numpy
import numpy.typing

__all__: list[str] = ['HoleMode', 'PupilParams', 'RaySurface', 'SurfaceKind', 'TraceOptions', 'build_pupil', 'convolve_linear', 'disk_coverage', 'disk_coverage_filtered', 'export_wisdom', 'fast_length', 'field_energy', 'fresnel', 'import_wisdom', 'num_threads', 'place_polyphase', 'place_separable', 'psf_window', 'set_num_threads', 'set_planner_measure', 'trace_rays', 'trace_rays_inplace']
class HoleMode:
    """Members:
    
    clear
    
    black
    
    index_matched
    """

    __members__: typing.ClassVar[dict[str, HoleMode]]
    black: typing.ClassVar[HoleMode]
    clear: typing.ClassVar[HoleMode]
    index_matched: typing.ClassVar[HoleMode]
    @typing.overload
    def __eq__(self, other: HoleMode) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: HoleMode) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class PupilParams:
    """Thin-phase pupil parameters in SI units (m, D, rad).
    """

    hole: HoleMode
    icl_present: bool
    def __init__(self) -> None:
        ...
    @property
    def cyl_axis(self) -> float:
        ...
    @cyl_axis.setter
    def cyl_axis(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def cyl_power(self) -> float:
        ...
    @cyl_power.setter
    def cyl_power(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def icl_piston(self) -> float:
        ...
    @icl_piston.setter
    def icl_piston(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def dec_u(self) -> float:
        ...
    @dec_u.setter
    def dec_u(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def dec_v(self) -> float:
        ...
    @dec_v.setter
    def dec_v(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def eye_excess(self) -> float:
        ...
    @eye_excess.setter
    def eye_excess(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def hole_diameter(self) -> float:
        ...
    @hole_diameter.setter
    def hole_diameter(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def icl_power(self) -> float:
        ...
    @icl_power.setter
    def icl_power(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def optic_zone_diameter(self) -> float:
        ...
    @optic_zone_diameter.setter
    def optic_zone_diameter(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def pupil_cu(self) -> float:
        ...
    @pupil_cu.setter
    def pupil_cu(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def pupil_cv(self) -> float:
        ...
    @pupil_cv.setter
    def pupil_cv(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def pupil_diameter(self) -> float:
        ...
    @pupil_diameter.setter
    def pupil_diameter(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def tilt_u(self) -> float:
        ...
    @tilt_u.setter
    def tilt_u(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def tilt_v(self) -> float:
        ...
    @tilt_v.setter
    def tilt_v(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
class SurfaceKind:
    """Members:
    
    plane
    
    conic
    
    asphere
    """

    __members__: typing.ClassVar[dict[str, SurfaceKind]]
    asphere: typing.ClassVar[SurfaceKind]
    conic: typing.ClassVar[SurfaceKind]
    plane: typing.ClassVar[SurfaceKind]
    @typing.overload
    def __eq__(self, other: SurfaceKind) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: SurfaceKind) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class RaySurface:
    """One placed surface (mm): kind, curvature c, conic k, a4..a10, origin, rot (row-major 3x3, rows = local axes), annular aperture, optional hole wall, indices, reflect.
    """

    kind: SurfaceKind
    reflect: bool
    def __init__(self) -> None:
        ...
    @property
    def a10(self) -> float:
        ...
    @a10.setter
    def a10(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def a4(self) -> float:
        ...
    @a4.setter
    def a4(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def a6(self) -> float:
        ...
    @a6.setter
    def a6(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def a8(self) -> float:
        ...
    @a8.setter
    def a8(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def c(self) -> float:
        ...
    @c.setter
    def c(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def k(self) -> float:
        ...
    @k.setter
    def k(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def n1(self) -> float:
        ...
    @n1.setter
    def n1(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def n2(self) -> float:
        ...
    @n2.setter
    def n2(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def origin(self) -> typing.Annotated[list[float], "FixedSize(3)"]:
        ...
    @origin.setter
    def origin(self, arg1: typing.Annotated[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], "FixedSize(3)"]) -> None:
        ...
    @property
    def r_inner(self) -> float:
        ...
    @r_inner.setter
    def r_inner(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def r_outer(self) -> float:
        ...
    @r_outer.setter
    def r_outer(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def rot(self) -> typing.Annotated[list[float], "FixedSize(9)"]:
        ...
    @rot.setter
    def rot(self, arg1: typing.Annotated[collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], "FixedSize(9)"]) -> None:
        ...
    @property
    def wall_radius(self) -> float:
        ...
    @wall_radius.setter
    def wall_radius(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def wall_side(self) -> int:
        ...
    @wall_side.setter
    def wall_side(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class TraceOptions:
    """Switches of the tracer: apertures, Fresnel weights, optical path.
    """

    apertures: bool
    fresnel: bool
    opl: bool
    def __init__(self) -> None:
        ...
    @property
    def max_newton(self) -> int:
        ...
    @max_newton.setter
    def max_newton(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def newton_tol(self) -> float:
        ...
    @newton_tol.setter
    def newton_tol(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
def build_pupil(params: PupilParams, n: typing.SupportsInt | typing.SupportsIndex, du: typing.SupportsFloat | typing.SupportsIndex, wavelength: typing.SupportsFloat | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.complex128]:
    """Complex pupil A exp(2 pi i W / lambda) on an n x n grid of pitch du (m); rows follow v, columns u.
    """
def convolve_linear(a: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], k: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], r0: typing.SupportsInt | typing.SupportsIndex, c0: typing.SupportsInt | typing.SupportsIndex, n0: typing.SupportsInt | typing.SupportsIndex, n1: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """Window of the full zero-padded linear convolution a * k starting at (r0, c0).
    """
def disk_coverage(cx: typing.SupportsFloat | typing.SupportsIndex, cy: typing.SupportsFloat | typing.SupportsIndex, r: typing.SupportsFloat | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, du: typing.SupportsFloat | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """Exact area fraction of each cell of an n x n grid (pitch du, centred) inside a disk.
    """
def disk_coverage_filtered(cx: typing.SupportsFloat | typing.SupportsIndex, cy: typing.SupportsFloat | typing.SupportsIndex, r: typing.SupportsFloat | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, du: typing.SupportsFloat | typing.SupportsIndex, taps: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], sub: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """Coverage of a disk on cells sub times finer, filtered by symmetric taps along both axes onto the n x n grid.
    """
def export_wisdom() -> str:
    ...
def fast_length(n: typing.SupportsInt | typing.SupportsIndex) -> int:
    """Smallest 7-smooth integer >= n.
    """
def field_energy(a: typing.Annotated[numpy.typing.ArrayLike, numpy.complex128]) -> float:
    """
    Sum of |a|^2 over a complex array (eight lanes, then the lanes in order: the same bits on every machine).
    """
def fresnel(n1: typing.SupportsFloat | typing.SupportsIndex, n2: typing.SupportsFloat | typing.SupportsIndex, cos_i: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
    """Unpolarised Fresnel coefficients (rs, rp, ts, tp, R, T) from index n1 into n2 at incidence cosines cos_i.
    """
def import_wisdom(text: str) -> bool:
    ...
def num_threads() -> int:
    """Worker threads used by the kernels.
    """
def place_polyphase(s: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], ty: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tx: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], r0: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], c0: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], n0: typing.SupportsInt | typing.SupportsIndex, n1: typing.SupportsInt | typing.SupportsIndex, scale: typing.SupportsFloat | typing.SupportsIndex = 1.0, out: numpy.ndarray | None = None, row_sums: numpy.ndarray | None = None, single: bool = False) -> numpy.ndarray:
    """
    Polyphase placement: output (i, j) uses phase (i % q, j % q) taps and offsets r0[i % q] + i // q, c0[j % q] + j // q; times scale, written into out (a float64 (n0, n1) array) when given; row_sums (n0,) receives each row's sum (eight lanes, then the lanes in order), when given. single: samples, taps and filter sums in float (the scale and outputs in double).
    """
def place_separable(s: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], ty: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], tx: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], r0: typing.SupportsInt | typing.SupportsIndex, c0: typing.SupportsInt | typing.SupportsIndex, n0: typing.SupportsInt | typing.SupportsIndex, n1: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """out[i,j] = sum_ab ty[a] tx[b] s[r0+i+a, c0+j+b] (zero outside s).
    """
def psf_window(pupil: typing.Annotated[numpy.typing.ArrayLike, numpy.complex128], m: typing.SupportsInt | typing.SupportsIndex, s: typing.SupportsInt | typing.SupportsIndex, scale: typing.SupportsFloat | typing.SupportsIndex, single: bool = False) -> numpy.typing.NDArray[numpy.float64]:
    """scale * |FFT_m(pupil)|^2 on the centred s x s window of angular indices -s/2 .. s/2-1; single: the transforms in single precision.
    """
def set_num_threads(n: typing.SupportsInt | typing.SupportsIndex) -> None:
    """Set the worker threads (results do not depend on this number).
    """
def set_planner_measure(measure: bool) -> None:
    """Plan new FFTs with FFTW_MEASURE (True) or FFTW_ESTIMATE (False).
    """
def trace_rays(surfaces: collections.abc.Sequence[RaySurface], options: TraceOptions, x: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], y: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], z: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], l: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], m: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], n: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], opl: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], w: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], flags: typing.Annotated[numpy.typing.ArrayLike, numpy.uint32]) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.uint32]]:
    """Trace rays (structure of arrays, mm) through the surfaces in order; returns new (x, y, z, l, m, n, opl, w, flags). Rays with a non-zero flag are left untouched.
    """
def trace_rays_inplace(surfaces: collections.abc.Sequence[RaySurface], options: TraceOptions, x: numpy.typing.NDArray[numpy.float64], y: numpy.typing.NDArray[numpy.float64], z: numpy.typing.NDArray[numpy.float64], l: numpy.typing.NDArray[numpy.float64], m: numpy.typing.NDArray[numpy.float64], n: numpy.typing.NDArray[numpy.float64], opl: numpy.typing.NDArray[numpy.float64], w: numpy.typing.NDArray[numpy.float64], flags: numpy.typing.NDArray[numpy.uint32]) -> None:
    """Trace rays (C-contiguous float64 arrays and uint32 flags, mm) through the surfaces in order, overwriting them. Rays with a non-zero flag are left untouched.
    """
