"""Embedding lookup cost and the sharding evaluator: per-rank lookup time and all-to-all
bytes of a plan (table -> rank), and a greedy search for a better plan.

Cost of a lookup: the rows it reads, rows touched x dim x element size bytes, through a
curve time = latency + bytes / bandwidth fitted per kernel family to the trace's lookup
kernels (hta_fast.model.plans.embedding_lookups, hta_fast.costs.time_fit) or given directly.
Table-wise sharding, as FBGEMM's table-batched kernels run it: the tables placed on one
rank are looked up by one kernel, so a rank pays the latency once and the bandwidth term
for the sum of its tables' bytes.

All-to-all of the pooled embeddings (forward): the rank holding a table looks it up for
the whole global batch and sends each other rank its share of the pooled rows, batch x
dim x element size / ranks each. A rank sends (ranks - 1) / ranks of its tables' output
and receives 1 / ranks of every other table's output.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, as_numpy
from ...costs.time_fit import TimeFit, fit_time
from ...frame.fields import NS
from ...frame.result import Result


@dataclasses.dataclass(frozen=True)
class TableSpec:
    """One embedding table: rows, dim, pooling (mean indices per sample), batch (global
    samples per step), itemsize (bytes per element)."""

    name: str
    rows: int
    dim: int
    pooling: float
    batch: int
    itemsize: int = 4

    def __post_init__(self) -> None:
        for field in ("rows", "dim", "pooling", "batch", "itemsize"):
            v = getattr(self, field)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(
                    f"table {self.name!r}: {field} must be a positive number, got {v!r}"
                )

    @property
    def rows_touched(self) -> float:
        return self.batch * self.pooling

    @property
    def lookup_bytes(self) -> float:
        """Rows read from the table in one step."""
        return self.rows_touched * self.dim * self.itemsize

    @property
    def output_bytes(self) -> float:
        """The pooled output, one row per sample."""
        return float(self.batch * self.dim * self.itemsize)


class LookupCostModel:
    """Lookup time curves per kernel family. predict(bytes, family) -> ns."""

    def __init__(
        self,
        fits: Mapping[str, TimeFit],
        errors: Optional[Mapping[str, tuple]] = None,
        notes: Sequence[str] = (),
    ):
        if not fits:
            raise ValueError("a lookup cost model needs at least one fitted family")
        self.fits = dict(fits)
        self.errors = dict(errors or {})
        self.notes = list(notes)

    @staticmethod
    def from_parameters(
        latency_ns: float, bandwidth_gbps: float, family: str = "lookup"
    ) -> "LookupCostModel":
        """A model from known parameters (a user spec or another machine's fit)."""
        if not (latency_ns >= 0 and bandwidth_gbps > 0):
            raise ValueError(
                f"latency must be >= 0 and bandwidth > 0, got {latency_ns!r}, {bandwidth_gbps!r}"
            )
        return LookupCostModel(
            {family: TimeFit("linear", float(latency_ns), float(bandwidth_gbps))}
        )

    def family(self, name: Optional[str] = None) -> TimeFit:
        if name is None:
            if len(self.fits) == 1:
                return next(iter(self.fits.values()))
            raise ValueError(f"name a kernel family, one of {sorted(self.fits)}")
        if name not in self.fits:
            raise KeyError(f"no lookup curve for {name!r}; fitted: {sorted(self.fits)}")
        return self.fits[name]

    def predict(
        self, nbytes: Union[float, np.ndarray], family: Optional[str] = None
    ) -> Union[float, np.ndarray]:
        return self.family(family).predict(nbytes)

    def table(self) -> Result:
        """Result "lookup_cost": family, form, latency_ns, bandwidth_gbps, lookups, sizes,
        fit_error_pct, holdout_error_pct (null where not measured)."""
        names = sorted(self.fits)
        err = [self.errors.get(n, (None, None, None, None)) for n in names]
        t = pa.table(
            {
                "family": array_of(names, pa.string()),
                "form": array_of([self.fits[n].form for n in names], pa.string()),
                "latency_ns": array_of([self.fits[n].latency_ns for n in names], pa.float64()),
                "bandwidth_gbps": array_of(
                    [self.fits[n].bandwidth_gbps for n in names], pa.float64()
                ),
                "lookups": array_of([e[0] for e in err], pa.int64()),
                "sizes": array_of([e[1] for e in err], pa.int64()),
                "fit_error_pct": pa.array([e[2] for e in err], pa.float64(), from_pandas=True),
                "holdout_error_pct": pa.array([e[3] for e in err], pa.float64(), from_pandas=True),
            }
        )
        return Result("lookup_cost", t, notes=self.notes)

    def __repr__(self) -> str:
        return f"<LookupCostModel {sorted(self.fits)}>"


def fit_lookup_costs(lookups: Union[Result, pa.Table]) -> LookupCostModel:
    """One curve per kernel family from lookup observations (the lookup_kernels() Result,
    or a table with family, bytes, dur). Kernels without bytes are left out; a family
    with none raises, naming the reason."""
    table = lookups.table if isinstance(lookups, Result) else lookups
    missing = [c for c in ("family", "bytes", "dur") if c not in table.column_names]
    if missing:
        raise ValueError(f"lookup observations lack column(s) {missing}; need family, bytes, dur")
    family = np.asarray(table["family"].to_pylist(), dtype=object)
    nbytes = np.asarray(as_numpy(table["bytes"]), np.float64)
    dur = np.asarray(as_numpy(table["dur"]), np.float64)
    ok = np.isfinite(nbytes) & (dur > 0)
    if not ok.any():
        raise ValueError(
            "no lookup kernel with a byte count: give the table dimension "
            "(lookup_kernels(..., dim=)) or a TableSpec-based model"
        )
    fits, errors, notes = {}, {}, []
    for f in sorted(set(family[ok].tolist())):
        rows = ok & (family == f)
        fit, err, held = fit_time(nbytes[rows], dur[rows])
        fits[f] = fit
        errors[f] = (int(rows.sum()), len(np.unique(nbytes[rows])), err, held)
        if fit.form == "bandwidth":
            notes.append(f"{f}: one size only, latency not separable from bandwidth")
    return LookupCostModel(fits, errors, notes)


def _assignment(tables: Sequence[TableSpec], plan: Mapping[str, int], ranks: int) -> np.ndarray:
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    names = [t.name for t in tables]
    if len(set(names)) != len(names):
        raise ValueError("table names must be unique")
    if set(plan) != set(names):
        extra, lost = sorted(set(plan) - set(names)), sorted(set(names) - set(plan))
        raise ValueError(f"the plan must place every table once: unknown {extra}, unplaced {lost}")
    owner = np.array([plan[n] for n in names], np.int64)
    if ((owner < 0) | (owner >= ranks)).any():
        raise ValueError(f"plan places a table on a rank outside 0..{ranks - 1}")
    return owner


def _rank_times(fit: TimeFit, owner: np.ndarray, nbytes: np.ndarray, ranks: int) -> np.ndarray:
    per_rank = np.bincount(owner, nbytes, minlength=ranks)
    count = np.bincount(owner, minlength=ranks)
    return np.where(count > 0, fit.predict(per_rank), 0.0)


def evaluate_plan(
    tables: Sequence[TableSpec],
    plan: Mapping[str, int],
    ranks: int,
    *,
    cost: LookupCostModel,
    family: Optional[str] = None,
    comm: Any = None,
) -> Result:
    """Each rank's predicted embedding lookup time and all-to-all bytes under `plan`.

    Result "embedding_plan", one row per rank: rank, tables, rows_touched, lookup_bytes,
    lookup_ns (predicted), a2a_send_bytes, a2a_recv_bytes. params: max_lookup_ns (the
    slowest rank: what the step waits for), a2a_bytes (sent by all ranks), a2a_ns (the
    all-to-all time when `comm`, a collective CostModel with an all_to_all curve for this
    many ranks, is given; None otherwise), predicted_ns (max_lookup_ns + a2a_ns, or
    max_lookup_ns alone)."""
    owner = _assignment(tables, plan, ranks)
    fit = cost.family(family)
    nbytes = np.array([t.lookup_bytes for t in tables], np.float64)
    out_bytes = np.array([t.output_bytes for t in tables], np.float64)
    times = _rank_times(fit, owner, nbytes, ranks)
    owned_out = np.bincount(owner, out_bytes, minlength=ranks)
    send = owned_out * (ranks - 1) / ranks
    recv = (out_bytes.sum() - owned_out) / ranks
    notes = []
    a2a_ns = None
    if comm is not None and ranks > 1:
        # nccl-tests' all-to-all size: a rank's whole buffer, its own share included
        buffer = float(np.max(np.maximum(send, recv)) * ranks / (ranks - 1))
        try:
            a2a_ns = float(comm.predict("all_to_all", buffer, ranks))
        except KeyError as e:
            notes.append(f"no all-to-all time: {e.args[0]}")
    table = pa.table(
        {
            "rank": array_of(np.arange(ranks), pa.int64()),
            "tables": array_of(np.bincount(owner, minlength=ranks), pa.int64()),
            "rows_touched": array_of(
                np.bincount(owner, [t.rows_touched for t in tables], minlength=ranks), pa.float64()
            ),
            "lookup_bytes": array_of(np.bincount(owner, nbytes, minlength=ranks), pa.float64()),
            "lookup_ns": array_of(times, pa.float64()),
            "a2a_send_bytes": array_of(send, pa.float64()),
            "a2a_recv_bytes": array_of(recv, pa.float64()),
        }
    )
    table = table.cast(
        pa.schema(
            [
                f.with_metadata(NS)
                if f.name == "lookup_ns"
                else f.with_metadata({"unit": "B"})
                if f.name.endswith("bytes")
                else f
                for f in table.schema
            ]
        )
    )
    max_ns = float(times.max())
    return Result(
        "embedding_plan",
        table,
        notes=notes,
        params={
            "plan": dict(plan),
            "ranks": ranks,
            "max_lookup_ns": max_ns,
            "a2a_bytes": float(send.sum()),
            "a2a_ns": a2a_ns,
            "predicted_ns": max_ns + (a2a_ns or 0.0),
        },
    )


def improve_plan(
    tables: Sequence[TableSpec],
    ranks: int,
    *,
    cost: LookupCostModel,
    family: Optional[str] = None,
    plan: Optional[Mapping[str, int]] = None,
    max_rounds: int = 1000,
) -> dict[str, int]:
    """A plan whose slowest rank is as fast as a greedy search finds.

    Start: `plan`, or largest tables first, each on the rank that would finish it
    earliest (longest processing time first). Then, while it helps, move one table off the
    slowest rank or swap one of its tables with another rank's, taking the change that
    lowers the slowest rank's time most (ties: the lower sum of times)."""
    names = [t.name for t in tables]
    fit = cost.family(family)
    nbytes = np.array([t.lookup_bytes for t in tables], np.float64)
    if plan is not None:
        owner = _assignment(tables, plan, ranks)
    else:
        owner = np.zeros(len(tables), np.int64)
        load = np.zeros(ranks)
        for i in np.argsort(-nbytes, kind="stable"):
            r = int(np.argmin(fit.predict(load + nbytes[i])))  # the earliest to finish
            owner[i], load[r] = r, load[r] + nbytes[i]

    def score(o: np.ndarray) -> tuple[float, float]:
        t = _rank_times(fit, o, nbytes, ranks)
        return float(t.max()), float(t.sum())

    best = score(owner)
    for _ in range(max_rounds):
        slow = int(np.argmax(_rank_times(fit, owner, nbytes, ranks)))
        candidate, cand_score = None, best
        for i in np.flatnonzero(owner == slow):
            for r in range(ranks):
                if r == slow:
                    continue
                moved = owner.copy()
                moved[i] = r
                s = score(moved)
                if _better(s, cand_score):
                    candidate, cand_score = moved, s
                for j in np.flatnonzero(owner == r):
                    swapped = owner.copy()
                    swapped[i], swapped[j] = r, slow
                    s = score(swapped)
                    if _better(s, cand_score):
                        candidate, cand_score = swapped, s
        if candidate is None:
            break
        owner, best = candidate, cand_score
    return {n: int(r) for n, r in zip(names, owner)}


def _better(s: tuple[float, float], ref: tuple[float, float]) -> bool:
    """A lower slowest rank, or the same and a lower sum; rounding-level changes do not
    count (they would let the search wander between equal plans)."""
    tol = 1e-9
    if s[0] < ref[0] * (1 - tol):
        return True
    return s[0] <= ref[0] * (1 + tol) and s[1] < ref[1] * (1 - tol)
