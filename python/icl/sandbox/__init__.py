"""The sandbox that runs submissions: file-system view, control groups, provenance scan, run records.

:func:`run_submission` (in :mod:`icl.sandbox.harness`) is the entry point; :mod:`icl.sandbox.layout` builds
what a program sees (an interpreter and an allow-list of packages; the reference package only on the
reference-assisted track), :mod:`icl.sandbox.seccomp` the system calls it may not make,
:mod:`icl.sandbox.cgroups` caps a run's total memory and processes, :mod:`icl.sandbox.fstree` walks trees
without recursion and within bounds, :mod:`icl.sandbox.provenance` finds reference code and opaque content
in a from-scratch submission (:mod:`icl.sandbox.content` tells files apart by their bytes),
:mod:`icl.sandbox.signing` signs and verifies run records, :mod:`icl.sandbox.boards` keeps scores per track.
"""

from icl.sandbox.harness import (
    SANDBOX_GID,
    SANDBOX_UID,
    Limits,
    RunRecord,
    available_mechanisms,
    parse_size,
    run_submission,
    tree_sha256,
)

__all__ = [
    "SANDBOX_GID",
    "SANDBOX_UID",
    "Limits",
    "RunRecord",
    "available_mechanisms",
    "parse_size",
    "run_submission",
    "tree_sha256",
]
