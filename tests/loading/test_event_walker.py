"""The index walker (csrc/parse/event_walker.cc) reads what the On-Demand reader reads.

The loader reads events with a walker over simdjson's structural index and hands a chunk
to the On-Demand reader from the first event the walker cannot read as that reader would.
HTA_FAST_WALKER=0 turns the walker off, so the On-Demand reader is the reference here:
every shared trace must load to the same tables (string ids included) either way, with the
walker reading every chunk itself; mutated and oddly laid out traces must give the same
tables, stats or error (message, offset, key) either way; and what makes the walker stop
(escapes, args before ph, broken JSON) must be read by the On-Demand reader, not lost.
"""

from __future__ import annotations

import gzip
import json
import random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast import TraceFormatError
from hta_fast._named_tables import TABLE_ATTRIBUTES
from tests.loading.test_fuzz import HOSTILE_NAMES, mutate, synthetic_trace
from tests.support.fuzz_families import FAMILIES, family_mutant

# Every table of a trace, by the package's own list of them.
TABLES = TABLE_ATTRIBUTES


def read(monkeypatch, source, walker: bool, **kw):
    """The load with the walker on or off: ('ok', trace) or ('error', the error's facts)."""
    monkeypatch.setenv("HTA_FAST_WALKER", "1" if walker else "0")
    try:
        return "ok", hta_fast.load(source, **kw)
    except TraceFormatError as e:
        return "error", (e.reason, e.offset, e.key, e.code, e.recoverable)


def facts(trace) -> dict:
    stats = dict(zip(trace.stats["name"].to_pylist(), trace.stats["count"].to_pylist()))
    out = {name: getattr(trace, name) for name in TABLES}
    out["strings"] = trace.strings
    out["stats"] = stats
    out["header"] = trace.meta.header
    return out


def assert_same(walked, reference) -> None:
    assert walked[0] == reference[0], (walked, reference)
    if walked[0] == "error":
        assert walked[1] == reference[1]
        return
    a, b = facts(walked[1]), facts(reference[1])
    for name in a:
        if name in TABLES or name == "strings":
            assert a[name].equals(b[name]), name
        else:
            assert a[name] == b[name], name


def stops(trace) -> int:
    return int(trace._raw.timings["on_demand_chunks"])


# --- the shared traces ------------------------------------------------------------------
def test_shared_traces_read_the_same(chrome_trace, traces_dir, monkeypatch):
    path = traces_dir / chrome_trace
    walked = read(monkeypatch, path, True, threads=1)
    reference = read(monkeypatch, path, False, threads=1)
    assert_same(walked, reference)
    if walked[0] == "ok":
        # The walker read every chunk of every shared trace itself: these tests compare it,
        # not the On-Demand reader with itself.
        assert stops(walked[1]) == 0
        assert stops(reference[1]) > 0


# --- what makes the walker stop ---------------------------------------------------------
def event(**fields) -> dict:
    e = {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2.0}
    e.update(fields)
    return e


def doc(events) -> bytes:
    """A trace of the events: dicts, or JSON text as it is (for duplicate keys)."""
    texts = (e if isinstance(e, str) else json.dumps(e) for e in events)
    return ('{"traceEvents": [' + ", ".join(texts) + "]}").encode()


@pytest.mark.parametrize(
    "odd",
    [
        pytest.param(event(name='say "hi"'), id="escaped-name"),
        pytest.param(event(cat="a\\b"), id="escaped-cat"),
        pytest.param(event(pid="ranks \u00e9"), id="escaped-pid"),
        pytest.param(
            '{"args": {"External id": 3}, "ph": "X", "ts": 1, "args": {"External id": 4}}',
            id="args-twice",
        ),
        pytest.param(event(args={"correlation": "x"}), id="bad-arg"),
        pytest.param(event(ts=[1]), id="nested-ts"),
        pytest.param(event(args={"grid": [["1"], 2, 3]}), id="nested-grid"),
        pytest.param(event(args={"Input Dims": json.loads("[" * 70 + "]" * 70)}), id="deep"),
    ],
)
@pytest.mark.parametrize("recover", [False, True])
def test_what_the_walker_leaves_is_read(odd, recover, monkeypatch):
    events = [event(name=f"before{i}") for i in range(50)] + [odd]
    events += [event(name=f"after{i}", args={"External id": i}) for i in range(50)]
    walked = read(monkeypatch, doc(events), True, threads=1, recover=recover)
    reference = read(monkeypatch, doc(events), False, threads=1, recover=recover)
    assert_same(walked, reference)
    if walked[0] == "ok":
        names = walked[1].events.column("name").to_pylist()
        assert "after49" in names and "before0" in names
        assert stops(walked[1]) == 1  # the odd event and those after it went to On-Demand


def test_args_before_ph_are_walked(monkeypatch):
    events = [{"args": {"External id": i, "correlation": 7}, **event()} for i in range(30)]
    events.append({"args": {"External id": 99}, "name": "no phase", "ts": 1})
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 0
    assert walked[1].events.column("external_id").to_pylist() == list(range(30))
    assert walked[1].stat("missing_phase") == 1
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))


def test_escapes_are_left_to_on_demand(monkeypatch):
    events = [event(name=f"op{i}") for i in range(20)] + [event(name='q"uote')]
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 1
    assert walked[1].events.column("name").to_pylist()[-1] == 'q"uote'
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))


def test_an_escape_after_a_recent_text_like_it_is_left_to_on_demand(monkeypatch):
    # The walker's cache of recent strings skips the escape check for a text it has seen:
    # one like a cached one (its length, start and end) but with an escape in it must
    # still miss and go to the On-Demand reader.
    plain, escaped = "abcdefghXX12345678", 'abcdefgh"12345678'
    assert len(json.dumps(escaped)) - 2 == len(plain)
    events = [event(name=plain) for _ in range(20)] + [event(name=escaped)]
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 1
    assert walked[1].events.column("name").to_pylist()[-2:] == [plain, escaped]
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))


def test_names_alike_but_in_the_middle_keep_their_own_ids(monkeypatch):
    # Python-stack names differ only in a line number halfway along; the cache must tell
    # them apart (and, kept from chunk to chunk, must not hand one the other's id).
    names = [f"torch/nn/modules/module.py({n}): named_modules" for n in (2823, 2868, 2863)]
    events = [event(name=names[i % 3], ts=i) for i in range(3000)]
    walked = read(monkeypatch, doc(events), True, threads=1, chunk_size=4096)
    assert stops(walked[1]) == 0
    assert walked[1].events.column("name").to_pylist() == [names[i % 3] for i in range(3000)]
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1, chunk_size=4096))


@pytest.mark.parametrize("recover", [False, True])
def test_a_string_equal_to_raw_json_read_before_is_still_checked(recover, monkeypatch):
    # Raw JSON (an operator's "Input Dims") is cached by its text unchecked; a string whose
    # text is the same, backslash and all, must not take that entry's id as its own.
    # In one chunk, and in two (the cache is kept from chunk to chunk).
    raw = '{"ph": "X", "name": "x", "ts": 1, "dur": 1, "args": {"Input Dims": [\\]}}'
    string = '{"ph": "X", "name": "[\\]", "ts": 2, "dur": 1}'
    for between in (0, 100):
        events = [raw] + [event(name=f"op{i}") for i in range(between)] + [string]
        for chunk_size in (0, 1024):
            kw = dict(threads=1, recover=recover, chunk_size=chunk_size)
            walked = read(monkeypatch, doc(events), True, **kw)
            assert_same(walked, read(monkeypatch, doc(events), False, **kw))


def test_learned_layouts_stay_exact(monkeypatch):
    # The walker tells keys from the bytes before each value, learned per previous key
    # (csrc/parse/member_layout.h): kinds of event interleaved, orders and optional
    # arguments varying, must read as the On-Demand reader reads them.
    kinds = [
        '{"ph": "X", "cat": "k", "name": "a%d", "pid": 1, "tid": 2, "ts": %d, "dur": 1, '
        '"args": {"External id": %d, "correlation": 2}}',
        '{"ph": "X", "cat": "k", "name": "b", "pid": 1, "tid": 2, "ts": %d, "dur": 1, '
        '"args": {"correlation": %d, "External id": 1, "stream": %d}}',
        '{"args": {"Input Dims": [[%d], []], "Ev Idx": %d}, "ts": %d, "ph": "X", "name": "c"}',
        '{"ph": "C", "name": "mem", "pid": 1, "ts": %d, "args": {"a": %d, "b": "x%d"}}',
        '{"ph": "X", "cat": "k", "name": "d", "pid": 1, "tid": 2, "ts": %d, "dur": 1, '
        '"args": {"External id": %d, "grid": [%d, 1, 1]}}',
    ]
    rng = random.Random(5)
    events = []
    for i in range(600):
        text = rng.choice(kinds)
        events.append(text % tuple(i * 3 + k for k in range(text.count("%d"))))
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 0
    assert walked[1].counters.num_rows == sum("mem" in e for e in events)
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))
    # The same bytes before a value that is missing: an error, as the On-Demand reader says.
    broken = events + [kinds[0].replace('"ts": %d', '"ts": ') % (1, 2)]
    for recover in (False, True):
        kw = {"threads": 1, "recover": recover}
        walked = read(monkeypatch, doc(broken), True, **kw)
        assert_same(walked, read(monkeypatch, doc(broken), False, **kw))
    assert walked[0] == "error"  # broken JSON: recover mode cannot step over it either


def test_more_keys_than_the_layout_holds(monkeypatch):
    # The layout numbers up to 254 keys; the rest are read each time, never learned.
    events = []
    for i in range(400):
        args = {f"key {i % 300} {j}": j for j in range(3)}
        args["External id"] = i
        events.append(event(name=f"op{i % 7}", args=args))
        counters = {f"series {i % 280}": i, f"other {i}": 1.5}
        events.append({"ph": "C", "name": "mem", "pid": 1, "ts": i, "args": counters})
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 0
    assert walked[1].events.column("external_id").to_pylist() == list(range(400))
    assert walked[1].counters.num_rows == 800
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))


def test_kineto_layout_is_walked_whole(monkeypatch):
    # The layout the profiler writes: one member per line for args, the rest on two lines.
    lines = []
    for i in range(200):
        lines.append(
            '  {\n    "ph": "X", "cat": "kernel", "name": "void k<int>(float*)", "pid": 0, '
            f'"tid": 7,\n    "ts": {1000 + i}.500, "dur": 1.250,\n    "args": {{\n'
            f'      "External id": {i},\n      "device": 0, "stream": 7, "correlation": {i},\n'
            '      "grid": [1, 2, 3], "block": [128, 1, 1]\n    }\n  }'
        )
    text = ('{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + ",\n".join(lines) + "\n]}").encode()
    walked = read(monkeypatch, text, True, threads=1)
    assert stops(walked[1]) == 0
    assert walked[1].kernel_args.column("grid_y").to_pylist() == [2] * 200
    assert_same(walked, read(monkeypatch, text, False, threads=1))


# --- random layouts and mutants ---------------------------------------------------------
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    # each example sets HTA_FAST_WALKER itself: the fixture's reuse across examples is safe
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from(HOSTILE_NAMES + ["0x0", "12", "1.5", "", "X", "e"]),
)
ODD = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
PLAIN_NAMES = st.sampled_from(["aten::mm", "void k<int>(float*)", "", "cudaLaunchKernel", "é漢"])
NUMBERS = st.one_of(st.integers(0, 10**15), st.floats(0, 1e12), st.decimals(0, 10**9, places=3))


def mostly(good, odd=ODD):
    """The value a profiler writes, or now and then anything at all."""
    return st.tuples(st.integers(0, 39), good, odd).map(lambda t: t[2] if t[0] == 0 else t[1])


NAMES = mostly(PLAIN_NAMES, st.sampled_from(HOSTILE_NAMES))


FIELDS = {
    "ph": mostly(st.sampled_from(list("XXXXXXsftiICM")), st.sampled_from(["XY", "", "B"])),
    "cat": mostly(st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "ac2g"])),
    "name": mostly(NAMES),
    "pid": mostly(st.one_of(st.integers(0, 10**6), st.sampled_from(["Spans", "stream 7", ""]))),
    "tid": mostly(st.one_of(st.integers(0, 10**6), st.sampled_from(["7", "stream 7"]))),
    "ts": mostly(NUMBERS),
    "dur": mostly(NUMBERS),
    "id": mostly(st.integers(-(2**40), 2**40)),
    "bp": mostly(st.just("e")),
    "s": mostly(st.sampled_from(list("tpg"))),
}
ARGS = {
    "External id": mostly(st.integers(0, 10**9)),
    "correlation": mostly(st.integers(0, 10**9)),
    "device": mostly(st.integers(0, 7)),
    "stream": mostly(st.one_of(st.integers(-1, 2**32), st.just("0x0"))),
    "grid": mostly(st.lists(st.integers(1, 2**31 - 1), min_size=0, max_size=4)),
    "block": mostly(st.lists(st.integers(1, 1024), min_size=3, max_size=3)),
    "bytes": mostly(st.integers(0, 2**40)),
    "Input Dims": mostly(st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3)),
    "Concrete Inputs": mostly(st.lists(NAMES, max_size=3)),
    "Collective name": mostly(NAMES),
    "Rank": mostly(st.integers(0, 7)),
    "name": mostly(NAMES),
    "cbid": ODD,
    'q"k': ODD,
}
KINETO_ORDER = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "s", "args"]


@st.composite
def layouts(draw):
    """Events mostly as the profiler writes them, in its key order or another, now and then
    with a value of another kind, and whitespace of every kind between tokens."""
    events = []
    for _ in range(draw(st.integers(1, 12))):
        rng = random.Random(draw(st.integers(0, 2**16)))
        keys = [k for k in KINETO_ORDER if rng.random() < (0.2 if k in ("id", "bp", "s") else 0.95)]
        if rng.random() < 0.3:
            rng.shuffle(keys)
        e = {}
        for key in keys:
            if key == "args":
                arg_keys = draw(st.lists(st.sampled_from(sorted(ARGS)), max_size=6, unique=True))
                e["args"] = {k: draw(ARGS[k]) for k in arg_keys}
            else:
                e[key] = draw(FIELDS[key])
        events.append(e)
    rng = random.Random(draw(st.integers(0, 2**16)))
    spaces = ["", " ", "\n", "\n    ", "\t", "\r\n"]
    text = json.dumps(
        {"traceEvents": events}, separators=(",", ":"), default=str, ensure_ascii=False
    )
    # Whitespace between tokens (never inside strings: only after structural characters).
    out, in_string, escaped = [], False, False
    for c in text:
        out.append(c)
        if in_string:
            in_string = escaped or c != '"'
            escaped = not escaped and c == "\\"
            continue
        if c == '"':
            in_string = True
        elif c in ",:[]{}" and rng.random() < 0.3:
            out.append(rng.choice(spaces))
    return "".join(out).encode()


@SETTINGS
@given(text=layouts(), recover=st.booleans(), chunk_size=st.sampled_from([0, 64, 200]))
def test_random_layouts_read_the_same(text, recover, chunk_size, monkeypatch):
    kw = {"threads": 1, "recover": recover, "chunk_size": chunk_size}
    assert_same(read(monkeypatch, text, True, **kw), read(monkeypatch, text, False, **kw))


SEEDS = {"synth": synthetic_trace(200, 0), "synth_ascii": synthetic_trace(200, 1)}


@SETTINGS
@given(
    seed=st.sampled_from(sorted(SEEDS)),
    rng_seed=st.integers(0, 2**32 - 1),
    steps=st.integers(1, 3),
    recover=st.booleans(),
)
def test_mutants_read_the_same(seed, rng_seed, steps, recover, monkeypatch):
    data, _ = mutate(SEEDS[seed], random.Random(rng_seed), steps)
    kw = {"threads": 1, "recover": recover}
    assert_same(read(monkeypatch, data, True, **kw), read(monkeypatch, data, False, **kw))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fuzz_families_read_the_same(family, monkeypatch):
    for i in range(3):
        data, _, _ = family_mutant(SEEDS["synth"], family, random.Random(i))
        for recover in (False, True):
            kw = {"threads": 1, "recover": recover}
            assert_same(read(monkeypatch, data, True, **kw), read(monkeypatch, data, False, **kw))


# Texts that look alike to the walker's cache of recent strings (csrc/parse/recent_strings.h):
# the same length, the same first bytes, or a short text followed by the same bytes.
LOOKALIKES = st.sampled_from(
    ["", "a", "ab", "a c", "aten::copy_", "aten::copy_A", "aten::copy_B", "aten::copz_"]
    + ["aten::mm_0123456789abcdefX", "aten::mm_0123456789abcdefY", "[[1, 2], []]", "[[1, 3], []]"]
)


@SETTINGS
@given(texts=st.lists(st.tuples(LOOKALIKES, LOOKALIKES), min_size=1, max_size=300))
def test_lookalike_names_keep_their_own_ids(texts, monkeypatch):
    events = [
        event(name=name, ts=i, args={"Input type": arg, "Input Dims": json.loads(arg)})
        if arg.startswith("[")
        else event(name=name, ts=i, args={"Input type": arg})
        for i, (name, arg) in enumerate(texts)
    ]
    walked = read(monkeypatch, doc(events), True, threads=1)
    assert stops(walked[1]) == 0
    names = walked[1].events.column("name").to_pylist()
    assert names == [name for name, _ in texts]
    assert walked[1].op_args.column("input_type").to_pylist() == [arg for _, arg in texts]
    dims = walked[1].op_args.column("input_dims").to_pylist()
    assert dims == [arg if arg.startswith("[") else None for _, arg in texts]
    assert_same(walked, read(monkeypatch, doc(events), False, threads=1))


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_recent_strings_follow_the_pool_they_were_interned_into(tmp_path, monkeypatch, suffix):
    # With two threads, parts of a plain file and chunks of a gzip'd one are read into
    # columns of their own (each with its own string pool, cleared and reused), joined
    # after: the walker's cache of recent strings, kept from chunk to chunk, must start
    # afresh on each pool, or ids of one pool end up in another's columns.
    rng = random.Random(11)
    names = [f"torch/nn/modules/module.py({n}): forward" for n in range(40)]
    events = [
        event(name=rng.choice(names), ts=i, args={"Input Dims": [[rng.randrange(9)]]})
        for i in range(20_000)
    ]
    path = tmp_path / f"trace{suffix}"
    text = doc(events)
    path.write_bytes(gzip.compress(text) if suffix == ".gz" else text)
    walked = read(monkeypatch, path, True, threads=2, chunk_size=4096)
    reference = read(monkeypatch, path, False, threads=1)
    assert_same(walked, reference)
    got = walked[1].events.column("name").to_pylist()
    assert got == [e["name"] for e in events]
