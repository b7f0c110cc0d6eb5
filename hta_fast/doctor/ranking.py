"""diagnose(): build each rank's view once, let every cause estimate its cost, and rank the
findings by cost.

A cause's cost per step is the mean over ranks of (its cost on the rank / the rank's analysed
steps); its share is that cost over the mean step time. A finding is above threshold when its
share reaches Thresholds.min_share. It shows on the ranks, and in the steps, where its cost
reaches min_share of that rank's mean step time.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ..frame import select
from ..frame.fields import duration_text
from ..model.graph.walk import chains_kept
from ..steps.profiler_flush import PROFILER_SHARE
from ..trace import Trace
from ..traceset import TraceSet
from .causes import BY_KEY, CAUSES, REGISTRY, examination_order
from .causes.record import Examination
from .measured import measured_sm_active
from .model_savings import differ_text, owned_per_step, predicted_saving
from .no_gpu import no_gpu_reason
from .result import STEP_SPANS_DIFFER, Diagnosis, Finding
from .views import gap_causes
from .views.context import RankView, rank_view, share_name_flags
from .views.estimate import Estimate
from .views.text import Number, short_list
from .views.thresholds import Thresholds

# The name patterns matched for all ranks at once: the idle-gap split's and each cause's
# (Cause.name_patterns), each once.
NAME_PATTERNS = tuple(
    dict.fromkeys([*gap_causes.NAME_PATTERNS, *(p for c in REGISTRY for p in c.name_patterns)])
)

# The GPU idle time the host recorded nothing in is noted from this share of the window.
UNTRACED_NOTE_SHARE = 0.01
# Up to this many ranks the doctor predicts each finding's saving with the model by default.
MODEL_MAX_RANKS = 64


def diagnose(
    traces: Union[Trace, TraceSet],
    steps: Optional[Sequence[int]] = None,
    thresholds: Optional[Thresholds] = None,
    model: Union[bool, str] = "auto",
    owners: bool = False,
) -> Diagnosis:
    """Why the GPU is idle: every cause of lost GPU time with its estimated cost per step,
    evidence and advice, highest cost first (see docs/doctor.md).

    traces      a Trace or a TraceSet
    steps       profiler step numbers to analyse (None: every step each rank recorded; a
                trace without ProfilerStep#N events is analysed whole, as one step)
    thresholds  Thresholds (None: the defaults)
    model       predict each finding's saving by replaying its edit on the dependency graph
                (doctor.model_savings) and rank by it: True, False (the heuristic costs
                only), or "auto" (default: on up to MODEL_MAX_RANKS ranks, where the replays
                cost about as much as the diagnosis; beyond, a note says how to ask for it)
    owners      beside each cost, the time the cause's owners hold of the step on the GPU
                (model.path.owners; Finding.owned_ns_per_step), where the model runs: a
                walk of every idle gap, about a tenth of the diagnosis, so asked for
    """
    th = _checked_arguments(traces, thresholds, model)
    wanted = None if steps is None else sorted({int(s) for s in steps})
    ts = select.as_traceset(traces)
    notes: list[str] = []
    views, analysed, no_gpu, seen_steps = _rank_views(ts, wanted, notes)

    share_name_flags([v.trace for v in views], NAME_PATTERNS)
    ex = Examination(views, th, ts, wanted)
    for cause in examination_order():
        ex.found[cause.key] = cause.heuristic(ex)
    step_time = float(np.mean([v.step_time for v in views])) if views else 0.0
    cpu_step_time = float(np.mean([v.host_time for v in views])) if views else 0.0
    if step_time > 0 and abs(cpu_step_time - step_time) > STEP_SPANS_DIFFER * step_time:
        notes.append(_step_spans_note(step_time, cpu_step_time))
    findings = [_finding(cause, ex.found[cause], views, step_time, th) for cause in CAUSES]
    _predict_savings(findings, ex, views, notes, step_time, model, owners)
    too_little = _too_little_work(views, th)
    if too_little or not views:  # nothing to judge: no cause is named, whatever its share
        for f in findings:
            f.above_threshold = False
    findings.sort(key=lambda f: (f.rank_key, CAUSES.index(f.cause)))
    for e in ex.found.values():
        notes.extend(e.notes)
    notes.extend(_untraced_note(views))
    # No rank with GPU activity: no figures (None, null in JSON), not zeros.
    utilization = float(np.mean([v.utilization for v in views])) if views else None
    computes = [v.compute_utilization for v in views if v.compute_utilization is not None]
    return Diagnosis(
        utilization=utilization,
        compute_utilization=float(np.mean(computes)) if computes else None,
        findings=findings,
        thresholds=th,
        notes=notes,
        step_time_ns=int(round(step_time)) if views else None,
        cpu_step_time_ns=int(round(cpu_step_time)) if views else None,
        ranks=analysed,
        steps=sorted(seen_steps),
        no_gpu_activity=no_gpu,
        too_little_work=too_little,
        measured_sm_active=tuple(measured_sm_active(views)),
    )


def _checked_arguments(
    traces: Union[Trace, TraceSet], thresholds: Optional[Thresholds], model: Union[bool, str]
) -> Thresholds:
    """diagnose()'s arguments checked (ValueError, TypeError); the thresholds to use."""
    if model not in (True, False, "auto"):
        raise ValueError(f"model must be True, False or 'auto', got {model!r}")
    if not isinstance(traces, (Trace, TraceSet)):
        raise TypeError(f"diagnose() takes a Trace or a TraceSet, got {type(traces).__name__}")
    th = thresholds if thresholds is not None else Thresholds()
    if not isinstance(th, Thresholds):
        raise TypeError(f"thresholds must be a Thresholds, got {type(th).__name__}")
    return th


def _rank_views(
    ts: TraceSet, wanted: Optional[list[int]], notes: list[str]
) -> tuple[list[RankView], list[int], dict[int, str], set[int]]:
    """Each rank's view of the wanted steps, with the notes on what was left out or is
    missing appended to notes: (the views of the ranks with GPU work, the ranks analysed,
    why each rank without GPU work has none, the steps seen). ValueError when no rank holds
    any of the wanted steps."""
    views: list[RankView] = []
    analysed: list[int] = []
    no_gpu: dict[int, str] = {}
    seen_steps: set[int] = set()
    head_cut: dict[int, int] = {}
    missing_steps = 0
    for rank in ts.ranks:
        v = rank_view(rank, ts[rank], wanted)
        if v is None:
            missing_steps += 1
            notes.append(f"rank {rank}: none of the requested steps")
            continue
        analysed.append(rank)
        if v.left_out:
            notes.append(
                f"rank {rank}: step(s) {', '.join(map(str, v.left_out))} left out: "
                f"{100 * PROFILER_SHARE:g}% or more of the host time is the profiler's own "
                "work (torch/profiler/profiler.py: stopping and handing over the trace); ask "
                "for it by number to include it"
            )
        if v.head_cut:
            head_cut[rank] = v.head_cut
        if v.has_steps:
            seen_steps.update(int(s) for s in v.steps)
        if len(v.work.rows) == 0:
            no_gpu[rank] = no_gpu_reason(ts[rank])
        else:
            if not v.has_steps:
                notes.append(_no_steps_note(rank, ts[rank].steps_source))
            views.append(v)
    if head_cut:
        notes.append(_head_cut_note(head_cut))
    sources = sorted({ts[r].steps_source for r in analysed} - {"profiler"})
    if sources:
        notes.append(f"steps taken from {', '.join(sources)}, not the profiler's (steps_from)")
    if wanted is not None and missing_steps == len(ts.ranks):
        present = sorted({int(s) for r in ts.ranks for s in ts[r].column("steps", "step")})
        raise ValueError(f"none of the steps {wanted} is in the traces; their steps: {present}")
    return views, analysed, no_gpu, seen_steps


def _no_steps_note(rank: int, steps_source: str) -> str:
    """The note on a rank without steps of its source: the whole trace is one step."""
    what = "ProfilerStep#N events" if steps_source == "profiler" else f"{steps_source} steps"
    hint = (
        " (give steps with --steps-from iterations, or prefill/decode/mixed/denoise/"
        "forward for inference passes: docs/inference.md)"
        if steps_source == "profiler"
        else ""
    )
    return f"rank {rank}: no {what}; the whole trace counts as one step{hint}"


def _head_cut_note(head_cut: dict[int, int]) -> str:
    """The note on the ranks whose trace opens with the GPU busy on work it does not hold
    (head_cut: per rank, how far into the first step its first GPU event started, ns)."""
    where = short_list(sorted(head_cut))
    return (
        f"rank{'s' if len(head_cut) > 1 else ''} {where}: the trace opens with the GPU "
        "busy on work it does not hold (the first recorded GPU event started "
        f"{duration_text(float(np.mean(list(head_cut.values()))))} into the first step"
        + (" on average" if len(head_cut) > 1 else "")
        + ", long after its launch, with nothing recorded on the GPU before it): that "
        "time is left out of the step and of the utilization"
    )


def _step_spans_note(step_time: float, cpu_step_time: float) -> str:
    """The note on a mean device-aware step span that differs from the host's."""
    return (
        f"mean step {duration_text(step_time)} is the device-aware span (as the "
        "TensorBoard profiler times steps: from the later of the host's start and the end "
        "of the previous step's GPU work, to the later of the host's end and the end of "
        f"the GPU work the step launched); the host's step spans average "
        f"{duration_text(cpu_step_time)}"
        + (
            ": the host runs ahead of the GPU"
            if cpu_step_time < step_time
            else ": the GPU waits for the host"
        )
    )


def _predict_savings(
    findings: list[Finding],
    ex: Examination,
    views: list[RankView],
    notes: list[str],
    step_time: float,
    model: Union[bool, str],
    owners: bool,
) -> None:
    """Each finding's saving predicted by the model (and the time its owners hold, if
    asked), where the model runs; else what its edit would be. In place."""
    use_model = bool(views) and (
        model is True or (model == "auto" and len(views) <= MODEL_MAX_RANKS)
    )
    with chains_kept():  # each cause's replay walks the same graphs: built once
        owned = owned_per_step(ex, notes) if use_model and owners else None
        for f in findings:
            cause = BY_KEY[f.cause]
            if use_model:
                saving = predicted_saving(cause, ex, notes)
                f.saving_ns_per_step, f.saving_edit = saving.ns_per_step, saving.edit
                f.saving_note = differ_text(
                    cause, f.cost_ns_per_step, f.saving_ns_per_step, step_time
                )
            else:
                f.saving_edit = "model not run" if cause.edit is not None else cause.edit_text
            if owned is not None and cause.owners:
                f.owned_ns_per_step = int(round(sum(owned[o] for o in cause.owners)))
    if model == "auto" and views and not use_model:
        notes.append(
            f"{len(views)} ranks: predicted savings not computed (more than {MODEL_MAX_RANKS}); "
            "ask for them with model=True (hta-fast doctor --model)"
        )


def _too_little_work(views: list[RankView], th: Thresholds) -> str:
    """Why the analysed steps hold too little GPU work to name a cause, or ""."""
    if not views:
        return ""
    steps = sum(v.n_steps for v in views)
    events = sum(int(np.count_nonzero(v.selected)) for v in views) / steps
    busy = sum(v.busy_time for v in views) / steps
    if events < th.min_kernels_per_step and busy < th.min_gpu_us_per_step * 1e3:
        return (
            f"too little GPU work to diagnose: {events:.1f} GPU events and "
            f"{duration_text(busy)} of GPU busy time per step (the doctor needs "
            f"{th.min_kernels_per_step:g} events or {th.min_gpu_us_per_step:g} us of it a step)"
        )
    return ""


def _untraced_note(views: list[RankView]) -> list[str]:
    """The GPU idle time no cause is charged with because the host recorded nothing then:
    one note for all the ranks where it reaches 1 % of the window."""
    shares, per_step, ranks = [], [], []
    for v in views:
        split = v.__dict__.get("_gap_split", {})
        untraced = max((float(s.untraced.sum()) for s in split.values()), default=0.0)
        if v.span > 0 and untraced >= UNTRACED_NOTE_SHARE * v.span:
            ranks.append(v.rank)
            shares.append(untraced / v.span)
            per_step.append(untraced / v.n_steps)
    if not ranks:
        return []
    where = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {short_list(ranks)}"
    mean = " (mean over them)" if len(ranks) > 1 else ""
    return [
        f"{where}: the GPU idled {duration_text(float(np.mean(per_step)))} per step "
        f"({100 * float(np.mean(shares)):.1f}% of the window){mean} while the threads that "
        "launch its work recorded no event (code the profiler did not record, or waiting "
        "outside it): no cause is charged with it; record with with_stack=True or add "
        "record_function ranges to see what the host did"
    ]


def _finding(
    cause: str, est: Estimate, views: list[RankView], step_time: float, th: Thresholds
) -> Finding:
    """The finding of one cause from its estimate; its evidence checked against the
    cause's record."""
    undeclared = set(est.evidence) - set(BY_KEY[cause].evidence)
    if undeclared:
        raise RuntimeError(f"{cause}: evidence not declared in its Cause: {sorted(undeclared)}")
    per_rank = {
        v.rank: float(est.cost[v.rank].sum()) / v.n_steps for v in views if v.rank in est.cost
    }
    cost = float(np.mean(list(per_rank.values()))) if per_rank else 0.0
    share = cost / step_time if step_time > 0 else 0.0
    ranks: list[int] = []
    steps: set[int] = set()
    for v in views:
        c = est.cost.get(v.rank)
        if c is None or v.step_time <= 0:
            continue
        if per_rank[v.rank] >= th.min_share * v.step_time and per_rank[v.rank] > 0:
            ranks.append(v.rank)
        if v.has_steps:
            hot = (c >= th.min_share * v.step_time) & (c > 0)
            steps.update(int(s) for s in v.steps[hot])
    return Finding(
        cause=cause,
        title=est.title,
        above_threshold=bool(cost > 0 and share >= th.min_share),
        cost_ns_per_step=int(round(cost)),
        share=float(share),
        evidence={k: _number(x) for k, x in est.evidence.items()},
        top_events=est.top_events,
        steps=sorted(steps),
        ranks=sorted(ranks),
        advice=est.advice,
    )


def _number(x: Any) -> Number:
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return float(x)
    return x
