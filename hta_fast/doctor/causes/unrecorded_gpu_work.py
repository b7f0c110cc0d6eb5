"""Cause unrecorded_gpu_work: the GPU ran work the trace does not hold, and recorded work sat
ready behind it (model.graph.unrecorded_wait says where: a stream held while the host sat in
a blocking call, the GPU idle as recorded).

Cost per step: the held time inside the window (RankView.held: a stream held, or a blocking
call kept waiting after the recorded work was done), in the step of the held event or call; no other cause is charged with it (the doctor's idle gaps end where the hold began),
and a blocking call queued behind the held work waits for it, not the other way round.
Nothing in the trace removes it: the finding's saving is null, said so, and what helps is
recording what the GPU ran. A trace that opens so has that head cut from its window
(RankView.head_cut) instead, and no finding.

Evidence: how many holds and their time, the longest (the held event, its stream, when it
began from the window's start) and the blocking call that waited through it.
"""

from __future__ import annotations

import numpy as np

from ...frame.fields import duration_text
from ...frame.gpu_work import Holds
from ...model.graph.unrecorded_wait import waiting_calls
from ...schema import GPU_WORK_KINDS
from ..views.context import RankView, names_of
from ..views.estimate import Estimate, Tally, per_step
from ..views.text import Number
from .record import Cause, CauseDoc, Examination

ADVICE = (
    "Nothing in this trace removes it: the GPU was busy with work the profiler did not record "
    "(work queued before recording began, such as a serving engine's previous batch; another "
    "process on the GPU; a stream made to wait on an event such work records). Start the "
    "profiler before that work is queued, or with a warm-up (torch.profiler.schedule), and "
    "judge the recorded work after the hold. A blocking copy or sync waiting through it is "
    "not its cause."
)

# characters of the held event's name in the title (the evidence holds it whole)
TITLE_NAME = 60
# held_stream of a blocking call kept waiting after the recorded work (sync_tails): the host
# waited, on no one stream
TAIL = "none: a blocking call waited"


def examine(ex: Examination) -> Estimate:
    cost: dict[int, np.ndarray] = {}
    tally = Tally()
    held_ns = 0
    count = 0
    best: tuple[int, dict[str, Number]] = (0, {})
    for v in ex.views:
        h = v.held
        length = h.ends - h.starts
        step = v.step_index_of(v.trace.column("events", "step")[h.rows].astype(np.int64), h.ends)
        cost[v.rank] = per_step(v, step, length)
        if not len(h.rows):
            continue
        tally.add(v, h.rows, length)
        held_ns += int(length.sum())
        count += len(h.rows)
        k = int(np.argmax(length))
        if int(length[k]) > best[0]:
            best = (int(length[k]), _longest(v, k))
    evidence: dict[str, Number] = {"holds": count, "held_ns": held_ns, **best[1]}
    if not count:
        return Estimate(cost, evidence, [], "GPU work the trace did not record: none", ADVICE)
    ev = best[1]
    held = str(ev["held_event"])
    held = held if len(held) <= TITLE_NAME else held[: TITLE_NAME - 3] + "..."
    if ev["held_stream"] == TAIL:
        title = (
            f"GPU work the trace did not record kept {held} waiting {duration_text(best[0])} "
            "after the recorded work was done (not removable)"
        )
    else:
        waiting = f"; {ev['waiting_call']} waits through it" if ev.get("waiting_call") else ""
        title = (
            f"GPU work the trace did not record held stream {ev['held_stream']} "
            f"{duration_text(best[0])} before {held}{waiting} (not removable)"
        )
    return Estimate(cost, evidence, tally.top(), title, ADVICE)


def _waiting_call(v: RankView, k: int) -> str:
    """The blocking call that waited through the view's k-th hold (model.graph.
    unrecorded_wait.waiting_calls), "" where none did (a trace's head)."""
    one = Holds(v.held.rows[k : k + 1], v.held.starts[k : k + 1], v.held.ends[k : k + 1])
    row = int(waiting_calls(v.trace, one)[0])
    return names_of(v.trace, np.array([row]))[0] if row >= 0 else ""


def _longest(v: RankView, k: int) -> dict[str, Number]:
    """Evidence of the view's k-th hold: the held event, its stream, its start in the window,
    and the blocking call that waited through it ("" when none did: a trace's head)."""
    trace, h = v.trace, v.held
    row = int(h.rows[k])
    gpu = trace.column("events", "kind")[row] in GPU_WORK_KINDS
    return {
        "held_event": names_of(trace, np.array([row]))[0],
        "held_stream": int(trace.column("events", "stream")[row]) if gpu else TAIL,
        "held_from_window_start_ns": int(h.starts[k] - v.lo),
        "longest_hold_ns": int(h.ends[k] - h.starts[k]),
        "waiting_call": _waiting_call(v, k),
    }


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means=(
        "the GPU ran work the trace does not hold, and recorded work sat ready behind "
        "it: a stream held while the host sat in a blocking call, the GPU idle as "
        "recorded, or a blocking call kept waiting 1 ms or more after the recorded work "
        "it waited for was done (`hta_fast.model.graph.unrecorded_wait`; on "
        "modern/sglang_decode stream 3 is held 463 ms behind work queued before "
        "recording began, and the `hipMemcpyWithStream` queued behind it waits for it)"
    ),
    cost=(
        "the held time inside the window, in the step of the held event or call; the "
        "idle gaps the other causes read end where the hold began (or start where a kept "
        "call returned), so no host call is charged with it. Not removable: its saving "
        'is null ("not removable"), never the blocking call\'s. A trace that opens so has '
        "that head cut from its window instead (no finding). Evidence: `holds`, "
        "`held_ns`, `held_event`, `held_stream`, `held_from_window_start_ns`, "
        "`longest_hold_ns`, `waiting_call`"
    ),
    helps=(
        "record what the GPU ran: start the profiler before that work is queued or after "
        "a warm-up, and judge the recorded work after the hold"
    ),
    edit='none: not removable (`saving_ns_per_step` null, "not removable" in the text)',
)


CAUSE = Cause(
    key="unrecorded_gpu_work",
    name="GPU work the trace did not record",
    thresholds=("min_share",),
    evidence=(
        "holds",
        "held_ns",
        "held_event",
        "held_stream",
        "held_from_window_start_ns",
        "longest_hold_ns",
        "waiting_call",
    ),
    heuristic=examine,
    edit=None,
    edit_text="not removable: the GPU ran work this trace does not hold, and no edit of the "
    "recorded work shortens it",
    owners=("gpu_unrecorded_work",),
    doc=DOC,
)
