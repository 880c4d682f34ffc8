"""Scoring, file handling and the CLI stay off the compiled kernels: they must run (and be audited) as
plain Python; only the optics, eye and imaging layers call ``icl._core``."""

import ast
from pathlib import Path

import icl

PACKAGE = Path(icl.__file__).parent
KERNEL_USERS = {"_core_loader.py", "fftw.py", "parallel.py", "optics", "eye", "imaging"}


def _imports_core(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module in ("icl", "icl._core_loader"):
            if any(a.name in ("_core", "core") for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(a.name == "icl._core" for a in node.names):
            return True
    return False


def test_only_the_optics_layers_import_the_kernels():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in KERNEL_USERS or rel.name in KERNEL_USERS:
            continue
        if _imports_core(path):
            offenders.append(str(rel))
    assert offenders == []
