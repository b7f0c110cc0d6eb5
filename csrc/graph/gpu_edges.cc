// GPU edges: each GPU event spans its duration, starts after its launch call started, and
// after the event before it on its stream ended (streams run their work in order).
#include <algorithm>

#include "graph/dependency_graph.h"
#include "ops/group_sort.h"

namespace hta::graph {

void add_gpu_edges(const GraphInput& in, Graph& g) {
  // By (lane, ts, row): a stable counting sort by lane keeps each lane's rows in their
  // near-time order, whose sorted runs are then merged (linear for a chain's millions).
  std::vector<int64_t> rows;
  for (size_t i = 0; i < in.n; ++i)
    if (in.is_gpu[i]) rows.push_back(static_cast<int64_t>(i));
  hta::ops::sort_by_group(
      rows, [&](int64_t r) { return in.lane[r]; },
      [&](int64_t a, int64_t b) { return in.ts[a] != in.ts[b] ? in.ts[a] < in.ts[b] : a < b; });
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t r = rows[k];
    g.add_edge(start_node(r), end_node(r), EdgeType::gpu_self);
    if (in.launch[r] >= 0) g.add_edge(start_node(in.launch[r]), start_node(r), EdgeType::launch);
    if (k > 0 && in.lane[rows[k - 1]] == in.lane[r])
      g.add_edge(end_node(rows[k - 1]), start_node(r), EdgeType::kernel_kernel);
  }
}

}  // namespace hta::graph
