"""Similarity of vendored, honest and independent code to the reference package (docs/pro-harness.md, 6).

Four sets of Python files are compared with the installed package by
:func:`icl.sandbox.provenance.compare_code` with its current parameters:

- the package renamed and re-printed from its syntax tree (every module and defined name renamed,
  docstrings and comments dropped: ``tests/hostile_submissions/vendored.py``);
- the package with its files renamed and reformatted by ``ruff format`` (line length 79, single quotes);
- honest code: the two independent solvers and the small programs of ``tests/hostile_submissions``;
- independent third-party modules installed beside the package (scipy, numpy.fft, matplotlib, click, ...).

Run: ``python bench/provenance_threshold.py`` (needs ``ruff`` for the second set: ``pip install ruff``).
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import icl
import numpy as np
from icl.sandbox.provenance import MIN_TOKENS, THRESHOLD, compare_code

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from hostile_submissions.vendored import build  # noqa: E402

THIRD_PARTY = (
    "scipy/optimize/*.py",
    "numpy/fft/*.py",
    "matplotlib/*.py",
    "copydetect/*.py",
    "click/*.py",
    "scipy/signal/*.py",
    "scipy/ndimage/*.py",
    "rich/*.py",
    "jsonschema/*.py",
)


def _ruff_copy(dest: Path) -> list[Path]:
    pkg = Path(icl.__file__).parent
    files = sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)
    for i, f in enumerate(files):
        shutil.copy(f, dest / f"mod{i:03d}.py")
    (dest / "pyproject.toml").write_text(
        '[tool.ruff]\nline-length = 79\n[tool.ruff.format]\nquote-style = "single"\n'
    )
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    subprocess.run([ruff, "format", "-q", str(dest)], check=True)
    return sorted(dest.glob("*.py"))


def _row(name: str, files: list[Path]) -> None:
    rows = [compare_code(str(f), f.read_text("utf-8", "replace"), "python") for f in files]
    big = [r["similarity"] for r in rows if r["tokens"] >= 400]
    weighted = sum(r["copied_tokens"] for r in rows) / max(sum(r["tokens"] for r in rows), 1)
    top = max(rows, key=lambda r: r["similarity"])
    spread = (
        f"min {min(big):.3f}, 5th percentile {np.percentile(big, 5):.3f}, median {np.median(big):.3f}"
        if big
        else "none"
    )
    print(
        f"{name}: {len(rows)} files, {sum(r['hit'] for r in rows)} hits; files of 400+ tokens: {spread}; "
        f"code-weighted {weighted:.3f}; most similar {Path(top['file']).name} {top['similarity']:.3f} "
        f"({top['copied_tokens']} copied); longest copy among non-hits "
        f"{max([r['copied_tokens'] for r in rows if not r['hit']] or [0])}"
    )


def main() -> None:
    print(f"threshold {THRESHOLD}, min copied {MIN_TOKENS}")
    site = Path(sysconfig.get_paths()["purelib"])
    with tempfile.TemporaryDirectory() as tmp:
        vendored = build(Path(tmp) / "ast", "#!/bin/sh\nexit 0\n")
        _row("vendored, renamed and re-printed", sorted(vendored.rglob("*.py")))
        (Path(tmp) / "ruff").mkdir()
        _row("vendored, ruff format", _ruff_copy(Path(tmp) / "ruff"))
    hostile = ROOT / "tests" / "hostile_submissions"
    honest = [
        hostile / "honest_fft" / "source" / "psf.py",
        hostile / "honest_rays" / "source" / "trace.py",
        *sorted(hostile.glob("*/run")),
    ]
    _row("honest", honest)
    _row("third-party", sorted(Path(f) for pat in THIRD_PARTY for f in glob.glob(str(site / pat))))


if __name__ == "__main__":
    main()
