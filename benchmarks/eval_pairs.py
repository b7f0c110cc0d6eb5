#!/usr/bin/env python3
"""How well the what-if model predicts real changes: pairs of traces of one workload recorded
twice with one condition changed.

    python benchmarks/eval_pairs.py [PAIR ...] [--match REGEX[=REGEX_B]] [--device KEY] [--json]

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

Per pair it prints the time per step (the steps from the first one's start to the last one's
end, over their count: what_if's "totals") measured in A and B, predicted for B, the error
(predicted - measured B) / measured B, and two baselines: "no change" (A as it is) and "kernel
sum" (A's step plus the change in summed GPU kernel time per step, B's minus A's: what a
reading of kernel totals alone would say; it looks at B). Evidence beside it: GPU kernel time
and CPU-operator time per step in A and B, and the bound of A's critical path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_PAIRS = os.path.join(HERE, "..", "..", "shared", "traces", "pairs")

RECIPES: dict[str, dict[str, Any]] = {
    "dataloader_workers": {"match": r"enumerate\(DataLoader\)"},
    "attention_backend": {"match": {"fmha_fwd": "sage_fwd|sage_quant"}},
    "gpu_swap": {"device": "B"},
}


def _load(path: str):
    import hta_fast

    return hta_fast.load_dir(path) if os.path.isdir(path) else hta_fast.load(path)


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


def per_step(traces, **edits) -> tuple[float, float, Any]:
    """(predicted, replayed) ns per step from what_if's totals, and the result."""
    from hta_fast.model.whatif.steps import what_if

    r = what_if(traces, **edits)
    t = r["totals"]
    n = max(int(t["steps"].to_numpy().sum()), 1)
    return t["predicted"].to_numpy().sum() / n, t["replayed"].to_numpy().sum() / n, r


def time_per_step(traces, kinds) -> float:
    """Summed duration of events of these kinds inside profiler steps, per step (ns), over
    ranks (mean)."""
    from hta_fast.frame.select import as_traceset

    out = []
    for rank in as_traceset(traces).ranks:
        t = as_traceset(traces)[rank]
        kind, step = t.column("events", "kind"), t.column("events", "step")
        dur = np.maximum(t.column("events", "dur"), 0)
        sel = np.isin(kind, kinds) & (step >= 0)
        out.append(float(dur[sel].sum()) / max(len(np.unique(step[step >= 0])), 1))
    return float(np.mean(out)) if out else 0.0


def device_key(traces) -> Optional[str]:
    from hta_fast.analysis.roofline import resolve_device
    from hta_fast.costs.devices import DeviceTable
    from hta_fast.frame.select import as_traceset

    ts = as_traceset(traces)
    dev = resolve_device(ts[ts.ranks[0]], None, DeviceTable.load(None))
    return dev.key if dev is not None else None


def evaluate(label: str, a_path: str, b_path: str, recipe: dict[str, Any]) -> dict[str, Any]:
    from hta_fast.schema import EventKind

    a, b = _load(a_path), _load(b_path)
    if "match" in recipe:
        edits: dict[str, Any] = {"durations_from": b, "match": recipe["match"]}
        what = f"durations_from=B, match={recipe['match']!r}"
    else:
        key = device_key(b) if recipe["device"] == "B" else recipe["device"]
        if key is None:
            raise SystemExit(f"{label}: B's GPU is not in the device table; pass --device")
        edits = {"device": key}
        what = f"device={key}"
    predicted, measured_a, result = per_step(a, **edits)
    measured_b = per_step(b)[1]
    kernels = [EventKind.kernel]
    kernel_a, kernel_b = time_per_step(a, kernels), time_per_step(b, kernels)
    cpu_a, cpu_b = time_per_step(a, [EventKind.cpu_op]), time_per_step(b, [EventKind.cpu_op])
    kernel_sum = measured_a + (kernel_b - kernel_a)
    bound = result.table["bound_before"].to_pylist()

    def err(x: float) -> float:
        return 100.0 * (x - measured_b) / measured_b

    return {
        "pair": label,
        "what_if": what,
        "measured_a_ms": measured_a / 1e6,
        "measured_b_ms": measured_b / 1e6,
        "predicted_b_ms": predicted / 1e6,
        "error_pct": err(predicted),
        "no_change_error_pct": err(measured_a),
        "kernel_sum_error_pct": err(kernel_sum),
        "kernel_ms_per_step": [kernel_a / 1e6, kernel_b / 1e6],
        "cpu_op_ms_per_step": [cpu_a / 1e6, cpu_b / 1e6],
        "a_bound": max(set(bound), key=bound.count) if bound else None,
        "notes": [n for n in result.notes if n.startswith("durations_from")],
    }


def _match(text: str) -> dict[str, str]:
    here, sep, there = text.partition("=")
    return {here: there if sep else here}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pairs", nargs="*", help="pair folders (default: ../shared/traces/pairs/*)")
    ap.add_argument("--match", help="REGEX[=REGEX_B]: durations_from=B for these events")
    ap.add_argument("--device", help="device table key: A's steps on that GPU")
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
            rows.append(evaluate(label, a_path, b_path, recipe))
    head = (
        f"{'pair':44} {'A ms':>9} {'B ms':>9} {'pred B':>9} {'error':>8} "
        f"{'no chg':>8} {'k-sum':>8}  bound of A   what-if"
    )
    print(head)
    for r in rows:
        print(
            f"{r['pair']:44} {r['measured_a_ms']:9.2f} {r['measured_b_ms']:9.2f} "
            f"{r['predicted_b_ms']:9.2f} {r['error_pct']:+7.1f}% {r['no_change_error_pct']:+7.1f}% "
            f"{r['kernel_sum_error_pct']:+7.1f}%  {str(r['a_bound']):12} {r['what_if']}"
        )
    print()
    print(f"{'pair':44} {'kernel ms/step A -> B':>24} {'CPU-op ms/step A -> B':>24}")
    for r in rows:
        k, c = r["kernel_ms_per_step"], r["cpu_op_ms_per_step"]
        print(f"{r['pair']:44} {k[0]:11.2f} -> {k[1]:9.2f} {c[0]:11.2f} -> {c[1]:9.2f}")
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
