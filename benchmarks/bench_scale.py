#!/usr/bin/env python3
"""Many ranks: load a generated N-rank set with the local executor and with a Dask cluster, then
run the cross-rank analyses; wall time and the coordinating process's peak memory.

    python benchmarks/bench_scale.py [--ranks 64] [--size-mb 48 12] [--workers 2]
        [--out /tmp/htafast-bench/scale] [--reference-timeout 900] [--json RESULTS.json]
    python benchmarks/bench_scale.py --people --ranks 1024 --size-mb 1 [--straggler 537:1.3]

For each --size-mb (JSON MB per rank) the set is generated once under --out (reused when it is
there) and each configuration runs as a fresh child process (benchmarks/_measure.py):

* local    load_dir(DIR): every rank's tables in this process (threads), then the analyses;
* dask     a LocalCluster of --workers single-threaded worker processes; load_dir(DIR,
           executor=client, dataset=...): workers write Parquet and send back summaries;
* reference   the reference tool's TraceAnalysis(trace_dir=DIR) in .venv-ref, where it finishes
           within --reference-timeout (skipped with 0).

--people times what a person runs on the set instead: `hta-fast report DIR --cdn` and
`hta-fast doctor DIR` (wall time, peak memory, the report's size, the rank the doctor finds
slowest); --straggler generates the set with that rank slowed (the generator's option).

Coordinator peak memory is the child's own ru_maxrss (the Dask scheduler runs in it too; the
workers are separate processes and are reported apart). Running two sizes shows whether the
coordinator's memory follows the size of each rank's trace: with Dask it should not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import run_measured  # noqa: E402

BASE = ROOT.parent / "shared" / "traces" / "hta" / "trace_diff" / "control" / "control.json.gz"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _analyses(traces: object) -> dict:
    from hta_fast.analysis import collectives as cross

    t0 = time.perf_counter()
    res = {
        f.__name__: f(traces).table.num_rows
        for f in (cross.collectives, cross.late_arrivals, cross.step_spread, cross.clock_offsets)
    }
    return {"analyze_s": round(time.perf_counter() - t0, 3), "rows": res}


def child_local(folder: str) -> dict:
    import hta_fast

    t0 = time.perf_counter()
    traces = hta_fast.load_dir(folder)
    load_s = time.perf_counter() - t0
    out = {
        "load_s": round(load_s, 3),
        "ranks": len(traces),
        "events": sum(t.events.num_rows for t in traces.values()),
    }
    out.update(_analyses(traces))
    out["coordinator_peak_mb"] = round(_peak_mb(), 1)
    return out


def child_dask(folder: str, workers: int) -> dict:
    import distributed

    import hta_fast

    t0 = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit=0,
        ) as cluster,
        distributed.Client(cluster) as client,
        tempfile.TemporaryDirectory(dir=os.path.dirname(folder)) as tmp,
    ):
        start_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        ds = hta_fast.load_dir(folder, executor=client, dataset=os.path.join(tmp, "ds"))
        load_s = time.perf_counter() - t1
        out = {
            "cluster_start_s": round(start_s, 3),
            "load_s": round(load_s, 3),
            "ranks": len(ds),
            "events": sum(s.info()["rows"]["events"] for s in ds.summaries.values()),
        }
        out.update(_analyses(ds))
        out["worker_peak_mb"] = sorted(
            round(v / 1024, 1)
            for v in client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values()
        )
        out["dataset_mb"] = round(
            sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file()) / 1e6, 1
        )
    out["coordinator_peak_mb"] = round(_peak_mb(), 1)
    return out


REFERENCE = """
import json, logging, resource, sys, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
load_s = time.perf_counter() - t0
print(json.dumps({"load_s": round(load_s, 3), "ranks": len(a.t.traces),
                  "coordinator_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def people(folder: Path, out: Path) -> dict:
    """`hta-fast report` and `hta-fast doctor` on the set, each in a fresh process."""
    cli = [sys.executable, "-m", "hta_fast"]
    page = out / f"{folder.name}.html"
    runs = {}
    for name, cmd in (
        ("report", [*cli, "report", str(folder), "-o", str(page), "--cdn"]),
        ("doctor", [*cli, "doctor", str(folder)]),
    ):
        m = run_measured(cmd, check=False)  # the doctor's gate may fail: exit 1 or 3
        runs[name] = {"wall_s": round(m["wall_s"], 2), "peak_rss_mb": m["peak_rss_mb"]}
        if name == "report":
            runs[name]["html_mb"] = round(page.stat().st_size / 1e6, 3)
        else:
            # The text a person reads names the rank that stands out, above or below threshold.
            named = re.search(r"rank (\d+) (?:is slowest|stands out)", m["stdout"])
            runs[name]["slowest_rank"] = int(named.group(1)) if named else None
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--size-mb", type=float, nargs="+", default=[48.0, 12.0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/htafast-bench/scale")
    ap.add_argument(
        "--reference-timeout",
        type=float,
        default=900.0,
        help="seconds for the reference's load of a set (0 skips it)",
    )
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--people", action="store_true", help="time `hta-fast report` and `doctor` instead"
    )
    ap.add_argument("--straggler", help="RANK:FACTOR, as the generator takes it")
    ap.add_argument("--child", choices=("local", "dask"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child == "local":
        print(json.dumps(child_local(args.dir)))
        return 0
    if args.child == "dask":
        print(json.dumps(child_dask(args.dir, args.workers)))
        return 0

    from hta_fast import synth

    stragglers = {}
    if args.straggler:
        rank, factor = args.straggler.split(":")
        stragglers = {int(rank): float(factor)}
    results = []
    for size in args.size_mb:
        slow = "".join(f"-slow{r}x{f:g}" for r, f in stragglers.items())
        folder = Path(args.out) / f"{args.ranks}x{size:g}mb{slow}"
        if len(list(folder.glob("rank*.json"))) != args.ranks:
            t0 = time.perf_counter()
            synth.generate(folder, size, ranks=args.ranks, base=BASE, stragglers=stragglers)
            print(f"generated {folder} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        total_mb = sum(f.stat().st_size for f in folder.glob("rank*.json")) / 1e6
        runs = {}
        if args.people:
            runs = people(folder, Path(args.out))
            print(f"{args.ranks} x {size:g} MB: {runs}", file=sys.stderr)
            results.append({"ranks": args.ranks, "size_mb_per_rank": size, "runs": runs})
            continue
        for name in ("local", "dask"):
            m = run_measured(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    name,
                    "--dir",
                    str(folder),
                    "--workers",
                    str(args.workers),
                ]
            )
            runs[name] = dict(
                m["result"], wall_s=round(m["wall_s"], 2), largest_process_mb=m["peak_rss_mb"]
            )
            print(
                f"{args.ranks} x {size:g} MB ({total_mb:,.0f} MB) {name}: {runs[name]}",
                file=sys.stderr,
            )
        ref_py = ROOT / ".venv-ref" / "bin" / "python"
        if args.reference_timeout > 0 and ref_py.exists():
            m = run_measured(
                [str(ref_py), "-c", REFERENCE, str(folder)],
                timeout_s=args.reference_timeout,
                check=False,
            )
            runs["reference"] = (
                dict(m["result"], wall_s=round(m["wall_s"], 2), largest_process_mb=m["peak_rss_mb"])
                if m["result"]
                else {
                    "finished": False,
                    "timed_out": m["timed_out"],
                    "wall_s": round(m["wall_s"], 2),
                    "peak_rss_mb": m["peak_rss_mb"],
                    "returncode": m["returncode"],
                }
            )
            print(f"{args.ranks} x {size:g} MB reference: {runs['reference']}", file=sys.stderr)
        results.append(
            {
                "ranks": args.ranks,
                "size_mb_per_rank": size,
                "total_json_mb": round(total_mb, 1),
                "cpus": os.cpu_count(),
                "runs": runs,
            }
        )
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
