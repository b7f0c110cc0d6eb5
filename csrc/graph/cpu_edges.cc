// CPU edges: each thread's events in call order. Children of one parent (or the top-level
// events of a thread) are taken in order of (ts, row); the first child hangs from its parent's
// start, each next one from the previous one's end, and the parent's end from its last child.
// An event without children spans its own duration; a blocking call's span is split into
// waiting and not waiting by sync_edges.cc instead.
#include <algorithm>

#include "graph/dependency_graph.h"

namespace hta::graph {

void add_cpu_edges(const GraphInput& in, Graph& g) {
  // Siblings share (lane, parent); sort so that each sibling group is contiguous and in time.
  // The keys are copied next to their rows: a sort that reads them from the columns misses
  // the cache at every comparison once a graph holds millions of events (a chain).
  struct Key {
    int64_t lane, parent, ts, row;
    bool operator<(const Key& o) const {
      if (lane != o.lane) return lane < o.lane;
      if (parent != o.parent) return parent < o.parent;
      return ts != o.ts ? ts < o.ts : row < o.row;
    }
  };
  std::vector<Key> keys;
  keys.reserve(in.n);
  for (size_t i = 0; i < in.n; ++i)
    if (!in.is_gpu[i]) keys.push_back({in.lane[i], in.parent[i], in.ts[i], static_cast<int64_t>(i)});
  std::sort(keys.begin(), keys.end());
  std::vector<int64_t> rows(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) rows[k] = keys[k].row;
  keys = {};
  std::vector<uint8_t> has_child(in.n, 0);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t r = rows[k];
    const int64_t p = in.parent[r];
    const bool first = k == 0 || in.lane[rows[k - 1]] != in.lane[r] || in.parent[rows[k - 1]] != p;
    const bool last = k + 1 == rows.size() || in.lane[rows[k + 1]] != in.lane[r] ||
                      in.parent[rows[k + 1]] != p;
    if (!first) g.add_edge(end_node(rows[k - 1]), start_node(r), EdgeType::cpu_sibling);
    if (p >= 0) {
      has_child[p] = 1;
      if (first) g.add_edge(start_node(p), start_node(r), EdgeType::cpu_nest_down);
      if (last) g.add_edge(end_node(r), end_node(p), EdgeType::cpu_nest_up);
    }
  }
  for (int64_t r : rows)
    if (!has_child[r] && !is_blocking(static_cast<SyncKind>(in.sync_kind[r])))
      g.add_edge(start_node(r), end_node(r), EdgeType::cpu_self);
}

}  // namespace hta::graph
