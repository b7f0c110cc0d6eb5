"""Compressed, cut and trailing input: corrupt or short gzip and zstd streams, a trace cut at
any byte (strict says where; recover=True keeps what came before it), and content after the
trace."""

from __future__ import annotations

import gzip
import json
import random

import pytest

import hta_fast
from hta_fast import TraceFormatError
from tests.support.bad_input import CONFIGS, Doc, ev_text, load_error


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
