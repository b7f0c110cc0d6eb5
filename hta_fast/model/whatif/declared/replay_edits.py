"""The declarations (hta_fast.model.whatif.declared.declaration) of the edits that the replay's
weights apply themselves (hta_fast.model.whatif.weights): GPU time by kernel class, name and
category, CPU time, launch overhead, the waits for communication and for syncs; the
duration changes computed elsewhere (plans, the doctor); and the ranks the edits apply to."""

from __future__ import annotations

from .declaration import EditDeclaration, Option, factor_pairs

PLANNED = EditDeclaration(
    key="planned",
    options=(),
    keywords=("duration_change", "op_change"),
    build=lambda v: {},
    doc="Per rank, event rows and ns added to their durations (`duration_change`), and CPU "
    "event rows and a factor on each and what it holds (`op_change`): edits computed "
    "elsewhere (`hta_fast.model.plans.plan_replay`, the doctor).",
)

KERNEL_CLASS = EditDeclaration(
    key="kernel_class",
    options=(
        Option(
            "--scale",
            "classes",
            "Scale GPU time of a kernel class: COMM, COMP or MEM (repeatable).",
            metavar="CLASS=F",
            multiple=True,
        ),
    ),
    keywords=("kernel_class",),
    build=lambda v: {"kernel_class": factor_pairs(v["classes"], "--scale")},
    doc="`{CLASS: F}`: GPU event durations of a kernel class (COMP, COMM, MEM) times F.",
)

NAME = EditDeclaration(
    key="name",
    options=(
        Option(
            "--scale-name",
            "names",
            "Scale GPU events whose name matches (repeatable).",
            metavar="REGEX=F",
            multiple=True,
        ),
    ),
    keywords=("name",),
    build=lambda v: {"name": factor_pairs(v["names"], "--scale-name")},
    doc="`{REGEX: F}`: GPU events whose name matches (`re.search`) take F times as long.",
)

CATEGORY = EditDeclaration(
    key="category",
    options=(
        Option(
            "--scale-category",
            "categories",
            "Scale events of a trace category, e.g. cpu_op=0.5 (repeatable).",
            metavar="CAT=F",
            multiple=True,
        ),
    ),
    keywords=("category",),
    build=lambda v: {"category": factor_pairs(v["categories"], "--scale-category")},
    doc="`{CAT: F}`: GPU events of a trace category (`kernel`, `gpu_memcpy`, `gpu_memset`) "
    "take F times as long.",
)

CPU = EditDeclaration(
    key="cpu",
    options=(
        Option("--cpu", "cpu", "Scale CPU time.", type="float", default=1.0, show_default=True),
    ),
    keywords=("cpu",),
    build=lambda v: {"cpu": v["cpu"]},
    doc="CPU event durations, the gaps between a thread's calls and the non-waiting part of "
    "sync calls times F.",
)

ZERO_LAUNCH_OVERHEAD = EditDeclaration(
    key="zero_launch_overhead",
    options=(
        Option(
            "--zero-launch-overhead",
            "zero_launch_overhead",
            "Launches cost nothing (CUDA graphs).",
            type="flag",
        ),
    ),
    keywords=("zero_launch_overhead",),
    build=lambda v: {"zero_launch_overhead": v["zero_launch_overhead"]},
    doc="Launch edges and the launch calls' own CPU time cost nothing (what CUDA graphs "
    "approach), but for a one-off launch call and a launch that waited behind unrecorded GPU "
    "work.",
)

DROP_COMM_WAITS = EditDeclaration(
    key="drop_comm_waits",
    options=(
        Option(
            "--drop-comm-waits",
            "drop_comm_waits",
            "Nothing waits on communication (perfect overlap bound).",
            type="flag",
        ),
    ),
    keywords=("drop_comm_waits",),
    build=lambda v: {"drop_comm_waits": v["drop_comm_waits"]},
    doc="Cross-stream and host-sync edges out of communication kernels are dropped (the "
    "perfect-overlap bound).",
)

DROP_SYNC_WAITS = EditDeclaration(
    key="drop_sync_waits",
    options=(
        Option(
            "--drop-sync-waits",
            "drop_sync_waits",
            "Blocking syncs return at once: the host never waits for the GPU.",
            type="flag",
        ),
    ),
    keywords=("drop_sync_waits",),
    build=lambda v: {"drop_sync_waits": v["drop_sync_waits"]},
    doc="Every sync_wait edge is dropped: a blocking sync takes what the trace's syncs that "
    "did not wait took.",
)

EDIT_RANKS = EditDeclaration(
    key="edit_ranks",
    options=(
        Option(
            "--edit-ranks",
            "edit_ranks",
            "Apply the edits (not --comm-bandwidth) to these ranks only, "
            "e.g. 0,3 or 0-3 (default: all).",
            type="ranks",
        ),
    ),
    keywords=("edit_ranks",),
    build=lambda v: {"edit_ranks": v["edit_ranks"]},
    doc="The ranks the factor, device and declared edits apply to (default: all); the "
    "bandwidth and world-size edits and `duration_change` apply where they say.",
)
