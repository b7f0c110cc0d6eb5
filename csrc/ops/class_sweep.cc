#include "ops/class_sweep.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "ops/checked_math.h"

namespace hta::ops {
namespace {

// A start or end point. code: class * 2 + (1 for an end); kMarker for an empty interval, which
// only names its group.
struct Point {
  int64_t group;
  int64_t t;
  uint8_t code;
};
constexpr uint8_t kMarker = 0xFF;

void check_args(const uint8_t* cls, size_t n, int n_classes) {
  if (n_classes < 0 || n_classes > kMaxClasses)
    throw std::invalid_argument("n_classes must be in [0, 8], got " + std::to_string(n_classes));
  for (size_t i = 0; i < n; ++i) {
    if (cls[i] >= n_classes)
      throw std::invalid_argument("classes[" + std::to_string(i) + "] = " + std::to_string(cls[i]) +
                                  " is not in [0, n_classes=" + std::to_string(n_classes) + ")");
  }
}

// group == nullptr: everything is one group (id 0).
GroupedClassSweep sweep(const int64_t* group, const int64_t* start, const int64_t* end,
                        const uint8_t* cls, size_t n, int n_classes) {
  check_args(cls, n, n_classes);
  std::vector<Point> pts;
  pts.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t g = group ? group[i] : 0;
    if (end[i] > start[i]) {
      pts.push_back({g, start[i], static_cast<uint8_t>(cls[i] * 2)});
      pts.push_back({g, end[i], static_cast<uint8_t>(cls[i] * 2 + 1)});
    } else if (group) {
      pts.push_back({g, start[i], kMarker});
    }
  }
  // Points at the same time are applied together, so their order does not matter.
  std::sort(pts.begin(), pts.end(), [](const Point& x, const Point& y) {
    return x.group != y.group ? x.group < y.group : x.t < y.t;
  });

  const size_t width = size_t{1} << n_classes;
  GroupedClassSweep out;
  if (!group) out.time.assign(width, 0);
  size_t i = 0;
  while (i < pts.size()) {
    const int64_t g = pts[i].group;
    if (group) {
      out.group.push_back(g);
      out.time.resize(out.time.size() + width, 0);
    }
    int64_t* row = out.time.data() + out.time.size() - width;
    std::array<int64_t, kMaxClasses> active{};  // intervals of each class open now
    unsigned mask = 0;
    bool started = false;  // markers take no part in the timeline
    int64_t prev = 0;
    for (; i < pts.size() && pts[i].group == g; ++i) {
      const Point& p = pts[i];
      if (p.code == kMarker) continue;
      if (started && p.t != prev) {
        checked_add_to(row[mask], checked_sub(p.t, prev));
      }
      started = true;
      prev = p.t;
      const unsigned c = p.code >> 1;
      if (p.code & 1) {
        if (--active[c] == 0) mask &= ~(1u << c);
      } else {
        if (active[c]++ == 0) mask |= 1u << c;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<int64_t> class_sweep(const int64_t* start, const int64_t* end, const uint8_t* cls,
                                 size_t n, int n_classes) {
  return sweep(nullptr, start, end, cls, n, n_classes).time;
}

GroupedClassSweep grouped_class_sweep(const int64_t* group, const int64_t* start,
                                      const int64_t* end, const uint8_t* cls, size_t n,
                                      int n_classes) {
  return sweep(group, start, end, cls, n, n_classes);
}

}  // namespace hta::ops
