"""Models of the work in a trace: FLOPs and bytes per operator (flops), the devices' peaks
(devices), bytes of collectives (comm_bytes.comm_bytes), kernel time models and prediction on
another GPU (kernel_model, predict.predict). The per-operator analyses that use them live in
hta_fast.analysis.op_table and hta_fast.analysis.roofline.

The performance model (docs/model.md): the dependency graph of a rank's events
(dependency_graph.build_graph), its replay against the measured steps with ablations
(replay.replay_steps), all ranks of a step replayed together with the cross-rank collective
rule (replay_ranks.replay_ranks) and what-if edits replayed (what_if.what_if); the critical path is
hta_fast.model.path.critical_path, and path_trace writes it as a trace to open in Perfetto.

Cost models (docs/model_costs.md): collectives' latency and bandwidth fitted from a trace
(collective_cost.fit_collectives), embedding lookups (embedding_lookups.lookup_kernels,
embedding_cost.fit_lookup_costs) and sharding plans (embedding_cost.evaluate_plan,
improve_plan; their step time by replay: plan_replay.plan_step_time, compare_plans)."""
from .comm.collective_cost import CostModel, collective_time_factors, fit_collectives
from ..costs.cost import Cost
from ..costs.devices import Device, DeviceTable, trace_device
from .graph.dependency_graph import DependencyGraph, build_graph
from .plans.embedding_cost import (LookupCostModel, TableSpec, evaluate_plan, fit_lookup_costs,
                                   improve_plan)
from .plans.embedding_lookups import lookup_kernels
from ..costs.flops import cost_of, no_model_summary, op_costs, with_costs
from .path.overlay import critical_path_trace, write_critical_path_trace
from .plans.plan_replay import compare_plans, plan_step_time
from .replay.steps import replay_steps
from .replay.ranks import replay_ranks
from .whatif.what_if import what_if

__all__ = ["Cost", "Device", "DeviceTable", "trace_device", "cost_of", "no_model_summary",
           "op_costs", "with_costs", "DependencyGraph", "build_graph", "replay_steps", "replay_ranks", "what_if",
           "critical_path_trace", "write_critical_path_trace", "CostModel", "fit_collectives",
           "collective_time_factors", "LookupCostModel", "TableSpec", "evaluate_plan",
           "fit_lookup_costs", "improve_plan", "lookup_kernels", "plan_step_time", "compare_plans"]
