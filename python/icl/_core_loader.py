"""Import of the compiled kernels with a build hint when they are missing."""

try:
    from icl import _core
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "icl._core (the C++ kernels) is not built. Install the package with `make dev` "
        "or `pip install .` (needs a C++ compiler and FFTW: apt-get install libfftw3-dev pkg-config)."
    ) from exc

import os

core = _core
# Kernels split work into fixed blocks, so any thread count gives the same bits: use every core
# unless ICL_NUM_THREADS says otherwise (process pools set 1 per worker).
core.set_num_threads(int(os.environ.get("ICL_NUM_THREADS", os.cpu_count() or 1)))
