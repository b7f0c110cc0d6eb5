"""hta_fast against a plain reading of every real trace in ../shared/traces.

Each file is read independently with Python's gzip and json modules (numbers as int and
decimal.Decimal, so no float rounding) into a small, obviously-correct model; hta_fast
must agree with it event by event.
"""

from __future__ import annotations

import collections
import dataclasses
import decimal
import gzip
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

import hta_fast
from hta_fast._named_tables import TABLE_ATTRIBUTES

# Categories (Kineto's modern names and the legacy capitalised ones) and the kind the
# loader gives them; anything else is "other".
KIND_OF_CAT = {
    "cpu_op": "cpu_op",
    "Operator": "cpu_op",
    "user_annotation": "user_annotation",
    "python_function": "python_function",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "mtia_runtime": "runtime",
    "cuda_driver": "driver",
    "kernel": "kernel",
    "Kernel": "kernel",
    "mtia_ccp_events": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "gpu_user_annotation": "gpu_user_annotation",
    "cuda_sync": "sync",
}
LAUNCH_KINDS = {"runtime", "driver"}
LINKED_GPU_KINDS = {"kernel", "memcpy", "memset", "sync"}  # GPU events that have a launch
GPU_KINDS = LINKED_GPU_KINDS | {"gpu_user_annotation"}
LAUNCH_FLOW_CATS = {"ac2g", "async_cpu_to_gpu", "async_gpu"}

STRING_ID_BASE = -(1 << 32)  # pid/tid at or below this stand for strings (Trace.id_name)
SMALL_CHUNK = 64 * 1024


def kind_of(event: dict) -> str:
    return KIND_OF_CAT.get(event.get("cat"), "other")


def is_number(v: Any) -> bool:
    return isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool)


def to_ns(us: Any) -> int:
    """Microseconds as written (int or Decimal) -> ns, rounded half away from zero."""
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


@dataclasses.dataclass
class Model:
    """What a plain json reading of one Chrome trace says hta_fast should load."""

    header: dict
    phases: collections.Counter  # ph -> number of events
    counter_values: int  # numeric args of C events (one row each)
    ts: np.ndarray  # X events in file order: absolute ns
    dur: np.ndarray
    names: list
    cats: list
    pids: list  # as written: int or str
    tids: list
    kinds: list
    gpu_per_stream: collections.Counter  # (pid, tid) -> GPU events there
    links: dict  # X index of a GPU event -> X index of its launch
    links_by_correlation: int
    links_by_flow: int


def read_json(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=decimal.Decimal, parse_int=int)


def build_model(doc: dict) -> Model:
    events = doc["traceEvents"]
    base = int(doc.get("baseTimeNanoseconds") or 0)
    phases = collections.Counter(e.get("ph") for e in events)
    counter_values = sum(
        sum(1 for v in (e.get("args") or {}).values() if is_number(v))
        for e in events
        if e.get("ph") == "C"
    )
    xs = [e for e in events if e.get("ph") == "X"]
    kinds = [kind_of(e) for e in xs]
    ts = [base + to_ns(e["ts"]) for e in xs]

    gpu_per_stream = collections.Counter(
        (e.get("pid"), e.get("tid")) for e, k in zip(xs, kinds) if k in GPU_KINDS
    )

    # Launch <-> GPU event. First: the same args.correlation, the first launch in file
    # order winning.
    launch_of_correlation: dict = {}
    for i, (e, k) in enumerate(zip(xs, kinds)):
        corr = (e.get("args") or {}).get("correlation")
        if k in LAUNCH_KINDS and corr is not None:
            launch_of_correlation.setdefault(corr, i)
    links = {}
    for i, (e, k) in enumerate(zip(xs, kinds)):
        corr = (e.get("args") or {}).get("correlation")
        if k in LINKED_GPU_KINDS and corr in launch_of_correlation:
            links[i] = launch_of_correlation[corr]
    by_correlation = len(links)

    # Then, for GPU events still unlinked, launch flows: the 's' starts on its launch and
    # the 'f' on the GPU event (same pid, tid and ts), both with the same id.
    at = collections.defaultdict(list)  # (pid, tid, ts) -> X indices
    for i, (e, t) in enumerate(zip(xs, ts)):
        at[(e.get("pid"), e.get("tid"), t)].append(i)

    def bound(flow: dict, wanted: set) -> Optional[int]:
        key = (flow.get("pid"), flow.get("tid"), base + to_ns(flow["ts"]))
        return next((i for i in at.get(key, ()) if kinds[i] in wanted), None)

    flows = [e for e in events if e.get("ph") in ("s", "f") and e.get("cat") in LAUNCH_FLOW_CATS]
    launch_of_flow: dict = {}
    for fl in flows:
        if fl["ph"] == "s" and fl.get("id") not in launch_of_flow:
            launch = bound(fl, LAUNCH_KINDS)
            if launch is not None:
                launch_of_flow[fl.get("id")] = launch
    for fl in flows:
        if fl["ph"] == "f" and fl.get("id") in launch_of_flow:
            gpu = bound(fl, LINKED_GPU_KINDS)
            if gpu is not None and gpu not in links:
                links[gpu] = launch_of_flow[fl.get("id")]

    return Model(
        header={k: v for k, v in doc.items() if k != "traceEvents"},
        phases=phases,
        counter_values=counter_values,
        ts=np.array(ts, dtype=np.int64),
        dur=np.array([to_ns(e["dur"]) for e in xs], dtype=np.int64),
        names=[e.get("name") for e in xs],
        cats=[e.get("cat") for e in xs],
        pids=[e.get("pid") for e in xs],
        tids=[e.get("tid") for e in xs],
        kinds=kinds,
        gpu_per_stream=gpu_per_stream,
        links=links,
        links_by_correlation=by_correlation,
        links_by_flow=len(links) - by_correlation,
    )


def as_written(trace: hta_fast.Trace, ids: list) -> list:
    """pid/tid column values back to what the file says: numbers, or the string."""
    return [v if v is None or v > STRING_ID_BASE else trace.id_name(v) for v in ids]


# --- fixtures: each file is read once (module scope groups the tests by file) ------------


@pytest.fixture(scope="module")
def path(traces_dir: Path, chrome_trace: str) -> Path:
    return traces_dir / chrome_trace


@pytest.fixture(scope="module")
def doc(path: Path) -> dict:
    doc = read_json(path)
    if not (isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)):
        pytest.fail(
            f"{path}: not a Chrome trace (no traceEvents array); if that is right, "
            f"add it to NOT_CHROME_TRACES in tests/conftest.py",
            pytrace=False,
        )
    return doc


@pytest.fixture(scope="module")
def model(doc: dict) -> Model:
    return build_model(doc)


@pytest.fixture(scope="module")
def trace(path: Path) -> hta_fast.Trace:
    return hta_fast.load(path)


# --- tests ---------------------------------------------------------------------------------


def test_not_a_chrome_trace_is_rejected(traces_dir: Path, non_chrome_trace: str):
    path = traces_dir / non_chrome_trace
    assert path.is_file(), f"{path} is missing"
    doc = read_json(path)
    assert not (isinstance(doc, dict) and "traceEvents" in doc), "the model reads a Chrome trace"
    with pytest.raises(hta_fast.TraceFormatError) as err:
        hta_fast.load(path)
    e = err.value
    assert e.path == str(path)
    assert e.reason and str(path) in str(e)
    assert any(w in e.reason.lower() for w in ("not a trace", "traceevents", "chrome trace")), (
        f"the message does not say what is wrong: {e}"
    )


def test_phase_counts(model: Model, trace: hta_fast.Trace):
    ph = model.phases
    flows = collections.Counter(trace.flows.column("phase").to_pylist())
    got = {
        "X": trace.events.num_rows,
        "s": flows.get("s", 0),
        "f": flows.get("f", 0),
        "t": flows.get("t", 0),
        "C values": trace.counters.num_rows,
        "i/I": trace.instants.num_rows,
        "M": trace.meta_events.num_rows,
    }
    expected = {
        "X": ph["X"],
        "s": ph["s"],
        "f": ph["f"],
        "t": ph["t"],
        "C values": model.counter_values,
        "i/I": ph["i"] + ph["I"],
        "M": ph["M"],
    }
    assert got == expected
    assert sum(flows.values()) == trace.flows.num_rows


def test_kinds_follow_categories(model: Model, trace: hta_fast.Trace):
    kinds = trace.events.column("kind").to_pylist()
    bad = [
        (i, c, k, m) for i, (c, k, m) in enumerate(zip(model.cats, kinds, model.kinds)) if k != m
    ]
    assert not bad, f"{len(bad)} rows of the wrong kind, first (row, cat, got, expected): {bad[:5]}"


def test_gpu_events_per_stream(model: Model, trace: hta_fast.Trace):
    ev = trace.events
    gpu = [k in GPU_KINDS for k in ev.column("kind").to_pylist()]
    pids = as_written(trace, ev.column("pid").to_pylist())
    tids = as_written(trace, ev.column("tid").to_pylist())
    got = collections.Counter((p, t) for p, t, g in zip(pids, tids, gpu) if g)
    assert got == model.gpu_per_stream


def assert_links_agree(model: Model, trace: hta_fast.Trace) -> None:
    ev = trace.events
    kinds = ev.column("kind").to_pylist()
    partner = ev.column("partner").to_pylist()
    got = {i: p for i, (k, p) in enumerate(zip(kinds, partner)) if k in GPU_KINDS and p is not None}
    expected = model.links
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    wrong = sorted(i for i in set(got) & set(expected) if got[i] != expected[i])
    assert (len(got), missing, extra, wrong) == (len(expected), [], [], []), (
        f"linked GPU events: got {len(got)}, model {len(expected)} "
        f"({model.links_by_correlation} by correlation, {model.links_by_flow} by flow); "
        f"unlinked rows {missing[:5]}, extra rows {extra[:5]}, "
        f"other launch (row, got, expected) {[(i, got[i], expected[i]) for i in wrong[:5]]}"
    )


def test_launch_links(model: Model, trace: hta_fast.Trace):
    assert_links_agree(model, trace)


def test_launch_links_by_flow_alone(doc: dict, model: Model):
    """The same trace with args.correlation removed from its GPU events (as in stripped
    traces): only the launch flows link, and no real trace here needs them otherwise."""
    if not any(k in LINKED_GPU_KINDS for k in model.kinds):
        pytest.skip("no GPU events")

    def strip(e: dict) -> dict:
        args = e.get("args")
        if e.get("ph") != "X" or kind_of(e) not in GPU_KINDS or not isinstance(args, dict):
            return e
        return {**e, "args": {k: v for k, v in args.items() if k != "correlation"}}

    stripped = {**doc, "traceEvents": [strip(e) for e in doc["traceEvents"]]}
    expected = build_model(stripped)
    assert expected.links_by_correlation == 0
    # Decimals go out as floats, whose repr gives back the digits that were read.
    trace = hta_fast.load(json.dumps(stripped, default=float).encode())
    assert_links_agree(expected, trace)


def test_timestamps_exact_to_the_ns(model: Model, trace: hta_fast.Trace):
    ts = trace.column("events", "ts")
    dur = trace.column("events", "dur")
    for name, got, expected in (("ts", ts, model.ts), ("dur", dur, model.dur)):
        assert got.dtype == np.int64
        assert got.shape == expected.shape
        diff = np.flatnonzero(got != expected)
        assert diff.size == 0, (
            f"{name}: {diff.size} rows differ, first (row, got, expected): "
            f"{[(int(i), int(got[i]), int(expected[i])) for i in diff[:5]]}"
        )


def test_names_and_categories(model: Model, trace: hta_fast.Trace):
    for column, expected in (("name", model.names), ("cat", model.cats)):
        got = trace.events.column(column).to_pylist()
        assert len(got) == len(expected)
        diff = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
        assert not diff, (
            f"{column}: {len(diff)} rows differ, first (row, got, expected): "
            f"{[(i, got[i], expected[i]) for i in diff[:3]]}"
        )


def numeric_string_as_number(v: Any) -> Any:
    """The loader reads an id written as a numeric string ("1890023232") as that number."""
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    return v


def test_pid_and_tid(model: Model, trace: hta_fast.Trace):
    for column, written in (("pid", model.pids), ("tid", model.tids)):
        expected = [numeric_string_as_number(v) for v in written]
        raw = trace.events.column(column).to_pylist()
        numeric = [i for i, e in enumerate(expected) if is_number(e)]
        diff = [i for i in numeric if raw[i] != expected[i]]
        assert not diff, (
            f"{column}: {len(diff)} numeric ids differ, first (row, got, "
            f"expected): {[(i, raw[i], expected[i]) for i in diff[:5]]}"
        )
        got = as_written(trace, raw)
        diff = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
        assert not diff, (
            f"{column}: {len(diff)} string ids differ, first (row, got, "
            f"expected): {[(i, got[i], expected[i]) for i in diff[:5]]}"
        )


def test_rank(model: Model, trace: hta_fast.Trace):
    dist = model.header.get("distributedInfo")
    expected = dist.get("rank") if isinstance(dist, dict) else None
    assert trace.meta.rank == expected


def test_threads_and_chunks_agree(path: Path, trace: hta_fast.Trace):
    one = hta_fast.load(path, threads=1)
    many = hta_fast.load(path, threads=2, chunk_size=SMALL_CHUNK)
    assert one.events.equals(many.events), "threads=1 and threads=2 with 64 KiB chunks differ"
    assert one.events.equals(trace.events), "threads=1 and the default load differ"
    # String ids are in order of first appearance whatever the threads: same dictionary.
    assert one.strings.equals(many.strings), "the string pools differ"
    assert np.array_equal(one.column("events", "name"), many.column("events", "name"))
    for table in TABLE_ATTRIBUTES:
        assert getattr(one, table).equals(getattr(many, table)), f"{table} differs"


# --- load_dir ------------------------------------------------------------------------------


def test_load_dir_eight_ranks(traces_dir: Path):
    folder = traces_dir / "param_dlrm_8rank"
    ranks = hta_fast.load_dir(folder)
    assert list(ranks) == list(range(8))
    for rank, trace in ranks.items():
        assert Path(trace.meta.path) == folder / f"worker{rank}.pt.trace.json.gz"
        assert trace.rank == rank and trace.meta.rank == rank


def test_load_dir_two_files_one_rank(traces_dir: Path):
    files = [
        traces_dir / "hta/trace_filter/sampled_rank-0.json.gz",
        traces_dir / "hta/timeline_analysis/sampled_rank-0.json.gz",
    ]
    with pytest.raises(ValueError) as err:
        hta_fast.load_dir(files)
    message = str(err.value)
    assert all(str(f) in message for f in files), message
    assert "rank 0" in message


def test_load_dir_skips_non_traces_only_when_asked(traces_dir: Path):
    # hta/execution_trace holds a profiler trace and a PyTorch execution trace (not a
    # Chrome trace): strict loading names the odd file; skip_non_traces leaves it out.
    folder = traces_dir / "hta" / "execution_trace"
    with pytest.raises(hta_fast.TraceFormatError) as ei:
        hta_fast.load_dir(folder)
    assert "benchmark_simple_add_et" in str(ei.value)
    with pytest.warns(UserWarning, match="benchmark_simple_add_et.*not a trace"):
        ranks = hta_fast.load_dir(folder, skip_non_traces=True)
    assert list(ranks) == [0]
    assert Path(ranks[0].meta.path).name == "benchmark_simple_add_trace.json.gz"
    with pytest.raises(FileNotFoundError):
        hta_fast.load_dir([folder / "benchmark_simple_add_et.json.gz"], skip_non_traces=True)
