"""Cross-rank analyses of collectives and steps, computed from the ranks' summaries.

They read only hta_fast.loading.summary.RankSummary (a few KB a rank), so they run the same on a
TraceSet in memory and on a TraceDataset loaded on a Dask cluster, whatever the number of ranks.

Matching: the n-th collective of a process group on one rank is the n-th of that group on every
other rank (NCCL runs a communicator's collectives in order). The group is the process group
named by the collective's arguments, else the CUDA stream it ran on ("stream N").

Time: a collective cannot finish on any rank before the last rank has arrived, so on each rank
its duration is the wait for the last rank plus the time moving data; the shortest duration
across ranks (the last arriver's, which waits for nobody) is taken as the time moving data and
the rest of each rank's duration as waiting. Bandwidths are nccl-tests': algorithm bandwidth
= bytes / time moving data, bus bandwidth = algorithm bandwidth x factor(collective, n)
(bytes and factor: hta_fast.costs.collectives, which every consumer of collective sizes calls).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow import array_of, as_numpy, nan_as_null
from ..costs.collectives import bus_factor
from ..frame.fields import NS
from ..frame.result import Result
from ..loading.summary import (
    COLLECTIVES_SCHEMA,
    STEPS_SCHEMA,
    RankSummary,
    collective_rows,
    summaries_of,
)
from ..traceset import TraceSet

__all__ = [
    "collectives",
    "kernel_waits",
    "KernelWaits",
    "late_arrivals",
    "step_spread",
    "clock_offsets",
]

GBPS = {"unit": "GB/s"}


def _pick(
    summaries: dict[int, RankSummary], ranks: Optional[Sequence[int]]
) -> dict[int, RankSummary]:
    if ranks is None:
        return summaries
    wanted = set(int(r) for r in ranks)
    return {r: s for r, s in summaries.items() if r in wanted}


def _all_collectives(summaries: dict[int, RankSummary], steps: Optional[Sequence[int]]) -> pa.Table:
    """Every rank's collectives, GPU kernels' then CPU ones' (gloo), with rank and side."""
    # One concatenation, then the rank and side of every row at once: a column appended
    # to each of thousands of small tables costs more than the tables hold.
    parts = [
        (t, r, side)
        for r, s in summaries.items()
        for t, side in ((s.collectives, "gpu"), (s.cpu_collectives, "cpu"))
        if t.num_rows
    ]
    if not parts:
        return (
            COLLECTIVES_SCHEMA.empty_table()
            .append_column("rank", array_of([], pa.int64()))
            .append_column("side", array_of([], pa.string()))
        )
    counts = np.array([t.num_rows for t, _, _ in parts], np.int64)
    ranks = np.repeat(np.array([r for _, r, _ in parts], np.int64), counts)
    sides = [side for (_, _, side), k in zip(parts, counts.tolist()) for _ in range(k)]
    table = (
        pa.concat_tables([t for t, _, _ in parts])
        .append_column("rank", array_of(ranks))
        .append_column("side", array_of(sides, pa.string()))
    )
    if steps is not None:
        keep = np.isin(as_numpy(table["step"]), np.asarray(list(steps), np.int64))
        table = table.filter(array_of(keep))
    return table


def _group_by(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct key, code of each row), keys sorted."""
    stacked = np.stack(keys, axis=1) if keys[0].size else np.zeros((0, len(keys)), np.int64)
    _, first, code = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    return first, code.reshape(-1)


def _matched(
    traces: Any, ranks: Optional[Sequence[int]], steps: Optional[Sequence[int]]
) -> tuple[pa.Table, dict[str, np.ndarray], int]:
    """Every rank's collectives with the code of its matched collective, and per-match
    reductions: first/last start, the last rank, shortest duration..."""
    summaries = _pick(summaries_of(traces), ranks)
    table = _all_collectives(summaries, steps)
    group_names, group_code = (
        np.unique(
            np.asarray(table["group"].to_pylist(), dtype=object).astype(str), return_inverse=True
        )
        if table.num_rows
        else (np.array([], str), np.zeros(0, np.int64))
    )
    group_code = np.asarray(group_code, np.int64).reshape(-1)
    key, how = _match_keys(table, group_code)
    # a collective that launched several kernels has one id on each of them: its n-th
    # kernel of an id on one rank is the n-th on every other rank
    nth = _occurrence([as_numpy(table["rank"]), group_code, key])
    first, code = _group_by([group_code, key, nth])
    m = len(first)
    rank = as_numpy(table["rank"])
    ts = as_numpy(table["ts"])
    dur = np.maximum(as_numpy(table["dur"]), 0)
    first_start = np.full(m, np.iinfo(np.int64).max)
    np.minimum.at(first_start, code, ts)
    last_start = np.full(m, np.iinfo(np.int64).min)
    np.maximum.at(last_start, code, ts)
    min_dur = np.full(m, np.iinfo(np.int64).max)
    np.minimum.at(min_dur, code, dur)
    max_dur = np.zeros(m, np.int64)
    np.maximum.at(max_dur, code, dur)
    n_ranks = np.bincount(code, minlength=m)
    # The last arriver: latest start, ties to the lowest rank; the runner-up's start says by
    # how much it was late.
    order = np.lexsort((rank, -ts, code))
    head = np.searchsorted(code[order], np.arange(m))
    last_row = order[head]
    second = np.where(n_ranks > 1, ts[order[np.minimum(head + 1, len(order) - 1)]], last_start)
    red = {
        "first": first,
        "code": code,
        "first_start": first_start,
        "last_start": last_start,
        "min_dur": min_dur,
        "max_dur": max_dur,
        "n_ranks": n_ranks,
        "last_rank": rank[last_row] if m else np.zeros(0, np.int64),
        "late_by": last_start - second,
        "group_names": group_names,
        "group_code": group_code,
        "matched_by": how[first] if m else np.zeros(0, object),
    }
    return table, red, len(summaries)


def _occurrence(keys: list[np.ndarray]) -> np.ndarray:
    """Per row, how many earlier rows have the same keys (0 for the first)."""
    if not keys[0].size:
        return np.zeros(0, np.int64)
    _, code = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)
    code = code.reshape(-1)
    order = np.argsort(code, kind="stable")
    starts = np.searchsorted(code[order], code[order], side="left")
    out = np.empty(len(code), np.int64)
    out[order] = np.arange(len(code)) - starts
    return out


# How a collective is matched across ranks, in the order tried for each group.
MATCHED_BY = ("comms_id", "seq", "order")


def _match_keys(table: pa.Table, group_code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the key that names its collective on every rank of its group, and how it was
    found (MATCHED_BY): the arguments' Comms Id where every row of the group has one (a hash
    of the process group, sequence number and ranks: exact, whatever order the ranks ran
    them in), else their sequence number where every row has one, else the row's order
    within the group on its rank (index)."""
    n = table.num_rows
    index = as_numpy(table["index"])
    if not n:
        return index, np.zeros(0, object)
    ids = np.asarray(table["comms_id"].to_pylist(), dtype=object)
    has_id = ids != None  # noqa: E711 - elementwise
    id_code = np.unique(np.where(has_id, ids, "").astype(str), return_inverse=True)[1]
    seq = as_numpy(table["seq"])
    has_seq = ~np.isnan(np.asarray(seq, np.float64))
    groups = np.unique(group_code)
    all_id = np.zeros(len(groups) + 1, bool)
    all_seq = np.zeros(len(groups) + 1, bool)
    g = np.searchsorted(groups, group_code)
    all_id[: len(groups)] = np.bincount(g, ~has_id, minlength=len(groups)) == 0
    all_seq[: len(groups)] = np.bincount(g, ~has_seq, minlength=len(groups)) == 0
    by_id, by_seq = all_id[g], ~all_id[g] & all_seq[g]
    key = np.where(by_id, id_code.reshape(-1), np.where(by_seq, np.nan_to_num(seq), index))
    how = np.where(by_id, MATCHED_BY[0], np.where(by_seq, MATCHED_BY[1], MATCHED_BY[2]))
    return key.astype(np.int64), how.astype(object)


def collectives(
    traces: Any, *, ranks: Optional[Sequence[int]] = None, steps: Optional[Sequence[int]] = None
) -> Result:
    """Collectives matched across ranks.

    Main table, one row per matched collective (group, index): collective, ranks (how many
    ran it), group_size (n of the bandwidth factor: the arguments' group size, else the
    ranks that ran it), bytes (null when neither arguments nor kernel name give the size),
    dtype, first_start, last_start, arrival_skew (last - first start), last_rank, late_by
    (how much later the last rank started than the one before it), data_time (shortest
    duration across ranks), max_dur, mean_wait (mean over ranks of duration - data_time),
    algbw_gbps, busbw_gbps (null without bytes), side ("gpu": NCCL kernels; "cpu": gloo's
    CPU events, hta_fast.loading.summary's cpu_collectives, timed by the CPU event),
    matched_by (how its ranks' kernels were found to be one collective, per group: by the
    arguments' Comms Id, else their sequence number, else their order in the group; the
    notes count each). Bytes
    sized from the launching CPU op's Input Dims (the summary's size_from) are the input
    buffer; an all-gather's is multiplied by n. Side tables: "per_rank" (every rank's
    row: arrival_delay after the first arriver, wait (duration - data_time: the time it waited
    for the last rank to arrive, whatever the ranks' clocks say), waited_for (that last rank;
    -1 where the rank ran it alone), side, match (its row in the main table)), "by_type" (per collective kind:
    count, bytes, data_time, wait_time, busbw_gbps = total bytes-weighted).
    """
    table, red, n_sel = _matched(traces, ranks, steps)
    params: dict[str, Any] = {
        "ranks": None if ranks is None else list(ranks),
        "steps": None if steps is None else list(steps),
    }
    first, code = red["first"], red["code"]
    m = len(first)
    dur = np.maximum(as_numpy(table["dur"]), 0)
    wait = dur - red["min_dur"][code] if m else np.zeros(0, np.int64)
    mean_wait = np.bincount(code, wait, minlength=m) / np.maximum(red["n_ranks"], 1)
    coll = np.asarray(table["collective"].to_pylist(), dtype=object)[first] if m else []
    n, nbytes, from_dims, gathers = _sizes(table, red, coll)
    factor = np.array([bus_factor(c, int(k)) for c, k in zip(coll, n)], np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(red["min_dur"] > 0, nbytes / red["min_dur"], np.nan)  # B/ns = GB/s
    busbw = algbw * factor
    side = np.asarray(table["side"].to_pylist(), dtype=object)[first] if m else np.zeros(0)
    notes = _notes(table, red, coll, n_sel, nbytes, from_dims, gathers, side)
    main = pa.table(
        {
            "group": array_of(
                red["group_names"][red["group_code"][first]].tolist() if m else [], pa.string()
            ),
            "index": array_of(as_numpy(table["index"])[first] if m else [], pa.int64()),
            "collective": array_of(list(coll), pa.string()),
            "ranks": array_of(red["n_ranks"], pa.int64()),
            "group_size": array_of(n, pa.int64()),
            "bytes": nan_as_null(nbytes, pa.int64()),
            "dtype": table["dtype"].take(array_of(first, pa.int64()))
            if m
            else array_of([], pa.string()),
            "first_start": array_of(red["first_start"], pa.int64()),
            "last_start": array_of(red["last_start"], pa.int64()),
            "arrival_skew": array_of(red["last_start"] - red["first_start"], pa.int64()),
            "last_rank": array_of(red["last_rank"], pa.int64()),
            "late_by": array_of(red["late_by"], pa.int64()),
            "data_time": array_of(red["min_dur"], pa.int64()),
            "max_dur": array_of(red["max_dur"], pa.int64()),
            "mean_wait": array_of(mean_wait, pa.float64()),
            "algbw_gbps": nan_as_null(algbw, pa.float64()),
            "busbw_gbps": nan_as_null(busbw, pa.float64()),
            "side": array_of(side.tolist() if m else [], pa.string()),
            "matched_by": array_of(red["matched_by"].tolist(), pa.string()),
        }
    )
    main, position = _sorted_with_units(main)
    return Result(
        "collectives",
        main,
        tables={"per_rank": _per_rank_table(table, red, wait, position), "by_type": _by_type(main)},
        notes=notes,
        params=params,
    )


def _sizes(
    table: pa.Table, red: dict[str, Any], coll: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per matched collective: (n of the bandwidth factor, bytes (NaN: unknown), whether the
    size was read from the Input Dims, whether it is an all-gather sized so)."""
    first = red["first"]
    m = len(first)
    group_size = as_numpy(table["group_size"])[first] if m else []
    nbytes = as_numpy(table["bytes"]).astype(np.float64)[first] if m else np.zeros(0)
    n = (
        np.where(
            np.isnan(np.asarray(group_size, np.float64)),
            red["n_ranks"],
            np.asarray(group_size, np.float64),
        ).astype(np.int64)
        if m
        else np.zeros(0, np.int64)
    )
    # Sized from Input Dims, an all-gather's size is its input, 1/n of the gathered output
    # that nccl-tests counts.
    from_dims = (
        np.asarray(table["size_from"].to_pylist(), dtype=object)[first] == "input_dims"
        if m
        else np.zeros(0, bool)
    )
    gathers = from_dims & (np.asarray(coll, dtype=object) == "all_gather")
    nbytes = np.where(gathers, nbytes * n, nbytes)
    return n, nbytes, from_dims, gathers


def _notes(
    table: pa.Table,
    red: dict[str, Any],
    coll: Any,
    n_sel: int,
    nbytes: np.ndarray,
    from_dims: np.ndarray,
    gathers: np.ndarray,
    side: np.ndarray,
) -> list[str]:
    """The notes on the matched collectives: kinds that differ across ranks, collectives on
    fewer ranks than selected, sizes missing or read from Input Dims, gloo's, how matched."""
    code = red["code"]
    m = len(red["first"])
    notes = []
    kinds = np.asarray(table["collective"].to_pylist(), dtype=object)
    if m and (kinds != np.asarray(coll, dtype=object)[code]).any():
        bad = int(len(np.unique(code[kinds != np.asarray(coll, dtype=object)[code]])))
        notes.append(
            f"{bad} matched collective(s) are of different kinds on different "
            "ranks: a rank skipped or added a collective in that group"
        )
    partial = int((red["n_ranks"] < n_sel).sum()) if m else 0
    if partial:
        notes.append(
            f"{partial} collective(s) ran on fewer than the {n_sel} selected ranks "
            "(process groups smaller than the world, or a rank missing)"
        )
    if m and np.isnan(nbytes).any():
        notes.append(
            f"{int(np.isnan(nbytes).sum())} collective(s) have no size (no collective "
            "arguments, and no Input Dims on the CPU op that launched the kernel, or no "
            "launch in the trace): no bandwidth for them"
        )
    if from_dims.any():
        notes.append(
            f"{int(from_dims.sum())} collective size(s) read from the Input Dims and Input "
            "type of their CPU op (the one that launched the kernel, or gloo's own), for "
            "want of collective arguments"
            + (
                f"; {int(gathers.sum())} all-gather(s) among them: the input times the "
                "group size (else the ranks that ran it)"
                if gathers.any()
                else ""
            )
        )
    if m and (side == "cpu").any():
        notes.append(
            f"{int((side == 'cpu').sum())} collective(s) ran on the CPU (gloo): their time "
            "is the CPU event's"
        )
    if not m:
        notes.append("no communication kernels")
    elif (red["matched_by"] != "order").any():
        counts = {h: int((red["matched_by"] == h).sum()) for h in MATCHED_BY}
        notes.append(
            f"matched across ranks: {counts['comms_id']} by Comms Id, {counts['seq']} by "
            f"(process group, sequence number), {counts['order']} by their order in the group"
        )
    return notes


def _sorted_with_units(main: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The main table by first start (then group, index), with its units; and each match's
    row in it."""
    m = main.num_rows
    sort = as_numpy(
        pc.sort_indices(
            main, [("first_start", "ascending"), ("group", "ascending"), ("index", "ascending")]
        )
    )
    main = main.take(array_of(sort, pa.int64()))
    position = np.empty(m, np.int64)  # each match's row in the sorted table
    position[sort] = np.arange(m)
    main = _units(
        main,
        (
            "first_start",
            "last_start",
            "arrival_skew",
            "late_by",
            "data_time",
            "max_dur",
            "mean_wait",
        ),
        GBPS_COLUMNS,
    )
    return main, position


def _per_rank_table(
    table: pa.Table, red: dict[str, Any], wait: np.ndarray, position: np.ndarray
) -> pa.Table:
    """The "per_rank" table: every rank's row of every matched collective."""
    code = red["code"]
    m = len(red["first"])
    return _units(
        pa.table(
            {
                "rank": table["rank"],
                "group": table["group"],
                "index": table["index"],
                "collective": table["collective"],
                "step": table["step"],
                "ts": table["ts"],
                "dur": table["dur"],
                "arrival_delay": array_of(
                    as_numpy(table["ts"]) - red["first_start"][code] if m else [], pa.int64()
                ),
                "wait": array_of(wait, pa.int64()),
                "waited_for": array_of(
                    np.where(red["n_ranks"][code] > 1, red["last_rank"][code], -1) if m else [],
                    pa.int64(),
                ).cast(pa.int64()),
                "side": table["side"],
                "match": array_of(position[code] if m else [], pa.int64()),
            }
        ),
        ("ts", "dur", "arrival_delay", "wait"),
        (),
    )


class KernelWaits(NamedTuple):
    """One rank's communication kernels matched across ranks (collectives' per_rank rows):
    event rows (by start), the wait for the last rank to arrive (duration - data time, ns),
    the rank waited for (-1: ran alone, or matched on no other rank) and the arrival delay
    after the first rank (ns, on the rank's clock)."""

    rows: np.ndarray
    wait: np.ndarray
    waited_for: np.ndarray
    arrival_delay: np.ndarray


def kernel_waits(
    traces: TraceSet,
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
) -> dict[int, KernelWaits]:
    """Per rank, its communication kernels with what collectives() says of each: the one
    owner of "how long this kernel waited, and for whom" (the doctor's rank_imbalance and
    the model's wait owners read it). A kernel is found by its start among its rank's
    communication kernels, as the summary lists them."""
    per_rank = collectives(traces, ranks=ranks, steps=steps)["per_rank"].to_pydict()
    rank = np.asarray(per_rank["rank"], np.int64)
    gpu = np.asarray(per_rank["side"], object) == "gpu"
    every_ts, wait, waited_for, delay = (
        np.asarray(per_rank[k], np.int64) for k in ("ts", "wait", "waited_for", "arrival_delay")
    )
    # each rank's GPU rows, ascending, by one stable sort (not a mask over every row a rank)
    gpu_rows = np.flatnonzero(gpu)
    by_rank = gpu_rows[np.argsort(rank[gpu_rows], kind="stable")]
    rank_ids, first = np.unique(rank[by_rank], return_index=True)
    bounds = np.r_[first, len(by_rank)]
    out = {}
    for i, r in enumerate(rank_ids.tolist()):
        mine = by_rank[bounds[i] : bounds[i + 1]]
        kernels = collective_rows(traces[r])
        starts = traces[r].column("events", "ts")[kernels]
        ts = every_ts[mine]
        pos = np.minimum(np.searchsorted(starts, ts), max(len(starts) - 1, 0))
        hit = (starts[pos] == ts) if len(starts) else np.zeros(len(ts), bool)
        at = mine[hit]
        out[r] = KernelWaits(kernels[pos[hit]], wait[at], waited_for[at], delay[at])
    return out


GBPS_COLUMNS = ("algbw_gbps", "busbw_gbps")


def _units(table: pa.Table, ns: Sequence[str], gbps: Sequence[str]) -> pa.Table:
    fields = [
        f.with_metadata(NS) if f.name in ns else f.with_metadata(GBPS) if f.name in gbps else f
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def _by_type(main: pa.Table) -> pa.Table:
    """Per collective kind: count, total bytes, time moving data, waiting, overall busbw."""
    kinds = np.asarray(main["collective"].to_pylist(), dtype=object).astype(str)
    names, code = np.unique(kinds, return_inverse=True)
    code = code.reshape(-1)
    k = len(names)
    nbytes = as_numpy(main["bytes"]).astype(np.float64)
    has = ~np.isnan(nbytes)
    data = as_numpy(main["data_time"]).astype(np.float64)
    busbw = as_numpy(main["busbw_gbps"])
    # busbw summed over a kind = sum(bytes x factor) / sum(data_time) over sized collectives
    eff_bytes = np.where(has, busbw * data, 0.0)
    eff_bytes = np.where(np.isnan(eff_bytes), 0.0, eff_bytes)
    sized_time = np.bincount(code, np.where(has, data, 0.0), minlength=k)
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(
            sized_time > 0, np.bincount(code, eff_bytes, minlength=k) / sized_time, np.nan
        )
    return _units(
        pa.table(
            {
                "collective": array_of(names.tolist(), pa.string()),
                "count": array_of(np.bincount(code, minlength=k), pa.int64()),
                "bytes": nan_as_null(
                    np.where(
                        np.bincount(code, has, minlength=k) > 0,
                        np.bincount(code, np.where(has, nbytes, 0.0), minlength=k),
                        np.nan,
                    ),
                    pa.int64(),
                ),
                "data_time": array_of(
                    np.bincount(code, data, minlength=k).astype(np.int64), pa.int64()
                ),
                "wait_time": array_of(
                    np.bincount(code, as_numpy(main["mean_wait"]), minlength=k), pa.float64()
                ),
                "busbw_gbps": nan_as_null(bw, pa.float64()),
            }
        ),
        ("data_time", "wait_time"),
        ("busbw_gbps",),
    )


def late_arrivals(
    traces: Any, *, ranks: Optional[Sequence[int]] = None, steps: Optional[Sequence[int]] = None
) -> Result:
    """Which rank arrives last at each collective, how often, by how much.

    One row per rank, most often last first: collectives (matched collectives it ran on
    with at least one other rank), times_last, share_last (times_last / collectives),
    total_late_by / mean_late_by / max_late_by (ns the rank started after the runner-up,
    over the collectives it was last at), total_skew (the arrival skews it caused).
    `params["latest"]` is the rank most often last (None without shared collectives).
    """
    table, red, _ = _matched(traces, ranks, steps)
    params: dict[str, Any] = {
        "ranks": None if ranks is None else list(ranks),
        "steps": None if steps is None else list(steps),
    }
    shared = red["n_ranks"] > 1
    code = red["code"]
    rank = as_numpy(table["rank"])
    rank_keys, rc = np.unique(rank[shared[code]] if len(code) else rank, return_inverse=True)
    rc = rc.reshape(-1)
    r = len(rank_keys)
    participated = np.bincount(rc, minlength=r)
    pos = np.searchsorted(rank_keys, red["last_rank"][shared])
    late = red["late_by"][shared].astype(np.int64)
    skew = (red["last_start"] - red["first_start"])[shared]
    times_last = np.bincount(pos, minlength=r)
    total = np.bincount(pos, late.astype(np.float64), minlength=r)
    max_late = np.zeros(r, np.int64)
    if len(pos):
        np.maximum.at(max_late, pos, late)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(participated > 0, times_last / np.maximum(participated, 1), 0.0)
        mean = np.where(times_last > 0, total / np.maximum(times_last, 1), 0.0)
    out = _units(
        pa.table(
            {
                "rank": array_of(rank_keys, pa.int64()),
                "collectives": array_of(participated, pa.int64()),
                "times_last": array_of(times_last, pa.int64()),
                "share_last": array_of(share, pa.float64()),
                "total_late_by": array_of(np.rint(total).astype(np.int64), pa.int64()),
                "mean_late_by": array_of(mean, pa.float64()),
                "max_late_by": array_of(max_late, pa.int64()),
                "total_skew": array_of(
                    np.bincount(pos, skew.astype(np.float64), minlength=r).astype(np.int64),
                    pa.int64(),
                ),
            }
        ),
        ("total_late_by", "mean_late_by", "max_late_by", "total_skew"),
        (),
    )
    out = out.sort_by(
        [("times_last", "descending"), ("total_late_by", "descending"), ("rank", "ascending")]
    )
    notes = [] if r else ["no collective ran on two or more of the selected ranks"]
    params["latest"] = int(out["rank"][0].as_py()) if r and times_last.max() > 0 else None
    return Result("late_arrivals", out, notes=notes, params=params)


def step_spread(
    traces: Any, *, ranks: Optional[Sequence[int]] = None, steps: Optional[Sequence[int]] = None
) -> Result:
    """Per-step time per rank and its spread across ranks.

    Main table, one row per step: ranks, min_dur, max_dur, mean_dur, spread (max - min),
    spread_pct (spread / mean), slowest_rank, fastest_rank. Side table "per_rank": rank,
    step, ts, dur, behind (dur - the step's fastest rank's)."""
    summaries = _pick(summaries_of(traces), ranks)
    parts = [
        s.steps.append_column("rank", array_of(np.full(s.steps.num_rows, r, np.int64)))
        for r, s in summaries.items()
    ]
    table = (
        pa.concat_tables(parts)
        if parts
        else STEPS_SCHEMA.empty_table().append_column("rank", array_of([], pa.int64()))
    )
    if steps is not None:
        table = table.filter(
            array_of(np.isin(as_numpy(table["step"]), np.asarray(list(steps), np.int64)))
        )
    step = as_numpy(table["step"])
    dur = as_numpy(table["dur"])
    rank = as_numpy(table["rank"])
    keys, code = np.unique(step, return_inverse=True)
    code = code.reshape(-1)
    k = len(keys)
    cnt = np.bincount(code, minlength=k)
    lo = np.full(k, np.iinfo(np.int64).max)
    hi = np.full(k, np.iinfo(np.int64).min)
    np.minimum.at(lo, code, dur)
    np.maximum.at(hi, code, dur)
    mean = np.bincount(code, dur.astype(np.float64), minlength=k) / np.maximum(cnt, 1)
    slow = np.lexsort((rank, -dur, code))
    fast = np.lexsort((rank, dur, code))
    heads = np.searchsorted(code[slow], np.arange(k))
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(mean > 0, 100.0 * (hi - lo) / mean, np.nan)
    main = _units(
        pa.table(
            {
                "step": array_of(keys, pa.int64()),
                "ranks": array_of(cnt, pa.int64()),
                "min_dur": array_of(lo, pa.int64()),
                "max_dur": array_of(hi, pa.int64()),
                "mean_dur": array_of(mean, pa.float64()),
                "spread": array_of(hi - lo, pa.int64()),
                "spread_pct": nan_as_null(pct, pa.float64()),
                "slowest_rank": array_of(rank[slow[heads]] if k else [], pa.int64()),
                "fastest_rank": array_of(rank[fast[heads]] if k else [], pa.int64()),
            }
        ),
        ("min_dur", "max_dur", "mean_dur", "spread"),
        (),
    )
    per_rank = _units(
        pa.table(
            {
                "rank": array_of(rank, pa.int64()),
                "step": array_of(step, pa.int64()),
                "ts": table["ts"],
                "dur": table["dur"],
                "behind": array_of(dur - lo[code] if k else [], pa.int64()),
            }
        ),
        ("ts", "dur", "behind"),
        (),
    ).sort_by([("step", "ascending"), ("rank", "ascending")])
    notes = [] if k else ["no profiler steps on the selected ranks"]
    return Result(
        "step_spread",
        main,
        tables={"per_rank": per_rank},
        notes=notes,
        params={
            "ranks": None if ranks is None else list(ranks),
            "steps": None if steps is None else list(steps),
        },
    )


def _medians(key: np.ndarray, value: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The median value of each distinct key (keys sorted; counts per key)."""
    if not len(counts):
        return np.zeros(0)
    v = value[np.lexsort((value, key))].astype(np.float64)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return (v[start + (counts - 1) // 2] + v[start + counts // 2]) / 2


def clock_offsets(
    traces: Any, *, ranks: Optional[Sequence[int]] = None, steps: Optional[Sequence[int]] = None
) -> Result:
    """Rank-to-rank clock offsets, from the ends of collectives.

    A collective ends at about the same moment on every rank (no rank can finish before
    the last has arrived), so a rank whose ends sit consistently after the others' has a
    clock ahead of theirs. One row per rank: offset_ns (median over the collectives it
    shared of its end - the median end across ranks), collectives (how many were used)."""
    table, red, _ = _matched(traces, ranks, steps)
    code = red["code"]
    keep = red["n_ranks"][code] > 1 if len(code) else np.zeros(0, bool)
    end = as_numpy(table["ts"]) + np.maximum(as_numpy(table["dur"]), 0)
    rank = as_numpy(table["rank"])
    end, rank, code = end[keep], rank[keep], code[keep]
    end = end - (end.min() if len(end) else 0)  # small numbers stay exact as floats
    # The median end of each matched collective (codes of shared collectives only).
    shared_codes, per_code = np.unique(code, return_counts=True)
    median = np.zeros(len(red["first"]))
    median[shared_codes] = _medians(code, end, per_code)
    delta = end - median[code] if len(code) else np.zeros(0)
    rank_keys, per_rank = np.unique(rank, return_counts=True)
    offsets = _medians(rank, delta, per_rank)
    out = _units(
        pa.table(
            {
                "rank": array_of(rank_keys, pa.int64()),
                "offset_ns": array_of(offsets, pa.float64()),
                "collectives": array_of(per_rank, pa.int64()),
            }
        ),
        ("offset_ns",),
        (),
    )
    notes = [] if len(rank_keys) else ["no collective ran on two or more of the selected ranks"]
    return Result(
        "clock_offsets",
        out,
        notes=notes,
        params={
            "ranks": None if ranks is None else list(ranks),
            "steps": None if steps is None else list(steps),
        },
    )
