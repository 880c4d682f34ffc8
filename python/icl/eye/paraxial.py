"""Paraxial properties of a centred eye: power, focal lengths, pupils (reduced ray-transfer matrices)."""

from __future__ import annotations

from dataclasses import dataclass

from icl import linalg
from icl.eye.model import Eye, Implant, index_after, paraxial_matrix, path_steps


@dataclass(frozen=True)
class Paraxial:
    """Gaussian constants of a centred system in air (mm and dioptres).

    Attributes
    ----------
    power_d : float
        Equivalent power (D).
    efl_mm : float
        Equivalent (object-space) focal length 1000 / power (mm).
    image_focal_mm : float
        Image-space focal length n' / power (mm).
    back_focal_z : float
        Axial position of the image focus (mm).
    entrance_pupil_z : float
        Axial position of the entrance pupil (image of the iris through the surfaces in front of it).
    entrance_pupil_mag : float
        Iris height per entrance-pupil height.
    exit_pupil_z : float
        Axial position of the exit pupil (image of the iris through the surfaces behind it).

    """

    power_d: float
    efl_mm: float
    image_focal_mm: float
    back_focal_z: float
    entrance_pupil_z: float
    entrance_pupil_mag: float
    exit_pupil_z: float


def paraxial(eye: Eye, implant: Implant | None = None, wavelength_nm: float = 550.0) -> Paraxial:
    """Paraxial constants of ``eye`` (with the centred ``implant`` lens path if given) at ``wavelength_nm``."""
    steps = path_steps(eye, implant, "lens" if implant is not None else "host", wavelength_nm)
    mat = paraxial_matrix(steps)
    (a, b), (c, d) = mat
    n_img = index_after(eye, wavelength_nm)
    power = -c  # per mm
    z_last = steps[-1].placement.z + steps[-1].surface.offset
    # Image focus: ray (y=1, u=0) reaches y=0 after distance -a n'/c from the last vertex.
    back_focal_z = z_last - a * n_img / c
    front = [s for s in steps if s.placement.z + s.surface.offset < eye.stop_z]
    rear = [s for s in steps if s.placement.z + s.surface.offset >= eye.stop_z]
    if front:
        mf = paraxial_matrix(front)
        zf = front[-1].placement.z + front[-1].surface.offset
        mf = linalg.matmul([[1.0, (eye.stop_z - zf) / front[-1].n2], [0.0, 1.0]], mf)
        ep_z = mf[0, 1] / mf[0, 0]  # object-side plane (air) imaged onto the iris
        ep_mag = mf[0, 0]
    else:
        ep_z, ep_mag = eye.stop_z, 1.0
    if rear:
        mr = paraxial_matrix(rear)
        z0 = rear[0].placement.z + rear[0].surface.offset
        mr = linalg.matmul(mr, [[1.0, (z0 - eye.stop_z) / rear[0].n1], [0.0, 1.0]])
        zl = rear[-1].placement.z + rear[-1].surface.offset
        xp_z = zl - mr[0, 1] * n_img / mr[1, 1]  # where the chief ray (y=0 at the iris) crosses the axis
    else:
        xp_z = eye.stop_z
    return Paraxial(power * 1e3, 1.0 / power, n_img / power, back_focal_z, ep_z, ep_mag, xp_z)


def retina_for_excess(eye: Eye, excess_d: float, wavelength_nm: float = 550.0) -> float:
    """Retina position making ``eye`` myopic by ``excess_d`` (D, vergence at its entrance pupil): the
    paraxial image of the far point ``1000 / excess_d`` mm in front of the entrance pupil.
    """
    par = paraxial(eye, None, wavelength_nm)
    if excess_d == 0:
        return par.back_focal_z
    steps = path_steps(eye, None, "host", wavelength_nm)
    z_obj = par.entrance_pupil_z - 1000.0 / excess_d
    mat = linalg.matmul(paraxial_matrix(steps), [[1.0, steps[0].placement.z + steps[0].surface.offset - z_obj],
                                                 [0.0, 1.0]])
    z_last = steps[-1].placement.z + steps[-1].surface.offset
    return z_last - mat[0, 1] * index_after(eye, wavelength_nm) / mat[1, 1]


def correcting_icl(eye: Eye, wavelength_nm: float = 550.0, **kw) -> Implant:
    """Synthetic ICL (:func:`icl.eye.model.synthetic_icl`) whose power focuses a distant object on the retina."""
    from scipy.optimize import brentq

    from icl.eye.model import synthetic_icl

    def miss(p: float) -> float:
        return paraxial(eye, synthetic_icl(p, wavelength_nm=wavelength_nm, **kw), wavelength_nm).back_focal_z \
            - eye.retina_z

    power = brentq(miss, -40.0, 20.0, xtol=1e-12)
    return synthetic_icl(power, wavelength_nm=wavelength_nm, **kw)
