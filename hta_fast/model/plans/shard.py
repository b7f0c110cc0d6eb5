"""Sharding plans you can run (`hta-fast shard`): the tables of a job (TABLES.json), plans
(PLANS.json, or the recorded plan and three alternatives), and each plan's step predicted
from the trace of the job.

Per plan and rank:
  lookup     the embedding lookup cost model (embedding_cost) fitted on the trace's own
             lookup kernels of the sharded tables' family: latency + bytes / bandwidth of
             the rank's tables together, bytes = batch x pooling x dim x element size
  all-to-all the pooled embeddings' all-to-all at the plan's sizes (evaluate_plan's buffer:
             a rank's largest send or receive, nccl-tests' size) on the topology, by the
             collective model (hta_fast.model.comm.collective_model); the collective runs
             as long as its largest buffer
  step       the trace's steps replayed with every rank's lookup kernels at the plan's
             lookup time and the pooled all-to-alls' time moving data at the plan's
             all-to-all time, all ranks together (plan_replay.replay_plan): the rest of the
             step (the dense compute, the other collectives, the host) as measured. The
             step is device-aware, as the project measures steps
             (hta_fast.steps.step_windows): from the later of the host's
             start and the end of the GPU work carried in from the step before (as
             measured: the replay keeps it) to the end of the step's last work; per step
             the slowest rank, then the mean over the steps.

The pooled all-to-alls of the trace: on each rank the first all-to-all that starts after
its lookup kernel (forward), and every other all-to-all of the same recorded size (the
backward of the pooled output carries its gradient, the same bytes). The recorded plan
is the tables' "rank" keys in TABLES.json, checked against the trace: each rank's lookup
kernel must have looked up as many tables and rows as the plan gives it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...costs.dtypes import itemsize as dtype_itemsize
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import as_traceset
from ...steps.step_windows import step_windows
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import MatchedCollectives, match_collectives
from ..comm.collective_model import predict_collective
from ..comm.recorded_topology import recorded_machine
from ..comm.topology import Topology, load_topology
from .embedding_cost import (
    LookupCostModel,
    TableSpec,
    evaluate_plan,
    fit_lookup_costs,
    improve_plan,
)
from .embedding_lookups import lookup_kernels
from .plan_replay import family_lookups, lookup_changes, replay_plan

TABLE_KEYS = {"name", "rows", "dim", "pooling", "batch", "per_rank_batch", "dtype", "rank"}
FILE_KEYS = {"ranks", "batch", "per_rank_batch", "dtype", "tables", "source", "notes"}
RECORDED = "recorded"


@dataclasses.dataclass(frozen=True)
class ShardTables:
    """A TABLES.json read: tables (TableSpec each), ranks (the file's, or None), recorded
    (table -> rank from the tables' "rank" keys; None unless every table has one) and
    memory (table -> bytes of its weights: rows x dim x element size)."""

    tables: list[TableSpec]
    ranks: Optional[int]
    recorded: Optional[dict[str, int]]
    memory: dict[str, float]
    source: str


def _bad(origin: str, where: str, message: str) -> ValueError:
    return ValueError(f"{origin}: {where}: {message}")


def _number(origin: str, where: str, key: str, value: Any, whole: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0 or (whole and value != int(value)):
        kind = "a positive whole number" if whole else "a positive number"
        raise _bad(origin, where, f"key {key!r} must be {kind}, got {value!r}")
    return float(value)


def _itemsize(origin: str, where: str, dtype: Any) -> int:
    size = dtype_itemsize(dtype) if isinstance(dtype, str) else None
    if size is None:
        raise _bad(origin, where, f"key 'dtype': unknown dtype {dtype!r} (e.g. float32, float16)")
    return size


def tables_from_dict(
    data: Any, origin: str = "<tables>", ranks: Optional[int] = None
) -> ShardTables:
    """TABLES.json's content checked (docs/model_costs.md, "hta-fast shard"); `ranks` (the
    trace's) turns a per_rank_batch into a global batch where the file names none. A
    missing or unknown key, a wrong value or a repeated name is a ValueError naming the
    file (origin), the table and the key."""
    if not isinstance(data, dict) or not isinstance(data.get("tables"), list):
        raise _bad(origin, "top level", "expected an object with key 'tables' (a list)")
    unknown = sorted(set(data) - FILE_KEYS)
    if unknown:
        raise _bad(origin, "top level", f"unknown key(s) {unknown}; known: {sorted(FILE_KEYS)}")
    file_ranks = data.get("ranks")
    if file_ranks is not None:
        file_ranks = int(_number(origin, "top level", "ranks", file_ranks, whole=True))
    n = file_ranks or ranks
    tables, recorded, memory = [], {}, {}
    if not data["tables"]:
        raise _bad(origin, "key 'tables'", "no tables")
    for i, entry in enumerate(data["tables"]):
        where = f"table {i}"
        if not isinstance(entry, dict):
            raise _bad(origin, where, f"expected an object, got {entry!r}")
        if isinstance(entry.get("name"), str):
            where = f"table {i} ({entry['name']!r})"
        unknown = sorted(set(entry) - TABLE_KEYS)
        if unknown:
            raise _bad(origin, where, f"unknown key(s) {unknown}; known: {sorted(TABLE_KEYS)}")
        for key in ("name", "rows", "dim", "pooling"):
            if key not in entry:
                raise _bad(origin, where, f"missing key {key!r}")
        name = entry["name"]
        if not isinstance(name, str) or not name:
            raise _bad(origin, where, f"key 'name' must be a non-empty string, got {name!r}")
        if name in memory:
            raise _bad(origin, where, "key 'name': repeated")
        rows = _number(origin, where, "rows", entry["rows"], whole=True)
        dim = _number(origin, where, "dim", entry["dim"], whole=True)
        pooling = _number(origin, where, "pooling", entry["pooling"])
        size = _itemsize(origin, where, entry.get("dtype", data.get("dtype", "float32")))
        batch = entry.get("batch", None if "per_rank_batch" in entry else data.get("batch"))
        if batch is None:
            per_rank = entry.get("per_rank_batch", data.get("per_rank_batch"))
            if per_rank is None:
                raise _bad(origin, where, "missing key 'batch' (or 'per_rank_batch')")
            if n is None:
                raise _bad(origin, where, "key 'per_rank_batch' needs 'ranks' (file or trace)")
            batch = _number(origin, where, "per_rank_batch", per_rank, whole=True) * n
        batch = _number(origin, where, "batch", batch, whole=True)
        tables.append(TableSpec(name, int(rows), int(dim), pooling, int(batch), size))
        memory[name] = rows * dim * size
        if "rank" in entry:
            r = entry["rank"]
            if not isinstance(r, int) or isinstance(r, bool) or r < 0 or (n and r >= n):
                top = f"0..{n - 1}" if n else ">= 0"
                raise _bad(origin, where, f"key 'rank' must be a rank {top}, got {r!r}")
            recorded[name] = r
    placed = recorded if len(recorded) == len(tables) else None
    if recorded and placed is None:
        lost = sorted(set(memory) - set(recorded))
        raise _bad(origin, "key 'rank'", f"give every table a rank or none; without: {lost}")
    return ShardTables(tables, file_ranks, placed, memory, origin)


def read_tables(path: str, ranks: Optional[int] = None) -> ShardTables:
    """TABLES.json (tables_from_dict), with the file named in every error."""
    return tables_from_dict(_read_json(path), path, ranks)


def plans_from_list(
    data: Any, tables: Sequence[TableSpec], ranks: int, origin: str = "<plans>"
) -> dict[str, dict[str, int]]:
    """PLANS.json's content checked: a list of {"name": ..., "plan": {table: rank}} or
    {"name": ..., "ranks": [[table, ...], ...]} (rank i's tables at position i). Every
    table placed once, on a rank 0..ranks-1; errors name the file, the plan and the table."""
    if not isinstance(data, list) or not data:
        raise _bad(origin, "top level", "expected a non-empty list of plans")
    names = [t.name for t in tables]
    out: dict[str, dict[str, int]] = {}
    for i, entry in enumerate(data):
        where = f"plan {i}"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _bad(origin, where, "missing key 'name' (each plan: name and plan or ranks)")
        label = entry["name"]
        where = f"plan {i} ({label!r})"
        if label in out or label == RECORDED:
            raise _bad(origin, where, f"key 'name': {label!r} is repeated or reserved")
        unknown = sorted(set(entry) - {"name", "plan", "ranks"})
        if unknown:
            raise _bad(origin, where, f"unknown key(s) {unknown}; known: name, plan, ranks")
        if ("plan" in entry) == ("ranks" in entry):
            raise _bad(origin, where, "give one of key 'plan' ({table: rank}) or 'ranks'")
        if "plan" in entry:
            plan = entry["plan"]
            if not isinstance(plan, dict):
                raise _bad(origin, where, "key 'plan' must map table names to ranks")
        else:
            per_rank = entry["ranks"]
            if not isinstance(per_rank, list) or not all(isinstance(x, list) for x in per_rank):
                raise _bad(origin, where, "key 'ranks' must be a list of lists of table names")
            plan = {}
            for r, owned in enumerate(per_rank):
                for t in owned:
                    if t in plan:
                        raise _bad(origin, where, f"table {t!r} placed twice")
                    plan[t] = r
        for t, r in plan.items():
            if t not in names:
                raise _bad(origin, where, f"unknown table {t!r} (not in the tables file)")
            if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < ranks:
                raise _bad(origin, where, f"table {t!r}: rank {r!r} is not one of 0..{ranks - 1}")
        lost = [t for t in names if t not in plan]
        if lost:
            raise _bad(origin, where, f"table(s) {lost} not placed")
        out[label] = {t: int(plan[t]) for t in names}
    return out


def read_plans(path: str, tables: Sequence[TableSpec], ranks: int) -> dict[str, dict[str, int]]:
    """PLANS.json (plans_from_list), with the file named in every error."""
    return plans_from_list(_read_json(path), tables, ranks, path)


def _read_json(path: str) -> Any:
    try:
        with open(path) as fh:
            return json.load(fh)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON: {e}") from None


def alternatives(
    spec: ShardTables, ranks: int, *, cost: LookupCostModel, family: Optional[str] = None
) -> dict[str, dict[str, int]]:
    """Three plans: round_robin (table i on rank i mod ranks, in the file's order), greedy
    (improve_plan: the slowest rank's predicted lookup as low as a greedy search finds) and
    size_balanced (largest weights first, each on the rank holding the fewest bytes: the
    memory balanced, the lookups not looked at)."""
    names = [t.name for t in spec.tables]
    round_robin = {n: i % ranks for i, n in enumerate(names)}
    greedy = improve_plan(spec.tables, ranks, cost=cost, family=family)
    held = np.zeros(ranks)
    sized = {}
    for n in sorted(names, key=lambda n: (-spec.memory[n], names.index(n))):
        r = int(np.argmin(held))
        sized[n], held[r] = r, held[r] + spec.memory[n]
    return {"round_robin": round_robin, "greedy": greedy, "size_balanced": sized}


def _choose_family(ts: TraceSet, lookups: pa.Table, cost: LookupCostModel, n_tables: int) -> str:
    """The lookup family of the sharded tables: the one whose kernels looked up as many
    tables a step (summed over the ranks) as the file lists, else the one with the most
    lookup time."""
    fam = np.asarray(lookups["family"].to_pylist(), dtype=object)
    tables = np.asarray([t or 0 for t in lookups["tables"].to_pylist()], np.int64)
    rank = as_numpy(lookups["rank"])
    row = as_numpy(lookups["row"])
    step = np.zeros(len(row), np.int64)
    for r in ts.ranks:
        mine = rank == r
        step[mine] = ts[r].column("events", "step")[row[mine]]
    dur = as_numpy(lookups["dur"]).astype(np.float64)
    fitted = [f for f in sorted(set(fam.tolist())) if f in cost.fits]
    if not fitted:
        raise ValueError(f"no lookup curve for the trace's lookup kernels {sorted(set(fam))}")
    exact = [
        f for f in fitted if tables[fam == f].sum() == n_tables * len(np.unique(step[fam == f]))
    ]
    if len(exact) == 1:
        return exact[0]
    return max(fitted, key=lambda f: float(dur[fam == f].sum()))


def _pooled_all_to_alls(
    ts: TraceSet, matched: MatchedCollectives, lookups: pa.Table
) -> tuple[np.ndarray, str]:
    """The matched collectives (positions) that carry the pooled embeddings (module doc),
    and how they were found."""
    table = matched.result.table
    kind = np.asarray(table["collective"].to_pylist(), dtype=object)
    size = table["bytes"].to_pylist()
    lk_rank = as_numpy(lookups["rank"])
    lk_row = as_numpy(lookups["row"])
    first: list[int] = []
    for rank, rc in matched.per_rank.items():
        mine = lk_row[lk_rank == rank]
        if not len(mine) or not len(rc.rows):
            continue
        ts_col = ts[rank].column("events", "ts")
        after = ts_col[rc.rows] >= ts_col[mine].min()
        a2a = after & (kind[rc.match] == "all_to_all")
        if a2a.any():
            starts = np.where(a2a, ts_col[rc.rows], np.iinfo(np.int64).max)
            first.append(int(rc.match[int(np.argmin(starts))]))
    if not first:
        return np.zeros(0, np.int64), "no all-to-all after the lookups: all-to-alls as measured"
    fwd = max(set(first), key=first.count)
    if size[fwd] is None:
        return np.array([fwd]), f"the all-to-all after the lookups (collective {fwd}; no size)"
    same = np.flatnonzero((kind == "all_to_all") & np.array([s == size[fwd] for s in size]))
    return same, (
        f"collectives {same.tolist()}: the all-to-all after the lookups and those of its "
        f"recorded size ({size[fwd]:,} B)"
    )


def _a2a_ns(topology: Topology, nbytes: float, ranks: int) -> float:
    """The all-to-all of nbytes (nccl-tests' size) over `ranks` ranks on `topology`, ns."""
    if ranks < 2:
        return 0.0
    return 1000.0 * predict_collective("all_to_all", nbytes, topology, ranks=ranks).time_us


def shard(
    traces: Union[Trace, TraceSet],
    spec: ShardTables,
    plans: Optional[Mapping[str, Mapping[str, int]]] = None,
    *,
    cost: Optional[LookupCostModel] = None,
    family: Optional[str] = None,
    topology: Union[str, Topology, None] = None,
) -> Result:
    """Each plan's per-rank lookup and all-to-all times and its predicted step (the module
    doc), plans fastest first. plans: name -> {table: rank}; None: the recorded plan
    (spec.recorded) and alternatives(). cost: the lookup cost model (default: fitted on
    the trace's lookup kernels); family: its curve for the sharded tables (default: the
    trace's family whose kernels looked up as many tables as spec lists); topology: a file
    or shipped name (default: the recorded machine's, recorded_topology).

    Result "shard", one row per plan: order, plan, step_predicted, step_measured and
    error_pct (the recorded plan: the trace's slowest device-aware step, mean over steps),
    max_lookup_predicted, a2a_predicted (the collective), a2a_bytes, max_memory_bytes.
    Side table "ranks", per plan and rank: tables, lookup_bytes, memory_bytes,
    lookup_measured (the recorded plan: the rank's lookup kernels, mean per step),
    lookup_predicted, a2a_bytes (the rank's buffer), a2a_predicted (at it), a2a_measured
    (the recorded plan: a pooled all-to-all's time moving data, their mean), step_measured and
    step_predicted (device-aware)."""
    ts = as_traceset(traces)
    n = len(ts.ranks)
    lookups_all = lookup_kernels(ts).table
    if lookups_all.num_rows == 0:
        raise ValueError("no embedding lookup kernels in these traces: nothing to shard")
    if cost is None:
        cost = fit_lookup_costs(lookups_all)
    if family is None:
        family = (
            next(iter(cost.fits))
            if len(cost.fits) == 1
            else _choose_family(ts, lookups_all, cost, len(spec.tables))
        )
    lookups = family_lookups(lookups_all, family)
    notes = [f"lookup curve: {family} fitted on the trace's own lookup kernels (predicted)"]
    if spec.ranks is not None and spec.ranks != n:
        notes.append(f"{spec.source} names {spec.ranks} ranks; the traces hold {n}: using {n}")
    if plans is None:
        plans = _default_plans(spec, n, cost, family, notes)
    topology = _topology_of(ts, topology, notes)
    matched, pooled, factor_base, data_time = _pooled_collectives(ts, n, lookups, notes)
    offset, measured_step, measured_rank, measured_lookup = _measured(ts, lookups)
    # per pooled all-to-all, as a2a_predicted is (a step has the forward and the backward)
    a2a_measured = float(data_time[pooled].mean()) if len(pooled) else None
    rows_plans: list[dict[str, Any]] = []
    rows_ranks: list[dict[str, Any]] = []
    for label, plan in plans.items():
        ev = evaluate_plan(spec.tables, plan, n, cost=cost, family=family)
        et = ev.table
        planned = np.asarray(as_numpy(et["lookup_ns"]), np.float64)
        buffers, per_rank_a2a = _a2a_per_rank(et, topology, n)
        a2a_ns = float(per_rank_a2a.max())
        factor = _a2a_factor(factor_base, pooled, data_time, a2a_ns)
        step_of = _replayed_steps(ts, lookups, planned, factor, matched, offset)
        step_pred = _mean_slowest_step(step_of)
        is_recorded = label == RECORDED
        step_meas = float(np.mean(list(measured_step.values()))) if is_recorded else None
        memory = _memory_per_rank(spec, plan, n)
        rows_plans.append(_plan_row(label, step_pred, step_meas, planned, a2a_ns, buffers, memory))
        for i, rank in enumerate(ts.ranks):
            steps = [v for (r, _), v in step_of.items() if r == rank]
            rows_ranks.append(
                {
                    "plan": label,
                    "rank": rank,
                    "tables": int(as_numpy(et["tables"])[i]),
                    "lookup_bytes": float(as_numpy(et["lookup_bytes"])[i]),
                    "memory_bytes": float(memory[i]),
                    "lookup_measured": measured_lookup.get(rank) if is_recorded else None,
                    "lookup_predicted": float(planned[i]),
                    "a2a_bytes": float(buffers[i]),
                    "a2a_measured": a2a_measured if is_recorded else None,
                    "a2a_predicted": float(per_rank_a2a[i]),
                    "step_measured": measured_rank.get(rank) if is_recorded else None,
                    "step_predicted": float(np.mean(steps)) if steps else None,
                }
            )
        if is_recorded:
            notes += _recorded_check(spec, plan, lookups, ts)
    plans_table = _plans_by_speed(rows_plans)
    rank_table = _table(rows_ranks, RANKS_SCHEMA)
    notes.extend(_tie_note(rows_plans))
    notes.append(
        "measured: the trace (step_measured: its slowest rank's device-aware step; "
        "lookup_measured: the lookup kernels; a2a_measured: a pooled all-to-all's time "
        "moving data); predicted: the models and the replay (module doc)"
    )
    return Result(
        "shard",
        plans_table,
        tables={"ranks": rank_table},
        notes=notes,
        params={"plans": {k: dict(v) for k, v in plans.items()}, "family": family},
    )


def _default_plans(
    spec: ShardTables, n: int, cost: LookupCostModel, family: str, notes: list[str]
) -> dict[str, Mapping[str, int]]:
    """The recorded plan (where spec places the tables; else a note) and alternatives()."""
    plans: dict[str, Mapping[str, int]] = {}
    if spec.recorded is not None:
        plans[RECORDED] = spec.recorded
    else:
        notes.append(f"{spec.source} places no table ('rank' keys): no recorded plan")
    plans.update(alternatives(spec, n, cost=cost, family=family))
    return plans


def _topology_of(ts: TraceSet, topology: Union[str, Topology, None], notes: list[str]) -> Topology:
    """The topology the all-to-all runs on (a file or shipped name; None: the recorded
    machine's), with a note saying which."""
    if isinstance(topology, str):
        topology = load_topology(topology)
    if topology is None:
        machine = recorded_machine(ts)
        topology = machine.topology
        notes.append(f"all-to-all on the {machine.how} (collective model: predicted)")
    else:
        notes.append(f"all-to-all on {topology.name} (collective model: predicted)")
    return topology


def _pooled_collectives(
    ts: TraceSet, n: int, lookups: pa.Table, notes: list[str]
) -> tuple[Optional[MatchedCollectives], np.ndarray, Optional[np.ndarray], np.ndarray]:
    """The collectives matched across ranks (None on one rank), the pooled all-to-alls among
    them (with a note saying how they were found), a factor of 1 per matched collective
    (None without any) and each one's data time (ns)."""
    matched = match_collectives(ts) if n > 1 else None
    pooled = np.zeros(0, np.int64)
    factor_base = None
    if matched is not None and matched.result.table.num_rows:
        pooled, how = _pooled_all_to_alls(ts, matched, lookups)
        notes.append(f"pooled all-to-alls: {how}")
        factor_base = np.ones(matched.result.table.num_rows)
    data_time = (
        np.asarray(as_numpy(matched.result.table["data_time"]), np.float64)
        if matched is not None and matched.result.table.num_rows
        else np.zeros(0)
    )
    return matched, pooled, factor_base, data_time


def _a2a_per_rank(et: pa.Table, topology: Topology, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank of an evaluated plan: its all-to-all buffer (nccl-tests' size, bytes) and
    the all-to-all's predicted time at it (ns)."""
    send = np.asarray(as_numpy(et["a2a_send_bytes"]), np.float64)
    recv = np.asarray(as_numpy(et["a2a_recv_bytes"]), np.float64)
    buffers = np.maximum(send, recv) * n / max(n - 1, 1)
    return buffers, np.array([_a2a_ns(topology, b, n) for b in buffers])


def _a2a_factor(
    factor_base: Optional[np.ndarray], pooled: np.ndarray, data_time: np.ndarray, a2a_ns: float
) -> Optional[np.ndarray]:
    """Per matched collective, the factor its time is scaled by in the replay: the pooled
    all-to-alls take a2a_ns, the others keep theirs (None: no pooled all-to-all)."""
    factor = None
    if factor_base is not None and len(pooled):
        factor = factor_base.copy()
        ok = data_time[pooled] > 0
        factor[pooled[ok]] = a2a_ns / data_time[pooled[ok]]
    return factor


def _replayed_steps(
    ts: TraceSet,
    lookups: pa.Table,
    planned: np.ndarray,
    factor: Optional[np.ndarray],
    matched: Optional[MatchedCollectives],
    offset: Mapping[tuple[int, Any], int],
) -> dict[tuple[int, Any], float]:
    """Each (rank, step)'s predicted device-aware step with the planned lookups and the
    scaled all-to-alls, ns."""
    changes, _, _ = lookup_changes(ts, lookups, planned)
    replayed = replay_plan(ts, changes, factor, matched)
    step_of: dict[tuple[int, Any], float] = {}
    for row in replayed:
        key = (row["rank"], row["step"])
        step_of[key] = float(row["predicted"] - offset.get(key, 0))
    return step_of


def _mean_slowest_step(step_of: dict[tuple[int, Any], float]) -> float:
    """The slowest rank's step, mean over steps."""
    per_step: dict[Any, float] = {}
    for (_, s), v in step_of.items():
        per_step[s] = max(per_step.get(s, 0.0), v)
    return float(np.mean(list(per_step.values())))


def _memory_per_rank(spec: ShardTables, plan: Mapping[str, int], n: int) -> np.ndarray:
    """The bytes of the tables the plan places on each rank."""
    memory = np.zeros(n)
    names = [t.name for t in spec.tables]
    for t in names:
        memory[plan[t]] += spec.memory[t]
    return memory


def _plan_row(
    label: str,
    step_pred: float,
    step_meas: Optional[float],
    planned: np.ndarray,
    a2a_ns: float,
    buffers: np.ndarray,
    memory: np.ndarray,
) -> dict[str, Any]:
    """A plan's row of the main table (without its order)."""
    return {
        "plan": label,
        "step_predicted": step_pred,
        "step_measured": step_meas,
        "error_pct": 100.0 * (step_pred / step_meas - 1) if step_meas else None,
        "max_lookup_predicted": float(planned.max()),
        "a2a_predicted": a2a_ns,
        "a2a_bytes": float(buffers.max()),
        "max_memory_bytes": float(memory.max()),
    }


def _plans_by_speed(rows_plans: list[dict[str, Any]]) -> pa.Table:
    """The main table: the plans fastest step first, numbered; where steps tie (the
    embeddings off the critical path), the shorter slowest lookup plus all-to-all first."""
    order = sorted(
        range(len(rows_plans)),
        key=lambda i: (
            round(rows_plans[i]["step_predicted"]),
            rows_plans[i]["max_lookup_predicted"] + rows_plans[i]["a2a_predicted"],
        ),
    )
    return _table([{"order": k + 1, **rows_plans[i]} for k, i in enumerate(order)], PLANS_SCHEMA)


def _tie_note(rows_plans: list[dict[str, Any]]) -> list[str]:
    """A note when the plans tie on the step (within 0.1 %), else none."""
    steps = [r["step_predicted"] for r in rows_plans]
    if len(steps) > 1 and max(steps) - min(steps) < 0.001 * max(steps):
        lookup_a2a = max(r["max_lookup_predicted"] + r["a2a_predicted"] for r in rows_plans)
        return [
            f"the plans tie on the step (within 0.1 %): the slowest rank's lookups and "
            f"all-to-all, at most {lookup_a2a / 1e3:.1f} us, are "
            f"{100 * lookup_a2a / max(steps):.2f} % of a {max(steps) / 1e6:.2f} ms step and "
            f"off its critical path, so the sharding does not set this step; the order "
            f"is by lookup plus all-to-all"
        ]
    return []


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.table(
        {f.name: array_of([r[f.name] for r in rows], f.type) for f in schema}, schema=schema
    )


def _measured(
    ts: TraceSet, lookups: pa.Table
) -> tuple[dict[tuple[int, int], int], dict[int, float], dict[int, float], dict[int, float]]:
    """Per (rank, step) the device-aware start's offset from the host's (ns); per step the
    slowest rank's device-aware span; per rank its mean device-aware span and its lookup
    kernels' time, mean per step."""
    offset: dict[tuple[int, int], int] = {}
    per_step: dict[int, float] = {}
    per_rank: dict[int, float] = {}
    for rank in ts.ranks:
        win = step_windows(ts[rank], None)
        spans = (win.end - win.ts).astype(np.float64)
        for s, hts, t0, span in zip(
            win.step.tolist(), win.host_ts.tolist(), win.ts.tolist(), spans.tolist()
        ):
            offset[(rank, s)] = int(t0 - hts)
            per_step[s] = max(per_step.get(s, 0.0), span)
        per_rank[rank] = float(spans.mean()) if len(spans) else math.nan
    lk_rank = as_numpy(lookups["rank"])
    dur = as_numpy(lookups["dur"]).astype(np.float64)
    steps = max(1, len(per_step))
    lookup = {r: float(dur[lk_rank == r].sum()) / steps for r in ts.ranks}
    return offset, per_step, per_rank, lookup


def _recorded_check(
    spec: ShardTables, plan: Mapping[str, int], lookups: pa.Table, ts: TraceSet
) -> list[str]:
    """Where the recorded plan's tables and rows differ from what each rank's lookup
    kernels looked up (1 % tolerance on rows)."""
    out = []
    lk_rank = as_numpy(lookups["rank"])
    tables = lookups["tables"].to_pylist()
    indices = lookups["indices"].to_pylist()
    steps = max(1, len({s for r in ts.ranks for s in step_windows(ts[r], None).step.tolist()}))
    for i, rank in enumerate(ts.ranks):
        mine = np.flatnonzero(lk_rank == rank)
        rec_t = sum(tables[j] or 0 for j in mine) / steps
        rec_i = sum(indices[j] or 0 for j in mine) / steps
        want = [t for t in spec.tables if plan[t.name] == i]
        plan_i = sum(t.rows_touched for t in want)
        if rec_t != len(want) or abs(plan_i - rec_i) > 0.01 * max(rec_i, 1):
            out.append(
                f"rank {rank}: the recorded plan gives {len(want)} tables, {plan_i:,.0f} rows "
                f"touched; its lookup kernels looked up {rec_t:g} tables, {rec_i:,.0f} rows"
            )
    return out or ["recorded plan: every rank's tables and rows touched match its lookup kernels"]


PLANS_SCHEMA = pa.schema(
    [
        pa.field("order", pa.int64()),
        pa.field("plan", pa.string()),
        pa.field("step_predicted", pa.float64(), metadata=NS),
        pa.field("step_measured", pa.float64(), metadata=NS),
        pa.field("error_pct", pa.float64(), metadata=PCT),
        pa.field("max_lookup_predicted", pa.float64(), metadata=NS),
        pa.field("a2a_predicted", pa.float64(), metadata=NS),
        pa.field("a2a_bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("max_memory_bytes", pa.float64(), metadata={"unit": "B"}),
    ]
)
RANKS_SCHEMA = pa.schema(
    [
        pa.field("plan", pa.string()),
        pa.field("rank", pa.int64()),
        pa.field("tables", pa.int64()),
        pa.field("lookup_bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("memory_bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("lookup_measured", pa.float64(), metadata=NS),
        pa.field("lookup_predicted", pa.float64(), metadata=NS),
        pa.field("a2a_bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("a2a_measured", pa.float64(), metadata=NS),
        pa.field("a2a_predicted", pa.float64(), metadata=NS),
        pa.field("step_measured", pa.float64(), metadata=NS),
        pa.field("step_predicted", pa.float64(), metadata=NS),
    ]
)
