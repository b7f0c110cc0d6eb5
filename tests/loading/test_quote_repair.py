"""Names with unescaped quotes (Kineto before 2026 wrote names as they came): not JSON, so
the load fails and says recover reads it; with recover every inner quote is escaped, the
names come out as the escaped file's (the 2026 layout) and each repaired offset is counted.
Valid JSON is never touched."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.errors import ErrorCode, TraceFormatError
from hta_fast.loading.quote_repair import INNER, json_text, repair_quotes

NAMES = ['call f("a", "b") now', 'say "hi" ok', '"quoted" first', 'ends "here"', "plain"]


def trace_text(names: list[str], indent=None) -> bytes:
    """One CPU op per name, as Kineto writes them (name escaped: the 2026 layout)."""
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": n,
            "pid": 1,
            "tid": 1,
            "ts": 10 * i,
            "dur": 5,
            "args": {"External id": i, "Input type": ['"x"', "float"]},
        }
        for i, n in enumerate(names)
    ]
    return json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=indent).encode()


def unescaped(text: bytes, names: list[str]) -> bytes:
    """The same file as older Kineto wrote it: each name's quotes not escaped."""
    for n in names:
        text = text.replace(json.dumps(n).encode(), b'"' + n.encode() + b'"')
    return text


def names_of(trace: hta_fast.Trace) -> list[str]:
    return trace.names_at(trace.column("events", "name"))


@pytest.mark.parametrize("indent", [None, 1])
@pytest.mark.parametrize("compress", [False, True])
def test_old_names_fail_clearly_and_recover_exactly(tmp_path, indent, compress):
    escaped = trace_text(NAMES, indent)
    old = unescaped(escaped, NAMES)
    with pytest.raises(json.JSONDecodeError):
        json.loads(old)
    path = tmp_path / ("old.json.gz" if compress else "old.json")
    path.write_bytes(gzip.compress(old) if compress else old)
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(path)
    first = old.index(b'f("') + 2  # the first inner quote
    assert e.value.offset == first and e.value.recoverable and e.value.code == ErrorCode.bad_json
    assert "unescaped quote inside a string" in str(e.value) and "recover=True" in str(e.value)
    trace = hta_fast.load(path, recover=True)
    assert names_of(trace) == names_of(hta_fast.load(escaped)) == NAMES
    inner = sum(n.count('"') for n in NAMES)
    assert trace.stat("repaired_quote") == inner
    stat = trace.stats.to_pandas().set_index("name").loc["repaired_quote"]
    assert stat.severity == "warning"
    assert [x["offset"] for x in stat.examples][:2] == [first, first + 2]
    assert all(old[x["offset"] : x["offset"] + 1] == b'"' for x in stat.examples)


def test_the_2026_layout_loads_without_repair():
    trace = hta_fast.load(trace_text(NAMES))
    assert names_of(trace) == NAMES
    assert "repaired_quote" not in trace.stats.to_pandas().name.tolist()


def test_other_damage_keeps_the_parsers_error(tmp_path):
    broken = unescaped(trace_text(NAMES), NAMES).replace(b'"ph"', b'"ph" "', 1)
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(broken, recover=True)
    assert "unescaped quote" not in str(e.value)  # the repair did not make it JSON
    not_quotes = trace_text(["plain"]).replace(b'"dur"', b"dur", 1)
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(not_quotes)
    assert "unescaped quote" not in str(e.value)


# Names of letters, digits, spaces, quotes and brackets: every inner quote is found.
NAME = st.text(alphabet="ab Z09()'\"._-", min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(NAME, min_size=1, max_size=6))
def test_repair_recovers_any_such_names(names):
    escaped = trace_text(names)
    old = unescaped(escaped, names)
    repaired, offsets = repair_quotes(old)
    assert json.loads(repaired) == json.loads(escaped)
    assert len(offsets) == sum(n.count('"') for n in names)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from([None, 1]))
def test_valid_json_is_never_touched(value, indent):
    text = json.dumps({"traceEvents": [value]}, indent=indent).encode()
    assert INNER.search(text) is None
    assert repair_quotes(text) == (text, [])


def test_a_damaged_stream_has_no_text_to_repair():
    """A compressed stream that does not decompress whole gives no text (the parser's error
    then stands: tests/loading/test_fuzz.py's mutants), never the decompressor's exception."""
    import bz2
    import lzma

    text = unescaped(trace_text(NAMES), NAMES)
    for compress in (gzip.compress, bz2.compress, lzma.compress):
        packed = compress(text)
        assert json_text(packed) == text
        damaged = packed[: len(packed) // 2] + bytes(64) + packed[len(packed) // 2 + 64 :]
        assert json_text(damaged) is None
        assert json_text(packed[:-9]) is None  # cut short
