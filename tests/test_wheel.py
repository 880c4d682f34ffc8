"""The wheel installs into a clean environment and renders there with its own bundled FFTW (slow).

Builds the wheel the way ``make wheel`` does (``python -m build --wheel``, then ``auditwheel repair``), but
into a temporary folder with a private CMake build folder, so neither the repository's ``wheelhouse/`` nor
the editable build is touched. A fresh venv (no build tools, only ``pip install <wheel>``) then runs
``icl render`` on the packaged example scene from a folder outside the repository.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from icl.io import load_json, load_npz
from icl.optics import Scene, render

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


@pytest.mark.slow
def test_wheel_renders_in_a_clean_venv_with_bundled_fftw(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    dist, house = tmp_path / "dist", tmp_path / "wheelhouse"
    # flock: the same lock `make dev` takes, so a concurrent build of the compiler-heavy part waits its turn.
    _run(["flock", "/tmp/icl-build.lock", sys.executable, "-m", "build", "--wheel", "--no-isolation",
          "--outdir", str(dist), f"-Cbuild-dir={tmp_path / 'build'}", str(ROOT)], env=env)
    _run([sys.executable, "-m", "auditwheel", "repair", *map(str, dist.glob("*.whl")), "--wheel-dir",
          str(house)], env=env)
    (wheel,) = house.glob("icl_bench-*manylinux*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)])
    # Nothing to build with in there: the wheel alone made it work.
    freeze = _run([str(py), "-m", "pip", "freeze"])
    assert not re.search(r"(?im)^(scikit-build-core|pybind11|cmake|ninja)==", freeze), freeze

    work = tmp_path / "elsewhere"
    work.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    site = Path(_run([str(py), "-c", "import icl, os; print(os.path.dirname(icl.__file__))"], cwd=work,
                     env=clean_env).strip())
    assert venv in site.parents  # the installed copy, not the repository's editable one
    scene_file = site / "cases" / "examples" / "scene.json"
    out = _run([str(venv / "bin" / "icl"), "render", str(scene_file), "-o", "out.npz"], cwd=work,
               env=clean_env)
    assert "wrote out.npz" in out

    arrays = load_npz(work / "out.npz", required=("components", "scene", "angular_pixel_arcsec", "x_arcmin",
                                                   "y_arcmin"))
    assert arrays["components"].shape == (2, 512, 512) and float(arrays["angular_pixel_arcsec"]) == 4.0
    np.testing.assert_array_equal(arrays["scene"], arrays["components"].sum(axis=0))
    # Same physics as the development install: FFTs may plan differently, so agree to rounding only.
    want = render(Scene.from_dict(load_json(ROOT / "cases" / "examples" / "scene.json")))
    np.testing.assert_allclose(arrays["components"], want.components, rtol=0,
                               atol=1e-12 * float(want.components.max()))
    ledger = load_json(work / "out.npz.ledger.json")
    assert set(ledger["sources"]) == {"L1", "L2"}
    for k, v in want.ledger.items():
        assert ledger["total"][k] == pytest.approx(v, rel=1e-9, abs=1e-15), k

    (core,) = (site).glob("_core*.so")
    ldd = _run(["ldd", str(core)])
    fftw = [line.strip() for line in ldd.splitlines() if "libfftw3" in line]
    assert any("libfftw3-" in f for f in fftw) and any("libfftw3_threads" in f for f in fftw), ldd
    libs = site.parent / "icl_bench.libs"
    for line in fftw:
        target = line.split("=>")[1].split("(")[0].strip()
        assert Path(target).resolve().parent == libs.resolve(), line
    print(json.dumps({"wheel": wheel.name, "fftw": fftw}, indent=1))
    shutil.rmtree(tmp_path / "build", ignore_errors=True)
