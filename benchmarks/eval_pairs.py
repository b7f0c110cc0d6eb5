#!/usr/bin/env python3
"""How well the what-if model predicts real changes: pairs of traces of one workload recorded
twice with one condition changed.

    python benchmarks/eval_pairs.py [PAIR ...] [--match REGEX[=REGEX_B]] [--device KEY]
        [--steps-from SOURCE] [--json]

A PAIR is a folder holding A/ and B/ (each a trace file or a folder of ranks) or exactly two
trace files (A sorts first). Without PAIR: every pair in ../shared/traces/pairs. Each pair is
predicted from A with the what-if its change calls for, and compared with B:

    dataloader_workers  durations_from=B, match=enumerate\\(DataLoader\\): the loader as fast as
                        in the run with 4 workers
    attention_backend   durations_from=B, match={fmha_fwd: sage_fwd|sage_quant}: the attention
                        kernels (and Sage's quantisation kernel) as measured in B
    gpu_swap            device=B's GPU (kernels at hta_fast.model.predict's times there; the
                        host as recorded in A)
    any other folder    --match (durations_from=B) or --device, as given

Per pair it prints the time per step of A and B (each trace replayed unedited) and of the
prediction (A replayed with the edit), all three measured alike (eval_common: what_if's
"totals", the steps from the first one's start to the last one's end, over their count; a
trace without steps is one step), the error (predicted - B) / B, and the baselines: "no
change" (A as it is); for a device what-if "spec" (A's kernels scaled by their family's
roofline ratio of the two devices, memory bandwidth where a family has none: a spec sheet
without the model; it reads nothing of B but its device); and "kernel sum" (A's step plus
the change in summed GPU kernel time per step, B's minus A's: what a reading of kernel
totals alone would say; it looks at B). Then, after warm-up (the steps
hta_fast.steps.warmup.warmup_steps flags: the first, and any over twice the median,
left out; hta_fast.model.whatif.per_step), the predicted steps' median and p10-p90 beside
B's measured median: what warm-up and outlier steps do not move. Evidence beside it: GPU kernel time and
CPU-operator time per step in A and B, and the bound of A's critical path. --steps-from
takes both traces' steps from another source (hta_fast.steps.steps_from: iterations,
inference passes) for traces without ProfilerStep events. A figure with nothing to divide
by prints "n/a".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from eval_common import (
    SHARED,
    add_steps_from,
    cpu_op_time_per_step,
    device_of,
    fmt,
    kernel_time_per_step,
    load,
    ms,
    pct,
    pct_error,
    spec_ratio_changes,
    step_time,
)

SHARED_PAIRS = os.path.join(SHARED, "pairs")

RECIPES: dict[str, dict[str, Any]] = {
    "dataloader_workers": {"match": r"enumerate\(DataLoader\)"},
    "attention_backend": {"match": {"fmha_fwd": "sage_fwd|sage_quant"}},
    "gpu_swap": {"device": "B"},
}


def pairs_in(folder: str) -> list[tuple[str, str, str]]:
    """(label, A, B) of a pair folder: A/ and B/, two files, or (gpu_swap) files named
    MODEL.h100.* and MODEL.mi300x.*, one pair per model."""
    if os.path.isdir(os.path.join(folder, "A")) and os.path.isdir(os.path.join(folder, "B")):
        return [(os.path.basename(folder), os.path.join(folder, "A"), os.path.join(folder, "B"))]
    files = sorted(f for f in os.listdir(folder) if f.endswith((".json", ".gz")))
    if os.path.basename(folder.rstrip("/")) == "gpu_swap":
        models = sorted({f.split(".h100.")[0] for f in files if ".h100." in f})
        out = []
        for m in models:
            a = [f for f in files if f.startswith(m + ".h100.")]
            b = [f for f in files if f.startswith(m + ".mi300x.")]
            if a and b:
                out.append(
                    (f"gpu_swap/{m}", os.path.join(folder, a[0]), os.path.join(folder, b[0]))
                )
        return out
    if len(files) != 2:
        raise SystemExit(f"{folder}: expected A/ and B/ or two trace files, found {len(files)}")
    return [(os.path.basename(folder), *(os.path.join(folder, f) for f in files))]


def device_key(traces) -> Optional[str]:
    dev = device_of(traces)
    return dev.key if dev is not None else None


def spec_step(label: str, a, key: str) -> Optional[float]:
    """A's time per step with every kernel at its family's spec ratio to device `key`
    (eval_common.spec_ratio_changes); None where A's own GPU is not in the device table."""
    from hta_fast.costs.devices import DeviceTable

    src, dst = device_of(a), DeviceTable.load(None).get(key)
    if src is None:
        print(f"{label}: A's GPU is not in the device table: no spec ratio", file=sys.stderr)
        return None
    return step_time(a, duration_change=spec_ratio_changes(a, src, dst)).predicted


def evaluate(
    label: str, a_path: str, b_path: str, recipe: dict[str, Any], steps_from: str = "profiler"
) -> dict[str, Any]:
    a, b = load(a_path, steps_from), load(b_path, steps_from)
    spec: Optional[float] = None
    if "match" in recipe:
        edits: dict[str, Any] = {"durations_from": b, "match": recipe["match"]}
        what = f"durations_from=B, match={recipe['match']!r}"
    else:
        key = device_key(b) if recipe["device"] == "B" else recipe["device"]
        if key is None:
            raise SystemExit(f"{label}: B's GPU is not in the device table; pass --device")
        edits = {"device": key}
        what = f"device={key}"
        spec = spec_step(label, a, key)
    at_a, at_b = step_time(a, **edits), step_time(b)
    measured_a, predicted, measured_b, result = (
        at_a.replayed,
        at_a.predicted,
        at_b.replayed,
        at_a.result,
    )
    kernel_a, kernel_b = kernel_time_per_step(a), kernel_time_per_step(b)
    cpu_a, cpu_b = cpu_op_time_per_step(a), cpu_op_time_per_step(b)
    kernel_sum = None if measured_a is None else measured_a + (kernel_b - kernel_a)
    bound = result.table["bound_before"].to_pylist()
    pred_steps, b_steps = (t.result["per_step"].to_pylist()[0] for t in (at_a, at_b))
    return {
        "pair": label,
        "what_if": what,
        "steps_from": steps_from,
        "steps": [at_a.steps, at_b.steps],
        "measured_a_ms": ms(measured_a),
        "measured_b_ms": ms(measured_b),
        "predicted_b_ms": ms(predicted),
        "error_pct": pct_error(predicted, measured_b),
        "no_change_error_pct": pct_error(measured_a, measured_b),
        "spec_ratio_ms": ms(spec),
        "spec_ratio_error_pct": pct_error(spec, measured_b),
        "kernel_sum_error_pct": pct_error(kernel_sum, measured_b),
        "kernel_ms_per_step": [kernel_a / 1e6, kernel_b / 1e6],
        "cpu_op_ms_per_step": [cpu_a / 1e6, cpu_b / 1e6],
        "a_bound": max(set(bound), key=bound.count) if bound else None,
        # after warm-up (hta_fast.model.whatif.per_step): the predicted steps' median and
        # p10-p90, B's measured median, the steps left out
        "predicted_b_median_ms": ms(pred_steps["predicted_median"]),
        "predicted_b_p10_p90_ms": [
            ms(pred_steps["predicted_p10"]),
            ms(pred_steps["predicted_p90"]),
        ],
        "measured_b_median_ms": ms(b_steps["predicted_median"]),
        "warmup_steps": [pred_steps["warmup_steps"], b_steps["warmup_steps"]],
        "notes": [n for n in result.notes if n.startswith("durations_from")],
    }


def _match(text: str) -> dict[str, str]:
    here, sep, there = text.partition("=")
    return {here: there if sep else here}


def print_rows(rows: list[dict[str, Any]]) -> None:
    """The two tables: times per step and errors, then the evidence (the steps measured,
    kernel and CPU time)."""
    print(
        f"{'pair':44} {'A ms':>9} {'B ms':>9} {'pred B':>9} {'error':>8} "
        f"{'no chg':>8} {'spec':>8} {'k-sum':>8}  {'bound of A':17} what-if"
    )
    for r in rows:
        print(
            f"{r['pair']:44} {fmt(r['measured_a_ms'], '.2f', 9)} "
            f"{fmt(r['measured_b_ms'], '.2f', 9)} {fmt(r['predicted_b_ms'], '.2f', 9)} "
            f"{pct(r['error_pct'], 8)} {pct(r['no_change_error_pct'], 8)} "
            f"{pct(r['spec_ratio_error_pct'], 8)} "
            f"{pct(r['kernel_sum_error_pct'], 8)}  {str(r['a_bound']):17} {r['what_if']}"
        )
    print()
    print(
        f"{'pair':44} {'steps A, B':>10} {'kernel ms/step A -> B':>24} "
        f"{'CPU-op ms/step A -> B':>24}"
    )
    for r in rows:
        k, c, n = r["kernel_ms_per_step"], r["cpu_op_ms_per_step"], r["steps"]
        print(
            f"{r['pair']:44} {f'{n[0]}, {n[1]}':>10} {k[0]:11.2f} -> {k[1]:9.2f} "
            f"{c[0]:11.2f} -> {c[1]:9.2f}"
        )
    print()
    print(
        f"{'pair':44} {'pred B median':>13} {'p10-p90':>17} {'B median':>9} {'error':>8}  "
        "warm-up left out (A, B)"
    )
    for r in rows:
        lo, hi = r["predicted_b_p10_p90_ms"]
        spread = "n/a" if lo is None else f"{lo:.2f}-{hi:.2f}"
        print(
            f"{r['pair']:44} {fmt(r['predicted_b_median_ms'], '.2f', 13)} "
            f"{spread:>17} {fmt(r['measured_b_median_ms'], '.2f', 9)} "
            f"{pct(pct_error(r['predicted_b_median_ms'], r['measured_b_median_ms']), 8)}  "
            f"{r['warmup_steps'][0] or '-'}; {r['warmup_steps'][1] or '-'}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pairs", nargs="*", help="pair folders (default: ../shared/traces/pairs/*)")
    ap.add_argument("--match", help="REGEX[=REGEX_B]: durations_from=B for these events")
    ap.add_argument("--device", help="device table key: A's steps on that GPU")
    add_steps_from(ap)
    ap.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = ap.parse_args()
    folders = args.pairs or sorted(
        os.path.join(SHARED_PAIRS, d)
        for d in os.listdir(SHARED_PAIRS)
        if os.path.isdir(os.path.join(SHARED_PAIRS, d))
    )
    rows = []
    for folder in folders:
        name = os.path.basename(folder.rstrip("/"))
        if args.match:
            recipe: dict[str, Any] = {"match": _match(args.match)}
        elif args.device:
            recipe = {"device": args.device}
        elif name in RECIPES:
            recipe = RECIPES[name]
        else:
            sys.exit(f"{folder}: no what-if known for this pair; pass --match or --device")
        for label, a_path, b_path in pairs_in(folder):
            rows.append(evaluate(label, a_path, b_path, recipe, args.steps_from))
    print_rows(rows)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
