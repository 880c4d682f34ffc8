"""Multi-variant scene runs: linear retinal images, fixed-mapping previews and a side-by-side figure.

A scene spec is the scene JSON of docs/formats.md (``detector`` and ``sources``) plus ``variants``
(name -> pupil JSON), optional ``display`` (:class:`~icl.imaging.display.DisplayMapping` fields),
``flux_unit`` (what one unit of source flux is) and free-text ``notes`` and ``labels``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icl.errors import InputError
from icl.imaging.display import DisplayMapping, spectrum_rgb, to_rgb8
from icl.io import atomic_write_bytes, load_json, write_json, write_manifest, write_npz
from icl.optics.model import Pupil, Scene, _check_keys
from icl.optics.render import render

SPEC_KEYS = {"detector", "sources", "variants", "display", "flux_unit", "notes", "labels", "order", "frame"}


def load_spec(path: str | Path) -> tuple[dict[str, Scene], DisplayMapping, dict]:
    """Parse a scene spec into one :class:`Scene` per variant, the display mapping and the metadata."""
    file = str(path)
    d = _check_keys(load_json(path), SPEC_KEYS, "", file)
    variants = d.get("variants")
    if not isinstance(variants, dict) or not variants:
        raise InputError("expected a non-empty object of name -> pupil", file, "variants")
    base = {k: d[k] for k in ("detector", "sources", "frame") if k in d}
    scenes = {}
    for name, pupil in variants.items():
        if not name or any(c in name for c in "/\\|\0") or name.startswith("."):
            raise InputError("variant names must be plain folder names", file, f"variants.{name}")
        scene = Scene.from_dict(base, file=file)
        scenes[name] = Scene(scene.sources, Pupil.from_dict(pupil, f"variants.{name}", file), scene.detector,
                             scene.frame)
    disp = d.get("display", {})
    _check_keys(disp, {"white", "knee"}, "display", file)
    try:
        mapping = DisplayMapping(**{k: float(v) for k, v in disp.items()})
    except (TypeError, ValueError):
        raise InputError("white and knee must be numbers", file, "display") from None
    if not (mapping.white > 0 and mapping.knee > 0):
        raise InputError("white and knee must be > 0", file, "display")
    meta = {k: d[k] for k in ("flux_unit", "notes", "labels") if k in d}
    return scenes, mapping, meta


def _png(rgb: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def run_scene(spec_path: str | Path, out_dir: str | Path,
              progress: Callable[[str], None] | None = None) -> dict[str, dict]:
    """Render every variant of a spec into ``out_dir/<variant>/`` and write a manifest.

    Each variant folder holds ``retinal_linear.npz`` (``components``, ``scene``, ``x_arcmin``,
    ``y_arcmin``, ``angular_pixel_arcsec``; linear, in units of the source flux), ``preview.png``
    (the fixed display mapping) and ``metrics.json`` (units, exposure statement, energy ledger).
    """
    scenes, mapping, meta = load_spec(spec_path)
    out = Path(out_dir)
    summary = {}
    for name, scene in scenes.items():
        if progress is not None:
            progress(name)
        res = render(scene)
        colours = np.array([spectrum_rgb(s.spectrum) for s in scene.sources])
        vdir = out / name
        write_npz(vdir / "retinal_linear.npz", components=res.components, scene=res.scene, x_arcmin=res.x_arcmin,
                  y_arcmin=res.y_arcmin, angular_pixel_arcsec=np.float64(res.angular_pixel_arcsec))
        atomic_write_bytes(vdir / "preview.png", _png(to_rgb8(res.components, colours, res.angular_pixel_arcsec, mapping)))
        density = res.scene / (res.angular_pixel_arcsec / 60.0) ** 2
        metrics = {
            "variant": name, "frame": res.frame, "pupil": scene.pupil.to_dict(), "detector": {"n": scene.detector.n,
                                                                          "pitch_arcsec": scene.detector.pitch_arcsec},
            "units": {"retinal_linear.npz": "pixel flux (intensity integrated over the pixel), linear, in units of "
                      "the source flux" + (f" ({meta['flux_unit']})" if "flux_unit" in meta else ""),
                      "axes": "x_arcmin, y_arcmin: pixel centres; row grows with +y"},
            "exposure": {"display_mapping": mapping.to_dict(), "same_for_all_variants": True,
                         "max_flux_density_per_arcmin2": float(density.max()),
                         "fraction_of_pixels_at_full_scale": float(np.mean(density >= mapping.white))},
            "ledger": res.ledger,
            "sources": [{"id": s.id, "recorded": led["recorded"], "source_flux": led["source_flux"]}
                        for s, led in zip(scene.sources, res.ledgers)],
            "sampling": res.sampling, **meta}
        write_json(vdir / "metrics.json", metrics)
        summary[name] = metrics
    write_manifest(out, {"spec": Path(spec_path).name, "variants": list(scenes)})
    return summary


def side_by_side(out_dir: str | Path, variants: list[str], png_path: str | Path, titles: dict[str, str] | None = None,
                 columns: int = 3) -> None:
    """Tile the variants' previews (already in the one fixed mapping) into one labelled PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    out = Path(out_dir)
    rows = -(-len(variants) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 4.5 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, name in zip(axes.ravel(), variants):
        img = np.asarray(Image.open(out / name / "preview.png"))
        x = load_json(out / name / "metrics.json")
        half = x["detector"]["n"] * x["detector"]["pitch_arcsec"] / 120.0
        ax.imshow(img, extent=(-half, half, -half, half), interpolation="nearest")
        ax.set_title((titles or {}).get(name, name), fontsize=10)
        ax.axis("on")
        ax.tick_params(labelsize=7)
        ax.set_xlabel("x (arcmin)", fontsize=8)
        ax.set_ylabel("y (arcmin)", fontsize=8)
    mapping = load_json(out / variants[0] / "metrics.json")["exposure"]["display_mapping"]
    fig.suptitle("Synthetic night road, linear retinal image through one fixed display mapping "
                 f"(white {mapping['white']:g}, knee {mapping['knee']:g} flux/arcmin$^2$, log tone curve)", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(png_path, buf.getvalue())


def figure_order(spec: dict[str, Any], names: list[str]) -> list[str]:
    """Variants in the spec's ``order`` (JSON objects are unordered), then any others by name."""
    order = [n for n in spec.get("order", []) if n in names]
    return order + [n for n in names if n not in order]


def spec_labels(spec: dict[str, Any]) -> dict[str, str]:
    """Variant titles from the spec's ``labels`` object (falls back to the variant name)."""
    return {k: v for k, v in spec.get("labels", {}).items() if isinstance(v, str)}
