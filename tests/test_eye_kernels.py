"""The C++ ray kernels against plain NumPy twins (1e-10 relative) and against optical identities."""

import math

import numpy as np
import pytest
from icl._core_loader import core
from icl.eye.trace import CLIPPED, MISSED, TIR, WALL, Placement, Rays, Step, Surface, TraceOptions, trace

RTOL = 1e-10  # the twin repeats the same arithmetic in a different order: rounding only


def twin_step(s: Surface, pl: Placement, n1, n2, rays: Rays, opts=TraceOptions()):
    """Obviously-correct NumPy version of one surface (same definitions as cpp/raytrace.cpp)."""
    rot = pl.matrix()
    origin = pl.pivot + rot[:, 2] * s.offset
    p = np.stack([rays.x, rays.y, rays.z]) - origin[:, None]
    d = np.stack([rays.l, rays.m, rays.n])
    x, y, z = rot.T @ p
    l, m, n = rot.T @ d
    c, k = s.curvature, s.conic

    def sag(r2):
        q = 1 - (1 + k) * c * c * r2
        zz = c * r2 / (1 + np.sqrt(q))
        dz = 0.5 * c / np.sqrt(q)
        a4, a6, a8, a10 = s.asphere
        zz = zz + r2**2 * (a4 + r2 * (a6 + r2 * (a8 + r2 * a10)))
        dz = dz + r2 * (2 * a4 + r2 * (3 * a6 + r2 * (4 * a8 + r2 * 5 * a10)))
        return zz, dz

    if c == 0:
        t = -z / n
    else:
        # Both roots; the first ahead of the ray on the sheet through the vertex (1 - (1 + k) c z >= 0).
        ck = c * (1 + k)
        a = c * (l * l + m * m) + ck * n * n
        bh = c * (x * l + y * m) + ck * z * n - n
        cc = c * (x * x + y * y) + ck * z * z - 2 * z
        disc = bh * bh - a * cc
        q = -bh + np.copysign(np.sqrt(disc), -bh)
        with np.errstate(divide="ignore", invalid="ignore"):
            roots = np.stack([cc / q, q / a])  # the two roots, free of cancellation
        good = np.isfinite(roots) & (roots >= 0) & (1 - ck * (z + roots * n) >= 0)
        t = np.where(good, roots, np.inf).min(axis=0)
    if any(s.asphere):
        for _ in range(40):
            hx, hy = x + t * l, y + t * m
            zs, dz = sag(hx * hx + hy * hy)
            dt = (z + t * n - zs) / (n - 2 * dz * (hx * l + hy * m))
            t = t - dt
            if np.all(np.abs(dt) <= 1e-13 * (1 + np.abs(t))):
                break
    hx, hy, hz = x + t * l, y + t * m, z + t * n
    r2 = hx * hx + hy * hy
    dz = sag(r2)[1] if c != 0 or any(s.asphere) else 0 * r2
    nv = np.stack([-2 * dz * hx, -2 * dz * hy, np.ones_like(hx)])
    nv = nv / np.linalg.norm(nv, axis=0)
    ci = np.sum(np.stack([l, m, n]) * nv, axis=0)
    nv = np.where(ci < 0, -nv, nv)
    ci = np.abs(ci)
    mu = n1 / n2
    ct = np.sqrt(1 - mu * mu * (1 - ci * ci))
    rs = (n1 * ci - n2 * ct) / (n1 * ci + n2 * ct)
    rp = (n2 * ci - n1 * ct) / (n2 * ci + n1 * ct)
    if s.reflect:
        dn = np.stack([l, m, n]) - 2 * ci * nv
        coef = 0.5 * (rs**2 + rp**2)
    else:
        dn = mu * np.stack([l, m, n]) + (ct - mu * ci) * nv
        coef = 1 - 0.5 * (rs**2 + rp**2)
    pg = rot @ np.stack([hx, hy, hz]) + origin[:, None]
    dg = rot @ dn
    return pg, dg, rays.opl + n1 * t, rays.w * coef, r2


def random_rays(rng, count, z0=-1.0, spread=1.5, tilt=0.1):
    x, y = rng.uniform(-spread, spread, (2, count))
    l, m = rng.uniform(-tilt, tilt, (2, count))
    return Rays.start(x, y, np.full(count, z0), l, m, np.ones(count))


SURFACES = [
    Surface("plane"),
    Surface("sphere", 7.72),
    Surface("concave", -6.0),
    Surface("conic", 7.72, -0.26),
    Surface("oblate", 10.2, 2.5),
    Surface("asphere", 6.0, -1.0, (1e-3, -2e-5, 3e-7, -1e-9)),
]
PLACEMENTS = [Placement(), Placement(0.3, -0.2, 0.5, 2.0, -3.0, 17.0)]


@pytest.mark.parametrize("surf", SURFACES, ids=lambda s: s.name)
@pytest.mark.parametrize("pl", PLACEMENTS, ids=["centred", "placed"])
@pytest.mark.parametrize("reflect", [False, True], ids=["refract", "reflect"])
def test_step_matches_numpy_twin(surf, pl, reflect):
    rng = np.random.default_rng(20261027)
    rays = random_rays(rng, 2000)
    s = Surface(surf.name, surf.radius, surf.conic, surf.asphere, offset=0.2, reflect=reflect)
    out = trace([Step(s, pl, 1.0, 1.376)], rays)
    assert np.all(out.flags == 0)
    pg, dg, opl, w, _ = twin_step(s, pl, 1.0, 1.376, rays)
    for got, want in zip((out.x, out.y, out.z, out.l, out.m, out.n), (*pg, *dg)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(out.opl, opl, rtol=RTOL)
    np.testing.assert_allclose(out.w, w, rtol=RTOL)
    # Snell's law holds on the normal's tangent plane and the direction stays unit.
    np.testing.assert_allclose(out.l**2 + out.m**2 + out.n**2, 1.0, rtol=1e-14)


def test_fresnel_matches_twin_and_conserves_energy():
    ci = np.linspace(0.0, 1.0, 1001)[1:]
    for n1, n2 in ((1.0, 1.376), (1.45, 1.3388), (1.3388, 1.45)):
        rs, rp, ts, tp, r, t = core.fresnel(n1, n2, ci)
        mu = n1 / n2
        st2 = mu * mu * (1 - ci * ci)
        ok = st2 <= 1
        ct = np.sqrt(np.where(ok, 1 - st2, 0.0))
        np.testing.assert_allclose(rs[ok], ((n1 * ci - n2 * ct) / (n1 * ci + n2 * ct))[ok], rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(tp[ok], (2 * n1 * ci / (n2 * ci + n1 * ct))[ok], rtol=RTOL)
        # R + T = 1 with T computed independently from the transmitted amplitudes (beam-area factor).
        np.testing.assert_allclose((r + t)[ok], 1.0, rtol=0, atol=1e-14)
        assert np.all(r[~ok] == 1.0) and np.all(t[~ok] == 0.0)
        # Normal incidence: ((n1 - n2) / (n1 + n2))^2.
        assert r[-1] == pytest.approx(((n1 - n2) / (n1 + n2)) ** 2, rel=1e-14)


def test_flags_tir_aperture_wall():
    rays = Rays.start([0.0, 0.5, 1.0, 2.0], 0.0, -1.0, [0.0, 0.0, 0.9, 0.0], 0.0, [1.0, 1.0, 0.3, 1.0])
    # Dense to rare at a steep angle: total internal reflection for the third ray only.
    out = trace([Step(Surface("p"), Placement(), 1.45, 1.0)], rays)
    assert list(out.flags) == [0, 0, TIR, 0]
    ann = Surface("ann", aperture=(0.2, 1.5))
    assert list(trace([Step(ann, Placement(), 1.0, 1.0)], rays).flags) == [CLIPPED, 0, CLIPPED, CLIPPED]
    # A wall of radius 0.3 (stay outside): the oblique ray from x=1 crosses the axis region.
    walled = Surface("w", wall=(0.3, -1))
    got = trace([Step(walled, Placement(), 1.0, 1.0)], rays, TraceOptions()).flags
    assert got[0] == WALL and got[1] == 0 and got[3] == 0
    assert np.all(trace([Step(walled, Placement(), 1.0, 1.0)], rays, TraceOptions(apertures=False)).flags == 0)


def _one_two_in_place(steps, rays):
    """The batch traced on one thread, on two, and on two in place (into a copy)."""
    old = core.num_threads()
    try:
        core.set_num_threads(1)
        a = trace(steps, rays)
        core.set_num_threads(2)
        return a, trace(steps, rays), trace(steps, rays.copy(), in_place=True)
    finally:
        core.set_num_threads(old)


def test_threads_do_not_change_results():
    rng = np.random.default_rng(7)
    rays = random_rays(rng, 50_000)
    steps = [Step(s, Placement(), 1.0, 1.4) for s in SURFACES[3:4]] + [Step(SURFACES[5], Placement(z=0.5), 1.4, 1.33)]
    a, b, _ = _one_two_in_place(steps, rays)
    for x, y in zip(a.arrays(), b.arrays()):
        assert np.array_equal(x, y)


def test_asphere_newton_guard_flags_a_miss():
    # Beyond r = R the base sphere has no sag: Newton must stop and flag the ray instead of looping.
    s = Surface("bad", 2.0, 0.0, (1e-4, 0.0, 0.0, 0.0))
    rays = Rays.start([0.1, 3.0], 0.0, -1.0, 0.0, 0.0, 1.0)
    out = trace([Step(s, Placement(), 1.0, 1.5)], rays)
    assert out.flags[0] == 0 and out.flags[1] != 0
    assert math.isfinite(out.x[1])


def _sphere_longdouble(radius, offset, n1, n2, reflect, rays):
    """Extended-precision twin of one centred sphere (hit, normal, Snell or mirror, Fresnel weight)."""
    ld = np.longdouble
    x, y, z, l, m, n = (a.astype(ld) for a in (rays.x, rays.y, rays.z, rays.l, rays.m, rays.n))
    c = ld(1) / ld(radius)
    z = z - ld(offset)
    a = c * (l * l + m * m + n * n)
    bh = c * (x * l + y * m + z * n) - n
    cc = c * (x * x + y * y + z * z) - 2 * z
    q = -bh + np.copysign(np.sqrt(bh * bh - a * cc), -bh)
    t = np.minimum(cc / q, q / a)  # both roots ahead: the nearer, on the vertex sheet for these rays
    hx, hy, hz = x + t * l, y + t * m, z + t * n
    nv = np.stack([-c * hx, -c * hy, 1 - c * hz])
    nv = nv / np.sqrt(np.sum(nv * nv, axis=0))
    ci = l * nv[0] + m * nv[1] + n * nv[2]
    nv, ci = np.where(ci < 0, -nv, nv), np.abs(ci)
    mu = ld(n1) / ld(n2)
    ct = np.sqrt(1 - mu * mu * (1 - ci * ci))
    rs = (n1 * ci - n2 * ct) / (n1 * ci + n2 * ct)
    rp = (n2 * ci - n1 * ct) / (n2 * ci + n1 * ct)
    r = (rs * rs + rp * rp) / 2
    d = np.stack([l, m, n])
    if reflect:
        return d - 2 * ci * nv, r
    return mu * d + (ct - mu * ci) * nv, 1 - r


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18, reason="needs an extended-precision long double")
@pytest.mark.parametrize("reflect", [False, True], ids=["refract", "reflect"])
def test_grazing_incidence_accuracy(reflect):
    # Axial rays meeting a 1.2 mm sphere ever closer to its rim, q = 1 - (c r)^2 from 0.5 down to 1e-4: the
    # geometry there is ill-conditioned for any double-precision formula (the discriminant and q cancel), and
    # the error of the direction and weight grows as 1 / q, to 1e-15 / q at most.
    radius, offset = 1.2, 0.2
    q = np.geomspace(1e-4, 0.5, 400)
    r = radius * np.sqrt(1 - q)
    phi = np.linspace(0, 2 * np.pi, r.size, endpoint=False)
    rays = Rays.start(r * np.cos(phi), r * np.sin(phi), -1.0, 0.0, 0.0, 1.0)
    s = Surface("small", radius, offset=offset, reflect=reflect)
    out = trace([Step(s, Placement(), 1.0, 1.376)], rays)
    assert np.all(out.flags == 0)
    d, w = _sphere_longdouble(radius, offset, 1.0, 1.376, reflect, rays)
    for got, want in zip((out.l, out.m, out.n, out.w), (*d, w)):
        assert np.all(np.abs(got - want.astype(float)) <= 1e-15 / q)


def test_rotated_and_unrotated_surfaces_agree():
    # A surface turned by exactly 360 degrees takes the rotated path (sin(2 pi) != 0), the unplaced one the
    # translation-only path: both must give the same rays to rounding, flags identical.
    rng = np.random.default_rng(11)
    rays = random_rays(rng, 3000, spread=2.5, tilt=0.3)
    rays.flags[::13] = CLIPPED
    for surf in (SURFACES[0], SURFACES[3], SURFACES[2]):
        for reflect in (False, True):
            s = Surface(surf.name, surf.radius, surf.conic, surf.asphere, offset=0.3, aperture=(0.2, 2.0),
                        reflect=reflect)
            plain = trace([Step(s, Placement(z=0.1), 1.0, 1.45)], rays)
            turned = trace([Step(s, Placement(z=0.1, rotation_deg=360.0), 1.0, 1.45)], rays)
            assert np.array_equal(plain.flags, turned.flags)
            for a, b in zip(plain.arrays()[:8], turned.arrays()[:8]):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def test_mirror_under_total_reflection_keeps_the_weight():
    # Dense to rare: the steep ray is totally reflected (weight unchanged), the normal one takes R.
    rays = Rays.start([0.0, 0.5], 0.0, -1.0, [0.9, 0.0], 0.0, [0.3, 1.0], w=[0.7, 0.7])
    s = Surface("mirror", reflect=True)
    out = trace([Step(s, Placement(), 1.45, 1.0)], rays)
    assert list(out.flags) == [0, 0]
    assert out.w[0] == 0.7
    assert out.w[1] == pytest.approx(0.7 * ((1.45 - 1.0) / 2.45) ** 2, rel=1e-14)
    np.testing.assert_allclose([out.l[0], out.n[0]], [rays.l[0], -rays.n[0]], rtol=1e-15)


def test_threads_and_work_items_do_not_change_results():
    # Items are handed to whichever thread is free: results must not depend on it, for every pass (rotated,
    # walled, asphere, mirror), a count that is no multiple of the block and rays stopped before the trace.
    rng = np.random.default_rng(3)
    rays = random_rays(rng, 100_003, spread=2.0, tilt=0.2)
    rays.flags[rng.random(rays.x.size) < 0.1] = CLIPPED
    pl = Placement(0.1, -0.05, 0.0, 1.5, -0.5, 20.0)
    steps = [Step(SURFACES[3], pl, 1.0, 1.38),
             Step(Surface("hole", 10.0, wall=(0.18, -1), offset=0.4), pl, 1.38, 1.45),
             Step(SURFACES[5].flipped(offset=0.9), Placement(z=0.1), 1.45, 1.33),
             Step(Surface("back", -8.0, offset=3.0, reflect=True), Placement(), 1.33, 1.0)]
    a, b, c = _one_two_in_place(steps, rays)
    assert np.count_nonzero(a.flags == 0) > 1000 and np.count_nonzero(a.flags == WALL) > 100
    for x, y, z in zip(a.arrays(), b.arrays(), c.arrays()):
        assert np.array_equal(x, y, equal_nan=True) and np.array_equal(x, z, equal_nan=True)


@pytest.mark.parametrize("surf", SURFACES[1:5], ids=lambda s: s.name)
def test_conic_root_choice_from_any_start(surf):
    # Rays starting in front of, inside and beyond the conic, going either way: the nearer qualifying root
    # (ahead of the ray, on the vertex sheet) whichever of the two it is, and `missed` when neither qualifies;
    # most of these rays take the kernel's second-root loop, which rays from the front never reach.
    rng = np.random.default_rng(29)
    count = 4000
    x, y = rng.uniform(-3, 3, (2, count))
    z = rng.uniform(-2.0, 12.0, count)
    l, m = rng.uniform(-0.4, 0.4, (2, count))
    n = rng.choice([-1.0, 1.0], count)
    rays = Rays.start(x, y, z, l, m, n)
    s = Surface(surf.name, surf.radius, surf.conic, offset=0.2)
    out = trace([Step(s, Placement(), 1.0, 1.376)], rays, TraceOptions(fresnel=False))
    with np.errstate(all="ignore"):
        pg, dg, opl, _, _ = twin_step(s, Placement(), 1.0, 1.376, rays)
    hit = np.isfinite(opl)
    assert 0.2 < hit.mean() < 0.9
    assert np.array_equal(out.flags == 0, hit) and np.all(out.flags[~hit] == MISSED)
    np.testing.assert_allclose(out.opl[hit], opl[hit], rtol=1e-12, atol=1e-12)
    for got, want in zip((out.x, out.y, out.z), pg):
        np.testing.assert_allclose(got[hit], want[hit], rtol=1e-12, atol=1e-12)
