"""`hta-fast doctor`: why the GPU is idle, ranked; usable as a CI gate.

Exit status: 0 healthy (or every gate passes), 1 a gate fails, 2 bad input, 3 a rank
recorded no GPU activity (nothing to judge there; it fails whatever gates are asked, and
comes before 1). Without --fail-under-utilization / --fail-on, any finding above its
threshold fails; with them, only those gates decide.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
from types import ModuleType
from typing import TYPE_CHECKING, Optional, Sequence

import click

from ..app import BadInput, Options, cli
from ..loading import (
    RANKS_HELP,
    STEPS_HELP,
    parse_ints,
    parse_steps,
    path_arguments,
    pick_steps,
    recover_option,
    steps_from_option,
    subset,
)
from ..options import load_traces
from ..output import dumps
from ..terminal import echo

if TYPE_CHECKING:
    from ...doctor import Diagnosis, Thresholds


def doctor_module() -> ModuleType:
    """hta_fast.doctor, imported when first needed (tests may put a stand-in in its place)."""
    try:
        return importlib.import_module("hta_fast.doctor")
    except ImportError as e:
        raise BadInput(f"the doctor is not available in this installation ({e})") from None


def thresholds_of(
    mod: ModuleType, pairs: tuple[str, ...], path: str | None
) -> Optional[Thresholds]:
    """Thresholds from a JSON file (--thresholds) updated by KEY=VALUE pairs (--threshold)."""
    values: dict[str, float] = {}
    if path:
        with open(path) as fh:
            try:
                loaded = json.load(fh)
            except ValueError as e:
                raise click.BadParameter(
                    f"{path}: not JSON ({e})", param_hint="--thresholds"
                ) from None
        if not isinstance(loaded, dict):
            raise click.BadParameter(
                f"{path}: expected a JSON object of KEY: number", param_hint="--thresholds"
            )
        values.update(loaded)
    known = [f.name for f in dataclasses.fields(mod.Thresholds)]
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise click.BadParameter(
                f"{pair!r}: expected KEY=VALUE with KEY one of {', '.join(known)}",
                param_hint="--threshold",
            )
        try:
            values[key] = float(value)
        except ValueError:
            raise click.BadParameter(
                f"{pair!r}: {value!r} is not a number", param_hint="--threshold"
            ) from None
    if not values:
        return None
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise click.BadParameter(
            f"unknown threshold(s) {', '.join(unknown)}; known: {', '.join(known)}",
            param_hint="--thresholds",
        )
    return mod.Thresholds.from_mapping(values)


def gate_reasons(
    diag: Diagnosis, fail_under_utilization: Optional[float], fail_on: Sequence[str]
) -> list[str]:
    if fail_under_utilization is None and not fail_on:
        return no_gpu_reasons(diag) + [
            f"{f.cause}: {f.title}" for f in diag.findings if f.above_threshold
        ]
    return list(diag.failed(fail_under_utilization=fail_under_utilization, fail_on=fail_on))


def no_gpu_reasons(diag: Diagnosis) -> list[str]:
    return list(diag.no_gpu_reasons())


def exit_status(diag: Diagnosis, reasons: Sequence[str]) -> int:
    """3 when a rank recorded no GPU activity, else 1 when a gate fails, else 0."""
    if no_gpu_reasons(diag):
        return 3
    return 1 if reasons else 0


@cli.command()
@path_arguments
@click.option("--steps", help=STEPS_HELP)
@click.option("--ranks", help=RANKS_HELP)
@click.option("--json", "as_json", is_flag=True, help="The diagnosis as one JSON document.")
@click.option(
    "--fail-under-utilization",
    type=click.FloatRange(0, 100),
    metavar="PCT",
    help="Fail (exit 1) when GPU utilisation is below PCT percent.",
)
@click.option(
    "--fail-on",
    multiple=True,
    metavar="CAUSE",
    help="Fail (exit 1) when this cause is above its threshold (repeatable).",
)
@click.option(
    "--threshold",
    "threshold_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one threshold (repeatable).",
)
@click.option(
    "--thresholds",
    "thresholds_file",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON file of threshold overrides.",
)
@click.option(
    "--model/--no-model",
    "model",
    default=None,
    help="Predict each cause's saving by replaying its edit on the dependency graph and "
    "rank by it (default: on up to 64 ranks).",
)
@click.option(
    "--owners",
    is_flag=True,
    help="Beside each cost, the time its owners hold of the step on the GPU (hta-fast "
    "owners; where the model runs).",
)
@recover_option
@steps_from_option
@click.pass_obj
@click.pass_context
def doctor(
    ctx: click.Context,
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    as_json: bool,
    fail_under_utilization: Optional[float],
    fail_on: tuple[str, ...],
    threshold_pairs: tuple[str, ...],
    thresholds_file: Optional[str],
    model: Optional[bool],
    owners: bool,
    recover: bool,
    steps_from: str,
) -> None:
    """Why the GPU is idle: the causes of lost GPU time, ranked, with evidence and advice.

    Exit status 0 when healthy, 1 when a gate fails, 2 for bad input, 3 when a rank
    recorded no GPU activity. CAUSE is a cause's key as the output names it (the list:
    docs/doctor.md, or a wrong one's error).
    """
    mod = doctor_module()
    bad = [c for c in fail_on if c not in mod.CAUSES]
    if bad:
        raise click.BadParameter(
            f"{', '.join(bad)}: not a cause; choose from {', '.join(mod.CAUSES)}",
            param_hint="--fail-on",
        )
    thresholds = thresholds_of(mod, threshold_pairs, thresholds_file)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = subset(traces, parse_ints(ranks, "rank"))
    diag = mod.diagnose(
        traces,
        steps=pick_steps(traces, parse_steps(steps)),
        thresholds=thresholds,
        model="auto" if model is None else model,
        owners=owners,
    )
    reasons = gate_reasons(diag, fail_under_utilization, fail_on)
    if as_json:
        doc = diag.to_dict()
        doc["gate"] = {"passed": not reasons, "reasons": reasons}
        click.echo(dumps(doc))
    else:
        echo(diag.to_text())  # names from the trace: control characters escaped
        for r in reasons:
            echo(f"FAIL: {r}", err=True)
    ctx.exit(exit_status(diag, reasons))
