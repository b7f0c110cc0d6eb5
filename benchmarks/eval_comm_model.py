"""The collective cost model (hta_fast.model.comm.collective_model) against published
all-reduce measurements (../shared/measurements/collectives: one CSV + JSON per system).

    .venv/bin/python benchmarks/eval_comm_model.py [--dir DIR] [--rows]

(a) Each table predicted from its system's shipped topology alone (vendor link figures; the
    node count from the table's JSON; nothing fitted to any table): the median relative
    time error over sizes >= 1 MiB. Targets: <= 30 % in one node, <= 40 % across nodes.
(b) The AWS P6-B200 topology calibrated on the 1-node table and the 4-node table's sizes up
    to 1 MiB, then the 4-node sizes from 64 MiB up predicted: median error, target <= 15 %.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

from hta_fast.model.comm.calibrate import calibrate
from hta_fast.model.comm.collective_model import predict_collectives
from hta_fast.model.comm.topology import Topology, load_topology

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT.parent / "shared" / "measurements" / "collectives"
MIB = 1 << 20
# Each measured system's shipped topology (hta_fast/model/comm/topologies/NAME.json).
SYSTEMS = {
    "node_8x_a100_nvswitch": "dgx_a100",
    "node_8x_h200_nvls": "hgx_h200",
    "aws_p6_b200_1x8": "aws_p6_b200",
    "aws_p6_b200_4x8": "aws_p6_b200",
    "aws_p4de_2x8_a100": "aws_p4de",
    "aws_p5_2x8_h100": "aws_p5",
    "gcp_a3mega_2x8_h100": "gcp_a3mega",
}
TARGET_ONE_NODE, TARGET_NODES, TARGET_CALIBRATED = 30.0, 40.0, 15.0


def read_table(directory: Path, name: str) -> tuple[dict, list[dict]]:
    """The table's JSON description and its rows (size_bytes, time_us)."""
    meta = json.loads((directory / f"{name}.json").read_text())
    with open(directory / f"{name}.csv", newline="") as f:
        rows = [
            {"size_bytes": float(r["size_bytes"]), "time_us": float(r["time_us"])}
            for r in csv.DictReader(f)
        ]
    return meta, rows


def topology_for(name: str, meta: dict) -> Topology:
    topo = load_topology(SYSTEMS[name])
    if topo.gpus_per_node != meta["gpus_per_node"]:
        raise SystemExit(
            f"{name}: {meta['gpus_per_node']} GPUs per node, topology has {topo.gpus_per_node}"
        )
    return topo.with_nodes(meta["nodes"])


def errors(topo: Topology, rows: list[dict]) -> list[tuple[float, float, float, str]]:
    """(size, measured us, predicted us, algorithm/protocol) per row."""
    preds = predict_collectives("all_reduce", [r["size_bytes"] for r in rows], topo)
    return [
        (r["size_bytes"], r["time_us"], p.time_us, f"{p.algorithm}/{p.protocol}")
        for r, p in zip(rows, preds)
    ]


def median_error_pct(rows: list[tuple[float, float, float, str]]) -> float:
    return 100 * statistics.median(abs(p / m - 1) for _, m, p, _ in rows)


def measurements(meta: dict, rows: list[dict]) -> list[dict]:
    ranks = meta["gpus_per_node"] * meta["nodes"]
    return [
        {"kind": "all_reduce", "size_bytes": r["size_bytes"], "ranks": ranks,
         "nodes": meta["nodes"], "time_s": r["time_us"] * 1e-6}
        for r in rows
    ]  # fmt: skip


def evaluate(directory: Path, show_rows: bool = False) -> tuple[list[dict], dict]:
    """The per-table results of (a) and the result of (b)."""
    table = []
    for name in SYSTEMS:
        meta, rows = read_table(directory, name)
        topo = topology_for(name, meta)
        big = [r for r in rows if r["size_bytes"] >= MIB]
        res = errors(topo, big)
        target = TARGET_ONE_NODE if meta["nodes"] == 1 else TARGET_NODES
        err = median_error_pct(res)
        table.append(
            {"table": name, "topology": SYSTEMS[name], "ranks": meta["gpus_per_node"] * meta["nodes"],
             "sizes": len(big), "median_err_pct": err, "target_pct": target,
             "met": err <= target, "algorithms": sorted({a for *_, a in res}), "rows": res}
        )  # fmt: skip
    meta1, rows1 = read_table(directory, "aws_p6_b200_1x8")
    meta4, rows4 = read_table(directory, "aws_p6_b200_4x8")
    fit_on = measurements(meta1, rows1) + measurements(
        meta4, [r for r in rows4 if r["size_bytes"] <= MIB]
    )
    base = topology_for("aws_p6_b200_4x8", meta4)
    fitted = calibrate(base, fit_on).with_nodes(meta4["nodes"])
    res = errors(fitted, [r for r in rows4 if r["size_bytes"] >= 64 * MIB])
    err = median_error_pct(res)
    calibrated = {
        "table": "aws_p6_b200_4x8 >= 64 MiB", "fitted_on": len(fit_on), "median_err_pct": err,
        "target_pct": TARGET_CALIBRATED, "met": err <= TARGET_CALIBRATED, "rows": res,
        "topology": fitted,
    }  # fmt: skip
    return table, calibrated


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the measurements folder")
    ap.add_argument("--rows", action="store_true", help="every size's prediction too")
    args = ap.parse_args(argv)
    table, cal = evaluate(args.dir)
    print("(a) shipped topology alone, all-reduce, sizes >= 1 MiB")
    print(
        f"{'table':<24}{'topology':<14}{'ranks':>6}{'sizes':>6}{'median err':>12}{'target':>8}  met  chosen"
    )
    for t in table:
        print(
            f"{t['table']:<24}{t['topology']:<14}{t['ranks']:>6}{t['sizes']:>6}"
            f"{t['median_err_pct']:>11.1f}%{t['target_pct']:>7.0f}%  {'yes' if t['met'] else 'NO ':<4} "
            f"{', '.join(t['algorithms'])}"
        )
        if args.rows:
            for size, m, p, a in t["rows"]:
                print(
                    f"    {size / MIB:>10.0f} MiB {m:>11.1f} us {p:>11.1f} us {100 * (p / m - 1):>+7.1f}%  {a}"
                )
    fitted = cal["topology"]
    print()
    print(
        "(b) aws_p6_b200 calibrated on aws_p6_b200_1x8 (all sizes) + aws_p6_b200_4x8 (<= 1 MiB), "
        f"{cal['fitted_on']} rows"
    )
    print(
        f"    fitted: intra {fitted.intra_gbps:.1f} GB/s, intra step {fitted.intra_node_latency_us:.2f} us, "
        f"nvls eff {fitted.nvls_efficiency:.3f}, network {fitted.network_gbps_per_node:.1f} GB/s, "
        f"network latency {fitted.network_latency_us:.2f} us, call overhead {fitted.call_overhead_us:.2f} us"
    )
    print(
        f"    aws_p6_b200_4x8 sizes >= 64 MiB ({len(cal['rows'])}): median err "
        f"{cal['median_err_pct']:.1f}% (target {cal['target_pct']:.0f}%) {'met' if cal['met'] else 'NOT MET'}"
    )
    if args.rows:
        for size, m, p, a in cal["rows"]:
            print(
                f"    {size / MIB:>10.0f} MiB {m:>11.1f} us {p:>11.1f} us {100 * (p / m - 1):>+7.1f}%  {a}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
