#include "ops/grouped_union.h"

#include <algorithm>

#include "ops/checked_math.h"
#include "ops/group_sort.h"

namespace hta::ops {
namespace {

struct Row {
  int64_t group, start, end;
};

// Rows sorted by (group, start); empty intervals kept only when asked (they name a group).
std::vector<Row> sorted_rows(const int64_t* group, const int64_t* start, const int64_t* end,
                             size_t n, bool keep_empty) {
  std::vector<Row> rows;
  rows.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (keep_empty || end[i] > start[i]) rows.push_back({group[i], start[i], end[i]});
  }
  sort_by_group(
      rows, [](const Row& r) { return r.group; },
      [](const Row& x, const Row& y) { return x.start < y.start; });
  return rows;
}

// Calls emit(group, start, end) for each merged interval, and group_done(group) after the last
// row of each group (also for a group with no non-empty interval).
template <class Emit, class GroupDone>
void sweep(const std::vector<Row>& rows, Emit&& emit, GroupDone&& group_done) {
  size_t i = 0;
  while (i < rows.size()) {
    const int64_t g = rows[i].group;
    while (i < rows.size() && rows[i].group == g) {
      if (rows[i].end <= rows[i].start) {
        ++i;
        continue;
      }
      const int64_t s = rows[i].start;
      int64_t e = rows[i].end;
      for (++i; i < rows.size() && rows[i].group == g && rows[i].start <= e; ++i)
        e = std::max(e, rows[i].end);
      emit(g, s, e);
    }
    group_done(g);
  }
}

}  // namespace

GroupedIntervals grouped_union(const int64_t* group, const int64_t* start, const int64_t* end,
                               size_t n) {
  GroupedIntervals out;
  sweep(
      sorted_rows(group, start, end, n, /*keep_empty=*/false),
      [&](int64_t g, int64_t s, int64_t e) {
        out.group.push_back(g);
        out.start.push_back(s);
        out.end.push_back(e);
      },
      [](int64_t) {});
  return out;
}

GroupTotals grouped_total(const int64_t* group, const int64_t* start, const int64_t* end,
                          size_t n) {
  GroupTotals out;
  int64_t total = 0;
  sweep(
      sorted_rows(group, start, end, n, /*keep_empty=*/true),
      [&](int64_t, int64_t s, int64_t e) { checked_add_to(total, checked_sub(e, s)); },
      [&](int64_t g) {
        out.group.push_back(g);
        out.total.push_back(total);
        total = 0;
      });
  return out;
}

}  // namespace hta::ops
