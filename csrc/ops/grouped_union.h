// Interval union per group id: one sort by (group, start) and one sweep for all groups.
//
// Why: busy time is asked per device, per stream, per rank or per profiler step at once
// (GPU utilisation per stream, kernel time per step). Grouping in the kernel avoids a Python
// loop over groups; the group id is any int64 the caller derives (stream, device * k + step).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// Rows sorted by (group, start); within a group the intervals are normalised (see IntervalSet).
struct GroupedIntervals {
  std::vector<int64_t> group;
  std::vector<int64_t> start;
  std::vector<int64_t> end;
};

// One row per distinct group id of the input, ascending; a group whose intervals are all empty
// has total 0.
struct GroupTotals {
  std::vector<int64_t> group;
  std::vector<int64_t> total;
};

// Union of [start[i], end[i]) per group[i]. Empty intervals (end <= start) are dropped.
GroupedIntervals grouped_union(const int64_t* group, const int64_t* start, const int64_t* end,
                               size_t n);

// Length of that union per group; throws std::overflow_error when one does not fit in int64.
GroupTotals grouped_total(const int64_t* group, const int64_t* start, const int64_t* end, size_t n);

}  // namespace hta::ops
