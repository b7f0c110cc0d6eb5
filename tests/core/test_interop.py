"""Interop: every Result and Trace table goes to pandas, Polars, DuckDB and any Arrow C
stream consumer, and comes back with the same values and the same types (dictionary
strings, int64 ns, nulls)."""

from __future__ import annotations

import builtins

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hta_fast
from hta_fast import interop
from hta_fast._named_tables import TABLE_ATTRIBUTES
from hta_fast.analysis.kernel_breakdown import kernel_breakdown
from hta_fast.analysis.temporal import temporal_breakdown

FOLDER = "hta/trace_filter"


@pytest.fixture(scope="module")
def ranks(traces_dir):
    return hta_fast.load_dir(str(traces_dir / FOLDER))


@pytest.fixture(scope="module")
def trace(ranks):
    return ranks[0]


def same_values(a: pa.Table, b: pa.Table) -> None:
    """Equal schemas (types and metadata) and equal values; dictionary columns compared by
    their strings, since a round trip may renumber the dictionary."""
    assert a.schema.equals(b.schema, check_metadata=True)
    for name in a.column_names:
        x, y = a[name], b[name]
        if pa.types.is_dictionary(x.type):
            x, y = x.cast(x.type.value_type), y.cast(y.type.value_type)
        assert x.equals(y), name


@pytest.mark.parametrize("table", TABLE_ATTRIBUTES)
def test_trace_tables_round_trip_through_pandas_and_polars(trace, table):
    t = trace.to_arrow(table)
    same_values(interop.from_pandas(trace.to_pandas(table), t.schema), t)
    same_values(interop.from_polars(trace.to_polars(table), t.schema), t)


def test_pandas_and_polars_types(trace):
    ev = trace.events
    assert ev["correlation"].null_count and ev["stream"].null_count  # the cases that matter
    df = trace.to_pandas()
    assert str(df["ts"].dtype) == "int64" and str(df["dur"].dtype) == "int64"
    assert str(df["correlation"].dtype) == "Int64" and str(df["stream"].dtype) == "Int32"
    assert str(df["name"].dtype) == "category" and str(df["kind"].dtype) == "category"
    # Exact beyond 2**53: ids that a float64 column would round.
    big = pa.table({"id": pa.array([2**53 + 1, None], pa.int64())})
    assert interop.to_pandas(big)["id"][0] == 2**53 + 1
    pl = pytest.importorskip("polars")
    p = trace.to_polars()
    assert p.schema["ts"] == pl.Int64 and p.schema["stream"] == pl.Int32
    assert p.schema["name"] == pl.Categorical
    assert p["stream"].null_count() == ev["stream"].null_count


def test_results_round_trip(ranks):
    res = kernel_breakdown(ranks)
    for which in (None, "kernels", "distribution"):
        t = res.to_arrow(which)
        same_values(interop.from_pandas(res.to_pandas(which), t.schema), t)
        same_values(interop.from_polars(res.to_polars(which), t.schema), t)


def test_arrow_c_stream(ranks, trace):
    res = temporal_breakdown(ranks)
    assert pa.table(res).equals(res.table)  # Result: its main table
    assert pa.table(trace).equals(trace.events)  # Trace: its events
    assert pa.RecordBatchReader.from_stream(trace.kernel_args).read_all().equals(trace.kernel_args)
    pl = pytest.importorskip("polars")
    assert pl.DataFrame(res).shape == (res.table.num_rows, res.table.num_columns)


def test_duckdb_queries_the_tables_in_place(ranks, trace):
    con = interop.duckdb(trace)
    got = con.sql(
        "select name, count(*), sum(dur) from events where kind = 'kernel' "
        "group by name order by 3 desc, 1 limit 3"
    ).fetchall()
    ev = trace.events.filter(pc.equal(trace.events["kind"].cast(pa.string()), "kernel"))
    g = ev.group_by("name").aggregate([("dur", "count"), ("dur", "sum")])
    want = sorted(
        (
            (n.as_py(), c.as_py(), s.as_py())
            for n, c, s in zip(g["name"].cast(pa.string()), g["dur_count"], g["dur_sum"])
        ),
        key=lambda r: (-r[2], r[0]),
    )[:3]
    assert got == want
    # A TraceSet's tables carry a rank column; a Result's side tables are views too.
    per_rank = dict(
        interop.duckdb(ranks).sql("select rank, count(*) from events group by rank").fetchall()
    )
    assert per_rank == {r: ranks[r].events.num_rows for r in ranks.ranks}
    res = kernel_breakdown(ranks)
    assert (
        interop.duckdb(res).sql("select count(*) from kernels").fetchall()[0][0]
        == res["kernels"].num_rows
    )


def test_duckdb_does_not_copy_the_buffers(trace):
    """Registering makes views over the Arrow buffers: nothing is allocated in Arrow's
    memory pool, and a query reads the loaded values."""
    before = pa.total_allocated_bytes()
    con = interop.duckdb(trace)
    assert pa.total_allocated_bytes() - before < 1 << 16
    got = con.sql("select sum(dur), max(ts) from events").fetchall()[0]
    assert got == (
        int(trace.column("events", "dur").sum()),
        int(trace.column("events", "ts").max()),
    )


def test_polars_missing_is_a_clear_error(trace, monkeypatch):
    real_import = builtins.__import__

    def no_polars(name, *args, **kwargs):
        if name == "polars":
            raise ImportError("No module named 'polars'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_polars)
    with pytest.raises(ImportError, match="pip install polars"):
        trace.to_polars()


def test_unknown_table_is_a_clear_error(trace):
    with pytest.raises(ValueError, match="no table 'event'"):
        trace.to_arrow("event")


def test_results_and_stats_print_readably_and_categoricals_hold_only_present_values(traces_dir):
    import hta_fast
    from hta_fast.analysis.kernel_breakdown import kernel_breakdown

    t = hta_fast.load(str(traces_dir / "hta/trace_diff/control/control.json.gz"))
    text = repr(kernel_breakdown(t))
    assert text.splitlines()[0] == "Result kernel_breakdown: 7 rows x 4 columns"
    assert "['kernels']: 17 rows x 9 columns" in text and "time (ns)" in text
    html = kernel_breakdown(t)._repr_html_()
    assert html.startswith("<p><b>Result kernel_breakdown</b>") and "<table>" in html
    assert repr(t.stats) == "LoadStats: nothing skipped or repaired"
    assert t.stats.select(["name", "count"]).num_rows == t.stats.num_rows  # still a table
    cats = t.to_pandas()["cat"]
    assert len(cats.cat.categories) == cats.nunique()
