"""hta_fast.query / `hta-fast query`: SQL over the traces' tables and the results it names.
Each figure is checked against the same figure from the Python API; every documented query
runs on real traces; the connection reads nothing but the registered tables."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.idle_time import idle_time_breakdown
from hta_fast.cli.app import cli
from hta_fast.doctor import diagnose
from hta_fast.model.path.owners import wait_owners
from hta_fast.schema import EventKind
from hta_fast.sql import query, tables
from hta_fast.sql.examples import EXAMPLES

DLRM = "param_dlrm_8rank"
COMM = "hta/nccl_parser_config"


@pytest.fixture(scope="module")
def dlrm(traces_dir):
    path = traces_dir / DLRM
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return hta_fast.load_dir(str(path))


def _rows(result) -> list[dict]:
    return result.to_arrow().to_pylist()


@pytest.mark.parametrize("rel", [DLRM, COMM, "modern/b200_eager", "modern/vllm_decode_full"])
def test_every_documented_query_runs(traces_dir, rel):
    path = traces_dir / rel
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    ts = hta_fast.load_dir(str(path))
    for e in EXAMPLES:
        t = query(ts, e.sql).to_arrow()
        assert t.num_columns, e.title
        # 64-bit sums come back as integers, not decimal(38, 0)
        assert not any(pa.types.is_decimal(f.type) for f in t.schema), e.title


def test_kernel_time_per_rank_is_the_traces(dlrm):
    got = {r["rank"]: (r["kernels"], r["kernel_ms"]) for r in _rows(query(dlrm, EXAMPLES[0].sql))}
    for rank in dlrm.ranks:
        t = dlrm[rank]
        kernel = t.column("events", "kind") == int(EventKind.kernel)
        dur = t.column("events", "dur")[kernel]
        assert got[rank] == (int(kernel.sum()), pytest.approx(dur.sum() / 1e6))


def test_side_tables_and_results_by_name(dlrm):
    side = query(dlrm, "SELECT * FROM idle_time.interval_stats").to_arrow()
    direct = idle_time_breakdown(dlrm, interval_stats=True).tables["interval_stats"]
    assert side.num_rows == direct.num_rows
    assert side.column("count").to_pylist() == direct.column("count").to_pylist()
    found = {r["cause"]: r for r in _rows(query(dlrm, "SELECT * FROM doctor"))}
    for f in diagnose(dlrm).findings:
        assert found[f.cause]["cost_ns_per_step"] == f.cost_ns_per_step
        assert found[f.cause]["saving_ns_per_step"] == f.saving_ns_per_step
    owners = query(dlrm, "SELECT sum(cross_rank) AS w FROM owners").to_arrow()["w"][0].as_py()
    assert owners == int(np.sum(wait_owners(dlrm).table["cross_rank"].to_numpy()))


def test_steps_is_the_trace_table_and_profiler_steps_the_analysis(dlrm):
    trace = query(dlrm, "SELECT * FROM steps").to_arrow()
    assert trace.column_names == ["rank", "row", "step", "ts", "dur"]
    assert query(dlrm, "SELECT count(*) AS n FROM profiler_steps").to_arrow()["n"][0].as_py()
    names = [t.name for t in tables()]
    assert len(names) == len(set(names))


def test_rows_join_a_kernel_to_its_launch(dlrm):
    sql = (
        "SELECT k.rank, k.row, l.row AS launch, l.kind FROM kernels k "
        "JOIN events l ON l.rank = k.rank AND l.row = k.partner"
    )
    rows = _rows(query(dlrm, sql))
    linked = 0
    for rank in dlrm.ranks:
        t = dlrm[rank]
        kernel = t.column("events", "kind") == int(EventKind.kernel)
        linked += int((t.column("events", "partner")[kernel] >= 0).sum())
    assert len(rows) == linked
    r = rows[0]
    assert dlrm[r["rank"]].column("events", "partner")[r["row"]] == r["launch"]
    assert {r["kind"] for r in rows} == {"runtime"}


def test_a_collectives_rank_argument_is_kept_apart(traces_dir):
    path = traces_dir / COMM
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    t = query(hta_fast.load_dir(str(path)), "SELECT * FROM comm_args").to_arrow()
    assert t.column_names[:2] == ["rank", "row"]
    assert "arg_rank" in t.column_names and "rank_1" not in t.column_names


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "COPY (SELECT 1) TO '/tmp/hta_fast_query_escape.csv'",
        "ATTACH '/tmp/hta_fast_query_escape.duckdb'",
        "SET enable_external_access = true",
        "INSTALL httpfs",
    ],
)
def test_the_statement_reads_nothing_but_the_tables(dlrm, sql):
    with pytest.raises(ValueError, match="query: "):
        query(dlrm, sql)


def test_python_variables_are_not_tables(dlrm):
    secret = pa.table({"x": [1]})  # noqa: F841 - what a replacement scan would find
    with pytest.raises(ValueError, match="the tables are: events"):
        query(dlrm, "SELECT * FROM secret")


def test_bad_sql_is_one_clear_error(dlrm):
    with pytest.raises(ValueError, match="does not parse"):
        query(dlrm, "SELEC * FROM events")
    with pytest.raises(ValueError, match="one SQL statement"):
        query(dlrm, "  ")


def test_the_command(traces_dir, dlrm, tmp_path):
    path = str(traces_dir / DLRM)
    sql = "SELECT rank, count(*) AS n FROM kernels GROUP BY rank ORDER BY rank"
    out = CliRunner().invoke(cli, ["-q", "query", path, sql, "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["tables"]["query"]
    assert [r["n"] for r in rows] == [r["kernels"] for r in _rows(query(dlrm, EXAMPLES[0].sql))]
    out = CliRunner().invoke(
        cli, ["-q", "query", path, sql, "--format", "csv", "-o", str(tmp_path)]
    )
    assert out.exit_code == 0, out.output
    assert (tmp_path / "query.csv").read_text().splitlines()[0] == '"rank","n"'
    listed = CliRunner().invoke(cli, ["query", "--tables"])
    assert "profiler_steps" in listed.stdout and "kernels" in listed.stdout
    bad = CliRunner().invoke(cli, ["-q", "query", path])
    assert bad.exit_code == 2 and "one SQL statement" in bad.output


def test_the_package_root_names_it():
    assert hta_fast.query is query
    assert "query" in hta_fast.__all__
