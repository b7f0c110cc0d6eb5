"""Fuzzing the loader: mutated traces must load or raise TraceFormatError, nothing else.

Crashes (a segfault kills the process) and hangs are caught by loading a large corpus of
mutants in a child process for a bounded time: byte-level mutants, and the structured
families of tests/support/fuzz_families.py (ids near the string-id range, deep headers, one huge
event, duplicated keys, arguments beyond int64), whose loads are also checked against what
they must keep. The in-process hypothesis tests then search further, and also check that
the chunk size, the thread count and recover=True do not change what a good file yields.
A property test compares valid random traces with a reading by the json module.
The whole file runs in well under a minute.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import hta_fast
from hta_fast import TraceFormatError
from tests.support.fuzz_families import FAMILIES, family_mutant
from tests.support.paths import SHARED_TRACES

pytestmark = pytest.mark.slow  # thousands of mutated loads

REAL_TRACE = (
    SHARED_TRACES / "hta" / "critical_path" / "cuda_event_sync" / "event_sync_trace.json.gz"
)

STRUCTURAL = b'{}[],:"\\ \n\t0123456789.-eE'
HOSTILE_NAMES = [
    "}, {",
    '},{"ph":"X"',
    'q"uote',
    "back\\slash\\",
    "é漢 😀",
    "] [",
    "\\u00e9",
    "\u2028",
    "\x00",
    "tab\t",
]


# --- seeds ------------------------------------------------------------------------------
def synthetic_trace(n: int = 300, seed: int = 0) -> bytes:
    """Every phase, hostile names, args with arrays of objects, header keys on both sides."""
    rng = random.Random(seed)
    events = []
    for i in range(n):
        name = f"op{i}" + rng.choice(HOSTILE_NAMES)
        kind = i % 10
        if kind < 6:
            e = {
                "ph": "X",
                "cat": rng.choice(["cpu_op", "cuda_runtime", "kernel", "user_annotation"]),
                "name": name if i % 17 else f"ProfilerStep#{i}",
                "pid": rng.choice([0, 1, "Spans", ""]),
                "tid": rng.choice([1, 7, "stream 7"]),
                "ts": round(i * 1.5 + 0.001 * rng.randrange(1000), 3),
                "dur": rng.randrange(0, 50),
                "args": {
                    "correlation": i // 2,
                    "External id": i,
                    "x": [{"a": 1}, {"b": [2]}],
                    "grid": [1, 2, 3],
                    "Input Dims": [[1, 2], []],
                },
            }
        elif kind == 6:
            e = {
                "ph": rng.choice("sf"),
                "id": i // 2,
                "pid": 1,
                "tid": 1,
                "ts": i * 1.5,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        elif kind == 7:
            e = {"ph": "C", "name": "mem", "pid": 1, "ts": i, "args": {"a": i, "b": "x"}}
        elif kind == 8:
            e = {"ph": "M", "name": "thread_name", "pid": 1, "tid": i, "args": {"name": name}}
        else:
            e = {"ph": rng.choice("iIBEb"), "name": name, "pid": 1, "tid": 1, "ts": i, "s": "t"}
        events.append(e)
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "A }, {"}, {"id": 1}],
        "traceEvents": events,
        "distributedInfo": {"rank": 0, "pg": [{"r": [0]}, {"r": [1]}]},
        "traceName": "x",
        "baseTimeNanoseconds": 1700000000000000123,
    }
    return json.dumps(doc, ensure_ascii=bool(seed % 2), indent=None if seed % 3 else 1).encode()


def real_trace() -> bytes:
    return gzip.decompress(REAL_TRACE.read_bytes())


def real_trace_large() -> bytes:
    """The real trace's events eight times (past the loader's first 64 KiB block)."""
    doc = json.loads(real_trace())
    doc["traceEvents"] = doc["traceEvents"] * 8
    return json.dumps(doc).encode()


def test_real_trace_seed_present():
    # the real seed is used when present; its absence must not pass silently
    assert REAL_TRACE.exists(), f"the real trace used as a fuzzing seed is missing: {REAL_TRACE}"


# --- mutations --------------------------------------------------------------------------
def mutate(data: bytes, rng: random.Random, steps: int) -> tuple[bytes, list]:
    """Applies `steps` random mutations; returns the mutant and a recipe to reproduce it."""
    buf = bytearray(data)
    recipe = []
    for _ in range(steps):
        op = rng.choice(["flip", "delete", "insert", "truncate", "duplicate", "bitflip"])
        n = len(buf)
        if n == 0:
            break
        pos = rng.randrange(n)
        if op == "flip":
            buf[pos] = rng.randrange(256)
            recipe.append((op, pos, buf[pos]))
        elif op == "bitflip":
            buf[pos] ^= 1 << rng.randrange(8)
            recipe.append((op, pos, buf[pos]))
        elif op == "delete":
            k = rng.choice([1, 1, 2, 5, 50])
            del buf[pos : pos + k]
            recipe.append((op, pos, k))
        elif op == "insert":
            c = STRUCTURAL[rng.randrange(len(STRUCTURAL))]
            buf.insert(pos, c)
            recipe.append((op, pos, chr(c)))
        elif op == "truncate":
            del buf[pos:]
            recipe.append((op, pos))
        else:
            k = rng.randrange(1, 200)
            at = rng.randrange(n)
            buf[at:at] = buf[pos : pos + k]
            recipe.append((op, pos, k, at))
    return bytes(buf), recipe


CONFIGS = [
    dict(recover=False, chunk_size=0, threads=1),
    dict(recover=True, chunk_size=0, threads=2),
    dict(recover=False, chunk_size=64, threads=2),
    dict(recover=True, chunk_size=64, threads=1),
]

# The child: loads the files in order under every config until the deadline, reports
# exceptions other than TraceFormatError and loads that break a mutant's expectations
# (tests/support/fuzz_families.py), and notes which file it is on, so a crash or a hang can be
# pinned to a mutant.
CHILD = textwrap.dedent("""
    import json, os, sys, time
    import hta_fast
    SLOW = 3  # seconds for one mutant under every config: a few MB at most, ~0.1 s
    folder, configs, start = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    deadline = float(sys.argv[4])
    expects = json.load(open(os.path.join(folder, "expect.json")))
    files = sorted(f for f in os.listdir(folder) if f.startswith("m"))
    progress = open(os.path.join(folder, "progress"), "w")

    def broken_expectations(t, c, expect):
        out = []
        if c["recover"] and "events" in expect and len(t.events) != expect["events"]:
            out.append(f"{len(t.events)} events kept, not {expect['events']}")
        for row, column, value in expect.get("ids", []):
            got = t.events[column][row].as_py()
            want = int(value)  # an integer, or its digits as a string: either reads as written
            if got != want or t.id_name(got) is not None:
                out.append(f"{column} of row {row} reads {got!r} ({t.id_name(got)!r}), not {want!r}")
        return out

    bad, wrong, slow, done = [], [], [], 0
    for f in files[start:]:
        if time.time() > deadline:
            break
        began = time.time()
        path = os.path.join(folder, f)
        data = open(path, "rb").read()
        expect = expects.get(f, {})
        for i, c in enumerate(configs):
            progress.write(f"{f} {i}\\n")
            progress.flush()
            for src in ((data, path) if f.endswith(".gz") else (data,)):
                try:
                    t = hta_fast.load(src, **c)
                    for table in (t.events, t.flows, t.counters, t.meta_events, t.instants,
                                  t.kernel_args, t.op_args, t.stats):
                        table.validate(full=True)  # offsets in range, strings UTF-8
                    t.meta.header
                    wrong += [[f, c, w] for w in broken_expectations(t, c, expect)]
                except hta_fast.TraceFormatError:
                    pass
                except Exception as e:
                    bad.append([f, c, type(e).__name__, str(e)[:300]])
        if time.time() - began > SLOW:
            slow.append([f, round(time.time() - began, 1)])
        done += 1
    json.dump({"loaded": done, "bad": bad, "wrong": wrong, "slow": slow},
              open(os.path.join(folder, "report.json"), "w"))
""")


def run_batch(
    folder: Path,
    mutants: dict[str, bytes],
    recipes: dict[str, list],
    budget: float = 60,
    expects: dict[str, dict] | None = None,
    max_crashes: int = 5,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Loads the mutants in child processes, in name order, for `budget` seconds; returns
    (crashes, other exceptions, broken expectations and loads that took seconds) described,
    and the names loaded.
    After a crash a new child goes on from the next mutant; a child still running past the
    budget (plus a grace period for the file it is on) is a hang."""
    for name, data in mutants.items():
        (folder / name).write_bytes(data)
    (folder / "expect.json").write_text(json.dumps(expects or {}))
    files = sorted(mutants)
    deadline = time.time() + budget
    crashes, bad, wrong, start, loaded = [], [], [], 0, []
    slow: list[str] = []
    while start < len(files) and len(crashes) < max_crashes:
        (folder / "progress").write_text("")
        cmd = [sys.executable, "-c", CHILD, str(folder), json.dumps(CONFIGS), str(start)]
        cmd.append(str(deadline))
        try:
            timeout = max(deadline - time.time(), 0) + 30
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
            died = (
                proc.returncode != 0
                and f"exit code {proc.returncode}, stderr {proc.stderr[-600:]!r}"
            )
        except subprocess.TimeoutExpired:
            died = "no answer 30 s past the budget (a hang)"
        if not died:
            report = json.loads((folder / "report.json").read_text())
            loaded += files[start : start + report["loaded"]]
            bad += [
                f"{f} {c} {kind}: {msg} recipe={recipes[f]}" for f, c, kind, msg in report["bad"]
            ]
            wrong += [f"{f} {c}: {msg} recipe={recipes[f]}" for f, c, msg in report["wrong"]]
            slow += [f"{f}: {sec} s, recipe={recipes[f]}"[:300] for f, sec in report["slow"]]
            break
        last = (folder / "progress").read_text().split()
        if not last:
            pytest.fail(f"the child failed before loading anything: {died}")
        name, cfg = last[-2], CONFIGS[int(last[-1])]
        crashes.append(f"{folder / name} {cfg}: {died}; recipe={recipes[name]}")
        loaded += files[start : files.index(name) + 1]
        start = files.index(name) + 1
    return crashes, bad, wrong, slow, loaded


def seeds() -> dict[str, bytes]:
    out = {
        "synth": synthetic_trace(300, 0),
        "synth_big": synthetic_trace(1200, 1),
        "synth_indent": synthetic_trace(200, 3),
    }
    if REAL_TRACE.exists():
        out["real"] = real_trace()
        out["real_big"] = real_trace_large()
    return out


# --- the crash screen ---------------------------------------------------------------------
CHILD_BUDGET = 18  # seconds of loading in the child; the corpus is larger than that


def corpus(rng: random.Random) -> tuple[dict[str, bytes], dict[str, list], dict[str, dict]]:
    """Byte-level mutants of every seed, gzip mutants, and structured family mutants of the
    small seeds, interleaved (by name) so that any prefix the budget allows holds each kind."""
    groups: dict[str, list[tuple[bytes, list, dict]]] = {}
    byte_mutants = groups.setdefault("bytes", [])
    for seed_name, data in seeds().items():
        count = 300 if len(data) < 70000 else 100
        for _ in range(count):
            m, recipe = mutate(data, rng, rng.choice([1, 1, 2, 3, 8]))
            byte_mutants.append((m, [seed_name] + recipe, {}))
    # compressed mutants: damage inside the gzip stream, and mutated JSON compressed intact
    gz = gzip.compress(seeds()["synth"], compresslevel=9)
    for _ in range(150):
        m, recipe = mutate(gz, rng, rng.choice([1, 2]))
        groups.setdefault("gz", []).append((m, ["gz(synth)"] + recipe, {}))
    for _ in range(50):
        m, recipe = mutate(seeds()["synth"], rng, 2)
        groups["gz"].append((gzip.compress(m, compresslevel=1), ["gz", "synth"] + recipe, {}))
    small = {k: v for k, v in seeds().items() if k in ("synth", "real")}
    kept = {k: len(hta_fast.load(v, recover=True).events) for k, v in small.items()}
    for family in FAMILIES:
        for i in range(40 if family == "huge_event" else 250):
            seed_name = sorted(small)[i % len(small)]
            m, recipe, expect = family_mutant(small[seed_name], family, rng)
            if "events" in expect:
                expect["events"] = kept[seed_name]
            groups.setdefault(family, []).append((m, [seed_name] + recipe, expect))
    mutants, recipes, expects = {}, {}, {}
    longest = max(len(g) for g in groups.values())
    for i in range(longest):
        for group, items in groups.items():
            if i < len(items):
                m, recipe, expect = items[i]
                ext = ".json.gz" if group == "gz" else ".json"
                name = f"m_{i:04d}_{group}{ext}"
                mutants[name], recipes[name], expects[name] = m, recipe, expect
    return mutants, recipes, expects


def test_mutants_in_child_process(tmp_path):
    mutants, recipes, expects = corpus(random.Random(20240208))
    crashes, bad, wrong, slow, loaded = run_batch(tmp_path, mutants, recipes, CHILD_BUDGET, expects)
    assert not crashes, f"{len(crashes)} mutants killed the process:\n" + "\n".join(crashes)
    assert not bad, (
        f"{len(bad)} loads raised something other than TraceFormatError "
        f"(mutants in {tmp_path}):\n" + "\n".join(bad[:20])
    )
    assert not wrong, f"{len(wrong)} loads kept the wrong thing:\n" + "\n".join(wrong[:20])
    assert not slow, f"{len(slow)} mutants took seconds to load:\n" + "\n".join(slow[:20])
    # the budget must leave room for every kind of mutant, or the screen proves little
    for group in ["bytes", "gz", *FAMILIES]:
        n = sum(f"_{group}." in name for name in loaded)
        assert n >= 20, f"only {n} {group} mutants loaded in {CHILD_BUDGET} s"


# --- in-process search ------------------------------------------------------------------
def outcome(data: bytes, **kw):
    """('ok', comparable tables) or ('error', TraceFormatError); anything else propagates."""
    try:
        t = hta_fast.load(data, **kw)
    except TraceFormatError as e:
        assert isinstance(e.reason, str) and e.reason
        assert e.offset is None or 0 <= e.offset <= len(data) + 1, (e.offset, len(data))
        return "error", e
    stats = dict(zip(t.stats["name"].to_pylist(), t.stats["count"].to_pylist()))
    stats.pop("speculative_split_retry")
    # pinned down exactly by test_bad_input_truncation.py::test_truncated_trace*; compared only as
    # present / absent here, so that the search goes on to other faults
    stats["truncated_tail_bytes"] = stats["truncated_tail_bytes"] > 0
    return "ok", (
        t.events.to_pydict(),
        t.flows.to_pydict(),
        t.counters.to_pydict(),
        t.meta_events.to_pydict(),
        t.meta.header,
        stats,
    )


def isolated(fn, *args, timeout: int = 20) -> None:
    """Runs fn(*args) in a forked child, so that a crash or a hang fails this one example
    (and hypothesis can shrink it) instead of killing pytest. Exceptions come back as
    AssertionError with the child's message."""
    if not hasattr(os, "fork"):
        return fn(*args)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        code, msg = 0, b""
        try:
            signal.alarm(timeout)
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            code, msg = 1, f"{type(e).__name__}: {e}"[:8000].encode()
        os.write(w, msg)
        os._exit(code)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode(errors="replace")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        what = "hung" if sig == signal.SIGALRM else f"crashed ({signal.Signals(sig).name})"
        raise AssertionError(f"the loader {what}")
    if os.WEXITSTATUS(status) != 0:
        raise AssertionError(msg)


def check_mutant(data: bytes, chunk_size: int) -> None:
    strict_default = outcome(data)
    strict_small = outcome(data, chunk_size=chunk_size, threads=2)
    recover_default = outcome(data, recover=True, threads=2)
    recover_small = outcome(data, recover=True, chunk_size=chunk_size, threads=1)
    # The chunking never changes the answer: the same tables, or an error at the same place.
    # (Where a mutant holds several faults, the chunking may decide which is met first, so
    # error offsets are not compared here; test_bad_input*.py check them one fault at a time.)
    assert strict_default[0] == strict_small[0], (strict_default, strict_small)
    assert recover_default[0] == recover_small[0], (recover_default, recover_small)
    if strict_default[0] == "ok":
        assert strict_default[1] == strict_small[1]
        # recover=True only adds leniency: a file strict mode accepts reads the same
        assert recover_default == strict_default
    if recover_default[0] == "ok":
        assert recover_default[1] == recover_small[1]


class Mutant(bytes):
    """Mutated bytes that print as their recipe (hypothesis shows it on failure)."""

    recipe: list = []

    def __repr__(self):
        return f"<mutant of {len(self)} bytes: {self.recipe}>"


@st.composite
def mutations(draw, seed_name):
    data = FUZZ_SEEDS[seed_name]
    rng_seed = draw(st.integers(0, 2**32 - 1))
    steps = draw(st.integers(1, 4))
    m, recipe = mutate(data, random.Random(rng_seed), steps)
    out = Mutant(m)
    out.recipe = [seed_name] + recipe
    return out


FUZZ_SEEDS = {"synth": synthetic_trace(300, 0), "synth_big": synthetic_trace(1200, 1)}
if REAL_TRACE.exists():
    FUZZ_SEEDS["real"] = real_trace()
    FUZZ_SEEDS["real_big"] = real_trace_large()

# Bounded: no shrinking (a recipe has at most four steps and prints as such), a fixed
# number of examples, derandomized so that every run tries the same mutants.
FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("seed_name", sorted(FUZZ_SEEDS))
@FUZZ
@given(data=st.data(), chunk_size=st.sampled_from([64, 100, 333, 4096]))
def test_mutants_load_or_raise(seed_name, data, chunk_size):
    isolated(check_mutant, data.draw(mutations(seed_name)), chunk_size)


@pytest.mark.parametrize("seed_name", sorted(FUZZ_SEEDS))
def test_unmutated_seeds_agree(seed_name):
    data = FUZZ_SEEDS[seed_name]
    isolated(check_mutant, data, 64)
    assert outcome(data)[0] == "ok"


# --- valid random traces against the json module --------------------------------------
NAME_CHARS = st.one_of(
    st.sampled_from(
        list('{}[],:"\\/ \t\n') + ["}, {", '},{"ph":"X"', "é", "漢", "😀", "\u2028", "\x00"]
    ),
    st.characters(exclude_categories=("Cs",)),
)
names = st.lists(NAME_CHARS, max_size=12).map("".join)


@st.composite
def micros(draw):
    """A µs value as JSON number text (or a numeric string): ints, 3-decimal floats,
    more decimals, exponents."""
    kind = draw(st.sampled_from(["int", "dec3", "dec", "exp", "string", "big"]))
    if kind == "int":
        return str(draw(st.integers(0, 10**12)))
    if kind == "big":  # absolute epoch µs with ns decimals
        return (
            f"{draw(st.integers(1_600_000_000_000_000, 1_800_000_000_000_000))}."
            f"{draw(st.integers(0, 999)):03d}"
        )
    if kind == "dec3":
        return f"{draw(st.integers(0, 10**9))}.{draw(st.integers(0, 999)):03d}"
    if kind == "dec":
        return f"{draw(st.integers(0, 10**6))}.{draw(st.integers(0, 10**12))}"
    if kind == "exp":
        mant = f"{draw(st.integers(0, 10**6))}.{draw(st.integers(0, 9999))}"
        return f"{mant}{draw(st.sampled_from(['e', 'E']))}{draw(st.integers(-6, 5))}"
    return json.dumps(f"{draw(st.integers(0, 10**6))}.{draw(st.integers(0, 999))}")


def exact_ns(value) -> int:
    """µs (a Decimal from json.loads, or a numeric string) to ns, half away from zero."""
    d = Decimal(value.strip()) if isinstance(value, str) else value
    return int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@st.composite
def traces(draw):
    n = draw(st.integers(0, 60))
    events = []
    for i in range(n):
        e = {
            "ph": "X",
            "name": draw(names),
            "cat": draw(st.sampled_from(["cpu_op", "kernel", "x"])),
            "pid": draw(st.one_of(st.integers(-1, 5), st.sampled_from(["Spans", "", "stream 7"]))),
            "tid": draw(st.integers(0, 3)),
            "ts": f"@@{i}ts@@",
        }
        if draw(st.integers(0, 4)):  # sometimes no dur: read as 0
            e["dur"] = f"@@{i}dur@@"
        if draw(st.booleans()):
            e["args"] = {"x": [{"a": draw(names)}, {"}": [1, {"b": None}]}], "External id": i}
        if draw(st.booleans()):  # key order varies: ts before ph, args first
            e = dict(reversed(list(e.items())))
        events.append(e)
    times = {f"@@{i}{k}@@": draw(micros()) for i in range(n) for k in ("ts", "dur")}
    layout = draw(st.sampled_from(["line", "indent", "native", "bare"]))
    ascii_ = draw(st.booleans())
    # one long event first, so the generated events lie past the loader's first 64 KiB
    filler = {"ph": "X", "name": "f" * 70000, "pid": 0, "tid": 0, "ts": "@@fts@@", "dur": 0}
    times["@@fts@@"] = "1"
    all_events = [filler] + events
    if layout == "bare":
        text = json.dumps(all_events, ensure_ascii=ascii_, indent=draw(st.sampled_from([None, 1])))
    elif layout == "native":
        text = (
            '\n{\n  "schemaVersion": 1,\n  "traceEvents": [\n'
            + ",\n".join("  " + json.dumps(e, ensure_ascii=ascii_) for e in all_events)
            + '\n],\n  "deviceProperties": [{"id": 0}\n  ,{"id": 1}],\n  "traceName": "x"\n}'
        )
    else:
        text = json.dumps(
            {"schemaVersion": 1, "traceEvents": all_events, "traceName": "x"},
            ensure_ascii=ascii_,
            indent=2 if layout == "indent" else None,
            separators=(",", ":") if layout == "line" else None,
        )
    for key, value in times.items():
        text = text.replace(f'"{key}"', value, 1)
    return text.encode("utf-8")


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=traces(), chunk_size=st.integers(64, 4096), threads=st.integers(1, 3))
@example(
    text=b'[{"ph":"X","name":"a","pid":1,"ts":0.0005,"dur":1.0005e0}]', chunk_size=64, threads=1
)
def test_valid_traces_match_json_module(text, chunk_size, threads):
    doc = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    t = hta_fast.load(text, chunk_size=chunk_size, threads=threads)
    got = t.events.to_pydict()
    assert len(got["name"]) == len(events)
    assert got["name"] == [e["name"] for e in events]
    assert got["ts"] == [exact_ns(e["ts"]) for e in events]
    assert got["dur"] == [max(0, exact_ns(e.get("dur", Decimal(0)))) for e in events]
    for e, pid in zip(events, got["pid"]):
        if isinstance(e["pid"], str):
            assert t.id_name(pid) == e["pid"]
        else:
            assert pid == e["pid"]
    assert t.stat("bad_field") == 0 and t.stat("truncated_tail_bytes") == 0
    # the same text, default chunking, one thread: the same table
    assert hta_fast.load(text, threads=1).events.to_pydict() == got
