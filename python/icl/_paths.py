"""Where the declarative case data lives (installed as ``icl/cases`` in the wheel)."""

from __future__ import annotations

from pathlib import Path


def cases_dir() -> Path:
    """Return the directory holding the case data (``cases/`` of the source tree when editable)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cases", here.parent.parent / "cases"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("ICL-Bench case data not found: the installation is incomplete")
