// Replay: when each node happens, given the graph and its edge weights.
//
// Why: with every lane's order fixed by the trace, a discrete-event simulation of the graph
// (each node fires once all its predecessors have, after their edges' weights) is one pass in
// topological order: time(v) = max over edges u->v of time(u) + weight. The step it predicts is
// the latest node time, and the edges that were tight on the way there are the critical path.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/dependency_graph.h"

namespace hta::graph {

// Node times relative to the source (ns). Edges whose type bit is set in skip_types are left
// out; a node left with no edge, or before the source, starts at the source's time. floor, when
// not empty (one per node), is a time no node happens before: what another rank's graph imposes
// (a collective cannot end before the last rank has reached it).
std::vector<int64_t> replay(const Graph& g, const std::vector<int64_t>& weight,
                            uint32_t skip_types = 0, const std::vector<int64_t>& floor = {});

// The edges of a longest path from the source to the latest node (or to `from`, when it is a
// node: where a path across ranks enters this rank's graph), in order, over the times replay()
// returned for the same weights and skip_types. It stops at a node held by its floor (no edge
// into it is tight): the path goes on on another rank.
std::vector<int64_t> critical_path(const Graph& g, const std::vector<int64_t>& weight,
                                   const std::vector<int64_t>& times, uint32_t skip_types = 0,
                                   int64_t from = -1);

// Several paths over one replay, for the steps of a chain of profiler steps replayed as one
// graph: path k runs back from node from[k] and stops at the first node at or before
// stop_at[k] (the step's replayed start), so each costs its own length, not the chain's. The
// paths are concatenated; path k is [offsets[k], offsets[k + 1]).
std::vector<int64_t> critical_paths(const Graph& g, const std::vector<int64_t>& weight,
                                    const std::vector<int64_t>& times, uint32_t skip_types,
                                    const std::vector<int64_t>& from,
                                    const std::vector<int64_t>& stop_at,
                                    std::vector<int64_t>& offsets);

}  // namespace hta::graph
