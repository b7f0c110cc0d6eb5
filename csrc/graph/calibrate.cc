#include "graph/calibrate.h"

#include <algorithm>
#include <array>

namespace hta::graph {

namespace {
int64_t median(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}
}  // namespace

Calibration calibrate(const Graph& g, const std::vector<int64_t>& t) {
  const size_t m = g.src.size();
  const size_t nodes = t.size();
  Calibration c;
  c.weight.assign(m, 0);
  c.binding.assign(m, 0);
  std::vector<uint8_t> rigid_in(nodes, 0);
  std::vector<int64_t> best(nodes, -1);  // the binding wait edge into each node
  for (size_t e = 0; e < m; ++e) {
    const int64_t d = g.dst[e];
    if (is_rigid(static_cast<EdgeType>(g.type[e]))) {
      rigid_in[d] = 1;
      c.weight[e] = t[d] - t[g.src[e]];
      c.binding[e] = 1;
    } else if (best[d] < 0 || t[g.src[e]] > t[g.src[best[d]]]) {
      best[d] = static_cast<int64_t>(e);
    }
  }
  std::array<std::vector<int64_t>, kEdgeTypes> bound_weights;
  for (size_t v = 0; v < nodes; ++v) {
    if (rigid_in[v] || best[v] < 0) continue;
    const int64_t e = best[v];
    c.binding[e] = 1;
    c.weight[e] = t[v] - t[g.src[e]];
    bound_weights[g.type[e]].push_back(c.weight[e]);
  }
  std::array<int64_t, kEdgeTypes> typical{};
  for (int k = 0; k < kEdgeTypes; ++k) typical[k] = std::max<int64_t>(0, median(bound_weights[k]));
  for (size_t e = 0; e < m; ++e)
    if (!c.binding[e]) c.weight[e] = std::min(t[g.dst[e]] - t[g.src[e]], typical[g.type[e]]);
  return c;
}

}  // namespace hta::graph
