#!/usr/bin/env python3
"""The critical path across ranks: its cost against the per-rank path and the joint replay.

    python benchmarks/bench_cross_rank_path.py FOLDER [--steps 0,1] [--runs 3]

FOLDER holds one trace per rank (../shared/traces/param_dlrm_8rank, or a set written by
benchmarks/gen_trace.py --ranks 8). Times (medians of --runs rounds, each stage once a
round): load; the per-rank critical path of every rank (critical_path); the joint replay
(replay_ranks); the path across ranks (critical_path(cross_rank=True): graphs, joint replay,
walk and tables); and the walk alone (path_across_ranks over graphs and a joint replay
already made, plus its tables).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import timed  # noqa: E402

import hta_fast  # noqa: E402
from hta_fast.frame import select  # noqa: E402
from hta_fast.model.comm.collective_links import match_collectives  # noqa: E402
from hta_fast.model.graph.walk import walk_groups  # noqa: E402
from hta_fast.model.path.critical_path import critical_path  # noqa: E402
from hta_fast.model.path.ranks import step_paths_across  # noqa: E402
from hta_fast.model.replay.cross_rank import link_windows, measured_weights, replay_together  # noqa: E402
from hta_fast.model.replay.ranks import replay_ranks  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--steps", default=None, help="e.g. 3,4 (default: every step)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    steps = [int(s) for s in args.steps.split(",")] if args.steps else None
    sel = select.Selection(steps=steps)

    t0 = time.perf_counter()
    traces = hta_fast.load_dir(args.folder)
    load_s = time.perf_counter() - t0
    events = sum(len(traces[r].column("events", "ts")) for r in traces.ranks)

    # The answer first: the path is as long as the latest end minus where it begins.
    across = critical_path(traces, selection=sel, cross_rank=True).to_pandas()
    matched = match_collectives(traces)
    prepared = []
    for group in walk_groups(traces, sel, chained=False):
        linked = link_windows([(w.rank, w.graph) for w in group], matched)
        weights = measured_weights(linked)
        prepared.append((group, linked, weights, replay_together(linked, weights)))

    def walks() -> None:
        for group, linked, weights, together in prepared:
            step_paths_across(group, linked, weights, together)

    stages = [
        lambda: critical_path(traces, selection=sel),
        lambda: replay_ranks(traces, selection=sel),
        lambda: critical_path(traces, selection=sel, cross_rank=True),
        walks,
    ]
    # Rounds of one run of each stage: a busy spell on a shared machine hits them alike.
    rounds = [[timed(stage, 1) for stage in stages] for _ in range(args.runs)]
    per_rank_s, joint_s, across_s, walk_s = (
        statistics.median(r[i] for r in rounds) for i in range(len(stages))
    )
    print(
        f"\n## bench_cross_rank_path: {args.folder}, {len(traces.ranks)} ranks, "
        f"{events:,} events, {len(across)} steps\n"
    )
    print(
        f"load: {load_s:.2f} s; jumps per step: {across.jumps.tolist()}; "
        f"cross_rank share (%): {[round(v, 1) for v in across.cross_rank]}"
    )
    print("| stage | s |\n|---|---|")
    print(f"| critical path per rank, every rank | {per_rank_s:.3f} |")
    print(f"| joint replay (replay_ranks) | {joint_s:.3f} |")
    print(f"| critical path across ranks | {across_s:.3f} |")
    print(f"| of which the walk and its tables | {walk_s:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
