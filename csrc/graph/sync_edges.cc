// Sync edges: where the host or another stream waits for GPU work.
//
// "The work launched before X on lane L" is the GPU event on L with the largest launch
// correlation below X's: correlation ids grow in launch order within a process, and a stream
// runs its work in launch order, so that event's end is when everything before X is done.
#include <algorithm>
#include <unordered_map>

#include "graph/dependency_graph.h"

namespace hta::graph {

namespace {

// The GPU events of each lane in launch order.
struct LaneIndex {
  std::unordered_map<int64_t, std::vector<int64_t>> rows;  // lane -> rows sorted by corr
  const int64_t* corr;

  // The last row on lane with corr < bound, or -1.
  int64_t last_before(int64_t lane, int64_t bound) const {
    auto it = rows.find(lane);
    if (it == rows.end()) return -1;
    const auto& v = it->second;
    auto pos = std::lower_bound(v.begin(), v.end(), bound,
                                [&](int64_t r, int64_t b) { return corr[r] < b; });
    return pos == v.begin() ? -1 : *(pos - 1);
  }
  // The first row on lane with corr > bound, or -1.
  int64_t first_after(int64_t lane, int64_t bound) const {
    auto it = rows.find(lane);
    if (it == rows.end()) return -1;
    const auto& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), bound,
                                [&](int64_t b, int64_t r) { return b < corr[r]; });
    return pos == v.end() ? -1 : *pos;
  }
};
// GPU work held behind another stream's work (held_by, inferred by the caller from the
// measured times) waits for it, unless a stream wait already gave it a cross-stream edge.
void add_held_edges(const GraphInput& in, Graph& g) {
  if (!in.held_by) return;
  std::vector<uint8_t> waits(in.n, 0);
  for (size_t e = 0; e < g.type.size(); ++e)
    if (g.type[e] == static_cast<uint8_t>(EdgeType::cross_stream)) waits[g.dst[e] / 2] = 1;
  for (size_t i = 0; i < in.n; ++i) {
    const int64_t x = in.held_by[i];
    if (x >= 0 && x != static_cast<int64_t>(i) && in.is_gpu[i] && !waits[i])
      g.add_edge(end_node(x), start_node(static_cast<int64_t>(i)), EdgeType::cross_stream);
  }
}
}  // namespace

void add_sync_edges(const GraphInput& in, Graph& g) {
  LaneIndex idx{{}, in.corr};
  std::vector<int64_t> own_gpu;  // GPU rows with a launch, for synchronous copies
  for (size_t i = 0; i < in.n; ++i) {
    if (!in.is_gpu[i]) continue;
    if (in.corr[i] >= 0) idx.rows[in.lane[i]].push_back(static_cast<int64_t>(i));
    if (in.launch[i] >= 0) own_gpu.push_back(static_cast<int64_t>(i));
  }
  for (auto& [lane, v] : idx.rows)
    std::sort(v.begin(), v.end(), [&](int64_t a, int64_t b) {
      return in.corr[a] != in.corr[b] ? in.corr[a] < in.corr[b] : a < b;
    });

  for (size_t i = 0; i < in.n; ++i) {
    const auto kind = static_cast<SyncKind>(in.sync_kind[i]);
    const auto r = static_cast<int64_t>(i);
    if (kind == SyncKind::none || in.is_gpu[i]) continue;
    if (is_blocking(kind)) g.add_edge(start_node(r), end_node(r), EdgeType::sync_self);
    switch (kind) {
      case SyncKind::stream:
      case SyncKind::event: {
        const int64_t bound = kind == SyncKind::stream ? in.corr[i] : in.wait_corr[i];
        const int64_t w = idx.last_before(in.wait_lane[i], bound);
        if (w >= 0) g.add_edge(end_node(w), end_node(r), EdgeType::sync_wait);
        break;
      }
      case SyncKind::device:
        for (const auto& [lane, v] : idx.rows) {
          const int64_t w = idx.last_before(lane, in.corr[i]);
          if (w >= 0) g.add_edge(end_node(w), end_node(r), EdgeType::sync_wait);
        }
        break;
      case SyncKind::stream_wait: {
        const int64_t w = idx.last_before(in.wait_lane[i], in.wait_corr[i]);
        const int64_t next = idx.first_after(in.target_lane[i], in.corr[i]);
        if (w >= 0 && next >= 0) g.add_edge(end_node(w), start_node(next), EdgeType::cross_stream);
        break;
      }
      default:
        break;
    }
  }
  for (int64_t k : own_gpu)
    if (in.sync_kind[in.launch[k]] == static_cast<uint8_t>(SyncKind::own_copy))
      g.add_edge(end_node(k), end_node(in.launch[k]), EdgeType::sync_wait);
  add_held_edges(in, g);
}

}  // namespace hta::graph
