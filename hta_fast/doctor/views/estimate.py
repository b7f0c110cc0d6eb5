"""What each cause module hands the ranking: its cost per (rank, step), evidence, the events
involved and advice; and a tally of events by name, merged across ranks."""

from __future__ import annotations

import collections
import dataclasses
import heapq
import operator
from typing import Any, Optional

import numpy as np

from ..._arrow import texts_at
from .context import RankView


@dataclasses.dataclass
class Estimate:
    """cost     rank -> ns lost in each analysed step (aligned with RankView.steps)
    evidence    the numbers behind it
    top_events  list of dicts, most costly first: name, count, total_ns (the events' own
                time), cost_ns (what this cause charges to them), ...
    title       one line; advice: what usually helps
    notes       remarks for Diagnosis.notes
    """

    cost: dict[int, np.ndarray]
    evidence: dict[str, Any]
    top_events: list[dict[str, Any]]
    title: str
    advice: str
    notes: list[str] = dataclasses.field(default_factory=list)


def per_step(view: RankView, step_index: np.ndarray, ns: np.ndarray) -> np.ndarray:
    """ns summed by step index, one entry per analysed step."""
    return np.bincount(
        np.asarray(step_index, np.int64), weights=np.asarray(ns, np.float64), minlength=view.n_steps
    )[: view.n_steps]


class Tally:
    """Events by name across ranks: count, their own time (total_ns), the cost charged to
    them (cost_ns: idle GPU time, lost kernel time, ...), plus optional extra sums."""

    def __init__(self) -> None:
        self.count: collections.Counter[str] = collections.Counter()
        self.cost: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.own: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.extra: collections.defaultdict[str, collections.defaultdict[str, float]] = (
            collections.defaultdict(lambda: collections.defaultdict(float))
        )

    def add(
        self,
        view: RankView,
        rows: np.ndarray,
        ns: np.ndarray,
        extra: Optional[dict[str, np.ndarray]] = None,
    ) -> None:
        """Adds the events at `rows` of the view's trace, ns[i] charged to each (grouped by
        name id first, so only distinct names become strings)."""
        if len(rows) == 0:
            return
        trace = view.trace
        ids = trace.column("events", "name")[rows].astype(np.int64)
        uniq, inv = np.unique(ids, return_inverse=True)
        inv = inv.reshape(-1)
        cnt = np.bincount(inv, minlength=len(uniq))
        tot = np.bincount(inv, weights=np.asarray(ns, np.float64), minlength=len(uniq))
        own = np.bincount(
            inv,
            weights=np.maximum(trace.column("events", "dur")[rows], 0).astype(np.float64),
            minlength=len(uniq),
        )
        sums = {
            k: np.bincount(inv, weights=np.asarray(v, np.float64), minlength=len(uniq))
            for k, v in (extra or {}).items()
        }
        # Keep the strings of the costliest names only: a trace may hold many distinct names.
        top = np.argsort(-tot)[:50]
        names = texts_at(trace.strings, uniq[top], missing="(unnamed)")
        for j, name in zip(top.tolist(), names):
            self.count[name] += int(cnt[j])
            self.cost[name] += float(tot[j])
            self.own[name] += float(own[j])
            for k, v in sums.items():
                self.extra[k][name] += float(v[j])

    def top(self, n: int = 5) -> list[dict[str, Any]]:
        out = []
        # The n largest costs, ties in first-seen order (as Counter.most_common gives them).
        for name, cost in heapq.nlargest(n, self.cost.items(), key=operator.itemgetter(1)):
            if cost <= 0:
                break
            row: dict[str, Any] = {
                "name": name,
                "count": self.count[name],
                "total_ns": int(round(self.own[name])),
                "cost_ns": int(round(cost)),
            }
            for k, v in self.extra.items():
                row[k] = int(round(v[name]))
            out.append(row)
        return out
