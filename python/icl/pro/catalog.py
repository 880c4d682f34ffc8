"""The professional task catalogue: 36 templates A01-F06 in six weighted groups (``cases/pro/catalog.json``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icl.errors import InputError
from icl.io import load_json

GROUPS = ("A", "B", "C", "D", "E", "F")
GROUP_WEIGHTS = {"A": 15, "B": 20, "C": 25, "D": 15, "E": 15, "F": 10}


@dataclass(frozen=True)
class Check:
    """One observable check of a template, scored 0 / 0.5 / 1."""

    id: str
    text: str
    mode: str
    rubric: dict
    kind: str | None = None
    key: str | None = None
    artifact: str | None = None
    tolerance: float | None = None
    relative: bool = False
    unit: str = ""


@dataclass(frozen=True)
class Template:
    """A task template; instances are generated from it by :mod:`icl.pro.generate`."""

    id: str
    group: str
    title: str
    difficulty: int
    inputs: tuple[str, ...]
    deliverables: tuple[str, ...]
    checks: tuple[Check, ...]
    truth: dict
    undeterminable: tuple[str, ...]
    ood: str
    ood_ranges: dict = field(default_factory=dict)  # file.name -> [low, high] in the OOD instances

    @property
    def auto_checks(self) -> tuple[Check, ...]:
        """Checks computed from artifacts against the private references."""
        return tuple(c for c in self.checks if c.mode == "auto")


@dataclass(frozen=True)
class Catalog:
    """The parsed catalogue."""

    version: str
    status: str
    groups: dict
    instances_per_template: int
    split_per_template: dict
    templates: tuple[Template, ...]

    def template(self, tid: str) -> Template:
        """Template by id (``A01`` ... ``F06``)."""
        for t in self.templates:
            if t.id == tid:
                return t
        raise KeyError(tid)

    def select(self, only: Iterable[str] | None) -> list[str] | None:
        """Return the template ids ``only`` names (``None``: every template), each checked.

        Raises
        ------
        InputError
            For an unknown id or an empty selection, listing the valid ids.

        """
        if only is None:
            return None
        chosen = list(only)
        valid = [t.id for t in self.templates]
        unknown = [t for t in chosen if t not in valid]
        if unknown or not chosen:
            what = f"unknown template id(s) {unknown}" if unknown else "no template selected"
            raise InputError(f"{what}; the valid ids are {' '.join(valid)}", None, "only")
        return chosen

    @property
    def weights(self) -> dict[str, float]:
        """Group weights, summing to 100."""
        return {g: float(self.groups[g]["weight"]) for g in GROUPS}


def default_path() -> Path:
    """Path of the installed catalogue."""
    from icl._paths import cases_dir

    return cases_dir() / "pro" / "catalog.json"


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load and validate the catalogue against its JSON schema and the catalogue's rules.

    Raises
    ------
    InputError
        Naming the file and the field at fault.

    """
    import jsonschema

    path = Path(path) if path is not None else default_path()
    file = str(path)
    data = load_json(path)
    schema = load_json(default_path().parent / "catalog.schema.json")
    err = next(iter(sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))), None)
    if err is not None:
        raise InputError(err.message, file, ".".join(str(p) for p in err.absolute_path) or None)
    return _semantic(data, file)


def _semantic(data: dict[str, Any], file: str) -> Catalog:
    weights = {g: data["groups"][g]["weight"] for g in GROUPS}
    if weights != GROUP_WEIGHTS:
        raise InputError(f"group weights must be {GROUP_WEIGHTS}, got {weights}", file, "groups")
    templates = []
    seen: set[str] = set()
    for i, t in enumerate(data["templates"]):
        where = f"templates[{i}]"
        if t["id"] in seen:
            raise InputError(f"duplicate template id {t['id']}", file, f"{where}.id")
        seen.add(t["id"])
        if t["group"] != t["id"][0]:
            raise InputError("group must be the id's first letter", file, f"{where}.group")
        checks = []
        ids = set()
        for j, c in enumerate(t["checks"]):
            if not c["id"].startswith(t["id"] + ".") or c["id"] in ids:
                raise InputError(f"check id must be unique and start with {t['id']}.", file, f"{where}.checks[{j}].id")
            ids.add(c["id"])
            checks.append(Check(**c))
        templates.append(Template(t["id"], t["group"], t["title"], t["difficulty"], tuple(t["inputs"]),
                                  tuple(t["deliverables"]), tuple(checks), dict(t["truth"]),
                                  tuple(t["undeterminable"]), t["ood"], dict(t["ood_ranges"])))
    expected = {f"{g}0{k}" for g in GROUPS for k in range(1, 7)}
    if seen != expected:
        raise InputError(f"templates must be exactly A01-F06; missing {sorted(expected - seen)}", file, "templates")
    split = data["split_per_template"]
    if sum(split.values()) != data["instances_per_template"]:
        raise InputError("train + dev + test must equal instances_per_template", file, "split_per_template")
    order = {tid: k for k, tid in enumerate(sorted(expected))}
    templates.sort(key=lambda t: order[t.id])
    return Catalog(data["version"], data["status"], data["groups"], data["instances_per_template"], dict(split),
                   tuple(templates))
