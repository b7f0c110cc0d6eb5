#!/usr/bin/env python3
"""Load one trace file with the reference tool (Holistic Trace Analysis) and report the cost.

Run it with the reference virtualenv, as a fresh process per measurement:

    .venv-ref/bin/python benchmarks/bench_ref_load.py TRACE [--mode load|parse]

It prints one JSON line: {"wall_s", "cpu_s", "peak_rss_mb", "events", ...}.

What the reference does (traceinsight 0.6.1, read from its source):

* ``TraceAnalysis(trace_dir=DIR)`` builds ``hta.common.trace.Trace``. Without an explicit
  rank map, the rank of each file comes from ``hta.common.trace_file.create_rank_to_trace_dict``:
  it reads the file line by line until the regex ``"rank":\\s+(\\d+)`` matches (at least one space
  after the colon, first match anywhere in the text), and falls back to rank 0 with a warning.
  Then ``Trace.load_traces(include_last_profiler_step=False)`` parses every rank
  (``parse_traces``; a single rank is parsed in-process, several through a fork pool) and runs
  ``align_and_filter_trace``.
* Parsing is ``hta.common.trace.parse_trace_file`` ->
  ``hta.common.trace_parser.parse_trace_dataframe``. The default ``ParserConfig`` has
  ``parser_backend=None``, which ``get_default_trace_parsing_backend`` turns into
  ``ParserBackend.JSON``: the whole (gunzipped) file is read into memory and parsed with the
  standard ``json.loads``; ``pd.DataFrame(traceEvents)`` follows. (The ijson backends exist but are
  not the default; ``skip_event_types={"python_function"}`` is only honoured by them.)
* ``_compress_df`` then drops rows without ``dur`` or ``cat`` (so M, flow and instant events), the
  ``cat == "Trace"`` span, and the columns ph/id/bp/s; it lifts the default args
  (``ParserConfig.get_default_args``) into columns with defaults, drops ``args``, turns
  ``stream`` into int (-1 when absent or not numeric), encodes ``cat``/``name`` as symbol ids and
  downcasts integer columns. Float (ns-resolution) timestamps are rounded: ts up, end down.
* After that: fwd/bwd links, ``index_correlation``, ``iteration`` (a Python loop over
  ProfilerSteps per event), ``end``; ``load_traces`` subtracts the minimum ts of all ranks and,
  when the trace has two or more ProfilerSteps, keeps only CPU ops that start before the last
  step plus GPU kernels whose correlation matches one of them.

Modes: ``load`` (default) is exactly that work for one file: rank discovery, ``Trace`` and
``load_traces``, which is what ``TraceAnalysis(trace_dir=...)`` does for a folder holding this one
file. ``parse`` is ``parse_trace_file`` alone (no rank discovery, alignment or filtering).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import time


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _quiet_reference_logger() -> None:
    # The reference logs a warning per phase; keep stderr small (it does not change the work).
    from hta.configs.config import logger

    logger.setLevel(logging.ERROR)


def load_like_trace_analysis(path: str):
    """What TraceAnalysis(trace_dir=<dir with only this file>) does; returns (rank, DataFrame)."""
    from hta.common.trace import Trace
    from hta.common.trace_file import create_rank_to_trace_dict

    _, rank_map = create_rank_to_trace_dict([path])
    trace = Trace(trace_files=rank_map, trace_dir=os.path.dirname(path) or ".")
    trace.load_traces(include_last_profiler_step=False)
    rank = next(iter(rank_map))
    df = trace.traces.get(rank)
    return rank, df, trace.meta_data.get(rank, {})


def parse_only(path: str):
    from hta.common.trace import parse_trace_file

    meta, df, _ = parse_trace_file(path)
    return None, df, meta


def main() -> int:
    ap = argparse.ArgumentParser(description="Time the reference tool's loader on one trace.")
    ap.add_argument("trace")
    ap.add_argument("--mode", choices=("load", "parse"), default="load")
    args = ap.parse_args()

    t_import = time.perf_counter()
    import hta  # noqa: F401  (imports pandas; timed separately from the load)
    import pandas as pd

    _quiet_reference_logger()
    import_s = time.perf_counter() - t_import

    cpu0, t0 = _cpu_s(), time.perf_counter()
    rank, df, meta = (load_like_trace_analysis if args.mode == "load" else parse_only)(args.trace)
    wall = time.perf_counter() - t0
    cpu = _cpu_s() - cpu0
    # ru_maxrss is in KiB on Linux; this process is fresh, so it is the peak of this load
    # (plus the interpreter and the pandas import, which are part of using the tool).
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    result = {
        "tool": "hta",
        "mode": args.mode,
        "backend": "json",
        "file": args.trace,
        "file_mb": os.path.getsize(args.trace) / 1e6,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "import_s": round(import_s, 3),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "events": 0 if df is None else int(len(df)),
        "columns": 0 if df is None else int(len(df.columns)),
        "df_mb": 0.0 if df is None else round(df.memory_usage(deep=True).sum() / 1e6, 1),
        "rank": rank,
        "device_type": meta.get("device_type"),
        "pandas": pd.__version__,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
