// Time per combination of active interval classes, by one sweep over start/end points.
//
// Why: the temporal breakdown (how much GPU time is computation only, communication only,
// both overlapped, memory copies, or idle) and the overlap percentages of the reference tool
// are all entries of one table: for every subset of kernel classes, the time during which
// exactly that subset was running. One sweep yields all of them, per device or rank at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

constexpr int kMaxClasses = 8;

// Entry m (0 <= m < 2^n_classes) is the time during which exactly the classes whose bits are set
// in m are active. Interval i, of class cls[i] in [0, n_classes), is active on [start[i], end[i]);
// empty intervals (end <= start) are ignored. Entry 0 is the time with nothing active between
// the earliest start and the latest end of the non-empty intervals, so the entries sum to that
// span. Throws std::invalid_argument for n_classes outside [0, 8] or a class >= n_classes, and
// std::overflow_error when a time does not fit in int64.
std::vector<int64_t> class_sweep(const int64_t* start, const int64_t* end, const uint8_t* cls,
                                 size_t n, int n_classes);

// The same per group id: group holds the distinct group ids of the input, ascending (a group
// whose intervals are all empty gets a row of zeros); time is row-major
// [group.size()][2^n_classes].
struct GroupedClassSweep {
  std::vector<int64_t> group;
  std::vector<int64_t> time;
};
GroupedClassSweep grouped_class_sweep(const int64_t* group, const int64_t* start,
                                      const int64_t* end, const uint8_t* cls, size_t n,
                                      int n_classes);

}  // namespace hta::ops
