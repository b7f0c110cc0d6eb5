"""Bad fields in events and a bad base time: strict raises TraceFormatError naming the event
and the key, at the event's byte offset; recover=True skips exactly the bad event (or reads
a bad argument as missing) and counts it."""

from __future__ import annotations

import json

import pytest

import hta_fast
from hta_fast import TraceFormatError
from hta_fast.errors import ErrorCode
from tests.support.bad_input import CONFIGS, Doc, ev_text, examples, load_error

# --- bad fields: strict names the event and the key, recover skips exactly it ------------
BAD_FIELDS = [
    {"ts": "abc"},
    {"ts": {}},
    {"ts": True},
    {"ts": [1]},
    {"dur": [1]},
    {"dur": "1.5.5"},
    {"pid": {}},
    {"tid": [1]},
    {"name": 5},
    {"cat": {}},
    {"args": 5},
]
# Integers beyond int64 (written as text: json.dumps would keep them exact anyway).
BIG_NUMBERS = [
    '"ts": 99999999999999999999999',
    '"ts": 9223372036854775.808',  # one ns past int64
    '"ts": -9223372036854775.809',
    '"ts": 1e300',
    '"dur": 18446744073709551616',
    '"pid": 9223372036854775808',
]
# Bad arguments: strict names args.<key>; recover reads the argument as missing and keeps
# the event (a memcpy without its byte count is still on the GPU timeline).
BAD_ARGS = [
    {"args": {"correlation": "x"}},
    {"args": {"correlation": 1.5}},
    {"args": {"External id": {}}},
    {"args": {"device": 99999999999}},
    {"args": {"grid": [1, "x", 3]}},
    '"args": {"correlation": 18446744073709551616}',
    '"args": {"correlation": 9223372036854775808}',
    '"args": {"External id": -9223372036854775809}',
    '"args": {"bytes": 1e30}',
    '"args": {"bytes": 100000000000000000000000}',
]


def bad_event_text(bad) -> str:
    if isinstance(bad, str):
        base = ev_text(999)
        key = bad.split(":")[0].strip().strip('"')
        e = json.loads(base)
        e.pop(key, None)
        return json.dumps(e, separators=(",", ":"))[:-1] + "," + bad + "}"
    return ev_text(999, **bad)


def bad_key(bad) -> str:
    """The key an error about `bad` names: "ts", or "args.bytes" for an argument."""
    text = bad if isinstance(bad, str) else json.dumps(bad)
    outer = json.loads("{" + text + "}") if isinstance(bad, str) else bad
    ((key, value),) = outer.items()
    return f"args.{next(iter(value))}" if key == "args" and isinstance(value, dict) else key


def bad_doc(bad, position) -> tuple[Doc, int, int]:
    n = 1200  # > 64 KiB, so the small chunks really cut the file
    k = {"first": 0, "middle": 700, "last": n - 1}[position]
    events = [ev_text(i).encode() for i in range(n)]
    events[k] = bad_event_text(bad).encode()
    json.loads(b"[" + b",".join(events) + b"]")  # still valid JSON
    return Doc(events), n, k


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("bad", BAD_FIELDS + BIG_NUMBERS, ids=repr)
def test_bad_field(bad, position):
    doc, n, k = bad_doc(bad, position)
    for c in CONFIGS:
        e = load_error(doc.text, **c)
        assert e.offset == doc.starts[k], (c, e)
        assert e.code is ErrorCode.bad_field and e.recoverable
        assert e.key == bad_key(bad) and f'bad event: key "{e.key}"' in e.reason, e
        t = hta_fast.load(doc.text, recover=True, **c)
        names = t.events["name"].to_pylist()
        assert names == [f"op{i}" for i in range(n) if i != k], c
        assert t.stat("bad_field") == 1 and t.stat("bad_arg") == 0
        ex = examples(t, "bad_field")
        assert [x["offset"] for x in ex] == [doc.starts[k]]
        assert ex[0]["text"].startswith('{"ph":"X"')


@pytest.mark.parametrize("position", ["first", "last"])
@pytest.mark.parametrize("bad", BAD_ARGS, ids=repr)
def test_bad_argument(bad, position):
    doc, n, k = bad_doc(bad, position)
    key = bad_key(bad)
    for c in CONFIGS:
        e = load_error(doc.text, **c)
        assert e.offset == doc.starts[k], (c, e)
        assert e.code is ErrorCode.bad_field and e.recoverable
        assert e.key == key and f'bad event: key "{key}"' in e.reason, e
        t = hta_fast.load(doc.text, recover=True, **c)
        names = [f"op{i}" if i != k else "op999" for i in range(n)]
        assert t.events["name"].to_pylist() == names, c
        assert t.stat("bad_arg") == 1 and t.stat("bad_field") == 0
        ex = examples(t, "bad_arg")
        assert [x["offset"] for x in ex] == [doc.starts[k]]
        assert ex[0]["text"] == doc.events[k].decode()[:80]
        column = {"External id": "external_id"}.get(key[5:], key[5:])
        if column in t.events.column_names:
            assert t.events[column][k].as_py() is None


def test_bad_memcpy_bytes_keeps_the_copy():
    # the memcpy stays on the GPU timeline, linked to its launch; only its size is unknown
    launch = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaMemcpyAsync",
        "pid": 1,
        "tid": 1,
        "ts": 1,
        "dur": 2,
        "args": {"correlation": 7},
    }
    copy = (
        '{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":7,"ts":5,'
        '"dur":3,"args":{"device":0,"stream":7,"correlation":7,"bytes":1e30}}'
    )
    doc = Doc([json.dumps(launch).encode(), copy.encode()])
    e = load_error(doc.text)
    assert e.key == "args.bytes" and e.offset == doc.starts[1]
    t = hta_fast.load(doc.text, recover=True)
    ev = t.events.to_pydict()
    assert ev["name"] == ["cudaMemcpyAsync", "Memcpy HtoD"]
    assert ev["partner"] == [1, 0] and ev["stream"][1] == 7
    assert t.kernel_args["bytes"].to_pylist() == [None]
    assert t.stat("bad_arg") == 1


@pytest.mark.parametrize(
    "event",
    [
        {"ph": "s", "id": {}, "pid": 1, "tid": 1, "ts": 5, "cat": "ac2g", "name": "x"},
        {"ph": "C", "name": "c", "pid": 1, "tid": 1, "ts": "abc", "args": {"a": 1}},
        {"ph": "M", "name": "process_name", "pid": [], "tid": 0, "args": {"name": "x"}},
        {"ph": "i", "name": "i", "pid": 1, "tid": 1, "ts": {}, "s": "t"},
        {"ph": ["X"], "name": "i", "pid": 1, "tid": 1, "ts": 1},
    ],
)
def test_bad_field_in_other_phases(event):
    events = [ev_text(0).encode(), json.dumps(event).encode(), ev_text(2).encode()]
    doc = Doc(events)
    e = load_error(doc.text)
    assert e.offset == doc.starts[1]
    bad = [
        k for k, v in event.items() if k != "args" and (isinstance(v, (dict, list)) or v == "abc")
    ]
    assert [e.key] == bad and f'key "{e.key}"' in e.reason
    t = hta_fast.load(doc.text, recover=True)
    assert t.events["name"].to_pylist() == ["op0", "op2"]
    assert t.stat("bad_field") == 1
    assert len(t.flows) == len(t.counters) == len(t.meta_events) == len(t.instants) == 0


def test_bad_fields_counted_one_per_event():
    bad = [ev_text(i, ts="x").encode() for i in range(5)]
    doc = Doc([ev_text(100).encode()] + bad + [ev_text(101).encode()])
    t = hta_fast.load(doc.text, recover=True)
    assert t.events["name"].to_pylist() == ["op100", "op101"]
    assert t.stat("bad_field") == 5
    ex = examples(t, "bad_field")
    assert [x["offset"] for x in ex] == doc.starts[1:4]  # the first three kept


def test_int64_limits_are_accepted():
    doc = Doc(
        [
            b'{"ph":"X","name":"max","pid":1,"tid":1,"ts":9223372036854775.807,"dur":0,'
            b'"args":{"correlation":9223372036854775807}}',
            b'{"ph":"X","name":"min","pid":1,"tid":1,"ts":-9223372036854775.808,"dur":0}',
        ]
    )
    t = hta_fast.load(doc.text)
    assert t.events["ts"].to_pylist() == [2**63 - 1, -(2**63)]
    assert t.events["correlation"].to_pylist() == [2**63 - 1, None]


# --- base time ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "base",
    [
        b'"abc"',
        b"{}",
        b"[1]",
        b"null",
        b"true",
        b"1e30",
        b"18446744073709551615",
        b"18446744073709551616",
        b"99999999999999999999999999",
    ],
)
def test_bad_base_time(base):
    # not an int64: raise rather than silently use 0 (or a wrapped value) as the base
    text = b'{"traceEvents":[' + ev_text(1).encode() + b'],"baseTimeNanoseconds":' + base + b"}"
    e = load_error(text)
    assert "baseTimeNanoseconds" in e.reason


def test_base_time_plus_ts_beyond_int64():
    # 9e18 ns of relative time + a 1.7e18 base does not fit int64: the absolute ts must
    # not wrap to a negative number.
    text = (
        b'{"traceEvents":['
        + ev_text(1).encode()
        + b","
        + b'{"ph":"X","name":"far","pid":1,"tid":1,"ts":9000000000000000,"dur":1}'
        b'],"baseTimeNanoseconds":1700000000000000000}'
    )
    with pytest.raises(TraceFormatError):
        hta_fast.load(text)
    try:
        t = hta_fast.load(text, recover=True)
    except TraceFormatError:
        return
    assert t.events["name"].to_pylist() == ["op1"]
    assert t.stat("bad_field") == 1
