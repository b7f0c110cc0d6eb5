"""Host events whose time is a one-off, not their kind's usual cost: the one owner of that
judgement, read by the model (the critical path's one_off_stall, launches costing nothing
leaving a one-off launch) and by the doctor (its one-off stalls, doctor.views.stalls, with
the thresholds a user may set: their defaults are this module's numbers).

A host event (cpu_op, user annotation, Python function, runtime or driver call) is judged
by its name's other events:

    ONE_OFF     it lasts ONE_OFF_MIN_NS or more and ONE_OFF_RATIO times the median of the
                other events of its name, and at most ONE_OFF_MAX_REPEATS events of that name
                (the outermost of nested ones) are such outliers; or it is the only event of
                its name and the name says one-time work (ONE_TIME: compiles, autotuning,
                module and cubin loading, lazy initialisation)
    RECURRING   its name has other events and it is not a one-off
    UNKNOWN     the only event of its name, not one-time work by name (a caller may judge
                what encloses it)
    SHORT       under ONE_OFF_MIN_NS: no stall
    NOT_HOST    not a host event

A first cudaLaunchKernel that loads the CUDA module (modern/particle_transformer: 1.34 s
against 8.6 µs usually) is ONE_OFF; so are the operators around it, each judged by its own
name. An edit that removes a kind's usual cost (launches costing nothing) leaves a one-off
inside a call of that kind: it does not name it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...frame import derived
from ...schema import EventKind
from ...trace import Trace

ONE_OFF_MIN_NS = 1_000_000
ONE_OFF_RATIO = 10.0
ONE_OFF_MAX_REPEATS = 2

NOT_HOST, SHORT, RECURRING, UNKNOWN, ONE_OFF = range(5)

HOST_KINDS = (
    EventKind.cpu_op,
    EventKind.user_annotation,
    EventKind.python_function,
    EventKind.runtime,
    EventKind.driver,
)
# Names of work that a program does once: compiling (TorchScript fusers, torch.compile's
# Inductor and Triton), autotuning, loading modules and cubins, lazy initialisation.
ONE_TIME = (
    r"(?i)autotun|compile_fx|compile_inner|_compile\b|\bcompile\(|fuser|codegen|"
    r"cuModuleLoad|hipModuleLoad|cubin_loader|load_cubin|_lazy_init|lazy_load|cudnnFind"
)


class Verdicts(NamedTuple):
    """Per event row of a trace: its verdict (NOT_HOST .. ONE_OFF), the median duration of
    the other events of its name (ns; 0 where it is the only one) and how many events have
    its name (its own included)."""

    verdict: np.ndarray
    usual_ns: np.ndarray
    same_name: np.ndarray


def one_off_rows(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Which of these event rows are one-offs by the default thresholds."""
    if not len(rows):
        return np.zeros(0, bool)
    return verdicts(trace).verdict[rows] == ONE_OFF


def verdicts(
    trace: Trace,
    min_ns: float = ONE_OFF_MIN_NS,
    ratio: float = ONE_OFF_RATIO,
    max_repeats: float = ONE_OFF_MAX_REPEATS,
) -> Verdicts:
    """Every event row judged (module doc), once per trace and thresholds."""
    key = ("one_off_verdicts", float(min_ns), float(ratio), float(max_repeats))
    return derived.remember(trace, key, lambda: _judge(trace, min_ns, ratio, max_repeats))


def _judge(trace: Trace, min_ns: float, ratio: float, max_repeats: float) -> Verdicts:
    name = trace.column("events", "name").astype(np.int64)
    parent = trace.column("events", "parent")
    dur = np.maximum(trace.column("events", "dur"), 0).astype(np.float64)
    n_rows = len(name)
    verdict = np.full(n_rows, NOT_HOST, np.int8)
    usual = np.zeros(n_rows, np.float64)
    count = np.zeros(n_rows, np.int64)
    host_mask = derived.kind_mask(trace, HOST_KINDS)
    verdict[host_mask] = SHORT
    # Only names with an event of min_ns or more can hold a stall: the rest stay SHORT,
    # and the sort below is over these names' events alone.
    long_names = np.unique(name[host_mask & (dur >= min_ns) & (name >= 0)])
    host = np.flatnonzero(host_mask & np.isin(name, long_names))
    if not len(host):
        return Verdicts(verdict, usual, count)
    rows = host[np.lexsort((dur[host], name[host]))]
    n, d = name[rows], dur[rows]
    first = np.flatnonzero(np.r_[True, n[1:] != n[:-1]])
    size = np.diff(np.r_[first, len(rows)])
    group = np.repeat(np.arange(len(first)), size)
    rank = np.arange(len(rows)) - first[group]
    # The median of the others: of the group's sorted durations without this one.
    m = size[group] - 1
    lo, hi = (m - 1) // 2, m // 2
    at_lo = first[group] + lo + (lo >= rank)
    at_hi = first[group] + hi + (hi >= rank)
    others = np.where(
        m > 0, (d[np.minimum(at_lo, len(d) - 1)] + d[np.minimum(at_hi, len(d) - 1)]) / 2, 0.0
    )
    usual[rows], count[rows] = others, size[group]
    one_time = derived.name_flags(trace, ONE_TIME)
    alone_one_time = (m == 0) & (n >= 0) & one_time[np.maximum(n, 0)]
    bar = np.maximum(ratio * others, min_ns)
    v = np.where(
        d < min_ns,
        SHORT,
        np.where(
            m == 0,
            np.where(alone_one_time, ONE_OFF, UNKNOWN),
            np.where(d < bar, RECURRING, ONE_OFF),
        ),
    ).astype(np.int8)
    # A candidate is a one-off only while few events of its name pass its bar (nested events
    # of one name, aten::copy_ in aten::copy_, counted once).
    par = np.maximum(parent[rows], 0)
    outer = ((parent[rows] < 0) | (name[par] != n)).astype(np.int64)
    after = np.r_[np.cumsum(outer[::-1])[::-1], 0]  # outer events from each position on
    for i in np.flatnonzero((v == ONE_OFF) & (m > 0)).tolist():
        g0, g1 = first[group[i]], first[group[i]] + size[group[i]]
        j = g0 + int(np.searchsorted(d[g0:g1], bar[i], "left"))
        if after[j] - after[g1] > max_repeats:
            v[i] = RECURRING
    verdict[rows] = v
    return Verdicts(verdict, usual, count)
