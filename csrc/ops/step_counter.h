// A step function per group from signed changes at points in time.
//
// Why: queue and load curves. CUDA launch queue length is +1 at each kernel launch and -1 when
// that kernel starts on the GPU; memory bandwidth in use is +bandwidth at each copy's start and
// -bandwidth at its end; live allocations are +bytes / -bytes. The result feeds weighted_stats.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// One row per distinct (group, ts), sorted by (group, ts): the value after applying every
// change at that (group, ts). Each group starts at 0.
template <class T>
struct StepSeries {
  std::vector<int64_t> group;
  std::vector<int64_t> ts;
  std::vector<T> value;
};

// Changes at the same (group, ts) are added in input row order (this fixes floating-point
// rounding). T is double or int64_t; for int64_t an overflowing value throws std::overflow_error.
template <class T>
StepSeries<T> step_counter(const int64_t* group, const int64_t* ts, const T* delta, size_t n);

extern template StepSeries<double> step_counter(const int64_t*, const int64_t*, const double*,
                                                size_t);
extern template StepSeries<int64_t> step_counter(const int64_t*, const int64_t*, const int64_t*,
                                                 size_t);

}  // namespace hta::ops
