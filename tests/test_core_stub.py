"""The shipped type stub ``icl/_core.pyi`` matches the compiled module (regenerate with
``pybind11-stubgen icl._core -o python`` after changing a binding)."""

import ast
from pathlib import Path

import icl
from icl import _core


def _stub_names() -> set[str]:
    tree = ast.parse((Path(icl.__file__).parent / "_core.pyi").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_stub_declares_every_public_kernel_and_nothing_else():
    compiled = {n for n in dir(_core) if not n.startswith("_")}
    assert _stub_names() == compiled
