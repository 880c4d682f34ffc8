"""Run one fuzz target under atheris: ``fuzz_one.py TARGET [libFuzzer flags and corpus folders]``."""

import inspect
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
import targets  # noqa: E402

INSTRUMENTED = ("icl", "json", "zipfile")


def instrument(packages: tuple[str, ...] = INSTRUMENTED) -> int:
    """Add coverage feedback to every function of the loaded ``packages`` modules.

    The editable install imports icl through a custom loader that ``atheris.instrument_imports`` cannot
    hook, and ``instrument_all`` would spend minutes on NumPy and SciPy; so the functions of our own
    modules (and of the stdlib parsers they call) are patched in place.
    """
    count = 0
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in packages:
            continue
        for obj in list(vars(mod).values()):
            funcs = [obj] if inspect.isfunction(obj) else (
                [m for m in vars(obj).values() if inspect.isfunction(m)] if inspect.isclass(obj) else [])
            for f in funcs:
                if f.__module__ == name:
                    atheris.instrument_func(f)
                    count += 1
    return count


def main() -> None:
    target = targets.TARGETS[sys.argv[1]]
    instrument()
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
