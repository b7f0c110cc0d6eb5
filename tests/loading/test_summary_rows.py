"""A rank summary counts each table's rows off the raw columns (Trace.num_rows), without
building the Arrow tables; the counts are the tables' own."""

from hta_fast.loading.summary import summarize
from hta_fast.trace import TABLES
from tests.support.kineto_builder import KinetoBuilder


def test_summary_row_counts_are_the_tables_row_counts():
    b = KinetoBuilder()
    b.step(0, 0, 1000)
    b.kernel("ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn", 10, 50, 100)
    trace = b.load()
    rows = summarize(trace).info()["rows"]
    for name in TABLES:
        table = trace.meta_events if name == "meta" else getattr(trace, name)
        assert rows[name] == table.num_rows, name
    assert rows["events"] > 0 and rows["comm_args"] == 0
