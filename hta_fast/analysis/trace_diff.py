"""What changed between two traces: per operator/kernel name, how often it ran and for how
long on each side, in the chosen ranks and steps.

trace_diff compares totals over the chosen steps, as the reference tool does: by default
each side's smallest rank and its first profiler step. step_diff compares time per step:
by default every step the two sides have, less the ones that look like warm-up
(warmup_steps), with each side's mean step time. Each side is read as loaded: no time
alignment between the two.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow import array_of, as_numpy
from ..frame import select
from ..frame.derived import DATALOADER_NEXT
from ..frame.fields import NS
from ..frame.result import Result
from ..schema import GPU_KINDS, EventKind
from ..steps.warmup import warmup_steps
from ..trace import Trace
from ..traceset import TraceSet

__all__ = [
    "trace_diff",
    "ops_diff",
    "step_diff",
    "side_steps",
    "step_times",
    "EmptySelection",
    "SideSteps",
]

DEVICES = ("all", "cpu", "gpu")
CHANGES = ("added", "deleted", "increased", "decreased", "unchanged")

# Names the headline lists as the largest changes per step: enough to tell the story, few
# enough to read at a glance.
TOP_CONTRIBUTORS = 5
# The profiler's step markers carry their step's number, so every step has its own name;
# per step they are one row, which holds the host's mean step time.
STEP_MARKERS = "ProfilerStep#*"
# The DataLoader's __next__ is named by its iterator's class, which num_workers changes.
DATALOADER_NEXT_NAME = "enumerate(DataLoader)#*.__next__"


@dataclasses.dataclass(frozen=True)
class Equivalent:
    """Names that differ between two runs for the same work, compared per step as one row
    named `name`: those `pattern` matches (searched). `always`: one row on every diff (the
    step markers); else only where the two sides' names differ, said in a note."""

    name: str
    pattern: str
    what: str
    always: bool = False


EQUIVALENT_NAMES = (
    Equivalent(STEP_MARKERS, r"^ProfilerStep#\d+$", "the profiler's step markers", always=True),
    Equivalent(
        DATALOADER_NEXT_NAME,
        DATALOADER_NEXT,
        "the DataLoader iterator's __next__, whatever its iterator class",
    ),
)

_BRACKETED = re.compile(r"<[^<>]*>|\([^()]*\)")
Ints = Optional[Union[int, Sequence[int]]]


def short_name(name: str) -> str:
    """A kernel or operator name without template arguments, function arguments and return
    type: `void at::native::foo<float, 4>(int, float)` -> `at::native::foo`. Memcpy and
    Memset names, and names without brackets, are kept as they are."""
    if name.startswith(("Memcpy", "Memset")) or ("<" not in name and "(" not in name):
        return name
    s = name.replace("->", "")
    while True:
        t = _BRACKETED.sub("", s)
        if t == s:
            break
        s = t
    # Brackets left unbalanced: drop what an unmatched closer would have closed.
    for opener, closer in (("<", ">"), ("(", ")")):
        while closer in s:
            i = s.index(closer)
            j = s.rfind(opener, 0, i)
            s = s[: max(j, 0)] + s[i + 1 :]
    return s.split(" ")[-1]


@dataclasses.dataclass(frozen=True)
class _Names:
    """One side's events grouped by name: names (sorted), counts, summed durations (ns),
    and how many of each name's events are GPU annotations."""

    names: np.ndarray
    counts: np.ndarray
    durs: np.ndarray
    gpu_annotations: np.ndarray


def _grouped(names: np.ndarray, counts: np.ndarray, durs: np.ndarray, ann: np.ndarray) -> _Names:
    """Rows of equal name summed into one, sorted by name."""
    keys = names.astype(str) if len(names) else np.array([], str)
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(-1)
    n = len(uniq)
    return _Names(
        uniq.astype(object), _sum_by(inv, counts, n), _sum_by(inv, durs, n), _sum_by(inv, ann, n)
    )


def _ranks_of(ts: TraceSet, ranks: Ints) -> list[int]:
    if len(ts) == 0:
        raise ValueError("the trace holds no ranks")
    if ranks is None:
        return [min(ts.ranks)]
    if isinstance(ranks, (int, np.integer)):
        return [int(ranks)]
    return [int(r) for r in ranks]


def _side(
    traces: Union[Trace, TraceSet],
    ranks: Ints,
    steps: Ints,
    device: str,
    use_short: bool,
) -> tuple[_Names, list[int], list[int]]:
    """One side grouped by (short) name, its ranks and its steps. Events belong to the
    step of steps_of()."""
    ts = select.as_traceset(traces)
    ranks = _ranks_of(ts, ranks)
    missing = set(ranks) - set(ts.ranks)
    if missing:
        raise ValueError(f"no such rank(s): {sorted(missing)}; the trace holds {ts.ranks}")
    if steps is not None and isinstance(steps, (int, np.integer)):
        steps = [int(steps)]
    if steps is None:
        found = set()
        for r in ranks:
            t = ts[r]
            rows = select.profiler_step_rows(t)
            found.update(np.unique(t.column("events", "step")[rows]).tolist())
        found.discard(-1)
        if not found:
            raise ValueError(
                f"the trace has no profiler steps on rank(s) {ranks}: give it steps from "
                "elsewhere (hta_fast.steps.steps_from.with_steps_from) to compare it"
            )
        steps = [min(found)]
    step_arr = np.asarray(list(steps), np.int32)
    parts = [_rank_names(ts[r], step_arr, device, use_short) for r in ranks]
    if not parts:
        empty = np.array([], np.int64)
        return _Names(np.array([], object), empty, empty, empty), ranks, []
    joined = _grouped(
        *(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(_Names))
    )
    return joined, list(ranks), [int(s) for s in steps]


def _rank_names(t: Trace, step_arr: np.ndarray, device: str, use_short: bool) -> _Names:
    """One rank's events of the steps, on the device, grouped by (short) name; the
    profiler's own "Trace" category left out."""
    col = t.column
    kind = col("events", "kind")
    keep = np.isin(steps_of(t), step_arr)
    if device != "all":
        gpu = np.isin(kind, GPU_KINDS)
        keep &= gpu if device == "gpu" else ~gpu
    trace_cat = _string_ids(t, "Trace")
    if len(trace_cat):
        keep &= ~np.isin(col("events", "cat"), trace_cat)
    rows = np.flatnonzero(keep)
    ids, inv = np.unique(col("events", "name")[rows], return_inverse=True)
    inv = inv.reshape(-1)
    n = len(ids)
    counts = np.bincount(inv, minlength=n).astype(np.int64)
    durs = _sum_by(inv, col("events", "dur")[rows], n)
    ann = _sum_by(inv, kind[rows] == EventKind.gpu_user_annotation, n)
    strs = as_numpy(t.strings)
    names = np.array([strs[i] if i >= 0 else "" for i in ids], dtype=object)
    if use_short:
        names = np.array([short_name(x) for x in names], dtype=object)
    return _Names(names, counts, durs, ann)


def steps_of(trace: Trace) -> np.ndarray:
    """The step column, with GPU annotations given the step of the CPU annotation they
    mirror (same external id), as GPU work takes its launch's step."""
    col = trace.column
    step = col("events", "step")
    kind = col("events", "kind")
    gpu_ann = np.flatnonzero((kind == EventKind.gpu_user_annotation) & (step < 0))
    if len(gpu_ann) == 0:
        return step
    ext = col("events", "external_id")
    cpu_ann = np.flatnonzero((kind == EventKind.user_annotation) & (ext >= 0) & (step >= 0))
    if len(cpu_ann) == 0:
        return step
    order = cpu_ann[np.argsort(ext[cpu_ann], kind="stable")]
    keys = ext[order]
    pos = np.minimum(np.searchsorted(keys, ext[gpu_ann]), len(keys) - 1)
    found = (keys[pos] == ext[gpu_ann]) & (ext[gpu_ann] >= 0)
    step = step.copy()
    step[gpu_ann[found]] = step[order[pos[found]]]
    return step


def _sum_by(code: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, np.int64)
    np.add.at(out, code, values.astype(np.int64, copy=False))
    return out


def _string_ids(trace: Trace, value: str) -> np.ndarray:
    return np.flatnonzero(as_numpy(pc.equal(trace.strings, value)))


@dataclasses.dataclass(frozen=True)
class _Pair:
    """Both sides on the union of their names (sorted): counts and durations, and whether
    a name is only ever a GPU annotation (a span on the GPU timeline, not GPU work)."""

    names: np.ndarray
    c_counts: np.ndarray
    c_dur: np.ndarray
    t_counts: np.ndarray
    t_dur: np.ndarray
    annotation_only: np.ndarray


def _aligned(c: _Names, t: _Names) -> _Pair:
    cn, tn = c.names.astype(str), t.names.astype(str)
    names = np.union1d(cn, tn) if len(cn) + len(tn) else np.array([], str)
    ci, ti = np.searchsorted(names, cn), np.searchsorted(names, tn)
    n = len(names)
    arrays = {k: np.zeros(n, np.int64) for k in ("cc", "cd", "tc", "td", "ann")}
    arrays["cc"][ci], arrays["cd"][ci] = c.counts, c.durs
    arrays["tc"][ti], arrays["td"][ti] = t.counts, t.durs
    np.add.at(arrays["ann"], ci, c.gpu_annotations)
    np.add.at(arrays["ann"], ti, t.gpu_annotations)
    only = arrays["ann"] == arrays["cc"] + arrays["tc"]
    return _Pair(names, arrays["cc"], arrays["cd"], arrays["tc"], arrays["td"], only)


def _categories(control: np.ndarray, test: np.ndarray) -> np.ndarray:
    """added / deleted / increased / decreased / unchanged, by count (any comparable
    measure of how often a name ran on each side)."""
    cat = np.full(len(control), "unchanged", dtype=object)
    cat[test > control] = "increased"
    cat[test < control] = "decreased"
    cat[control == 0] = "added"
    cat[test == 0] = "deleted"
    return cat


def _check_device(device: str) -> None:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")


def trace_diff(
    control: Union[Trace, TraceSet],
    test: Union[Trace, TraceSet],
    *,
    control_rank: Ints = None,
    test_rank: Ints = None,
    control_steps: Ints = None,
    test_steps: Ints = None,
    device: str = "all",
    use_short_name: bool = False,
) -> Result:
    """Per name: control_counts, control_duration, test_counts, test_duration (ns, summed
    event durations), diff_counts and diff_duration (test - control) and
    counts_change_categories: added (only in test), deleted (only in control), increased,
    decreased or unchanged (count). Rows sorted by name.

    device: "all" events; "gpu" the events on the GPU timeline (kernels, memcpy, memset,
    syncs, GPU annotations); "cpu" the rest. use_short_name groups by short_name().
    GPU events count in the step of their launch, GPU annotations in the step of the CPU
    annotation they mirror. Time per step, over every step: step_diff.
    """
    _check_device(device)
    c, cranks, csteps = _side(control, control_rank, control_steps, device, use_short_name)
    t, tranks, tsteps = _side(test, test_rank, test_steps, device, use_short_name)
    p = _aligned(c, t)
    fields = [
        pa.field("short_name" if use_short_name else "name", pa.string()),
        pa.field("control_counts", pa.int64()),
        pa.field("control_duration", pa.int64(), metadata=NS),
        pa.field("test_counts", pa.int64()),
        pa.field("test_duration", pa.int64(), metadata=NS),
        pa.field("diff_counts", pa.int64()),
        pa.field("diff_duration", pa.int64(), metadata=NS),
        pa.field("counts_change_categories", pa.string()),
    ]
    table = pa.Table.from_arrays(
        [
            array_of(p.names.tolist(), pa.string()),
            array_of(p.c_counts),
            array_of(p.c_dur),
            array_of(p.t_counts),
            array_of(p.t_dur),
            array_of(p.t_counts - p.c_counts),
            array_of(p.t_dur - p.c_dur),
            array_of(_categories(p.c_counts, p.t_counts).tolist(), pa.string()),
        ],
        schema=pa.schema(fields),
    )
    params = {
        "control_rank": cranks,
        "test_rank": tranks,
        "control_steps": csteps,
        "test_steps": tsteps,
        "device": device,
        "use_short_name": use_short_name,
    }
    return Result("trace_diff", table, params=params)


def ops_diff(
    control: Union[Trace, TraceSet], test: Union[Trace, TraceSet], **kwargs: Any
) -> dict[str, list[str]]:
    """Names by change of count: {"added", "deleted", "increased", "decreased",
    "unchanged"} -> sorted names. Keywords as trace_diff."""
    res = trace_diff(control, test, **kwargs)
    names = res.table.column(0).to_pylist()
    cats = res.table.column("counts_change_categories").to_pylist()
    out: dict[str, list[str]] = {c: [] for c in CHANGES}
    for n, c in zip(names, cats):
        out[c].append(n)
    return out


# --- time per step ------------------------------------------------------------------------


class EmptySelection(ValueError):
    """One side of step_diff selects nothing.

    side       "control" or "test"
    missing    "rank": ranks the trace does not hold (asked); "steps": steps its ranks do not
               have (asked); "no_steps": its ranks have no steps at all
    ranks      the side's ranks (those asked, for "rank")
    available  what the side has instead: its ranks, or its ranks' steps
    source     where its steps come from (Trace.steps_source)
    """

    def __init__(
        self,
        side: str,
        missing: str,
        ranks: Sequence[int],
        available: Sequence[int],
        asked: Sequence[int] = (),
        source: str = "profiler",
    ) -> None:
        self.side, self.missing, self.source = side, missing, source
        self.ranks, self.available, self.asked = list(ranks), list(available), list(asked)
        super().__init__(self._sentence())

    def _sentence(self) -> str:
        if self.missing == "rank":
            return (
                f"{self.side} has no rank(s) {self.asked}; it holds ranks {self.available}: "
                f"pass {self.side}_rank with one of them"
            )
        if self.missing == "steps":
            return (
                f"{self.side} has none of the steps {self.asked} on rank(s) {self.ranks}; its "
                f"steps there are {steps_text(self.available)}: pass {self.side}_steps from "
                "them, or None for every step"
            )
        return (
            f"{self.side} has no {step_kind(self.source)} on rank(s) {self.ranks}: give it "
            "steps from elsewhere (hta_fast.steps.steps_from.with_steps_from)"
        )


def step_kind(source: str) -> str:
    """What a side's steps are, in words, by where they come from (Trace.steps_source)."""
    return "ProfilerStep#N events" if source == "profiler" else f"{source} steps"


def steps_text(steps: Sequence[int]) -> str:
    """Steps as --steps writes them: runs as FIRST:LAST, comma-separated (6:10, 1,3,5:7)."""
    runs: list[list[int]] = []
    for s in sorted(steps):
        if runs and s == runs[-1][1] + 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    return ",".join(str(a) if a == b else f"{a}:{b}" for a, b in runs) or "none"


def step_times(traces: Union[Trace, TraceSet], ranks: Sequence[int]) -> dict[int, int]:
    """Each step the ranks have -> its time (ns), in step order. On a rank, a step runs
    from its first start to its last end (a step recorded in two events spans both): its
    ProfilerStep#N's span on the host, or its window's span with steps from elsewhere;
    over ranks, the longest (the step is over when its slowest rank is)."""
    ts = select.as_traceset(traces)
    times: dict[int, int] = {}
    for r in ranks:
        t = ts[r]
        step = t.column("steps", "step").astype(np.int64)
        start = t.column("steps", "ts")
        end = start + np.maximum(t.column("steps", "dur"), 0)
        for s in np.unique(step).tolist():
            mine = step == s
            span = int(end[mine].max() - start[mine].min())
            times[s] = max(times.get(s, 0), span)
    return dict(sorted(times.items()))


@dataclasses.dataclass(frozen=True)
class SideSteps:
    """The steps one side of step_diff compares.

    ranks      its ranks
    times      every step its ranks have -> its time (ns, step_times)
    warmup     the steps warmup_steps flags -> why
    steps      the steps compared
    left_out   flagged steps not compared (none when the steps were asked for, or with
               keep_warmup, or when every step is flagged)
    asked      the steps were asked for (control_steps / test_steps): compared as given
    source     where its steps come from (Trace.steps_source)
    """

    ranks: list[int]
    times: dict[int, int]
    warmup: dict[int, str]
    steps: list[int]
    left_out: list[int]
    asked: bool
    source: str

    @property
    def mean_step(self) -> float:
        """Mean time (ns) of the compared steps."""
        return float(np.mean([self.times[s] for s in self.steps]))

    @property
    def warmup_compared(self) -> list[int]:
        """Flagged steps that are compared all the same."""
        return [s for s in self.steps if s in self.warmup]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["mean_step"] = self.mean_step
        return out


def side_steps(
    traces: Union[Trace, TraceSet],
    side: str,
    ranks: Ints = None,
    steps: Ints = None,
    keep_warmup: bool = False,
) -> SideSteps:
    """The steps one side compares: those asked for, as given; else every step its ranks
    have, less the warm-up ones unless keep_warmup (kept all the same when every step is
    flagged: there would be nothing left). EmptySelection when that is nothing."""
    ts = select.as_traceset(traces)
    ranks = _ranks_of(ts, ranks)
    missing = sorted(set(ranks) - set(ts.ranks))
    if missing:
        raise EmptySelection(side, "rank", ranks, ts.ranks, asked=missing)
    source = ts[ranks[0]].steps_source
    times = step_times(ts, ranks)
    if not times:
        raise EmptySelection(side, "no_steps", ranks, [], source=source)
    warmup = warmup_steps(times)
    if steps is not None:
        asked = [int(steps)] if isinstance(steps, (int, np.integer)) else [int(s) for s in steps]
        chosen = sorted(set(asked) & set(times))
        if not chosen:
            raise EmptySelection(side, "steps", ranks, list(times), asked=asked, source=source)
        return SideSteps(ranks, times, warmup, chosen, [], True, source)
    left_out = [] if keep_warmup or len(warmup) == len(times) else sorted(warmup)
    chosen = [s for s in times if s not in left_out]
    return SideSteps(ranks, times, warmup, chosen, left_out, False, source)


def _merged_equivalents(c: _Names, t: _Names) -> tuple[_Names, _Names, list[dict[str, Any]]]:
    """Both sides with the names of each EQUIVALENT_NAMES rule as its one name (where it
    applies), and the renames made that are not `always`: {name, control, test, what}."""
    c_names, t_names = c.names.copy(), t.names.copy()
    renamed = []
    for rule in EQUIVALENT_NAMES:
        found = re.compile(rule.pattern).search
        c_hit = np.array([bool(found(str(x))) for x in c_names], bool)
        t_hit = np.array([bool(found(str(x))) for x in t_names], bool)
        c_set, t_set = set(c_names[c_hit].tolist()), set(t_names[t_hit].tolist())
        if not rule.always and (not c_set or not t_set or c_set == t_set):
            continue
        c_names[c_hit], t_names[t_hit] = rule.name, rule.name
        if not rule.always:
            renamed.append(
                {
                    "name": rule.name,
                    "control": sorted(c_set),
                    "test": sorted(t_set),
                    "what": rule.what,
                }
            )
    merged = (
        _grouped(n, x.counts, x.durs, x.gpu_annotations) for n, x in ((c_names, c), (t_names, t))
    )
    return next(merged), next(merged), renamed


def _renamed_note(r: dict[str, Any]) -> str:
    return (
        f"{r['name']} is one row for control's {', '.join(r['control'])} and test's "
        f"{', '.join(r['test'])}: {r['what']}"
    )


def _per_step_table(p: _Pair, n_control: int, n_test: int, use_short: bool) -> pa.Table:
    """Per name, counts and time per step on each side and their change; GPU annotations
    (spans around GPU work, not work) after every other name, each group by the size of
    its change per step, largest first."""
    c_counts, t_counts = p.c_counts / n_control, p.t_counts / n_test
    c_dur = np.rint(p.c_dur / n_control).astype(np.int64)
    t_dur = np.rint(p.t_dur / n_test).astype(np.int64)
    # Counts per step compared exactly: c/nc vs t/nt as c*nt vs t*nc.
    cat = _categories(p.c_counts * n_test, p.t_counts * n_control)
    order = np.lexsort((p.names, -np.abs(t_dur - c_dur), p.annotation_only))
    fields = [
        pa.field("short_name" if use_short else "name", pa.string()),
        pa.field("control_counts_per_step", pa.float64()),
        pa.field("control_duration_per_step", pa.int64(), metadata=NS),
        pa.field("test_counts_per_step", pa.float64()),
        pa.field("test_duration_per_step", pa.int64(), metadata=NS),
        pa.field("diff_counts_per_step", pa.float64()),
        pa.field("diff_duration_per_step", pa.int64(), metadata=NS),
        pa.field("counts_change_categories", pa.string()),
    ]
    columns = [p.names, c_counts, c_dur, t_counts, t_dur, t_counts - c_counts, t_dur - c_dur, cat]
    return pa.Table.from_arrays(
        [array_of(col[order].tolist(), f.type) for col, f in zip(columns, fields)],
        schema=pa.schema(fields),
    )


def _steps_table(control: SideSteps, test: SideSteps) -> pa.Table:
    """One row per step of each side: its time, whether it is compared, and why it looks
    like warm-up (null when it does not)."""
    rows = [
        {
            "side": name,
            "step": s,
            "time": t,
            "compared": s in side.steps,
            "warmup": side.warmup.get(s),
        }
        for name, side in (("control", control), ("test", test))
        for s, t in side.times.items()
    ]
    schema = pa.schema(
        [
            pa.field("side", pa.string()),
            pa.field("step", pa.int64()),
            pa.field("time", pa.int64(), metadata=NS),
            pa.field("compared", pa.bool_()),
            pa.field("warmup", pa.string()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _top_contributors(table: pa.Table, spans: set[str], n: int) -> list[dict[str, Any]]:
    """The n names of a per-step table whose time per step changed most, the spans that
    hold other names' time (step markers, GPU annotations) left out."""
    names = table.column(0).to_pylist()
    diffs = table.column("diff_duration_per_step").to_pylist()
    order = sorted(range(len(names)), key=lambda i: -abs(diffs[i]))
    picked = [i for i in order if diffs[i] != 0 and names[i] not in spans][:n]
    return [{"name": names[i], "diff_duration_per_step": diffs[i]} for i in picked]


def step_diff(
    control: Union[Trace, TraceSet],
    test: Union[Trace, TraceSet],
    *,
    control_rank: Ints = None,
    test_rank: Ints = None,
    control_steps: Ints = None,
    test_steps: Ints = None,
    device: str = "all",
    use_short_name: bool = False,
    keep_warmup: bool = False,
) -> Result:
    """What changed per step: trace_diff over each side's steps (side_steps: every step
    but the warm-up ones, or those asked for), divided by the number of steps compared.

    Per name: control_counts_per_step, control_duration_per_step, test_counts_per_step,
    test_duration_per_step (ns), diff_counts_per_step, diff_duration_per_step (test -
    control) and counts_change_categories (by count per step). The step markers are one
    name, STEP_MARKERS, and so is each EQUIVALENT_NAMES rule whose names differ between the
    sides (the DataLoader's __next__, named by its iterator's class). Rows: GPU
    annotations (spans on the GPU timeline, not GPU work) after every other name, each
    group by the size of its change, largest first.
    Side table "steps": per side and step, its time (step_times), whether it is compared
    and why it looks like warm-up. params: "control" and "test" (SideSteps.to_dict, with
    mean_step in ns), "change" (test's mean step over control's, less 1; None when
    control's is 0), "top_contributors" (the TOP_CONTRIBUTORS names whose time per step
    changed most, step markers and GPU annotations left out), "renamed" (the names of work
    that the two sides name differently, compared as one row: EQUIVALENT_NAMES; each
    {name, control, test, what}, also said in a note), device, use_short_name, keep_warmup.
    Either side selecting nothing raises EmptySelection.
    """
    _check_device(device)
    c = side_steps(control, "control", control_rank, control_steps, keep_warmup)
    t = side_steps(test, "test", test_rank, test_steps, keep_warmup)
    cn, _, _ = _side(control, c.ranks, c.steps, device, use_short_name)
    tn, _, _ = _side(test, t.ranks, t.steps, device, use_short_name)
    cn, tn, renamed = _merged_equivalents(cn, tn)
    pair = _aligned(cn, tn)
    table = _per_step_table(pair, len(c.steps), len(t.steps), use_short_name)
    spans = set(pair.names[pair.annotation_only].tolist()) | {STEP_MARKERS}
    params = {
        "control": c.to_dict(),
        "test": t.to_dict(),
        "change": t.mean_step / c.mean_step - 1 if c.mean_step else None,
        "top_contributors": _top_contributors(table, spans, TOP_CONTRIBUTORS),
        "renamed": renamed,
        "device": device,
        "use_short_name": use_short_name,
        "keep_warmup": keep_warmup,
    }
    notes = [
        f"{name}: step {s} left out, it looks like warm-up ({side.warmup[s]})"
        for name, side in (("control", c), ("test", t))
        for s in side.left_out
    ] + [_renamed_note(r) for r in renamed]
    return Result(
        "trace_diff", table, tables={"steps": _steps_table(c, t)}, notes=notes, params=params
    )
