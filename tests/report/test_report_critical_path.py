"""The report's critical-path section shows what `critical_path` computes, per step, and the
command it names writes the longest step's path as an overlay; on many ranks it and the
operators section are computed on the drawn ranks (the outliers and the median rank)."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast import synth
from hta_fast.cli import cli
from hta_fast.frame.select import Selection
from hta_fast.model.path.critical_path import critical_path
from hta_fast.report import build, write_report
from hta_fast.report.page.context import Context
from hta_fast.report.sections.critical_path import top_events
from hta_fast.report.sections.ranks import drawn_ranks

DLRM = "param_dlrm_8rank"


def _section(page) -> str:
    text = page.read_text()
    s = text[text.index('<section id="critical-path">') :]
    return s[: s.index("</section>")]


def _rows(section: str, caption: str) -> list[list[str]]:
    table = section[section.index(f"<caption>{caption}") :]
    table = table[: table.index("</table>")]
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
        if "<td" in row
    ]


def test_each_rank_and_step_shows_the_models_path(traces_dir, tmp_path):
    traces = hta_fast.load_dir(traces_dir / DLRM)
    page = tmp_path / "r.html"
    write_report(traces, str(page), source=str(traces_dir / DLRM))
    section = _section(page)
    expected = critical_path(traces).table
    rows = _rows(section, "critical path per step")
    assert len(rows) == expected.num_rows == 8
    for row, length, step in zip(
        rows,
        expected.column("critical_path_length").to_pylist(),
        expected.column("step").to_pylist(),
    ):
        assert row[1] == str(step)
        assert row[2] == f"{length / 1e6:,.2f}"  # ms, as the header says
        shares = [float(c) for c in row[4:]]
        assert sum(shares) == pytest.approx(100.0, abs=0.05 * len(shares))
    # The communication kernel holds the most of the paths on this set.
    top = _rows(section, "events holding the most of the path")[0]
    assert top[0].startswith("ncclKernel_SendRecv") and top[1] == "gpu_communication_bound"
    # The longest step's overlay command runs and writes a trace that loads.
    m = re.search(r"--ranks (\d+) --steps (\d+) --trace-out (\S+)", section)
    assert m
    longest = int(
        expected.column("rank")[int(expected["critical_path_length"].to_numpy().argmax())].as_py()
    )
    assert int(m.group(1)) == longest
    out = tmp_path / "cp.json.gz"
    res = CliRunner().invoke(
        cli,
        [
            "-q",
            "critical-path",
            str(traces_dir / DLRM),
            "--ranks",
            m.group(1),
            "--steps",
            m.group(2),
            "--trace-out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert hta_fast.load(str(out)).num_rows("events") > 0


def test_on_many_ranks_the_path_is_walked_on_the_drawn_ranks(tmp_path):
    folder = tmp_path / "many"
    synth.generate(folder, 0.2, build.MANY_RANKS, stragglers={3: 1.3})
    traces = hta_fast.load_dir(str(folder))
    drawn = drawn_ranks(Context(traces, Selection()))
    assert 3 in drawn and len(drawn) < len(traces)  # the straggler, by its GPU work
    page = tmp_path / "many.html"
    write_report(traces, str(page))
    section = _section(page)
    assert f"walked on ranks {', '.join(map(str, drawn))} of {len(traces)}" in section
    shown = {int(r[0]) for r in _rows(section, "critical path per step")}
    assert shown == set(drawn)
    # The cost models too run on those ranks only: a rank's costs cost about its load.
    text = page.read_text()
    ops = text[text.index('<section id="operators">') :]
    ops = ops[: ops.index("</section>")]
    assert f"costed on ranks {', '.join(map(str, drawn))} of {len(traces)}" in ops
    costed = {int(r[0]) for r in _rows(ops, "operators by time left")}
    assert costed and costed <= set(drawn)


def test_top_events_sum_each_event_over_the_ranks():
    ns = {"unit": "ns"}
    on_path = pa.table(
        {
            "rank": [0, 0, 1, 1, 1],
            "name": ["a", "b", "a", "a", "c"],
            "bound_by": ["cpu_bound", "gpu_compute_bound", "cpu_bound", "data_loading", "cpu_bound"],
            "duration": pa.array([10, 50, 30, 5, 5], pa.int64()),
            "edges": pa.array([1, 1, 1, 1, 1], pa.int64()),
        },
        schema=pa.schema(
            [("rank", pa.int64()), ("name", pa.string()), ("bound_by", pa.string()),
             pa.field("duration", pa.int64(), metadata=ns), ("edges", pa.int64())]
        ),
    )  # fmt: skip
    summary = pa.table({"critical_path_length": pa.array([60, 40], pa.int64())})
    t = top_events(on_path, summary, n=3)
    assert t.column("name").to_pylist() == ["b", "a", "a"]
    assert t.column("bound_by").to_pylist() == ["gpu_compute_bound", "cpu_bound", "data_loading"]
    assert t.column("time_on_path").to_pylist() == [50, 40, 5]
    assert t.column("share_of_path").to_pylist() == [50.0, 40.0, 5.0]
    assert t.column("edges").to_pylist() == [1, 2, 1]


def test_the_report_builds_each_ranks_graphs_once_and_lets_them_go(
    traces_dir, tmp_path, monkeypatch
):
    """The doctor's what-if replays (one per cause) and the critical-path section walk the
    same graphs: each rank's is built once, and none is kept after the page is written."""
    from hta_fast.model.graph import walk as walk_module

    traces = hta_fast.load_dir(traces_dir / DLRM)
    built = []
    real = walk_module.build_chain

    def counted(trace, rank, *args, **kwargs):
        built.append(rank)
        return real(trace, rank, *args, **kwargs)

    monkeypatch.setattr(walk_module, "build_chain", counted)
    write_report(traces, str(tmp_path / "r.html"))
    assert sorted(built) == sorted(traces.ranks)  # the doctor ran its replays: 8, not 8 x 6
    assert walk_module._KEPT.get() is None
