#include "trace/string_ids.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace hta {

namespace {

// Calls f(x) for every value of every id column (pid, tid, flow ids) of the trace.
template <class F>
void for_each_id(TraceColumns& t, F&& f) {
  t.for_each_table([&](const char*, auto& table) {
    table.for_each_column_spec([&](const char*, auto& v, const ColumnSpec& spec) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      if constexpr (std::is_same_v<T, int64_t>) {
        if (spec.role == ColumnRole::kId) {
          for (auto& x : v) f(x);
        }
      }
    });
  });
}

// The integer a pool string holds when it is one written by the parser (std::to_string of
// an id at or below kStringIdBase); false for a name.
bool parsed_id(std::string_view text, int64_t& value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && value <= kStringIdBase && std::to_string(value) == text;
}

// The highest base <= kStringIdBase whose range [base - top, base] holds none of the sorted
// integer ids `low` (all <= kStringIdBase): kStringIdBase, else just below one of them.
int64_t free_base(const std::vector<int64_t>& low, int64_t top) {
  const auto clear = [&](int64_t base) {
    if (base < INT64_MIN + top) return false;
    const auto it = std::lower_bound(low.begin(), low.end(), base - top);
    return it == low.end() || *it > base;
  };
  if (clear(kStringIdBase)) return kStringIdBase;
  for (auto it = low.rbegin(); it != low.rend(); ++it) {
    if (*it > INT64_MIN && clear(*it - 1)) return *it - 1;
  }
  throw std::runtime_error("the trace's integer ids leave no room for its string ids");
}

}  // namespace

StringIdRange place_string_ids(TraceColumns& t) {
  const auto n = static_cast<size_t>(t.strings.size());
  std::vector<uint8_t> used(n, 0);
  for_each_id(t, [&](int64_t x) {
    if (is_string_id(x)) used[static_cast<size_t>(kStringIdBase - x)] = 1;
  });
  std::vector<int64_t> value(n, 0);
  std::vector<uint8_t> numeric(n, 0);
  std::vector<int64_t> low;
  int64_t top = -1;  // the highest pool id of a name
  for (size_t i = 0; i < n; ++i) {
    if (!used[i]) continue;
    int64_t v = 0;
    if (parsed_id(t.strings.at(static_cast<int32_t>(i)), v)) {
      numeric[i] = 1;
      value[i] = v;
      low.push_back(v);
    } else {
      top = static_cast<int64_t>(i);
    }
  }
  StringIdRange range;
  if (top >= 0) range.floor = kStringIdBase - top;
  if (low.empty()) return range;
  std::sort(low.begin(), low.end());
  low.erase(std::unique(low.begin(), low.end()), low.end());
  range.base = top >= 0 ? free_base(low, top) : kStringIdBase;
  range.floor = top >= 0 ? range.base - top : range.base + 1;
  const int64_t base = range.base;
  for_each_id(t, [&](int64_t& x) {
    if (!is_string_id(x)) return;
    const auto i = static_cast<size_t>(kStringIdBase - x);
    x = numeric[i] ? value[i] : base - static_cast<int64_t>(i);
  });
  return range;
}

}  // namespace hta
