"""`hta-fast convert PATH... -o DATASET`: the loaded tables as a Parquet dataset.

Layout (hive partitioning by rank, one folder per table):

    DATASET/manifest.json
    DATASET/events/rank=0/part-0.parquet
    DATASET/events/rank=1/part-0.parquet
    DATASET/kernel_args/rank=0/part-0.parquet ...

Read it back with `pyarrow.dataset.dataset("DATASET/events", partitioning="hive")` (or
DuckDB, Spark, polars: `rank` becomes a column). Every rank has a file for every table, an
empty one where the rank has no such rows, so the schema is always there.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import click
import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from ..schema import SCHEMA_VERSION
from ..trace import TABLES, Trace
from ..traceset import TraceSet
from .app import Options, cli
from .loading import load_traces, path_arguments, recover_option
from .progress import bar

FORMAT = "hta_fast.parquet_dataset"


def table_of(trace: Trace, name: str) -> pa.Table:
    return trace.meta_events if name == "meta" else getattr(trace, name)


def write_rank(trace: Trace, root: str, compression: str) -> dict[str, int]:
    rows: dict[str, int] = {}
    for name in TABLES:
        table = table_of(trace, name)
        folder = os.path.join(root, name, f"rank={trace.rank}")
        os.makedirs(folder, exist_ok=True)
        pq.write_table(table, os.path.join(folder, "part-0.parquet"), compression=compression)
        rows[name] = table.num_rows
    return rows


def manifest(traces: TraceSet, rows: dict[int, dict[str, int]]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": 1,
        "hta_fast_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "partitioning": "hive: TABLE/rank=N/part-0.parquet",
        "tables": list(TABLES),
        "ranks": {str(r): {"source": t.meta.path, "world_size": t.meta.world_size,
                           "base_time_ns": t.meta.base_time_ns, "json_bytes": t.meta.json_bytes,
                           "rows": rows[r]}
                  for r, t in traces.items()},
    }


@cli.command()
@path_arguments
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False),
              help="Dataset folder to write (must be empty or absent unless --overwrite).")
@click.option("--compression", type=click.Choice(["zstd", "snappy", "gzip", "none"]),
              default="zstd", show_default=True)
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset folder.")
@recover_option
@click.pass_obj
def convert(opts: Options, paths: tuple[str, ...], out: str, compression: str, overwrite: bool,
            recover: bool) -> None:
    """Write the traces' tables as a Parquet dataset partitioned by rank."""
    if os.path.exists(out) and os.listdir(out):
        if not overwrite:
            raise click.UsageError(f"{out} exists and is not empty (--overwrite replaces it)")
        if not os.path.isfile(os.path.join(out, "manifest.json")):
            raise click.UsageError(f"{out} is not a dataset written by hta-fast convert; "
                                   "refusing to replace it")
        shutil.rmtree(out)
    traces, load_s = load_traces(paths, opts, recover)
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    rows: dict[int, dict[str, int]] = {}
    with bar(opts, total=len(traces), desc="writing", unit="rank") as progress, \
            ThreadPoolExecutor(max_workers=min(len(traces), os.cpu_count() or 1)) as pool:
        # Parquet encoding releases the GIL: ranks are written in parallel.
        futures = {r: pool.submit(write_rank, t, out, compression) for r, t in traces.items()}
        for r, fut in futures.items():
            rows[r] = fut.result()
            progress.update(1)
    with open(os.path.join(out, "manifest.json"), "w") as fh:
        json.dump(manifest(traces, rows), fh, indent=2)
    events = sum(r["events"] for r in rows.values())
    click.echo(f"{out}: {len(traces)} rank(s), {events:,} events; loaded in {load_s:.2f} s, "
               f"written in {time.perf_counter() - t0:.2f} s")
