// CPU edges: each thread's events in call order. Children of one parent (or the top-level
// events of a thread) are taken in order of (ts, row); the first child hangs from its parent's
// start, each next one from the previous one's end, and the parent's end from its last child.
// An event without children spans its own duration; a blocking call's span is split into
// waiting and not waiting by sync_edges.cc instead.
#include <algorithm>
#include <utility>
#include <vector>

#include "graph/dependency_graph.h"
#include "ops/group_sort.h"

namespace hta::graph {

namespace {
// rows reordered by key(row) (a small non-negative integer), keeping their order within a key.
template <class Key>
std::vector<int64_t> stable_counting_sort(const std::vector<int64_t>& rows, Key key) {
  int64_t top = 0;
  for (int64_t r : rows) top = std::max(top, key(r));
  std::vector<int64_t> next(static_cast<size_t>(top) + 2, 0);
  for (int64_t r : rows) ++next[key(r) + 1];
  for (size_t k = 1; k < next.size(); ++k) next[k] += next[k - 1];
  std::vector<int64_t> out(rows.size());
  for (int64_t r : rows) out[next[key(r)]++] = r;
  return out;
}
}  // namespace

void add_cpu_edges(const GraphInput& in, Graph& g) {
  // Siblings share (lane, parent); order the rows by (lane, parent, ts, row) so that each
  // sibling group is contiguous and in time. The rows come nearly in time order, so a merge
  // of their sorted runs orders them by (ts, row), and two stable counting sorts, by parent
  // and then by lane, do the rest: linear where a comparison sort of a chain's millions of
  // events is not.
  std::vector<int64_t> by_time;
  by_time.reserve(in.n);
  for (size_t i = 0; i < in.n; ++i)
    if (!in.is_gpu[i]) by_time.push_back(static_cast<int64_t>(i));
  hta::ops::detail::sort_runs(by_time.begin(), by_time.end(), [&](int64_t a, int64_t b) {
    return in.ts[a] != in.ts[b] ? in.ts[a] < in.ts[b] : a < b;
  });
  // Counting needs small keys: parent + 1 lies in [0, n] and lanes are dense codes (as
  // hta_fast.model.dependency_graph numbers them); other keys take a comparison sort.
  bool small_keys = true;
  const auto cap = static_cast<int64_t>(4 * in.n + 1024);
  for (int64_t r : by_time) small_keys &= in.parent[r] >= -1 && in.lane[r] >= 0 && in.lane[r] < cap;
  std::vector<int64_t> rows;
  if (small_keys) {
    rows = stable_counting_sort(
        stable_counting_sort(by_time, [&](int64_t r) { return in.parent[r] + 1; }),
        [&](int64_t r) { return in.lane[r]; });
  } else {
    rows = std::move(by_time);
    std::sort(rows.begin(), rows.end(), [&](int64_t a, int64_t b) {
      if (in.lane[a] != in.lane[b]) return in.lane[a] < in.lane[b];
      if (in.parent[a] != in.parent[b]) return in.parent[a] < in.parent[b];
      return in.ts[a] != in.ts[b] ? in.ts[a] < in.ts[b] : a < b;
    });
  }
  std::vector<uint8_t> has_child(in.n, 0);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int64_t r = rows[k];
    const int64_t p = in.parent[r];
    const bool first = k == 0 || in.lane[rows[k - 1]] != in.lane[r] || in.parent[rows[k - 1]] != p;
    const bool last =
        k + 1 == rows.size() || in.lane[rows[k + 1]] != in.lane[r] || in.parent[rows[k + 1]] != p;
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
