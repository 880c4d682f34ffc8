"""The professional track's sandbox, kept importable here; it lives in :mod:`icl.sandbox`."""

from icl.sandbox.harness import (  # noqa: F401
    SANDBOX_GID,
    SANDBOX_UID,
    Limits,
    RunRecord,
    available_mechanisms,
    parse_size,
    run_submission,
    tree_sha256,
)
