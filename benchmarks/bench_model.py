#!/usr/bin/env python3
"""The performance model against the reference's critical path, on one generated trace.

    python benchmarks/bench_model.py [--size-mb 1000] [--runs 3] [--skip-ref] [--out DIR]

Generates (once, cached under --out) a single-rank trace with benchmarks/gen_trace.py, loads it
with hta_fast, checks the model's answer (every step replays with 0 error; each critical path is
as long as its step), then times graph build + calibration + critical path for the first
profiler step (what the reference computes: critical_path_analysis for ProfilerStep instance
0), the same for every step (each step's path over the chain, and each window alone), replay with ablations for every step and a what-if (every kernel
x 0.5) for every step, each with the steps as one chain (the default) and each window alone
(chained=False). The reference runs in a
child process (tests/reference/run_reference.py --analyses critical_path), which times its
call apart from its load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import timed  # noqa: E402
from bench_analyses import ensure, reference_seconds  # noqa: E402

import hta_fast  # noqa: E402
from hta_fast.model import replay_steps, what_if  # noqa: E402
from hta_fast.model.path.critical_path import critical_path  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-ref", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("/tmp/hta_fast_bench"))
    ap.add_argument("--ref-timeout", type=float, default=3600)
    args = ap.parse_args()

    folder = ensure(args.out / f"model_{args.size_mb:g}mb", args.size_mb, 1)
    t0 = time.perf_counter()
    trace = hta_fast.load_dir(folder)
    load_s = time.perf_counter() - t0
    steps = sorted(int(s) for s in trace[trace.ranks[0]].column("steps", "step"))
    first = steps[:1] or None

    # The answer first: an exact replay and paths as long as their steps.
    r = replay_steps(trace).to_pandas()
    cp = critical_path(trace).to_pandas()
    assert (r.error_pct.fillna(0) == 0).all(), "replay does not reproduce the trace"
    assert (replay_steps(trace, chained=False).to_pandas().error_pct.fillna(0) == 0).all()
    assert (cp.critical_path_length == cp.measured_step).all(), "critical path != step"
    assert (cp.critical_path_length == r.replayed).all(), "chained path != replayed step"

    first_s = timed(lambda: critical_path(trace, steps=first), args.runs)
    first_windows_s = timed(lambda: critical_path(trace, steps=first, chained=False), args.runs)
    all_s = timed(lambda: critical_path(trace), args.runs)
    all_windows_s = timed(lambda: critical_path(trace, chained=False), args.runs)
    replay_s = timed(lambda: replay_steps(trace), args.runs)
    windows_s = timed(lambda: replay_steps(trace, chained=False), args.runs)
    whatif_s = timed(lambda: what_if(trace, kernel_class={"COMP": 0.5}), args.runs)
    whatif_windows_s = timed(
        lambda: what_if(trace, kernel_class={"COMP": 0.5}, chained=False), args.runs
    )
    events = len(trace[trace.ranks[0]].column("events", "ts"))
    print(f"\n## bench_model: {args.size_mb:g} MB, {events:,} events, {len(steps)} steps\n")
    print(f"hta_fast load: {load_s:.2f} s")
    print("| stage | hta_fast s |\n|---|---|")
    print(f"| critical path, first step (one chain) | {first_s:.3f} |")
    print(f"| critical path, first step (its window) | {first_windows_s:.3f} |")
    print(f"| critical path, all steps (one chain) | {all_s:.3f} |")
    print(f"| critical path, all steps (each window alone) | {all_windows_s:.3f} |")
    print(f"| replay + ablations, all steps (one chain) | {replay_s:.3f} |")
    print(f"| replay + ablations, all steps (each window alone) | {windows_s:.3f} |")
    print(f"| what-if COMP x 0.5, all steps (one chain) | {whatif_s:.3f} |")
    print(f"| what-if COMP x 0.5, all steps (each window alone) | {whatif_windows_s:.3f} |")
    if not args.skip_ref:
        ref = reference_seconds(folder, args.ref_timeout, ["critical_path"])
        ref_s = ref["seconds"].get("critical_path")
        if ref_s is None:
            print("reference: critical_path failed or did not run")
        else:
            print(
                f"\nreference load: {ref['load_s']:.1f} s; critical_path (first step): "
                f"{ref_s:.2f} s; speed-up on the first step: {ref_s / first_s:.1f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
