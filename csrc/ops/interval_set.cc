#include "ops/interval_set.h"

#include <algorithm>
#include <utility>

#include "ops/checked_math.h"

namespace hta::ops {

IntervalSet interval_union(const int64_t* start, const int64_t* end, size_t n) {
  std::vector<std::pair<int64_t, int64_t>> iv;
  iv.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (end[i] > start[i]) iv.emplace_back(start[i], end[i]);
  }
  // Merging needs only the starts in order; traces are often sorted already.
  const auto by_start = [](const auto& x, const auto& y) { return x.first < y.first; };
  if (!std::is_sorted(iv.begin(), iv.end(), by_start)) std::sort(iv.begin(), iv.end(), by_start);

  IntervalSet out;
  for (size_t i = 0; i < iv.size();) {
    const int64_t s = iv[i].first;
    int64_t e = iv[i].second;
    for (++i; i < iv.size() && iv[i].first <= e; ++i) e = std::max(e, iv[i].second);
    out.start.push_back(s);
    out.end.push_back(e);
  }
  return out;
}

int64_t total_length(const IntervalSet& s) {
  int64_t total = 0;
  for (size_t i = 0; i < s.size(); ++i) checked_add_to(total, checked_sub(s.end[i], s.start[i]));
  return total;
}

int64_t union_length(const int64_t* start, const int64_t* end, size_t n) {
  return total_length(interval_union(start, end, n));
}

IntervalSet intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t lo = std::max(a.start[i], b.start[j]);
    const int64_t hi = std::min(a.end[i], b.end[j]);
    if (lo < hi) {
      out.start.push_back(lo);
      out.end.push_back(hi);
    }
    // Drop whichever ends first: it cannot meet anything further in the other set.
    if (a.end[i] < b.end[j])
      ++i;
    else
      ++j;
  }
  return out;
}

IntervalSet difference(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t j = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t e = a.end[i];
    int64_t cur = a.start[i];  // start of the part of a[i] not yet covered or emitted
    while (j < b.size() && b.end[j] <= cur) ++j;
    for (; j < b.size() && b.start[j] < e; ++j) {
      if (b.start[j] > cur) {
        out.start.push_back(cur);
        out.end.push_back(b.start[j]);
      }
      cur = std::max(cur, b.end[j]);
      if (cur >= e) break;  // b[j] may reach into a[i + 1]: keep it
    }
    if (cur < e) {
      out.start.push_back(cur);
      out.end.push_back(e);
    }
  }
  return out;
}

}  // namespace hta::ops
