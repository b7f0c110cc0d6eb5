"""Plain files are parsed in place in a private mapping (csrc/io/mapped_file.h); bytes are
copied into chunk buffers. Both must give the same tables, errors and offsets, whatever the
chunk size, layout and thread count: these tests load each text both ways."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast import TraceFormatError

HOSTILE = ["}, {", '},{"ph":"X"', "}\n,\n{", "plain", "é漢", "]"]
CHUNKS = [64, 100, 257, 1000]


def events(n, hostile=True):
    out = []
    for i in range(n):
        name = f"op{i} {HOSTILE[i % len(HOSTILE)]}" if hostile else f"op{i}"
        out.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": name,
                "pid": 1,
                "tid": 1 + i % 3,
                "ts": 1000 + 7 * i,
                "dur": 5,
                "args": {"External id": i, "nested": {"a": [1, {"b": "}, {" if hostile else 2}]}},
            }
        )
        if i % 5 == 0:
            out.append(
                {
                    "ph": "f",
                    "cat": "ac2g",
                    "id": i,
                    "pid": 1,
                    "tid": 1,
                    "ts": 1000 + 7 * i,
                    "bp": "e",
                    "name": "launch",
                }
            )
    return out


def layouts(n=300, hostile=True):
    evs = events(n, hostile)
    spaced = (
        '{"schemaVersion": 1, "traceEvents": [\n'
        + ",\n  ".join(json.dumps(e) for e in evs)
        + "\n]}"
    )
    minified = json.dumps({"traceEvents": evs}, separators=(",", ":"))
    mixed = (
        '{"traceEvents":['
        + "".join(
            json.dumps(e, separators=(",", ":")) + (",\n" if i % 3 else ",")
            for i, e in enumerate(evs)
        )[:-1].rstrip(",\n")
        + '], "displayTimeUnit": "ns"}'
    )
    return {"spaced": spaced.encode(), "minified": minified.encode(), "mixed": mixed.encode()}


TABLES = ("events", "flows", "op_args", "meta_events")


def same_tables(a, b):
    return all(getattr(a, t).equals(getattr(b, t)) for t in TABLES)


@pytest.mark.parametrize("layout", ["spaced", "minified", "mixed"])
def test_mapped_equals_buffered(layout, tmp_path):
    text = layouts()[layout]
    json.loads(text)  # the fixture itself is valid JSON
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = hta_fast.load(text, threads=1)
    assert ref.events.num_rows == 300
    for chunk in CHUNKS:
        for threads in (1, 2):
            got = hta_fast.load(path, chunk_size=chunk, threads=threads)
            assert same_tables(got, ref), (layout, chunk, threads)
    # The file is unchanged by the brackets written into the private mapping.
    assert path.read_bytes() == text


@pytest.mark.parametrize("layout", ["spaced", "minified", "mixed"])
def test_mapped_chunks_parse_first_time(layout, tmp_path):
    # With no boundary look-alikes inside strings, every speculative split is right: a
    # retry would mean the brackets written into the mapping (or the copied fallback
    # chunks of a minified file, and the '[' written into the ',' after each) were wrong.
    text = layouts(hostile=False)[layout]
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = hta_fast.load(text, threads=1)
    for chunk in CHUNKS:
        for threads in (1, 2):
            got = hta_fast.load(path, chunk_size=chunk, threads=threads)
            assert got.stat("speculative_split_retry") == 0, (layout, chunk, threads)
            assert same_tables(got, ref), (layout, chunk, threads)


@pytest.mark.parametrize("cut", [0.31, 0.62, 0.93])
def test_truncated_plain_file(cut, tmp_path):
    text = layouts()["spaced"]
    part = text[: int(len(text) * cut)]
    path = tmp_path / "t.json"
    path.write_bytes(part)
    for chunk in (64, 1000):
        with pytest.raises(TraceFormatError) as from_file:
            hta_fast.load(path, chunk_size=chunk)
        with pytest.raises(TraceFormatError) as from_bytes:
            hta_fast.load(part, chunk_size=chunk)
        assert from_file.value.offset == from_bytes.value.offset
        got = hta_fast.load(path, chunk_size=chunk, recover=True)
        want = hta_fast.load(part, chunk_size=chunk, recover=True)
        assert same_tables(got, want)
        assert got.stat("truncated_tail_bytes") == want.stat("truncated_tail_bytes") > 0


@pytest.mark.parametrize("broken", [b'"ts": "x"', b'"ts":}', b'"ts": [1}'])
def test_errors_point_at_the_same_byte(broken, tmp_path):
    text = layouts()["spaced"]
    at = text.index(b'"ts": ', len(text) // 2)
    bad = text[:at] + broken + text[text.index(b",", at) :]
    path = tmp_path / "t.json"
    path.write_bytes(bad)
    for chunk in (64, 257):
        for threads in (1, 2):
            with pytest.raises(TraceFormatError) as from_file:
                hta_fast.load(path, chunk_size=chunk, threads=threads)
            with pytest.raises(TraceFormatError) as from_bytes:
                hta_fast.load(bad, chunk_size=chunk, threads=threads)
            assert from_file.value.offset == from_bytes.value.offset
            assert abs(from_file.value.offset - at) < 400


# --- parts: a mapped file read on several threads (csrc/parse/mapped_events.h) ------------
def many_names(n=4000):
    """Events whose names, categories and string tids first appear all along the file, so
    each part's string pool holds names the parts before it lack (and no boundary
    look-alikes in strings: every speculative split is right)."""
    evs = []
    for i in range(n):
        evs.append(
            {
                "ph": "X",
                "cat": f"cat{i // 700}",
                "name": f"op{i % 900} é漢" if i % 7 else f"new{i}",
                "pid": 1,
                "tid": f"thread {i // 1000}" if i % 2 else 1 + i % 3,
                "ts": 1000 + 7 * i,
                "dur": 5,
                "args": {"External id": i, "Input Dims": [[i % 5, 3]]},
            }
        )
        if i % 9 == 0:
            evs.append({"ph": "s", "cat": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": 1000 + 7 * i})
    return (
        '{"schemaVersion": 1, "traceEvents": [\n'
        + ",\n  ".join(json.dumps(e) for e in evs)
        + '\n], "displayTimeUnit": "ns"}'
    ).encode()


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_parts_read_as_one_thread_reads(threads, tmp_path):
    text = many_names()
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = hta_fast.load(text, threads=1)
    for chunk in (256, 4096):
        got = hta_fast.load(path, chunk_size=chunk, threads=threads)
        # Several parts, one thread to a part at a time, joined in file order.
        assert got._raw.timings["mapped_parts"] > threads, (threads, chunk)
        assert got.stat("speculative_split_retry") == 0
        assert got.strings.equals(ref.strings), "string ids differ from one thread's"
        for table in ("events", "flows", "op_args", "meta_events", "steps"):
            assert getattr(got, table).equals(getattr(ref, table)), (table, threads, chunk)
        assert got.stats == ref.stats


def test_first_bad_field_in_file_order_is_reported(tmp_path):
    text = many_names()
    # Bad timestamps in the second, fifth and last tenth of the file: whichever part (and
    # thread) meets its bad field first, the error is the first one in the file.
    ats = [text.index(b'"ts": ', len(text) * k // 10) for k in (2, 5, 9)]
    bad = text
    for at in reversed(ats):
        bad = bad[:at] + b'"ts": "x"' + bad[bad.index(b",", at) :]
    path = tmp_path / "t.json"
    path.write_bytes(bad)
    with pytest.raises(TraceFormatError) as from_bytes:
        hta_fast.load(bad, threads=1)
    assert abs(from_bytes.value.offset - ats[0]) < 400
    for threads in (1, 2, 4):
        with pytest.raises(TraceFormatError) as from_file:
            hta_fast.load(path, chunk_size=256, threads=threads)
        assert from_file.value.offset == from_bytes.value.offset, threads
        kept = hta_fast.load(path, chunk_size=256, threads=threads, recover=True)
        want = hta_fast.load(bad, threads=1, recover=True)
        assert kept.events.equals(want.events)
        assert kept.stats == want.stats
        assert kept.events.num_rows == 4000 - 3


NAMES = ["op", "}, {", '},{"ph":"X"', "é漢", "a\\u00e9b", "", "x" * 70]


@st.composite
def mapped_traces(draw):
    """A trace text with random events, names (boundary look-alikes among them) and
    separators between events, and a chunk size and thread count to read it with."""
    n = draw(st.integers(40, 400))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n))
    seps = draw(st.lists(st.sampled_from([",", ",\n  ", ", ", ",\n"]), min_size=n, max_size=n))
    evs = []
    for i, name in enumerate(names):
        ev = {"ph": "X", "cat": "cpu_op", "name": f"{name}{i % 11}", "pid": 1, "tid": i % 4}
        ev.update({"ts": 100 + 3 * i, "dur": 2, "args": {"External id": i}})
        evs.append(json.dumps(ev, separators=(",", ":")))
    body = "".join(e + s for e, s in zip(evs, seps))[: -len(seps[-1])]
    text = ('{"traceEvents": [\n' + body + "\n]}").encode()
    return text, draw(st.sampled_from([64, 100, 257, 1024])), draw(st.integers(2, 4))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=mapped_traces())
def test_parts_of_random_layouts_read_as_one_thread_reads(case, tmp_path):
    text, chunk, threads = case
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = hta_fast.load(text, threads=1)
    got = hta_fast.load(path, chunk_size=chunk, threads=threads)
    if len(text) > 16 * chunk and got.stat("speculative_split_retry") == 0:
        assert got._raw.timings["mapped_parts"] > 1, "a file of many chunks read in one part"
    assert got.strings.equals(ref.strings)
    for table in ("events", "op_args", "meta_events"):
        assert getattr(got, table).equals(getattr(ref, table)), table

    # A look-alike boundary inside a string sends the file to the exact reader: counted.
    def counts(t):
        return [r for r in t.stats.to_pylist() if r["name"] != "speculative_split_retry"]

    assert counts(got) == counts(ref)


@pytest.mark.parametrize("suffix_kb", [0, 100])
def test_the_end_of_a_file_read_after_its_parts(suffix_kb, tmp_path):
    # The mapped parts stop 32 KiB before the end of the file, well short of two chunks of
    # 64 KiB: the rest, the events' last stretch and the header after them, is read exactly.
    # A header longer than that, made of `}, {` objects, sends the read to its exact retry.
    devices = [{"id": i, "name": "GPU", "memory": 1 << 34} for i in range(suffix_kb * 20)]
    text = json.dumps({"traceEvents": events(5000, hostile=False), "deviceProperties": devices})
    path = tmp_path / "t.json"
    path.write_bytes(text.encode())
    ref = hta_fast.load(text.encode(), threads=1)
    assert len(text) > 8 * (64 << 10)
    for threads in (1, 2):
        got = hta_fast.load(path, chunk_size=64 << 10, threads=threads)
        assert same_tables(got, ref), threads
        if suffix_kb == 0:
            assert got.stat("speculative_split_retry") == 0
            assert got._raw.timings["mapped_parts"] >= threads
