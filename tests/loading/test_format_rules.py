"""The loader's format rules (docs/format.md), one test per rule.

Numbers follow JSON's grammar, in strict and recover mode alike (a non-JSON spelling is a
bad value); ph is exactly one character, escaped or not; a duplicated key in an event or
the header keeps its last value, but a second traceEvents is an error; the examples kept
in Trace.stats are the input's own bytes at their offsets.
"""

from __future__ import annotations

import json

import pytest

import hta_fast
from hta_fast import TraceFormatError
from hta_fast.errors import ErrorCode

CONFIGS = [
    dict(chunk_size=0, threads=1),
    dict(chunk_size=256, threads=1),
    dict(chunk_size=256, threads=2),
]


def event(**fields) -> str:
    e = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    e.update(fields)
    return json.dumps(e, separators=(",", ":"))


def trace(*events: str) -> bytes:
    return ('{"traceEvents":[' + ",".join(events) + "]}").encode()


def with_raw(key: str, raw: str, args: bool = False) -> str:
    """An event whose `key` (in args when `args`) holds the raw JSON text `raw`."""
    if args:
        return event()[:-1] + ',"args":{"' + key + '":' + raw + "}}"
    text = event()
    e = json.loads(text)
    del e[key]
    return json.dumps(e, separators=(",", ":"))[:-1] + ',"' + key + '":' + raw + "}"


# --- numbers: JSON's grammar ----------------------------------------------------------------
NOT_JSON = ["01", "-01", "00", "1.", ".5", "-.5", "+1", "1e", "1e+", "--1", "0x10", "nan"]
JSON_NUMBERS = {
    "0": 0,
    "-0": 0,
    "1.5": 1500,
    "1e3": 1_000_000,
    "1E-3": 1,
    "0.0005": 1,
    "10": 10_000,
}


@pytest.mark.parametrize("raw", NOT_JSON + [f'"{x}"' for x in NOT_JSON[:7]])
@pytest.mark.parametrize("key", ["ts", "dur"])
def test_non_json_numbers_are_bad_values(key, raw):
    text = trace(event(name="a"), with_raw(key, raw), event(name="c"))
    for c in CONFIGS:
        with pytest.raises(TraceFormatError) as e:
            hta_fast.load(text, **c)
        assert e.value.key == key and e.value.code is ErrorCode.bad_field
        t = hta_fast.load(text, recover=True, **c)
        assert t.events["name"].to_pylist() == ["a", "c"] and t.stat("bad_field") == 1


@pytest.mark.parametrize("raw,ns", JSON_NUMBERS.items())
def test_json_numbers_are_read_exactly(raw, ns):
    for spelled in (raw, f'"{raw}"'):  # a numeric string holds a JSON number too
        t = hta_fast.load(trace(with_raw("ts", spelled)))
        assert t.events["ts"].to_pylist() == [ns], spelled


@pytest.mark.parametrize("raw", ["01", "1.", "+5", ".5"])
def test_non_json_numbers_in_arguments(raw):
    text = trace(with_raw("correlation", raw, args=True))
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(text)
    assert e.value.key == "args.correlation"
    t = hta_fast.load(text, recover=True)
    assert t.events["correlation"].to_pylist() == [None] and t.stat("bad_arg") == 1


@pytest.mark.parametrize("raw", ["01", "nan", "+1", "1."])
def test_non_json_numbers_in_counters_are_not_numbers(raw):
    text = trace('{"ph":"C","name":"c","pid":1,"ts":1,"args":{"a":1,"b":' + raw + "}}")
    t = hta_fast.load(text)
    assert t.counters["series"].to_pylist() == ["a"] and t.stat("counter_non_numeric") == 1


# --- ph: exactly one character, escaped or not ----------------------------------------------
@pytest.mark.parametrize(
    "raw", ['"XX"', '""', '"X "', "88", '"\\u0058\\u0058"', '"é"', '"\\u0000"', '"\\n"']
)
def test_ph_of_other_lengths_is_a_bad_value(raw):
    text = trace(event(name="a"), with_raw("ph", raw))
    with pytest.raises(TraceFormatError) as e:
        hta_fast.load(text)
    assert e.value.key == "ph" and 'key "ph"' in e.value.reason
    t = hta_fast.load(text, recover=True)
    assert t.events["name"].to_pylist() == ["a"] and t.stat("bad_field") == 1


@pytest.mark.parametrize("raw", ['"\\u0058"', '"\\u0058" ', '"X"'])
def test_escaped_ph_reads_as_its_letter(raw):
    t = hta_fast.load(trace(with_raw("ph", raw)))
    assert t.events["name"].to_pylist() == ["op"] and t.stat("unsupported_phase") == 0


def test_escaped_unknown_phase_is_unsupported_not_bad():
    t = hta_fast.load(trace(with_raw("ph", '"\\u0051"')))  # "Q"
    assert len(t.events) == 0 and t.stat("unsupported_phase") == 1


# --- duplicated keys --------------------------------------------------------------------------
def test_duplicated_event_key_the_last_wins():
    # as in the header (and Python's json): one rule for every object the loader reads
    text = trace(event()[:-1] + ',"ts":7,"name":"second"}')
    t = hta_fast.load(text)
    assert t.events["ts"].to_pylist() == [7000] and t.events["name"].to_pylist() == ["second"]
    assert json.loads(text)["traceEvents"][0]["ts"] == 7


@pytest.mark.parametrize(
    "text",
    [
        b'{"traceEvents":[' + event().encode() + b'],"traceEvents":[' + event().encode() + b"]}",
        b'{"traceEvents":[' + event().encode() + b'],"traceEvents":5}',
        b'{"traceEvents":[],"x":1,"traceEvents":[' + event().encode() + b"]}",
    ],
)
def test_a_second_trace_events_key_is_an_error(text):
    for recover in (False, True):
        with pytest.raises(TraceFormatError) as e:
            hta_fast.load(text, recover=recover)
        assert e.value.code is ErrorCode.duplicate_key and e.value.key == "traceEvents"
        assert "traceEvents" in e.value.reason and not e.value.recoverable


# --- stat examples: the input's real bytes --------------------------------------------------
def odd_events() -> list[str]:
    """Events that are counted with an example, among long plain ones."""
    out = []
    for i in range(300):
        out.append(event(name=f"long{i}" + "x" * 150))
        out.append(
            [
                '{"ph":"Q","ts":1}',  # unsupported phase, short: the example is all of it
                '{"ph":"X","name":"nots"}',  # missing ts
                '{"name":"noph","ts":1}',  # missing ph
                event(name="nodur")[:-9] + "}",  # missing dur
                "5",  # not an object
                event(ts="bad"),  # bad field (recover)
                event(args={"bytes": "many"}),  # bad argument (recover)
            ][i % 7]
        )
    out.append('{"ph":"Q"}')  # the last event: right before the array's end
    return out


@pytest.mark.parametrize("chunk_size", [0, 64, 200, 1000, 4096])
@pytest.mark.parametrize("threads", [1, 2])
def test_examples_are_the_input_bytes(chunk_size, threads):
    text = trace(*odd_events())
    t = hta_fast.load(text, recover=True, chunk_size=chunk_size, threads=threads)
    seen = 0
    for row in t.stats.to_pylist():
        for ex in row["examples"]:
            got = ex["text"].encode()
            at = ex["offset"]
            assert text[at : at + len(got)] == got, (row["name"], ex)
            assert b"\x00" not in got and not got.endswith(b" ")
            # never past the event: a short event's example is the event itself
            assert not got.startswith(b'{"ph":"Q"') or got in (b'{"ph":"Q","ts":1}', b'{"ph":"Q"}')
            seen += 1
    assert seen >= 8


def test_example_of_the_last_event_stops_at_the_array_end(tmp_path):
    text = trace(event(), '{"ph":"Q","ts":1}')
    path = tmp_path / "t.json"
    path.write_bytes(text)
    for source in (text, path):
        t = hta_fast.load(source)
        (row,) = [r for r in t.stats.to_pylist() if r["name"] == "unsupported_phase"]
        assert [x["text"] for x in row["examples"]] == ['{"ph":"Q","ts":1}']
