"""Perfetto protobuf traces (.pftrace) load into the same tables as the JSON of the same run.

One event list is written both ways: as Kineto JSON and, with Perfetto's own Python protos
(tests/support/pftrace_writer.py), as a Trace of TracePackets (track descriptors, slice
begin/end pairs, instants, counters, debug annotations, flows, interned names). Both are
loaded and every table compared."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import hta_fast
from hta_fast._named_tables import TABLES
from hta_fast.cli import cli
from hta_fast.errors import ErrorCode, TraceFormatError
from hta_fast.loading.files import trace_files
from tests.support.pftrace_rows import table_rows
from tests.support.pftrace_writer import FLOW_DROPS, TE, Writer, to_pftrace

BASE = 1_700_000_000_000.0  # µs, as Kineto writes absolute times
CPU = (100, 101)
GPU = (0, 7)


def _x(where: tuple[int, int], name: str, cat: str, ts: float, dur: float, **args: Any) -> dict:
    return {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": where[0],
        "tid": where[1],
        "ts": BASE + ts,
        "dur": dur,
        "args": args,
    }


def run_events() -> list[dict[str, Any]]:
    """One small run: a step, nested CPU operators, a launch and its kernel, a copy,
    overlapping slices that do not nest, flows, instants, counters and the names."""
    launch = {"correlation": 5, "External id": 3, "device": 0}
    return [
        {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 5}},
        {"ph": "M", "name": "thread_name", "pid": 100, "tid": 101, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 100, "tid": 101, "args": {"sort_index": 2}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        _x(CPU, "ProfilerStep#1", "user_annotation", 0, 500),
        _x(
            CPU,
            "aten::linear",
            "cpu_op",
            10.125,
            100,
            **{
                "Record function id": 1,
                "Sequence number": 7,
                "Fwd thread id": 0,
                "Ev Idx": 3,
                "Input Dims": [[2, 3], [3, 4]],
                "Input type": ["float", "float"],
                "Input Strides": [[3, 1], [4, 1]],
                "Concrete Inputs": ["", ""],
                "External id": 3,
            },
        ),
        _x(CPU, "aten::addmm", "cpu_op", 20, 60.5, **{"Record function id": 2, "External id": 4}),
        _x(CPU, "cudaLaunchKernel", "cuda_runtime", 30.001, 5, **launch),
        _x(CPU, "aten::empty", "cpu_op", 40, 0),
        _x(CPU, "cudaMemcpyAsync", "cuda_runtime", 70, 2, correlation=6, device=0),
        _x(
            GPU,
            "gemm_kernel",
            "kernel",
            50,
            20.25,
            **dict(
                launch,
                stream=7,
                grid=[4, 1, 1],
                block=[128, 1, 1],
                **{
                    "registers per thread": 32,
                    "shared memory": 1024,
                    "blocks per SM": 0.5,
                    "warps per SM": 2.0,
                    "est. achieved occupancy %": 25,
                    "queued": 0,
                    "context": 1,
                },
            ),
        ),
        _x(
            GPU,
            "Memcpy HtoD (Pageable -> Device)",
            "gpu_memcpy",
            80,
            3,
            **{
                "correlation": 6,
                "device": 0,
                "stream": 7,
                "bytes": 4096,
                "memory bandwidth (GB/s)": 1.5,
            },
        ),
        # one interval, two slices: the first written encloses the second
        _x(CPU, "aten::to", "cpu_op", 90, 5),
        _x(CPU, "aten::_to_copy", "cpu_op", 90, 5),
        _x(CPU, "aten::copy_", "cpu_op", 91, 2),
        # overlapping, not nested: the second goes to a track of its own
        _x(CPU, "aten::a", "cpu_op", 200, 50),
        _x(CPU, "aten::b", "cpu_op", 220, 100),
        {
            "ph": "s",
            "id": 5,
            "pid": 100,
            "tid": 101,
            "ts": BASE + 30.001,
            "cat": "ac2g",
            "name": "ac2g",
        },
        {
            "ph": "f",
            "id": 5,
            "pid": 0,
            "tid": 7,
            "ts": BASE + 50,
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        },
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 100,
            "tid": 101,
            "ts": BASE + 45,
            "args": {
                "Total Reserved": 8192,
                "Total Allocated": 2048,
                "Bytes": 512,
                "Addr": 1234,
                "Device Type": 1,
                "Device Id": 0,
            },
        },
        {
            "ph": "i",
            "s": "p",
            "name": "checkpoint",
            "cat": "marks",
            "pid": 100,
            "ts": BASE + 300,
        },
        # a process's instant has no thread in Perfetto, a global one no process either
        {"ph": "i", "s": "g", "name": "sync", "ts": BASE + 400},
        {
            "ph": "C",
            "name": "Memory",
            "pid": 100,
            "tid": 101,
            "ts": BASE + 15,
            "args": {"allocated": 1.5, "reserved": 4},
        },
        {
            "ph": "C",
            "name": "Memory",
            "pid": 100,
            "tid": 101,
            "ts": BASE + 25,
            "args": {"allocated": 2.5, "reserved": 4},
        },
    ]


@pytest.fixture
def written(tmp_path: Path) -> dict[str, Path]:
    events = run_events()
    paths = {
        "json": tmp_path / "run.json",
        "pftrace": tmp_path / "run.pftrace",
        "gz": tmp_path / "run.pftrace.gz",
        "interned": tmp_path / "run.perfetto-trace",
    }
    paths["json"].write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    data = to_pftrace(events)
    paths["pftrace"].write_bytes(data)
    paths["gz"].write_bytes(gzip.compress(data))
    paths["interned"].write_bytes(to_pftrace(events, intern=True, reset_every=3))
    return paths


def test_same_tables_as_json(written: dict[str, Path]) -> None:
    want = table_rows(hta_fast.load(written["json"]), flow_drops=FLOW_DROPS)
    # The run has rows in every table the mapping fills.
    for name in (
        "events",
        "kernel_args",
        "op_args",
        "flows",
        "counters",
        "instants",
        "meta",
        "steps",
    ):
        assert want[name], name
    for kind in ("pftrace", "gz", "interned"):
        for threads in (1, 0):
            got = table_rows(hta_fast.load(written[kind], threads=threads), flow_drops=FLOW_DROPS)
            for name in TABLES:
                assert got[name] == want[name], (kind, name)


def test_what_the_rows_hold(written: dict[str, Path]) -> None:
    t = hta_fast.load(written["pftrace"])
    ev = t.to_arrow("events").to_pylist()
    by_name = {e["name"]: e for e in ev}
    # ns from µs exactly; nesting gives each operator its parent
    assert by_name["aten::linear"]["ts"] == 1_700_000_000_010_125
    assert by_name["aten::addmm"]["dur"] == 60_500
    assert ev[by_name["aten::addmm"]["parent"]]["name"] == "aten::linear"
    assert ev[by_name["cudaLaunchKernel"]["parent"]]["name"] == "aten::addmm"
    assert ev[by_name["gemm_kernel"]["partner"]]["name"] == "cudaLaunchKernel"
    assert ev[by_name["aten::copy_"]["parent"]]["name"] == "aten::_to_copy"
    assert ev[by_name["aten::_to_copy"]["parent"]]["name"] == "aten::to"
    assert by_name["gemm_kernel"]["stream"] == 7 and by_name["gemm_kernel"]["correlation"] == 5
    assert t.process_names == {100: "python", 0: "GPU 0"}
    assert t.thread_names == {(100, 101): "main", (0, 7): "stream 7"}
    counters = t.to_arrow("counters").to_pylist()
    assert {(c["name"], c["series"], c["value"]) for c in counters} == {
        ("Memory", "allocated", 1.5),
        ("Memory", "reserved", 4.0),
        ("Memory", "allocated", 2.5),
    }


def test_slices_never_ended_and_ends_never_begun(tmp_path: Path) -> None:
    w = Writer(intern=False, reset_every=0)
    d = w.packet().track_descriptor
    d.uuid = 1
    d.thread.pid, d.thread.tid = 1, 2
    w.event(1000, TE.TYPE_SLICE_END, 1)  # nothing open
    w.event(2000, TE.TYPE_SLICE_BEGIN, 1, "outer")
    w.event(3000, TE.TYPE_SLICE_BEGIN, 1, "inner")
    w.event(4000, TE.TYPE_SLICE_END, 1)
    path = tmp_path / "open.pftrace"
    path.write_bytes(w.trace.SerializeToString())
    t = hta_fast.load(path)
    rows = {e["name"]: e for e in t.to_arrow("events").to_pylist()}
    assert rows["inner"]["dur"] == 1000 and rows["inner"]["ts"] == 3000
    assert rows["outer"]["dur"] == 0  # never ended: no duration
    assert t.stat("missing_duration") == 1
    assert t.stat("bad_field") == 1


def test_cut_short(written: dict[str, Path], tmp_path: Path) -> None:
    data = written["pftrace"].read_bytes()
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(data[: len(data) - 5])
    with pytest.raises(TraceFormatError) as err:
        hta_fast.load(cut)
    e = err.value
    assert e.code is ErrorCode.truncated and e.recoverable
    assert e.offset is not None and 0 < e.offset < len(data)
    assert str(cut) in str(e)
    t = hta_fast.load(cut, recover=True)
    assert t.stat("truncated_file") == 1 and t.num_rows("events") > 0
    # gzip cut short too
    gz = tmp_path / "cut.pftrace.gz"
    gz.write_bytes(written["gz"].read_bytes()[:-30])
    with pytest.raises(TraceFormatError) as err:
        hta_fast.load(gz)
    assert err.value.code is ErrorCode.truncated


@pytest.mark.parametrize(
    "data, code",
    [
        # a packet whose first field is a varint that never ends
        (b"\x0a\x04\x40\xff\xff\xff", "bad_json"),
        # a packet of 2^62 bytes
        (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x3f\x01", "bad_json"),
        # a top-level field of wire type 7
        (b"\x0a\x00\x0f", "bad_json"),
        # not a trace at all
        (b"\x00\x01garbage", "not_json"),
    ],
)
def test_broken_protobuf(tmp_path: Path, data: bytes, code: str) -> None:
    path = tmp_path / "bad.pftrace"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError) as err:
        hta_fast.load(path)
    assert err.value.code is ErrorCode[code]
    assert err.value.offset is not None
    assert str(path) in str(err.value)


def test_every_cut_is_an_error_not_a_crash(written: dict[str, Path]) -> None:
    data = written["interned"].read_bytes()
    for n in range(1, len(data), max(1, len(data) // 97)):
        try:
            hta_fast.load(data[:n])
        except TraceFormatError as e:
            assert e.offset is not None
        # recover keeps the packets before the cut (a cut inside the first byte or two
        # leaves no trace to keep)
        if n > 2:
            kept = hta_fast.load(data[:n], recover=True)
            assert kept.stat("truncated_file") <= 1
    # and bytes changed, removed or added, a few at a time (a fixed seed: the same inputs
    # each run); every load ends in a trace or a TraceFormatError
    rng = random.Random(7)
    for _ in range(400):
        bad = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(bad))
            edit = rng.random()
            if edit < 0.6:
                bad[i] = rng.randrange(256)
            elif edit < 0.8:
                del bad[i : i + rng.randint(1, 16)]
            else:
                bad[i:i] = rng.randbytes(rng.randint(1, 8))
        for recover in (False, True):
            try:
                hta_fast.load(bytes(bad), recover=recover, threads=1)
            except TraceFormatError as e:
                assert e.code is not None


def test_folders_list_perfetto_files(written: dict[str, Path]) -> None:
    names = {Path(p).name for p in trace_files(written["json"].parent)}
    assert {"run.json", "run.pftrace", "run.pftrace.gz", "run.perfetto-trace"} <= names


def test_json_starting_with_a_newline_is_json(tmp_path: Path) -> None:
    path = tmp_path / "nl.json"
    path.write_text("\n" + json.dumps({"traceEvents": run_events()}))
    assert hta_fast.load(path).num_rows("events") == 13


def test_commands_read_perfetto_files(written: dict[str, Path]) -> None:
    """hta-fast info on a .pftrace.gz says what the JSON of the same run says."""

    def info(path: Path) -> list[str]:
        res = CliRunner().invoke(cli, ["info", str(path)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        # the table row of the rank, without the sizes of the file and of its content
        row = next(line for line in res.output.splitlines() if line.strip().startswith("0 "))
        return row.split()[3:]

    assert info(written["gz"]) == info(written["json"])


def test_sequence_clocks_and_legacy_times(tmp_path: Path) -> None:
    """The SDK's incremental timestamps (a sequence-scoped clock of µs deltas, tied to
    BOOTTIME by a ClockSnapshot), and the older thread descriptor's µs deltas."""
    trace = pb.Trace()
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    p.timestamp = 1_000_000_000
    for clock_id, ts, incremental, unit in ((6, 1_000_000_000, False, 0), (64, 7, True, 1000)):
        c = p.clock_snapshot.clocks.add()
        c.clock_id, c.timestamp = clock_id, ts
        if incremental:
            c.is_incremental, c.unit_multiplier_ns = True, unit
    p.trace_packet_defaults.timestamp_clock_id = 64
    p.trace_packet_defaults.track_event_defaults.track_uuid = 1
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 1
    p.track_descriptor.uuid = 1
    p.track_descriptor.thread.pid, p.track_descriptor.thread.tid = 1, 2
    for delta, kind in ((5, TE.TYPE_SLICE_BEGIN), (10, TE.TYPE_SLICE_END)):
        p = trace.packet.add()
        p.trusted_packet_sequence_id = 1
        p.timestamp = delta
        p.track_event.type = kind
        if kind == TE.TYPE_SLICE_BEGIN:
            p.track_event.name = "a"
    p = trace.packet.add()  # a packet on the global clock
    p.trusted_packet_sequence_id = 1
    p.timestamp_clock_id = 6
    p.timestamp = 2_000_000_000
    p.track_event.type = TE.TYPE_INSTANT
    p.track_event.name = "global clock"
    # sequence 2: a ThreadDescriptor packet and µs times
    p = trace.packet.add()
    p.trusted_packet_sequence_id = 2
    p.thread_descriptor.pid, p.thread_descriptor.tid = 3, 4
    p.thread_descriptor.reference_timestamp_us = 100
    for name, field, value in (
        ("delta", "timestamp_delta_us", 5),
        ("absolute", "timestamp_absolute_us", 200),
    ):
        p = trace.packet.add()
        p.trusted_packet_sequence_id = 2
        p.track_event.type = TE.TYPE_INSTANT
        p.track_event.name = name
        setattr(p.track_event, field, value)
    path = tmp_path / "clocks.pftrace"
    path.write_bytes(trace.SerializeToString())
    t = hta_fast.load(path)
    (a,) = t.to_arrow("events").to_pylist()
    assert (a["name"], a["ts"], a["dur"], a["pid"], a["tid"]) == ("a", 1_000_005_000, 10_000, 1, 2)
    instants = {i["name"]: i for i in t.to_arrow("instants").to_pylist()}
    assert instants["global clock"]["ts"] == 2_000_000_000
    assert instants["delta"]["ts"] == 105_000 and instants["absolute"]["ts"] == 200_000
    assert (instants["delta"]["pid"], instants["delta"]["tid"]) == (3, 4)


def test_flow_ids_over_the_whole_uint64_range() -> None:
    """Perfetto flow ids are uint64 (often hashes): each reads as its int64 bits, never as
    the id of a name (ids at or below STRING_ID_BASE are held as text until the trace is one)."""
    w = Writer(intern=False, reset_every=0)
    d = w.packet().track_descriptor
    d.uuid = 1
    d.thread.pid, d.thread.tid = 1, 2
    for ts, fid in ((1000, 2**64 - 5), (3000, 2**63 + 7), (5000, 12)):
        e = w.event(ts, TE.TYPE_SLICE_BEGIN, 1, "x")
        e.flow_ids.append(fid)
        w.event(ts + 500, TE.TYPE_SLICE_END, 1)
    t = hta_fast.load(w.trace.SerializeToString())
    assert t.to_arrow("flows").to_pydict()["id"] == [-5, -(2**63) + 7, 12]
    assert t.id_name(-5) is None
