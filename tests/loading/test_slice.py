"""`hta-fast slice` and hta_fast.loading.slice_writer: a window of a trace written as Chrome
trace JSON loads back with exactly the window's events (per table, every column the loader
keeps), flows only where both ends are inside, every string escaped; the command's exit
codes; and the reference tool loads what it writes."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.cli import cli
from hta_fast.loading.slice_writer import steps_window, trace_start, write_slice
from hta_fast.schema import COLUMNS, GPU_KINDS, ColumnRole
from hta_fast.trace import Trace
from tests.support.kineto_builder import BASE_US, CPU_PID, CPU_TID, KinetoBuilder

CONTROL = "hta/trace_diff/control/control.json.gz"
VLLM = "modern/vllm_decode_full/graph_execution.json.gz"
DLRM = "param_dlrm_8rank"
MEMORY = "modern/particle_transformer/gpu_working_chrome_trace.json.gz"
COLLECTIVES = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
SYNCS = "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
# Names a writer must escape: a quote, a backslash, a newline, control characters, DEL,
# non-ASCII and a character outside the BMP (written as a surrogate pair).
ODD_NAMES = [
    'say "hi"',
    "back\\slash",
    "two\nlines",
    "bell\x07\x01\x1b[2J",
    "del\x7f",
    "é ü 名",
    "😀",
]


def run(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# --- what the loaded slice must hold, worked out from the original ------------------------
def expected_rows(trace: Trace, window: tuple[int, int]) -> np.ndarray:
    """The window's events: those starting in it, and GPU events whose launch does."""
    lo, hi = window
    ts = trace.column("events", "ts")
    inside = (ts >= lo) & (ts < hi)
    partner = trace.column("events", "partner")
    gpu = np.isin(trace.column("events", "kind"), GPU_KINDS)
    launched_inside = gpu & (partner >= 0) & inside[np.maximum(partner, 0)]
    return np.flatnonzero(inside | launched_inside)


def id_text(trace: Trace, value: int) -> object:
    name = trace.id_name(int(value))
    return int(value) if name is None else name


def plain(value: object) -> object:
    return None if isinstance(value, float) and math.isnan(value) else value


class View:
    """Rows of one trace's tables as comparable tuples: strings as text, string ids as
    their names, rows in events as the event they point at."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.strings = trace.strings.to_pylist()

    def text(self, table: str, column: str, row: int) -> object:
        value = self.trace.column(table, column)[row]
        if column in ("pid", "tid") or (table == "flows" and column == "id"):
            return id_text(self.trace, value)
        spec = COLUMNS[(table, column)]
        if spec.role is ColumnRole.string:
            return None if value < 0 else self.strings[value]
        if spec.role is ColumnRole.row:
            return None if value < 0 else self.event(int(value))
        return plain(value.item())

    def event(self, row: int) -> tuple:
        cols = ("ts", "dur", "name", "cat", "pid", "tid")
        return tuple(self.text("events", c, row) for c in cols)

    def rows(self, table: str, rows, skip: tuple[str, ...] = ()) -> list[tuple]:
        columns = [c for c in self.trace.columns(table) if c not in skip]
        return sorted((tuple(self.text(table, c, int(r)) for c in columns) for r in rows), key=repr)


def expected_flows(trace: Trace, window, events: np.ndarray) -> np.ndarray:
    """Flows of which every end of their (cat, id) is inside: bound to an event kept, or
    unbound with ts in the window."""
    lo, hi = window
    kept = np.zeros(trace.num_rows("events"), bool)
    kept[events] = True
    event, ts = trace.column("flows", "event"), trace.column("flows", "ts")
    inside = np.where(event >= 0, kept[np.maximum(event, 0)], (ts >= lo) & (ts < hi))
    groups: dict[tuple[int, int], bool] = {}
    keys = list(zip(trace.column("flows", "cat").tolist(), trace.column("flows", "id").tolist()))
    for key, ok in zip(keys, inside.tolist()):
        groups[key] = groups.get(key, True) and ok
    return np.array([i for i, key in enumerate(keys) if groups[key]], np.int64)


def assert_slice_matches(original: Trace, window, sliced: Trace) -> None:
    """The sliced trace holds exactly the window's rows of every table, column by column."""
    ours, theirs = View(original), View(sliced)
    rows = expected_rows(original, window)
    assert sliced.num_rows("events") == len(rows)
    every = range(len(rows))
    # every column the loader reads from the file; the links it derives are checked below
    derived = ("partner", "parent", "step")
    assert theirs.rows("events", every, derived) == ours.rows("events", rows, derived)
    assert_links(ours, theirs, rows)
    for table in ("kernel_args", "op_args", "comm_args", "sync_args"):
        kept = np.flatnonzero(np.isin(original.column(table, "row"), rows))
        assert theirs.rows(table, range(sliced.num_rows(table))) == ours.rows(table, kept), table
    flows = expected_flows(original, window, rows)
    assert theirs.rows("flows", range(sliced.num_rows("flows"))) == ours.rows("flows", flows)
    for table in ("counters", "instants"):
        ts = original.column(table, "ts")
        inside = np.flatnonzero((ts >= window[0]) & (ts < window[1]))
        assert theirs.rows(table, range(sliced.num_rows(table))) == ours.rows(table, inside)
    assert theirs.rows("meta", range(sliced.num_rows("meta"))) == ours.rows(
        "meta", range(original.num_rows("meta"))
    )
    header = {k: v for k, v in original.meta.header.items() if k != "baseTimeNanoseconds"}
    assert sliced.meta.header == header


def assert_links(ours: View, theirs: View, rows: np.ndarray) -> None:
    """Launch <-> GPU event links, CPU nesting and steps, where what they point at is in the
    window (else none): a step is in the slice when its ProfilerStep event is."""
    original, sliced = ours.trace, theirs.trace
    inside = set(rows.tolist())
    for column in ("partner", "parent"):
        target = original.column("events", column)[rows]
        expected = sorted(
            (ours.event(r), ours.text("events", column, r) if t in inside else None)
            for r, t in zip(rows.tolist(), target.tolist())
        )
        got = sorted(
            (theirs.event(r), theirs.text("events", column, r))
            for r in range(sliced.num_rows("events"))
        )
        assert got == expected, column
    step_rows = original.column("steps", "row")
    kept_steps = original.steps.filter(np.isin(step_rows, rows)).drop_columns(["row"])
    assert sliced.steps.drop_columns(["row"]).to_pylist() == kept_steps.to_pylist()
    kept_numbers = kept_steps.column("step").to_pylist()
    # A GPU event takes its launch's step: one whose launch is not in the window has none.
    step = original.column("events", "step")[rows]
    partner = original.column("events", "partner")[rows]
    gpu = np.isin(original.column("events", "kind")[rows], GPU_KINDS)
    step = np.where(np.isin(step, kept_numbers) & ~(gpu & ~np.isin(partner, rows)), step, -1)
    expected_steps = sorted(zip(map(ours.event, rows.tolist()), step.tolist()))
    got_steps = sorted(
        (theirs.event(r), int(s)) for r, s in enumerate(sliced.column("events", "step"))
    )
    assert got_steps == expected_steps


def sliced_copy(trace: Trace, path: Path, window, **load) -> Trace:
    write_slice(trace, path, window)
    return hta_fast.load(path, **load)


# --- a synthetic trace with every phase and argument ---------------------------------------
def everything_builder() -> KinetoBuilder:
    """Four steps of launches, copies, collectives, syncs, allocations, graph replays, ops
    with shapes, a counter, string pids and metadata; the last kernel of each step runs
    into the next."""
    b = KinetoBuilder(world_size=2)
    b.events += [
        {"ph": "M", "name": "process_name", "pid": CPU_PID, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 5}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": "Spans",
            "tid": "stream 7",
            "args": {"name": "s7"},
        },
    ]
    for s in range(4):
        t0 = s * 10_000.0
        b.step(s, t0, 10_000)
        b.events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": CPU_PID,
                "tid": CPU_TID,
                "ts": BASE_US + t0 + 5,
                "dur": 50,
                "args": {
                    "External id": 900 + s,
                    "Record function id": 7,
                    "Sequence number": 40 + s,
                    "Fwd thread id": 1,
                    "Ev Idx": 3,
                    "Input Dims": [[64, 128], [128, 256]],
                    "Input type": ["float", "float"],
                    "Input Strides": [[128, 1], [256, 1]],
                    "Concrete Inputs": ["", "", "[1, 2]"],
                },
            }
        )
        for j in range(5):
            b.kernel("gemm", t0 + 100 + j * 20, t0 + 300 + j * 1000, 900)
        b.memcpy("HtoD", t0 + 250, t0 + 5400, 100, 1 << 20)
        b.nccl("allreduce", t0 + 260, t0 + 5600, 300)
        b.events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "record_param_comms",
                "pid": CPU_PID,
                "tid": CPU_TID,
                "ts": BASE_US + t0 + 255,
                "dur": 3,
                "args": {
                    "Collective name": "all_to_allv",
                    "In msg nelems": 1024,
                    "Out msg nelems": 2048,
                    "dtype": "BFloat16",
                    "Group size": 2,
                    "Process Group Name": "0",
                    "Process Group Description": "default_pg",
                    "Process Group Ranks": "[0, 1]",
                    "In split size": "[512, 512]",
                    "Out split size": "[]",
                    "Rank": 0,
                    "Seq": 10 + s,
                },
            }
        )
        record = b.event_record(t0 + 270)
        b.event_synchronize(t0 + 280, t0 + 6000, record)
        b.graph_launch(
            t0 + 6100, [("graph_kernel_a", t0 + 6200, 50), ("graph_kernel_b", t0 + 6260, 40)]
        )
        b.captured_launch(t0 + 6400, kernel="hip_kernel")
        b.memory(t0 + 6500, 4096, 0x7F00 + s, 1 << 22)
        b.memory(t0 + 6600, -4096, 0x7F00 + s, 1 << 21)
        b.events.append(
            {
                "ph": "C",
                "name": "bw",
                "pid": 0,
                "tid": 0,
                "ts": BASE_US + t0 + 10,
                "args": {"GB/s": 1.5 + s},
            }
        )
        b.events.append(
            {
                "ph": "i",
                "s": "g",
                "name": "marker",
                "pid": "Traces",
                "tid": "PyTorch",
                "ts": BASE_US + t0 + 20,
            }
        )
        # launched in this step, run in the next: kept with the step it was launched in
        b.kernel("spill", t0 + 9_900, t0 + 10_050, 500)
    return b


@pytest.fixture(scope="module")
def everything() -> Trace:
    return everything_builder().load()


@pytest.mark.parametrize("steps", [[1], [1, 2], [0, 3]])
def test_synthetic_steps_round_trip(everything, tmp_path, steps):
    window = steps_window(everything, steps)
    sliced = sliced_copy(everything, tmp_path / "s.json.gz", window)
    assert_slice_matches(everything, window, sliced)
    assert sliced.column("steps", "step").tolist() == list(range(steps[0], steps[-1] + 1))
    # the last step's spill kernel runs past the window's end, with its launch
    names = np.array(sliced.events.column("name").to_pylist())
    spill_ts = sliced.column("events", "ts")[names == "spill"]
    assert spill_ts.max() >= window[1]
    assert sliced.num_rows("comm_args") and sliced.num_rows("sync_args")
    assert sliced.num_rows("counters") and sliced.num_rows("instants")


def test_flows_kept_only_with_both_ends_inside(everything, tmp_path):
    window = steps_window(everything, [2])
    path = tmp_path / "s.json"
    write_slice(everything, path, window)
    sliced = hta_fast.load(path)
    flows = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] in "sft"]
    ends: dict[tuple, set[str]] = {}
    for f in flows:
        ends.setdefault((f["cat"], f["id"]), set()).add(f["ph"])
    assert flows and all(v == {"s", "f"} for v in ends.values())
    assert all(f.get("bp") == "e" for f in flows if f["ph"] == "f")
    assert sliced.num_rows("flows") == len(flows)
    # Two spill kernels: the one step 2 launched, and step 1's, which runs in step 2's
    # window without its launch: kept alone, with no link and no arrow.
    spill = np.array(sliced.events.column("name").to_pylist()) == "spill"
    partner = sliced.column("events", "partner")[spill]
    assert sorted(partner >= 0) == [False, True]
    alone = sliced.column("events", "correlation")[spill][partner < 0][0]
    assert alone not in {f["id"] for f in flows}


def test_json_is_what_chrome_tracing_reads(everything, tmp_path):
    path = tmp_path / "s.json.gz"
    window = steps_window(everything, [1])
    write_slice(everything, path, window)
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert "baseTimeNanoseconds" not in doc
    assert doc["distributedInfo"]["rank"] == 0 and doc["deviceProperties"]
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "X", "s", "f", "C", "i"}
    x = [e for e in events if e["ph"] == "X"]
    assert all(isinstance(e["ts"], float) and isinstance(e["dur"], float) for e in x)
    text = gzip.decompress(path.read_bytes()).decode()
    assert f'"ts":{BASE_US + 10_000}.000' in text  # absolute µs, three decimals
    kernel = next(e for e in x if e["name"] == "gemm")
    assert kernel["args"]["grid"] == [1024, 1, 1] and kernel["args"]["block"] == [256, 1, 1]
    assert kernel["args"]["est. achieved occupancy %"] == 60
    op = next(e for e in x if e["name"] == "aten::mm")
    assert op["args"]["Input Dims"] == [[64, 128], [128, 256]]
    assert op["args"]["Concrete Inputs"] == ["", "", "[1, 2]"]
    meta = {e["name"]: e["args"] for e in events if e["ph"] == "M"}
    assert meta["process_labels"] == {"labels": "GPU 0"} and meta["process_sort_index"] == {
        "sort_index": 5
    }
    assert (
        next(e for e in events if e["ph"] == "M" and e["name"] == "thread_name")["pid"] == "Spans"
    )


def test_instants_without_arguments(tmp_path):
    b = KinetoBuilder()
    b.step(0, 0, 1_000)
    b.cpu_op("aten::add", 10, 5)
    for name, ts in (("Iteration Start", 20), ("Record Window End", 900)):
        b.events.append(
            {"ph": "i", "s": "g", "name": name, "pid": "", "tid": "", "ts": BASE_US + ts}
        )
    original = b.load()
    window = steps_window(original, [0])
    sliced = sliced_copy(original, tmp_path / "i.json", window)
    assert_slice_matches(original, window, sliced)
    assert sliced.num_rows("instants") == 2


# --- escaping ---------------------------------------------------------------------------------
def odd_builder() -> KinetoBuilder:
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    for j, name in enumerate(ODD_NAMES):
        b.cpu_op(name, 10 + j * 100, 50, cat=f"cat {name}")
        b.kernel(name, 20 + j * 100, 2_000 + j * 100, 50)
    b.events.append(
        {
            "ph": "M",
            "name": "thread_name",
            "pid": 'pid "q"\\',
            "tid": "tid\n\x02",
            "args": {"name": 'thread "name"\x03'},
        }
    )
    b.events.append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::odd",
            "pid": 'pid "q"\\',
            "tid": "tid\n\x02",
            "ts": BASE_US + 900,
            "dur": 5,
            "args": {"Input Dims": "[not json", "Input type": '{"a": NaN}', "Concrete Inputs": 5},
        }
    )
    return b


def test_escaping_round_trips(tmp_path):
    original = odd_builder().load()
    window = steps_window(original, [0])
    sliced = sliced_copy(original, tmp_path / "odd.json.gz", window)
    assert_slice_matches(original, window, sliced)
    names = set(sliced.events.column("name").to_pylist())
    assert set(ODD_NAMES) <= names
    assert {sliced.id_name(p) for p in sliced.column("events", "pid")} >= {'pid "q"\\'}
    dims = sliced.op_args.column("input_dims").to_pylist()
    assert "[not json" in dims


def test_invalid_utf8_is_written_as_replacement_characters(tmp_path):
    text = odd_builder().to_bytes().replace(b"back\\\\slash", b"bad\xff\xfeutf8")
    original = hta_fast.load(text, recover=True)
    window = steps_window(original, [0])
    path = tmp_path / "bad.json"
    write_slice(original, path, window)
    path.read_bytes().decode("ascii")  # every byte written is ASCII: escapes for the rest
    sliced = hta_fast.load(path)
    assert "bad\ufffd\ufffdutf8" in sliced.events.column("name").to_pylist()
    assert_slice_matches(original, window, sliced)


# --- real traces --------------------------------------------------------------------------------
def middle_window(trace: Trace, share: float = 0.2) -> tuple[int, int]:
    """A window around the middle event, holding about `share` of the events."""
    ts = np.sort(trace.column("events", "ts"))
    n = len(ts)
    return int(ts[int(n * (0.5 - share / 2))]), int(ts[int(n * (0.5 + share / 2))])


@pytest.mark.parametrize("name", [CONTROL, MEMORY, COLLECTIVES, SYNCS])
def test_real_trace_steps_or_window(traces_dir, tmp_path, name):
    original = hta_fast.load(traces_dir / name)
    steps = original.column("steps", "step").tolist()
    chosen = [steps[len(steps) // 2]] if steps else None
    window = steps_window(original, chosen) if chosen else middle_window(original)
    sliced = sliced_copy(original, tmp_path / "s.json.gz", window)
    assert_slice_matches(original, window, sliced)


def test_real_trace_without_steps_by_relative_window(traces_dir, tmp_path):
    trace = traces_dir / VLLM
    original = hta_fast.load(trace)
    start = trace_start(original)
    assert start is not None
    lo, hi = middle_window(original, 0.5)
    out = tmp_path / "vllm.json.gz"
    res = run("slice", trace, "--window", f"{lo - start}:{hi - start}", "-o", out)
    assert res.exit_code == 0, res.output
    assert_slice_matches(original, (lo, hi), hta_fast.load(out))
    absolute = tmp_path / "abs.json"
    res = run("slice", trace, "--window", f"{lo}:{hi}", "--absolute", "-o", absolute)
    assert res.exit_code == 0, res.output
    assert hta_fast.load(absolute).num_rows("events") == hta_fast.load(out).num_rows("events")


def test_cli_slices_every_rank_into_a_folder(traces_dir, tmp_path):
    out = tmp_path / "step10"
    res = run("slice", traces_dir / DLRM, "--steps", "10", "-o", out)
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == [f"rank-{r}.json.gz" for r in range(8)]
    originals, sliced = hta_fast.load_dir(traces_dir / DLRM), hta_fast.load_dir(out)
    assert sliced.ranks == originals.ranks
    for rank, original in originals.items():
        assert_slice_matches(original, steps_window(original, [10]), sliced[rank])
    one = tmp_path / "rank3.json.gz"
    res = run("slice", traces_dir / DLRM, "--steps", "10", "--ranks", "3", "-o", one)
    assert res.exit_code == 0, res.output
    assert hta_fast.load(one).rank == 3


# --- the command's exit codes ----------------------------------------------------------------
@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("small") / "rank-0.json"
    path.write_bytes(everything_builder().to_bytes())
    return path


@pytest.mark.parametrize(
    "args, message",
    [
        (["--steps", "9"], "no step 9"),
        (["--steps", "1,9"], "no step 9"),
        (["--steps", "0", "--ranks", "4"], "no such rank(s) [4]"),
        (["--window", "900000000000:900000000001"], "holds no event"),
        (["--window", "5:3"], "ends before it starts"),
        (["--window", "abc"], "START:END"),
        (["--steps", "1", "--window", "0:10"], "give one of --steps"),
        ([], "give one of --steps"),
        (["--steps", "1", "--absolute"], "--absolute"),
        (["--steps", "1", "--steps-from", "decode"], "no steps found"),
    ],
)
def test_bad_input_exits_2(small, tmp_path, args, message):
    res = CliRunner().invoke(cli, ["slice", str(small), "-o", str(tmp_path / "o.json"), *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not (tmp_path / "o.json").exists()


def test_bad_input_is_one_line_and_exit_2_from_the_shell(small, tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "hta_fast", "slice", str(small), "--steps", "9", "-o", "x.json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "hta-fast: error: --steps 9: rank 0 has no step 9"
    )
    assert "Traceback" not in res.stderr and not (tmp_path / "x.json").exists()


def test_output_in_the_way(small, tmp_path):
    out = tmp_path / "o.json.gz"
    assert run("slice", small, "--steps", "1", "-o", out).exit_code == 0
    again = run("slice", small, "--steps", "1", "-o", out)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert run("slice", small, "--steps", "2", "-o", out, "--overwrite").exit_code == 0
    # a folder holds one slice: an earlier one's files go, anything else is in the way
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "rank-5.json.gz").write_bytes(out.read_bytes())
    assert run("slice", small, "--steps", "1", "-o", folder).exit_code == 2
    assert run("slice", small, "--steps", "1", "-o", folder, "--overwrite").exit_code == 0
    assert sorted(p.name for p in folder.iterdir()) == ["rank-0.json.gz"]
    (folder / "other.json").write_text("{}")
    res = run("slice", small, "--steps", "1", "-o", folder, "--overwrite")
    assert res.exit_code == 2 and "trace files other than a slice's" in res.output
    assert not list(tmp_path.glob("*.partial"))


# --- the reference tool -----------------------------------------------------------------------
@pytest.mark.reference
def test_reference_loads_a_slice(traces_dir, tmp_path):
    from hta_fast.compat import TraceAnalysis
    from tests.reference.reference_results import reference_results

    # Two steps: the reference leaves a trace's last profiler step out of its analyses.
    out = tmp_path / "control_steps"
    res = run("slice", traces_dir / CONTROL, "--steps", "1011:1012", "-o", out)
    assert res.exit_code == 0, res.output
    ref = reference_results(out, analyses=["temporal_breakdown"])
    assert not ref.errors, ref.errors
    theirs = ref["temporal_breakdown"]
    ours = TraceAnalysis(trace_dir=str(out)).get_temporal_breakdown(visualize=False)
    assert theirs["kernel_time(us)"].iloc[0] > 0
    assert ours.to_dict("list") == theirs.to_dict("list")
