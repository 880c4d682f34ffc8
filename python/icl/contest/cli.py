"""``icl contest-score`` and ``icl contest-rank``."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("contest-score")
@click.argument("input_json", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--thresholds",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Published threshold file; without it the result is 'not rankable'.",
)
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Score record."
)
def contest_score(input_json: Path, thresholds: Path | None, output: Path) -> None:
    """Score one team's evaluation file INPUT_JSON: NH, DUP, SPL, S, weights, total and gate."""
    from rich.console import Console

    from icl.contest.gate import UNPUBLISHED, parse_thresholds
    from icl.contest.report import score_table
    from icl.contest.scoring import score_result
    from icl.io import load_json, write_json

    th = UNPUBLISHED if thresholds is None else parse_thresholds(load_json(thresholds), str(thresholds))
    record = score_result(load_json(input_json), th, str(input_json))
    write_json(output, record)
    console = Console()
    console.print(score_table(record))
    scoring = record["versions"]["scoring"]
    console.print(
        f"model: {record['versions']['model'] or '(none given)'}; scoring: {scoring['package']}, "
        f"source sha256 {scoring['source_sha256'][:16]}",
        highlight=False,
    )
    for p in record["problems"]:
        console.print(f"problem: {p}")


@click.command("contest-rank")
@click.argument("records", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Ranking JSON."
)
def contest_rank(records: tuple[Path, ...], output: Path) -> None:
    """Rank contest-score records (RECORDS) within each track and group; each is re-validated first."""
    from rich.console import Console

    from icl.contest.rank import rank_records
    from icl.contest.report import rank_notes, rank_table
    from icl.io import load_json, write_json

    ranking = rank_records([(str(p), load_json(p)) for p in records])
    write_json(output, ranking)
    console = Console()
    for group in ranking["groups"]:
        console.print(rank_table(group))
        for line in rank_notes(group):
            console.print(line, highlight=False)


COMMANDS = [contest_score, contest_rank]
