"""Expert-review commands: review-packets, review-page, review-merge."""

from __future__ import annotations

from pathlib import Path

import click


def _pairs(values: tuple[str, ...], option: str) -> dict[str, Path]:
    """Parse NAME=FOLDER values; each folder is an input of the command (no output may lie inside it)."""
    from icl.io import protect_input

    out = {}
    for v in values:
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FOLDER, got {v!r}", param_hint=option)
        if name in out:
            raise click.BadParameter(f"{name} given twice", param_hint=option)
        out[name] = Path(path)
        protect_input(path)
    return out


@click.command("review-packets")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--run",
    "runs",
    multiple=True,
    required=True,
    metavar="NAME=RUN",
    help="A submission's name and its run folder (plain OUTPUT or evaluated run); repeatable.",
)
@click.option(
    "--submission",
    "submissions",
    multiple=True,
    metavar="NAME=FOLDER",
    help="The submission folder, for its report.md and model/eye.json; repeatable.",
)
@click.option(
    "--split", default="test", show_default=True, type=click.Choice(["train", "dev", "test", "ood"]),
    help="Split of the release whose expert checks are packed.",
)
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for packets.json and the private identity map.")
def review_packets(
    release: Path, runs: tuple[str, ...], submissions: tuple[str, ...], split: str, output: Path
) -> None:
    """Write blind packets for every expert check of RELEASE (OUTPUT/packets.json) and the private identity map."""
    from icl.io import check_output_place
    from icl.review.packets import make_packets

    run_dirs, sub_dirs = _pairs(runs, "--run"), _pairs(submissions, "--submission")
    check_output_place(output)  # again, now that the run and submission folders are known inputs
    s = make_packets(release, run_dirs, output, split, sub_dirs)
    click.echo(
        f"{s['packets']} packets ({s['checks']} expert checks, {s['submissions']} submissions) in "
        f"{output / 'packets.json'}; keep {output / 'private'} from the reviewers"
    )


@click.command("review-page")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Copy the page here instead of serving it.",
)
@click.option("--port", default=8738, show_default=True, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (0 picks a free one).")
def review_page(output: Path | None, port: int) -> None:
    """Serve the offline review page on 127.0.0.1, or copy the single HTML file to OUTPUT."""
    from icl.io import atomic_write_bytes
    from icl.review.page import make_server, page_bytes

    if output is not None:
        atomic_write_bytes(output, page_bytes())
        click.echo(f"review page written to {output} (open it in a browser; it makes no request)")
        return
    try:
        server = make_server(port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    click.echo(f"Review page at http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command("review-merge")
@click.argument("packets", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("first", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("second", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--arbitration",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The third reviewer's file for the disagreements.",
)
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the merged reviews and the agreement statistics.")
def review_merge(packets: Path, first: Path, second: Path, arbitration: Path | None, output: Path) -> None:
    """Merge reviewers' files FIRST and SECOND on PACKETS (and an arbitration): agreement and reviews per submission."""
    from icl.review.merge import merge

    r = merge(packets, first, second, output, arbitration)
    st = r["agreement"]
    if st:
        ci = st["kappa_bootstrap_95"]
        k = "undefined" if st["weighted_kappa"] is None else f"{st['weighted_kappa']:.3f}"
        click.echo(
            f"{st['packets']} packets graded by both: agreement {st['percent_agreement']:.3f}, "
            f"weighted kappa {k}"
            + (f" (95 % {ci[0]:.3f} to {ci[1]:.3f})" if ci else "")
        )
    click.echo(
        f"{len(r['disagreements'])} disagreements, {len(r['unsettled'])} awaiting arbitration; "
        f"reviews per submission in {output / 'reviews'}"
    )


COMMANDS = [review_packets, review_page, review_merge]
