#!/usr/bin/env python3
"""Time hta_fast's loader on one trace in this process; print one JSON line.

Run as a child of bench_load.py so that peak RSS is this load's alone. With --repeat N the
trace is loaded N times and cpu_s/wall_s are the least of the N (the memory facts stay the
first load's): later loads reuse memory the allocator kept, so they leave out the first
touch of fresh pages, and the least of several is the steadiest measure of the code's own
cost on a machine whose pace drifts (ab_load.py --repeat).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

WARM_UP = b'{"traceEvents":[{"ph":"X","name":"a","cat":"c","pid":1,"tid":1,"ts":1,"dur":1}]}'


def memory_kb(field: str) -> int:
    """A line of /proc/self/status, in KiB: VmRSS (resident now) or VmHWM (this process's
    peak). Not ru_maxrss: that keeps the peak of the forked parent from before exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def column_bytes(trace, events) -> int:
    """Bytes of every table's columns and of the string pool."""
    tables = (
        events,
        trace.kernel_args,
        trace.op_args,
        trace.comm_args,
        trace.sync_args,
        trace.flows,
        trace.counters,
        trace.instants,
        trace.meta_events,
    )
    return sum(t.nbytes for t in tables) + trace.strings.nbytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    t_import = time.perf_counter()
    import hta_fast

    import_s = time.perf_counter() - t_import
    # A tiny load first, measured as the trace will be: what the first load of a process
    # pulls in once (pyarrow's lazily imported modules and their libraries' pages; the first
    # Table.nbytes alone adds ~4.5 MB) is not this trace's memory or time.
    warm = hta_fast.load(WARM_UP)
    column_bytes(warm, warm.events)
    rss_before = memory_kb("VmRSS")
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    trace = hta_fast.load(args.trace, threads=args.threads)
    events = trace.events  # the Arrow table, as a user gets it
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    columns = column_bytes(trace, events)
    load_peak_mb = max(0, memory_kb("VmHWM") - rss_before) * 1024 / 1e6
    peak_rss_mb = r1.ru_maxrss / 1024
    for _ in range(args.repeat - 1):
        del trace, events
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        trace = hta_fast.load(args.trace, threads=args.threads)
        events = trace.events
        wall = min(wall, time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = min(cpu, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
    print(
        json.dumps(
            {
                "tool": "hta_fast",
                "wall_s": wall,
                "cpu_s": cpu,
                "import_s": import_s,
                "peak_rss_mb": peak_rss_mb,
                # The load's peak above what the process held before it (the interpreter
                # and imports): the load's own memory, in MB (10^6 bytes) like json_mb, so
                # that their ratio is one of bytes to bytes.
                "load_peak_mb": load_peak_mb,
                "events": events.num_rows,
                "json_mb": trace.meta.json_bytes / 1e6,
                "columns_mb": columns / 1e6,
                "timings": dict(trace._raw.timings),
            }
        )
    )


if __name__ == "__main__":
    main()
