#include "trace/thread_order.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include "trace/gallop.h"
#include "trace/row_limit.h"

namespace hta {
namespace {

struct SortKey {
  int64_t ts, neg_dur, row;
  bool operator<(const SortKey& o) const {
    if (ts != o.ts) return ts < o.ts;
    if (neg_dur != o.neg_dur) return neg_dur < o.neg_dur;
    return row < o.row;
  }
};

// The same order as SortKey's, read from the columns: for runs that need no more than a few
// merges, where copying keys out would cost more (24 bytes a row, faulted in) than it saves.
struct ByStart {
  const int64_t* ts;
  const int64_t* dur;
  bool operator()(uint32_t a, uint32_t b) const {
    if (ts[a] != ts[b]) return ts[a] < ts[b];
    if (dur[a] != dur[b]) return dur[a] > dur[b];
    return a < b;
  }
};

// Merges the ascending rows [a, a_end) and [b, b_end) into `out` (a's first on ties, as
// std::merge), copying whole stretches that one side holds before the other's next row:
// those are found by galloping, so stretches that barely interleave (a block of events
// written out of place in an otherwise ordered thread) cost a few comparisons and a copy,
// not a comparison a row, each through two indices into the columns.
uint32_t* gallop_merge(const uint32_t* a, const uint32_t* a_end, const uint32_t* b,
                       const uint32_t* b_end, uint32_t* out, const ByStart& less) {
  while (a != a_end && b != b_end) {
    const uint32_t* a_stop =
        gallop_partition_point(a, a_end, [&](uint32_t x) { return !less(*b, x); });
    out = std::copy(a, a_stop, out);
    a = a_stop;
    if (a == a_end) break;
    const uint32_t* b_stop =
        gallop_partition_point(b, b_end, [&](uint32_t x) { return less(x, *a); });
    out = std::copy(b, b_stop, out);
    b = b_stop;
  }
  out = std::copy(a, a_end, out);
  return std::copy(b, b_end, out);
}

// Merges the ascending stretches [bounds[k], bounds[k + 1]) of rows pairwise until one is
// left, through one scratch array of rows.
void merge_stretches(uint32_t* rows, size_t n, std::vector<size_t> bounds, const ByStart& less,
                     std::vector<uint32_t>& scratch) {
  scratch.resize(n);
  uint32_t* from = rows;
  uint32_t* to = scratch.data();
  while (bounds.size() > 2) {
    std::vector<size_t> merged{0};
    size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      gallop_merge(from + bounds[k], from + bounds[k + 1], from + bounds[k + 1],
                   from + bounds[k + 2], to + bounds[k], less);
      merged.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) {  // an odd stretch out: carried over as it is
      std::copy(from + bounds[k], from + bounds[k + 1], to + bounds[k]);
      merged.push_back(bounds.back());
    }
    bounds.swap(merged);
    std::swap(from, to);
  }
  if (from != rows) std::copy(from, from + n, rows);
}

// Sorts one thread's rows (ascending row numbers) by (ts, longer first, row). A thread's
// events are nearly in order in the file (a few hundred descents in a million events): the
// ascending stretches are merged, or left alone when there is one; keys are copied out (so
// that comparisons touch one array, not three columns through an index) only for runs out
// of order throughout.
void sort_run(const EventTable& e, uint32_t* rows, size_t n, std::vector<uint32_t>& scratch) {
  const ByStart less{e.ts.data(), e.dur.data()};
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < n; ++i) {
    if (less(rows[i], rows[i - 1])) bounds.push_back(i);
  }
  bounds.push_back(n);
  if (bounds.size() <= 2) return;
  if (bounds.size() - 1 <= n / 16 + 1)
    return merge_stretches(rows, n, std::move(bounds), less, scratch);
  std::vector<SortKey> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = {e.ts[rows[i]], -e.dur[rows[i]], rows[i]};
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < n; ++i) rows[i] = static_cast<uint32_t>(keys[i].row);
}

}  // namespace

ThreadOrder::ThreadOrder(const EventTable& e, int threads) {
  const size_t n = e.size();
  check_event_rows(n);
  // Group ids in order of first appearance; consecutive events usually share a thread, so
  // a group is looked up only where the thread changes. Counted first, then placed. The
  // first pass keeps the spans of consecutive events on one thread, when there are few (a
  // few hundred in 200,000 events on GPU-heavy traces; a third of the events at worst), and
  // the second places them without reading pid and tid again; else it looks the groups up
  // again: an array of each event's group would be the largest block of the link pass (4
  // bytes an event), at the load's peak, and the spans are kept to half of that.
  struct Span {
    uint32_t begin, group;
  };
  std::vector<Span> spans;
  bool keep_spans = true;
  const size_t max_spans = n / 4;
  std::vector<size_t> counts;
  std::pair<int64_t, int64_t> last_key{0, 0};
  uint32_t last_group = UINT32_MAX;
  const auto group_at = [&](size_t i) {
    const std::pair<int64_t, int64_t> key{e.pid[i], e.tid[i]};
    if (last_group == UINT32_MAX || key != last_key) {
      auto [it, inserted] = group_of_.try_emplace(key, static_cast<uint32_t>(counts.size()));
      if (inserted) counts.push_back(0);
      last_key = key;
      last_group = it->second;
      return true;  // a new span
    }
    return false;
  };
  for (size_t i = 0; i < n; ++i) {
    if (group_at(i) && keep_spans) {
      if (spans.size() == max_spans) {
        keep_spans = false;
        spans = {};
      } else {
        spans.push_back({static_cast<uint32_t>(i), last_group});
      }
    }
    ++counts[last_group];
  }
  begin_.assign(counts.size() + 1, 0);
  for (size_t g = 0; g < counts.size(); ++g) begin_[g + 1] = begin_[g] + counts[g];
  rows_.resize(n);
  std::vector<size_t> fill(begin_.begin(), begin_.end() - 1);
  if (keep_spans) {
    for (size_t k = 0; k < spans.size(); ++k) {
      const uint32_t end = k + 1 < spans.size() ? spans[k + 1].begin : static_cast<uint32_t>(n);
      size_t& at = fill[spans[k].group];
      for (uint32_t row = spans[k].begin; row < end; ++row) rows_[at++] = row;
    }
  } else {
    last_group = UINT32_MAX;
    for (size_t i = 0; i < n; ++i) {
      group_at(i);
      rows_[fill[last_group]++] = static_cast<uint32_t>(i);
    }
  }

  // Sort the runs, largest first, spread over the threads.
  std::vector<uint32_t> by_size(counts.size());
  for (uint32_t g = 0; g < by_size.size(); ++g) by_size[g] = g;
  std::sort(by_size.begin(), by_size.end(),
            [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<uint32_t> scratch;
    for (size_t k; (k = next.fetch_add(1)) < by_size.size();) {
      const uint32_t g = by_size[k];
      sort_run(e, rows_.data() + begin_[g], counts[g], scratch);
    }
  };
  std::vector<std::thread> pool;
  const size_t extra = std::min<size_t>(threads > 1 ? static_cast<size_t>(threads - 1) : 0,
                                        by_size.size() > 1 ? by_size.size() - 1 : 0);
  for (size_t t = 0; t < extra; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::pair<size_t, size_t> ThreadOrder::range(int64_t pid, int64_t tid) const {
  auto it = group_of_.find({pid, tid});
  if (it == group_of_.end()) return {0, 0};
  return {begin_[it->second], begin_[it->second + 1]};
}

}  // namespace hta
