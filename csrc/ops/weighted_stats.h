// Time-weighted statistics of step functions, per group.
//
// Why: a queue length or a bandwidth curve sampled at its change points is misleading when
// averaged per change point (a burst of short-lived values outweighs a long steady one). The
// launch-queue and memory-bandwidth analyses report the mean, extremes, quantiles and time
// above thresholds weighted by how long each value held; the per-change-point mean is kept
// alongside under its own name, for comparison with the reference tool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hta::ops {

// Input: rows sorted by (group, ts) (ts may repeat; such a value holds for no time). Row i's
// value holds on [ts[i], ts[i + 1]) while row i + 1 is in the same group; a group's last value
// holds until that group's end. The window of group k is [first ts of k, end of k).
struct WeightedStats {
  std::vector<int64_t> group;     // distinct groups, ascending
  std::vector<int64_t> duration;  // window length
  // Time-weighted; over the values held for a positive time; NaN when duration is 0.
  std::vector<double> mean, min, max;
  // Time-weighted population standard deviation: sqrt(sum dt * (v - mean)^2 / duration).
  std::vector<double> std;
  // Row-major [groups][quantiles]: the smallest held value v with
  // time(value <= v) >= q * duration (q * duration rounded as a double); NaN when duration is 0.
  std::vector<double> quantile;
  // Row-major [groups][thresholds]: time with value >= threshold.
  std::vector<int64_t> time_at_or_above;
  // Plain mean of the values at the group's rows, each change point counted once.
  std::vector<double> change_point_mean;
};

// group_end: one end per distinct group in ascending group order (n_end must equal their
// number), or nullptr for "each group ends at its last ts". Throws std::invalid_argument for
// unsorted rows, a NaN value or threshold, a quantile outside [0, 1], a wrong n_end or an end
// before its group's last ts; std::overflow_error when a window length does not fit in int64.
WeightedStats weighted_stats(const int64_t* group, const int64_t* ts, const double* value, size_t n,
                             const int64_t* group_end, size_t n_end, const double* quantiles,
                             size_t n_q, const double* thresholds, size_t n_t);

}  // namespace hta::ops
