#!/usr/bin/env python3
"""How well a trace recorded on one GPU predicts the same workload on another.

    python benchmarks/eval_predict.py A B [--tf32 auto|on|off] [--no-curves]
        [--curve-weights groups|calls] [--device-floor-from TRACE] [--devices-file FILE]
        [--steps-from SOURCE]

Predicts A's operators on B's device (hta_fast.model.predict) and compares, for every
operator group (name + recorded shapes) found in both traces, the predicted time of one call
with the time measured in B. Per family and over all matched groups it prints the
geometric-mean error, exp(mean |ln(predicted / measured)|) - 1 (groups weighted equally),
and end to end the summed time of the matched groups (measured on B, predicted from A, and
measured on A: the "no model" baseline). Two more columns, one a baseline and one not:

  spec       A's time of each group × its roofline time on B's device over that on A's (the
             bound term on each: the peaks and the bandwidth of the two devices), the ratio of
             memory bandwidths where the group has no roofline: what the spec sheets predict,
             without the model's efficiency curves and latency split. Reads nothing of B but
             its device.
  fit on B   the error left when every group of a family is scaled by the one ratio that fits
             B best (the median of B/A over the family's groups): FITTED ON B, an oracle and
             not a prediction, but a floor under the error of any model that moves a
             family's groups together, as a device's peaks and bandwidth do.

Groups whose shapes hold a list of tensors recorded as [] (older profilers' cat) are not
compared: such a key stands for every call site of the operator, not for one workload.
--device-floor-from TRACE gives predict B's GPU's launch floor, measured on TRACE: another
workload recorded on that GPU (B itself would be fitted on the answer, and is refused).
--steps-from sets both traces' steps from another source (hta_fast.steps.steps_from), as on
the other evaluators; the groups compared are the whole traces' either way.

Then, kernel time per step (hta_fast.model.predict_check.kernel_time_errors): per family and
in all, B's measured GPU kernel time per step and the relative error of the default
prediction, of the kernel model in every family (no ratio fallback), of no change and of
the one-ratio baseline. --errors PAIR prints that table as an entry of
hta_fast.model.predict_errors.MEASURED, the figures predict's bands come from.
"""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np
from eval_common import add_steps_from, group_spec_ratios, load


def per_call(trace, rank_table) -> dict:
    return {
        (n, d, t): (g / c)
        for n, d, t, g, c in zip(
            rank_table["name"].to_pylist(),
            rank_table["input_dims"].to_pylist(),
            rank_table["input_type"].to_pylist(),
            rank_table["gpu_time"].to_pylist(),
            rank_table["calls"].to_pylist(),
        )
        if c
    }


def _unrecorded_list(dims, types) -> bool:
    """True when an input is a TensorList whose shapes were recorded as []."""
    try:
        d, t = json.loads(dims), json.loads(types)
    except (TypeError, ValueError):
        return False
    return any(ti == "TensorList" and di == [] for di, ti in zip(d, t))


def gm_error(pred: np.ndarray, meas: np.ndarray) -> float:
    return math.exp(float(np.mean(np.abs(np.log(pred / meas))))) - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument(
        "--tf32",
        choices=["auto", "on", "off"],
        default="off",
        help="FP32 GEMMs at TF32 peaks: where their kernels say so (auto), "
        "always (on), never (off, predict's default)",
    )
    ap.add_argument(
        "--no-curves",
        action="store_true",
        help="scale by the roofline ratio alone, without the efficiency curves",
    )
    ap.add_argument(
        "--curve-weights",
        choices=["groups", "calls"],
        default="groups",
        help="each operator group once in its family's efficiency curve "
        "(predict's default), or weighted by its calls (the earlier default)",
    )
    ap.add_argument(
        "--device-floor-from",
        metavar="TRACE",
        help="another trace recorded on B's GPU: its launch floor becomes predict's "
        "device_floor_ns (by default the launch latency keeps its time)",
    )
    ap.add_argument("--devices-file")
    ap.add_argument(
        "--errors",
        metavar="PAIR",
        help="also print this direction's kernel time per step as an entry of "
        "hta_fast.model.predict_errors.MEASURED, labelled PAIR (where predict's bands come from)",
    )
    add_steps_from(ap)
    args = ap.parse_args()
    if args.device_floor_from and os.path.samefile(args.device_floor_from, args.b):
        raise SystemExit("--device-floor-from must be another trace than B: B is the answer")

    from hta_fast.analysis.ops.roofline import ChargedGroups, resolve_device
    from hta_fast.costs.devices import DeviceTable
    from hta_fast.model.predict import launch_floor_of, predict

    a, b = load(args.a, args.steps_from), load(args.b, args.steps_from)
    table = DeviceTable.load(args.devices_file)
    dev_a, dev_b = resolve_device(a, None, table), resolve_device(b, None, table)
    if dev_a is None or dev_b is None:
        raise SystemExit(f"device not in the table: A {dev_a}, B {dev_b}")
    tf32 = {"auto": "auto", "on": True, "off": False}[args.tf32]
    floor_b = None
    if args.device_floor_from:
        other = load(args.device_floor_from)
        dev_other = resolve_device(other, None, table)
        if dev_other is None or dev_other.key != dev_b.key:
            raise SystemExit(f"{args.device_floor_from} was not recorded on B's {dev_b.key}")
        floor_b = launch_floor_of(other)
    ops = predict(
        a,
        dev_b,
        allow_tf32=tf32,
        devices_file=args.devices_file,
        efficiency_curves=not args.no_curves,
        curve_weights=args.curve_weights,
        device_floor_ns=floor_b,
    )["ops"]
    keys = list(
        zip(ops["name"].to_pylist(), ops["input_dims"].to_pylist(), ops["input_type"].to_pylist())
    )
    calls = np.array(ops["calls"].to_pylist(), np.float64)
    pred = dict(zip(keys, np.array(ops["predicted"].to_pylist()) / calls))
    meas_a = dict(zip(keys, np.array(ops["measured"].to_pylist()) / calls))
    family = dict(zip(keys, ops["family"].to_pylist()))
    spec = dict(zip(keys, group_spec_ratios(ops, dev_a, dev_b)))

    cg = ChargedGroups(b, None, None)
    kb = list(
        zip(
            cg.head["name"].to_pylist(),
            cg.head["input_dims"].to_pylist(),
            cg.head["input_type"].to_pylist(),
        )
    )
    meas_b = {k: t / c for k, t, c in zip(kb, cg.gpu_time, cg.calls) if c}
    calls_b = {k: c for k, c in zip(kb, cg.calls) if c}
    common = [k for k in keys if k in meas_b and pred[k] > 0 and meas_b[k] > 0]
    # a group whose shapes hold a list of tensors recorded as [] (older profilers' cat) is
    # every call site of that operator at once: the same key in the two traces is not the
    # same work, so it is not compared
    unknown = [k for k in common if _unrecorded_list(k[1], k[2])]
    common = [k for k in common if k not in unknown]
    rows = {}
    for fam in sorted({family[k] for k in common}) + ["(all)"]:
        ks = [k for k in common if fam == "(all)" or family[k] == fam]
        p = np.array([pred[k] for k in ks])
        m = np.array([meas_b[k] for k in ks])
        base = np.array([meas_a[k] for k in ks])
        by_spec = base * np.array([spec[k] for k in ks])
        w = np.array([calls_b[k] for k in ks], np.float64)
        best = float(np.exp(np.median(np.log(m / base))))
        rows[fam] = {
            "groups": len(ks),
            "gm_error": round(gm_error(p, m), 3),
            "gm_error_no_model": round(gm_error(base, m), 3),
            "gm_error_spec_ratio": round(gm_error(by_spec, m), 3),
            "gm_error_best_ratio_fitted_on_b": round(gm_error(base * best, m), 3),
            "best_ratio_fitted_on_b": round(best, 3),
            "measured_b_ms": round(float((m * w).sum()) / 1e6, 3),
            "predicted_b_ms": round(float((p * w).sum()) / 1e6, 3),
            "spec_ratio_b_ms": round(float((by_spec * w).sum()) / 1e6, 3),
            "measured_a_ms": round(float((base * w).sum()) / 1e6, 3),
        }
    print(f"A: {args.a} ({dev_a.key}, launch floor {launch_floor_of(a) / 1e3:.2f} us)")
    print(f"B: {args.b} ({dev_b.key})")
    if floor_b is not None:
        print(f"B's launch floor {floor_b / 1e3:.2f} us, from {args.device_floor_from}")
    if unknown:
        print(
            f"not compared: {len(unknown)} group(s) with a list of tensors recorded as [] "
            f"({', '.join(sorted({k[0] for k in unknown}))})"
        )
    print(
        f"{'family':<14}{'groups':>7}{'GM err':>9}{'no model':>10}{'spec':>9}{'fit on B':>10}"
        f"{'B ms':>11}{'pred ms':>11}{'spec ms':>11}{'A ms':>11}"
    )
    for fam, r in rows.items():
        print(
            f"{fam:<14}{r['groups']:>7}{r['gm_error']:>9.1%}{r['gm_error_no_model']:>10.1%}"
            f"{r['gm_error_spec_ratio']:>9.1%}{r['gm_error_best_ratio_fitted_on_b']:>10.1%}"
            f"{r['measured_b_ms']:>11.3f}{r['predicted_b_ms']:>11.3f}"
            f"{r['spec_ratio_b_ms']:>11.3f}{r['measured_a_ms']:>11.3f}"
        )
    print(
        "spec: A x the two devices' roofline ratio (bandwidth ratio without a roofline); "
        "fit on B: the best single ratio per family, fitted on B (an oracle, not a prediction)"
    )
    kernel_time = _kernel_time(a, b, args.devices_file)
    if args.errors:
        print(_errors_entry(args.errors, dev_a.key, dev_b.key, a, b, args.devices_file))
    print(
        json.dumps(
            {
                "a": dev_a.key,
                "b": dev_b.key,
                "device_floor_ns": floor_b,
                "families": rows,
                "kernel_time": kernel_time,
            }
        )
    )


def _kernel_time(a, b, devices_file) -> dict:
    """Prints and returns, per family and in all, B's GPU kernel time per step and the
    relative error of: the default prediction, the kernel model in every family, no change,
    and the one-ratio baseline (hta_fast.model.predict_check)."""
    from hta_fast.model.predict_check import kernel_time_errors

    default = kernel_time_errors(a, b, devices_file=devices_file).to_pylist()
    model = {
        r["family"]: r
        for r in kernel_time_errors(a, b, ratio_families=(), devices_file=devices_file).to_pylist()
    }
    print("kernel time per step (default: the model, and the ratio for RATIO_FAMILIES)")
    print(f"{'family':<28}{'B ms':>10}{'default':>9}{'model':>9}{'no change':>11}{'ratio':>9}")
    out = {}
    for r in default:
        m = model.get(r["family"], r)

        def pct(x):
            return "-" if x is None else f"{x:.1%}"

        print(
            f"{r['family']:<28}{r['measured_b'] / 1e6:>10.3f}{pct(r['model_error']):>9}"
            f"{pct(m['model_error']):>9}{pct(r['no_change_error']):>11}{pct(r['ratio_error']):>9}"
        )
        out[r["family"]] = {
            "measured_b_ms": round(r["measured_b"] / 1e6, 4),
            "default_error": r["model_error"],
            "model_error": m["model_error"],
            "no_change_error": r["no_change_error"],
            "ratio_error": r["ratio_error"],
        }
    return out


def _errors_entry(pair: str, src: str, dst: str, a, b, devices_file) -> str:
    """This direction as a PairErrors of hta_fast.model.predict_errors.MEASURED (ns per
    step: measured on B, default model, no change, the one-ratio baseline)."""
    from hta_fast.model.predict_check import kernel_time_errors

    rows = kernel_time_errors(a, b, devices_file=devices_file).to_pylist()
    families = "".join(
        f'            "{r["family"]}": ({round(r["measured_b"])}, {round(r["model"])}, '
        f"{round(r['no_change'])}, {round(r['ratio'])}),\n"
        for r in rows
    )
    return (
        f'    PairErrors(\n        "{pair}",\n        "{src}",\n        "{dst}",\n'
        f"        {{\n{families}        }},\n    ),"
    )


if __name__ == "__main__":
    main()
