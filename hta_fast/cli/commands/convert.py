"""`hta-fast convert PATH... -o DATASET`: the loaded tables as a Parquet dataset.

The layout (hive partitioning by rank, one folder per table, a manifest) and its writing are
hta_fast.loading.dataset's: `hta_fast.open_dataset(DATASET)` reads it back, and so do DuckDB, Spark or
Polars (`rank` becomes a column).
"""

from __future__ import annotations

import time
from typing import Any, Optional

import click

from ...loading import dataset
from ..app import cli
from ..loading import load_files, path_arguments, recover_option, trace_files
from ..progress import bar


@cli.command()
@path_arguments
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Dataset folder to write (must be empty or absent unless --overwrite).",
)
@click.option(
    "--compression",
    type=click.Choice(["zstd", "snappy", "gzip", "none"]),
    default="zstd",
    show_default=True,
)
@click.option("--overwrite", is_flag=True, help="Replace an existing dataset folder.")
@click.option(
    "--dask",
    "dask_address",
    metavar="ADDRESS",
    help="Load and write on a Dask cluster (its scheduler address; 'env' reads "
    "DASK_SCHEDULER_ADDRESS): each worker writes its ranks, PATH and -o may "
    "be fsspec URLs every worker reaches. Needs hta_fast[dask].",
)
@recover_option
@click.pass_obj
def convert(
    opts: Any,
    paths: tuple[str, ...],
    out: str,
    compression: str,
    overwrite: bool,
    dask_address: Optional[str],
    recover: bool,
) -> None:
    """Write the traces' tables as a Parquet dataset partitioned by rank."""
    try:
        dataset.check_free(out, overwrite)
    except FileExistsError as e:
        raise click.UsageError(str(e).replace("overwrite=True", "--overwrite")) from None
    if dask_address:
        _convert_on_dask(paths, out, compression, overwrite, dask_address, recover)
        return
    traces, load_s = load_files(paths, opts, recover)
    t0 = time.perf_counter()
    with bar(opts, total=len(traces), desc="writing") as progress:
        dataset.write_dataset(
            traces, out, compression, overwrite, on_written=lambda r: progress.update(1)
        )
    events = sum(t.events.num_rows for t in traces.values())
    click.echo(
        f"{out}: {len(traces)} rank(s), {events:,} events; loaded in {load_s:.2f} s, "
        f"written in {time.perf_counter() - t0:.2f} s"
    )


def _convert_on_dask(
    paths: tuple[str, ...], out: str, compression: str, overwrite: bool, address: str, recover: bool
) -> None:
    from ...loading.sets import load_dir

    urls = [p for p in paths if "://" in p]
    if urls and len(paths) > 1:
        raise click.UsageError("with a URL, give one PATH: the folder (or file) of the traces")
    source: Any = paths[0] if urls else trace_files(paths)
    t0 = time.perf_counter()
    ds = load_dir(
        source,
        executor="dask" if address == "env" else address,
        dataset=out,
        compression=compression,
        overwrite=overwrite,
        recover=recover,
    )
    events = sum(s.info()["rows"]["events"] for s in ds.summaries.values())
    click.echo(
        f"{out}: {len(ds)} rank(s), {events:,} events; loaded and written on the "
        f"cluster in {time.perf_counter() - t0:.2f} s"
    )
