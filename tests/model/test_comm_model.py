"""The collective cost model that knows the machine: times known by construction on a
round-number topology, NCCL's algorithm and protocol switches, calibration recovering known
figures, topology files (unknown keys, units), the measured tables' error bounds (the
figures in benchmarks/RESULTS.md) and the comm-model command."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys

import pytest
from click.testing import CliRunner

from hta_fast.cli.app import cli
from hta_fast.model.comm import (
    Topology,
    calibrate,
    load_topology,
    predict_collective,
    predict_collectives,
    shipped_topologies,
)
from hta_fast.model.comm.collective_model import BASE_US, INTRA_STEP, NVLS_US, RING_BW
from tests.support.paths import REPO

ROOT = REPO
MEASURED = ROOT.parent / "shared" / "measurements" / "collectives"
MIB = 1 << 20

# Round numbers: 100 GB/s per GPU (efficiency 1), 2 us a Simple step, no NVLS, 8 per node.
ROUND = Topology(
    name="round",
    source="test",
    gpus_per_node=8,
    nodes=1,
    intra_node_gbps=100.0,
    intra_node_efficiency=1.0,
    intra_node_latency_us=2.0,
    network_gbps_per_node=50.0,
    network_latency_us=5.0,
    nvls=False,
)


def ring_us(size: float, n: int, protocol: str) -> float:
    """Ring all-reduce inside one node: base + 2(n-1) steps + 2(n-1)/n S / (B x factor)."""
    steps = 2 * (n - 1)
    latency = BASE_US["ring"][protocol] + steps * 2.0 * INTRA_STEP[protocol]
    return latency + 2 * (n - 1) / n * size / (100e3 * RING_BW[protocol])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ring_all_reduce_time_is_the_alpha_beta_formula(n):
    size = 1 << 30  # Simple wins at 1 GiB
    p = predict_collective("all_reduce", size, ROUND, ranks=n)
    assert (p.algorithm, p.protocol) == ("ring", "Simple")
    assert p.time_us == pytest.approx(ring_us(size, n, "Simple"), rel=1e-12)
    assert p.algbw_gbps == pytest.approx(size / (p.time_us * 1e3))
    assert p.busbw_gbps == pytest.approx(p.algbw_gbps * 2 * (n - 1) / n)
    assert p.latency_us == pytest.approx(BASE_US["ring"]["Simple"] + 2 * (n - 1) * 2.0)


def test_protocol_is_the_fastest_of_the_three_and_switches_with_size():
    sizes = [2.0**k for k in range(3, 35)]
    preds = predict_collectives("all_reduce", sizes, ROUND)
    for size, p in zip(sizes, preds):
        times = {proto: ring_us(size, 8, proto) for proto in ("LL", "LL128", "Simple")}
        assert p.protocol == min(times, key=times.get)
        assert p.time_us == pytest.approx(min(times.values()))
    order = [p.protocol for p in preds]
    # LL for small sizes, then LL128, then Simple; each switch happens once.
    assert order[0] == "LL" and order[-1] == "Simple"
    assert order == sorted(order, key=["LL", "LL128", "Simple"].index)
    # LL -> LL128 where their times cross: (14.0 - 6.6 + 14 x (1.9 - 0.6) x 2/3.4 us) of
    # bandwidth gained: S x 1.75 / 100e3 x (1/0.5 - 1/0.92) us.
    lat_gap = ring_us(0, 8, "LL128") - ring_us(0, 8, "LL")
    cross = lat_gap / (1.75 / 100e3 * (1 / 0.5 - 1 / 0.92))
    first_ll128 = next(s for s, p in zip(sizes, preds) if p.protocol == "LL128")
    assert first_ll128 / 2 <= cross <= first_ll128


def test_nvls_inside_an_nvswitch_node_only_and_its_bytes():
    nv = dataclasses.replace(ROUND, nvls=True, nvls_efficiency=0.8)
    size = 1 << 34
    p = predict_collective("all_reduce", size, nv)
    # NVLS: (n+1)/n S at 0.8 of the link vs the ring's 2(n-1)/n S: 1.125 / 80 < 1.75 / 100.
    assert p.algorithm == "nvls"
    assert p.time_us == pytest.approx(NVLS_US + 9 / 8 * size / 80e3)
    assert predict_collective("all_reduce", 1024, nv).algorithm == "ring"  # latency: ring/LL
    assert predict_collective("all_reduce", size, ROUND).algorithm == "ring"  # no NVLS
    # all-gather: NVLS moves the same (n-1)/n S as a ring, at lower efficiency: ring.
    assert predict_collective("all_gather", size, nv).algorithm == "ring"


def test_across_nodes_the_network_bounds_a_ring_and_a_tree_halves_its_bytes():
    two = ROUND.with_nodes(2)
    size = 1 << 34
    p = predict_collective("all_reduce", size, two)
    # Ring: 2(n-1)/n S through 50 GB/s per node; tree (2 nodes): S per node at 0.92 x 50.
    assert p.algorithm == "tree" and p.bottleneck == "network"
    assert p.busbw_gbps == pytest.approx(0.92 * 50 * 2 * 15 / 16, rel=0.01)
    four = predict_collective("all_reduce", size, ROUND.with_nodes(4))
    assert four.algorithm == "ring" and four.busbw_gbps == pytest.approx(50, rel=0.01)
    small = predict_collective("all_reduce", 8, ROUND.with_nodes(4))
    assert small.algorithm == "tree"  # log2(N) network steps, not 2(N-1)


def test_nccl_algo_and_proto_settings_limit_the_choice():
    """A system's NCCL_ALGO / NCCL_PROTO: the model picks only among them, each time the
    same formula as without the setting; a name NCCL does not know is an error."""
    sizes = [2.0**k for k in range(3, 35)]
    simple = dataclasses.replace(ROUND, nccl_proto="simple")
    for size, p in zip(sizes, predict_collectives("all_reduce", sizes, simple)):
        assert p.protocol == "Simple"
        assert p.time_us == pytest.approx(ring_us(size, 8, "Simple"))
    free = predict_collective("all_reduce", 1024, ROUND)
    assert (
        free.protocol == "LL"
        and free.time_us < predict_collective("all_reduce", 1024, simple).time_us
    )
    two = dataclasses.replace(ROUND.with_nodes(2), nccl_algo="Ring")
    assert {p.algorithm for p in predict_collectives("all_reduce", sizes, two)} == {"ring"}
    assert predict_collective("all_to_all", 1 << 20, two).algorithm == "direct"  # not an algo
    with pytest.raises(ValueError, match="nccl_proto names ll65"):
        dataclasses.replace(ROUND, nccl_proto="Simple,LL65")
    with pytest.raises(ValueError, match="leave no way to run all_reduce"):
        predict_collective("all_reduce", 1024, dataclasses.replace(ROUND, nccl_algo="nvls"))


def test_every_kind_and_its_bus_factor():
    for kind, factor in [
        ("all_reduce", 2 * 7 / 8),
        ("all_gather", 7 / 8),
        ("reduce_scatter", 7 / 8),
        ("all_to_all", 7 / 8),
        ("broadcast", 1.0),
        ("send_recv", 1.0),
    ]:
        p = predict_collective(kind, 1 << 28, ROUND)
        assert p.time_us > 0 and p.busbw_gbps == pytest.approx(p.algbw_gbps * factor)
        assert p.busbw_gbps <= 100.0 + 1e-9  # never above the link
    # send/recv across nodes: one NIC's share (50 GB/s / 8 NICs).
    far = predict_collective("send_recv", 1 << 34, ROUND.with_nodes(2), ranks=16)
    assert far.bottleneck == "network" and far.algbw_gbps == pytest.approx(50 / 8, rel=0.01)
    assert predict_collective("all_reduce", 1 << 20, ROUND, ranks=1).algorithm == "none"
    with pytest.raises(ValueError, match="unknown collective kind 'allreduce'"):
        predict_collective("allreduce", 1, ROUND)


def generated(topo: Topology, nodes: int, sizes) -> list[dict]:
    t = topo.with_nodes(nodes)
    return [
        {"kind": "all_reduce", "size_bytes": p.size_bytes, "ranks": p.ranks, "nodes": nodes,
         "time_s": p.time_us * 1e-6}
        for p in predict_collectives("all_reduce", sizes, t)
    ]  # fmt: skip


def test_calibrate_recovers_known_figures():
    truth = dataclasses.replace(
        ROUND,
        intra_node_gbps=140.0,
        intra_node_latency_us=3.0,
        call_overhead_us=20.0,
        network_gbps_per_node=35.0,
        network_latency_us=12.0,
    )
    sizes = [2.0**k for k in range(10, 35)]
    rows = generated(truth, 1, sizes) + generated(truth, 2, sizes) + generated(truth, 4, sizes)
    fitted = calibrate(ROUND, rows)
    assert fitted.intra_node_gbps == pytest.approx(140.0, rel=0.02)
    assert fitted.network_gbps_per_node == pytest.approx(35.0, rel=0.02)
    assert fitted.network_latency_us == pytest.approx(12.0, rel=0.1)
    assert fitted.call_overhead_us == pytest.approx(20.0, rel=0.1)
    assert fitted.source.startswith("calibrated on 75 measurements (all_reduce")
    # Rows that never leave a node do not move the network's figures.
    inside = calibrate(ROUND, generated(truth, 1, sizes))
    assert inside.network_gbps_per_node == ROUND.network_gbps_per_node
    with pytest.raises(ValueError, match="lacks"):
        calibrate(ROUND, [{"kind": "all_reduce", "size_bytes": 1}])


def test_topology_file_unknown_key_names_key_and_file(tmp_path):
    data = json.loads((ROOT / "hta_fast/model/comm/topologies/hgx_h100.json").read_text())
    data["nvlink_gbps"] = 450
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"mine\.json: unknown topology key\(s\) 'nvlink_gbps'"):
        load_topology(path)
    del data["nvlink_gbps"], data["nvls"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="missing: nvls"):
        load_topology(path)
    data["nvls"] = "yes"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="'nvls' must be bool"):
        load_topology(path)


@pytest.mark.parametrize("name", shipped_topologies())
def test_shipped_topologies_load_cite_sources_and_are_in_gigabytes(name):
    topo = load_topology(name)
    assert topo.source and "GB/s" in topo.notes and "Gb/s" in topo.notes
    # A network quoted in Gb/s is in the file divided by 8: the name's Gb/s figure.
    if name in ("hgx_h100", "hgx_h200", "hgx_b200", "aws_p6_b200", "mi300x"):
        assert topo.network_gbps_per_node == 8 * 400 / 8
    assert {
        "aws_p4de": 4 * 100 / 8,
        "aws_p5": 32 * 100 / 8,
        "gcp_a3mega": 8 * 200 / 8,
        "dgx1_v100": 4 * 100 / 8,
    }.get(name, topo.network_gbps_per_node) == topo.network_gbps_per_node
    # Vendor per-direction NVLink / Infinity Fabric figures.
    per_gpu = {
        "dgx1_v100": 150,
        "dgx_a100": 300,
        "aws_p4de": 300,
        "hgx_b200": 900,
        "aws_p6_b200": 900,
        "mi300x": 448,
    }
    assert topo.intra_node_gbps == per_gpu.get(name, 450)


def test_shipped_topologies_ship_in_the_package():
    # scikit-build-core's wheel.packages copies every file under hta_fast/ (as it does
    # cli/commands/demo_base.json.gz): the JSON files sit in the package folder.
    folder = ROOT / "hta_fast" / "model" / "comm" / "topologies"
    assert len(list(folder.glob("*.json"))) == len(shipped_topologies()) >= 9


@pytest.fixture(scope="module")
def evaluation():
    if not MEASURED.is_dir():
        pytest.skip("no ../shared/measurements/collectives")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("eval_comm_model").evaluate(MEASURED)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


# The figures benchmarks/RESULTS.md records (median relative error, sizes >= 1 MiB): each
# bound is the measured figure rounded up, so a change that makes the model worse fails.
BOUNDS = {
    "node_8x_a100_nvswitch": 20.0,
    "node_8x_h200_nvls": 7.5,
    "aws_p6_b200_1x8": 26.0,
    "aws_p6_b200_4x8": 32.0,
    "aws_p4de_2x8_a100": 35.0,
    "aws_p5_2x8_h100": 29.0,
    "gcp_a3mega_2x8_h100": 29.5,  # with the NCCL_ALGO / NCCL_PROTO its profile enforces
}


def test_measured_tables_error_bounds(evaluation):
    table, calibrated = evaluation
    got = {t["table"]: t["median_err_pct"] for t in table}
    assert set(got) == set(BOUNDS)
    for name, bound in BOUNDS.items():
        assert got[name] <= bound, (name, got[name])
    assert calibrated["median_err_pct"] <= 15.0
    assert calibrated["topology"].source.startswith("calibrated on 26 measurements")


def run(*args):
    return CliRunner().invoke(cli, ["comm-model", *args], catch_exceptions=False)


def test_cli_comm_model_formats():
    res = run("--topology", "hgx_h100", "--sizes", "1M,64M,1G")
    assert res.exit_code == 0, res.output
    assert "algorithm" in res.output and "nvls" in res.output and "1,073,741,824" in res.output
    res = run("--topology", "hgx_h100", "--sizes", "1G", "--format", "json", "--nodes", "2")
    row = json.loads(res.output)["tables"]["comm_model.all_reduce"][0]
    want = predict_collective("all_reduce", 1 << 30, load_topology("hgx_h100").with_nodes(2))
    assert row["time_us"] == pytest.approx(want.time_us) and row["ranks"] == 16
    assert row["algorithm"] == want.algorithm
    res = run("--topology", "dgx_a100", "--sizes", "1K,2M", "--format", "csv", "--ranks", "4")
    lines = res.output.splitlines()
    assert lines[0].startswith('"size_bytes","ranks"') and lines[1].startswith("1024,4,")
    assert lines[2].startswith("2097152,4,")


def test_cli_comm_model_bad_input(tmp_path):
    res = CliRunner().invoke(cli, ["comm-model", "--topology", "hgx_h100", "--sizes", "1X"])
    assert res.exit_code == 2 and "binary, 1M = 1 MiB" in res.output
    res = CliRunner().invoke(cli, ["comm-model", "--topology", "nope", "--sizes", "1M"])
    assert res.exit_code == 2 and "shipped: aws_p4de" in res.output
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"name": "x", "gpus": 8}))
    res = CliRunner().invoke(cli, ["comm-model", "--topology", str(path), "--sizes", "1M"])
    assert res.exit_code == 2 and "unknown topology key(s) 'gpus'" in res.output


def test_a_traces_collectives_calibrate_the_model():
    import pyarrow as pa

    from hta_fast.model.comm.trace_machine import trace_measurements

    truth = dataclasses.replace(ROUND, intra_node_gbps=70.0, call_overhead_us=15.0)
    sizes = [2.0**k for k in range(12, 31)]
    preds = predict_collectives("all_reduce", sizes, truth)
    observed = pa.table(
        {
            "collective": ["all_reduce"] * len(sizes) + ["barrier"],
            "group_size": [8] * len(sizes) + [8],
            "bytes": [*sizes, 0.0],
            "data_time": [p.time_us * 1e3 for p in preds] + [5e3],  # ns
        }
    )
    rows = trace_measurements(observed, gpus_per_node=8)
    assert len(rows) == len(sizes) and rows[0] == {
        "kind": "all_reduce", "size_bytes": 4096.0, "ranks": 8, "nodes": 1,
        "time_s": pytest.approx(preds[0].time_us * 1e-6),
    }  # fmt: skip
    fitted = calibrate(ROUND, rows)
    assert fitted.intra_node_gbps == pytest.approx(70.0, rel=0.02)
    assert fitted.call_overhead_us == pytest.approx(15.0, rel=0.1)
