#!/usr/bin/env python3
"""Print the PyTorch TensorBoard profiler plugin's operator memory table of one trace as JSON.

Runs under the reference environment's interpreter (``.venv-ref/bin/python``, where
``benchmarks/requirements-ref.txt`` installs ``torch-tb-profiler``); it never imports
``hta_fast``.

    .venv-ref/bin/python tests/reference/run_tb_plugin.py TRACE.json[.gz]

Output: ``{"memory": {DEVICE: {OPERATOR: [self_increase, self_alloc_bytes,
self_alloc_count, increase, alloc_bytes, alloc_count, calls]}}, "peaks": {"TYPE:ID":
bytes}, "steps": [[NAME, DURATION_US], ...]}`` in the plugin's own order (its
MemoryMetrics, then the calls); steps: each step the plugin's overview times, with the
total of its step-time breakdown (the plugin's step span, µs).
"""

from __future__ import annotations

import gzip
import json
import sys


def main(path: str) -> None:
    from torch_tb_profiler.profiler.data import RunProfileData

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    profile = RunProfileData.from_json("worker", "span", doc)
    profile.process()
    snapshot = profile.memory_snapshot
    memory = {} if snapshot is None else snapshot.get_memory_statistics(profile.tid2tree)
    peaks = {} if snapshot is None else snapshot.get_peak_memory()
    json.dump(
        {
            "memory": {dev: dict(ops) for dev, ops in memory.items()},
            "peaks": {f"{t}:{i}": v for (t, i), v in peaks.items()},
            "steps": [
                [name, cost.costs[-1]]
                for name, cost in zip(profile.steps_names or [], profile.steps_costs or [])
            ],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1])
