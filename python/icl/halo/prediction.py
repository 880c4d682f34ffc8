"""Structured halo predictions: schema validation of ``cases/halo/prediction.schema.json`` files."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from icl.halo.cases import halo_dir
from icl.io import load_json

MAX_PREDICTION_BYTES = 4 * 1024 * 1024


@lru_cache(maxsize=1)
def prediction_schema() -> dict:
    """Load the JSON schema of a structured prediction."""
    return json.loads((halo_dir() / "prediction.schema.json").read_text(encoding="utf-8"))


def validate_prediction(path: str | Path) -> list[str]:
    """Check one prediction file; return every problem as ``field: message`` (empty when valid).

    Raises
    ------
    InputError
        When the file cannot be read as JSON at all.

    """
    import jsonschema

    obj = load_json(path, max_bytes=MAX_PREDICTION_BYTES)
    validator = jsonschema.Draft202012Validator(prediction_schema())
    problems = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]):
        field = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        detail = err.message
        if err.context:  # oneOf: name the closest alternative instead of "is not valid under any"
            detail = jsonschema.exceptions.best_match(err.context).message
        problems.append(f"{field}: {detail}")
    if not problems and isinstance(obj, dict):
        ids = [s["source_id"] for s in obj["sources"]]
        if len(set(ids)) != len(ids):
            problems.append(f"sources: source ids must be unique, got {ids}")
    return problems
