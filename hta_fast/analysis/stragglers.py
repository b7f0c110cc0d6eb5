"""Which ranks make the others wait: stragglers.

A collective ends at about the same time on every rank, so the rank that starts it last is
the one the others waited for. Among the long communication kernels (at least
`min_duration_ratio` of the mean step time), the (stream, kernel name) whose normalised
duration varies most across ranks is the probe; on each step every rank's last such kernel
gives its metric, (start - first start of the selection) / mean step time.

Two rules say which ranks are stragglers:
- "latest" (the default, the reference tool's): the `num_candidates` latest ranks of each
  step are flagged; ranks are ranked by how often they were flagged, then by how late they
  started on average, and the first `num_candidates` are the stragglers. It always names
  some, even among identical ranks.
- "robust": a rank is a straggler when its mean start delay (after the step's earliest
  rank, in mean step times) stands out from the other ranks' (`high_outliers`, with the
  margin counted in mean step times): none among identical ranks, however many.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .._arrow import array_of, nan_as_null, texts_at
from ..frame import select
from ..frame.fields import NS
from ..frame.result import Result
from ..frame.select import Ranks, Selection, Steps, Streams, Window
from ..schema import EventKind, KernelClass
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["stragglers", "high_outliers", "OUTLIER_SIGMAS", "OUTLIER_MIN_MARGIN"]

# A value is an outlier beyond this many robust standard deviations of the others...
OUTLIER_SIGMAS = 3.0
# ...and beyond this fraction of their median: identical ranks have a tiny MAD, and their
# noise would pass the first test alone.
OUTLIER_MIN_MARGIN = 0.05
# MAD times this estimates the standard deviation of normally distributed values.
MAD_TO_SIGMA = 1.4826
# Up to this many values each candidate is compared with the others only (with two ranks
# the whole set's MAD is half their difference, and nothing would ever stand out); beyond,
# one value moves the median and MAD by at most one order statistic in a thousand, and the
# whole set's are used.
_LEAVE_ONE_OUT_UP_TO = 1024
RULES = ("latest", "robust")


def high_outliers(
    values: Any,
    *,
    sigmas: float = OUTLIER_SIGMAS,
    min_margin: float = OUTLIER_MIN_MARGIN,
    scale: Optional[float] = None,
) -> np.ndarray:
    """Which values stand out above the others, by robust statistics: value x is flagged
    when, with m the median and s = 1.4826 * MAD of the other values,
    x > m + sigmas * s  and  x > m + min_margin * (scale if given, else |m|).
    NaN is never flagged and is left out of the others. Scaling every value (and `scale`)
    by a positive constant flags the same values. Returns a bool array."""
    x = np.asarray(values, np.float64).reshape(-1)
    out = np.zeros(len(x), bool)
    finite = np.isfinite(x)
    xs = np.sort(x[finite])
    if len(xs) < 2:
        return out
    # Removing the largest value gives the lowest median the others of any value can have:
    # only values above it (by the margin) can be flagged.
    floor = float(np.median(xs[:-1]))
    least = min_margin * (scale if scale is not None else max(floor, 0.0))
    cand = np.flatnonzero(finite & (x > floor + least))
    if len(cand) == 0:
        return out
    if len(xs) > _LEAVE_ONE_OUT_UP_TO:
        med = float(np.median(xs))
        sig = MAD_TO_SIGMA * float(np.median(np.abs(xs - med)))
        bar = med + max(sigmas * sig, min_margin * (scale if scale is not None else abs(med)))
        out[cand] = x[cand] > bar
        return out
    for i in cand:
        # The others: the sorted values without one copy of x[i].
        rest = np.delete(xs, np.searchsorted(xs, x[i]))
        med = float(np.median(rest))
        sig = MAD_TO_SIGMA * float(np.median(np.abs(rest - med)))
        margin = min_margin * (scale if scale is not None else abs(med))
        out[i] = x[i] > med + sigmas * sig and x[i] > med + margin
    return out


def _group_codes(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct key rows sorted, code of each input row) for integer key columns."""
    stacked = np.stack([np.asarray(k, np.int64) for k in keys], axis=1)
    uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def _empty(notes: list[str], params: dict) -> Result:
    table = pa.table(
        {
            "rank": array_of([], pa.int64()),
            "is_straggler": array_of([], pa.bool_()),
            "straggler_steps": array_of([], pa.int64()),
            "normalized_start_time": array_of([], pa.float64()),
            "start_delay": array_of([], pa.int64()),
            "kernel_duration": array_of([], pa.int64()),
        }
    )
    return Result(
        "stragglers",
        _with_units(table, ("start_delay", "kernel_duration")),
        tables={"per_step": pa.table({}), "kernels": pa.table({})},
        notes=notes,
        params=params,
    )


def _with_units(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    fields = [f.with_metadata(NS) if f.name in columns else f for f in table.schema]
    return table.cast(pa.schema(fields))


def stragglers(
    traces: Union[Trace, TraceSet],
    *,
    num_candidates: int = 2,
    rule: str = "latest",
    min_duration_ratio: float = 0.01,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """Potential straggler ranks.

    rule "latest" (the reference tool's): the `num_candidates` ranks most often among the
    latest to start the probe kernel. rule "robust": the ranks whose mean start delay, in
    mean step times, is more than OUTLIER_SIGMAS (3) robust standard deviations (1.4826 *
    MAD) above the other ranks' median and more than OUTLIER_MIN_MARGIN (0.05) of a mean
    step time above it (`high_outliers`); `num_candidates` is not used. Clock skew between
    ranks shifts start delays: skew spread evenly is not flagged, one far-off clock is.

    Tables: main (one row per rank that ran the probe kernel, strongest straggler first):
    rank, is_straggler, straggler_steps (steps where the rank was among the latest
    starters, or with "robust", stood out in that step), normalized_start_time (mean over steps),
    start_delay (mean ns after the earliest rank's start of the probe kernel),
    kernel_duration (mean ns); "per_step": the probe kernel of every (rank, step);
    "kernels": the candidate (stream, name) pairs and how much their duration varies
    across ranks. `params["stragglers"]` is the list of ranks.
    """
    sel = select.selection_of(selection, ranks, steps, window, streams)
    if rule not in RULES:
        raise ValueError(f"unknown straggler rule {rule!r}; rules: {', '.join(RULES)}")
    num_candidates = max(1, int(num_candidates))
    params: dict[str, Any] = {
        "rule": rule,
        "num_candidates": num_candidates,
        "min_duration_ratio": min_duration_ratio,
        "steps": None if sel.steps is None else list(sel.steps),
    }

    t_min, t_end, n_steps, parts, n_ranks = _steps_span_and_comm_kernels(traces, sel)
    if t_min is None or t_end is None:
        return _empty(["no events inside profiler steps"], params)
    mean_step = (t_end - t_min) / n_steps
    params.update(mean_step_time=mean_step, first_start=t_min, n_steps=n_steps)
    if not parts:
        return _empty(["no communication kernels inside profiler steps"], params)
    if n_ranks < 2:
        return _empty(["stragglers compare ranks: only one rank selected"], params)

    rank_a, stream_a, step_a, ts_a, dur_a, name_a = _long_kernels(
        parts, min_duration_ratio * mean_step
    )
    if len(ts_a) == 0:
        return _empty(
            [
                "no communication kernel is long enough "
                f"(>= {min_duration_ratio:g} of the mean step time)"
            ],
            params,
        )
    name_list, name_code = np.unique(name_a.astype(object), return_inverse=True)
    name_code = name_code.reshape(-1)
    r, s, p, n, t, d = _last_kernel_per_group(rank_a, stream_a, step_a, name_code, ts_a, dur_a)

    sn_keys, score, any_valid = _duration_spread(s, p, n, d / mean_step)
    if not any_valid:
        return _empty(["no long communication kernel ran on two ranks in the same step"], params)
    best = int(np.nanargmax(score))
    kernels = _kernels_table(sn_keys, name_list, score, best)
    probe_stream, probe_name = int(sn_keys[best, 0]), int(sn_keys[best, 1])
    params.update(stream=probe_stream, kernel=str(name_list[probe_name]))

    m = (s == probe_stream) & (n == probe_name)
    r, p, t, d = r[m], p[m], t[m], d[m]
    metric = (t - t_min) / mean_step
    delay, flagged = _flag_per_step(p, t, metric, rule, num_candidates, mean_step)

    per_step = _per_step_table(
        r, p, t, d, delay, metric, flagged, probe_stream, str(name_list[probe_name]), mean_step
    )
    table, chosen, n_probed = _rank_table(
        r, d, metric, delay, flagged, rule, num_candidates, mean_step
    )
    params["stragglers"] = chosen
    notes = []
    missing = n_ranks - n_probed
    if missing:
        notes.append(f"{missing} selected rank(s) did not run the probe kernel")
    return Result(
        "stragglers",
        table,
        tables={"per_step": per_step, "kernels": kernels},
        notes=notes,
        params=params,
    )


def _steps_span_and_comm_kernels(
    traces: Union[Trace, TraceSet], sel: Selection
) -> tuple[Optional[int], Optional[int], int, list, int]:
    """Over the selected events inside profiler steps: (first start, last end, number of
    distinct steps, per rank the columns of its communication kernels, ranks selected)."""
    t_min: Optional[int] = None
    t_end: Optional[int] = None
    step_values: set[int] = set()
    parts = []
    n_ranks = 0
    for rank, trace, mask in select.each_rank(traces, sel):
        n_ranks += 1
        col = trace.column
        step = col("events", "step")
        keep = step >= 0
        if mask is not None:
            keep &= mask
        rows = np.flatnonzero(keep)
        if len(rows) == 0:
            continue
        ts = col("events", "ts")[rows]
        dur = col("events", "dur")[rows]
        lo, hi = int(ts.min()), int((ts + np.maximum(dur, 0)).max())
        t_min = lo if t_min is None else min(t_min, lo)
        t_end = hi if t_end is None else max(t_end, hi)
        step_values.update(np.unique(step[rows]).tolist())
        comm = rows[
            (col("events", "kind")[rows] == EventKind.kernel)
            & (col("events", "kernel_class")[rows] == KernelClass.COMM)
        ]
        if len(comm):
            names = np.array(texts_at(trace.strings, col("events", "name")[comm]), object)
            parts.append(
                (
                    np.full(len(comm), rank, np.int64),
                    col("events", "stream")[comm].astype(np.int64),
                    step[comm].astype(np.int64),
                    col("events", "ts")[comm],
                    col("events", "dur")[comm],
                    names,
                )
            )
    return t_min, t_end, len(step_values), parts, n_ranks


def _long_kernels(parts: list, min_dur: float) -> tuple[np.ndarray, ...]:
    """The ranks' kernel columns joined, keeping the kernels of at least `min_dur` ns:
    (rank, stream, step, ts, dur, name)."""
    rank_a, stream_a, step_a, ts_a, dur_a, name_a = (np.concatenate(x) for x in zip(*parts))
    long_ = dur_a >= min_dur
    return tuple(x[long_] for x in (rank_a, stream_a, step_a, ts_a, dur_a, name_a))


def _last_kernel_per_group(
    rank: np.ndarray,
    stream: np.ndarray,
    step: np.ndarray,
    name: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The last (latest-starting) kernel of each (rank, stream, step, name), sorted by
    those keys: (rank, stream, step, name, ts, dur)."""
    order = np.lexsort((ts, name, step, stream, rank))
    r, s, p, n, t, d = (x[order] for x in (rank, stream, step, name, ts, dur))
    last = np.ones(len(r), bool)
    last[:-1] = (r[1:] != r[:-1]) | (s[1:] != s[:-1]) | (p[1:] != p[:-1]) | (n[1:] != n[:-1])
    return tuple(x[last] for x in (r, s, p, n, t, d))


def _duration_spread(
    stream: np.ndarray, step: np.ndarray, name: np.ndarray, norm_dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """How much each (stream, name)'s normalised duration varies across ranks: the spread
    per (stream, step, name), ddof=1, averaged over steps. Returns the (stream, name) keys,
    their spread (NaN where no step ran on two ranks) and whether any step did."""
    ssn_keys, ssn = _group_codes(stream, step, name)
    cnt = np.bincount(ssn)
    mean = np.bincount(ssn, norm_dur) / cnt
    sq = np.bincount(ssn, (norm_dur - mean[ssn]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(cnt > 1, sq / np.maximum(cnt - 1, 1), np.nan) ** 0.5
    sn_keys, sn = _group_codes(ssn_keys[:, 0], ssn_keys[:, 2])
    valid = ~np.isnan(std)
    n_valid = np.bincount(sn, valid.astype(np.int64), minlength=len(sn_keys))
    score = np.where(
        n_valid > 0,
        np.bincount(sn, np.where(valid, std, 0.0), minlength=len(sn_keys)) / np.maximum(n_valid, 1),
        np.nan,
    )
    return sn_keys, score, bool(valid.any())


def _kernels_table(
    sn_keys: np.ndarray, name_list: np.ndarray, score: np.ndarray, best: int
) -> pa.Table:
    """The "kernels" table: the candidate (stream, name) pairs, their duration spread
    across ranks and which one is the probe."""
    return pa.table(
        {
            "stream": array_of(sn_keys[:, 0], pa.int64()),
            "name": array_of(name_list[sn_keys[:, 1]].tolist(), pa.string()),
            "duration_std": nan_as_null(score, pa.float64()),
            "chosen": array_of(np.arange(len(sn_keys)) == best),
        }
    )


def _flag_per_step(
    step: np.ndarray,
    ts: np.ndarray,
    metric: np.ndarray,
    rule: str,
    num_candidates: int,
    mean_step: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Each probe kernel's start delay after its step's earliest rank, and whether its rank
    is flagged in that step: at or above the num_candidates-th largest metric ("latest"),
    or a high outlier among the step's delays ("robust")."""
    step_keys, step_code = np.unique(step, return_inverse=True)
    step_code = step_code.reshape(-1)
    step_first = np.full(len(step_keys), np.iinfo(np.int64).max)
    np.minimum.at(step_first, step_code, ts)
    delay = ts - step_first[step_code]
    if rule == "latest":
        order = np.lexsort((-metric, step_code))
        starts = np.searchsorted(step_code[order], np.arange(len(step_keys)))
        k = np.minimum(num_candidates, np.bincount(step_code)) - 1
        threshold = metric[order][starts + k]
        flagged = metric >= threshold[step_code]
    else:
        flagged = np.zeros(len(ts), bool)
        for j in range(len(step_keys)):
            rows = np.flatnonzero(step_code == j)
            flagged[rows] = high_outliers(delay[rows] / mean_step, scale=1.0)
    return delay, flagged


def _per_step_table(
    r: np.ndarray,
    p: np.ndarray,
    t: np.ndarray,
    d: np.ndarray,
    delay: np.ndarray,
    metric: np.ndarray,
    flagged: np.ndarray,
    probe_stream: int,
    probe_name: str,
    mean_step: float,
) -> pa.Table:
    """The "per_step" table: the probe kernel of every (rank, step)."""
    return _with_units(
        pa.table(
            {
                "rank": array_of(r, pa.int64()),
                "step": array_of(p, pa.int64()),
                "stream": array_of(np.full(len(r), probe_stream), pa.int64()),
                "name": array_of([probe_name] * len(r), pa.string()),
                "ts": array_of(t, pa.int64()),
                "dur": array_of(d, pa.int64()),
                "start_delay": array_of(delay, pa.int64()),
                "normalized_start_time": array_of(metric, pa.float64()),
                "normalized_duration": array_of(d / mean_step, pa.float64()),
                "is_straggler": array_of(flagged),
            }
        ),
        ("ts", "dur", "start_delay"),
    )


def _rank_table(
    rank: np.ndarray,
    dur: np.ndarray,
    metric: np.ndarray,
    delay: np.ndarray,
    flagged: np.ndarray,
    rule: str,
    num_candidates: int,
    mean_step: float,
) -> tuple[pa.Table, list[int], int]:
    """The main table (one row per rank that ran the probe kernel, strongest straggler
    first), the stragglers' ranks and how many ranks ran the probe kernel."""
    rank_keys, rc = np.unique(rank, return_inverse=True)
    rc = rc.reshape(-1)
    steps_per_rank = np.bincount(rc)
    count = np.bincount(rc, flagged.astype(np.int64)).astype(np.int64)
    mean_metric = np.bincount(rc, metric) / steps_per_rank
    mean_delay = np.rint(np.bincount(rc, delay) / steps_per_rank).astype(np.int64)
    mean_dur = np.rint(np.bincount(rc, dur) / steps_per_rank).astype(np.int64)
    if rule == "latest":
        order = np.lexsort((rank_keys, -mean_metric, -count))
        chosen = order[:num_candidates]
        is_str = np.zeros(len(rank_keys), bool)
        is_str[chosen] = True
    else:
        mean_delay_f = np.bincount(rc, delay) / steps_per_rank
        is_str = high_outliers(mean_delay_f / mean_step, scale=1.0)
        order = np.lexsort((rank_keys, -mean_delay_f, ~is_str))
        chosen = order[: int(is_str.sum())]
    table = _with_units(
        pa.table(
            {
                "rank": array_of(rank_keys[order], pa.int64()),
                "is_straggler": array_of(is_str[order]),
                "straggler_steps": array_of(count[order], pa.int64()),
                "normalized_start_time": array_of(mean_metric[order], pa.float64()),
                "start_delay": array_of(mean_delay[order], pa.int64()),
                "kernel_duration": array_of(mean_dur[order], pa.int64()),
            }
        ),
        ("start_delay", "kernel_duration"),
    )
    return table, [int(x) for x in rank_keys[chosen]], len(rank_keys)
