"""`hta-fast ops` (operator table and roofline) and `hta-fast predict` (kernel time on another
GPU): hta_fast.analysis.op_table / roofline and hta_fast.model.predict."""

from __future__ import annotations

from typing import Optional

import click

from ..analysis import op_table as op_table_mod
from ..analysis import roofline as roofline_mod
from .app import BadInput, Options, cli
from .loading import load_traces
from .options import F, result_tables, selection, table_command
from .output import check_format, emit

DEVICES_FILE_HELP = "A JSON device table tried before the built-in one (see docs/ops.md)."

# The library's hints name its keywords; on the command line they are these options (as
# cli.errors does for recover=True).
_FLAGS = {"pass device=": "pass --device", "pass source_device=": "pass --source-device"}


def in_flag_terms(text: str) -> str:
    for keyword, flag in _FLAGS.items():
        text = text.replace(keyword, flag)
    return text


def _with_devices_file(f: F) -> F:
    return click.option(
        "--devices-file", type=click.Path(dir_okay=False, exists=True), help=DEVICES_FILE_HELP
    )(f)


@cli.command("ops")
@table_command
@_with_devices_file
@click.option(
    "--device", help="Device table key or name for the roofline (default: each trace's own GPU)."
)
@click.option("--prefix", help="Only operators whose names start so, e.g. aten::")
@click.pass_obj
def ops_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    devices_file: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    device: Optional[str],
    prefix: Optional[str],
) -> None:
    """Operators by name and shape with the GPU time of their kernels, FLOPs and bytes, and
    the roofline: achieved against peak, the bound, and the ops with most time left."""
    check_format(fmt, out_dir)
    asked = selection(ranks, steps)
    traces, _ = load_traces(paths, opts, recover)
    sel = asked.of(traces)
    results = [
        roofline_mod.roofline(
            traces, device=device, devices_file=devices_file, op_prefix=prefix, selection=sel
        ),
        op_table_mod.op_table(traces, op_prefix=prefix, costs=True, selection=sel),
    ]
    tables, notes = result_tables(results)
    notes = {name: [in_flag_terms(n) for n in lines] for name, lines in notes.items()}
    emit(tables, notes, fmt, out_dir, limit)


@cli.command("predict")
@table_command
@_with_devices_file
@click.option("--device", required=True, help="The GPU to predict for (device table key or name).")
@click.option("--source-device", help="The trace's own GPU, when its header does not name it.")
@click.pass_obj
def predict_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    devices_file: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    device: str,
    source_device: Optional[str],
) -> None:
    """GPU time of each operator family predicted on another GPU from this trace's kernels
    (roofline with efficiency curves fitted from the trace; see docs/ops.md for its error)."""
    from ..model.predict import predict

    check_format(fmt, out_dir)
    asked = selection(ranks, steps)
    traces, _ = load_traces(paths, opts, recover)
    sel = asked.of(traces)
    try:
        result = predict(
            traces, device, source_device=source_device, devices_file=devices_file, selection=sel
        )
    except ValueError as e:
        raise BadInput(in_flag_terms(str(e))) from None
    tables, notes = result_tables([result])
    tables.pop("predict.events", None)  # one row per kernel: for the library, not a terminal
    emit(tables, notes, fmt, out_dir, limit)
