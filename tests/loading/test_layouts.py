"""One synthetic trace, written in every byte layout seen in the wild, must load the same.

The events, their spellings (int / three-decimal / exponent / string timestamps, string
pids, hostile names) and the answers (ns values, links, nesting, steps, stats) are fixed
by construction here; nothing is derived from the loader under test.

Layouts:  native  - the Kineto writer ("\\n  {" per event, header keys after the array)
          indent  - json.dumps(indent=2)
          line    - the whole file on one line, no spaces
          bare    - a top-level JSON array of events (no header, so no base time)
Each is loaded with the default chunking and with chunk_size=256, on 1 and 2 threads.
"""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import subprocess

import pytest

import hta_fast

FILLER = 1000  # plain events before the interesting ones (> 64 KiB in every layout)
BASE = 1_700_000_000_000_000_123  # > 2**53 and odd: a double would lose it
US = 1000  # ns per µs


class Raw(str):
    """JSON text written as-is (number spellings, pre-escaped strings)."""


# --- the trace --------------------------------------------------------------------------
# Names that defeat a naive `},{` splitter or a naive string reader.
HOSTILE = [
    "}, {",
    '},{"ph":"X"',
    '}, {"ph": "X", "ts": 1, "dur": 2, "name": "fake"}, {',
    'quote " inside',
    'back\\slash \\ and \\\\ and \\"',
    "漢字 é real utf-8",
    "] and [ brackets ]] [[",
    '[{"a": 1}], [{"b": 2}]',
    "tab\tnewline\ncr\r",
    "\u2028 line separator \u2029",
    "emoji 😀 outside the BMP",
    "x" * 700 + "}, {" + "y" * 5000,  # longer than a 256-byte chunk, with a fake boundary
]
# Pre-escaped spellings: (JSON text, decoded value).
ESCAPED = [
    ('"caf\\u00e9 \\u6f22"', "café 漢"),
    ('"\\ud83d\\ude00 pair"', "😀 pair"),
    ('"\\"}, {\\"ph\\": \\"X\\"\\u007d,\\u007b"', '"}, {"ph": "X"},{'),
    ('"slash \\/ \\b\\f"', "slash / \b\f"),
]

DEVICE_PROPERTIES = [  # header after traceEvents, itself an array of objects
    {
        "id": 0,
        "name": "NVIDIA H100 }, {",
        "totalGlobalMem": 85031714816,
        "computeMajor": 9,
        "computeMinor": 0,
        "numSms": 132,
        "nested": [{"a": [1, 2]}, {"b": {"c": []}}],
    },
    {
        "id": 1,
        "name": "NVIDIA H100",
        "totalGlobalMem": 85031714816,
        "computeMajor": 9,
        "computeMinor": 0,
        "numSms": 132,
    },
]
DISTRIBUTED_INFO = {
    "backend": "nccl",
    "rank": 3,
    "world_size": 8,
    "pg_config": [{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": []}],
}


def X(name, ts, dur, cat, /, pid=1, tid=1, args=None, **expect):
    """A complete event and what the loader must make of it (rel_ts/dur in ns)."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts}
    if dur is not None:
        ev["dur"] = dur
    if args is not None:
        ev["args"] = args
    return ev, expect


def build_events():
    """[(event, expect)] in file order. expect: name, ts, dur (relative ns), and where
    they matter: step, parent (a name), partner (a name), want_pid/want_tid (ints),
    pid_name/tid_name (string ids)."""
    out = []
    add = out.append
    # Filler first: the loader reads its first 64 KiB in one block, so only events past it
    # are cut at chunk_size; the interesting events below must come after it.
    for i in range(FILLER):
        add(
            X(
                f"filler{i}",
                Raw(str(5000 + i)),
                Raw("0.5"),
                "cpu_op",
                pid=9,
                tid=9,
                ts=(5000 + i) * US,
                dur=500,
                step=None,
                parent=None,
            )
        )
    # Steps: ProfilerStep#3 = [0, 1000) µs, ProfilerStep#4 = [1000, 2000) µs.
    add(
        X(
            "ProfilerStep#3",
            Raw("0"),
            Raw("1000"),
            "user_annotation",
            ts=0,
            dur=1000 * US,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "aten::mm",
            Raw("90.000"),
            Raw("60.000"),
            "cpu_op",
            args={
                "External id": 3,
                "Input Dims": [[2, 3], [3, 4]],
                "x": [{"a": 1}, {"b": 2}],
                "nested": {"o": {"p": [1, {"q": "}, {"}], "r": {}}},
                "Input type": ["float", "c10::Half"],
            },
            ts=90 * US,
            dur=60 * US,
            step=3,
            parent="ProfilerStep#3",
        )
    )
    # A launch whose kernel has no correlation: linked only by the ac2g flow id 77.
    add(
        X(
            "cudaLaunchKernel",
            Raw("100"),
            Raw("10"),
            "cuda_runtime",
            args={"correlation": 11, "External id": 3},
            ts=100 * US,
            dur=10 * US,
            step=3,
            parent="aten::mm",
            partner="kernel_via_flow",
        )
    )
    # A graph launch with three kernels sharing its correlation.
    add(
        X(
            "cudaGraphLaunch",
            Raw("200.250"),
            Raw("20.5"),
            "cuda_runtime",
            args={"correlation": 9, "stream": 7},
            ts=200_250,
            dur=20_500,
            step=3,
            parent="ProfilerStep#3",
            partner="graph_k0",
        )
    )
    # Hostile names on the CPU thread, siblings under ProfilerStep#3.
    for i, name in enumerate(HOSTILE):
        add(
            X(
                name,
                Raw(str(300 + 10 * i)),
                Raw("5"),
                "cpu_op",
                args={"External id": 100 + i, "k": [{"}": "{"}, {"],": "[,"}]},
                ts=(300 + 10 * i) * US,
                dur=5 * US,
                step=3,
                parent="ProfilerStep#3",
            )
        )
    for i, (text, decoded) in enumerate(ESCAPED):
        add(
            X(
                Raw(text),
                Raw(str(450 + 10 * i)),
                Raw("5"),
                "cpu_op",
                ts=(450 + 10 * i) * US,
                dur=5 * US,
                step=3,
                parent="ProfilerStep#3",
                name=decoded,
            )
        )
    add(
        X(
            "ProfilerStep#4",
            Raw("1000"),
            Raw("1000"),
            "user_annotation",
            ts=1000 * US,
            dur=1000 * US,
            step=4,
            parent=None,
        )
    )
    add(
        X(
            "cudaLaunchKernel#2",
            Raw("1100"),
            Raw("5"),
            "cuda_runtime",
            args={"correlation": 12},
            ts=1100 * US,
            dur=5 * US,
            step=4,
            parent="ProfilerStep#4",
            partner="kernel_step4",
        )
    )
    add(
        X(
            "late_op",
            Raw("2500"),
            Raw("1"),
            "cpu_op",
            ts=2500 * US,
            dur=1 * US,
            step=None,
            parent=None,
        )
    )
    # Number spellings, on their own thread.
    add(
        X(
            "exp_op",
            Raw("1.5e3"),
            Raw("2.5E-1"),
            "cpu_op",
            tid=2,
            ts=1_500_000,
            dur=250,
            step=4,
            parent=None,
        )
    )
    add(
        X(
            "str_ts",
            Raw('"123.5"'),
            Raw('"6"'),
            "cpu_op",
            tid=2,
            ts=123_500,
            dur=6 * US,
            step=3,
            parent=None,
        )
    )
    add(X("no_dur", Raw("130"), None, "cpu_op", tid=2, ts=130 * US, dur=0, step=3, parent=None))
    add(
        X(
            "half_up",
            Raw("140.0005"),
            Raw("0.0004"),
            "cpu_op",
            tid=2,
            ts=140_001,
            dur=0,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "exp_plus",
            Raw("1.6E+2"),
            Raw("1e0"),
            "cpu_op",
            tid=2,
            ts=160 * US,
            dur=1 * US,
            step=3,
            parent=None,
        )
    )
    add(
        X(
            "many_decimals",
            Raw("170.123456789"),
            Raw("0.0015"),
            "cpu_op",
            tid=2,
            ts=170_123,
            dur=2,
            step=3,
            parent=None,
        )
    )
    # GPU side: pid = device 0, tid = stream 7.
    add(
        X(
            "kernel_via_flow",
            Raw("120"),
            Raw("5"),
            "kernel",
            pid=0,
            tid=7,
            args={"device": 0, "stream": 7, "grid": [1, 2, 3], "block": [128, 1, 1]},
            ts=120 * US,
            dur=5 * US,
            step=3,
            partner="cudaLaunchKernel",
        )
    )
    add(
        X(
            "graph_k2",
            Raw("260"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=260 * US,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    add(
        X(
            "graph_k0",
            Raw("230.125"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=230_125,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    add(
        X(
            "graph_k1",
            Raw("245"),
            Raw("4"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 9, "device": 0, "stream": 7},
            ts=245 * US,
            dur=4 * US,
            step=3,
            partner="cudaGraphLaunch",
        )
    )
    # Launched in step 4, runs inside the step 5 window's time: takes the launch's step.
    add(
        X(
            "kernel_step4",
            Raw("2600"),
            Raw("3"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 12},
            ts=2600 * US,
            dur=3 * US,
            step=4,
            partner="cudaLaunchKernel#2",
        )
    )
    add(
        X(
            "kernel_unlinked",
            Raw("3000"),
            Raw("3"),
            "kernel",
            pid=0,
            tid=7,
            args={"correlation": 999},
            ts=3000 * US,
            dur=3 * US,
            step=None,
            partner=None,
        )
    )
    # String pids / tids.
    add(
        X(
            "span_a",
            Raw("10"),
            Raw("1"),
            "Trace",
            pid="Spans",
            tid="stream 7",
            ts=10 * US,
            dur=US,
            pid_name="Spans",
            tid_name="stream 7",
        )
    )
    add(
        X(
            "span_b",
            Raw("11"),
            Raw("1"),
            "Trace",
            pid="Spans",
            tid="",
            ts=11 * US,
            dur=US,
            pid_name="Spans",
            tid_name="",
        )
    )
    add(
        X(
            "span_c",
            Raw("12"),
            Raw("1"),
            "Trace",
            pid="",
            tid="Spans",
            ts=12 * US,
            dur=US,
            pid_name="",
            tid_name="Spans",
        )
    )
    add(
        X(
            "numeric_string_ids",
            Raw("13"),
            Raw("1"),
            "Trace",
            pid="12",
            tid="13",
            ts=13 * US,
            dur=US,
            want_pid=12,
            want_tid=13,
        )
    )
    add(
        X(
            "overhead",
            Raw("14"),
            Raw("1"),
            "overhead",
            pid=-1,
            tid=-1,
            ts=14 * US,
            dur=US,
            want_pid=-1,
            want_tid=-1,
        )
    )
    return out


OTHER_EVENTS = [
    # flows: start on the launch, finish on the kernel (bp e)
    {"ph": "s", "id": 77, "pid": 1, "tid": 1, "ts": Raw("100"), "cat": "ac2g", "name": "ac2g"},
    {
        "ph": "f",
        "id": 77,
        "pid": 0,
        "tid": 7,
        "ts": Raw("120"),
        "cat": "ac2g",
        "name": "ac2g",
        "bp": "e",
    },
    # counters: one row per numeric arg, the string arg counted
    {
        "ph": "C",
        "name": "Memory",
        "pid": 1,
        "tid": 1,
        "ts": Raw("50"),
        "args": {"allocated": 1024, "reserved": Raw("2048.5"), "label": "not a number"},
    },
    # metadata
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3 }, {"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main thread"}},
    {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 5}},
    # instant
    {"ph": "i", "s": "t", "name": "inst", "pid": 1, "tid": 1, "ts": Raw("55"), "cat": "x"},
    # phases the loader does not read
    {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": Raw("60")},
    {"ph": "E", "name": "end", "pid": 1, "tid": 1, "ts": Raw("61")},
    {"ph": "Z", "name": "unknown phase", "pid": 1, "tid": 1, "ts": Raw("62")},
]


def all_events():
    """File order: complete events interleaved with the others."""
    xs = [ev for ev, _ in build_events()]
    out = []
    others = list(OTHER_EVENTS)
    for i, ev in enumerate(xs):
        out.append(ev)
        if i % 3 == 1 and others:
            out.append(others.pop(0))
    return out + others


# --- writers ----------------------------------------------------------------------------
def _placeholders(obj, raws):
    if isinstance(obj, Raw):
        raws.append(str(obj))
        return f"@@RAW{len(raws) - 1}@@"
    if isinstance(obj, dict):
        return {
            (_placeholders(k, raws) if isinstance(k, Raw) else k): _placeholders(v, raws)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_placeholders(v, raws) for v in obj]
    return obj


def dumps(obj, **kw) -> str:
    """json.dumps, with Raw values spliced in verbatim."""
    raws: list[str] = []
    text = json.dumps(_placeholders(obj, raws), ensure_ascii=False, **kw)
    for i, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{i}@@"', raw, 1)
    return text


def header_after():
    return {
        "deviceProperties": DEVICE_PROPERTIES,
        "distributedInfo": DISTRIBUTED_INFO,
        "traceName": "x",
        "baseTimeNanoseconds": BASE,
    }


def write_native(events) -> str:
    """The Kineto writer: a leading newline, "\\n  {" per event, several keys a line,
    args one level deeper, header keys (deviceProperties comma-first) after the array."""

    def event(ev):
        head = [f"{dumps(k)}: {dumps(v)}" for k, v in ev.items() if k not in ("ts", "dur", "args")]
        lines = ["  {", "    " + ", ".join(head) + ("," if len(ev) > len(head) else "")]
        times = [f"{dumps(k)}: {dumps(ev[k])}" for k in ("ts", "dur") if k in ev]
        if times:
            lines.append("    " + ", ".join(times) + ("," if "args" in ev else ""))
        if "args" in ev:
            lines.append('    "args": {')
            lines.append(
                ",\n".join(
                    f"      {dumps(k)}: {dumps(v, separators=(', ', ': '))}"
                    for k, v in ev["args"].items()
                )
            )
            lines.append("    }")
        lines.append("  }")
        return "\n".join(lines)

    devs = "\n  ,".join(
        "{" + ", ".join(f"{dumps(k)}: {dumps(v)}" for k, v in d.items()) + "}"
        for d in DEVICE_PROPERTIES
    )
    return (
        '\n{\n  "schemaVersion": 1,\n  "traceEvents": [\n'
        + ",\n".join(event(e) for e in events)
        + '\n],\n  "deviceProperties": [\n  '
        + devs
        + "\n  ],\n"
        + '  "distributedInfo": '
        + dumps(DISTRIBUTED_INFO)
        + ",\n"
        + '  "traceName": "x",\n  "baseTimeNanoseconds": '
        + str(BASE)
        + "\n}\n"
    )


def write_indent(events) -> str:
    return dumps({"schemaVersion": 1, "traceEvents": events, **header_after()}, indent=2)


def write_line(events) -> str:
    return dumps(
        {"schemaVersion": 1, "traceEvents": events, **header_after()}, separators=(",", ":")
    )


def write_bare(events) -> str:
    return dumps(events, indent=1)


WRITERS = {"native": write_native, "indent": write_indent, "line": write_line, "bare": write_bare}
CONFIGS = [dict(chunk_size=c, threads=t) for c, t in itertools.product((0, 256), (1, 2))]


@pytest.fixture(scope="module")
def texts():
    events = all_events()
    out = {name: w(events).encode() for name, w in WRITERS.items()}
    for name, text in out.items():  # every layout is valid JSON with the same events
        doc = json.loads(text)
        assert len(doc if name == "bare" else doc["traceEvents"]) == len(events)
    return out


@pytest.fixture(scope="module")
def loaded(texts):
    return {
        (layout, c["chunk_size"], c["threads"]): hta_fast.load(text, **c)
        for layout, text in texts.items()
        for c in CONFIGS
    }


def base_of(layout):
    return 0 if layout == "bare" else BASE


def canonical(t, layout):
    """Every table as Python values, ts made relative, raw JSON text parsed."""
    out = {}
    base = base_of(layout)
    for name in ("events", "flows", "counters", "instants", "meta_events", "kernel_args"):
        d = getattr(t, name).to_pydict()
        if "ts" in d:
            d["ts"] = [v - base for v in d["ts"]]
        out[name] = d
    ops = t.op_args.to_pydict()
    for col in ("input_dims", "input_type", "input_strides", "concrete_inputs"):
        ops[col] = [None if v is None else json.loads(v) for v in ops[col]]
    out["op_args"] = ops
    out["strings_of_ids"] = {
        v: t.id_name(v)
        for col in ("pid", "tid")
        for v in out["events"][col]
        if t.id_name(v) is not None
    }
    stats = dict(zip(t.stats["name"].to_pylist(), t.stats["count"].to_pylist()))
    stats.pop("speculative_split_retry")
    out["stats"] = stats
    return out


KEYS = sorted(itertools.product(WRITERS, (0, 256), (1, 2)))


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


def test_small_chunks_really_split(texts):
    # The hostile events lie past the first 64 KiB, where chunk_size=256 cuts them into
    # dozens of chunks; the fake boundaries inside their strings must have sent the
    # loader to its exact scanner (once).
    for layout, text in texts.items():
        start = text.index(b"ProfilerStep#3")
        assert start > 65536 and len(text) - start > 40 * 256, layout
        assert hta_fast.load(text, chunk_size=256, threads=2).stat("speculative_split_retry") == 1


def test_many_chunk_sizes(texts):
    # Chunk sizes that put the speculative cut at every kind of place: the events table
    # must not change.
    for layout, text in texts.items():
        ref = hta_fast.load(text, threads=1).events
        for chunk_size in range(64, 1200, 53):
            got = hta_fast.load(text, chunk_size=chunk_size, threads=1 + chunk_size % 2).events
            assert got.equals(ref), (layout, chunk_size)


def plain_events(n):
    return [
        {"ph": "X", "name": f"op{i}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(n)
    ]


@pytest.mark.parametrize("layout", list(WRITERS))
@pytest.mark.parametrize("chunk_size", [0, 256, 4096])
def test_plain_trace_needs_no_retry(layout, chunk_size):
    # No string or nested value that looks like a boundary: the fast split must hold.
    events = plain_events(2000)
    if layout == "bare":
        text = write_bare(events)
    else:
        header = {
            "traceName": "x",
            "baseTimeNanoseconds": BASE,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
        }
        if layout == "native":
            text = (
                '\n{\n  "schemaVersion": 1,\n  "traceEvents": [\n'
                + ",\n".join("  " + dumps(e) for e in events)
                + "\n],\n"
                + dumps(header)[1:]
            )
        else:
            text = dumps(
                {"traceEvents": events, **header},
                **({"indent": 2} if layout == "indent" else {"separators": (",", ":")}),
            )
    t = hta_fast.load(text.encode(), chunk_size=chunk_size, threads=2)
    assert t.events["name"].to_pylist() == [f"op{i}" for i in range(2000)]
    assert t.stat("speculative_split_retry") == 0


@pytest.mark.parametrize("layout", ["native", "indent", "line"])
def test_header_array_after_events_needs_no_retry(layout):
    # Plain events, but the header after traceEvents holds arrays of objects (several
    # deviceProperties, as the brief's layout (a) has): `}, {` after the array's `]` is
    # no event boundary, and must not make the loader parse the whole file twice.
    events = plain_events(2000)
    text = WRITERS[layout](events).encode()
    t = hta_fast.load(text, threads=2)
    assert t.events["name"].to_pylist() == [f"op{i}" for i in range(2000)]
    assert t.meta.header["deviceProperties"] == DEVICE_PROPERTIES
    assert t.stat("speculative_split_retry") == 0, "the whole file was read twice"


def test_compressed_and_path_give_same_result(texts, tmp_path):
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    plain = tmp_path / "t.json"
    plain.write_bytes(text)
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(text, compresslevel=9))
    for src in (plain, str(plain), gz, gz.read_bytes()):
        label = "gz bytes" if isinstance(src, bytes) else src
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref, (label, c)
    assert hta_fast.load(plain).meta.path == str(plain)
    # concatenated gzip members are one stream
    half = len(text) // 2
    two = gzip.compress(text[:half]) + gzip.compress(text[half:])
    assert canonical(hta_fast.load(two, chunk_size=256), "native") == ref


@pytest.mark.parametrize("isize", [0, 17, 1 << 31, (1 << 32) - 1])
def test_gzip_trailer_sizes_the_output_only(texts, tmp_path, isize):
    # The loader sizes its columns from the gzip trailer's ISIZE (the inflated size modulo
    # 2^32); a wrong, wrapped or forged one changes how much is reserved, never what loads.
    # A reader that checks ISIZE (zlib's does) may refuse the stream instead, clearly.
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    data = bytearray(gzip.compress(text))
    data[-4:] = isize.to_bytes(4, "little")
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(bytes(data))
    try:
        got = hta_fast.load(gz, threads=1)
    except hta_fast.TraceFormatError as e:
        assert "corrupt" in str(e) or "checksum" in str(e) or "length" in str(e), str(e)
        return
    assert canonical(got, "native") == ref


def test_zstd_gives_same_result(texts, tmp_path):
    zstandard = pytest.importorskip("zstandard", reason="the zstandard module is not installed")
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    data = zstandard.ZstdCompressor(level=3).compress(text)
    p = tmp_path / "t.json.zst"
    p.write_bytes(data)
    for src in (p, data):
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref


def test_zstd_cli_gives_same_result(texts, tmp_path):
    # The same check through the zstd command-line tool, where the module is missing.
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd command-line tool")
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    src = tmp_path / "t.json"
    src.write_bytes(text)
    subprocess.run([zstd, "-q", "-19", str(src), "-o", str(tmp_path / "t.json.zst")], check=True)
    data = (tmp_path / "t.json.zst").read_bytes()
    assert data[:4] == b"\x28\xb5\x2f\xfd"
    for src in (tmp_path / "t.json.zst", data):
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref


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


def test_bytes_like_sources_agree(texts):
    text = texts["line"]
    ref = canonical(hta_fast.load(text), "line")
    assert canonical(hta_fast.load(bytearray(text)), "line") == ref
    assert canonical(hta_fast.load(memoryview(text)), "line") == ref
