"""Replay every saved fuzz input (``regressions/<target>/*``) through its target: none may raise.

Each file once made a loader raise something other than its documented refusal; the fix keeps it a clean
refusal. The seed inputs are replayed too, with truncations, as a quick check that the targets run.
"""

from pathlib import Path

import pytest
import targets

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
SAVED = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file())


@pytest.mark.parametrize("path", SAVED, ids=[f"{p.parent.name}/{p.name}" for p in SAVED])
def test_saved_input_is_refused_cleanly(path):
    targets.TARGETS[path.parent.name](path.read_bytes())


@pytest.mark.parametrize("name", sorted(targets.TARGETS))
def test_seeds_and_their_truncations(name):
    for seed in targets.seeds(name):
        for cut in (len(seed), len(seed) // 2, 30, 0):
            targets.TARGETS[name](seed[:cut])
