"""`hta-fast shard`: sharding plans ranked by the step time replayed with each plan's lookup
and all-to-all times (hta_fast.model.plans.shard). The real 8-rank DLRM trace (its recorded
plan reproduces the measured step), a DLRM-like synthetic job whose answer is known by
construction (every plan's step is the job rerun with that plan's lookup and all-to-all
times), and bad TABLES.json / PLANS.json."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.steps import profiler_steps
from hta_fast.cli.app import cli
from hta_fast.model.comm.collective_model import predict_collective
from hta_fast.model.comm.topology import load_topology
from hta_fast.model.plans.embedding_cost import LookupCostModel, TableSpec, evaluate_plan
from hta_fast.model.plans.shard import (
    ShardTables,
    plans_from_list,
    read_tables,
    shard,
    tables_from_dict,
)
from tests.conftest import TRACES_DIR
from tests.support.kineto_builder import KinetoBuilder, traceset
from tests.support.paths import REPO

ROOT = REPO
DLRM = TRACES_DIR / "param_dlrm_8rank"
EXAMPLE = str(ROOT / "docs" / "examples" / "param_dlrm_8rank_tables.json")
ALTERNATIVES = {"round_robin", "greedy", "size_balanced"}


def run(*args: str):
    return CliRunner().invoke(cli, ["shard", *args])


@functools.lru_cache(maxsize=None)
def dlrm() -> hta_fast.TraceSet:
    return hta_fast.load_dir(DLRM)


def json_tables(res) -> dict:
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_cli_recorded_plan_reproduces_the_measured_step(traces_dir):
    """The recorded plan's predicted step is the trace's slowest device-aware step within
    5 % (today exactly: the embeddings are off its critical path, docs/model_costs.md);
    three alternatives beside it, each with every rank's lookup and all-to-all times."""
    out = json_tables(run(str(DLRM), "--tables", EXAMPLE, "--format", "json"))
    plans = out["tables"]["shard"]
    ranks = out["tables"]["shard.ranks"]
    assert {p["plan"] for p in plans} == {"recorded"} | ALTERNATIVES
    assert [p["order"] for p in plans] == [1, 2, 3, 4]
    steps = [p["step_predicted"] for p in plans]
    assert steps == sorted(steps)
    recorded = next(p for p in plans if p["plan"] == "recorded")
    spans = profiler_steps(dlrm()).to_pandas()
    assert recorded["step_measured"] == spans.span.max() == 18_711_000  # device-aware
    assert abs(recorded["error_pct"]) <= 5.0
    assert abs(recorded["error_pct"]) < 0.01
    for p in plans:
        mine = [r for r in ranks if r["plan"] == p["plan"]]
        assert [r["rank"] for r in mine] == list(range(8))
        assert all(r["lookup_predicted"] > 0 and r["a2a_predicted"] > 0 for r in mine)
        assert sum(r["tables"] for r in mine) == 24
        assert p["max_lookup_predicted"] == max(r["lookup_predicted"] for r in mine)
    # the recorded plan's lookups, as measured and as the curve fitted on them predicts
    rec = [r for r in ranks if r["plan"] == "recorded"]
    assert [r["lookup_measured"] for r in rec] == [7e3, 9e3, 12e3, 66e3, 22e3, 7e3, 11e3, 9e3]
    for r in rec:
        assert r["lookup_predicted"] == pytest.approx(r["lookup_measured"], rel=0.25)
        assert r["a2a_bytes"] == 24_576  # the recorded all-to-all's size
        assert r["a2a_measured"] == 10_000
    notes = " ".join(out["notes"]["shard"])
    assert "device-aware" in notes and "predicted" in notes and "measured" in notes
    assert "tables and rows touched match" in notes
    # the sharded tables' family: its kernels looked up the file's 24 tables (not the dense 16)
    assert "lookup curve: split_embedding_codegen_forward_unweighted_kernel" in notes
    # every plan's step is the recorded one: the notes say why rather than rank silently
    assert len(set(steps)) == 1
    assert "the plans tie on the step (within 0.1 %)" in notes
    assert "off its critical path, so the sharding does not set this step" in notes
    assert "recorded machine: dgx1_v100 (the device V100-SXM2)" in notes


def test_cli_table_and_csv_say_measured_and_predicted(traces_dir):
    res = run(str(DLRM), "--tables", EXAMPLE)
    assert res.exit_code == 0, res.output
    assert "step_measured (ms)" in res.output and "lookup_predicted (us)" in res.output
    assert "note (shard)" in res.output
    res = run(str(DLRM), "--tables", EXAMPLE, "--format", "csv")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "# shard" and '"step_predicted","step_measured"' in lines[1]
    assert "# shard.ranks" in lines


def test_a_plan_on_the_late_rank_is_slower(traces_dir, tmp_path):
    """Rank 7 reaches the forward all-to-all last, but its host launches that all-to-all
    207 µs after its lookup ends: lookups that fit in that slack cost the step nothing
    (every table on rank 7 as recorded: 0 ns), longer ones hold every rank (pooling x 20);
    a plan file in both forms."""
    data = json.loads(Path(EXAMPLE).read_text())
    names = [t["name"] for t in data["tables"]]
    heavy = {**data, "tables": [{**t, "pooling": 20 * t["pooling"]} for t in data["tables"]]}
    heavy_path = tmp_path / "heavy.json"
    heavy_path.write_text(json.dumps(heavy))
    plans = [
        {"name": "all_on_7", "plan": {n: 7 for n in names}},
        {
            "name": "recorded_again",
            "ranks": [[n for n in names if n[1] == str(r)] for r in range(8)],
        },
    ]
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(plans))
    got = {}
    for tables in (EXAMPLE, str(heavy_path)):
        out = json_tables(
            run(str(DLRM), "--tables", tables, "--plans", str(path), "--format", "json")
        )
        got[tables] = {p["plan"]: p for p in out["tables"]["shard"]}
        assert [p["plan"] for p in out["tables"]["shard"]] == ["recorded_again", "all_on_7"]
        assert got[tables]["recorded_again"]["step_measured"] is None  # only for "recorded"
        tie = "the plans tie on the step" in " ".join(out["notes"]["shard"])
        assert tie == (tables == EXAMPLE)  # the heavy lookups set the step: no tie
    light = got[EXAMPLE]
    assert light["recorded_again"]["step_predicted"] == 18_711_000
    assert light["all_on_7"]["step_predicted"] == 18_711_000  # in the slack
    assert light["all_on_7"]["max_lookup_predicted"] > 100_000
    heavy_got = got[str(heavy_path)]
    slower = heavy_got["all_on_7"]["step_predicted"] - heavy_got["recorded_again"]["step_predicted"]
    lookup = heavy_got["all_on_7"]["max_lookup_predicted"]
    # longer, by no more than the lookup and all-to-alls it adds
    assert 0 < slower <= lookup + 2 * heavy_got["all_on_7"]["a2a_predicted"]
    # the recorded placement hides even 20 x its lookups: rank 3 (1.2 ms) waits 6 ms for
    # rank 7 at the all-to-all anyway, and rank 7's own fit in its slack
    assert heavy_got["recorded_again"]["step_predicted"] == 18_711_000


# --- A DLRM-like synthetic job whose answer is known by construction -------------------

LOOKUP = "split_embedding_codegen_forward_unweighted_kernel"
GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
# 10 µs + bytes at 1 GB/s (1 B/ns); each table reads batch × pooling × dim × 4 bytes.
COST = LookupCostModel.from_parameters(10_000, 1.0, family=LOOKUP)
SPEC = ShardTables(
    [
        TableSpec(f"t{i}", rows=10_000 * (1 + i), dim=50, pooling=p, batch=1000)
        for i, p in enumerate([1, 2, 3, 1, 2, 3])
    ],  # 200, 400, 600 µs each; outputs 200,000 B each
    3,
    None,
    {f"t{i}": 10_000 * (1 + i) * 200.0 for i in range(6)},
    "<synthetic>",
)
TOPOLOGY = load_topology("hgx_h100")
A2A_NELEMS = 100_000  # the recorded all-to-all: 400,000 B of float


def job(lookup_us: Sequence[float], a2a_us: float) -> hta_fast.TraceSet:
    """3 ranks, 2 steps: a lookup of lookup_us[rank] µs, then the all-to-all (moving data
    a2a_us µs once the last rank has started it), a dense GEMM, an all-reduce (120 µs);
    the host waits in cudaStreamSynchronize. (tests/model/test_model_cross_rank.collective_job's
    shape, the first collective an all-to-all.)"""
    ranks = len(lookup_us)
    dense = [300, 350, 320]
    builders = [KinetoBuilder(rank=r, world_size=ranks) for r in range(ranks)]
    t0 = 0.0
    for s in range(2):
        free = [t0] * ranks
        kernels: list[list] = [[] for _ in range(ranks)]
        for j, (kind, data) in enumerate([("alltoall", a2a_us), ("allreduce", 120.0)]):
            starts = []
            for r in range(ranks):
                launch = t0 + 10 + 20 * j
                start = max(launch + 10, free[r])
                dur = lookup_us[r] if j == 0 else dense[r]
                kernels[r].append((LOOKUP if j == 0 else GEMM, launch, start, dur))
                starts.append(max(launch + 15, start + dur))
            end = max(starts) + data
            for r in range(ranks):
                kernels[r].append((kind, t0 + 15 + 20 * j, starts[r], end - starts[r]))
                free[r] = end
        step_end = max(free) + 8
        for r, b in enumerate(builders):
            b.step(s, t0, step_end - t0)
            for name, launch, start, dur in kernels[r]:
                if name in ("alltoall", "allreduce"):
                    b.nccl(name, launch, start, dur, stream=7, nelems=A2A_NELEMS)
                else:
                    b.kernel(name, launch, start, dur)
            b.runtime("cudaStreamSynchronize", t0 + 50, free[r] + 3 - (t0 + 50))
        t0 = step_end + 10
    return traceset(builders)


def run_with(plan: dict[str, int]) -> float:
    """The job run with the plan: its lookups and all-to-all as the models give them; the
    slowest rank's device-aware step, mean over the steps."""
    ev = evaluate_plan(SPEC.tables, plan, 3, cost=COST).to_pandas()
    buffer = (np.maximum(ev.a2a_send_bytes, ev.a2a_recv_bytes) * 3 / 2).max()
    a2a = predict_collective("all_to_all", buffer, TOPOLOGY, ranks=3).time_us
    spans = profiler_steps(job((ev.lookup_ns / 1000).tolist(), a2a)).to_pandas()
    return float(spans.groupby("step").span.max().mean())


SKEWED = {"t0": 0, "t1": 0, "t2": 0, "t3": 1, "t4": 1, "t5": 2}  # 1210, 610, 610 µs
BALANCED = {"t0": 0, "t1": 1, "t2": 2, "t3": 2, "t4": 1, "t5": 0}  # 810 µs each


def test_synthetic_plans_rank_and_time_exactly():
    measured = job([500, 450, 700], 80.0)
    r = shard(
        measured, SPEC, {"skewed": SKEWED, "balanced": BALANCED}, cost=COST, topology=TOPOLOGY
    )
    plans = r.to_pandas()
    assert plans.plan.tolist() == ["balanced", "skewed"]
    for _, p in plans.iterrows():
        assert p.step_predicted == pytest.approx(
            run_with({"skewed": SKEWED, "balanced": BALANCED}[p.plan]), abs=2
        )
    ranks = r.tables["ranks"].to_pandas()
    skewed = ranks[ranks.plan == "skewed"]
    assert skewed.lookup_predicted.tolist() == [1_210_000, 610_000, 610_000]
    assert skewed.a2a_bytes.tolist() == [600_000, 400_000, 500_000]  # max(own, others / 2)
    balanced = ranks[ranks.plan == "balanced"]
    assert balanced.lookup_predicted.tolist() == [810_000] * 3
    assert balanced.a2a_bytes.tolist() == [400_000] * 3
    want = predict_collective("all_to_all", 400_000, TOPOLOGY, ranks=3).time_us * 1000
    assert balanced.a2a_predicted.tolist() == pytest.approx([want] * 3)
    # 1210 vs 810 µs of slowest lookup, and a larger all-to-all, on each of 2 steps
    gap = plans.step_predicted.iloc[1] - plans.step_predicted.iloc[0]
    assert gap == pytest.approx(
        400_000
        + 1000 * predict_collective("all_to_all", 600_000, TOPOLOGY, ranks=3).time_us
        - want,
        abs=2,
    )


# --- Bad input ------------------------------------------------------------------------


def test_bad_tables_file_names_file_table_and_key(tmp_path):
    good = {"batch": 128, "tables": [{"name": "a", "rows": 10, "dim": 4, "pooling": 1.5}]}
    cases = [
        ({"tables": [{"name": "a", "rows": 10, "pooling": 1}]}, "table 0 ('a'): missing key 'dim'"),
        ({**good, "tables": [{**good["tables"][0], "hash": 3}]}, "unknown key(s) ['hash']"),
        ({"tables": [{"name": "a", "rows": 10, "dim": 4, "pooling": 1}]}, "missing key 'batch'"),
        ({**good, "tables": [{**good["tables"][0], "dim": -4}]}, "key 'dim' must be"),
        ({**good, "tables": [{**good["tables"][0], "dtype": "float99"}]}, "unknown dtype"),
        ({"tables": "a"}, "expected an object with key 'tables'"),
    ]
    for data, message in cases:
        path = tmp_path / "tables.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError) as e:
            read_tables(str(path))
        assert str(path) in str(e.value) and message in str(e.value), str(e.value)
    spec = tables_from_dict({"per_rank_batch": 16, "tables": good["tables"]}, ranks=8)
    assert spec.tables[0].batch == 128 and spec.recorded is None


def test_bad_plans_name_the_plan_and_table():
    spec = tables_from_dict(
        {"batch": 8, "tables": [{"name": n, "rows": 1, "dim": 1, "pooling": 1} for n in "ab"]}
    )
    with pytest.raises(ValueError, match=r"p.json: plan 0 \('x'\): unknown table 'c'"):
        plans_from_list([{"name": "x", "plan": {"a": 0, "b": 1, "c": 0}}], spec.tables, 2, "p.json")
    with pytest.raises(ValueError, match=r"table\(s\) \['b'\] not placed"):
        plans_from_list([{"name": "x", "ranks": [["a"], []]}], spec.tables, 2)
    with pytest.raises(ValueError, match="rank 5 is not one of 0..1"):
        plans_from_list([{"name": "x", "plan": {"a": 5, "b": 1}}], spec.tables, 2)
    got = plans_from_list([{"name": "x", "ranks": [["b"], ["a"]]}], spec.tables, 2)
    assert got == {"x": {"a": 1, "b": 0}}


def test_cli_bad_tables_is_one_line_naming_the_file(traces_dir, tmp_path):
    path = tmp_path / "tables.json"
    path.write_text(json.dumps({"tables": [{"name": "a", "rows": 1, "pooling": 1}]}))
    res = run(str(DLRM), "--tables", str(path))
    assert res.exit_code == 2
    assert str(path) in res.output and "missing key 'dim'" in res.output
    plans = tmp_path / "plans.json"
    plans.write_text(json.dumps([{"name": "x", "plan": {"nope": 0}}]))
    res = run(str(DLRM), "--tables", EXAMPLE, "--plans", str(plans))
    assert res.exit_code == 2 and "unknown table 'nope'" in res.output and str(plans) in res.output
