"""Stream-sync events on a virtual thread (kineto's output_json.cpp since #1356: a
"Stream Sync" activity of category cuda_sync is written on tid = stream + 1,000,000
(ChromeTraceLogger::kSyncStreamTidOffset), with a thread_name "stream N (sync)" and its
flows moved with it in handleLink). A shared trace rewritten to that layout gives the same
streams, idle time, queue lengths and critical path as in the older one, and the virtual
thread is neither a stream nor a launching thread."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import hta_fast
from hta_fast.analysis.idle_time import idle_time_breakdown
from hta_fast.analysis.queue_length import queue_length
from hta_fast.model.path.critical_path import critical_path
from hta_fast.schema import EventKind

SYNC_TID_OFFSET = 1_000_000  # kineto: output_json.h, kSyncStreamTidOffset
TRACES = [
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
    "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
]


def to_sync_thread_layout(doc: dict) -> tuple[dict, int]:
    """The trace as kineto writes it now: each Stream Sync (and the flow ends on it) on the
    stream's virtual sync thread, named once per (device, thread)."""
    events = doc["traceEvents"]
    moved: set[tuple] = set()
    named: dict[tuple, int] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cuda_sync" and e.get("name") == "Stream Sync":
            moved.add((e["pid"], e["tid"], e["ts"]))
            e["tid"] = e["tid"] + SYNC_TID_OFFSET
            named.setdefault((e["pid"], e["tid"]), e["tid"] - SYNC_TID_OFFSET)
    for e in events:  # handleLink: a flow end on a sync event is on its thread too
        if e.get("ph") in ("s", "t", "f") and (e.get("pid"), e.get("tid"), e.get("ts")) in moved:
            e["tid"] = e["tid"] + SYNC_TID_OFFSET
    for (pid, tid), stream in named.items():
        events.append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": 0,
                "pid": pid,
                "tid": tid,
                "args": {"name": f"stream {stream} (sync)"},
            }
        )
        events.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "ts": 0,
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": stream},
            }
        )
    return doc, len(moved)


@pytest.fixture(params=TRACES, ids=lambda p: p.split("/")[2])
def both(request, traces_dir, tmp_path):
    path = traces_dir / request.param
    if not path.exists():
        pytest.skip(f"{path} not present")
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    new, moved = to_sync_thread_layout(doc)
    assert moved, "the trace has Stream Sync events"
    out = tmp_path / "new_layout.json"
    out.write_text(json.dumps(new))
    return hta_fast.load(str(path)), hta_fast.load(str(out))


def _same(a, b) -> None:
    assert a.to_pydict() == b.to_pydict()


def test_same_streams_idle_time_and_queue_lengths(both):
    old, new = both
    gpu = np.isin(
        old.column("events", "kind"), [EventKind.kernel, EventKind.memcpy, EventKind.memset]
    )
    streams = sorted(set(old.column("events", "stream")[gpu].tolist()))
    gpu_new = np.isin(
        new.column("events", "kind"), [EventKind.kernel, EventKind.memcpy, EventKind.memset]
    )
    assert sorted(set(new.column("events", "stream")[gpu_new].tolist())) == streams
    assert all(s < SYNC_TID_OFFSET for s in set(new.column("events", "stream").tolist()) if s >= 0)
    _same(idle_time_breakdown(old).table, idle_time_breakdown(new).table)
    _same(queue_length(old).table, queue_length(new).table)


def test_same_critical_path(both):
    old, new = both
    _same(critical_path(old).table, critical_path(new).table)


def test_the_virtual_thread_is_shown_by_its_name_and_launches_nothing(both):
    old, new = both
    sync = new.column("events", "tid") >= SYNC_TID_OFFSET
    sync &= new.column("events", "kind") == EventKind.sync
    tids = set(new.column("events", "tid")[sync].tolist())
    assert tids and {
        tid: new.thread_names[(pid, tid)] for (pid, tid) in new.thread_names if tid in tids
    } == {tid: f"stream {tid - SYNC_TID_OFFSET} (sync)" for tid in tids}
    host = np.isin(old.column("events", "kind"), [EventKind.runtime, EventKind.driver])
    host_new = np.isin(new.column("events", "kind"), [EventKind.runtime, EventKind.driver])
    assert set(new.column("events", "tid")[host_new].tolist()) == set(
        old.column("events", "tid")[host].tolist()
    )
