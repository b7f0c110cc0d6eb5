"""Layer 4b, steps: which window of a trace is a step. Where the steps come from
(steps_from: the profiler's ProfilerStep events, inference passes by name, repeated launch
sequences, iterations), the profiler's own flush steps, the steps that look like warm-up
(warmup_steps), each step's device-aware window (step_windows: from the host's start to
the end of the GPU work it launched, as the TensorBoard profiler times steps), and a
rank's analysed steps (analysed_steps: which steps, their window and their time, decided
once for the doctor and its report). It sits on frame/ and below analysis/; the loader's
ProfilerStep table stays in the data layer (hta_fast.step_columns).

The names below resolve on first use (hta_fast._lazy): reading one of them imports only
the module that defines it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .analysed import AnalysedSteps, analysed_steps
    from .steps_from import SOURCES, steps_from, with_steps, with_steps_from
    from .warmup import warmup_steps

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {
    "AnalysedSteps": "hta_fast.steps.analysed",
    "analysed_steps": "hta_fast.steps.analysed",
    "SOURCES": "hta_fast.steps.steps_from",
    "steps_from": "hta_fast.steps.steps_from",
    "with_steps": "hta_fast.steps.steps_from",
    "with_steps_from": "hta_fast.steps.steps_from",
    "warmup_steps": "hta_fast.steps.warmup",
}

__all__ = [
    "AnalysedSteps",
    "analysed_steps",
    "SOURCES",
    "steps_from",
    "with_steps",
    "with_steps_from",
    "warmup_steps",
]

lazy_package(__name__, PUBLIC)
