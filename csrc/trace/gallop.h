// Exponential ("galloping") search: std::partition_point for answers expected near the
// start of the range. Probes 1, 2, 4, ... places ahead, then searches the last step
// binarily: O(log d) comparisons for an answer d places in, however long the range, where
// a binary search over the whole range touches log n places scattered through it.
#pragma once
#include <algorithm>
#include <cstddef>

namespace hta {

// The first position in [first, last) where `pred` is false; `pred` must hold on a prefix
// of the range and fail on the rest (as for std::partition_point).
template <class It, class Pred>
It gallop_partition_point(It first, It last, Pred pred) {
  size_t step = 1;
  for (;;) {
    const auto left = static_cast<size_t>(last - first);
    if (left == 0) return first;
    const size_t probe = std::min(step, left);
    if (!pred(first[probe - 1])) return std::partition_point(first, first + (probe - 1), pred);
    first += probe;
    step *= 2;
  }
}

}  // namespace hta
