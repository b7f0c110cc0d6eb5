#include <stdexcept>
#include <string>

#include "graph/csr.h"
#include "graph/dependency_graph.h"

namespace hta::graph {

std::vector<int64_t> measured_times(const GraphInput& in) {
  std::vector<int64_t> t(2 * in.n + 1);
  for (size_t i = 0; i < in.n; ++i) {
    t[2 * i] = in.ts[i];
    t[2 * i + 1] = in.ts[i] + in.dur[i];
  }
  t[2 * in.n] = in.window_start;
  return t;
}

Graph build_graph(const GraphInput& in) {
  Graph g;
  g.n_events = in.n;
  // About two edges per event and a release edge per few: reserved once, not regrown from
  // small (a chain's graph has millions).
  g.src.reserve(3 * in.n);
  g.dst.reserve(3 * in.n);
  g.type.reserve(3 * in.n);
  add_cpu_edges(in, g);
  add_gpu_edges(in, g);
  add_sync_edges(in, g);
  add_thread_edges(in, g);

  // Every node that nothing else leads to starts from the window's start (or the node
  // release_from names).
  const size_t nodes = 2 * in.n + 1;
  const auto source = static_cast<int64_t>(2 * in.n);
  std::vector<uint8_t> has_pred(nodes, 0);
  for (int64_t d : g.dst) has_pred[d] = 1;
  for (size_t v = 0; v + 1 < nodes; ++v)
    if (!has_pred[v]) {
      const int64_t from = in.release_from ? in.release_from[v / 2] : -1;
      g.src.push_back(from >= 0 && from != static_cast<int64_t>(v) ? from : source);
      g.dst.push_back(static_cast<int64_t>(v));
      g.type.push_back(static_cast<uint8_t>(EdgeType::release));
    }

  // Kahn's algorithm; nodes left over lie on a cycle.
  g.out = by_node(g.src, nodes);
  const Csr& out = g.out;
  std::vector<int64_t> indegree(nodes, 0);
  for (int64_t d : g.dst) ++indegree[d];
  g.order.reserve(nodes);
  for (size_t v = 0; v < nodes; ++v)
    if (indegree[v] == 0) g.order.push_back(static_cast<int64_t>(v));
  for (size_t k = 0; k < g.order.size(); ++k) {
    const int64_t v = g.order[k];
    for (int64_t j = out.begin[v]; j < out.begin[v + 1]; ++j) {
      const int64_t d = g.dst[out.edge[j]];
      if (--indegree[d] == 0) g.order.push_back(d);
    }
  }
  if (g.order.size() != nodes)
    throw std::runtime_error("dependency graph has a cycle through " +
                             std::to_string(nodes - g.order.size()) +
                             " nodes (events out of order in the trace)");
  return g;
}

}  // namespace hta::graph
