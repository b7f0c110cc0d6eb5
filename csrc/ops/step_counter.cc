#include "ops/step_counter.h"

#include <type_traits>

#include "ops/checked_math.h"
#include "ops/group_sort.h"

namespace hta::ops {

template <class T>
StepSeries<T> step_counter(const int64_t* group, const int64_t* ts, const T* delta, size_t n) {
  const std::vector<int64_t> order = group_order(group, ts, n);  // (group, ts, row)
  StepSeries<T> out;
  for (auto* column : {&out.group, &out.ts}) column->reserve(n);
  out.value.reserve(n);
  T value{};
  for (size_t k = 0; k < n;) {
    const int64_t g = group[order[k]], t = ts[order[k]];
    if (k == 0 || g != out.group.back()) value = T{};
    for (; k < n && group[order[k]] == g && ts[order[k]] == t; ++k) {
      if constexpr (std::is_same_v<T, int64_t>)
        checked_add_to(value, delta[order[k]]);
      else
        value += delta[order[k]];
    }
    out.group.push_back(g);
    out.ts.push_back(t);
    out.value.push_back(value);
  }
  return out;
}

template StepSeries<double> step_counter(const int64_t*, const int64_t*, const double*, size_t);
template StepSeries<int64_t> step_counter(const int64_t*, const int64_t*, const int64_t*, size_t);

}  // namespace hta::ops
