"""Tables out: aligned text for a terminal, JSON, or CSV / Parquet files in a folder.

Trace text is untrusted in every form: text output has its control characters escaped
(cli.terminal), JSON escapes them itself, and a CSV string cell that a spreadsheet would take
for a formula is written with a leading single quote (see _no_formulas).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Iterable, Mapping, Optional

import click
import pyarrow as pa

from .._arrow import array_of
from ..frame.fields import KEY_COLUMNS, table_unit
from ..frame.result import fold_rank_notes
from .terminal import echo, safe_cell

FORMATS = ("table", "json", "csv", "parquet")


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:,.2f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    text = safe_cell(one_line(str(v)))
    return text if len(text) <= 60 else text[:57] + "..."


def one_line(text: str) -> str:
    """JSON text that a trace wrote over several lines (an operator's input dims) on one,
    compact: [[8, 128], [128, 64]]. Other text as it is."""
    if "\n" not in text or not text.lstrip().startswith(("[", "{")):
        return text
    try:
        return json.dumps(json.loads(text), separators=(", ", ": "), ensure_ascii=False)
    except ValueError:
        return text


# How to see the rows a text table left out, for the commands with --limit and --format.
SEE_ALL = "--limit 0 shows all; --format csv or json writes every row"


def _is_ns(f: pa.Field) -> bool:
    unit = (f.metadata or {}).get(b"unit")
    return unit == b"ns" and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))


def text_table(
    table: pa.Table,
    limit: Optional[int] = None,
    see_all: str = SEE_ALL,
    origin_ns: Optional[int] = None,
) -> str:
    """Aligned columns (numbers right-aligned), at most `limit` rows and a line saying how
    many were left out and how to see them (`see_all`). Units come from the schema's
    metadata: every ns column is shown in the one ms, µs or s that suits them all over every
    row (frame.fields.table_unit), points in time from the trace's start (origin_ns; else
    from the column's first); %, B as they are. CSV, Parquet and JSON keep the raw ns."""
    shown = table if limit is None or table.num_rows <= limit else table.slice(0, limit)
    # One unit for every ns column, chosen over all the rows: the same whatever --limit.
    scale, unit_shown, origins = table_unit(
        {f.name: table.column(i) for i, f in enumerate(table.schema) if _is_ns(f)}, origin_ns
    )
    since = "from trace start" if origin_ns is not None else "from the first"
    heads, raw = [], []
    for i, f in enumerate(table.schema):
        unit = (f.metadata or {}).get(b"unit")
        values = shown.column(i).to_pylist()
        if _is_ns(f):
            origin = origins.get(f.name)
            head = f"{f.name} ({unit_shown}{'' if origin is None else ' ' + since})"
            if origin is not None:
                values = [None if v is None else v - origin for v in values]
            if unit_shown != "ns":
                values = [None if v is None else v / scale for v in values]
        else:
            head = f"{f.name} ({unit.decode()})" if unit else f.name
        heads.append(safe_cell(head))
        raw.append(values)
    cols = [
        [str(v) if f.name in KEY_COLUMNS and type(v) is int else _cell(v) for v in values]
        for f, values in zip(table.schema, raw)
    ]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in table.schema]
    widths = [max([len(h)] + [len(c) for c in col]) for h, col in zip(heads, cols)]

    def line(cells: Iterable[str]) -> str:
        return "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)
        ).rstrip()

    out = [line(heads), line("-" * w for w in widths)]
    out += [line(row) for row in zip(*cols)] if cols else []
    if shown.num_rows < table.num_rows:
        out.append(f"... {table.num_rows - shown.num_rows:,} more rows ({see_all})")
    return "\n".join(out)


def jsonable(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    for row in rows:
        for k, v in row.items():
            if isinstance(v, float) and not math.isfinite(v):
                row[k] = None  # JSON has no NaN
    return rows


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=str)


def write_tables(tables: Mapping[str, pa.Table], fmt: str, out_dir: str) -> list[str]:
    """Writes each table as out_dir/NAME.csv or .parquet; returns the paths."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, table in tables.items():
        path = os.path.join(out_dir, f"{name}.{fmt}")
        if fmt == "csv":
            pacsv.write_csv(_plain(table), path)
        else:
            pq.write_table(table, path)
        paths.append(path)
    return paths


def _plain(table: pa.Table) -> pa.Table:
    """CSV has no dictionary or nested types: dictionaries decoded, lists as JSON text."""
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_dictionary(t):
            col = col.cast(t.value_type)
        elif pa.types.is_list(t) or pa.types.is_struct(t) or pa.types.is_large_list(t):
            col = array_of(
                [None if v is None else json.dumps(v) for v in col.to_pylist()], pa.string()
            )
        cols.append(_no_formulas(col))
    return pa.table(cols, names=table.column_names)


# What makes a spreadsheet read a cell as a formula (=, +, -, @) or lets one hide behind
# whitespace it strips (tab, carriage return): OWASP's list for CSV injection.
_FORMULA_START = r"^[=+\-@\t\r]"


def _no_formulas(col: Any) -> Any:
    """String cells that a spreadsheet would run (=HYPERLINK(...), +cmd|...) prefixed with a
    single quote, which spreadsheets read as "this is text" and do not show. Numbers are
    left alone: -3 stays a number."""
    import pyarrow.compute as pc

    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return col
    risky = pc.match_substring_regex(col, _FORMULA_START)
    return pc.if_else(risky, pc.binary_join_element_wise("'", col, ""), col)


def echo_table(
    title: str,
    table: pa.Table,
    limit: Optional[int],
    see_all: str = SEE_ALL,
    origin_ns: Optional[int] = None,
) -> None:
    click.echo(click.style(safe_cell(title), bold=True))
    click.echo(text_table(table, limit, see_all, origin_ns))  # each cell made safe there
    click.echo()


def check_format(fmt: str, out_dir: Optional[str]) -> None:
    """csv and parquet write files, so they need a folder."""
    if fmt in ("csv", "parquet") and not out_dir:
        raise click.UsageError(f"--format {fmt} writes files: give a folder with -o DIR")


def emit(
    tables: Mapping[str, pa.Table],
    notes: Mapping[str, list[str]],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    origin_ns: Optional[int] = None,
) -> None:
    """Tables in the asked format: files in out_dir (csv/parquet, or analyses.json), JSON on
    stdout, or text tables with their notes (and a csv copy when out_dir is given). Text
    shows points in time from origin_ns, the traces' start (trace_start), and says a note
    of many ranks once (frame.result.fold_rank_notes, as the report does); JSON keeps every
    rank's."""
    if fmt in ("csv", "parquet") and out_dir:
        for path in write_tables(tables, fmt, out_dir):
            click.echo(path)
    elif fmt == "json":
        text = dumps({"tables": {k: jsonable(t) for k, t in tables.items()}, "notes": notes})
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "analyses.json")
            with open(path, "w") as fh:
                fh.write(text)
            click.echo(path)
        else:
            click.echo(text)
    else:
        for key, table in tables.items():
            echo_table(
                f"{key} ({table.num_rows:,} rows)", table, limit or None, origin_ns=origin_ns
            )
        for name, lines in notes.items():
            for line in fold_rank_notes(list(lines)):  # as the report says them
                echo(f"note ({name}): {line}")
        if out_dir:
            for path in write_tables(tables, "csv", out_dir):
                click.echo(path)


def trace_start(traces: Any) -> Optional[int]:
    """The earliest event's start over the traces (ns), the origin text tables show points in
    time from; None without events."""
    starts = [int(t.column("events", "ts").min()) for t in traces.values() if t.num_rows("events")]
    return min(starts) if starts else None
