// Sorting rows by group, then by an order within each group.
//
// Why not one std::sort: the rows the kernels get are a trace's events in time order, spread
// over a handful of groups (streams, devices). A stable counting sort by group keeps each
// group's rows in that order, which is then already sorted or made of a few sorted runs (a
// launch half and a start half), so the whole costs O(n) instead of O(n log n) comparisons
// of wide keys.
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <vector>

namespace hta::ops {

namespace detail {

// Sorts [first, last) by less, merging its sorted runs when they are long.
template <class It, class Less>
void sort_runs(It first, It last, Less less) {
  // Merging r runs moves each row log2(r) times; with runs of 32 rows or fewer on average
  // an ordinary sort does as well.
  const size_t max_runs =
      std::max<size_t>(16, static_cast<size_t>(std::distance(first, last)) / 32);
  std::vector<It> run_starts{first};
  for (It it = first; it != last && std::next(it) != last; ++it) {
    if (less(*std::next(it), *it)) {
      run_starts.push_back(std::next(it));
      if (run_starts.size() > max_runs) {
        std::sort(first, last, less);
        return;
      }
    }
  }
  // Merge neighbouring runs pairwise until one is left.
  while (run_starts.size() > 1) {
    std::vector<It> merged;
    for (size_t i = 0; i < run_starts.size(); i += 2) {
      merged.push_back(run_starts[i]);
      if (i + 1 < run_starts.size()) {
        const It end = i + 2 < run_starts.size() ? run_starts[i + 2] : last;
        std::inplace_merge(run_starts[i], run_starts[i + 1], end, less);
      }
    }
    run_starts.swap(merged);
  }
}

}  // namespace detail

// Reorders rows by (group_of(row) ascending, then less within a group). The result equals a
// std::sort by that combined order (rows that less leaves equal may come in any order).
template <class Row, class GroupOf, class Less>
void sort_by_group(std::vector<Row>& rows, GroupOf group_of, Less less) {
  const size_t n = rows.size();
  if (n < 2) return;
  // Dense ids for the distinct groups, numbered in ascending group order.
  std::unordered_map<int64_t, uint32_t> id_of;
  std::vector<int64_t> groups;
  int64_t last_group = group_of(rows[0]);
  id_of.emplace(last_group, 0);
  groups.push_back(last_group);
  for (const Row& r : rows) {
    const int64_t g = group_of(r);
    if (g == last_group) continue;
    last_group = g;
    if (id_of.emplace(g, static_cast<uint32_t>(groups.size())).second) groups.push_back(g);
  }
  std::vector<uint32_t> rank_of(groups.size());
  {
    std::vector<uint32_t> by_value(groups.size());
    for (uint32_t i = 0; i < by_value.size(); ++i) by_value[i] = i;
    std::sort(by_value.begin(), by_value.end(),
              [&](uint32_t a, uint32_t b) { return groups[a] < groups[b]; });
    for (uint32_t r = 0; r < by_value.size(); ++r) rank_of[by_value[r]] = r;
  }
  std::vector<uint32_t> dense(n);
  std::vector<size_t> offset(groups.size() + 1, 0);
  last_group = group_of(rows[0]);
  uint32_t last_rank = rank_of[id_of.at(last_group)];
  for (size_t i = 0; i < n; ++i) {
    const int64_t g = group_of(rows[i]);
    if (g != last_group) {
      last_group = g;
      last_rank = rank_of[id_of.at(g)];
    }
    dense[i] = last_rank;
    ++offset[last_rank + 1];
  }
  for (size_t k = 1; k < offset.size(); ++k) offset[k] += offset[k - 1];
  if (groups.size() > 1) {
    std::vector<Row> out(n);
    std::vector<size_t> next(offset.begin(), offset.end() - 1);
    for (size_t i = 0; i < n; ++i) out[next[dense[i]]++] = rows[i];
    rows.swap(out);
  }
  for (size_t k = 0; k + 1 < offset.size(); ++k)
    detail::sort_runs(rows.begin() + offset[k], rows.begin() + offset[k + 1], less);
}

}  // namespace hta::ops

namespace hta::ops {

// The permutation that orders rows by (group, key, row): np.lexsort((key, group)) in O(n) for
// the usual input, a trace's rows in nearly time order over a few groups.
std::vector<int64_t> group_order(const int64_t* group, const int64_t* key, size_t n);

}  // namespace hta::ops
