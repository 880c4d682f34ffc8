"""Where a source's pattern lands: its position plus the prism of the decentred optic (scene JSON only).

Plain arithmetic on the public scene, shared by the test-variant placement rule, the baselines and the
dev-warp attack; it knows nothing of the far field.
"""

from __future__ import annotations

import math

ARCMIN_RAD = math.pi / 10800.0


def prism_arcmin(scene: dict) -> tuple[float, float]:
    """Whole-pattern shift by the decentred optic (arcmin): ``K c + C (n . c) n``.

    The decentred sphere ``-(K/2)|u - c|^2`` holds the tilt ``K c . u`` and the decentred cylinder
    ``-(C/2)(n . (u - c))^2``, ``n = (-sin alpha, cos alpha)``, the tilt ``C (n . c) n . u``; a tilt
    ``a . u`` moves the pattern to ``theta = +a`` (the public README's sign).
    """
    icl = scene["pupil"].get("icl") if scene.get("pupil") else None
    if not icl:
        return (0.0, 0.0)
    cu, cv = (c * 1e-3 for c in icl.get("decentre_mm", (0.0, 0.0)))
    k, cyl = icl.get("power_d", -8.0), icl.get("cylinder_d", 0.0)
    alpha = math.radians(icl.get("axis_deg", 0.0))
    nu, nv = -math.sin(alpha), math.cos(alpha)
    along = cyl * (nu * cu + nv * cv)
    return ((k * cu + along * nu) / ARCMIN_RAD, (k * cv + along * nv) / ARCMIN_RAD)


def wicks_arcmin(scene: dict) -> list[tuple[float, float]]:
    """Geometric wick of every source: its position plus :func:`prism_arcmin`."""
    px, py = prism_arcmin(scene)
    return [(s.get("x_arcmin", 0.0) + px, s.get("y_arcmin", 0.0) + py) for s in scene["sources"]]
