// Edges grouped by one of their ends (compressed sparse rows): the edges of node v are
// edge[begin[v] .. begin[v + 1]). Built by a counting sort, so edge ids keep their order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::graph {

struct Csr {
  std::vector<int64_t> begin;  // nodes + 1 offsets
  std::vector<int64_t> edge;   // edge ids
};

inline Csr by_node(const std::vector<int64_t>& end_of_edge, size_t nodes) {
  Csr c;
  c.begin.assign(nodes + 1, 0);
  for (int64_t v : end_of_edge) ++c.begin[v + 1];
  for (size_t v = 0; v < nodes; ++v) c.begin[v + 1] += c.begin[v];
  c.edge.resize(end_of_edge.size());
  std::vector<int64_t> fill(c.begin.begin(), c.begin.end() - 1);
  for (size_t e = 0; e < end_of_edge.size(); ++e)
    c.edge[fill[end_of_edge[e]]++] = static_cast<int64_t>(e);
  return c;
}

}  // namespace hta::graph
