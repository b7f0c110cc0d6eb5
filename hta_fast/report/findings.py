"""The doctor's findings for the top of the report (hta_fast.doctor, when installed)."""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..traceset import TraceSet

if TYPE_CHECKING:
    from ..doctor import Thresholds

log = logging.getLogger("hta_fast")


def _number(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def diagnosis(
    traces: TraceSet, steps: Optional[Sequence[int]], thresholds: Optional[Thresholds] = None
) -> dict[str, Any]:
    """{available, utilization, healthy, findings: [...], message} for the template."""
    try:
        doctor = importlib.import_module("hta_fast.doctor")
    except ImportError:
        return {"available": False, "message": "the doctor is not installed with this version"}
    try:
        diag = doctor.diagnose(traces, steps=steps, thresholds=thresholds)
    except Exception as e:  # noqa: BLE001 - the rest of the report stands without it
        log.warning("report: the doctor could not run: %s", e)
        return {"available": False, "message": f"the doctor could not run on these traces ({e})"}
    findings = []
    for f in diag.findings:
        findings.append(
            {
                "cause": f.cause,
                "title": f.title,
                "above": bool(f.above_threshold),
                "cost_us": f.cost_ns_per_step / 1e3,
                "saving_us": None if f.saving_ns_per_step is None else f.saving_ns_per_step / 1e3,
                "saving_edit": f.saving_edit,
                "saving_note": getattr(f, "saving_note", ""),
                "share_pct": 100.0 * f.share,
                "advice": f.advice,
                "evidence": [(k, _number(v)) for k, v in f.evidence.items()],
                "top_events": [
                    {
                        "name": str(e.get("name", "")),
                        "count": e.get("count"),
                        "total_us": (e.get("total_ns") or 0) / 1e3,
                        "cost_us": None if e.get("cost_ns") is None else e["cost_ns"] / 1e3,
                    }
                    for e in f.top_events[:5]
                ],
                "steps": list(f.steps),
                "ranks": list(f.ranks),
            }
        )
    return {
        "available": True,
        "headline": diag.headline() if hasattr(diag, "headline") else None,
        "headline_lines": diag.headline_text() if hasattr(diag, "headline_text") else [],
        "utilization": diag.utilization,
        "step_us": getattr(diag, "step_time_ns", 0) / 1e3,
        "healthy": bool(diag.healthy),
        "too_little_work": getattr(diag, "too_little_work", ""),
        "findings": findings,
        "message": "",
    }
