#include "ops/group_gaps.h"

#include <algorithm>

#include "ops/group_sort.h"

namespace hta::ops {

Gaps group_gaps(const int64_t* group, const int64_t* start, const int64_t* end, size_t n,
                bool touching) {
  // Sort row numbers, not copies of the rows: an 8-byte permutation is all that moves.
  const auto end_of = [&](size_t i) { return std::max(start[i], end[i]); };
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  sort_by_group(
      order, [&](size_t i) { return group[i]; },
      [&](size_t x, size_t y) {
        if (start[x] != start[y]) return start[x] < start[y];
        if (end_of(x) != end_of(y)) return end_of(x) < end_of(y);
        return x < y;
      });

  Gaps out;
  for (auto* column : {&out.group, &out.start, &out.end, &out.next_index}) column->reserve(n);
  const auto is_point = [&](size_t i) { return end[i] <= start[i]; };
  for (size_t k = 0; k < n;) {
    const int64_t g = group[order[k]];
    int64_t reach = end_of(order[k]);   // running maximum end in this group
    bool covered = is_point(order[k]);  // reach itself is covered by a zero-length event
    for (++k; k < n && group[order[k]] == g; ++k) {
      const size_t i = order[k];
      if (start[i] > reach || (touching && start[i] == reach && !covered)) {
        out.group.push_back(g);
        out.start.push_back(reach);
        out.end.push_back(start[i]);
        out.next_index.push_back(static_cast<int64_t>(i));
      }
      if (end_of(i) > reach) {
        reach = end_of(i);
        covered = is_point(i);
      } else if (end_of(i) == reach && is_point(i)) {
        covered = true;
      }
    }
  }
  return out;
}

}  // namespace hta::ops
