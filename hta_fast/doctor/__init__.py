"""The doctor: why is the GPU idle? Ranked causes of lost GPU time, each with evidence from
the trace, an estimate of its cost per step and what usually helps (docs/doctor.md).

    from hta_fast.doctor import diagnose
    diag = diagnose(trace_set)
    print(diag.to_text())
"""

from .ranking import diagnose
from .result import CAUSES, Diagnosis, Finding
from .thresholds import Thresholds

__all__ = ["diagnose", "Thresholds", "Diagnosis", "Finding", "CAUSES"]
