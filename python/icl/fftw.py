"""FFTW planning: deterministic estimated plans by default, measured plans with on-disk wisdom on request.

Generation commands keep ``FFTW_ESTIMATE``: the plan then depends only on the transform sizes, so
every run, serial or parallel, performs the same arithmetic. Benchmarks and long interactive sessions
may switch to ``FFTW_MEASURE`` (also with ``ICL_FFTW_MEASURE=1``); measured plans are stored as FFTW
wisdom in the user cache directory and reused, so planning is paid once per machine.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path

import platformdirs

from icl._core_loader import core


def wisdom_path() -> Path:
    """File holding this machine's FFTW wisdom."""
    return Path(platformdirs.user_cache_dir("icl-bench")) / "fftw-wisdom.txt"


def _save_wisdom() -> None:
    path = wisdom_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(core.export_wisdom())
    os.replace(tmp, path)


def use_measured_plans(enable: bool = True) -> bool:
    """Plan new transforms with FFTW_MEASURE, loading and (at exit) saving the cached wisdom.

    Returns whether existing wisdom was loaded.
    """
    core.set_planner_measure(enable)
    if not enable:
        return False
    path = wisdom_path()
    loaded = path.is_file() and core.import_wisdom(path.read_text())
    atexit.unregister(_save_wisdom)  # register once, however often this is called
    atexit.register(_save_wisdom)
    return bool(loaded)


if os.environ.get("ICL_FFTW_MEASURE") == "1":
    use_measured_plans()
