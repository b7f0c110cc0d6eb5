// Interval sets over int64 nanoseconds: union, total length, intersection, difference.
//
// Why: most time-breakdown questions are set questions over [ts, ts + dur) intervals. GPU busy
// time is the length of the union of a device's kernels; computation/communication overlap is
// the intersection of two unions; exposed communication is communication minus computation;
// idle time is a window minus the busy union. These kernels answer them with one sort and one
// sweep instead of a loop over pairs of events.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// A normalised interval set: interval i is [start[i], end[i]), start[i] < end[i], sorted by
// start, and end[i] < start[i + 1] (touching intervals are merged, so neighbours never touch).
struct IntervalSet {
  std::vector<int64_t> start;
  std::vector<int64_t> end;
  size_t size() const { return start.size(); }
};

// Union of the n intervals [start[i], end[i]), in any order. Intervals with end <= start are
// empty and dropped; intervals that overlap or touch (next start <= current end) are merged.
IntervalSet interval_union(const int64_t* start, const int64_t* end, size_t n);

// Length of the union; throws std::overflow_error when it does not fit in int64.
int64_t union_length(const int64_t* start, const int64_t* end, size_t n);
int64_t total_length(const IntervalSet& s);

// Set operations on normalised sets; the results are normalised.
IntervalSet intersect(const IntervalSet& a, const IntervalSet& b);
IntervalSet difference(const IntervalSet& a, const IntervalSet& b);

}  // namespace hta::ops
