// Cross-thread edges: a thread that starts working inside the window (an autograd worker, a
// data loader thread) was woken by something another thread did. Its first event hangs from
// the last CPU event on any other thread that ended before it started; the thread with the
// window's first event needs none. A happens-before guess, not a recorded dependency: the
// trace has no record of which call woke a thread.
#include <algorithm>
#include <unordered_map>

#include "graph/dependency_graph.h"

namespace hta::graph {

void add_thread_edges(const GraphInput& in, Graph& g) {
  std::unordered_map<int64_t, int64_t> first;  // lane -> its earliest event
  std::vector<int64_t> by_end;
  for (size_t i = 0; i < in.n; ++i) {
    if (in.is_gpu[i]) continue;
    const auto r = static_cast<int64_t>(i);
    by_end.push_back(r);
    auto [it, fresh] = first.emplace(in.lane[i], r);
    if (!fresh && (in.ts[r] < in.ts[it->second] || (in.ts[r] == in.ts[it->second] && r < it->second)))
      it->second = r;
  }
  if (first.size() < 2) return;
  const auto end_of = [&](int64_t r) { return in.ts[r] + in.dur[r]; };
  std::sort(by_end.begin(), by_end.end(), [&](int64_t a, int64_t b) {
    return end_of(a) != end_of(b) ? end_of(a) < end_of(b) : a < b;
  });
  for (const auto& [lane, x] : first) {
    // The last end at or before x's start; it lies on another thread, as x is its lane's first.
    auto pos = std::upper_bound(by_end.begin(), by_end.end(), in.ts[x],
                                [&](int64_t t, int64_t r) { return t < end_of(r); });
    if (pos == by_end.begin()) continue;
    const int64_t z = *(pos - 1);
    if (in.lane[z] == lane) continue;
    g.src.push_back(end_node(z));
    g.dst.push_back(start_node(x));
    g.type.push_back(static_cast<uint8_t>(EdgeType::cross_thread));
  }
}

}  // namespace hta::graph
