"""The MTF figure of docs/imaging.md: engine against the analytic diffraction limit, the thin eye with a
0.36 mm clear hole, and the thick eye on axis and at 10 degrees.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from icl.imaging.mtf import analytic_mtf, cutoff_cpd, pupil_otf
from icl.optics.model import ICL, Pupil

WAVELENGTHS_NM = (450.0, 550.0, 650.0)
DIAMETER_MM = 3.2
THICK_FIELD_DEG = 10.0


def mtf_curves(freqs_cpd: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Radial (azimuthal-mean) MTF of each curve of the figure at ``freqs_cpd``.

    Keys: ``clear <nm> nm`` (clear 3.2 mm pupil, with ``analytic``, at ``freqs`` up to 1.05 fc),
    ``thin hole`` (thin eye, -8 D
    optic with a 0.36 mm clear hole, 550 nm), ``thick on axis`` and ``thick 10 deg`` (the example eye
    package's thick eye at 550 nm; at 10 deg the tangential and sagittal cuts too).
    """
    from icl._paths import cases_dir
    from icl.eye.package import load_package_dir
    from icl.imaging.thick import thick_pupil_at

    out: dict[str, dict[str, np.ndarray]] = {}
    clear = Pupil(DIAMETER_MM, 0.0, None)
    for lam in WAVELENGTHS_NM:
        # The default grid reaches 1.25 fc of each wavelength; beyond it the MTF is 0 anyway.
        fl = freqs_cpd[freqs_cpd <= 1.05 * cutoff_cpd(DIAMETER_MM, lam)]
        out[f"clear {lam:g} nm"] = {"freqs": fl, "mtf": pupil_otf(clear, lam).radial(fl),
                                    "analytic": analytic_mtf(fl / cutoff_cpd(DIAMETER_MM, lam))}
    hole = Pupil(DIAMETER_MM, 8.0, ICL(-8.0, hole_mm=0.36))
    f550 = freqs_cpd[freqs_cpd <= 1.05 * cutoff_cpd(DIAMETER_MM, 550.0)]
    out["thin hole"] = {"freqs": f550, "mtf": pupil_otf(hole, 550.0).radial(f550)}
    pkg = load_package_dir(cases_dir() / "examples" / "eye")
    pupil_at = thick_pupil_at(pkg.eye, pkg.implant, 550.0)
    out["thick on axis"] = {"freqs": f550, "mtf": pupil_otf(pupil_at(0.0, 0.0), 550.0).radial(f550)}
    off = pupil_otf(pupil_at(THICK_FIELD_DEG, 0.0), 550.0)
    tan, sag = off.tangential_sagittal(f550, THICK_FIELD_DEG, 0.0)
    out[f"thick {THICK_FIELD_DEG:g} deg"] = {"freqs": f550, "mtf": off.radial(f550), "tangential": tan,
                                              "sagittal": sag}
    return out


def mtf_figure(png_path: str | Path, n_freqs: int = 241) -> dict[str, float]:
    """Write the MTF figure; return the largest |engine - analytic| of each clear-pupil curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icl.io import atomic_write_bytes

    fmax = cutoff_cpd(DIAMETER_MM, min(WAVELENGTHS_NM)) * 1.05
    f = np.linspace(0.0, fmax, n_freqs)
    curves = mtf_curves(f)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11.5, 4.4))
    colours = {450.0: "tab:blue", 550.0: "tab:green", 650.0: "tab:red"}
    errors = {}
    for lam in WAVELENGTHS_NM:
        c = curves[f"clear {lam:g} nm"]
        errors[f"clear {lam:g} nm"] = float(np.max(np.abs(c["mtf"] - c["analytic"])))
        a1.plot(c["freqs"], c["analytic"], "-", color=colours[lam], lw=1.2,
                label=f"{lam:g} nm analytic (fc {cutoff_cpd(DIAMETER_MM, lam):.1f} c/deg)")
        a1.plot(c["freqs"][::8], c["mtf"][::8], "o", color=colours[lam], ms=3.5, mfc="none",
                label=f"{lam:g} nm engine (max |diff| {errors[f'clear {lam:g} nm']:.1e})")
    a1.set_title(f"Diffraction-limited MTF, clear {DIAMETER_MM:g} mm pupil", fontsize=10)
    f550 = curves["thin hole"]["freqs"]
    a2.plot(f550, analytic_mtf(f550 / cutoff_cpd(DIAMETER_MM, 550.0)), "k-", lw=1.0,
            label="diffraction limit")
    a2.plot(f550, curves["thin hole"]["mtf"], "-", color="tab:purple", lw=1.4,
            label="thin eye, -8 D optic, 0.36 mm clear hole")
    a2.plot(f550, curves["thick on axis"]["mtf"], "-", color="tab:orange", lw=1.4,
            label="thick eye on axis (radial mean)")
    t = curves[f"thick {THICK_FIELD_DEG:g} deg"]
    a2.plot(f550, t["tangential"], "--", color="tab:brown", lw=1.2,
            label=f"thick eye {THICK_FIELD_DEG:g} deg, tangential (plane retina)")
    a2.plot(f550, t["sagittal"], ":", color="tab:brown", lw=1.4,
            label=f"thick eye {THICK_FIELD_DEG:g} deg, sagittal (plane retina)")
    a2.set_title("550 nm, 3.2 mm pupil: thin eye with hole, thick eye", fontsize=10)
    for ax in (a1, a2):
        ax.set_xlabel("spatial frequency (cycles/deg)", fontsize=9)
        ax.set_ylabel("MTF", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(png_path, buf.getvalue())
    return errors
