#include "ops/weighted_stats.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include "ops/checked_math.h"

namespace hta::ops {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A value held for a positive time; cum: the time of this piece and all before it in its group
// once sorted by value.
struct Piece {
  double value;
  int64_t dt;
  int64_t cum;
};

void check_args(const int64_t* group, const int64_t* ts, const double* value, size_t n,
                const double* quantiles, size_t n_q, const double* thresholds, size_t n_t) {
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(value[i]))
      throw std::invalid_argument("value[" + std::to_string(i) + "] is NaN");
    if (i > 0 && (group[i] < group[i - 1] || (group[i] == group[i - 1] && ts[i] < ts[i - 1])))
      throw std::invalid_argument("rows must be sorted by (group, ts); row " + std::to_string(i) +
                                  " comes before row " + std::to_string(i - 1));
  }
  for (size_t k = 0; k < n_q; ++k) {
    if (!(quantiles[k] >= 0.0 && quantiles[k] <= 1.0))
      throw std::invalid_argument("quantiles must be in [0, 1]");
  }
  for (size_t k = 0; k < n_t; ++k) {
    if (std::isnan(thresholds[k])) throw std::invalid_argument("thresholds must not be NaN");
  }
}

// Puts the pieces in value order. Counters (queue lengths, bytes in flight) take few distinct
// small integer values over many pieces: those are summed per value in one pass, which gives
// the same cumulative times at every distinct value as a sort, without the n log n.
void order_by_value(std::vector<Piece>& pieces) {
  if (pieces.empty()) return;
  double lo = pieces[0].value, hi = lo;
  bool integral = true;
  for (const Piece& p : pieces) {
    lo = std::min(lo, p.value);
    hi = std::max(hi, p.value);
    integral = integral && p.value == std::floor(p.value);
  }
  const double range = hi - lo + 1;
  if (integral && range <= std::max(1024.0, 2.0 * static_cast<double>(pieces.size()))) {
    std::vector<int64_t> time_at(static_cast<size_t>(range), 0);
    for (const Piece& p : pieces) time_at[static_cast<size_t>(p.value - lo)] += p.dt;
    pieces.clear();
    for (size_t v = 0; v < time_at.size(); ++v) {
      if (time_at[v] > 0) pieces.push_back({lo + static_cast<double>(v), time_at[v], 0});
    }
    return;
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& x, const Piece& y) { return x.value < y.value; });
}

}  // namespace

WeightedStats weighted_stats(const int64_t* group, const int64_t* ts, const double* value, size_t n,
                             const int64_t* group_end, size_t n_end, const double* quantiles,
                             size_t n_q, const double* thresholds, size_t n_t) {
  check_args(group, ts, value, n, quantiles, n_q, thresholds, n_t);
  WeightedStats out;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || group[i] != group[i - 1]) out.group.push_back(group[i]);
  }
  const size_t n_groups = out.group.size();
  if (group_end && n_end != n_groups)
    throw std::invalid_argument("end_ts has " + std::to_string(n_end) + " entries for " +
                                std::to_string(n_groups) + " groups");
  out.duration.resize(n_groups);
  out.mean.resize(n_groups);
  out.min.resize(n_groups);
  out.max.resize(n_groups);
  out.std.resize(n_groups);
  out.change_point_mean.resize(n_groups);
  out.quantile.resize(n_groups * n_q);
  out.time_at_or_above.resize(n_groups * n_t);

  std::vector<Piece> pieces;  // reused for every group
  size_t first = 0;
  for (size_t k = 0; k < n_groups; ++k) {
    size_t last = first;
    while (last + 1 < n && group[last + 1] == group[first]) ++last;
    const int64_t end = group_end ? group_end[k] : ts[last];
    if (end < ts[last])
      throw std::invalid_argument("end_ts[" + std::to_string(k) + "] = " + std::to_string(end) +
                                  " is before the group's last ts " + std::to_string(ts[last]));
    const int64_t duration = checked_sub(end, ts[first]);  // every dt below is within it

    pieces.clear();
    double weighted = 0.0, plain = 0.0;
    for (size_t i = first; i <= last; ++i) {
      plain += value[i];
      const int64_t dt = (i < last ? ts[i + 1] : end) - ts[i];
      if (dt > 0) {
        pieces.push_back({value[i], dt, 0});
        weighted += value[i] * static_cast<double>(dt);
      }
    }
    order_by_value(pieces);
    int64_t cum = 0;
    for (Piece& p : pieces) p.cum = cum += p.dt;

    out.duration[k] = duration;
    out.change_point_mean[k] = plain / static_cast<double>(last - first + 1);
    if (pieces.empty()) {
      out.mean[k] = out.min[k] = out.max[k] = out.std[k] = kNaN;
      std::fill_n(out.quantile.begin() + static_cast<std::ptrdiff_t>(k * n_q), n_q, kNaN);
    } else {
      out.mean[k] = weighted / static_cast<double>(duration);
      double spread = 0.0;
      for (const Piece& p : pieces)
        spread += static_cast<double>(p.dt) * (p.value - out.mean[k]) * (p.value - out.mean[k]);
      out.std[k] = std::sqrt(spread / static_cast<double>(duration));
      out.min[k] = pieces.front().value;
      out.max[k] = pieces.back().value;
      for (size_t q = 0; q < n_q; ++q) {
        const double target = quantiles[q] * static_cast<double>(duration);
        const auto it = std::lower_bound(
            pieces.begin(), pieces.end(), target,
            [](const Piece& p, double x) { return static_cast<double>(p.cum) < x; });
        out.quantile[k * n_q + q] = (it == pieces.end() ? pieces.back() : *it).value;
      }
    }
    for (size_t t = 0; t < n_t; ++t) {
      const auto it = std::lower_bound(pieces.begin(), pieces.end(), thresholds[t],
                                       [](const Piece& p, double x) { return p.value < x; });
      const int64_t below = it == pieces.begin() ? 0 : std::prev(it)->cum;
      out.time_at_or_above[k * n_t + t] = cum - below;
    }
    first = last + 1;
  }
  return out;
}

}  // namespace hta::ops
