"""Whole commands of the tracks: halo release generation, halo evaluation, professional generation.

Each suite skips itself (``NotImplementedError`` in ``setup``) when the function it times is not in
the installed package, so a history run over older commits reports "n/a" instead of failing.
These take seconds to minutes per call: one call per sample, one round.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import tempfile

from .common import clear_caches, single_thread


def _require(module: str, name: str, *, keyword: str | None = None):
    """``module.name`` if the installed package has it (and it takes ``keyword``), else skip."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise NotImplementedError(f"{module} is not in this version of icl") from exc
    func = getattr(mod, name, None)
    if func is None:
        raise NotImplementedError(f"{module}.{name} is not in this version of icl")
    if keyword is not None and keyword not in inspect.signature(func).parameters:
        raise NotImplementedError(f"{module}.{name} has no {keyword!r} argument in this version of icl")
    return func


class _Slow:
    """Timing parameters for calls of several seconds."""

    number = 1
    rounds = 1
    repeat = (1, 3, 60.0)
    warmup_time = 0.0
    timeout = 900


class HaloRelease(_Slow):
    """``icl.halo.release.generate``: every reference condition rendered and written (no gallery)."""

    def setup(self):
        self.generate = _require("icl.halo.release", "generate")
        single_thread()
        clear_caches()
        self.out = tempfile.mkdtemp(prefix="icl-asv-halo-")

    def teardown(self):
        shutil.rmtree(self.out, ignore_errors=True)

    def time_generate(self):
        self.generate(self.out, gallery=False, progress=False)

    def peakmem_generate(self):
        self.generate(self.out, gallery=False, progress=False)


class HaloEvaluation(_Slow):
    """``icl.halo.evaluate.evaluate`` of a submission equal to the references (every term computed)."""

    def setup_cache(self):
        try:
            generate = _require("icl.halo.release", "generate")
            _require("icl.halo.evaluate", "evaluate")
        except NotImplementedError:
            return None
        import numpy as np
        from icl.io import write_npz

        # setup_cache runs in a folder that stays in place for this suite's benchmarks.
        release = os.path.abspath("halo-release")
        generate(release, gallery=False, progress=False)
        submission = os.path.abspath("halo-submission")
        for name in sorted(os.listdir(os.path.join(release, "private"))):
            if name.endswith(".npz"):
                with np.load(os.path.join(release, "private", name), allow_pickle=False) as ref:
                    write_npz(os.path.join(submission, name), components=ref["components"],
                              scene=ref["scene"], angular_pixel_arcsec=ref["angular_pixel_arcsec"])
        return release, submission

    def setup(self, paths):
        if paths is None:
            raise NotImplementedError("halo release or evaluation is not in this version of icl")
        self.evaluate = _require("icl.halo.evaluate", "evaluate")
        single_thread()

    def time_evaluate(self, paths):
        self.evaluate(*paths)

    def peakmem_evaluate(self, paths):
        self.evaluate(*paths)


class ProGeneration(_Slow):
    """``icl.pro.generate.generate`` for one template of each task family (4 instances + 1 OOD)."""

    params = ["A01", "B01", "C01", "D01", "E01", "F01"]
    param_names = ["template"]

    def setup(self, template):
        self.generate = _require("icl.pro.generate", "generate", keyword="only")
        single_thread()
        clear_caches()
        self.out = tempfile.mkdtemp(prefix="icl-asv-pro-")

    def teardown(self, template):
        shutil.rmtree(self.out, ignore_errors=True)

    def time_generate(self, template):
        self.generate(self.out, per_template=4, seed=0, progress=False, only=[template])

    def peakmem_generate(self, template):
        self.generate(self.out, per_template=4, seed=0, progress=False, only=[template])
