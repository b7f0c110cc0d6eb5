#!/usr/bin/env python3
"""Time `hta-fast slice` of one step of a big trace against a load of it; print one JSON line.

    nice -n 10 .venv/bin/python benchmarks/bench_slice.py [--size-mb 1000] \\
        [--out /tmp/htafast-bench/slice] [--runs 3] [--steps 1]

Generates `rank0.json` of about --size-mb MB with the project's generator (benchmarks/
gen_trace.py, hta_fast.synth) under --out, outside the repository, reused when it is there
already. Then, each a fresh process measured by _measure.run_measured (wall time and peak
RSS of that process alone), median of --runs:

  load_s      hta_fast.load of the trace (in the child, after its imports)
  write_s     write_slice of the middle step (--steps K: K steps from there) to .json.gz,
              the trace loaded already
  command_s   the whole `hta-fast -q slice TRACE --steps A:B -o OUT.json.gz` process
              (start, imports, load, slice, write)

and the ratios write_s / load_s and command_s / load_s (the target: a slice costs less
than 3 loads), the peak RSS of a load and of the command, the slice's events and size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import run_measured  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def child_load(trace: str) -> None:
    import hta_fast

    t0 = time.perf_counter()
    loaded = hta_fast.load(trace)
    print(json.dumps({"seconds": time.perf_counter() - t0, "events": loaded.num_rows("events")}))


def child_write(trace: str, out: str, count: str) -> None:
    """Loads the trace, then slices `count` steps from its middle one to `out` (timed alone)."""
    import hta_fast
    from hta_fast.loading.slice_writer import steps_window, write_slice

    loaded = hta_fast.load(trace)
    steps = sorted(set(loaded.column("steps", "step").tolist()))
    first = steps[len(steps) // 2]
    chosen = steps[len(steps) // 2 :][: int(count)]
    t0 = time.perf_counter()
    counts = write_slice(loaded, out, steps_window(loaded, chosen))
    seconds = time.perf_counter() - t0
    print(
        json.dumps({"seconds": seconds, "steps": f"{first}:{chosen[-1]}", "events": counts.events})
    )


def trace_file(out_dir: Path, size_mb: float) -> Path:
    """The generated trace, made once: a file of about size_mb MB under out_dir."""
    if REPO in out_dir.resolve().parents or out_dir.resolve() == REPO:
        raise SystemExit(f"--out {out_dir} is inside the repository; give a folder under /tmp")
    path = out_dir / "rank0.json"
    if path.exists() and abs(path.stat().st_size / 1e6 - size_mb) < 0.05 * size_mb:
        return path
    from hta_fast.synth import generate

    return generate(out_dir, size_mb, ranks=1)[0]


def measured(cmd: list[str], runs: int) -> tuple[float, float, dict]:
    """(median of the child's own seconds or its wall time, peak RSS MB, last result)."""
    seconds, peaks, result = [], [], {}
    for _ in range(runs):
        m = run_measured(cmd)
        result = m["result"] or {}
        seconds.append(result.get("seconds", m["wall_s"]))
        peaks.append(m["peak_rss_mb"])
    return statistics.median(seconds), max(peaks), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/htafast-bench/slice"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1, help="consecutive steps to slice")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        {"load": child_load, "write": child_write}[args.child[0]](*args.child[1:])
        return

    t0 = time.perf_counter()
    trace = trace_file(args.out, args.size_mb)
    generate_s = time.perf_counter() - t0
    me = [sys.executable, __file__, "--child"]
    out = args.out / "step.json.gz"
    load_s, load_peak, loaded = measured([*me, "load", str(trace)], args.runs)
    write_s, _, written = measured([*me, "write", str(trace), str(out), str(args.steps)], args.runs)
    command = [sys.executable, "-m", "hta_fast", "-q", "slice", str(trace)]
    command += ["--steps", written["steps"], "-o", str(out), "--overwrite"]
    command_s, command_peak, _ = measured(command, args.runs)
    print(
        json.dumps(
            {
                "json_mb": round(trace.stat().st_size / 1e6, 1),
                "events": loaded["events"],
                "generate_s": round(generate_s, 1),
                "load_s": round(load_s, 3),
                "write_s": round(write_s, 3),
                "command_s": round(command_s, 3),
                "write_over_load": round(write_s / load_s, 3),
                "command_over_load": round(command_s / load_s, 3),
                "load_peak_rss_mb": load_peak,
                "command_peak_rss_mb": command_peak,
                "steps": written["steps"],
                "slice_events": written["events"],
                "slice_mb": round(out.stat().st_size / 1e6, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
