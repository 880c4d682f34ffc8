"""Leaderboards: a keyed release frozen, submissions run on dask and serially, the site read in Chromium.

The fast end-to-end test (default run) evaluates a reference-assisted baseline and a small from-scratch
submission twice on a 2-worker LocalCluster and serially, and reads the built board back from Chromium.
The slow one (``--run-slow``) evaluates four baselines and the from-scratch submission three times on a
four-template release, kills a worker in the middle of a task, and checks the same things.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from icl.board.queue import Budget, evaluate_board, pack_tree, unpack_tree
from icl.board.rows import board_data, load_source_reviews, order
from icl.board.site import build_site
from icl.cli import main
from icl.errors import InputError
from icl.keys import KEY_BYTES, ReleaseKey
from icl.sandbox.harness import available_mechanisms

pytestmark = pytest.mark.skipif(not available_mechanisms(), reason="no sandbox mechanism on this host")

SECRET = ReleaseKey(bytes(range(KEY_BYTES)), rebuildable=False)
HERE = Path(__file__).parent
SCRATCH = HERE / "board_submissions" / "scratch_layers"
CHROMIUM = "/usr/bin/chromium"
BUDGET = Budget(run_s=300.0, cpus=1, memory="2G")


def _release(d: Path, only: list[str]) -> Path:
    from icl.freeze import freeze_release
    from icl.pro.generate import generate

    generate(d, per_template=4, key=SECRET, progress=False, only=only)
    res = CliRunner().invoke(main, ["release-freeze", str(d)])
    assert res.exit_code == 0, res.output
    with pytest.raises(InputError, match="already frozen"):
        freeze_release(d, ["icl.pro.score"])
    return d


def _submissions(d: Path, baselines: list[str]) -> list[Path]:
    from icl.pro.evaluate import write_baselines

    subs = write_baselines(d, baselines)
    scratch = d / "scratch_layers"
    shutil.copytree(SCRATCH, scratch)
    os.chmod(scratch / "run", 0o755)
    return [*subs, scratch]


def _comparable(data: dict) -> dict:
    """A board without what is measured anew in every evaluation (costs) or names how it ran."""
    out = copy.deepcopy(data)
    for b in out["boards"]:
        b.pop("scheduler")
        for r in b["rows"]:
            r.pop("cost")
    return out


# units -------------------------------------------------------------------------------------------------


def test_pack_and_unpack_keep_modes_and_links_and_refuse_escapes(tmp_path):
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "run").write_text("#!/bin/sh\n")
    os.chmod(src / "run", 0o700)
    (src / "a" / "b" / "data.bin").write_bytes(bytes(range(256)))
    os.symlink("a/b/data.bin", src / "link")
    (src / "empty").mkdir()
    files = pack_tree(src)
    dst = unpack_tree(files, tmp_path / "dst")
    from icl.sandbox.harness import tree_sha256

    assert tree_sha256(dst) == tree_sha256(src)  # same frozen hash on the worker as on the client
    assert os.readlink(dst / "link") == "a/b/data.bin" and (dst / "run").stat().st_mode & 0o777 == 0o755
    for bad in ("../evil", "/abs", "a/../../evil"):
        with pytest.raises(InputError, match="stay inside"):
            unpack_tree({bad: ("f", False, b"x")}, tmp_path / f"bad{len(bad)}")


def _row(name, score, qualified, status="ranked"):
    return {"name": name, "score": score, "qualified": qualified, "status": status}


def test_rows_are_grouped_by_gates_then_sorted_by_score():
    rows = order(
        [
            _row("high-but-failing", 60.0, False),
            _row("low-qualified", 20.0, True),
            _row("mid-qualified", 40.0, True),
            _row("dev-release", 99.0, True, "not ranked"),
            _row("provisional", 30.0, False, "provisional"),
        ]
    )
    assert [r["name"] for r in rows] == [
        "mid-qualified",
        "low-qualified",
        "high-but-failing",
        "provisional",
        "dev-release",
    ]
    assert [r["place"] for r in rows] == [1, 2, 3, 4, None]
    assert rows[0]["group"] == "qualified: every gate passed" and rows[2]["group"] == "not qualified"


def test_source_reviews_confirm_or_reclassify_only_the_code_they_read(tmp_path):
    from icl.board.rows import _status

    f = tmp_path / "reviews.json"
    f.write_text(
        json.dumps(
            {
                "format": "icl-source-review/1",
                "reviews": [
                    {
                        "submission": "a",
                        "code_sha256": "1" * 64,
                        "verdict": "from-scratch",
                        "reviewers": ["R1", "R2"],
                    },
                    {
                        "submission": "b",
                        "code_sha256": "2" * 64,
                        "verdict": "reference-assisted",
                        "note": "ported core",
                    },
                ],
            }
        )
    )
    rev = load_source_reviews(f)
    assert _status("from-scratch", "", True, "", None) == ("provisional", "source review not recorded")
    assert _status("from-scratch", "", True, "", rev.get(("a", "1" * 64)))[0] == "reviewed"
    assert rev.get(("a", "3" * 64)) is None  # a review of other code does not count
    st = _status("from-scratch", "", True, "", rev.get(("b", "2" * 64)))
    assert st[0] == "not ranked" and "ported core" in st[1]
    assert _status("reference-assisted", "", True, "", None) == ("ranked", "")
    assert _status("from-scratch", "", False, "rebuildable", None) == ("not ranked", "rebuildable")
    assert _status("from-scratch", "", True, "", None, public_split=True)[0] == "not ranked"
    f.write_text(json.dumps({"format": "icl-source-review/1", "reviews": [{"submission": "a"}]}))
    with pytest.raises(InputError, match=r"reviews\[0\]"):
        load_source_reviews(f)


def test_board_needs_a_frozen_release(tmp_path):
    from icl.pro.generate import generate

    generate(tmp_path / "rel", per_template=4, key=SECRET, progress=False, only=["A01"])
    with pytest.raises(InputError, match="frozen release"):
        evaluate_board(tmp_path / "rel", [SCRATCH], tmp_path / "work", runs=1, budget=BUDGET, quiet=True)


# the browser -------------------------------------------------------------------------------------------


def _browse(site: Path, board: str, checks: dict) -> dict:
    """Open a board page and its entries in Chromium; return what the page shows, fail on any fault."""
    from icl.browser import CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    seen: dict = {"console": [], "requests": [], "boards": {}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width in (1024, 390):
            page = browser.new_page(viewport={"width": width, "height": 800})
            page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: seen["console"].append(f"pageerror: {e}"))
            page.on("request", lambda r: seen["requests"].append(r.url))
            for b in checks:
                page.goto((site / b / "index.html").as_uri())
                page.wait_for_load_state("load")
                assert page.evaluate("document.scripts.length") == 0
                csp = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
                assert "default-src 'none'" in csp and "script-src" not in csp
                assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (b, width)
                # The board table fits the window: at 1024 px as a table, on a phone as cards.
                assert page.evaluate(
                    "[...document.querySelectorAll('.table-wrap')].every(w => w.scrollWidth <= w.clientWidth)"
                ), (b, width)
                small = page.evaluate("""[...document.querySelectorAll('body *')].filter(e => e.offsetParent
                    && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())
                    && parseFloat(getComputedStyle(e).fontSize) < 12).length""")
                assert small == 0, (b, width)
                assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
                rows = page.evaluate("""[...document.querySelectorAll('tr.row')].map(tr => ({
                    name: tr.querySelector('td[data-label=submission] a').textContent,
                    place: tr.querySelector('td.place').textContent,
                    status: tr.querySelector('td[data-label=submission] .status').textContent,
                    score: tr.querySelector('td[data-label=score] strong').textContent,
                    ci: (tr.querySelector('td[data-label=score] .ci') || {textContent: ''}).textContent,
                    missing: tr.querySelector('td.missing').textContent,
                    group: tr.closest('tbody').querySelector('tr.group-head th').textContent,
                    gates: [...tr.querySelectorAll('.gate')].map(g => g.className.split(' ')[1])}))""")
                seen["boards"].setdefault(b, {})[width] = rows
                for r in rows:  # every entry page opens, with its figures
                    page.goto((site / b / f"{r['name']}.html").as_uri())
                    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
                    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), r
                    assert page.locator("h1").text_content() == r["name"]
            page.close()
        browser.close()
    assert seen["console"] == []
    assert all(u.startswith("file://") for u in seen["requests"]), seen["requests"]
    return seen


def _check_board(site: Path, data: dict, boards: list[str]) -> dict:
    seen = _browse(site, board="", checks=dict.fromkeys(boards))
    by_id = {b["id"]: b for b in data["boards"]}
    for b in boards:
        shown = seen["boards"][b][1024]
        assert seen["boards"][b][390] == shown  # the phone layout shows the same rows in the same order
        want = by_id[b]["rows"]
        assert [r["name"] for r in shown] == [r["name"] for r in want]
        # Grouped by gates (every gate passed first), then by score, as shown on the page.
        keys = [(r["group"] != "qualified: every gate passed", -float(r["score"])) for r in shown]
        assert keys == sorted(keys)
        for r, w in zip(shown, want, strict=True):
            assert r["missing"] == f"{w['missing_tasks']} / {w['tasks']}"
            assert r["status"] == w["status"]
            lo, hi = (float(x) for x in re.split("–", r["ci"]))
            assert lo - 0.005 <= float(r["score"]) <= hi + 0.005
            assert r["gates"] == [
                {True: "pass", False: "fail", None: "not-assessed"}[g["pass"]] for g in w["gates"].values()
            ]
    return seen


# end to end ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("board")
    return _release(d / "rel", ["A01"]), _submissions(d / "subs", ["constant"])


@pytest.mark.browser
def test_board_end_to_end_small(small, tmp_path):
    release, subs = small
    dist = evaluate_board(
        release,
        subs,
        tmp_path / "dist",
        runs=2,
        per_template=2,
        budget=BUDGET,
        scheduler="local",
        workers=2,
        bootstrap_n=200,
        quiet=True,
    )
    assert all(t["ok"] for t in dist["tasks"]) and len(dist["tasks"]) == 2 * 2
    assert len({t["worker"]["pid"] for t in dist["tasks"]}) == 2  # both workers ran tasks
    res = CliRunner().invoke(
        main,
        [
            "board",
            "evaluate",
            str(release),
            *map(str, subs),
            "--work",
            str(tmp_path / "serial"),
            "--runs",
            "2",
            "--per-template",
            "2",
            "--cpus",
            "1",
            "--memory",
            "2G",
            "--run-minutes",
            "5",
            "--bootstrap",
            "200",
        ],
    )
    assert res.exit_code == 0, res.output
    data = board_data([tmp_path / "dist"], bootstrap_n=200)
    assert _comparable(data) == _comparable(board_data([tmp_path / "serial"], bootstrap_n=200))
    res = CliRunner().invoke(
        main, ["board", "build", str(tmp_path / "dist"), "--output", str(tmp_path / "site")]
    )
    assert res.exit_code == 0, res.output
    by_id = {b["id"]: b for b in data["boards"]}
    scratch = by_id["pro-test-from-scratch"]["rows"]
    assert [(r["name"], r["status"]) for r in scratch] == [("scratch_layers", "provisional")]
    assert (
        scratch[0]["missing_tasks"] == 0 and scratch[0]["groups"]["A"] > 0
    )  # A01 answered, nothing else asked
    (const,) = by_id["pro-test-reference-assisted"]["rows"]
    assert const["status"] == "ranked" and const["gates"]["G1"]["pass"] is False  # layer order of a constant
    for b in ("pro-test-from-scratch", "pro-test-reference-assisted"):
        for f in ("board.json", "board.csv"):
            assert (tmp_path / "site" / b / f).is_file()
    _check_board(tmp_path / "site", data, ["pro-test-from-scratch", "pro-test-reference-assisted"])


def _kill_a_busy_worker(address: str, killed: list, stop: threading.Event) -> None:
    from distributed import Client

    with Client(address, set_as_default=False) as client:
        while not stop.is_set():
            busy = {w: ks for w, ks in client.processing().items() if ks}
            if busy:
                time.sleep(2.0)  # inside the sandboxed run
                worker, keys = next(iter(busy.items()))
                pids = client.run(os.getpid, workers=[worker])
                killed.append({"worker": worker, "pid": pids[worker], "keys": list(keys)})
                os.kill(pids[worker], signal.SIGKILL)
                return
            time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.browser
def test_board_end_to_end_four_baselines_and_a_lost_worker(tmp_path):
    from distributed import LocalCluster

    release = _release(tmp_path / "rel", ["A01", "A04", "C01", "F02"])
    subs = _submissions(tmp_path / "subs", ["full-model", "ignores_hole", "geometric", "constant"])
    killed: list = []
    stop = threading.Event()
    environ = dict(os.environ)  # a Nanny writes OMP_NUM_THREADS=1 and friends into this process
    with contextlib.ExitStack() as stack:
        stack.callback(lambda: (os.environ.clear(), os.environ.update(environ)))
        cluster = stack.enter_context(
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        )
        killer = threading.Thread(target=_kill_a_busy_worker, args=(cluster.scheduler_address, killed, stop))
        killer.start()
        try:
            dist = evaluate_board(
                release,
                subs,
                tmp_path / "dist",
                runs=3,
                per_template=1,
                budget=BUDGET,
                scheduler=cluster.scheduler_address,
                bootstrap_n=500,
                quiet=True,
            )
        finally:
            stop.set()
            killer.join()
    assert killed, "no worker was killed"
    lost = {k for k in killed[0]["keys"]}
    ran = {t["key"]: t for t in dist["tasks"]}
    assert all(t["ok"] for t in dist["tasks"]) and lost <= set(ran)
    assert all(ran[k]["worker"]["pid"] != killed[0]["pid"] for k in lost)  # retried on a live worker
    evaluate_board(
        release, subs, tmp_path / "serial", runs=3, per_template=1, budget=BUDGET, bootstrap_n=500, quiet=True
    )
    data = board_data([tmp_path / "dist"], bootstrap_n=500)
    assert _comparable(data) == _comparable(board_data([tmp_path / "serial"], bootstrap_n=500))
    build_site(data, tmp_path / "site")
    rows = {
        r["name"]: r
        for r in next(b for b in data["boards"] if b["id"] == "pro-test-reference-assisted")["rows"]
    }
    assert rows["full-model"]["qualified"] and rows["full-model"]["place"] == 1
    assert all(len(r["run_scores"]) == 3 and len(r["cost"]) == 3 for r in rows.values())
    assert rows["constant"]["missing_tasks"] >= 1  # A04: a needed parameter is unknown, no answer
    _check_board(tmp_path / "site", data, ["pro-test-from-scratch", "pro-test-reference-assisted"])


def _halo_score(
    name: str, case_scores: dict[str, float], missing: int, board: str = "reference-assisted"
) -> dict:
    runs = [
        {
            "score": sum(case_scores.values()) / len(case_scores),
            "cases": case_scores,
            "conditions": 8,
            "missing": missing,
            "reasons": ["missing"] if missing else [],
            "not_ranked": {},
            "subscores": {"position_bearing_cases": 50.0, "fixation_cases": 60.0},
        }
    ] * 2
    return {
        "name": name,
        "splits": {"dev": runs, "test": runs},
        "run_records_ok": [True, True],
        "violations": [],
        "declared_track": board,
        "track": board,
        "boards": {board: {"score": 0.0, "reason": ""}},
        "rankable": True,
        "rankable_reason": "",
        "board": board,
        "frozen_sha256": "c" * 64,
        "run_cost": [{"cpu_s": 1.0, "wall_s": 2.0, "peak_memory_bytes": 2**20, "sets": 1, "build_s": 0.0}]
        * 2,
    }


def test_halo_boards_keep_the_public_split_unranked_and_rank_the_test_split():
    from icl.board.rows import halo_rows

    cases = {f"H0{i}_t1": 10.0 * i for i in range(1, 5)}
    good = _halo_score("good", {k: v + 50 for k, v in cases.items()}, 0)
    weak = _halo_score("weak", cases, 3)
    scratch = _halo_score("scratch", cases, 8, board="from-scratch")
    for split in ("dev", "test"):
        boards = {b: order(rows) for b, rows in halo_rows([good, weak, scratch], split, {}, n=200).items()}
        ra = boards["reference-assisted"]
        assert [r["name"] for r in ra] == ["good", "weak"] and [r["missing_tasks"] for r in ra] == [0, 3]
        for r in ra:
            lo, hi = r["interval"]
            assert lo <= r["raw_score"] <= hi and hi - lo > 0  # cases differ: a real spread
        assert [r["name"] for r in boards["from-scratch"]] == ["scratch"]
        if split == "dev":
            assert {r["status"] for b in boards.values() for r in b} == {"not ranked"}
            assert all(r["place"] is None and "public development split" in r["status_reason"] for r in ra)
        else:
            assert [r["place"] for r in ra] == [1, 2] and boards["from-scratch"][0]["status"] == "provisional"


@pytest.mark.slow
@pytest.mark.browser
def test_halo_boards_end_to_end(tmp_path):
    from icl.halo.release import generate

    rel = tmp_path / "halo"
    generate(rel, gallery=False, test_variants=1, progress=False, key=SECRET)
    assert CliRunner().invoke(main, ["release-freeze", str(rel)]).exit_code == 0
    ref = HERE / "hostile_submissions" / "halo_reference"
    research = shutil.copytree(ref, tmp_path / "halo_research")
    evaluate_board(
        rel,
        [ref, research],
        tmp_path / "eval",
        runs=2,
        research=["halo_research"],
        budget=BUDGET,
        bootstrap_n=200,
        quiet=True,
    )
    data = board_data([tmp_path / "eval"], bootstrap_n=200)
    by_id = {b["id"]: b for b in data["boards"]}
    for split in ("dev", "test"):
        (ra,) = by_id[f"halo-{split}-reference-assisted"]["rows"]
        (rs,) = by_id[f"halo-{split}-research"]["rows"]
        assert ra["name"] == "halo_reference" and rs["name"] == "halo_research"
        assert by_id[f"halo-{split}-research"]["budget"]["research"]["build_s"] is None
    dev = by_id["halo-dev-reference-assisted"]["rows"][0]
    assert dev["status"] == "not ranked" and dev["score"] > 10 and dev["missing_tasks"] == 0
    test = by_id["halo-test-reference-assisted"]["rows"][0]
    assert (
        test["status"] == "ranked" and test["missing_tasks"] == test["tasks"]
    )  # it answers the dev split only
    build_site(data, tmp_path / "site")
    _browse(
        tmp_path / "site",
        board="",
        checks=dict.fromkeys(["halo-dev-reference-assisted", "halo-test-research"]),
    )
