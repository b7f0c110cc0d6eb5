"""The doctor: why is the GPU idle? Ranked causes of lost GPU time, each with evidence from
the trace, an estimate of its cost per step, the model's predicted saving and what usually
helps (docs/doctor.md). Each cause is one record (doctor.causes.record.Cause, its rows of
docs/doctor.md a CauseDoc) in doctor.causes; doctor.views holds what they read.

    from hta_fast.doctor import diagnose
    diag = diagnose(trace_set)
    print(diag.to_text())
"""

from .causes import CAUSES
from .causes.record import Cause, CauseDoc
from .ranking import diagnose
from .result import Diagnosis, Finding
from .views.thresholds import Thresholds

__all__ = ["diagnose", "Thresholds", "Diagnosis", "Finding", "Cause", "CauseDoc", "CAUSES"]
