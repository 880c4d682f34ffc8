"""Whole commands timed as a user runs them: wall time, CPU time (user + sys) and peak memory of each process.

Commands (each a fresh ``icl`` process, output into a temporary folder):

- ``generate``: ``icl halo-generate --seed 1`` (the release with its gallery);
- ``generate-no-gallery``: the same with ``--no-gallery``;
- ``evaluate``: ``icl halo-evaluate`` of a submission equal to the references (development split; the
  release and the submission are made once before the rounds, by the working tree).

They run in interleaved rounds (A B C A B C ...), so that the load of a shared machine hits all of them
alike; the table gives medians and minima over the rounds and the range of the 1-minute load average
before and after each command. CPU time (from the child's own resource usage, its worker processes
included) is distorted less by other jobs than wall time: a busy machine shares its cores, but a process
is charged only while it runs.

``--against REV`` also runs every command with the Python package (``python/icl``, ``cases``) of git
revision ``REV``, in the same rounds, on the compiled kernels of the working tree (so the comparison is
of the Python code; a revision whose Python calls the kernels differently fails with the kernel's error).

Run: python bench/commands.py [--rounds 5] [--commands generate,evaluate] [--workers 1] [--against REV]
"""

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRESH = itertools.count()  # numbers the output folders of every command of every variant
ICL = [sys.executable, "-m", "icl"]
# Runs the icl of another folder: the editable install's import redirection is removed first.
LAUNCH = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "
    "'ScikitBuildRedirectingFinder']; sys.path.insert(0, {path!r}); "
    "from icl.cli import main; sys.exit(main())"
)


def revision(rev: str, folder: Path) -> list[str]:
    """Extract ``rev``'s package into ``folder`` beside the working tree's kernels; return its icl argv."""
    import icl._core

    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "python/icl", "cases"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    kernels = Path(icl._core.__file__).resolve()
    (folder / "python" / "icl" / kernels.name).symlink_to(kernels)
    return [sys.executable, "-c", LAUNCH.format(path=str(folder / "python"))]


def run(argv: list[str], output: Path) -> dict:
    """Run one command; return its wall time, CPU time (user, sys, of it and its children) and peak RSS.

    A command that fails or does not write ``output`` stops the benchmark.
    """
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if proc.returncode or not output.exists():
        raise SystemExit(
            f"{' '.join(argv)} failed ({proc.returncode}, {output} written: {output.exists()}):\n"
            + text[-2000:]
        )
    return {
        "wall": wall,
        "user": usage.ru_utime,
        "sys": usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "load": (load0, os.getloadavg()[0]),
    }


def commands(icl: list[str], work: Path, workers: int) -> dict:
    """The timed commands: each call gives the argv and the file it must write (in a fresh place)."""
    extra = ["--workers", str(workers)] if workers > 1 else []

    def generate(*flags):
        def make():
            out = work / f"r{next(FRESH)}"
            argv = ["halo-generate", "--output", str(out), "--seed", "1", *extra, *flags]
            return icl + argv, out / "manifest.json"

        return make

    def evaluate():
        score = work / f"score{next(FRESH)}.json"
        argv = ["halo-evaluate", "--release", str(work / "release"), "--submission", str(work / "submission")]
        return icl + [*argv, "--output", str(score)], score

    return {"generate": generate(), "generate-no-gallery": generate("--no-gallery"), "evaluate": evaluate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--commands", default="generate,generate-no-gallery,evaluate")
    ap.add_argument("--workers", type=int, default=1, help="--workers of halo-generate")
    ap.add_argument(
        "--against", metavar="REV", help="also run git revision REV's Python package, interleaved"
    )
    args = ap.parse_args()
    names = args.commands.split(",")
    with tempfile.TemporaryDirectory(prefix="icl-bench-commands-") as tmp:
        work = Path(tmp)
        variants = {"": ICL}
        if args.against:
            (work / "rev").mkdir()
            variants[f"@{args.against}"] = revision(args.against, work / "rev")
        table = {}
        for tag, icl in variants.items():
            for name, make in commands(icl, work, args.workers).items():
                if name in names:
                    table[name + tag] = make
        unknown = set(names) - {n.split("@")[0] for n in table}
        if unknown:
            raise SystemExit(f"unknown commands {sorted(unknown)}")
        if "evaluate" in names:
            release = ["halo-generate", "--output", str(work / "release"), "--seed", "1", "--no-gallery"]
            subprocess.run(ICL + release, check=True, stdout=subprocess.DEVNULL)
            baseline = [
                "halo-baseline",
                "--release",
                str(work / "release"),
                "--output",
                str(work / "submission"),
            ]
            subprocess.run(ICL + baseline + ["--mode", "reference"], check=True, stdout=subprocess.DEVNULL)
        loads = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {loads}", flush=True)
        results: dict[str, list[dict]] = {n: [] for n in table}
        for r in range(args.rounds):
            for name, make in table.items():
                res = run(*make())
                results[name].append(res)
                print(
                    f"round {r + 1} {name:32s} wall {res['wall']:6.2f} s  "
                    f"cpu {res['user'] + res['sys']:6.2f} s "
                    f"(user {res['user']:.2f}, sys {res['sys']:.2f})  rss {res['rss_mb']:5.0f} MB  "
                    f"load {res['load'][0]:.2f} / {res['load'][1]:.2f}",
                    flush=True,
                )
    print("\n| command | wall median (min) | CPU user+sys median (min) | peak RSS | load range |")
    print("|---|---|---|---|---|")
    for name, rs in results.items():
        wall = [x["wall"] for x in rs]
        cpu = [x["user"] + x["sys"] for x in rs]
        loads = [v for x in rs for v in x["load"]]
        print(
            f"| {name} | {statistics.median(wall):.1f} s ({min(wall):.1f}) | {statistics.median(cpu):.1f} s "
            f"({min(cpu):.1f}) | {max(x['rss_mb'] for x in rs):.0f} MB | {min(loads):.2f}-{max(loads):.2f} |"
        )


if __name__ == "__main__":
    main()
