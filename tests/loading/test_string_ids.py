"""Integer and string pids/tids/flow ids never share a range.

String ids ("Spans", "stream 7") are stored as base - (string index) in a range of the
trace's own, [string_id_floor, string_id_base]: at or below STRING_ID_BASE = -2**32, and
below every integer id the trace has there. An integer id in that range used to be taken
for one (a wrong name, an index past the pool, a crashed merge), then kept as its text with
its value changed. The rule: every integer id comes out as written, over the whole int64
range, and no name shares a value with one (with 1 and 2 threads, any chunking). Loads run
in a child process, so that a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast.schema import STRING_ID_BASE

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# at the edge of the string-id range, inside it, far inside it; and just outside
INSIDE = [STRING_ID_BASE, STRING_ID_BASE - 1, -(2**40), INT64_MIN]
OUTSIDE = [STRING_ID_BASE + 1, -1, 0, INT64_MAX]


def trace(n: int = 40000) -> bytes:
    """A few MB (many chunks), with odd pids, tids and flow ids spread through it."""
    odd = INSIDE + OUTSIDE
    events = []
    for i in range(n):
        e = {
            "ph": "X",
            "cat": "kernel",
            "name": f"k{i % 50}",
            "pid": 1,
            "tid": 1,
            "ts": i,
            "dur": 1,
        }
        if i % 997 == 0:
            e["pid"] = odd[(i // 997) % len(odd)]
            e["tid"] = odd[(i // 997 + 3) % len(odd)]
        events.append(e)
    events.append(
        {"ph": "s", "id": -(2**40), "pid": 1, "tid": 1, "ts": 5, "cat": "ac2g", "name": "f"}
    )
    events.append(
        {
            "ph": "f",
            "id": "-1099511627776",
            "pid": 1,
            "tid": 1,
            "ts": 6,
            "cat": "ac2g",
            "name": "f",
            "bp": "e",
        }
    )
    return json.dumps({"traceEvents": events}).encode()


CHILD = textwrap.dedent("""
    import json, sys
    import hta_fast
    data = sys.stdin.buffer.read()
    out = []
    for kw in (dict(threads=1), dict(threads=2), dict(threads=2, chunk_size=4096)):
        t = hta_fast.load(data, **kw)
        ev = t.events.to_pydict()
        named = [[p, t.id_name(p), tid, t.id_name(tid)] for p, tid in zip(ev["pid"], ev["tid"])]
        out.append({"ids": named, "flows": t.flows["id"].to_pylist()})
    json.dump(out, sys.stdout)
""")


@pytest.fixture(scope="module")
def loaded():
    data = trace()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], input=data, capture_output=True, timeout=300
    )
    assert proc.returncode == 0, (
        f"the load died (status {proc.returncode}): {proc.stderr[-2000:]!r}"
    )
    return json.loads(trace()), json.loads(proc.stdout)


def test_each_id_keeps_its_value(loaded):
    doc, results = loaded
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for r in results:
        for e, (pid, pid_name, tid, tid_name) in zip(events, r["ids"]):
            for value, stored, name in ((e["pid"], pid, pid_name), (e["tid"], tid, tid_name)):
                assert stored == value and name is None, (value, stored, name)


def test_the_same_for_every_chunking(loaded):
    _, results = loaded
    assert results[0] == results[1] == results[2]


def test_number_and_string_of_the_same_digits_are_one_id(loaded):
    # the integer -2**40 and the string "-1099511627776" name the same flow, as they would
    # name the same pid: a numeric string is read as its number everywhere
    _, results = loaded
    start, finish = results[0]["flows"]
    assert start == finish == -(2**40)


def test_string_flow_ids_are_one_numbering_across_chunks():
    # string flow ids were chunk-local string indices: with threads, flows of different
    # chunks got each other's ids
    events = []
    for i in range(3000):
        events.append(
            {
                "ph": "s",
                "id": f"f{i}",
                "pid": 1,
                "tid": 1,
                "ts": 10 * i,
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        events.append(
            {
                "ph": "f",
                "id": f"f{i}",
                "pid": 1,
                "tid": 1,
                "ts": 10 * i + 5,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )
    text = json.dumps({"traceEvents": events}).encode()
    for kw in (dict(threads=1), dict(threads=2, chunk_size=4096)):
        t = hta_fast.load(text, **kw)
        ids = t.flows["id"].to_pylist()
        assert [t.id_name(x) for x in ids] == [e["id"] for e in events], kw


# --- any integer ids beside names, over the whole int64 range --------------------------------
ids = st.one_of(
    st.integers(INT64_MIN, INT64_MAX),
    st.sampled_from([INT64_MIN, INT64_MIN + 1, STRING_ID_BASE, STRING_ID_BASE - 1, -1, 0]),
    st.text(alphabet="abcxyz ", min_size=0, max_size=4),  # names ("" is one)
)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.tuples(ids, ids), min_size=1, max_size=12), threads=st.sampled_from([1, 2])
)
def test_integer_ids_come_out_as_written_and_names_never_meet_them(values, threads):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": p, "tid": t, "ts": i, "dur": 1}
        for i, (p, t) in enumerate(values)
    ]
    t = hta_fast.load(json.dumps({"traceEvents": events}).encode(), threads=threads, chunk_size=256)
    by_name = {e["name"]: e for e in events}
    ev = t.events.to_pydict()
    numbers = {v for pair in values for v in pair if isinstance(v, int)}
    for name, pid, tid in zip(ev["name"], ev["pid"], ev["tid"]):
        for written, stored in ((by_name[name]["pid"], pid), (by_name[name]["tid"], tid)):
            if isinstance(written, int):
                assert stored == written and t.id_name(stored) is None
            else:
                assert t.id_name(stored) == written and stored not in numbers
