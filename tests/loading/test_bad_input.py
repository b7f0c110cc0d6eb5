"""Broken input: every case raises TraceFormatError (strict) with a useful reason and, where
one is meaningful, the byte offset computed here from the text; recover=True keeps exactly
what can be kept and counts what it dropped."""

from __future__ import annotations

import gzip
import json
import os
import random

import pytest

import hta_fast
from hta_fast import TraceFormatError
from hta_fast.errors import ErrorCode

CONFIGS = [
    dict(chunk_size=0, threads=1),
    dict(chunk_size=0, threads=2),
    dict(chunk_size=256, threads=1),
    dict(chunk_size=256, threads=2),
]


def ev_text(i, **extra):
    """One plain complete event as compact JSON text."""
    e = {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
    e.update(extra)
    return json.dumps(e, separators=(",", ":"))


class Doc:
    """A trace assembled from event texts, remembering where each event starts and ends."""

    def __init__(
        self,
        events: list[bytes],
        head=b'{"schemaVersion":1,"traceEvents":[',
        tail=b'],"traceName":"x"}',
        sep=b",\n  ",
    ):
        self.events = events
        parts, self.starts, self.ends = [head], [], []
        pos = len(head)
        for k, e in enumerate(events):
            if k:
                parts.append(sep)
                pos += len(sep)
            self.starts.append(pos)
            parts.append(e)
            pos += len(e)
            self.ends.append(pos)
        self.array_end = pos
        parts.append(tail)
        self.text = b"".join(parts)


def examples(t, stat: str) -> list[dict]:
    rows = t.stats.to_pylist()
    return next(r["examples"] for r in rows if r["name"] == stat)


def load_error(source, **kw) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as ei:
        hta_fast.load(source, **kw)
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.reason and str(e.reason) in str(e)
    return e


# --- not a trace at all ---------------------------------------------------------------
def test_empty_file(tmp_path):
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    for src in (p, b""):
        e = load_error(src)
        assert e.offset == 0
        assert "empty" in e.reason
    assert load_error(p).path == str(p)
    assert str(p) in str(load_error(p))


@pytest.mark.parametrize("text", [b" ", b"\n\n  \t\r\n", b" " * 70000])
def test_whitespace_only(text):
    e = load_error(text)
    # the file holds no JSON value: say so (not "ends inside the trace header")
    assert "empty" in e.reason or "no JSON" in e.reason, e.reason
    assert e.offset in (0, len(text))


@pytest.mark.parametrize(
    "text,offset",
    [
        (b"hello", 0),
        (b"\n  hello", 3),
        (b"nul", 0),
        (b"<html>", 0),
        (b"\xff", 0),
        (b"\x89PNG\r\n", 0),
        (b"  \xe9t\xe9", 2),
        (b"\x00\x00\x00", 0),
    ],
)
def test_not_json(text, offset):
    # binary or non-ASCII first bytes too: the reason must still be a readable str
    e = load_error(text)
    assert e.offset == offset
    assert "JSON" in e.reason


def test_utf8_byte_order_mark():
    # some Windows tools write a BOM: load the trace, or refuse it with TraceFormatError
    text = b"\xef\xbb\xbf" + b'{"traceEvents":[' + ev_text(0).encode() + b"]}"
    try:
        t = hta_fast.load(text)
    except TraceFormatError as e:
        assert e.offset == 0
        return
    assert t.events["name"].to_pylist() == ["op0"]


@pytest.mark.parametrize(
    "text,why",
    [
        (b'{"a": 1}', "traceEvents"),
        (b'{"a": {"traceEvents": []}}', "traceEvents"),  # not at the top level
        (b'{"a": "\\"traceEvents\\": ["}', "traceEvents"),  # only inside a string
        (b"{}", "traceEvents"),
        (b"[1,2,3]", "not a trace"),
        (b"[[1,2]]", "not a trace"),
        (b'["a", "b"]', "not a trace"),
        (b"[null]", "not a trace"),
        (b'"str"', "JSON trace"),
        (b"42", "JSON trace"),
        (b"null", "JSON trace"),
        (b"true", "JSON trace"),
    ],
)
def test_json_that_is_not_a_trace(text, why):
    e = load_error(text)
    assert why in e.reason, e.reason
    assert e.offset is None or 0 <= e.offset <= len(text)


@pytest.mark.parametrize("value", [b"5", b"{}", b'{"ph": "X"}', b'"x"', b"null", b"true"])
def test_trace_events_not_an_array(value):
    text = b'{"schemaVersion": 1, "traceEvents": ' + value + b', "traceName": "x"}'
    e = load_error(text)
    assert "traceEvents" in e.reason and "array" in e.reason and e.key == "traceEvents"
    assert e.offset == text.index(b"traceEvents") + len(b'traceEvents": ')


@pytest.mark.parametrize("cut", [1, 5, 20, 36])
def test_cut_inside_the_header_before_events(cut):
    text = b'{"schemaVersion": 1, "traceName": "x", "traceEvents": [' + ev_text(0).encode() + b"]}"
    assert cut < text.index(b"[")
    for recover in (False, True):
        e = load_error(text[:cut], recover=recover)
        assert e.offset == cut
        assert "header" in e.reason


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


# --- encoding -----------------------------------------------------------------------
@pytest.mark.parametrize("raw", [b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe6\xbc"])
@pytest.mark.parametrize("k", [0, 900])
def test_invalid_utf8_in_a_name(raw, k):
    n = 1000
    events = [ev_text(i).encode() for i in range(n)]
    events[k] = events[k].replace(f'"op{k}"'.encode(), b'"op' + raw + b'"')
    doc = Doc(events)
    bad_at = doc.text.index(raw)
    # recover=True reads each bad sequence as U+FFFD, as Python's errors="replace" does
    repaired = ("op" + raw.decode("utf-8", errors="replace"),)
    for c in CONFIGS:
        e = load_error(doc.text, **c)
        assert "UTF-8" in e.reason and e.code is ErrorCode.bad_json and e.recoverable
        # the offset must point into the event that holds the bad bytes, not at the start
        # of whatever chunk it fell in
        assert doc.starts[k] <= e.offset <= bad_at, (c, e.offset, doc.starts[k], bad_at)
        t = hta_fast.load(doc.text, recover=True, **c)
        names = t.events["name"].to_pylist()
        assert names == [f"op{i}" if i != k else repaired[0] for i in range(n)], c
        assert t.stat("invalid_utf8") == repaired[0].count("\ufffd") and t.stat("bad_field") == 0
        assert examples(t, "invalid_utf8")[0]["offset"] == bad_at, c
        assert examples(t, "invalid_utf8")[0]["text"].startswith("\ufffd")
        # every later offset is where it was: the repair shifts the text, not the offsets
        assert examples(t, "invalid_utf8")[-1]["offset"] < bad_at + len(raw)


def test_invalid_utf8_offsets_after_a_repair():
    # a bad field after the repaired bytes is still reported at its own offset
    events = [ev_text(0, name="a\udcff").encode(), ev_text(1, ts="x").encode()]
    text = Doc(events).text.replace(b"\\udcff", b"\xff")
    doc_starts = [text.index(b'{"ph"'), text.index(b'{"ph"', text.index(b'{"ph"') + 1)]
    t = hta_fast.load(text, recover=True, threads=1)
    assert t.events["name"].to_pylist() == ["a\ufffd"]
    assert [x["offset"] for x in examples(t, "bad_field")] == [doc_starts[1]]


def test_invalid_utf8_in_the_header():
    text = b'{"traceName":"r\xff","traceEvents":[' + ev_text(0).encode() + b"]}"
    e = load_error(text)
    assert e.code is ErrorCode.bad_json and e.key == "traceName" and e.recoverable
    assert "UTF-8" in e.reason and "traceName" in e.reason
    t = hta_fast.load(text, recover=True)
    assert t.meta.header["traceName"] == "r\ufffd" and t.stat("invalid_utf8") == 1


@pytest.mark.parametrize("name", [b'"\\ud800"', b'"a\\udc00b"', b'"\\x"', b'"\\u12"', b'"a\x01b"'])
def test_bad_strings_raise(name):
    doc = Doc(
        [ev_text(0).encode(), b'{"ph":"X","name":' + name + b',"pid":1,"tid":1,"ts":1,"dur":1}']
    )
    for recover in (False, True):
        try:
            t = hta_fast.load(doc.text, recover=recover)
        except TraceFormatError as e:
            assert doc.starts[0] <= e.offset <= doc.array_end
            continue
        # kept only if skipped as a bad field
        assert recover and t.events["name"].to_pylist() == ["op0"]


# --- the header: parsed once, by the core ---------------------------------------------
def header_doc(before: bytes = b"", after: bytes = b"") -> bytes:
    return b"{" + before + b'"traceEvents":[' + ev_text(0).encode() + b"]" + after + b"}"


@pytest.mark.parametrize("where", ["before", "after"])
def test_header_nested_too_deep(tmp_path, where):
    # one parse (the core's), with one depth limit: not a RecursionError in Python
    deep = b'"x":' + b"[" * 1000 + b"]" * 1000
    text = header_doc(before=deep + b",") if where == "before" else header_doc(after=b"," + deep)
    p = tmp_path / "deep.json"
    p.write_bytes(text)
    e = load_error(p)
    assert e.code is ErrorCode.too_deep and e.path == str(p) and str(p) in str(e)
    assert e.offset is None and "at byte" not in str(e)


def test_header_nested_within_the_limit():
    t = hta_fast.load(header_doc(after=b',"x":' + b"[" * 50 + b"]" * 50))
    assert t.events["name"].to_pylist() == ["op0"]


@pytest.mark.parametrize(
    "header",
    [
        (b'"baseTimeNanoseconds":5,', b',"baseTimeNanoseconds":"x"'),
        (b'"baseTimeNanoseconds":"x",', b',"baseTimeNanoseconds":5'),
        (b'"baseTimeNanoseconds":5,"baseTimeNanoseconds":[1],', b""),
    ],
)
def test_duplicated_header_key_with_a_wrong_type(tmp_path, header):
    # every occurrence is checked, whichever one a dict would keep
    p = tmp_path / "dup.json"
    p.write_bytes(header_doc(*header))
    e = load_error(p)
    assert e.code is ErrorCode.bad_field and "baseTimeNanoseconds" in e.reason
    assert str(p) in str(e) and e.offset is None


def test_duplicated_header_key_the_last_wins():
    # as in Python's json: the header dict and the base time added to ts agree
    t = hta_fast.load(header_doc(b'"baseTimeNanoseconds":5000,', b',"baseTimeNanoseconds":7000'))
    assert t.meta.header["baseTimeNanoseconds"] == 7000 == t.meta.base_time_ns
    assert t.events["ts"].to_pylist() == [7000]
    with pytest.warns(UserWarning, match="distributedInfo is 'x', not an object; ignored"):
        t = hta_fast.load(header_doc(b'"distributedInfo":{"rank":3},', b',"distributedInfo":"x"'))
    assert t.meta.header["distributedInfo"] == "x" and t.meta.rank is None


# --- error codes --------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,code",
    [
        (b"", ErrorCode.empty),
        (b"  \n", ErrorCode.empty),
        (b"hello", ErrorCode.not_json),
        (b"42", ErrorCode.not_json),
        (b'{"a": 1}', ErrorCode.not_a_trace),
        (b"[1, 2]", ErrorCode.not_a_trace),
        (b'{"traceEvents": 5}', ErrorCode.bad_field),
        (b'{"traceEvents":[' + ev_text(0).encode(), ErrorCode.truncated),
        (b'{"traceEvents":[' + ev_text(0, ts="x").encode() + b"]}", ErrorCode.bad_field),
        (b'{"traceEvents":[' + ev_text(0).encode() + b",,]}", ErrorCode.bad_json),
        (b'{"traceEvents":[]} x', ErrorCode.bad_json),
        (gzip.compress(b'{"traceEvents":[]}')[:-6], ErrorCode.truncated),
        (b"\x1f\x8b" + b"garbage" * 10, ErrorCode.corrupt_stream),
    ],
)
def test_error_codes(text, code):
    e = load_error(text)
    assert e.code is code, (e.code, e.reason)


@pytest.mark.parametrize(
    "text", [b'{"a": 1}', b"[1, 2]", b'{"traceEvents":[], "baseTimeNanoseconds": "x"}']
)
def test_unknown_offsets_are_none(text):
    # no single byte is to blame: no "at byte 0" in the message
    e = load_error(text)
    assert e.offset is None and "at byte" not in str(e)


# --- compressed input ---------------------------------------------------------------
@pytest.fixture(scope="module")
def gz_doc():
    doc = Doc([ev_text(i, name=f"op{i} }}, {{ x").encode() for i in range(3000)])
    return doc, gzip.compress(doc.text, compresslevel=9)


@pytest.mark.parametrize("where", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_corrupt_gzip(gz_doc, where, tmp_path):
    doc, gz = gz_doc
    rng = random.Random(int(where * 100))
    data = bytearray(gz)
    pos = int(len(gz) * where)
    for j in range(8):
        data[pos + j] ^= rng.randrange(1, 256)
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(data))
    for src in (bytes(data), p):
        for recover in (False, True):
            e = load_error(src, recover=recover)
            assert e.offset is not None
            # a compressed offset (the reason says so), or a JSON offset in the garbage
            if "compressed" in e.reason:
                assert pos <= e.offset <= len(gz), e
            else:
                assert 0 <= e.offset <= len(doc.text)


@pytest.mark.parametrize("cut", [2, 10, 11, 100, 0.5, -9, -8, -4, -1])
def test_gzip_cut_short(gz_doc, cut):
    doc, gz = gz_doc
    n = int(len(gz) * cut) if isinstance(cut, float) else (cut if cut > 0 else len(gz) + cut)
    e = load_error(gz[:n])
    assert "gzip" in e.reason
    assert e.offset == n


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.9])
def test_gzip_cut_short_recover(gz_doc, cut):
    # A .json.gz written while the profiler died is the usual truncated trace: recover=True
    # keeps the complete events that did decompress (as for a cut plain file).
    doc, gz = gz_doc
    n = int(len(gz) * cut)
    t = hta_fast.load(gz[:n], recover=True)
    names = t.events["name"].to_pylist()
    assert 0 < len(names) < len(doc.events)
    assert names == [f"op{i} }}, {{ x" for i in range(len(names))]
    assert t.stat("truncated_tail_bytes") > 0


def test_not_gzip_after_magic():
    e = load_error(b"\x1f\x8b" + b"garbage" * 10)
    assert "gzip" in e.reason or "compressed" in e.reason


def test_zstd_garbage_after_magic():
    e = load_error(b"\x28\xb5\x2f\xfd" + b"garbage" * 10)
    assert "zstd" in e.reason or "compressed" in e.reason


# --- truncation ---------------------------------------------------------------------
HOSTILE = ["}, {", '},{"ph":"X"', 'q"uote', "back\\slash\\", "é漢 😀", "] [", "\\u00e9"]


@pytest.fixture(scope="module", params=["compact", "native"])
def trunc_doc(request):
    rng = random.Random(7)
    events = []
    for i in range(900):
        name = f"op{i}" + (rng.choice(HOSTILE) if i % 3 == 0 else "")
        e = {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": round(i + 0.123, 3),
            "dur": 1,
            "args": {"External id": i, "x": [{"a": i}, {"b": "}, {"}]},
        }
        if request.param == "compact":
            events.append(json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode())
        else:
            events.append(
                ("  " + json.dumps(e, indent=4, ensure_ascii=False).replace("\n", "\n  ")).encode()
            )
    if request.param == "compact":
        return Doc(events)
    return Doc(
        events,
        head=b'\n{\n  "schemaVersion": 1,\n  "traceEvents": [\n',
        tail=b'\n],\n  "traceName": "x",\n  "baseTimeNanoseconds": 1000\n}',
        sep=b",\n",
    )


def cut_positions(doc, rng, n_random=80):
    cuts = set()
    first = doc.starts[0]
    for k in (0, 1, 2, 300, 451, 899):
        s, e = doc.starts[k], doc.ends[k]
        cuts.update({s, s + 1, e - 1, e, e + 1, e + 2})  # around the braces and the comma
    cuts.update(rng.randrange(first, doc.array_end) for _ in range(n_random))
    for needle in (b"\\", b"}, {", b"\xc3", b"\xe6", b'\\"'):  # inside escapes and UTF-8
        at = doc.text.find(needle, 70000)
        if at > 0:
            cuts.update({at + 1, at + 2})
    return sorted(c for c in cuts if first <= c < doc.array_end)


def test_truncated_trace(trunc_doc):
    doc = trunc_doc
    rng = random.Random(11)
    parsed = [json.loads(e) for e in doc.events]
    for cut in cut_positions(doc, rng):
        text = doc.text[:cut]
        for c in (CONFIGS[0], CONFIGS[3]):
            e = load_error(text, **c)
            assert e.offset == cut, (cut, c, e)
            assert "recover=True" in e.reason
            t = hta_fast.load(text, recover=True, **c)
            complete = [p for p, end in zip(parsed, doc.ends) if end <= cut]
            got = t.events.to_pydict()
            assert got["name"] == [p["name"] for p in complete], (cut, c)
            assert got["external_id"] == [p["args"]["External id"] for p in complete]
            assert t.stat("truncated_file") == 1, (cut, "truncation left no trace in stats")
            array_open = doc.text.index(b"[", doc.text.index(b'"traceEvents"')) + 1
            kept_end = max([end for end in doc.ends if end <= cut], default=array_open)
            assert t.stat("truncated_tail_bytes") == cut - kept_end, cut
            assert t.stat("bad_field") == 0


def test_truncated_trace_timestamps(trunc_doc):
    doc = trunc_doc
    cut = doc.starts[600] + 10
    t = hta_fast.load(doc.text[:cut], recover=True, chunk_size=256)
    # the header after the array is lost with the tail: no base time
    assert t.events["ts"].to_pylist() == [i * 1000 + 123 for i in range(600)]
    assert t.stat("truncated_tail_bytes") == cut - doc.ends[599]


def test_truncated_bare_array():
    doc = Doc([ev_text(i).encode() for i in range(2000)], head=b"[", tail=b"]")
    for cut in (doc.starts[1500] + 5, doc.ends[1999] - 1, doc.starts[3]):
        e = load_error(doc.text[:cut])
        assert e.offset == cut
        t = hta_fast.load(doc.text[:cut], recover=True, chunk_size=256, threads=2)
        assert t.events["name"].to_pylist() == [f"op{i}" for i in range(2000) if doc.ends[i] <= cut]


def test_cut_after_the_events_array():
    doc = Doc(
        [ev_text(i).encode() for i in range(3)],
        tail=b'], "deviceProperties": [{"id": 0}, {"id": 1}], "baseTimeNanoseconds": 5}',
    )
    for cut in range(doc.array_end + 1, len(doc.text)):
        e = load_error(doc.text[:cut])
        assert e.offset == cut
        try:
            t = hta_fast.load(doc.text[:cut], recover=True)
        except TraceFormatError:
            continue
        assert t.events["name"].to_pylist() == ["op0", "op1", "op2"]


# --- trailing content ---------------------------------------------------------------
@pytest.mark.parametrize(
    "tail", [b" x", b"\n{}", b"]", b"}", b"\x00\x00", b",", b"\n\n[]", b' {"traceEvents": []}']
)
@pytest.mark.parametrize("bare", [False, True])
def test_trailing_garbage(tail, bare):
    body = (
        (b"[" + ev_text(0).encode() + b"]")
        if bare
        else (b'{"traceEvents":[' + ev_text(0).encode() + b'],"traceName":"x"}')
    )
    e = load_error(body + tail)
    assert e.offset == len(body) + len(tail) - len(tail.lstrip(b" \n"))
    assert "after the end" in e.reason


@pytest.mark.parametrize("tail", [b"\n", b"  \r\n\t ", b"\n" * 70000])
def test_trailing_whitespace_is_fine(tail):
    body = b'{"traceEvents":[' + ev_text(0).encode() + b'],"traceName":"x"}'
    assert hta_fast.load(body + tail).events["name"].to_pylist() == ["op0"]
    assert hta_fast.load(b"[" + ev_text(0).encode() + b"]" + tail).events["name"].to_pylist() == [
        "op0"
    ]


def test_trailing_garbage_after_large_trace():
    doc = Doc([ev_text(i).encode() for i in range(3000)])
    for c in CONFIGS:
        e = load_error(doc.text + b"garbage", **c)
        assert e.offset == len(doc.text)


def test_malformed_header_after_events():
    for tail in (b'], "x": }', b'], "x" 1}', b'], "x": [1, }'):
        text = b'{"traceEvents":[' + ev_text(0).encode() + tail
        with pytest.raises(TraceFormatError):
            hta_fast.load(text)


def test_structural_error_inside_events():
    events = [ev_text(i).encode() for i in range(1500)]
    events[1200] = events[1200].replace(b'"dur":1', b'"dur":1,,')
    doc = Doc(events)
    for c in CONFIGS:
        for recover in (False, True):
            e = load_error(doc.text, recover=recover, **c)
            assert e.offset <= doc.ends[1200] + 1


@pytest.mark.parametrize(
    "broken",
    [
        b'"ts":} 5, "cat": "x"}',  # a stray '}' where a value should be
        b'"ts": 5, "cat": "x"}}',  # one '}' too many
        b'"ts": 5, "cat": ["x"}',  # '[' closed by '}'
        b'"ts": 5 "cat": "x"}',  # a missing comma
        b'"ts": 5, "cat" "x"}',  # a missing colon
    ],
)
def test_syntax_error_inside_an_event_same_for_every_chunk_size(broken):
    # Invalid JSON in one event past the first 64 KiB: whatever the loader decides (raise,
    # or with recover=True perhaps skip the event), the chunk size must not change it.
    events = [ev_text(i).encode() for i in range(1400)]
    events[1000] = b'{"ph": "X", "name": "broken", "pid": 1, "tid": 1, ' + broken
    doc = Doc(events)
    assert doc.starts[1000] > 65536
    for recover in (False, True):
        outcomes = {}
        for c in CONFIGS + [dict(chunk_size=4096, threads=1), dict(chunk_size=64, threads=2)]:
            try:
                t = hta_fast.load(doc.text, recover=recover, **c)
                names = t.events["name"].to_pylist()
                outcomes[str(c)] = (
                    "ok",
                    f"{len(names)} events",
                    "broken" in names,
                    f"bad_field={t.stat('bad_field')}",
                    hash(tuple(names)),
                )
            except TraceFormatError as e:
                assert doc.starts[1000] <= e.offset <= doc.ends[1000], (c, e)
                outcomes[str(c)] = ("error",)
        assert len(set(map(repr, outcomes.values()))) == 1, (recover, outcomes)
        if not recover:
            assert next(iter(outcomes.values())) == ("error",)


# --- paths --------------------------------------------------------------------------
def test_nonexistent_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        hta_fast.load(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError):
        hta_fast.load(str(tmp_path / "nope.json.gz"))


def test_directory(tmp_path):
    with pytest.raises((OSError, TraceFormatError)) as ei:
        hta_fast.load(tmp_path)
    assert str(tmp_path) in str(ei.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(b"[" + ev_text(0).encode() + b"]")
    p.chmod(0)
    with pytest.raises(PermissionError):
        hta_fast.load(p)
