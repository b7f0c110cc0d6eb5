"""The performance model (docs/model.md): the dependency graph of a rank's events
(graph.dependency_graph.build_graph) and the one walk over a rank's steps (graph.walk: as one
chain, or window by window), their replay against the measured steps with ablations
(replay.steps.replay_steps), all ranks of a step replayed together with the cross-rank
collective rule (replay.ranks.replay_ranks), the critical path (path.critical_path;
path.overlay writes it as a trace to open in Perfetto) and what-if edits replayed
(whatif.what_if with whatif.Edits); prediction on another GPU (predict.predict).

Cost models (docs/model_costs.md): collectives' latency and bandwidth fitted from a trace
(comm.collective_cost.fit_collectives), embedding lookups (plans.embedding_lookups,
plans.embedding_cost.fit_lookup_costs) and sharding plans (plans.embedding_cost.evaluate_plan,
improve_plan; their step time by replay: plans.plan_replay.plan_step_time, compare_plans).

Per-event knowledge (FLOPs and bytes per operator, devices) lives in hta_fast.costs; the per-
operator analyses that use it in hta_fast.analysis.ops.op_table and hta_fast.analysis.ops.roofline.

The names below resolve on first use (hta_fast._lazy), as do the subpackages (comm, graph,
path, plans, replay, whatif) and predict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .comm.collective_cost import CostModel, collective_time_factors, fit_collectives
    from .graph.dependency_graph import DependencyGraph, build_graph
    from .path.critical_path import critical_path
    from .path.overlay import critical_path_trace, write_critical_path_trace
    from .plans.embedding_cost import (
        LookupCostModel,
        TableSpec,
        evaluate_plan,
        fit_lookup_costs,
        improve_plan,
    )
    from .plans.embedding_lookups import lookup_kernels
    from .plans.plan_replay import compare_plans, plan_step_time
    from .replay.ranks import replay_ranks
    from .replay.steps import replay_steps
    from .whatif.edits import Edits
    from .whatif.steps import what_if

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {
    "DependencyGraph": "hta_fast.model.graph.dependency_graph",
    "build_graph": "hta_fast.model.graph.dependency_graph",
    "replay_steps": "hta_fast.model.replay.steps",
    "replay_ranks": "hta_fast.model.replay.ranks",
    "what_if": "hta_fast.model.whatif.steps",
    "Edits": "hta_fast.model.whatif.edits",
    "critical_path": "hta_fast.model.path.critical_path",
    "critical_path_trace": "hta_fast.model.path.overlay",
    "write_critical_path_trace": "hta_fast.model.path.overlay",
    "CostModel": "hta_fast.model.comm.collective_cost",
    "fit_collectives": "hta_fast.model.comm.collective_cost",
    "collective_time_factors": "hta_fast.model.comm.collective_cost",
    "LookupCostModel": "hta_fast.model.plans.embedding_cost",
    "TableSpec": "hta_fast.model.plans.embedding_cost",
    "evaluate_plan": "hta_fast.model.plans.embedding_cost",
    "fit_lookup_costs": "hta_fast.model.plans.embedding_cost",
    "improve_plan": "hta_fast.model.plans.embedding_cost",
    "lookup_kernels": "hta_fast.model.plans.embedding_lookups",
    "plan_step_time": "hta_fast.model.plans.plan_replay",
    "compare_plans": "hta_fast.model.plans.plan_replay",
}

__all__ = [
    "DependencyGraph",
    "build_graph",
    "replay_steps",
    "replay_ranks",
    "what_if",
    "Edits",
    "critical_path",
    "critical_path_trace",
    "write_critical_path_trace",
    "CostModel",
    "fit_collectives",
    "collective_time_factors",
    "LookupCostModel",
    "TableSpec",
    "evaluate_plan",
    "fit_lookup_costs",
    "improve_plan",
    "lookup_kernels",
    "plan_step_time",
    "compare_plans",
]

lazy_package(__name__, PUBLIC, subpackages=True)
