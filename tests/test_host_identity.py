"""Reference arithmetic gives the same bits whatever BLAS kernel, thread count or NumPy SIMD level runs it.

Each variant is a subprocess with its own environment (this process's variables are left as they are).
The whole-release check (every file of a halo, pro and forensics release) is the slow test in
tests/test_release_identity.py and bench/host_identity.py.
"""

import json
import os
import subprocess
import sys

import pytest

# Every variant this CPU can run: OpenBLAS kernels, one thread, NumPy without its AVX-512 paths and
# without its AVX2/FMA paths (variants that this CPU lacks change nothing and pass).
VARIANTS = {
    "default": {},
    "haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "sandybridge": {"OPENBLAS_CORETYPE": "SandyBridge"},
    "prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "one_thread": {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "ICL_NUM_THREADS": "1"},
    "numpy_no_avx512": {"NPY_DISABLE_CPU_FEATURES": "AVX512_ICL X86_V4"},
    "numpy_baseline_simd": {"NPY_DISABLE_CPU_FEATURES": "X86_V3"},
}
SCRUBBED = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "ICL_NUM_THREADS",
            "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_L2_SIZE")

# Values of reference arithmetic that went through BLAS or LAPACK before (each differed between kernels).
BATTERY = r"""
import hashlib, json, math
import numpy as np
from icl.eye.package import example_package
from icl.halo.ring import _circle_fit, _poly_peak
from icl.optics.sampling import edge_filter, pixel_taps
from icl.pro import references as ref
from icl.pro.generate import base_eye, family, fit_icl
from icl.keys import ReleaseKey
from icl import libm

def h(x):
    return hashlib.sha256(np.ascontiguousarray(np.asarray(x, dtype=float)).tobytes()).hexdigest()[:16]

out = {}
pkg = example_package()
out["eye_package"] = h([pkg["eye"]["retina"]["vertex_z"]["value"], pkg["implant"]["front"]["radius"]["value"]])
key = ReleaseKey.from_seed(11)
e = base_eye("test-3", key, False)
out["pro_base_eye"] = h([e[k] for k in sorted(e)])
out["pro_icl_fit"] = h(fit_icl(e, family("test-1", key, False))["anterior_radius"])
out["edge_filter"] = h(edge_filter().taps)
out["pixel_taps"] = h(np.concatenate([pixel_taps(d, 0.23, 1e-10) for d in (0.0, 0.1234, 0.5)]))
t = np.linspace(0, 2 * math.pi, 40, endpoint=False)
out["circle_fit"] = h(_circle_fit(np.column_stack([0.3 + 2 * np.cos(t) + 1e-3 * np.sin(7 * t), -0.1 + 2 * np.sin(t)])))
r = np.linspace(0.5, 1.5, 301)
out["ring_peak"] = h(_poly_peak(r, libm.exp(-((r - 1.03) / 0.2) ** 2) + 0.01 * np.cos(9 * r), 1.0, 0.3))
x = np.linspace(-3.0, 3.0, 2001)
out["libm"] = h([libm.exp(x), libm.log(x + 3.5), libm.log10(x + 3.5), libm.arccos(x / 3.5), libm.tan(x),
                 libm.arctan2(x, 1.0 - x), libm.power(x + 3.5, 1.7)])
out["gaussian"] = h(libm.gaussian_filter(np.outer(np.cos(x[::40]), np.sin(x[::50])), 1.53, mode="constant"))
print(json.dumps(out))
"""


def _run(env_extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(env_extra)
    res = subprocess.run([sys.executable, "-c", BATTERY], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def results():
    return {name: _run(extra) for name, extra in VARIANTS.items()}


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "default"])
def test_reference_arithmetic_is_the_same_bits(results, variant):
    base, other = results["default"], results[variant]
    assert base.keys() == other.keys()
    assert {k for k in base if base[k] != other[k]} == set()
