"""Sandbox limits small enough for tests that run real submissions, shared by the sandbox test modules."""

from icl.sandbox.harness import Limits

SMALL = Limits(
    cpus=1,
    memory_bytes=1024**3,
    timeout_s=60.0,
    processes=64,
    file_bytes=64 * 1024**2,
    tmp_bytes=16 * 1024**2,
    output_bytes=64 * 1024**2,
)
