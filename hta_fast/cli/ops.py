"""`hta-fast ops` (operator table and roofline) and `hta-fast predict` (kernel time on another
GPU): hta_fast.analysis.op_table / roofline and hta_fast.model.predict."""
from __future__ import annotations

from typing import Callable, Optional, TypeVar

import click
import pyarrow as pa

from ..analysis import op_table as op_table_mod
from ..analysis import roofline as roofline_mod
from ..analysis.result import Result
from ..analysis.select import Selection
from .app import Options, cli
from .loading import (RANKS_HELP, STEPS_HELP, load_traces, parse_ints, path_arguments,
                      recover_option)
from .output import FORMATS, check_format, emit

F = TypeVar("F", bound=Callable[..., object])

DEVICES_FILE_HELP = "A JSON device table tried before the built-in one (see docs/ops.md)."


def _collect(results: list[Result]) -> tuple[dict[str, pa.Table], dict[str, list[str]]]:
    tables: dict[str, pa.Table] = {}
    notes: dict[str, list[str]] = {}
    for r in results:
        tables[r.name] = r.table
        tables.update({f"{r.name}.{side}": t for side, t in r.tables.items()})
        notes[r.name] = r.notes
    return tables, notes


def _common(f: F) -> F:
    """The options ops and predict share."""
    for option in reversed([
            click.option("--steps", help=STEPS_HELP), click.option("--ranks", help=RANKS_HELP),
            click.option("--devices-file", type=click.Path(dir_okay=False, exists=True),
                         help=DEVICES_FILE_HELP),
            click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
                         show_default=True),
            click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False),
                         help="Folder for the tables (NAME.csv / NAME.parquet / analyses.json)."),
            click.option("--limit", type=int, default=20, show_default=True,
                         help="Rows shown per table in the table format (0: all).")]):
        f = option(f)
    return recover_option(path_arguments(f))


@cli.command("ops")
@_common
@click.option("--device", help="Device table key or name for the roofline "
              "(default: each trace's own GPU).")
@click.option("--prefix", help="Only operators whose names start so, e.g. aten::")
@click.pass_obj
def ops_command(opts: Options, paths: tuple[str, ...], steps: Optional[str],
                ranks: Optional[str], devices_file: Optional[str], fmt: str,
                out_dir: Optional[str], limit: int, recover: bool, device: Optional[str],
                prefix: Optional[str]) -> None:
    """Operators by name and shape with the GPU time of their kernels, FLOPs and bytes, and
    the roofline: achieved against peak, the bound, and the ops with most time left."""
    check_format(fmt, out_dir)
    selection = Selection(ranks=parse_ints(ranks, "rank"), steps=parse_ints(steps, "step"))
    traces, _ = load_traces(paths, opts, recover)
    results = [
        roofline_mod.roofline(traces, device=device, devices_file=devices_file,
                              op_prefix=prefix, selection=selection),
        op_table_mod.op_table(traces, op_prefix=prefix, costs=True, selection=selection),
    ]
    emit(*_collect(results), fmt, out_dir, limit)


@cli.command("predict")
@_common
@click.option("--device", required=True, help="The GPU to predict for (device table key or name).")
@click.option("--source-device", help="The trace's own GPU, when its header does not name it.")
@click.pass_obj
def predict_command(opts: Options, paths: tuple[str, ...], steps: Optional[str],
                    ranks: Optional[str], devices_file: Optional[str], fmt: str,
                    out_dir: Optional[str], limit: int, recover: bool, device: str,
                    source_device: Optional[str]) -> None:
    """GPU time of each operator family predicted on another GPU from this trace's kernels
    (roofline with efficiency curves fitted from the trace; see docs/ops.md for its error)."""
    from ..model.predict import predict

    check_format(fmt, out_dir)
    selection = Selection(ranks=parse_ints(ranks, "rank"), steps=parse_ints(steps, "step"))
    traces, _ = load_traces(paths, opts, recover)
    result = predict(traces, device, source_device=source_device, devices_file=devices_file,
                     selection=selection)
    tables, notes = _collect([result])
    tables.pop("predict.events", None)  # one row per kernel: for the library, not a terminal
    emit(tables, notes, fmt, out_dir, limit)
