"""Shared pytest configuration: ``--run-slow`` enables tests marked ``slow``."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


# Variables that choose the host's arithmetic (BLAS kernel and threads, NumPy's SIMD level, the core's threads):
# a test that needs another value runs a subprocess with its own environment and leaves these as it found them.
HOST_ARITHMETIC_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                       "MKL_NUM_THREADS", "ICL_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")


@pytest.fixture(autouse=True, scope="session")
def _evaluator_key(tmp_path_factory):
    """Runs are signed with an evaluator key (icl.sandbox.signing): the session's own, never the user's."""
    import os

    before = os.environ.get("ICL_EVALUATOR_KEY")
    os.environ["ICL_EVALUATOR_KEY"] = str(tmp_path_factory.mktemp("evaluator") / "evaluator.key")
    yield
    if before is None:
        os.environ.pop("ICL_EVALUATOR_KEY", None)
    else:
        os.environ["ICL_EVALUATOR_KEY"] = before


@pytest.fixture(autouse=True)
def _host_arithmetic_env_unchanged():
    import os

    before = {k: os.environ.get(k) for k in HOST_ARITHMETIC_ENV}
    yield
    after = {k: os.environ.get(k) for k in HOST_ARITHMETIC_ENV}
    assert after == before, f"the test changed the host's arithmetic variables: {before} -> {after}"
