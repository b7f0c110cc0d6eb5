#include "ops/group_sort.h"

namespace hta::ops {

std::vector<int64_t> group_order(const int64_t* group, const int64_t* key, size_t n) {
  std::vector<int64_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int64_t>(i);
  sort_by_group(
      order, [&](int64_t i) { return group[i]; },
      [&](int64_t x, int64_t y) { return key[x] != key[y] ? key[x] < key[y] : x < y; });
  return order;
}

}  // namespace hta::ops
