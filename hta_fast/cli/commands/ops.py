"""`hta-fast ops` (operator table and roofline), `hta-fast predict` (kernel time on another
GPU), `hta-fast comm-model` (a collective's time on a machine) and `hta-fast shard`
(embedding sharding plans' step time): hta_fast.analysis.ops.op_table / roofline,
hta_fast.model.predict, hta_fast.model.comm.collective_model and
hta_fast.model.plans.shard."""

from __future__ import annotations

from typing import Optional

import click
import pyarrow as pa

from ...analysis.ops import op_table as op_table_mod
from ...analysis.ops import roofline as roofline_mod
from ...frame.select import Selection, each_rank
from ...traceset import TraceSet
from ..app import BadInput, Options, cli
from ..loading import capture_option, path_arguments, recover_option, with_capture_file
from ..options import F, load_traces, result_tables, selection, table_command
from ..output import check_format, emit, one_line, trace_start

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
@click.option(
    "--wide",
    is_flag=True,
    help="Every column in the table format (by default the ones that fit 120 columns; "
    "csv, parquet and json always hold every column).",
)
@capture_option
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
    steps_from: str,
    device: Optional[str],
    prefix: Optional[str],
    wide: bool,
    capture: Optional[str],
) -> None:
    """Operators by name and shape with the GPU time of their kernels, FLOPs and bytes, and
    the roofline: achieved against peak, the bound, and the ops with most time left."""
    check_format(fmt, out_dir)
    asked = selection(ranks, steps)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = with_capture_file(traces, capture, opts, recover)
    sel = asked.of(traces)
    results = [
        roofline_mod.roofline(
            traces, device=device, devices_file=devices_file, op_prefix=prefix, selection=sel
        ),
        op_table_mod.op_table(traces, op_prefix=prefix, costs=True, selection=sel),
    ]
    tables, notes = result_tables(results)
    notes = {name: [in_flag_terms(n) for n in lines] for name, lines in notes.items()}
    notes["roofline"] = coverage_notes(traces, sel, prefix) + notes["roofline"]
    # both results say what ran in graph replays: once is enough
    notes["op_table"] = [n for n in notes["op_table"] if n not in notes["roofline"]]
    if fmt == "table" and not wide:
        tables = {name: narrow(name, t) for name, t in tables.items()}
    emit(tables, notes, fmt, out_dir, limit, origin_ns=trace_start(traces))


def coverage_notes(
    traces: TraceSet, sel: Selection, prefix: Optional[str], top: int = 3
) -> list[str]:
    """Per rank, the share of GPU time under operators with a cost model (the roofline's
    coverage), and where the rest ran: the innermost operators around it and why they have
    no model, graph replays, host transfers, launches outside any operator."""
    import numpy as np
    import pyarrow.compute as pc

    from ...frame.graph_attribution import operator_launches
    from ...frame.graph_replays import GRAPH_LAUNCH
    from ...frame.launches import enclosing, launch_pairs

    lines = []
    for rank, trace, mask in each_rank(traces, sel):
        cg = roofline_mod.ChargedGroups(trace, mask, prefix)
        names = trace.column("events", "name")
        launch, gpu = launch_pairs(trace, mask, include_memory_events=True)
        by = operator_launches(trace, launch, gpu)  # a replayed kernel: its capture's
        host = roofline_mod.host_transfer_names(trace)[names[gpu]]
        launch, by = launch[~host], by[~host]
        total = int(cg.dur.sum()) + cg.host_time
        if not total:
            continue
        charged = cg.op_row >= 0
        modelled = int(cg.dur[charged].sum())
        rest: dict[str, float] = {}
        if cg.host_time:
            rest["host transfers (bound by the host link)"] = cg.host_time
        left = ~charged
        graph = pc.match_substring_regex(trace.strings, GRAPH_LAUNCH).to_numpy(
            zero_copy_only=False
        )[names[launch[left]]]
        is_op = np.zeros(len(names), bool)
        is_op[cg.groups.rows] = True
        group_of = np.full(len(names), -1, np.int64)
        group_of[cg.groups.rows] = cg.groups.group
        inner = enclosing(trace, by[left], is_op)
        reasons = cg.costs["no_model"].to_pylist()
        dims = cg.head["input_dims"].to_pylist()
        op_names = cg.head["name"].to_pylist()
        for dur, op, replay in zip(cg.dur[left], inner, graph):
            if op < 0:
                key = "graph replays" if replay else "launches outside any operator"
            else:
                g = group_of[op]
                why = (
                    "no input shapes recorded"
                    if dims[g] is None
                    else reasons[g] or "its model counts no work"
                )
                where = ", a graph replay" if replay else ""
                key = f"{op_names[g]} ({why}{where})"
            rest[key] = rest.get(key, 0) + int(dur)
        ranked = sorted(rest.items(), key=lambda kv: -kv[1])
        shown = "; ".join(
            f"{k} {v / 1e6:,.3f} ms ({100 * v / total:.2f} %)" for k, v in ranked[:top]
        )
        more = f"; {len(ranked) - top} more" if len(ranked) > top else ""
        lines.append(
            f"rank {rank}: operators with a cost model ran {100 * modelled / total:.2f} % of "
            f"the GPU time ({modelled / 1e6:,.3f} of {total / 1e6:,.3f} ms)"
            + (f"; not modelled: {shown}{more}" if ranked else "")
        )
    return lines


@cli.command("predict")
@table_command
@_with_devices_file
@click.option("--device", required=True, help="The GPU to predict for (device table key or name).")
@click.option("--source-device", help="The trace's own GPU, when its header does not name it.")
@capture_option
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
    steps_from: str,
    device: str,
    source_device: Optional[str],
    capture: Optional[str],
) -> None:
    """GPU time of each operator family predicted on another GPU from this trace's kernels
    (roofline with efficiency curves fitted from the trace; the ratio of the devices' peaks
    where that does better; see docs/ops.md for its error). Graph-replayed kernels follow
    their capturing operators given --capture, else the bandwidth ratio."""
    from ...model.predict import predict

    check_format(fmt, out_dir)
    asked = selection(ranks, steps)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = with_capture_file(traces, capture, opts, recover)
    sel = asked.of(traces)
    try:
        result = predict(
            traces, device, source_device=source_device, devices_file=devices_file, selection=sel
        )
    except ValueError as e:
        raise BadInput(in_flag_terms(str(e))) from None
    tables, notes = result_tables([result])
    tables.pop("predict.events", None)  # one row per kernel: for the library, not a terminal
    emit(tables, notes, fmt, out_dir, limit, origin_ns=trace_start(traces))


SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_sizes(text: str) -> list[int]:
    """ "1M,64M,1G" -> bytes; K/M/G/T are binary (KiB, MiB, GiB, TiB), "KiB" spellings too."""
    out = []
    for part in text.split(","):
        word = part.strip().upper().removesuffix("IB").removesuffix("B")
        digits = word.rstrip("KMGT")
        unit = word[len(digits) :]
        try:
            value = float(digits) * SIZE_UNITS[unit]
        except (KeyError, ValueError):
            raise BadInput(
                f"--sizes: cannot read {part.strip()!r} (bytes, or a number with K, M, G "
                "or T: binary, 1M = 1 MiB = 1048576 bytes)"
            ) from None
        if value < 0 or value != int(value):
            raise BadInput(f"--sizes: {part.strip()!r} is not a whole number of bytes")
        out.append(int(value))
    return out


@cli.command("comm-model")
@click.option(
    "--topology",
    "topology_name",
    required=True,
    help="A topology JSON file, or a shipped one by name (hgx_h100, dgx_a100, aws_p5, ...; "
    "see docs/comm_model.md).",
)
@click.option(
    "--kind",
    default="all_reduce",
    show_default=True,
    type=click.Choice(
        ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"]
    ),
)
@click.option(
    "--sizes",
    required=True,
    help="Comma-separated sizes in bytes; K, M, G are binary (1M = 1 MiB = 1048576 B).",
)
@click.option("--ranks", type=int, help="Ranks in the group (default: every GPU of the topology).")
@click.option("--nodes", type=int, help="Nodes of the topology (default: the file's).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.pass_obj
def comm_model_command(
    opts: Options,
    topology_name: str,
    kind: str,
    sizes: str,
    ranks: Optional[int],
    nodes: Optional[int],
    fmt: str,
) -> None:
    """A collective's predicted time on a machine, with the algorithm and protocol NCCL would
    pick (ring / tree / NVLS, LL / LL128 / Simple), the algorithm and bus bandwidth (GB/s =
    1e9 B/s, as nccl-tests). See docs/comm_model.md for the model and its measured error."""
    import sys

    import pyarrow.csv as pacsv

    from ...model.comm.collective_model import predict_collectives
    from ...model.comm.topology import load_topology

    wanted = parse_sizes(sizes)
    try:
        topo = load_topology(topology_name)
        if nodes is not None:
            topo = topo.with_nodes(nodes)
        preds = predict_collectives(kind, wanted, topo, ranks=ranks)
    except (FileNotFoundError, ValueError) as e:
        raise BadInput(str(e)) from None
    table = pa.table(
        {
            "size_bytes": pa.array([int(p.size_bytes) for p in preds], pa.int64()),
            "ranks": pa.array([p.ranks for p in preds], pa.int64()),
            "nodes": pa.array([p.nodes for p in preds], pa.int64()),
            "time_us": pa.array([p.time_us for p in preds], pa.float64()),
            "algorithm": pa.array([p.algorithm for p in preds], pa.string()),
            "protocol": pa.array([p.protocol for p in preds], pa.string()),
            "algbw_gbps": pa.array([p.algbw_gbps for p in preds], pa.float64()),
            "busbw_gbps": pa.array([p.busbw_gbps for p in preds], pa.float64()),
            "bottleneck": pa.array([p.bottleneck for p in preds], pa.string()),
        }
    )
    if fmt == "csv":
        sink = pa.BufferOutputStream()
        pacsv.write_csv(table, sink)
        sys.stdout.write(sink.getvalue().to_pybytes().decode())
        return
    lines = [f"topology: {topo.name} ({topo.nodes} node(s)); {topo.source}"]
    if topo.nccl_algo or topo.nccl_proto:
        lines.append(
            f"NCCL chooses only among NCCL_ALGO={topo.nccl_algo or 'any'} and "
            f"NCCL_PROTO={topo.nccl_proto or 'any'}, as the topology file says the system sets them"
        )
    notes = {f"comm_model.{kind}": lines}
    emit({f"comm_model.{kind}": table}, notes, fmt, None, 0)


@cli.command("shard")
@path_arguments
@click.option(
    "--tables",
    "tables_path",
    required=True,
    type=click.Path(dir_okay=False, exists=True),
    help="TABLES.json: the embedding tables (name, rows, dim, pooling, batch; see "
    "docs/model_costs.md and docs/examples/param_dlrm_8rank_tables.json).",
)
@click.option(
    "--plans",
    "plans_path",
    type=click.Path(dir_okay=False, exists=True),
    help="PLANS.json: a list of plans, each a name and {table: rank} (plan) or a per-rank "
    "list of tables (ranks). Default: the recorded plan and three alternatives.",
)
@click.option(
    "--topology",
    "topology_name",
    help="The machine the all-to-all runs on: a topology JSON file or a shipped name "
    "(default: the recorded machine's; see docs/comm_model.md).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Folder for the tables (csv: shard.csv and shard.ranks.csv; default: stdout).",
)
@recover_option
@click.pass_obj
def shard_command(
    opts: Options,
    paths: tuple[str, ...],
    tables_path: str,
    plans_path: Optional[str],
    topology_name: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    recover: bool,
) -> None:
    """Embedding sharding plans ranked by predicted step time: per plan and rank the lookup
    time (the lookup cost model fitted on the trace's own lookup kernels) and the
    all-to-all at the plan's sizes (the collective model on the topology), and the step
    replayed with them. Without --plans: the recorded plan (the tables' rank keys, checked
    against the trace) beside round robin, greedy and size-balanced plans. Columns say what
    is measured (from the trace) and what is predicted (docs/model_costs.md)."""
    import sys

    import pyarrow.csv as pacsv

    from ...model.plans.shard import read_plans, read_tables, shard

    traces, _ = load_traces(paths, opts, recover)
    n = len(traces.ranks)
    try:
        spec = read_tables(tables_path, ranks=n)
        plans = read_plans(plans_path, spec.tables, n) if plans_path else None
        result = shard(traces, spec, plans, topology=topology_name)
    except (FileNotFoundError, ValueError) as e:
        raise BadInput(str(e)) from None
    tables, notes = result_tables([result])
    if fmt == "csv" and not out_dir:
        for i, (name, table) in enumerate(tables.items()):
            sink = pa.BufferOutputStream()
            pacsv.write_csv(table, sink)
            sys.stdout.write(("\n" if i else "") + f"# {name}\n")
            sys.stdout.write(sink.getvalue().to_pybytes().decode())
        return
    if fmt == "table":
        tables = {name: in_us(t) for name, t in tables.items()}
    emit(tables, notes, fmt, out_dir, 0, origin_ns=trace_start(traces))


def in_us(table: pa.Table) -> pa.Table:
    """The lookup and all-to-all columns (ns) in µs for the text table: a table shows all its
    ns columns in one unit, and the steps' ms would round the lookups (tens of µs) away."""
    import pyarrow.compute as pc

    fields, arrays = [], []
    for f, col in zip(table.schema, table.columns):
        if f.name.startswith(("lookup_", "max_lookup_", "a2a_")) and not f.name.endswith("bytes"):
            col = pc.divide(col.cast(pa.float64()), 1000.0)
            f = f.with_type(pa.float64()).with_metadata({"unit": "us"})
        fields.append(f)
        arrays.append(col)
    return pa.table(arrays, schema=pa.schema(fields))


# What the table format shows of each table without --wide, under shorter names: what a
# person reads first, in 120 columns (long names and shapes cut, as the cells say with "...").
NARROW = {
    "roofline": {"name": "name", "input_dims": "input_dims", "calls": "calls", "gpu_time": "gpu_time",
                 "pct_of_roofline": "of_roofline", "time_left": "time_left", "uncertain": "uncertain"},
    "roofline.kernels": {"kernel": "kernel", "count": "count", "gpu_time": "gpu_time",
                         "pct_of_roofline": "of_roofline", "uncertain": "uncertain"},
    "op_table": {"name": "name", "input_dims": "input_dims", "count": "count", "gpu_time_sum": "gpu_time",
                 "self_gpu_time_sum": "self_gpu", "cpu_time_sum": "cpu_time", "family": "family"},
    "op_table.by_name": {"name": "name", "count": "count", "gpu_time_sum": "gpu_time",
                         "self_gpu_time_sum": "self_gpu", "cpu_time_sum": "cpu_time",
                         "self_cpu_time_sum": "self_cpu"},
}  # fmt: skip
NARROW["op_table.no_model"] = {
    "name": "name",
    "reason": "reason",
    "groups": "groups",
    "calls": "calls",
    "gpu_time_sum": "gpu_time",
}
NARROW_TEXT = {"name": 26, "kernel": 50, "input_dims": 16, "reason": 48}


def narrow(name: str, table: pa.Table) -> pa.Table:
    """The columns NARROW keeps, renamed so (with rank, where several ranks are shown), long
    text cut (JSON text put on one line first: output.one_line)."""
    keep = NARROW.get(name)
    if keep is None:
        return table
    ranks = "rank" in table.column_names and len(set(table["rank"].to_pylist())) > 1
    fields, arrays = [], []
    for c, shown in [*((("rank", "rank"),) if ranks else ()), *keep.items()]:
        if c not in table.column_names:
            continue
        values = table[c]
        width = NARROW_TEXT.get(c)
        if width:
            values = pa.array(
                [
                    v if v is None or len(v) <= width else v[: width - 3] + "..."
                    for v in (None if v is None else one_line(v) for v in values.to_pylist())
                ],
                pa.string(),
            )
        fields.append(table.schema.field(c).with_name(shown).with_type(values.type))
        arrays.append(values)
    return pa.table(arrays, schema=pa.schema(fields))
