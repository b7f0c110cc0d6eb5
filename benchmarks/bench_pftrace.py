#!/usr/bin/env python3
"""Loading a Perfetto protobuf trace against loading the JSON of the same run, in one run.

    python benchmarks/bench_pftrace.py [--trace FILE] [--runs 5] [--threads 0] [--out DIR]

Converts a recorded trace (by default the largest under ../shared/traces with GPU kernels,
df_index_resolver) to .pftrace with Perfetto's own Python protos (the converter of
tests/support/pftrace_writer.py: track descriptors, slice begin/end pairs, debug annotations, flows),
once, cached under --out, with plain and gzip copies of both. Before timing it checks that
both load into the same tables (every table, rows compared as tests/loading/test_pftrace.py does).
Then it times hta_fast.load of each file, the four taken in turn, --runs times, and prints
the medians: wall seconds, CPU seconds, and rows per CPU-second.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import hta_fast  # noqa: E402
from hta_fast._named_tables import TABLES  # noqa: E402
from tests.support.pftrace_rows import table_rows  # noqa: E402
from tests.support.pftrace_writer import FLOW_DROPS, to_pftrace  # noqa: E402

DEFAULT = (
    ROOT.parent / "shared" / "traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
)


def prepare(trace: Path, out: Path) -> dict[str, Path]:
    """The JSON and .pftrace of one run, plain and gzip, made once."""
    stem = trace.name.split(".json")[0]
    files = {
        "json": out / f"{stem}.json",
        "json.gz": out / f"{stem}.json.gz",
        "pftrace": out / f"{stem}.pftrace",
        "pftrace.gz": out / f"{stem}.pftrace.gz",
    }
    if all(p.exists() for p in files.values()):
        return files
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(trace, "rb") if trace.name.endswith(".gz") else open(trace, "rb") as f:
        text = f.read()
    files["json"].write_bytes(text)
    shutil.copyfile(trace, files["json.gz"]) if trace.name.endswith(".gz") else files[
        "json.gz"
    ].write_bytes(gzip.compress(text, 6))
    events = json.loads(text)["traceEvents"]
    t0 = time.perf_counter()
    data = to_pftrace(events)
    print(f"converted {len(events)} events in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    files["pftrace"].write_bytes(data)
    files["pftrace.gz"].write_bytes(gzip.compress(data, 6))
    return files


def check(files: dict[str, Path]) -> int:
    """Both formats give the same tables; returns the event rows. Rows the converter cannot
    carry (events whose pid or tid is not an integer, flows on no slice) are the JSON's
    alone, so the check compares the tables the pftrace fills against the JSON's rows of
    integer ids."""
    want = table_rows(hta_fast.load(files["json"]), flow_drops=FLOW_DROPS)
    got = table_rows(hta_fast.load(files["pftrace"]), flow_drops=FLOW_DROPS)
    for name in TABLES:
        missing = set(want[name]) - set(got[name])
        extra = set(got[name]) - set(want[name])
        print(
            f"{name:12} json {len(want[name]):8} pftrace {len(got[name]):8} "
            f"only in json {len(missing):6} only in pftrace {len(extra):6}",
            file=sys.stderr,
        )
    return len(got["events"])


def time_load(path: Path, threads: int) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    hta_fast.load(path, threads=threads)
    return time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/hta_fast_bench_pftrace"))
    args = ap.parse_args()
    files = prepare(args.trace, args.out)
    rows = check(files)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in files}
    for _ in range(args.runs):
        for kind, path in files.items():
            times[kind].append(time_load(path, args.threads))
    print(f"{args.trace.name}: {rows} events, threads={args.threads}, median of {args.runs}")
    print(f"{'file':12} {'MB':>8} {'wall s':>8} {'CPU s':>8} {'events/CPU-s':>13}")
    for kind, path in files.items():
        wall = statistics.median(t[0] for t in times[kind])
        cpu = statistics.median(t[1] for t in times[kind])
        mb = path.stat().st_size / 1e6
        print(f"{kind:12} {mb:8.1f} {wall:8.3f} {cpu:8.3f} {rows / cpu:13,.0f}")


if __name__ == "__main__":
    main()
