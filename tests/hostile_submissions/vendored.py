"""Build the hostile "vendored" submission: the installed package's modules, renamed and reformatted.

What a participant hiding a copy would do: every module gets a new file name and package name, every name
the package defines (functions, classes, arguments, variables, attributes, modules) a new name, docstrings
and comments are dropped and the code is re-printed from its syntax tree (new layout, quotes and
parentheses). The result is built from the live package, so it follows the package as it changes.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from pathlib import Path

import icl

PACKAGE = "optikit"
_KEEP = set(dir(builtins)) | {"self", "cls"}


def _new(name: str) -> str:
    return "q" + hashlib.sha1(name.encode()).hexdigest()[:7]


def _defined(trees: list[ast.AST]) -> set[str]:
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return {n for n in names if n not in _KEEP and not n.startswith("__")}


class _Rename(ast.NodeTransformer):
    def __init__(self, names: set[str], modules: dict[str, str]):
        self.names, self.modules = names, modules

    def _n(self, name: str) -> str:
        return _new(name) if name in self.names else name

    def _mod(self, dotted: str | None) -> str | None:
        if dotted is None:
            return None
        parts = dotted.split(".")
        if parts[0] != "icl":
            return dotted
        return ".".join([PACKAGE] + [self.modules.get(p, p) for p in parts[1:]])

    def visit_Name(self, node):  # noqa: N802
        node.id = self._n(node.id)
        return node

    def visit_Attribute(self, node):  # noqa: N802
        self.generic_visit(node)
        node.attr = self._n(node.attr)
        return node

    def visit_arg(self, node):
        node.arg = self._n(node.arg)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if node.arg:
            node.arg = self._n(node.arg)
        return node

    def _def(self, node):
        self.generic_visit(node)
        node.name = self._n(node.name)
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _def  # noqa: N815

    def visit_Import(self, node):  # noqa: N802
        for a in node.names:
            a.name = self._mod(a.name)
        return node

    def visit_ImportFrom(self, node):  # noqa: N802
        node.module = self._mod(node.module)
        for a in node.names:
            a.name = self.modules.get(a.name, self._n(a.name))
            if a.asname:
                a.asname = self._n(a.asname)
        return node


def build(dest: Path, run_text: str, only: tuple[str, ...] = ()) -> Path:
    """Write the submission at ``dest``: ``run`` and ``source/optikit`` (``only``: these subpackages)."""
    pkg = Path(icl.__file__).parent
    files = sorted(
        p
        for p in pkg.rglob("*.py")
        if "__pycache__" not in p.parts and (not only or p.relative_to(pkg).parts[0] in only)
    )
    trees = [ast.parse(p.read_text("utf-8")) for p in files]
    modules = {
        part: "m" + _new(part)[1:]
        for p in files
        for part in p.relative_to(pkg).with_suffix("").parts
        if part != "__init__"
    }
    renamer = _Rename(_defined(trees), modules)
    for path, tree in zip(files, trees, strict=True):
        body = tree.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
        ):
            tree.body = body[1:] or [ast.Pass()]
        rel = path.relative_to(pkg)
        parts = [modules.get(p, p) for p in rel.with_suffix("").parts]
        out = dest / "source" / PACKAGE / Path(*parts).with_suffix(".py")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(ast.unparse(renamer.visit(tree)) + "\n", "utf-8")
    (dest / "run").write_text(run_text)
    (dest / "run").chmod(0o755)
    return dest
