#include "ops/step_counter.h"

#include <algorithm>
#include <type_traits>

#include "ops/checked_math.h"

namespace hta::ops {
namespace {

struct Change {
  int64_t group, ts;
  size_t row;
};

}  // namespace

template <class T>
StepSeries<T> step_counter(const int64_t* group, const int64_t* ts, const T* delta, size_t n) {
  std::vector<Change> ch(n);
  for (size_t i = 0; i < n; ++i) ch[i] = {group[i], ts[i], i};
  const auto less = [](const Change& x, const Change& y) {
    if (x.group != y.group) return x.group < y.group;
    if (x.ts != y.ts) return x.ts < y.ts;
    return x.row < y.row;
  };
  if (!std::is_sorted(ch.begin(), ch.end(), less)) std::sort(ch.begin(), ch.end(), less);

  StepSeries<T> out;
  T value{};
  for (size_t i = 0; i < n;) {
    const int64_t g = ch[i].group, t = ch[i].ts;
    if (i == 0 || g != ch[i - 1].group) value = T{};
    for (; i < n && ch[i].group == g && ch[i].ts == t; ++i) {
      if constexpr (std::is_same_v<T, int64_t>) checked_add_to(value, delta[ch[i].row]);
      else value += delta[ch[i].row];
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
