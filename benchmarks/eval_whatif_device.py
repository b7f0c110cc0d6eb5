#!/usr/bin/env python3
"""How well "this step on another GPU" (what_if(device=...)) predicts a trace recorded there.

    python benchmarks/eval_whatif_device.py A B [--tf32 auto|on|off] [--no-curves] [--windows]
        [--steps-from SOURCE]

Predicts A's steps on B's GPU and compares the time per step with B's, both directions (A on
B's device, B on A's). Source, target and prediction are measured alike (eval_common: each
trace replayed, the prediction the source replayed with the edit; what_if's "totals", the
steps from the first one's start to the last one's end over their count; a trace without
steps is one step):

  no model        the source as it is;
  spec            every kernel of the source scaled by its family's roofline ratio of the
                  two devices (memory bandwidth where the family has no roofline;
                  communication unchanged): a spec sheet without the model's curves and
                  latency split; reads nothing of the target but its device;
  (a) device      kernels at predict()'s times on the other GPU, the host as recorded in the
                  source trace: uses nothing from the target trace but its device name;
  (b) device+cpu  the same with CPU time scaled by the ratio of the two traces' CPU operator
                  time per step, a number READ FROM THE TARGET TRACE: an upper bound on what
                  knowing the other host would add, not a prediction ("n/a" where the
                  source has no CPU operator time).

Error: (predicted - target) / target, in percent. --windows replays each step's window alone
(default: the steps as one chain, hta_fast.model.graph.walk), the three measured alike then
too (each window's time, over their count). --steps-from takes both traces' steps from
another source (hta_fast.steps.steps_from: iterations, inference passes).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from eval_common import (
    add_steps_from,
    cpu_op_time_per_step,
    device_of,
    fmt,
    load,
    ms,
    pct,
    pct_error,
    ratio,
    rounded,
    spec_ratio_changes,
    step_time,
)


def direction(src, dst, dev_src, dev_dst, tf32, curves: bool, chained: bool) -> dict[str, Any]:
    """One direction's figures: src's steps predicted on dst's device, against dst."""
    from hta_fast.model.whatif.device_changes import device_changes

    at_dst, at_src = step_time(dst, chained=chained), step_time(src, chained=chained)
    target, own = at_dst.replayed, at_src.replayed
    cpu_ratio = ratio(cpu_op_time_per_step(dst), cpu_op_time_per_step(src))
    spec = step_time(
        src,
        chained=chained,
        duration_change=spec_ratio_changes(src, dev_src, dev_dst, allow_tf32=tf32),
    ).predicted
    # what_if(src, device=...) with the curves switchable (what_if keeps predict's default)
    change, _, _ = device_changes(src, dev_dst, allow_tf32=tf32, efficiency_curves=curves)
    dev_only = step_time(src, chained=chained, duration_change=change).predicted
    dev_cpu = (
        None
        if cpu_ratio is None
        else step_time(src, chained=chained, duration_change=change, cpu=cpu_ratio).predicted
    )
    return {
        "source_steps": at_src.steps,
        "target_steps": at_dst.steps,
        "source_step_ms": rounded(ms(own), 3),
        "target_step_ms": rounded(ms(target), 3),
        "no_model_err_pct": rounded(pct_error(own, target), 1),
        "spec_ratio_ms": rounded(ms(spec), 3),
        "spec_ratio_err_pct": rounded(pct_error(spec, target), 1),
        "device_ms": rounded(ms(dev_only), 3),
        "device_err_pct": rounded(pct_error(dev_only, target), 1),
        "cpu_ratio_from_target": rounded(cpu_ratio, 3),
        "device_cpu_ms": rounded(ms(dev_cpu), 3),
        "device_cpu_err_pct": rounded(pct_error(dev_cpu, target), 1),
    }


def print_table(out: dict[str, dict[str, Any]]) -> None:
    print(
        f"{'pair':<32}{'steps':>7}{'source':>9}{'target':>9}{'no model':>10}{'spec':>9}{'err':>9}"
        f"{'(a) dev':>10}{'err':>9}{'cpu x':>7}{'(b) +cpu':>10}{'err':>9}"
    )
    for k, r in out.items():
        steps = f"{r['source_steps']}/{r['target_steps']}"
        print(
            f"{k:<32}{steps:>7}"
            f"{fmt(r['source_step_ms'], '.2f', 9)}{fmt(r['target_step_ms'], '.2f', 9)}"
            f"{pct(r['no_model_err_pct'], 10)}{fmt(r['spec_ratio_ms'], '.2f', 9)}"
            f"{pct(r['spec_ratio_err_pct'], 9)}{fmt(r['device_ms'], '.2f', 10)}"
            f"{pct(r['device_err_pct'], 9)}{fmt(r['cpu_ratio_from_target'], '.2f', 7)}"
            f"{fmt(r['device_cpu_ms'], '.2f', 10)}{pct(r['device_cpu_err_pct'], 9)}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a", help="a trace file, or a folder of ranks (its first rank is used)")
    ap.add_argument("b")
    ap.add_argument("--tf32", choices=["auto", "on", "off"], default="off")
    ap.add_argument("--no-curves", action="store_true")
    ap.add_argument(
        "--windows",
        action="store_true",
        help="each step's window alone (default: consecutive steps as one chain)",
    )
    add_steps_from(ap)
    args = ap.parse_args()

    a = load(args.a, args.steps_from, first_rank=True)
    b = load(args.b, args.steps_from, first_rank=True)
    dev = {"A": device_of(a), "B": device_of(b)}
    if None in dev.values():
        raise SystemExit(f"device not in the table: {dev}")
    tf32 = {"auto": "auto", "on": True, "off": False}[args.tf32]
    out = {}
    for src_name, src, dst_name, dst in (("A", a, "B", b), ("B", b, "A", a)):
        key = f"{dev[src_name].key} -> {dev[dst_name].key}"
        out[key] = direction(
            src, dst, dev[src_name], dev[dst_name], tf32, not args.no_curves, not args.windows
        )
    print_table(out)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
