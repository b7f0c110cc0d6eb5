"""The doctor's findings for the top of the report (hta_fast.doctor)."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from ...doctor import Thresholds, diagnose
from ...frame.fields import display_unit, duration_text
from ...traceset import TraceSet
from ..page.tables import cell

log = logging.getLogger("hta_fast")


def _number(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


# How the page spells microseconds (the terminal's text says "us").
MICRO = "µs"


def what_if_table(findings: list[dict[str, Any]], step_ns: Optional[float]) -> dict[str, Any]:
    """The causes whose edit the model replayed with a saving, most saved first: the
    savings and costs in the one unit that suits them all (frame.fields.display_unit; the
    table sorts as numbers)."""
    rows = sorted((f for f in findings if f["saving_ns"]), key=lambda f: -f["saving_ns"])
    scale, unit = display_unit([f[k] for f in rows for k in ("saving_ns", "cost_ns")])
    return {
        "saving_unit": unit,
        "cost_unit": unit,
        "rows": [
            {
                "cause": f["cause"],
                "edit": f["saving_edit"],
                "saving": cell(f["saving_ns"], "ns", scale),
                "pct": f"{100.0 * f['saving_ns'] / step_ns:.1f}" if step_ns else "–",
                "cost": cell(f["cost_ns"], "ns", scale),
            }
            for f in rows
        ],
    }


def diagnosis(
    traces: TraceSet, steps: Optional[Sequence[int]], thresholds: Optional[Thresholds] = None
) -> dict[str, Any]:
    """{available, utilization, healthy, findings: [...], message} for the template."""
    try:
        diag = diagnose(traces, steps=steps, thresholds=thresholds)
    except Exception as e:  # noqa: BLE001 - the rest of the report stands without it
        log.warning("report: the doctor could not run: %s", e)
        return {"available": False, "message": f"the doctor could not run on these traces ({e})"}
    findings = []
    for f in diag.findings:
        events = f.top_events[:5]
        scale, unit = display_unit(
            [e.get("total_ns") or 0 for e in events]
            + [e["cost_ns"] for e in events if e.get("cost_ns") is not None]
        )
        findings.append(
            {
                "cause": f.cause,
                "title": f.title,
                "above": bool(f.above_threshold),
                "cost_ns": f.cost_ns_per_step,
                "cost_text": duration_text(f.cost_ns_per_step, MICRO),
                "saving_ns": f.saving_ns_per_step,
                "saving_text": None
                if f.saving_ns_per_step is None
                else duration_text(f.saving_ns_per_step, MICRO),
                "saving_edit": f.saving_edit,
                "saving_note": getattr(f, "saving_note", ""),
                "share_pct": 100.0 * f.share,
                "advice": f.advice,
                "evidence": f.evidence_items(MICRO)
                if hasattr(f, "evidence_items")
                else [(k, _number(v)) for k, v in f.evidence.items()],
                "events_unit": unit,
                "top_events": [
                    {
                        "name": str(e.get("name", "")),
                        "count": e.get("count"),
                        "total": cell(e.get("total_ns") or 0, "ns", scale),
                        "cost": None
                        if e.get("cost_ns") is None
                        else cell(e["cost_ns"], "ns", scale),
                    }
                    for e in events
                ],
                "steps": list(f.steps),
                "ranks": list(f.ranks),
            }
        )
    step_ns = getattr(diag, "step_time_ns", 0)
    return {
        "available": True,
        "headline": diag.headline() if hasattr(diag, "headline") else None,
        "headline_lines": diag.headline_text() if hasattr(diag, "headline_text") else [],
        # None where no rank recorded GPU activity: the page says so instead of a 0.0 %
        "utilization": diag.utilization,
        "no_gpu_reasons": list(diag.no_gpu_reasons()) if hasattr(diag, "no_gpu_reasons") else [],
        "compute_utilization": getattr(diag, "compute_utilization", None),
        "what_if": what_if_table(findings, step_ns),
        "healthy": bool(diag.healthy),
        "too_little_work": getattr(diag, "too_little_work", ""),
        "findings": findings,
        "message": "",
        # Where the traces carry hardware counters: the measured SM-active share per rank
        # and device beside the utilization (doctor.measured), and the doctor's lines on it
        "measured_sm_active": [r.to_dict() for r in getattr(diag, "measured_sm_active", [])],
        "measured_lines": diag.measured_lines() if hasattr(diag, "measured_lines") else [],
    }
