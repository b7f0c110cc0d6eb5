"""Writes docs/query.md, the tables SQL can name and the worked queries, from the package's
own declarations (hta_fast.sql.catalog, hta_fast.schema.COLUMNS, hta_fast.sql.examples).

    python docs/gen_query.py           # rewrite docs/query.md
    python docs/gen_query.py --check   # exit 1 when docs/query.md is not what this writes
"""

from __future__ import annotations

import sys
from pathlib import Path

from gen_api import write_or_check

from hta_fast._core import ColumnRole, ColumnSpec
from hta_fast.schema import COLUMNS
from hta_fast.sql import tables
from hta_fast.sql.examples import EXAMPLES

OUT = Path(__file__).parent / "query.md"
# The schema's name for a table where SQL's differs.
SCHEMA_NAME = {"meta_events": "meta"}

INTRO = """# SQL over traces

`hta-fast query PATH... "SQL"` (and `hta_fast.query(traces, sql)`, which returns a Result)
runs one statement, in DuckDB's dialect, over the traces' own tables and over any analysis,
the critical path, the owners of the GPU's time or the doctor's findings, by name. A
computed result is computed only when the statement names it (`--steps`/`--ranks` choose
what it covers); the trace tables are DuckDB views over the loaded Arrow buffers, nothing
copied. String columns read as text. Output: `--format table|json|csv|parquet` as for
`analyze`. `hta-fast query --tables` lists the names.

The statement reads only these tables: the connection has no file or network access, no
extensions and locked settings (`read_csv('/etc/passwd')`, `COPY ... TO` and `ATTACH` are
refused), since the SQL may come from an agent or someone else's notebook.

Times are integer nanoseconds (`ts` since the epoch, `dur`); DuckDB's 128-bit sums come back
as 64-bit integers. On a folder of ranks every table starts with `rank` (a table's own
column of that name, the collective's rank argument of `comm_args`, is `arg_rank`), and
`events.row` is the row that the `*_args` tables' `row`, `partner` (a launch's GPU event,
a GPU event's launch) and `parent` (the innermost enclosing host event) point at, within
the same rank: join on both.

```python
import hta_fast

job = hta_fast.load_dir("traces")
top = hta_fast.query(
    job, "SELECT name, count(*) AS n, sum(dur) AS ns FROM kernels GROUP BY name ORDER BY ns DESC"
)
print(top.to_pandas().head())
```

This page is written by `docs/gen_query.py` from the declarations in `hta_fast.sql` and
`hta_fast.schema`; tests/analysis/test_query.py runs every query below on real traces.
"""


def _sql_type(spec: ColumnSpec) -> str:
    """What SQL sees: string ids and labelled codes read as text."""
    return "text" if spec.role in (ColumnRole.string, ColumnRole.enum) else str(spec.type)


def _meaning(spec: ColumnSpec) -> str:
    about = (spec.description or "").replace("|", "\\|").replace("\n", " ")
    if spec.role == ColumnRole.enum and spec.labels:
        values = ", ".join(f"`{label}`" for _, label in spec.labels)
        about = f"{about}; one of {values}" if about else f"one of {values}"
    return about


def _trace_tables() -> list[str]:
    lines = ["## The trace's tables", ""]
    for t in tables():
        if t.kind != "trace":
            continue
        lines += [f"### `{t.name}`", "", t.about, ""]
        if t.name == "kernels":
            lines += [
                "A view: `events` rows whose kind is `kernel`, joined with their `kernel_args`"
                " row (grid, block, registers, occupancy, bytes, ...).",
                "",
            ]
            continue
        lines += ["| column | type | unit | meaning |", "|---|---|---|---|"]
        if t.name == "events":
            lines.append("| `row` | int32 | | the event's row in its rank's events |")
        schema_name = SCHEMA_NAME.get(t.name, t.name)
        for (table, column), spec in COLUMNS.items():
            if table == schema_name:
                lines.append(
                    f"| `{column}` | {_sql_type(spec)} | {spec.unit or ''} | {_meaning(spec)} |"
                )
        lines.append("")
    return lines


def _computed() -> list[str]:
    lines = [
        "## Computed when named",
        "",
        "Each analysis' main table goes by its name; its side tables by `NAME.SIDE` (as"
        " `hta-fast analyze` writes them). `DESCRIBE NAME` lists a result's columns.",
        "",
        "| name | what |",
        "|---|---|",
    ]
    lines += [f"| `{t.name}` | {t.about} |" for t in tables() if t.kind != "trace"]
    return lines + [""]


def _examples() -> list[str]:
    lines = ["## Worked queries", ""]
    for e in EXAMPLES:
        lines += [f"**{e.title}**", "", "```sql", e.sql, "```", ""]
    return lines


def render() -> str:
    return "\n".join([INTRO, *_trace_tables(), *_computed(), *_examples()]).rstrip() + "\n"


def main() -> int:
    return write_or_check(OUT, render(), "gen_query.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
