#!/usr/bin/env python3
"""Many ranks: load a generated N-rank set with the local executor and with a Dask cluster, then
run the cross-rank analyses; wall time and the coordinating process's peak memory.

    python benchmarks/bench_scale.py [--ranks 64] [--size-mb 48 12] [--workers 2]
        [--out /tmp/htafast-bench/scale] [--reference-timeout 900] [--json RESULTS.json]
    python benchmarks/bench_scale.py --people --ranks 1024 --size-mb 1 [--straggler 537:1.3]
    python benchmarks/bench_scale.py --set DIR --executors dask --memory-limit 4GB --cache

For each --size-mb (JSON MB per rank) the set is generated once under --out (reused when it is
there) and each configuration runs as a fresh child process (benchmarks/_measure.py):

* local    load_dir(DIR): every rank's tables in this process (threads), then the analyses;
* dask     a LocalCluster of --workers single-threaded worker processes; load_dir(DIR,
           executor=client, dataset=...): workers write Parquet and send back summaries;
* reference   the reference tool's TraceAnalysis(trace_dir=DIR) in .venv-ref, where it finishes
           within --reference-timeout (skipped with 0).

--set DIR measures a folder made elsewhere (gen_trace.py --gzip, say) instead. --memory-limit
gives each Dask worker a limit (its memory budget bounds the ranks it loads at once: how many
did is reported per worker, with each worker's peak RSS and whether the nanny restarted any);
--cache loads the set twice through the Arrow cache (the first run fills it, the second reads
it) in the same cluster.

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
import shutil
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


def _worker_facts(dask_worker: object) -> dict:
    """Run on each worker (client.run): its peak RSS, its pid, and how many ranks its memory
    budget let load at once (hta_fast.loading.executors.rank_budget)."""
    from hta_fast.loading import executors

    budget = executors._WORKER_BUDGETS.get(getattr(dask_worker, "id", ""))
    return {
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "pid": os.getpid(),
        "most_ranks_at_once": budget.most_in_flight if budget else 0,
    }


def child_dask(
    folder: str,
    workers: int,
    memory_limit: str = "0",
    threads: int = 1,
    cache_dir: str | None = None,
    runs: int = 1,
) -> dict:
    """A LocalCluster; the set loaded `runs` times (with cache_dir: through the Arrow cache,
    so that every run after the first reads it), each into a fresh dataset."""
    import distributed

    import hta_fast

    options = {"cache": True, "cache_dir": cache_dir} if cache_dir else {}
    t0 = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=threads,
            processes=True,
            dashboard_address=None,
            memory_limit=memory_limit if memory_limit != "0" else 0,
        ) as cluster,
        distributed.Client(cluster) as client,
        tempfile.TemporaryDirectory(dir=os.path.dirname(folder)) as tmp,
    ):
        start_s = time.perf_counter() - t0
        pids = sorted(f["pid"] for f in client.run(_worker_facts).values())
        out: dict = {"cluster_start_s": round(start_s, 3), "runs": []}
        for run in range(runs):
            t1 = time.perf_counter()
            ds = hta_fast.load_dir(
                folder, executor=client, dataset=os.path.join(tmp, f"ds{run}"), **options
            )
            load_s = time.perf_counter() - t1
            one = {
                "load_s": round(load_s, 3),
                "ranks": len(ds),
                "events": sum(s.info()["rows"]["events"] for s in ds.summaries.values()),
            }
            one.update(_analyses(ds))
            one["dataset_mb"] = round(
                sum(f.stat().st_size for f in Path(tmp, f"ds{run}").rglob("*") if f.is_file())
                / 1e6,
                1,
            )
            facts = list(client.run(_worker_facts).values())
            one["worker_peak_mb"] = sorted(f["peak_mb"] for f in facts)
            one["most_ranks_at_once"] = [f["most_ranks_at_once"] for f in facts]
            # a worker the nanny restarted (killed for memory) has another pid
            one["workers_restarted"] = len(set(pids) - {f["pid"] for f in facts})
            out["runs"].append(one)
        if cache_dir:
            out["cache_mb"] = round(
                sum(f.stat().st_size for f in Path(cache_dir).rglob("*") if f.is_file()) / 1e6, 1
            )
        out.update(out["runs"][0])  # the first run's figures at the top, as before
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
    ap.add_argument(
        "--set",
        help="measure this folder of traces (made with gen_trace.py, say) instead of generating",
    )
    ap.add_argument(
        "--executors",
        nargs="+",
        choices=("local", "dask"),
        default=["local", "dask"],
        help="which loads to time",
    )
    ap.add_argument(
        "--memory-limit", default="0", help="each Dask worker's memory_limit ('4GB'; 0: none)"
    )
    ap.add_argument("--threads-per-worker", type=int, default=1)
    ap.add_argument(
        "--cache",
        action="store_true",
        help="Dask: load through the Arrow cache (under --out/cache, emptied first), twice: "
        "the first run parses and fills it, the second reads it",
    )
    ap.add_argument("--child", choices=("local", "dask"), help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child == "local":
        print(json.dumps(child_local(args.dir)))
        return 0
    if args.child == "dask":
        runs = 2 if args.cache_dir else 1
        print(
            json.dumps(
                child_dask(
                    args.dir,
                    args.workers,
                    args.memory_limit,
                    args.threads_per_worker,
                    args.cache_dir,
                    runs,
                )
            )
        )
        return 0

    from hta_fast import synth

    stragglers = {}
    if args.straggler:
        rank, factor = args.straggler.split(":")
        stragglers = {int(rank): float(factor)}
    from hta_fast.loading import executors, trace_files

    results = []
    for size in [0.0] if args.set else args.size_mb:
        slow = "".join(f"-slow{r}x{f:g}" for r, f in stragglers.items())
        folder = Path(args.set or Path(args.out) / f"{args.ranks}x{size:g}mb{slow}")
        if not args.set and len(list(folder.glob("rank*.json"))) != args.ranks:
            t0 = time.perf_counter()
            synth.generate(folder, size, ranks=args.ranks, base=BASE, stragglers=stragglers)
            print(f"generated {folder} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        files = trace_files(folder)
        args.ranks = len(files)
        # JSON MB (a .json.gz by its trailer's size: hta_fast.loading.executors.json_size)
        total_mb = sum(executors.json_size(f) for f in files) / 1e6
        size = size or total_mb / len(files)
        runs = {}
        if args.people:
            runs = people(folder, Path(args.out))
            print(f"{args.ranks} x {size:g} MB: {runs}", file=sys.stderr)
            results.append({"ranks": args.ranks, "size_mb_per_rank": size, "runs": runs})
            continue
        cache_dir = Path(args.out) / "cache"
        for name in args.executors:
            cmd = [sys.executable, __file__, "--child", name, "--dir", str(folder)]
            cmd += ["--workers", str(args.workers), "--memory-limit", args.memory_limit]
            cmd += ["--threads-per-worker", str(args.threads_per_worker)]
            if args.cache and name == "dask":
                shutil.rmtree(cache_dir, ignore_errors=True)
                cmd += ["--cache-dir", str(cache_dir)]
            m = run_measured(cmd)
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
