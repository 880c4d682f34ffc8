"""Readable terminal summary of a patient-layer score document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table


def _f(v: float | None, digits: int = 2) -> str:
    return "null" if v is None else f"{v:.{digits}f}"


def print_summary(result: Mapping[str, Any], console: Console | None = None) -> None:
    """Print the score, its parts, counts, exclusions and side diagnostics as rich tables."""
    console = console or Console()
    head = Table(
        title="Patient-perception development score" + (" (FICTIONAL data)" if result["fictional"] else ""),
        show_header=False,
    )
    ci = result["ci95_patient_bootstrap"]
    head.add_row("score (0-100, patient macro mean)", _f(result["patient_perception_score"]))
    head.add_row(
        "95 % patient bootstrap",
        "null (fewer than 2 patients)" if ci is None else f"{ci[0]:.2f} - {ci[1]:.2f}",
    )
    for k, v in result["components"].items():
        head.add_row(f"mean {k}", _f(v, 3))
    head.add_row("clinical_score / mechanistic_understanding_score", "null / null")
    head.add_row("validated_instrument", "false")
    c = result["counts"]
    head.add_row(
        "eligible patients / targets / repeats",
        f"{c['eligible_patients']} / {c['eligible_targets']} / {c['eligible_repeats']}",
    )
    head.add_row(
        "excluded records / missing or invalid targets",
        f"{c['excluded_records']} / {c['missing_or_invalid_targets']}",
    )
    ri = result["radius_interval"]
    head.add_row(
        "radius 80 % interval: n, coverage, width, IS",
        f"{ri['n']}, {_f(ri['coverage'])}, {_f(ri['mean_width_deg'])} deg, {_f(ri['mean_interval_score'])}",
    )
    for k, v in result["symptoms_mae"].items():
        head.add_row(f"{k} MAE (0-10), n", f"{_f(v['mae'])}, {v['n']}")
    b = result["brightness8"]
    head.add_row(
        "brightness8 normalised MAE / coverage", f"{_f(b['normalised_mae'], 3)} / {_f(b['coverage'], 3)}"
    )
    head.add_row("repeat-to-repeat agreement (context)", _f(result["repeat_agreement"]["mean_S"]))
    rc = result["raster_check"]
    if rc["fine_n"]:
        head.add_row(
            f"fine-raster IoU change {rc['raster_n']} -> {rc['fine_n']} (max)",
            f"{_f(rc['max_abs_iou_difference'], 4)} over {rc['reports_rechecked']} reports "
            f"({', '.join(rc['reasons']) or 'none needed'})",
        )
    sb = result["selection_bias"]
    head.add_row(
        "share 'present': eligible / excluded (Fisher p)",
        f"{_f(sb['present_share']['eligible'])} / {_f(sb['present_share']['excluded'])} "
        f"({_f(sb['present_share']['fisher_exact_p'], 3)})",
    )
    console.print(head)
    for w in sb["warnings"]:
        console.print(f"selection bias: {w}", highlight=False)
    if result["exclusions"]["by_reason"]:
        ex = Table(title="Excluded from the main score (records per reason)")
        ex.add_column("reason")
        ex.add_column("records", justify="right")
        for k, v in result["exclusions"]["by_reason"].items():
            ex.add_row(k, str(v))
        console.print(ex)
    if result["missing_or_invalid"]:
        mi = Table(title="Eligible targets scored 0")
        mi.add_column("target")
        mi.add_column("reason")
        for m in result["missing_or_invalid"]:
            mi.add_row(m["target_id"], m["reason"])
        console.print(mi)
