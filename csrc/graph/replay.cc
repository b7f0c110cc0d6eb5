#include "graph/replay.h"

#include <algorithm>
#include <limits>

#include "graph/csr.h"

namespace hta::graph {

namespace {
constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
bool skipped(uint8_t type, uint32_t skip_types) { return (skip_types >> type) & 1u; }
}  // namespace

std::vector<int64_t> replay(const Graph& g, const std::vector<int64_t>& weight, uint32_t skip_types,
                            const std::vector<int64_t>& floor) {
  const size_t nodes = 2 * g.n_events + 1;
  const Csr& out = g.out;
  std::vector<int64_t> time(nodes, kUnset);
  for (int64_t v : g.order) {
    // Nothing happens before the window's start: a node whose edges were all dropped (or
    // shrunk below it by a what-if) starts there.
    if (time[v] == kUnset || time[v] < 0) time[v] = 0;
    if (!floor.empty()) time[v] = std::max(time[v], floor[v]);
    for (int64_t j = out.begin[v]; j < out.begin[v + 1]; ++j) {
      const int64_t e = out.edge[j];
      if (skipped(g.type[e], skip_types)) continue;
      const int64_t d = g.dst[e];
      time[d] = std::max(time[d], time[v] + weight[e]);
    }
  }
  return time;
}

namespace {
// One longest path back from node v, stopping at a node no tight edge leads into (the source,
// or one held by its floor) or at one that happens at or before stop_at.
void walk_back(const Graph& g, const Csr& in, const std::vector<int64_t>& weight,
               const std::vector<int64_t>& times, uint32_t skip_types, int64_t v, int64_t stop_at,
               std::vector<int64_t>& path) {
  const size_t first = path.size();
  while (times[v] > stop_at) {
    // Of the tight edges into v, follow the one from the latest source (ties: the last added,
    // a rigid duration before the wait that shares its time).
    int64_t pick = -1;
    for (int64_t j = in.begin[v]; j < in.begin[v + 1]; ++j) {
      const int64_t e = in.edge[j];
      if (skipped(g.type[e], skip_types)) continue;
      if (times[g.src[e]] + weight[e] != times[v]) continue;
      if (pick < 0 || times[g.src[e]] >= times[g.src[pick]]) pick = e;
    }
    if (pick < 0) break;
    path.push_back(pick);
    v = g.src[pick];
  }
  std::reverse(path.begin() + static_cast<std::ptrdiff_t>(first), path.end());
}
}  // namespace

std::vector<int64_t> critical_path(const Graph& g, const std::vector<int64_t>& weight,
                                   const std::vector<int64_t>& times, uint32_t skip_types,
                                   int64_t from) {
  const size_t nodes = times.size();
  const Csr in = by_node(g.dst, nodes);
  const int64_t v =
      from >= 0
          ? from
          : static_cast<int64_t>(std::max_element(times.begin(), times.end()) - times.begin());
  std::vector<int64_t> path;
  walk_back(g, in, weight, times, skip_types, v, kUnset, path);
  return path;
}

std::vector<int64_t> critical_paths(const Graph& g, const std::vector<int64_t>& weight,
                                    const std::vector<int64_t>& times, uint32_t skip_types,
                                    const std::vector<int64_t>& from,
                                    const std::vector<int64_t>& stop_at,
                                    std::vector<int64_t>& offsets) {
  const Csr in = by_node(g.dst, times.size());
  std::vector<int64_t> paths;
  offsets.assign(1, 0);
  for (size_t k = 0; k < from.size(); ++k) {
    walk_back(g, in, weight, times, skip_types, from[k], stop_at[k], paths);
    offsets.push_back(static_cast<int64_t>(paths.size()));
  }
  return paths;
}

}  // namespace hta::graph
