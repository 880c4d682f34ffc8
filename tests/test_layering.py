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


# The engine: the far-field optics and the thick eye. What it may import besides itself: the shared
# foundations below every layer. Image-extent sources are part of the engine (icl.optics.image_source).
ENGINE = ("optics", "eye")
FOUNDATIONS = {
    "icl",
    "icl._core",
    "icl._core_loader",
    "icl._paths",
    "icl.errors",
    "icl.io",
    "icl.fftw",
    "icl.parallel",
}


def _icl_imports(path: Path) -> set[str]:
    """Every ``icl...`` module an engine file imports, at any depth (lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "icl" or m.startswith("icl.")}


def test_the_engine_never_imports_a_layer_above_it():
    offenders = []
    for layer in ENGINE:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for module in sorted(_icl_imports(path)):
                top = ".".join(module.split(".")[:2])
                if top not in FOUNDATIONS and top.split(".")[1:] and top.split(".")[1] not in ENGINE:
                    offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert offenders == []


# The tracks: the sandbox runs any track's program and may import none of them (a track's own command,
# such as ``icl halo-run``, lives in the track).
TRACKS = ("halo", "pro", "patient", "contest", "forensics")


def test_the_sandbox_imports_no_track():
    offenders = []
    for path in sorted((PACKAGE / "sandbox").rglob("*.py")):
        for module in sorted(_icl_imports(path)):
            if module.split(".")[1:2] and module.split(".")[1] in TRACKS:
                offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert offenders == []


def test_the_freeze_is_base_floor_and_the_board_is_the_top():
    # icl.freeze hashes files and follows imports by name: it imports no track, engine, sandbox or board.
    assert _icl_imports(PACKAGE / "freeze.py") <= {"icl", "icl.errors", "icl.io"}
    # Nothing below the board imports it (the command table names it as a string only).
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).parts[0] != "board"
        and any(m.startswith("icl.board") for m in _icl_imports(p))
    ]
    assert offenders == []


def test_browser_launch_constants_live_in_a_base_module():
    # The halo gallery's and the board's screenshots launch Chromium as the patient page does, through
    # icl.browser, not through the patient layer.
    assert _icl_imports(PACKAGE / "browser.py") == set()
    for path in (PACKAGE / "halo" / "screenshot.py", PACKAGE / "board" / "screenshot.py"):
        assert "icl.browser" in _icl_imports(path)
        assert not [m for m in _icl_imports(path) if m.startswith("icl.patient")], path
