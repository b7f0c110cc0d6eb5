"""`hta-fast slice --format pftrace` and _core.json_to_pftrace: a window written as a Perfetto
protobuf trace loads back to the tables its JSON slice loads to (events with their links and
arguments, flows, counters, instants, process and thread names), but for what Perfetto
cannot carry, listed here with the reason:

- events, instants, counters, flows and metadata of a string pid or tid (Kineto's trace
  spans, "Spans" / "PyTorch Profiler"): Perfetto's process and thread ids are integers;
  json_to_pftrace counts them, by reason;
- the cat and name of flows: a Perfetto flow is an id on the slices it joins, nothing more;
- binds_enclosing of a flow start: the reader takes the first slice naming an id for the
  start, which binds as a start does (bp "e" on ph s is not kept); a later end always binds
  its enclosing slice (an f without bp "e" is counted);
- the tid of an instant of process scope, the pid and tid of one of global scope: they sit on
  a process track or on none; an instant without "s" reads back with scope "t" (Chrome's
  default, which it is drawn with either way);
- a process or thread named twice (Kineto repeats thread_name): one descriptor each;
- the header (distributedInfo, deviceProperties, ...): no Perfetto packet holds it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import hta_fast
from hta_fast import _core
from hta_fast._named_tables import TABLES
from hta_fast.cli import cli
from hta_fast.loading.slice_writer import (
    steps_window,
    trace_start,
    write_slice,
    write_slice_pftrace,
)
from hta_fast.schema import STRING_ID_BASE
from tests.support.paths import DATA
from tests.support.pftrace_rows import table_rows

CONTROL = "hta/trace_diff/control/control.json.gz"
DLRM = "param_dlrm_8rank"
TORCH_2_14 = sorted((DATA / "torch_2_14").glob("*.json.gz"))
STRING_IDS = "a pid or tid that is not an integer of 32 bits"
REPEATED = "a repeated process or thread metadata event"


def _slice_rows(trace: hta_fast.Trace, drop_string_ids: bool) -> dict[str, list]:
    """The rows of `trace` without what Perfetto cannot carry (the module's docstring)."""
    return table_rows(trace, unbind_flow_starts=True, drop_string_ids=drop_string_ids)


def _string_id_rows(trace: hta_fast.Trace) -> int:
    """Rows of a string pid or tid in the tables json_to_pftrace reads from (one per JSON
    event: events, instants, flows, meta; counters have a row per series)."""
    n = 0
    for name in ("events", "instants", "flows", "meta", "counters"):
        pid, tid = trace.column(name, "pid"), trace.column(name, "tid")
        n += int(((pid <= STRING_ID_BASE) | (tid <= STRING_ID_BASE)).sum())
    return n


def _assert_same(json_path: Path, pftrace_path: Path, left_out: dict[str, int]) -> None:
    from_json = hta_fast.load(json_path)
    want = _slice_rows(from_json, drop_string_ids=True)
    got = _slice_rows(hta_fast.load(pftrace_path), drop_string_ids=False)
    assert want["events"], "the window holds events"
    for name in TABLES:
        assert got[name] == want[name], name
    string_meta = int((from_json.column("meta", "pid") <= STRING_ID_BASE).sum())
    all_meta = len(_slice_rows(from_json, drop_string_ids=False)["meta"])
    counted = {
        STRING_IDS: _string_id_rows(from_json),
        REPEATED: all_meta - string_meta - len(want["meta"]),
    }
    assert left_out == {k: n for k, n in counted.items() if n}


@pytest.mark.parametrize(
    "source", [CONTROL, *(str(p) for p in TORCH_2_14)], ids=lambda s: Path(s).name
)
def test_slice_loads_back_as_its_json(traces_dir: Path, tmp_path: Path, source: str) -> None:
    trace = hta_fast.load(traces_dir / source)
    start = trace_start(trace)
    assert start is not None
    end = int((trace.column("events", "ts") + trace.column("events", "dur")).max())
    for k, window in enumerate(
        [(start + (end - start) // 4, start + (end - start) // 2), (start, end + 1)]
    ):
        json_path, pf_path = tmp_path / f"w{k}.json", tmp_path / f"w{k}.pftrace.gz"
        counts = write_slice(trace, json_path, window)
        pf_counts, left_out = write_slice_pftrace(trace, pf_path, window)
        assert pf_counts == counts
        assert gzip.decompress(pf_path.read_bytes())[:1] == b"\n"  # a TracePacket
        _assert_same(json_path, pf_path, left_out)


def _x(pid: int, tid: int, name: str, ts: float, dur: float, **args: Any) -> dict:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def _synthetic() -> list[dict[str, Any]]:
    """Every shape the writer handles, answers known by construction: slices that overlap
    without nesting (a child track), equal intervals (file order kept), zero durations,
    slices that abut; a launch and its kernel joined by a flow and correlation; a flow id
    two categories use; counters of two series; instants of each scope; arguments of each
    JSON type; names with characters to escape."""
    base = 1_700_000_000_000_000.5
    return [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 3}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": 'main "t"'}},
        {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 7, "args": {"sort_index": 2}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        _x(1, 7, "outer", base, 100, **{"Input Dims": [[2, 3], []], "Ev Idx": 4}),
        _x(1, 7, "same_a", base + 10, 20, **{"Sequence number": 9}),
        _x(1, 7, "same_b", base + 10, 20, **{"Concrete Inputs": ["", "1.5"]}),
        _x(1, 7, "zero", base + 30, 0),
        _x(1, 7, "abut", base + 30, 10),
        _x(1, 7, "overlap", base + 90, 30),  # begins in outer, ends after it
        _x(1, 7, "é ü 名 😀\n", base + 95, 2),
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 7,
            "ts": base + 40,
            "dur": 5,
            "args": {"correlation": 77, "External id": 5},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "pid": 0,
            "tid": 7,
            "ts": base + 50,
            "dur": 30,
            "args": {
                "correlation": 77,
                "External id": 5,
                "device": 0,
                "stream": 7,
                "grid": [4, 1, 1],
                "block": [128, 1, 1],
                "est. achieved occupancy %": 37.5,
                "queued": 0,
                "registers per thread": 32,
                "shared memory": 1024,
                "blocks per SM": 0.25,
                "warps per SM": 1.0,
                "context": 1,
            },
        },
        {"ph": "s", "id": 77, "pid": 1, "tid": 7, "ts": base + 40, "cat": "ac2g", "name": "ac2g"},
        {
            "ph": "f",
            "id": 77,
            "pid": 0,
            "tid": 7,
            "ts": base + 50,
            "cat": "ac2g",
            "name": "ac2g",
            "bp": "e",
        },
        {
            "ph": "s",
            "id": 77,
            "pid": 1,
            "tid": 7,
            "ts": base + 10,
            "cat": "fwdbwd",
            "name": "fwdbwd",
        },
        {
            "ph": "f",
            "id": 77,
            "pid": 1,
            "tid": 7,
            "ts": base + 90,
            "cat": "fwdbwd",
            "name": "fwdbwd",
            "bp": "e",
        },
        {
            "ph": "C",
            "name": "mem",
            "pid": 1,
            "tid": 7,
            "ts": base + 5,
            "args": {"allocated": 2.5, "reserved": 4},
        },
        {
            "ph": "C",
            "name": "mem",
            "pid": 1,
            "tid": 7,
            "ts": base + 60,
            "args": {"allocated": 3, "reserved": 4},
        },
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 7,
            "ts": base + 20,
            "args": {
                "Bytes": 512,
                "Total Allocated": 1024,
                "Total Reserved": 2048,
                "Addr": 1234567890123,
                "Device Type": 1,
                "Device Id": 0,
            },
        },
        {"ph": "i", "s": "p", "name": "proc mark", "pid": 1, "tid": -1, "ts": base + 21},
        {"ph": "i", "s": "g", "name": "global mark", "pid": -1, "tid": -1, "ts": base + 22},
    ]


def test_synthetic_events_load_back_the_same(tmp_path: Path) -> None:
    json_path = tmp_path / "t.json"
    json_path.write_text(json.dumps({"traceEvents": _synthetic()}))
    data, left_out = _core.json_to_pftrace(json_path.read_bytes())
    (tmp_path / "t.pftrace").write_bytes(data)
    # One flow id of two categories: the second flow gets a new number.
    assert left_out == {"a flow id not a number, or one of two categories (renumbered)": 1}
    want = _slice_rows(hta_fast.load(json_path), drop_string_ids=False)
    got = _slice_rows(hta_fast.load(tmp_path / "t.pftrace"), drop_string_ids=False)
    for name in TABLES:
        if name == "flows":
            continue
        assert got[name] == want[name], name

    # Flows: the same ends; the first category keeps id 77, the second has a new one.
    def without_id(rows: list) -> list:
        return sorted(tuple(kv for kv in r if kv[0] != "id") for r in rows)

    assert without_id(got["flows"]) == without_id(want["flows"])
    ids = {dict(r)["ts"] % 1_000_000: dict(r)["id"] for r in got["flows"]}  # by ns in the ms
    assert ids[40_500] == ids[50_500] == 77  # ac2g: the launch and its kernel
    assert ids[10_500] == ids[90_500] != 77  # fwdbwd
    # What the rows say, by construction.
    t = hta_fast.load(tmp_path / "t.pftrace")
    ev = {e["name"]: e for e in t.to_arrow("events").to_pylist()}
    assert ev["outer"]["ts"] == 1_700_000_000_000_000_500
    assert ev["overlap"]["dur"] == 30_000
    assert ev["gemm"]["partner"] is not None
    scopes = {r["name"]: chr(r["scope"]) for r in t.to_arrow("instants").to_pylist()}
    assert scopes == {"[memory]": "t", "proc mark": "p", "global mark": "g"}


def test_events_without_duration_and_string_ids_are_counted(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "name": "open", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "X", "name": "inner", "pid": 1, "tid": 1, "ts": 11, "dur": 2},
        {"ph": "X", "name": "span", "pid": "Spans", "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "name": "no ts", "pid": 1, "tid": 1, "dur": 5},
        {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 10},
        3,
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    data, left_out = _core.json_to_pftrace(path.read_bytes())
    assert left_out == {
        STRING_IDS: 1,
        "no ts": 1,
        "phase B": 1,
        "an item of traceEvents that is not an object": 1,
    }
    (tmp_path / "t.pftrace").write_bytes(data)
    # What is carried loads as the JSON of those events alone does: a slice without a
    # duration stays one, and the slice inside it is still its child.
    (tmp_path / "kept.json").write_text(json.dumps({"traceEvents": events[:2]}))
    want = _slice_rows(hta_fast.load(tmp_path / "kept.json"), drop_string_ids=False)
    got = _slice_rows(hta_fast.load(tmp_path / "t.pftrace"), drop_string_ids=False)
    assert len(got["events"]) == 2
    assert got == want


@pytest.mark.parametrize(
    "data, code",
    [
        (b"", "empty"),
        (b"not json", "not_json"),
        (b"   ", "empty"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1', "bad_json"),
        (b'{"other": []}', "not_a_trace"),
        (b'{"traceEvents": 5}', "not_a_trace"),
        (b'{"traceEvents": [{"ph": 5}]}', "bad_field"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1, "args": {"a": [1,}}]}', "bad_json"),
        (bytes(range(256)), "bad_json"),
    ],
)
def test_bad_input_is_an_error_not_a_crash(data: bytes, code: str) -> None:
    with pytest.raises(_core.FormatError) as e:
        _core.json_to_pftrace(data)
    assert e.value.code == _core.ErrorCode[code]
    assert "Perfetto" in str(e.value)


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_cli_writes_pftrace_for_a_rank_and_a_folder(traces_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.pftrace"
    res = run(
        "slice", traces_dir / CONTROL, "--window", "0:50000000", "--format", "pftrace", "-o", out
    )
    assert res.exit_code == 0, res.output
    json_out = tmp_path / "one.json"
    assert (
        run("slice", traces_dir / CONTROL, "--window", "0:50000000", "-o", json_out).exit_code == 0
    )
    assert _slice_rows(hta_fast.load(out), drop_string_ids=False) == _slice_rows(
        hta_fast.load(json_out), drop_string_ids=True
    )

    folder = tmp_path / "step10"
    res = run("slice", traces_dir / DLRM, "--steps", "10", "--format", "pftrace", "-o", folder)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"rank-{r}.pftrace.gz" for r in range(8)
    )
    sliced = hta_fast.load_dir(folder)
    assert sorted(sliced.ranks) == list(range(8))
    originals = hta_fast.load_dir(traces_dir / DLRM)
    for rank, original in originals.items():
        window = steps_window(original, [10])
        want = tmp_path / f"r{rank}.json"
        write_slice(original, want, window)
        assert _slice_rows(sliced[rank], drop_string_ids=False) == _slice_rows(
            hta_fast.load(want), drop_string_ids=True
        ), rank
    # A JSON slice over it: --overwrite replaces the slice of the other format.
    res = run("slice", traces_dir / DLRM, "--steps", "10", "-o", folder, "--overwrite")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"rank-{r}.json.gz" for r in range(8))


def _unknown_fields(message: Any, path: str = "Trace") -> list[str]:
    """Paths of the messages holding fields their Perfetto proto does not declare (or
    declares with another wire type): what Perfetto's own parser would not read."""
    found = [path] if len(unknown_fields.UnknownFieldSet(message)) else []
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        for item in value if not hasattr(value, "ListFields") else [value]:
            found += _unknown_fields(item, f"{path}.{field.name}")
    return found


def test_perfettos_own_protos_read_every_field() -> None:
    data, _ = _core.json_to_pftrace(json.dumps({"traceEvents": _synthetic()}).encode())
    trace = pb.Trace.FromString(data)
    assert _unknown_fields(trace) == []
    events = [p.track_event for p in trace.packet if p.HasField("track_event")]
    kinds = {pb.TrackEvent.Type.Name(e.type) for e in events}
    assert kinds == {"TYPE_SLICE_BEGIN", "TYPE_SLICE_END", "TYPE_INSTANT", "TYPE_COUNTER"}
    assert sum(len(e.flow_ids) for e in events) == 2
    assert sum(len(e.terminating_flow_ids) for e in events) == 2
    threads = {
        (p.track_descriptor.thread.pid, p.track_descriptor.thread.tid): p.track_descriptor
        for p in trace.packet
        if p.track_descriptor.HasField("thread")
    }
    assert threads[(1, 7)].thread.thread_name == 'main "t"'
    assert threads[(1, 7)].parent_uuid != 0
    # Packets with a timestamp come in time order, as Perfetto's sorter wants them.
    stamps = [p.timestamp for p in trace.packet if p.HasField("timestamp")]
    assert stamps == sorted(stamps)


def test_a_flow_end_without_bp_e_is_counted() -> None:
    """The reader binds a flow's later ends to their enclosing slice: an end that binds to
    the next slice (no bp "e") cannot be written as such, and says so."""
    slice_ = {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}
    for bp, counted in (
        ({"bp": "e"}, {}),
        ({}, {'a flow end without bp "e" (written as binding its slice)': 1}),
    ):
        flow = {"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, **bp}
        _, left_out = _core.json_to_pftrace(json.dumps({"traceEvents": [slice_, flow]}).encode())
        assert left_out == counted


def test_instant_scopes(tmp_path: Path) -> None:
    """An instant's scope is its track's: thread, process (no tid), global (neither)."""
    events = [
        {"ph": "i", "s": s, "name": s or "none", "pid": 1, "tid": 2, "ts": 5}
        for s in ("t", "p", "g", None)
    ]
    for e in events:
        if e["s"] is None:
            del e["s"]
    data, left_out = _core.json_to_pftrace(json.dumps({"traceEvents": events}).encode())
    assert left_out == {}
    (tmp_path / "i.pftrace").write_bytes(data)
    rows = hta_fast.load(tmp_path / "i.pftrace").to_arrow("instants").to_pylist()
    got = sorted((r["name"], chr(r["scope"]), r["pid"], r["tid"]) for r in rows)
    assert got == [("g", "g", -1, -1), ("none", "t", 1, 2), ("p", "p", 1, -1), ("t", "t", 1, 2)]
