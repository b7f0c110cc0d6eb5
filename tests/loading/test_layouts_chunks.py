"""The layouts' trace cut into chunks: the speculative split finds its way back (once, where
hostile names fake a boundary) and never changes the tables, and a plain trace needs no retry
at any chunk size.
"""

from __future__ import annotations

import pytest

import hta_fast
from tests.support.layout_trace import BASE, DEVICE_PROPERTIES
from tests.support.layouts import WRITERS, dumps, layout_texts, write_bare


@pytest.fixture(scope="module")
def texts():
    return layout_texts()


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
