// GPU edges: each GPU event spans its duration, starts after its launch call started, and
// after the event before it on its stream ended (streams run their work in order).
#include <algorithm>

#include "graph/dependency_graph.h"

namespace hta::graph {

void add_gpu_edges(const GraphInput& in, Graph& g) {
  // lane, ts, row kept together for the sort (reading them from the columns misses the
  // cache at every comparison once a graph holds millions of events: a chain)
  struct Key {
    int64_t lane, ts, row;
    bool operator<(const Key& o) const {
      if (lane != o.lane) return lane < o.lane;
      return ts != o.ts ? ts < o.ts : row < o.row;
    }
  };
  std::vector<Key> keys;
  for (size_t i = 0; i < in.n; ++i)
    if (in.is_gpu[i]) keys.push_back({in.lane[i], in.ts[i], static_cast<int64_t>(i)});
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> rows(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) rows[k] = keys[k].row;
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t r = rows[k];
    g.add_edge(start_node(r), end_node(r), EdgeType::gpu_self);
    if (in.launch[r] >= 0) g.add_edge(start_node(in.launch[r]), start_node(r), EdgeType::launch);
    if (k > 0 && in.lane[rows[k - 1]] == in.lane[r])
      g.add_edge(end_node(rows[k - 1]), start_node(r), EdgeType::kernel_kernel);
  }
}

}  // namespace hta::graph
