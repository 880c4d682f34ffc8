"""``icl forensics-evaluate`` against hostile submission files, in-process through the CLI.

An unreadable submission scores every item 0 with the reason; a partly bad one loses only the items it
breaks (the others keep their exact areas); the score file is always written whole, and the process
never crashes. A bad release is a clear error naming the file, with exit status 2.
"""

import json

import pytest
from click.testing import CliRunner
from hostile import corpus
from icl.cli import main
from icl.forensics.baseline import load_public, random_scores
from icl.forensics.generate import write_release
from icl.io import load_json

TINY = {"genuine": 6, "NH": 3, "DUP": 2, "SPL": 2}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile_forensics") / "rel"
    write_release(out, 5, counts=TINY)
    return out


@pytest.fixture(scope="module")
def good(release):
    images, _ = load_public(release)
    return random_scores(list(images), 7)


def run(release, tmp_path, submission):
    """Run forensics-evaluate on a submission (dict, raw text or an existing path)."""
    if isinstance(submission, type(tmp_path)):
        path = submission
    else:
        path = tmp_path / "sub.json"
        text = submission if isinstance(submission, (str, bytes)) else json.dumps(submission)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out" / "score.json"
    res = CliRunner().invoke(main, ["forensics-evaluate", "--release", str(release), "--submission",
                                    str(path), "--output", str(out)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    if out.parent.exists():
        assert [p.name for p in out.parent.iterdir()] == ["score.json"]  # atomic: no temporary file
    return res, out


@pytest.fixture(scope="module")
def reference_record(release, good, tmp_path_factory):
    res, out = run(release, tmp_path_factory.mktemp("good"), {"scores": good})
    assert res.exit_code == 0, res.output
    return load_json(out)


@pytest.mark.parametrize("text, needle", [
    (corpus.DEEP_JSON, "nested"), (corpus.HUGE_NUMBER_JSON, "invalid JSON"),
    ('{"scores": {"x": {"NH": 1' + "0" * 400 + "}}}", "overflows a double"), (corpus.NAN_JSON, "non-finite"),
    (corpus.NON_UTF8, "not UTF-8"), (corpus.MALFORMED_JSON, "invalid JSON"), ("[1, 2]", "expected {'scores'"),
    ('{"scores": [1, 2]}', "expected {'scores'"), ('"' + "a" * (17 << 20) + '"', "byte limit"),
], ids=["deep", "huge-int-digits", "huge-int", "nan", "non-utf8", "malformed", "list", "scores-list",
        "17-MiB"])
def test_unreadable_submission_scores_zero_with_reason(release, tmp_path, text, needle):
    res, out = run(release, tmp_path, text)
    assert res.exit_code == 0, res.output
    r = load_json(out)
    assert r["S"] == 0.0 and all(a["value"] == 0.0 and a["reason"] for a in r["items"].values())
    assert any(needle in p for p in r["problems"]), r["problems"]


@pytest.mark.parametrize("make", [lambda d: corpus.fifo(d, "sub.json"),
                                  lambda d: corpus.device_link(d, "sub.json"),
                                  lambda d: corpus.raw_pickle(d, "sub.json")],
                         ids=["fifo", "dev-zero", "pickle"])
def test_special_or_binary_file_scores_zero(release, tmp_path, make):
    res, out = run(release, tmp_path, make(tmp_path))
    assert res.exit_code == 0, res.output
    r = load_json(out)
    assert r["S"] == 0.0 and r["problems"]
    assert not (tmp_path / corpus.MARKER).exists()


@pytest.mark.parametrize("value", [None, "0.5", True, [0.5], {"v": 0.5}, "Infinity"],
                         ids=["null", "string", "bool", "list", "object", "inf-string"])
def test_bad_value_loses_only_its_item(release, good, reference_record, tmp_path, value):
    scores = {k: dict(v) for k, v in good.items()}
    genuine = sorted(scores)[0]  # a genuine image takes part in every item's curve
    scores[genuine]["SPL"] = value
    scores["../../etc/passwd"] = {"NH": 1.0}
    scores["img|x"] = "not an entry"
    res, out = run(release, tmp_path, {"scores": scores, "extra": 1})
    assert res.exit_code == 0, res.output
    r = load_json(out)
    assert r["items"]["SPL"]["value"] == 0.0 and "without a finite score" in r["items"]["SPL"]["reason"]
    assert r["S"] == 0.0 and r["zero_rule"] == "SPL not computable"
    for item in ("NH", "DUP"):  # the untouched items keep their exact areas
        assert r["items"][item] == reference_record["items"][item]
    assert any("2 unknown image id(s)" in p for p in r["problems"])


def test_reference_record_is_complete(reference_record):
    assert set(reference_record["items"]) == {"NH", "DUP", "SPL"} and reference_record["problems"] == []
    assert 0.0 < reference_record["S"] <= 1.0


def test_bad_release_is_a_clear_error(release, good, tmp_path):
    import shutil

    bad = tmp_path / "rel"
    shutil.copytree(release / "public", bad / "public")
    (bad / "private").mkdir()
    (bad / "private" / "labels.json").write_text(corpus.DEEP_JSON)
    sub = tmp_path / "s.json"
    sub.write_text(json.dumps({"scores": good}))
    out = tmp_path / "score.json"
    res = CliRunner().invoke(main, ["forensics-evaluate", "--release", str(bad), "--submission", str(sub),
                                    "--output", str(out)])
    assert res.exit_code == 2 and "labels.json" in res.output and "nested" in res.output, res.output
    assert not out.exists()
