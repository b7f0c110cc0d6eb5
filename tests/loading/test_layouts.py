"""One synthetic trace (tests/support/layout_trace.py), written in every byte layout seen in
the wild (tests/support/layouts.py), must load the same: each table and the header, known by
construction, in every layout, chunking and thread count; and timestamps of every spelling
exactly.
"""

from __future__ import annotations

import json

import pytest

import hta_fast
from tests.support.layout_trace import (
    BASE,
    DEVICE_PROPERTIES,
    DISTRIBUTED_INFO,
    HOSTILE,
    US,
    Raw,
    build_events,
)
from tests.support.layouts import CONFIGS, KEYS, WRITERS, base_of, canonical, dumps, layout_texts


@pytest.fixture(scope="module")
def texts():
    return layout_texts()


@pytest.fixture(scope="module")
def loaded(texts):
    return {
        (layout, c["chunk_size"], c["threads"]): hta_fast.load(text, **c)
        for layout, text in texts.items()
        for c in CONFIGS
    }


# --- tests ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0]}-chunk{k[1]}-t{k[2]}")
def test_events_by_construction(loaded, key):
    t = loaded[key]
    layout = key[0]
    spec = build_events()
    ev = t.events.to_pydict()
    assert len(ev["ts"]) == len(spec)
    names = ev["name"]
    expect_names = [x.get("name", e["name"]) for e, x in spec]
    assert names == expect_names
    row_of = {n: i for i, n in enumerate(names)}
    assert len(row_of) == len(names), "test names must be unique"
    base = base_of(layout)
    for i, (e, x) in enumerate(spec):
        label = repr(expect_names[i])[:60]
        assert ev["ts"][i] == base + x["ts"], label
        assert ev["dur"][i] == x["dur"], label
        assert ev["cat"][i] == e["cat"], label
        if "step" in x:
            assert ev["step"][i] == x["step"], label
        if "parent" in x:
            want = None if x["parent"] is None else row_of[x["parent"]]
            assert ev["parent"][i] == want, (label, ev["parent"][i])
        if "partner" in x:
            want = None if x["partner"] is None else row_of[x["partner"]]
            assert ev["partner"][i] == want, (label, ev["partner"][i])
        for col in ("pid", "tid"):
            if f"{col}_name" in x:
                assert t.id_name(ev[col][i]) == x[f"{col}_name"], label
            elif f"want_{col}" in x:
                assert ev[col][i] == x[f"want_{col}"], label
                assert t.id_name(ev[col][i]) is None
            else:
                assert ev[col][i] == e[col], label


def test_string_ids_are_distinct(loaded):
    t = loaded[("native", 0, 1)]
    ev = t.events.to_pydict()
    r = {n: i for i, n in enumerate(ev["name"])}
    ids = {
        ev["pid"][r["span_a"]],
        ev["tid"][r["span_a"]],
        ev["tid"][r["span_b"]],
        ev["pid"][r["span_c"]],
    }
    # "Spans", "stream 7", "", "" -> three distinct ids, none a real number
    assert len(ids) == 3
    assert all(v < -(2**31) for v in ids)
    assert ev["pid"][r["span_a"]] == ev["tid"][r["span_c"]]  # the same string, the same id
    assert ev["pid"][r["span_c"]] == ev["tid"][r["span_b"]]


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0]}-chunk{k[1]}-t{k[2]}")
def test_other_tables_by_construction(loaded, key):
    t = loaded[key]
    base = base_of(key[0])
    ev = t.events.to_pydict()
    row_of = {n: i for i, n in enumerate(ev["name"])}

    st = {
        n: t.stat(n)
        for n in (
            "missing_duration",
            "unsupported_phase",
            "counter_non_numeric",
            "gpu_event_unlinked",
            "bad_field",
            "truncated_tail_bytes",
            "non_object_event",
            "missing_timestamp",
            "missing_phase",
            "negative_duration",
            "flow_unbound",
            "duplicate_correlation",
        )
    }
    assert st == {
        "missing_duration": 1,
        "unsupported_phase": 3,
        "counter_non_numeric": 1,
        "gpu_event_unlinked": 1,
        "bad_field": 0,
        "truncated_tail_bytes": 0,
        "non_object_event": 0,
        "missing_timestamp": 0,
        "missing_phase": 0,
        "negative_duration": 0,
        "flow_unbound": 0,
        "duplicate_correlation": 0,
    }
    assert t.stat("speculative_split_retry") <= 1

    c = t.counters.to_pydict()
    assert c["name"] == ["Memory", "Memory"]
    assert sorted(zip(c["series"], c["value"])) == [("allocated", 1024.0), ("reserved", 2048.5)]
    assert c["ts"] == [base + 50 * US] * 2

    m = t.meta_events.to_pydict()
    assert m["name"] == ["process_name", "thread_name", "process_sort_index"]
    assert m["value"][:2] == ["python3 }, {", "main thread"]
    assert m["sort_index"][2] == 5
    assert t.process_names == {1: "python3 }, {"}
    assert t.thread_names == {(1, 1): "main thread"}

    i = t.instants.to_pydict()
    assert i["name"] == ["inst"] and i["ts"] == [base + 55 * US]

    f = t.flows.to_pydict()
    assert f["phase"] == ["s", "f"]
    assert f["id"] == [77, 77]
    assert f["ts"] == [base + 100 * US, base + 120 * US]
    assert f["event"] == [row_of["cudaLaunchKernel"], row_of["kernel_via_flow"]]

    kinds = dict(zip(ev["name"], ev["kind"]))
    assert kinds["cudaGraphLaunch"] == "runtime"
    assert kinds["graph_k0"] == "kernel"
    assert kinds["aten::mm"] == "cpu_op"
    assert kinds["ProfilerStep#3"] == "user_annotation"
    corr = dict(zip(ev["name"], ev["correlation"]))
    assert corr["graph_k1"] == 9 and corr["kernel_via_flow"] is None
    ext = dict(zip(ev["name"], ev["external_id"]))
    assert ext["aten::mm"] == 3 and ext[HOSTILE[-1]] == 100 + len(HOSTILE) - 1

    k = t.kernel_args.to_pydict()
    kr = k["row"].index(row_of["kernel_via_flow"])
    assert (k["grid_x"][kr], k["grid_y"][kr], k["grid_z"][kr]) == (1, 2, 3)
    assert (k["block_x"][kr], k["block_y"][kr], k["block_z"][kr]) == (128, 1, 1)

    o = t.op_args.to_pydict()
    orow = o["row"].index(row_of["aten::mm"])
    assert json.loads(o["input_dims"][orow]) == [[2, 3], [3, 4]]
    assert json.loads(o["input_type"][orow]) == ["float", "c10::Half"]


@pytest.mark.parametrize("layout", list(WRITERS))
def test_header(loaded, layout):
    t = loaded[(layout, 256, 2)]
    if layout == "bare":
        assert t.meta.header == {}
        assert t.meta.rank is None
        return
    h = t.meta.header
    assert h["schemaVersion"] == 1
    assert h["traceName"] == "x"
    assert h["baseTimeNanoseconds"] == BASE
    assert h["deviceProperties"] == DEVICE_PROPERTIES
    assert h["distributedInfo"] == DISTRIBUTED_INFO
    assert "traceEvents" not in h
    assert t.meta.base_time_ns == BASE
    assert t.meta.rank == 3 and t.meta.world_size == 8


def test_all_layouts_and_configs_agree(loaded):
    ref = canonical(loaded[("native", 0, 1)], "native")
    for key, t in loaded.items():
        assert canonical(t, key[0]) == ref, key


def test_big_absolute_timestamps_exact():
    # pre-2.4 traces: absolute epoch µs, ints and three-decimal floats, no base time
    events = [
        {
            "ph": "X",
            "name": "a",
            "pid": 1,
            "tid": 1,
            "ts": Raw("1712195495519689.123"),
            "dur": Raw("0.001"),
        },
        {
            "ph": "X",
            "name": "b",
            "pid": 1,
            "tid": 1,
            "ts": Raw("1712195495519689"),
            "dur": Raw("1712195495.5"),
        },
        {
            "ph": "X",
            "name": "c",
            "pid": 1,
            "tid": 1,
            "ts": Raw("9223372036854775.807"),
            "dur": Raw("-0.0005"),
        },
        {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": Raw("-1.0005"), "dur": Raw("0")},
        {
            "ph": "X",
            "name": "e",
            "pid": 1,
            "tid": 1,
            "ts": Raw("0.0000001e7"),
            "dur": Raw("100000000000000000000e-20"),
        },
    ]
    texts = [
        dumps({"schemaVersion": 1, "traceEvents": events}, separators=(",", ":")),
        dumps(events, indent=1),
    ]
    for text in texts:
        for c in CONFIGS:
            t = hta_fast.load(text.encode(), **c)
            ev = t.events.to_pydict()
            assert ev["name"] == ["a", "b", "c", "d", "e"]
            assert ev["ts"] == [
                1712195495519689123,
                1712195495519689000,
                9223372036854775807,
                -1001,
                1000,
            ]
            # -0.0005 µs rounds half away from zero to -1 ns: a negative duration, read as 0
            assert ev["dur"] == [1, 1712195495500, 0, 0, 1000]
            assert t.stat("negative_duration") == 1
