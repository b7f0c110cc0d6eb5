#include "ops/occupancy.h"

#include "ops/group_sort.h"

namespace hta::ops {

namespace {

// Items ordered by (group, time, tie, item): trace input is near time order per group, so
// sort_by_group does this in linear time.
template <class Tie>
std::vector<int64_t> items_by_group(const int64_t* group, const int64_t* time, Tie tie, size_t n) {
  std::vector<int64_t> items(n);
  for (size_t i = 0; i < n; ++i) items[i] = static_cast<int64_t>(i);
  sort_by_group(
      items, [&](int64_t i) { return group[i]; },
      [&](int64_t x, int64_t y) {
        if (time[x] != time[y]) return time[x] < time[y];
        const int tx = tie(x), ty = tie(y);
        return tx != ty ? tx < ty : x < y;
      });
  return items;
}

}  // namespace

Occupancy occupancy(const int64_t* group, const int64_t* enter, const int64_t* leave, size_t n) {
  // Entries and exits each sorted, then merged group by group (both lists hold the same items
  // per group, so their group boundaries line up).
  const auto exit_tier = [&](int64_t i) { return leave[i] == enter[i] ? 2 : 0; };
  const std::vector<int64_t> entries = items_by_group(group, enter, [](int64_t) { return 0; }, n);
  const std::vector<int64_t> exits = items_by_group(group, leave, exit_tier, n);
  Occupancy r;
  r.item.resize(2 * n);
  r.entering.resize(2 * n);
  r.group.resize(2 * n);
  r.ts.resize(2 * n);
  r.level.resize(2 * n);
  size_t out = 0;
  for (size_t begin = 0; begin < n;) {
    const int64_t g = group[entries[begin]];
    size_t end = begin + 1;
    while (end < n && group[entries[end]] == g) ++end;
    size_t i = begin, j = begin;
    int64_t inside = 0;
    while (i < end || j < end) {
      bool take_exit = i == end;
      if (!take_exit && j < end) {
        const int64_t x = exits[j], e = entries[i];
        // Exit row n + x against entry row e: time, then tier (exits 0 or 2, entries 1);
        // at equal time and tier the entry's row is smaller.
        take_exit = leave[x] != enter[e] ? leave[x] < enter[e] : exit_tier(x) < 1;
      }
      const int64_t it = take_exit ? exits[j++] : entries[i++];
      inside += take_exit ? -1 : 1;
      r.item[out] = it;
      r.entering[out] = take_exit ? 0 : 1;
      r.group[out] = g;
      r.ts[out] = take_exit ? leave[it] : enter[it];
      r.level[out] = inside;
      ++out;
    }
    begin = end;
  }
  return r;
}

}  // namespace hta::ops
