#!/usr/bin/env python3
"""How well "this step on another GPU" (what_if(device=...)) predicts a trace recorded there.

    python benchmarks/eval_whatif_device.py A B [--tf32 auto|on|off] [--no-curves] [--windows]

Predicts A's steps on B's GPU and compares the mean predicted step with B's mean measured
step, both directions (A on B's device, B on A's):

  (a) device      kernels at predict()'s times on the other GPU, the host as recorded in the
                  source trace: uses nothing from the target trace but its device name;
  (b) device+cpu  the same with CPU time scaled by the ratio of the two traces' CPU operator
                  time per step, a number READ FROM THE TARGET TRACE: an upper bound on what
                  knowing the other host would add, not a prediction.

Error: (predicted - measured) / measured of the mean step, in percent. --windows replays each
profiler step's window alone (default: the steps as one chain, hta_fast.model.graph.walk).
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def cpu_op_time_per_step(trace) -> float:
    """Summed duration of CPU operators inside profiler steps, per step (ns)."""
    from hta_fast.schema import EventKind

    kind = trace.column("events", "kind")
    step = trace.column("events", "step")
    dur = np.maximum(trace.column("events", "dur"), 0)
    sel = (kind == EventKind.cpu_op) & (step >= 0)
    steps = len(np.unique(step[step >= 0]))
    return float(dur[sel].sum()) / max(steps, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tf32", choices=["auto", "on", "off"], default="off")
    ap.add_argument("--no-curves", action="store_true")
    ap.add_argument(
        "--windows",
        action="store_true",
        help="each step's window alone (default: consecutive steps as one chain)",
    )
    args = ap.parse_args()

    import hta_fast
    from hta_fast.analysis.roofline import resolve_device
    from hta_fast.costs.devices import DeviceTable
    from hta_fast.model.whatif.device_edit import device_changes
    from hta_fast.model.whatif.steps import what_if

    def load(path: str):  # a trace file, or a folder holding one rank's trace
        if path.endswith((".json", ".gz")):
            return hta_fast.load(path)
        ts = hta_fast.load_dir(path)
        return ts[ts.ranks[0]]

    a, b = load(args.a), load(args.b)
    table = DeviceTable.load(None)
    dev = {"A": resolve_device(a, None, table), "B": resolve_device(b, None, table)}
    if None in dev.values():
        raise SystemExit(f"device not in the table: {dev}")
    tf32 = {"auto": "auto", "on": True, "off": False}[args.tf32]
    out = {}
    for src_name, src, dst_name, dst in (("A", a, "B", b), ("B", b, "A", a)):
        measured = what_if(dst).to_pandas().measured.mean()
        own = what_if(src).to_pandas().measured.mean()
        cpu_ratio = cpu_op_time_per_step(dst) / cpu_op_time_per_step(src)
        # what_if(src, device=...) with the curves switchable (what_if keeps predict's default)
        change, _ = device_changes(
            src, dev[dst_name], allow_tf32=tf32, efficiency_curves=not args.no_curves
        )
        chained = not args.windows
        dev_only = (
            what_if(src, duration_change=change, chained=chained).to_pandas().predicted.mean()
        )
        dev_cpu = (
            what_if(src, duration_change=change, cpu=cpu_ratio, chained=chained)
            .to_pandas()
            .predicted.mean()
        )
        key = f"{dev[src_name].key} -> {dev[dst_name].key}"
        out[key] = {
            "source_step_ms": round(own / 1e6, 3),
            "target_step_ms": round(measured / 1e6, 3),
            "no_model_err_pct": round(100 * (own - measured) / measured, 1),
            "device_ms": round(dev_only / 1e6, 3),
            "device_err_pct": round(100 * (dev_only - measured) / measured, 1),
            "cpu_ratio_from_target": round(cpu_ratio, 3),
            "device_cpu_ms": round(dev_cpu / 1e6, 3),
            "device_cpu_err_pct": round(100 * (dev_cpu - measured) / measured, 1),
        }
    print(
        f"{'pair':<32}{'source':>9}{'target':>9}{'no model':>10}{'(a) dev':>10}{'err':>8}"
        f"{'cpu x':>7}{'(b) +cpu':>10}{'err':>8}"
    )
    for k, r in out.items():
        print(
            f"{k:<32}{r['source_step_ms']:>9.2f}{r['target_step_ms']:>9.2f}"
            f"{r['no_model_err_pct']:>9.1f}%{r['device_ms']:>10.2f}{r['device_err_pct']:>7.1f}%"
            f"{r['cpu_ratio_from_target']:>7.2f}{r['device_cpu_ms']:>10.2f}"
            f"{r['device_cpu_err_pct']:>7.1f}%"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
