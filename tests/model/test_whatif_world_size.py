"""The job at another scale (whatif --world-size / --topology): each collective re-costed by
the machine-aware collective model for N ranks, anchored on its recorded time, the
slowest-rank wait grown from the measured arrival spread. A synthetic 4-rank job whose
collectives take exactly the model's time on a known machine (the answer is the model's
time at N), and the real traces: at the recorded scale the replay is the recorded one; at
2x and 4x every collective has its before / after."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import hta_fast
from hta_fast.cli import cli
from hta_fast.model.comm import load_topology, predict_collective
from hta_fast.model.comm.recorded_topology import recorded_machine, topology_for_device
from hta_fast.model.whatif.declared.world_size_edit import SCHEMA, expected_max
from hta_fast.model.whatif.edits import Edits
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import KinetoBuilder

MACHINE = "dgx_a100"  # what the synthetic ranks' A100 calls for
RANKS = 4
# (collective argument, model kind, in elems, out elems): float32
COLLECTIVES = [
    ("allreduce", "all_reduce", 16_000_000, 16_000_000),  # 64 MB
    ("_allgather_base", "all_gather", 1_000_000, 4_000_000),  # a 4 MB shard, 16 MB gathered
    ("all_to_all", "all_to_all", 2_000_000, 2_000_000),  # 8 MB per rank
]
STEPS = 3


def model_us(kind: str, size: float, ranks: int, topology=MACHINE) -> float:
    topo = load_topology(topology) if isinstance(topology, str) else topology
    return predict_collective(kind, size, topo, ranks=ranks).time_us


def synthetic_job(arrival_us=(0.0, 0.0, 0.0, 0.0), keep=None) -> hta_fast.TraceSet:
    """4 ranks on one 8-GPU A100 node: per step, 1 ms of compute, then the collectives one
    after another, each taking the model's time on dgx_a100 over 4 ranks; rank r reaches
    each collective arrival_us[r] late (its kernel starts then and ends with the others'),
    and the host waits for the last one in cudaStreamSynchronize. Kernels start on whole
    µs: the trace's epoch timestamps (1.7e15 µs) hold a quarter µs exactly, no finer."""
    builders = []
    for rank in range(RANKS):
        b = KinetoBuilder(rank=rank, world_size=RANKS)
        b.devices = [dict(b.devices[0], id=i) for i in range(8)]
        t0 = 0.0
        late = max(arrival_us)
        for s in range(STEPS):
            b.step(s, t0, 1.0)  # its duration is set below
            step_ev = b.events[-1]
            b.kernel("ampere_sgemm_128x64_nn", t0 + 5, t0 + 20, 1000)
            at = t0 + 1100
            for j, (arg, kind, n_in, n_out) in enumerate(COLLECTIVES):
                dur = round(model_us(kind, 4 * max(n_in, n_out), RANKS), 3)
                start = at + arrival_us[rank]
                b.nccl(
                    arg,
                    t0 + 10 + j,
                    start,
                    round(at + late + dur - start, 3),
                    nelems=n_in,
                    args={"Out msg nelems": n_out},
                )
                at = math.ceil(at + late + dur)  # whole µs: exact beside the epoch base
            b.runtime("cudaStreamSynchronize", t0 + 20, at + 3 - (t0 + 20))
            b.cpu_op("aten::cpu_work", at + 5, 50)
            end = at + 60
            step_ev["dur"] = round(end - t0, 3)
            t0 = end
        builders.append(b)
        if keep is not None:  # the JSON, for a test to edit
            keep[rank] = b.to_bytes()
    return hta_fast.TraceSet({b.rank: b.load() for b in builders})


@pytest.fixture(scope="module")
def job() -> hta_fast.TraceSet:
    return synthetic_job()


def _rows(result) -> list[dict]:
    return result.tables["world_size"].to_pylist()


def _per_step(result) -> dict:
    return result.tables["per_step"].to_pylist()[0]


@pytest.mark.parametrize("topology", [None, MACHINE])
@pytest.mark.parametrize("world", [8, 16, 32])
def test_the_model_times_at_n_ranks_come_back_exactly(job, world, topology):
    # The recorded times are the model's at 4 ranks, so recorded x model(N) / model(4) is
    # the model's time at N ranks (8: one node; 16, 32: two and four nodes). Without a
    # topology the recorded machine is calibrated on these collectives: they fit its
    # figures exactly, so the calibration leaves them as they are.
    r = what_if(job, world_size=world, topology=topology)
    rows = _rows(r)
    assert len(rows) == STEPS * len(COLLECTIVES)
    for row, (_, kind, n_in, n_out) in zip(rows, COLLECTIVES * STEPS):
        size = 4 * max(n_in, n_out)
        assert row["collective"] == kind and row["bytes"] == size
        assert (row["ranks_before"], row["ranks_after"]) == (RANKS, world)
        assert row["nodes_after"] == math.ceil(world / 8)
        expected = model_us(kind, size, world) * 1e3
        assert row["predicted"] == pytest.approx(expected, abs=2.0)  # ns: µs rounding
        assert row["model_after"] == pytest.approx(expected, rel=1e-6)
        assert row["slowest_wait"] == 0.0  # every rank arrives together: no spread
        p = predict_collective(kind, size, load_topology(MACHINE), ranks=world)
        assert row["algorithm_after"] == f"{p.algorithm}/{p.protocol}"
    # The collectives are on the critical path: each step grows by their new time.
    added = sum(row["predicted"] - row["recorded"] for row in rows)
    steps = r.to_pandas()
    growth = (steps.predicted - steps.replayed).groupby(steps["rank"]).sum()
    assert np.allclose(growth.to_numpy(), added, atol=STEPS * len(COLLECTIVES) * 2)
    assert _per_step(r)["predicted"] > _per_step(r)["replayed"]


def test_sizes_per_rank_at_n(job):
    # data parallel: an all-reduce keeps its buffer, an all-to-all each rank's buffer; an
    # all-gather (FSDP / ZeRO) keeps the gathered tensor, each rank's shard shrinking.
    rows = {row["collective"]: row for row in _rows(what_if(job, world_size=16))}
    assert rows["all_reduce"]["rank_bytes_after"] == rows["all_reduce"]["bytes"] == 64e6
    assert rows["all_to_all"]["rank_bytes_after"] == rows["all_to_all"]["rank_bytes_before"]
    ag = rows["all_gather"]
    assert (ag["bytes"], ag["rank_bytes_before"], ag["rank_bytes_after"]) == (16e6, 4e6, 1e6)


def test_another_machine(job):
    # On H100 nodes: recorded x model(N, hgx_h100) / model(4, dgx_a100), both vendor figures.
    rows = _rows(what_if(job, world_size=16, topology="hgx_h100"))
    for row, (_, kind, n_in, n_out) in zip(rows, COLLECTIVES * STEPS):
        size = 4 * max(n_in, n_out)
        ratio = model_us(kind, size, 16, "hgx_h100") / model_us(kind, size, RANKS)
        assert row["predicted"] == pytest.approx(row["recorded"] * ratio, rel=1e-9)
    # the same ranks on another machine: --topology alone
    rows = _rows(what_if(job, topology="hgx_h100"))
    assert {row["ranks_after"] for row in rows} == {RANKS}
    assert all(row["predicted"] < row["recorded"] for row in rows)  # NVLink 4 over 3


def test_the_slowest_rank_wait_grows_with_the_expected_maximum():
    # Ranks reach every collective 0, 10, 20, 30 µs apart: spread = their standard
    # deviation; at N ranks each collective's end moves by spread x (e(N) - e(4)).
    arrivals = (0.0, 10.0, 20.0, 30.0)
    job = synthetic_job(arrivals)
    spread = float(np.std(np.array(arrivals) * 1e3, ddof=1))
    r = what_if(job, world_size=16)
    for row, (_, kind, n_in, n_out) in zip(_rows(r), COLLECTIVES * STEPS):
        assert row["spread"] == pytest.approx(spread, rel=1e-9)
        wait = spread * (expected_max(16) - expected_max(RANKS))
        assert row["slowest_wait"] == pytest.approx(wait, rel=1e-9)
        ratio = model_us(kind, 4 * max(n_in, n_out), 16) / model_us(
            kind, 4 * max(n_in, n_out), RANKS
        )
        assert row["predicted"] == pytest.approx(row["recorded"] * ratio + wait, abs=2.0)
    assert any("e(4) = 1.029" in n and "e(16) = 1.766" in n for n in r.notes)
    # the recorded scale adds nothing, and the replay is the recorded one
    same = what_if(job, world_size=RANKS)
    assert all(row["slowest_wait"] == 0 for row in _rows(same))
    assert _per_step(same)["predicted"] == _per_step(same)["replayed"]


def test_a_collective_without_a_size_takes_the_size_its_time_calls_for():
    # The job with its element counts removed: each collective's size is the one at which
    # the recorded machine's model (uncalibrated: nothing to fit) takes its recorded time,
    # which is its true size here, so the answer is the model's time at N as before.
    raw: dict[int, bytes] = {}
    synthetic_job(keep=raw)
    ranks = {}
    for rank, data in raw.items():
        doc = json.loads(data)
        for e in doc["traceEvents"]:
            for k in ("In msg nelems", "Out msg nelems"):
                e.get("args", {}).pop(k, None)
        ranks[rank] = hta_fast.load(json.dumps(doc).encode())
    r = what_if(hta_fast.TraceSet(ranks), world_size=16)
    assert any("record no size" in n for n in r.notes)
    for row, (_, kind, n_in, n_out) in zip(_rows(r), COLLECTIVES * STEPS):
        size = 4 * max(n_in, n_out)
        assert row["size_inferred"] and row["bytes"] == pytest.approx(size, rel=1e-3)
        expected = model_us(kind, size, 16) * 1e3
        assert row["predicted"] == pytest.approx(expected, rel=1e-3)


def test_expected_maximum_of_normal_draws():
    # closed forms: e(2) = 1/sqrt(pi), e(3) = 3/(2 sqrt(pi)); tables: e(8) 1.4236, e(16) 1.7660
    assert expected_max(1) == 0.0
    assert expected_max(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-9)
    assert expected_max(3) == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-9)
    assert expected_max(8) == pytest.approx(1.4236, abs=1e-4)
    assert expected_max(16) == pytest.approx(1.7660, abs=1e-4)


def test_the_recorded_machine(job):
    rec = recorded_machine(job)
    assert (rec.device, rec.world_size) == ("A100-SXM4-80GB", RANKS)
    assert (rec.topology.name, rec.topology.gpus_per_node, rec.topology.nodes) == (
        load_topology(MACHINE).name,
        8,
        1,
    )
    # one GPU listed: a rank that sees its own, not a node of one; the file's 8 per node
    one = KinetoBuilder(rank=0, world_size=16)
    one.step(0, 0.0, 100.0)
    rec = recorded_machine(one.load())
    assert (rec.topology.gpus_per_node, rec.topology.nodes, rec.world_size) == (8, 2, 16)
    assert topology_for_device("H100-SXM") == "hgx_h100"
    assert topology_for_device("GH200-144GB") == "hgx_h100"
    assert topology_for_device("H200-SXM") == "hgx_h200"
    assert topology_for_device("V100-SXM2") == "dgx1_v100"
    assert topology_for_device("T4") is None
    given = recorded_machine(job, given=load_topology("hgx_h100"))
    assert given.topology.intra_node_gbps == load_topology("hgx_h100").intra_node_gbps


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("world_size", 0, "whole number >= 1"),
        ("world_size", -2, "whole number >= 1"),
        ("world_size", True, "whole number >= 1"),
        ("world_size", 2.5, "whole number >= 1"),
        ("topology", "no_such_machine", "no topology file"),
        ("topology", 5, "a topology file"),
        ("recorded_topology", "no_such_machine", "no topology file"),
    ],
)
def test_edits_check_the_world_fields(field, value, message):
    with pytest.raises(ValueError, match=f"Edits.{field}: .*{message}"):
        Edits(**{field: value})


def test_edits_keep_a_topology_and_say_its_name():
    e = Edits(world_size=np.int64(16), topology="hgx_h100")
    assert e.world_size == 16 and isinstance(e.world_size, int)
    assert e.topology == load_topology("hgx_h100") and e.changes_world
    assert e.params()["topology"] == load_topology("hgx_h100").name
    assert not Edits().changes_world


# --- the real traces ------------------------------------------------------------------

REAL = {
    # folder or file under ../shared/traces: the recorded world size
    "param_dlrm_8rank": 8,
    "hta/nccl_parser_config/nccl_data.json.gz": 2,
    "hta/trace_diff/control/control.json.gz": 8,
}


@pytest.fixture(scope="module")
def real(traces_dir):
    loaded = {}

    def get(name: str):
        if name not in loaded:
            path = traces_dir / name
            loaded[name] = hta_fast.load_dir(path) if path.is_dir() else hta_fast.load(path)
        return loaded[name]

    return get


@pytest.fixture(scope="module")
def baselines(real):
    return {name: what_if(real(name)) for name in REAL}


@pytest.mark.parametrize("name", list(REAL))
def test_the_recorded_scale_reproduces_the_recorded_replay(real, baselines, name):
    base = baselines[name]
    r = what_if(real(name), world_size=REAL[name])
    before, after = _per_step(base)["predicted"], _per_step(r)["predicted"]
    assert abs(after - before) <= 0.03 * before
    assert after == before  # the ratio is 1 and no wait is added: exactly the replay
    steps = r.to_pandas()
    assert np.abs(steps.predicted - base.to_pandas().predicted).max() <= 0.03 * steps.replayed.max()
    rows = _rows(r)
    assert rows and all(row["ratio"] == 1.0 and row["slowest_wait"] == 0 for row in rows)
    assert r.tables["world_size"].schema.equals(SCHEMA, check_metadata=True)


@pytest.mark.parametrize("name", list(REAL))
@pytest.mark.parametrize("times", [2, 4])
def test_twice_and_four_times_the_ranks(real, baselines, name, times):
    world = REAL[name] * times
    r = what_if(real(name), world_size=world)
    rows = _rows(r)
    assert rows and all(row["ranks_after"] == world for row in rows)
    for row in rows:  # every collective's before / after, the model's choice each side
        assert row["collective"] in ("all_reduce", "all_to_all", "broadcast")
        assert row["bytes"] > 0 and row["algorithm_before"] and row["algorithm_after"]
        assert row["model_after"] >= row["model_before"] > 0
        assert row["predicted"] >= row["recorded"] > 0
    assert sum(row["predicted"] for row in rows) > sum(row["recorded"] for row in rows)
    # the wait used: measured where several ranks ran the collectives, none on one rank
    if isinstance(real(name), hta_fast.TraceSet):
        assert any(row["slowest_wait"] > 0 for row in rows)
        assert any(n.startswith("slowest-rank wait:") for n in r.notes)
    else:
        assert all(row["slowest_wait"] == 0 for row in rows)
        assert any(n.startswith("one rank recorded: no arrival spread") for n in r.notes)
    assert any(n.startswith("recorded machine:") for n in r.notes)
    before, after = _per_step(baselines[name])["predicted"], _per_step(r)["predicted"]
    # the step grows, or the notes say why not (the collectives hide behind other work)
    assert after > before or any("mostly off the critical path" in n for n in r.notes)
    if name != "hta/nccl_parser_config/nccl_data.json.gz":  # CPU bound, 220 ms a step
        assert after > before


def test_the_v100_set_names_its_machine(real):
    r = what_if(real("param_dlrm_8rank"), world_size=16)
    note = next(n for n in r.notes if n.startswith("recorded machine:"))
    assert note.startswith("recorded machine: dgx1_v100 (the device V100-SXM2)")
    assert any("calibrated on 7 measurements" in n for n in r.notes)  # the fastest of each size


def test_cli(traces_dir):
    from click.testing import CliRunner

    path = str(traces_dir / "param_dlrm_8rank")
    res = CliRunner().invoke(cli, ["whatif", path, "--world-size", "16", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    rows = out["tables"]["world_size"]
    assert len(rows) == 8 and {r["ranks_after"] for r in rows} == {16}
    assert {"algorithm_before", "algorithm_after", "slowest_wait"} <= set(rows[0])
    assert any("slowest-rank wait" in n for n in out["notes"]["what_if"])
    res = CliRunner().invoke(
        cli, ["whatif", path, "--world-size", "16", "--topology", "hgx_h100", "--limit", "3"]
    )
    assert res.exit_code == 0, res.output
    assert "world_size" in res.output and "target: " in res.output
    bad = CliRunner().invoke(cli, ["whatif", path, "--world-size", "0"])
    assert bad.exit_code == 2
    bad = CliRunner().invoke(cli, ["whatif", path, "--topology", "no_such_machine"])
    assert bad.exit_code == 2 and "no topology file" in bad.output
