"""A stand-in for hta_fast.doctor with the agreed interface, for the command line and
report tests: its diagnosis is set by the test, so exit codes and rendering are known."""

from __future__ import annotations

import dataclasses
import types
from typing import Iterable, Optional

from hta_fast.doctor.causes import CAUSES  # the real registry: one list of causes


@dataclasses.dataclass(frozen=True)
class Thresholds:
    min_share: float = 0.05
    tiny_kernel_ns: float = 10_000.0

    @classmethod
    def from_mapping(cls, values: dict) -> "Thresholds":
        return cls(**{k: float(v) for k, v in values.items()})


@dataclasses.dataclass
class Finding:
    cause: str
    title: str
    above_threshold: bool
    cost_ns_per_step: int
    share: float
    evidence: dict
    top_events: list
    steps: list
    ranks: list
    advice: str
    saving_ns_per_step: Optional[int] = None
    saving_edit: str = ""


@dataclasses.dataclass
class Diagnosis:
    utilization: float
    findings: list
    thresholds: Thresholds

    @property
    def healthy(self) -> bool:
        return not any(f.above_threshold for f in self.findings)

    def failed(
        self, fail_under_utilization: Optional[float] = None, fail_on: Iterable[str] = ()
    ) -> list[str]:
        reasons = []
        if fail_under_utilization is not None and 100 * self.utilization < fail_under_utilization:
            reasons.append(
                f"utilization {100 * self.utilization:.1f} % < {fail_under_utilization} %"
            )
        wanted = set(fail_on)
        reasons += [
            f"{f.cause}: {f.title}"
            for f in self.findings
            if f.above_threshold and f.cause in wanted
        ]
        return reasons

    def no_gpu_reasons(self) -> list[str]:
        return []

    def to_dict(self) -> dict:
        return {
            "utilization": self.utilization,
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "thresholds": dataclasses.asdict(self.thresholds),
            "notes": [],
        }

    def to_text(self) -> str:
        lines = [f"GPU utilization {100 * self.utilization:.1f} %"]
        lines += [f"{i}. {f.title} ({f.cause})" for i, f in enumerate(self.findings, 1)]
        return "\n".join(lines)


def launch_bound_finding(above: bool = True) -> Finding:
    return Finding(
        cause="launch_bound",
        title="Launch-bound: the GPU waits for the CPU",
        above_threshold=above,
        cost_ns_per_step=1_234_000,
        share=0.25,
        evidence={"host_wait_share": 0.4, "kernels_per_step": 310},
        top_events=[{"name": "cudaLaunchKernel", "count": 300, "total_ns": 900_000}],
        steps=[10],
        ranks=[0, 1],
        advice="Use CUDA graphs or fuse small kernels.",
    )


def module(utilization: float = 0.8, findings: Optional[list] = None) -> types.ModuleType:
    """A module object to put in sys.modules["hta_fast.doctor"] (where the command line loads
    it), whose diagnose also stands in for the report's (report.sections.findings.diagnose); it records
    its calls."""
    mod = types.ModuleType("hta_fast.doctor")
    mod.CAUSES, mod.Thresholds, mod.Finding, mod.Diagnosis = CAUSES, Thresholds, Finding, Diagnosis
    mod.calls = []

    def diagnose(traces, steps=None, thresholds=None, model="auto", owners=False):
        mod.calls.append({"ranks": list(traces.ranks), "steps": steps, "thresholds": thresholds})
        return Diagnosis(utilization, list(findings or []), thresholds or Thresholds())

    mod.diagnose = diagnose
    return mod
