"""What the doctor returns: one Finding per cause, ranked, inside a Diagnosis."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional

from ..analysis.hardware_counters import SmActiveVsBusy
from ..frame.fields import duration_text
from .causes import BY_KEY, CAUSES
from .measured import measured_text
from .views.text import Number, short_list
from .views.thresholds import Thresholds

__all__ = ["CAUSES", "Diagnosis", "Finding", "Number", "duration_text", "short_list"]

# The host's step is shown beside the device-aware one where they differ by more than this
# share of the latter.
STEP_SPANS_DIFFER = 0.05
# What the one utilization measures, said wherever it is shown.
UTILIZATION_IS = "GPU busy share of the analysed steps' device-aware windows"


@dataclasses.dataclass
class Finding:
    """One cause of lost GPU time.

    cause             one of CAUSES
    title             one line saying what was found
    above_threshold   the cost reaches Thresholds.min_share of the step time
    cost_ns_per_step  estimated GPU time lost per step (ns), mean over ranks
    share             cost / mean step time
    evidence          the numbers behind it (name -> number or string)
    top_events        the events involved, most costly first: name, count, total_ns, ...
    steps, ranks      where it shows (its cost reaches min_share of that step / rank)
    advice            what usually helps
    saving_ns_per_step  what the performance model predicts removing the cause saves per
                      step (its edit replayed, doctor.model_savings); None (null in JSON)
                      where the cause is not modelled, the model cannot say or was not run
                      (never 0 for "unknown": 0 means the edit removed nothing)
    saving_edit       the edit replayed for it, or why there is none
    saving_note       where the cost and the saving differ by more than 10 %, one sentence
                      saying what the edit removes and what it cannot
    owned_ns_per_step the step's GPU time its owners hold (the cause record's owners,
                      model.path.owners; mean over ranks of each rank's mean step), where
                      the cause has owners and the model ran; None otherwise
    """

    cause: str
    title: str
    above_threshold: bool
    cost_ns_per_step: int
    share: float
    evidence: dict[str, Number]
    top_events: list[dict[str, Any]]
    steps: list[int]
    ranks: list[int]
    advice: str
    saving_ns_per_step: Optional[int] = None
    saving_edit: str = ""
    saving_note: str = ""
    owned_ns_per_step: Optional[int] = None

    @property
    def rank_key(self) -> tuple[bool, int, int]:
        """How findings are ordered: those above threshold first; among them, by the
        predicted saving (the heuristic cost where the model cannot say), ties by the cost."""
        saving = (
            self.cost_ns_per_step if self.saving_ns_per_step is None else self.saving_ns_per_step
        )
        return (not self.above_threshold, -saving, -self.cost_ns_per_step)

    def evidence_items(self, micro: str = "us") -> list[tuple[str, str]]:
        """The evidence as people read it (name, text): times in s/ms/µs (`micro` spells
        µs), shares and spreads in percent, long rank lists (the cause record's rank_lists)
        shortened."""
        cause = BY_KEY.get(self.cause)
        lists = cause.rank_lists if cause is not None else ()
        return [
            (k.replace("_ns", "") if _is_duration(k, v) else k, _fmt(k, v, micro, lists))
            for k, v in self.evidence.items()
            if v != ""
        ]

    def to_dict(self) -> dict[str, Any]:
        return _plain(dataclasses.asdict(self))


@dataclasses.dataclass
class Diagnosis:
    """utilization   GPU busy time / GPU span over the analysed steps, mean over ranks (0..1);
                     None (null in JSON) where no analysed rank has GPU activity
    findings         every cause, highest cost first
    thresholds       the Thresholds used
    notes            what the numbers cannot say (no steps, unknown SM count, one rank, ...)
    step_time_ns     mean step time over ranks (the denominator of every share): each step
                     device-aware, as the TensorBoard profiler times steps (RankView.step_time);
                     None where no analysed rank has GPU activity
    cpu_step_time_ns mean host span of the steps (their ProfilerStep events); shown beside
                     step_time_ns where the two differ by more than STEP_SPANS_DIFFER; None
                     where no analysed rank has GPU activity
    ranks, steps     what was analysed (ranks without GPU activity included)
    too_little_work  why no cause is named: the analysed steps hold too little GPU work to
                     judge (Thresholds.min_kernels_per_step, min_gpu_us_per_step); "" else
    no_gpu_activity  rank -> why it has no GPU work in the analysed steps (launches without
                     GPU events, a CPU-only trace, ...). Utilization, step time and findings
                     are over the other ranks; such a rank is never healthy: there is
                     nothing to judge on it. Where no rank has any, utilization and the
                     step times are None and no finding is above threshold
    measured_sm_active  per rank and device with Kineto's hardware counters: the measured
                     SM-active share beside the utilization (doctor.measured); empty, and
                     absent from to_dict and to_text, where the traces have no counters
    """

    utilization: Optional[float]
    findings: list[Finding]
    thresholds: Thresholds
    notes: list[str]
    step_time_ns: Optional[int]
    ranks: list[int]
    steps: list[int]
    no_gpu_activity: dict[int, str]
    cpu_step_time_ns: Optional[int] = 0
    too_little_work: str = ""
    compute_utilization: Optional[float] = None
    measured_sm_active: tuple[SmActiveVsBusy, ...] = ()

    @property
    def gpu_activity(self) -> bool:
        """Whether any analysed rank recorded GPU activity (else there are no figures)."""
        return self.utilization is not None

    @property
    def healthy(self) -> bool:
        """GPU activity on every analysed rank, enough of it to judge, and no finding above
        its threshold."""
        return (
            not self.no_gpu_activity
            and not self.too_little_work
            and not any(f.above_threshold for f in self.findings)
        )

    def finding(self, cause: str) -> Finding:
        for f in self.findings:
            if f.cause == cause:
                return f
        raise KeyError(f"no such cause {cause!r}; causes: {', '.join(CAUSES)}")

    def failed(
        self, fail_under_utilization: Optional[float] = None, fail_on: Iterable[str] = ()
    ) -> list[str]:
        """Reasons a CI gate fails; an empty list passes. A rank without GPU activity fails
        it whatever is asked (its reason comes first).

        fail_under_utilization  percent: fail when the GPU utilization is below it
        fail_on                 causes that fail the gate when above threshold; empty: every
                                cause
        """
        wanted = list(fail_on)
        bad = [c for c in wanted if c not in CAUSES]
        if bad:
            raise ValueError(f"unknown cause(s) {bad}; causes: {', '.join(CAUSES)}")
        reasons = self.no_gpu_reasons()
        if (
            fail_under_utilization is not None
            and self.utilization is not None
            and 100.0 * self.utilization < fail_under_utilization
        ):
            reasons.append(
                f"GPU utilization {100.0 * self.utilization:.1f}% is under "
                f"{fail_under_utilization:g}%"
            )
        for f in self.findings:
            if f.above_threshold and (not wanted or f.cause in wanted):
                reasons.append(
                    f"{f.cause}: {f.title} ({duration_text(f.cost_ns_per_step)} per step, "
                    f"{100.0 * f.share:.1f}% of the step)"
                )
        return reasons

    def _cpu_step_text(self) -> str:
        """The host's step beside the device-aware one, where they differ."""
        step, cpu = self.step_time_ns, self.cpu_step_time_ns
        if step is None or cpu is None or step <= 0 or cpu <= 0:
            return ""
        if abs(cpu - step) <= STEP_SPANS_DIFFER * step:
            return ""
        return f" (host step {duration_text(cpu)})"

    def headline(self) -> dict[str, Any]:
        """The answer at a glance, as the report's first screen and the CLI's first lines show
        it: step_time_ns (the device-aware GPU iteration) and cpu_step_time_ns (the host's,
        None where the two agree within STEP_SPANS_DIFFER), utilization with what it
        measures (the three None where no rank recorded GPU activity), the top cause above
        threshold (cause, title, cost and share of the step, the model's saving or None),
        and the top what-if: the cause whose edit the model predicts saves most per step
        (None where no edit was replayed)."""
        above = [f for f in self.findings if f.above_threshold]
        top = above[0] if above else None
        modelled = [f for f in self.findings if f.saving_ns_per_step]
        best = max(modelled, key=lambda f: f.saving_ns_per_step or 0) if modelled else None
        shown_cpu = self._cpu_step_text() != ""
        return _plain(
            {
                "step_time_ns": self.step_time_ns,
                "cpu_step_time_ns": self.cpu_step_time_ns if shown_cpu else None,
                "utilization": self.utilization,
                "utilization_is": UTILIZATION_IS,
                "compute_utilization": self.compute_utilization,
                "healthy": self.healthy,
                "top_cause": None
                if top is None
                else {
                    "cause": top.cause,
                    "title": top.title,
                    "cost_ns_per_step": top.cost_ns_per_step,
                    "share": top.share,
                    "saving_ns_per_step": top.saving_ns_per_step,
                },
                "top_what_if": None
                if best is None
                else {
                    "cause": best.cause,
                    "edit": best.saving_edit,
                    "saving_ns_per_step": best.saving_ns_per_step,
                    "share": (best.saving_ns_per_step or 0) / self.step_time_ns
                    if self.step_time_ns
                    else None,
                },
            }
        )

    def headline_text(self) -> list[str]:
        """headline() in two or three lines for a terminal: its figures, nothing of its own;
        one line saying so where no rank recorded GPU activity."""
        h = self.headline()
        n_steps = f"{len(self.steps)} step(s)" if self.steps else "the whole trace (no steps)"
        if h["utilization"] is None:
            return [f"No GPU activity recorded over {n_steps} on {len(self.ranks)} rank(s)"]
        host = (
            f"; host step {duration_text(h['cpu_step_time_ns'])}" if h["cpu_step_time_ns"] else ""
        )
        lines = [
            f"mean step {duration_text(h['step_time_ns'])} (GPU iteration{host}) over {n_steps} "
            f"on {len(self.ranks)} rank(s) · GPU utilization {100.0 * h['utilization']:.1f}% "
            f"({h['utilization_is']})"
            + (
                f"; compute kernels {100.0 * h['compute_utilization']:.1f}%"
                if h["compute_utilization"] is not None
                else ""
            )
        ]
        top = h["top_cause"]
        if top:
            saving = (
                f"; the model saves ~{duration_text(top['saving_ns_per_step'])}"
                if top["saving_ns_per_step"]
                else ""
            )
            lines.append(
                f"top cause: {top['cause']}, ~{duration_text(top['cost_ns_per_step'])} per step "
                f"({100.0 * top['share']:.1f}%){saving}"
            )
        best = h["top_what_if"]
        if best and (not top or best["cause"] != top["cause"]):
            lines.append(
                f"top what-if: {best['edit']} saves ~{duration_text(best['saving_ns_per_step'])} "
                f"per step ({best['cause']})"
            )
        return lines

    def measured_lines(self) -> list[str]:
        """The measured SM-active share beside the utilization, and a warning where they
        differ (doctor.measured); none where the traces have no hardware counters."""
        return measured_text(self.measured_sm_active)

    def no_gpu_reasons(self) -> list[str]:
        """One gate reason per rank without GPU activity."""
        return [f"rank {r}: {why}" for r, why in sorted(self.no_gpu_activity.items())]

    def to_dict(self) -> dict[str, Any]:
        measured = (
            {"measured_sm_active": [r.to_dict() for r in self.measured_sm_active]}
            if self.measured_sm_active
            else {}
        )
        return _plain(
            {
                "utilization": self.utilization,
                "compute_utilization": self.compute_utilization,
                "healthy": self.healthy,
                "step_time_ns": self.step_time_ns,
                "cpu_step_time_ns": self.cpu_step_time_ns,
                "ranks": self.ranks,
                "steps": self.steps,
                "no_gpu_activity": self.no_gpu_activity,
                "too_little_work": self.too_little_work or None,
                "headline": self.headline(),
                "findings": [f.to_dict() for f in self.findings],
                "thresholds": self.thresholds.to_dict(),
                "notes": self.notes,
                **measured,
            }
        )

    def to_text(self) -> str:
        with_gpu = self.gpu_activity
        lines = self.headline_text()
        lines.extend(self.measured_lines())
        lines.extend(self.no_gpu_reasons())
        above = [f for f in self.findings if f.above_threshold]
        if self.too_little_work and with_gpu:
            lines.append(self.too_little_work[0].upper() + self.too_little_work[1:] + ".")
        elif not above and with_gpu:
            lines.append(
                (
                    "Healthy: no"
                    if not self.no_gpu_activity
                    else "On the ranks with GPU activity, no"
                )
                + f" cause reaches {100.0 * self.thresholds.min_share:g}% of the step time."
            )
        for i, f in enumerate(above, 1):
            lines.append(f"{i}. {f.cause}: {f.title}")
            lines.append(
                f"   costs ~{duration_text(f.cost_ns_per_step)} per step ({100.0 * f.share:.1f}% of the step)"
            )
            if f.saving_ns_per_step is not None:
                lines.append(
                    f"   model: removing it saves ~{duration_text(f.saving_ns_per_step)} per step "
                    f"({f.saving_edit})"
                )
            else:
                lines.append(f"   model: {_not_modelled(f.saving_edit)}")
            if f.saving_note:
                lines.append(f"   {f.saving_note}")
            if f.owned_ns_per_step is not None and owned_differs(f):
                lines.append(
                    f"   owners: {duration_text(f.owned_ns_per_step)} per step of the GPU's time "
                    "(hta-fast owners), where the cost counts the idle gaps this cause's "
                    "heuristic reads"
                )
            if f.evidence:
                lines.append("   evidence: " + "; ".join(f"{k}={v}" for k, v in f.evidence_items()))
            if f.top_events:
                lines.append(
                    "   top events: " + "; ".join(_event_text(e) for e in f.top_events[:3])
                )
            where = []
            if f.ranks:
                where.append("ranks " + short_list(f.ranks))
            if f.steps:
                where.append("steps " + short_list(f.steps))
            if where:
                lines.append("   where: " + "; ".join(where))
            lines.append(f"   what helps: {f.advice}")
        below = [f for f in self.findings if not f.above_threshold]
        if below and with_gpu:
            lines.append("Below threshold: " + ", ".join(_below_text(f) for f in below))
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


def _below_text(f: Finding) -> str:
    """A finding under its threshold, in a word; a rank that stands out (the evidence field
    its cause record names: stands_out) is still named, so a straggler whose cost is small
    shows where to look."""
    text = f"{f.cause} {100.0 * f.share:.1f}%"
    cause = BY_KEY.get(f.cause)
    rank = f.evidence.get(cause.stands_out) if cause is not None and cause.stands_out else None
    if isinstance(rank, int):  # else text saying none does
        text += f" (rank {rank} stands out)"
    return text


# The cost and the owners' time are one figure within this share of the larger.
OWNED_AGREE = 0.1


def owned_differs(f: Finding) -> bool:
    """Whether the finding's cost and its owners' time differ by more than OWNED_AGREE."""
    if f.owned_ns_per_step is None:
        return False
    hi = max(f.owned_ns_per_step, f.cost_ns_per_step)
    return hi > 0 and abs(f.owned_ns_per_step - f.cost_ns_per_step) > OWNED_AGREE * hi


def _not_modelled(why: str) -> str:
    """The model line of a finding without a predicted saving."""
    if why.startswith(("not modelled", "not removable")) or why == "model not run":
        return why
    return f"not modelled ({why})"


def _event_text(e: dict[str, Any]) -> str:
    """A top event: its name, count and own time; apart, what the cause charges to it."""
    text = f"{e['name'][:80]} (x{e['count']}, {duration_text(e['total_ns'])}"
    cost = e.get("cost_ns")
    if cost is not None and cost != e["total_ns"]:
        text += f"; charged {duration_text(cost)}"
    return text + ")"


def _is_duration(key: str, v: Number) -> bool:
    """Whether an evidence value is a duration in ns (its name says so), shown in s/ms/µs
    under its name without the "_ns"."""
    return "_ns" in key and isinstance(v, (int, float)) and not isinstance(v, bool)


def _fmt(key: str, v: Number, micro: str = "us", rank_lists: tuple[str, ...] = ()) -> str:
    """An evidence value as people read it: times in s/ms/µs, shares and spreads in percent,
    a list of ranks (its key in rank_lists) shortened."""
    if isinstance(v, str) and key in rank_lists:
        return short_list(v.split(", "))
    if v is None or isinstance(v, str) or isinstance(v, bool):
        return str(v)
    if _is_duration(key, v):
        return duration_text(v, micro)
    if key.endswith(("_share", "_spread")) or "share_of" in key:
        return f"{100.0 * v:.1f}%"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _plain(x: Any) -> Any:
    """numpy scalars and containers as plain Python, for JSON."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "item") and callable(x.item):
        return x.item()
    return x
