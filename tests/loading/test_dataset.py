"""The Parquet dataset: written from a TraceSet, opened back lazily, readable by DuckDB and
Polars, at a local path or an fsspec URL."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

import hta_fast
from hta_fast.loading.dataset import open_dataset, write_dataset
from hta_fast.loading.summary import summarize
from hta_fast.trace import TABLES


@pytest.fixture(scope="module")
def dlrm(traces_dir):
    return hta_fast.load_dir(traces_dir / "param_dlrm_8rank")


@pytest.fixture(scope="module")
def written(dlrm, tmp_path_factory):
    path = tmp_path_factory.mktemp("ds") / "dlrm"
    write_dataset(dlrm, str(path))
    return path


def test_round_trip_every_table_and_summary(dlrm, written):
    ds = open_dataset(str(written))
    assert ds.ranks == list(range(8)) and len(ds) == 8
    for r in ds:
        for name in TABLES:
            assert ds[r].to_arrow(name).equals(dlrm[r].to_arrow(name)), (r, name)
        # read back from the dataset's summary tables, not recomputed
        assert ds.summaries[r] == summarize(dlrm[r]), r
    manifest = json.loads((written / "manifest.json").read_text())
    assert manifest["ranks"]["3"]["rows"]["events"] == dlrm[3].events.num_rows
    assert manifest["ranks"]["3"]["source"] == dlrm[3].meta.path


def test_tables_are_read_only_when_asked(written, monkeypatch):
    ds = open_dataset(str(written))
    reads = []
    original = type(ds).read
    monkeypatch.setattr(
        type(ds), "read", lambda self, t, r: reads.append((t, r)) or original(self, t, r)
    )
    rank = ds[5]
    assert reads == []
    rank.events  # noqa: B018 - read twice, fetched once
    rank.events  # noqa: B018
    assert reads == [("events", 5)]


def test_duckdb_reads_the_dataset(dlrm, written):
    duckdb = pytest.importorskip("duckdb")  # in the test extra
    rows = duckdb.sql(
        f"SELECT rank, count(*) AS n, sum(dur) AS d FROM read_parquet("
        f"'{written}/events/*/*.parquet', hive_partitioning = true) GROUP BY rank ORDER BY rank"
    ).fetchall()
    assert [(r, n) for r, n, _ in rows] == [(r, t.events.num_rows) for r, t in dlrm.items()]
    assert [d for _, _, d in rows] == [sum(t.events["dur"].to_pylist()) for t in dlrm.values()]


def test_polars_reads_the_collectives_summary(dlrm, written):
    pl = pytest.importorskip("polars")  # in the test extra
    df = pl.scan_parquet(
        f"{written}/summary/collectives/**/*.parquet", hive_partitioning=True
    ).collect()
    assert df.height == sum(summarize(t).collectives.num_rows for t in dlrm.values())
    assert sorted(df["rank"].unique().to_list()) == list(range(8))


def test_fsspec_url(dlrm):
    pytest.importorskip("fsspec")
    url = "memory://hta_fast_test/dlrm"
    write_dataset({r: dlrm[r] for r in (0, 1)}, url, overwrite=True)
    ds = open_dataset(url)
    assert ds.ranks == [0, 1]
    assert ds[1].events.equals(dlrm[1].events)
    assert ds.dataset("events").count_rows() == dlrm[0].events.num_rows + dlrm[1].events.num_rows


def test_not_a_dataset_and_overwrite(tmp_path, dlrm):
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        open_dataset(str(tmp_path))
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="not empty"):
        write_dataset({0: dlrm[0]}, str(tmp_path))
    with pytest.raises(FileExistsError, match="refusing"):
        write_dataset({0: dlrm[0]}, str(tmp_path), overwrite=True)
    assert (tmp_path / "mine.txt").exists()


def test_a_dataset_written_before_cpu_collectives_opens(dlrm, tmp_path):
    path = tmp_path / "old"
    write_dataset(dlrm, str(path))
    # as an older version wrote it: no cpu_collectives table, no size_from column
    shutil.rmtree(path / "summary" / "cpu_collectives")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["summary_tables"].remove("summary/cpu_collectives")
    (path / "manifest.json").write_text(json.dumps(manifest))
    for part in (path / "summary" / "collectives").rglob("*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["size_from"]), part)
    s = open_dataset(str(path)).summaries[0]
    assert s.cpu_collectives.num_rows == 0 and s.collectives.num_rows == 8
    assert s.collectives["size_from"].null_count == 8
    assert s.collectives["bytes"].to_pylist() == summarize(dlrm[0]).collectives["bytes"].to_pylist()
