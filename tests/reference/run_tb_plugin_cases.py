#!/usr/bin/env python3
"""Print the PyTorch TensorBoard profiler plugin's figures for the ranks of one run as JSON.

Runs under the reference environment's interpreter (``.venv-ref/bin/python``, where
``benchmarks/requirements-ref.txt`` installs ``torch-tb-profiler``); it never imports
``hta_fast``.

    .venv-ref/bin/python tests/reference/run_tb_plugin_cases.py RANK0.json[.gz] [RANK1.json ...]

Output: ``{"workers": [WORKER, ...], "distributed": DIST}``, one WORKER per file in the order
given (worker name ``workerN``):

- ``steps``: the overview's steps, ``[name, [kernel, memcpy, memset, communication, runtime,
  dataloader, cpu_exec, other, total]]`` (µs, the plugin's ProfileRole order);
- ``step_windows``: each step's window ``[start, end]`` (µs);
- ``has_communication``, ``comm_nodes`` (how many collectives it found);
- ``ops``: the operator view grouped by name, ``{name: [calls, host, device, self_host,
  self_device]}`` (µs);
- ``kernels``: the kernel view grouped by name, ``{name: [count, sum, mean, min, max]}``;
- ``kernels_by_launch``: the kernel view grouped by name, operator and launch
  configuration, ``[name, op, grid, block, registers per thread, shared memory, calls,
  total, mean, min, max]``;
- ``modules``: the module view, ``{"Outer/Inner": [occurrences, operators, host,
  self_host, device, self_device]}`` (µs);
- ``tc_eligible_ops_kernel_ratio``, ``tc_ratio`` (per device), ``gpu_utilization``,
  ``sm_efficiency``, ``occupancy`` (per device id; null when the plugin has none).

DIST (only for two files or more): ``overlap``, per step name and worker the distributed
view's ``[computation, overlap, communication, other]`` (µs), ``wait``: per step and worker
``[data transfer, synchronizing]``, and ``comm_ops``: per worker the collective table's rows.
"""

from __future__ import annotations

import gzip
import json
import sys
from typing import Any


def _worker(profile: Any) -> dict:
    from torch_tb_profiler.profiler.module_op import aggegate_module_view

    ops = {
        agg.name: [
            agg.calls,
            agg.host_duration,
            agg.device_duration,
            agg.self_host_duration,
            agg.self_device_duration,
        ]
        for agg in profile.op_list_groupby_name
    }
    kernels: dict = {}
    stat = getattr(profile, "kernel_stat", None)
    if stat is not None:
        for name, row in stat.iterrows():
            kernels[str(name)] = [
                int(row["count"]),
                float(row["sum"]),
                float(row["mean"]),
                float(row["min"]),
                float(row["max"]),
            ]
    by_launch = [
        [k.name, k.op_name, list(k.grid or []), list(k.block or []), k.regs_per_thread,
         k.shared_memory, k.calls, k.total_duration, k.avg_duration, k.min_duration,
         k.max_duration]
        for k in profile.kernel_list_groupby_name_op or []
    ]  # fmt: skip
    modules: dict = {}
    stack = [("", m) for m in aggegate_module_view(profile.tid2tree, profile.events) or []]
    while stack:
        above, m = stack.pop()
        path = f"{above}/{m.name}" if above else m.name
        modules[path] = [m.occurences, m.operators, m.host_duration, m.self_host_duration,
                         m.device_duration, m.self_device_duration]  # fmt: skip
        stack += [(path, c) for c in m.children]
    metrics = profile.gpu_metrics_parser
    return {
        "steps": [
            [name, [float(c) for c in cost.costs]]
            for name, cost in zip(profile.steps_names, profile.steps_costs)
        ],
        "has_communication": bool(profile.has_communication),
        "comm_nodes": len(profile.comm_node_list or []),
        "ops": ops,
        "kernels": kernels,
        "kernels_by_launch": by_launch,
        "modules": modules,
        "tc_eligible_ops_kernel_ratio": profile.tc_eligible_ops_kernel_ratio,
        "tc_ratio": {str(k): v for k, v in enumerate(profile.tc_ratio or []) if v is not None},
        "gpu_utilization": {str(k): v for k, v in enumerate(metrics.gpu_utilization) if v is not None},
        "sm_efficiency": {str(k): v for k, v in enumerate(metrics.avg_approximated_sm_efficiency_per_device) if v is not None},
        "occupancy": {str(k): v for k, v in enumerate(metrics.avg_occupancy_per_device) if v is not None},
    }  # fmt: skip


def main(paths: list[str]) -> None:
    from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
    from torch_tb_profiler.profiler.loader import RunLoader
    from torch_tb_profiler.profiler.overall_parser import OverallParser

    # The plugin keeps each step's window only inside its parser: note what it aggregates.
    windows: list = []
    aggregate = OverallParser.aggregate

    def noting(self: Any, steps: list, role_ranges: list) -> None:
        windows.append([list(s) for s in steps])
        aggregate(self, steps, role_ranges)

    OverallParser.aggregate = noting  # type: ignore[method-assign]

    profiles = []
    for k, path in enumerate(paths):
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            doc = json.load(f)
        profile = RunProfileData.from_json(f"worker{k}", 0, doc)  # runs process()
        profiles.append(profile)
    out: dict = {"workers": [{**_worker(p), "step_windows": w} for p, w in zip(profiles, windows)]}
    if len(profiles) > 1:
        dist = RunLoader("cases", "", None)._process_distributed_profiles(
            [DistributedRunProfileData(p) for p in profiles], 0
        )
        out["distributed"] = {
            "overlap": dist.steps_to_overlap["data"],
            "wait": dist.steps_to_wait["data"],
            "comm_ops": {w: t["rows"] for w, t in dist.comm_ops["data"].items()},
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
