#include "ops/group_gaps.h"

#include <algorithm>

namespace hta::ops {
namespace {

struct Event {
  int64_t group, start, end;
  size_t row;
};

}  // namespace

Gaps group_gaps(const int64_t* group, const int64_t* start, const int64_t* end, size_t n) {
  std::vector<Event> ev(n);
  for (size_t i = 0; i < n; ++i) ev[i] = {group[i], start[i], std::max(start[i], end[i]), i};
  const auto less = [](const Event& x, const Event& y) {
    if (x.group != y.group) return x.group < y.group;
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end < y.end;
    return x.row < y.row;
  };
  if (!std::is_sorted(ev.begin(), ev.end(), less)) std::sort(ev.begin(), ev.end(), less);

  Gaps out;
  for (size_t i = 0; i < n;) {
    const int64_t g = ev[i].group;
    int64_t reach = ev[i].end;  // running maximum end in this group
    for (++i; i < n && ev[i].group == g; ++i) {
      if (ev[i].start > reach) {
        out.group.push_back(g);
        out.start.push_back(reach);
        out.end.push_back(ev[i].start);
        out.next_index.push_back(static_cast<int64_t>(ev[i].row));
      }
      reach = std::max(reach, ev[i].end);
    }
  }
  return out;
}

}  // namespace hta::ops
