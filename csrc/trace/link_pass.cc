#include "trace/link_pass.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <string_view>
#include <system_error>
#include <thread>

#include "io/format_error.h"
#include "trace/event_kind.h"
#include "trace/gallop.h"
#include "trace/kernel_classifier.h"
#include "trace/row_limit.h"
#include "trace/string_ids.h"
#include "trace/thread_order.h"

namespace hta {
namespace {

using Rows = std::vector<EventRow>;

// Runs `beside` on a second thread while `here` runs on this one (both in turn here when no
// thread can start). An exception in either (out of memory, say) is rethrown after both
// are done: one left to escape a thread, or a thread left unjoined, ends the process.
template <class Beside, class Here>
void run_side_by_side(Beside&& beside, Here&& here) {
  std::exception_ptr beside_failed, here_failed;
  std::thread helper;
  try {
    helper = std::thread([&] {
      try {
        beside();
      } catch (...) {
        beside_failed = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    beside();
  }
  try {
    here();
  } catch (...) {
    here_failed = std::current_exception();
  }
  if (helper.joinable()) helper.join();
  if (here_failed) std::rethrow_exception(here_failed);
  if (beside_failed) std::rethrow_exception(beside_failed);
}

void shift_times(TraceColumns& t, int64_t base) {
  if (base == 0) return;
  bool overflow = false;
  for (auto* col : {&t.events.ts, &t.flows.ts, &t.counters.ts, &t.instants.ts}) {
    for (int64_t& v : *col) overflow |= __builtin_add_overflow(v, base, &v);
  }
  if (overflow) {
    throw FormatError(ErrorCode::kBadField, std::nullopt,
                      "timestamps (ts) beyond int64 nanoseconds after adding baseTimeNanoseconds",
                      "ts");
  }
}

void assign_kinds(TraceColumns& t, const LinkOptions& options) {
  const int32_t n_strings = t.strings.size();
  std::vector<int8_t> kind_of_cat(static_cast<size_t>(n_strings), -1);
  std::vector<int8_t> class_of_name(static_cast<size_t>(n_strings), -1);
  KernelClassifier classifier(options.kernel_class_rules);
  auto& e = t.events;
  uint64_t stream_from_tid = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    EventKind kind = EventKind::kOther;
    if (e.cat[i] >= 0) {
      int8_t& k = kind_of_cat[e.cat[i]];
      if (k < 0) k = static_cast<int8_t>(kind_of_category(t.strings.at(e.cat[i])));
      kind = static_cast<EventKind>(k);
    }
    e.kind[i] = static_cast<uint8_t>(kind);
    if (!is_gpu_kind(kind)) continue;
    // The class depends on the kind only through memcpy/memset/sync, so caching by name is
    // safe for kernels; other GPU kinds are classified directly.
    if (kind == EventKind::kKernel && e.name[i] >= 0) {
      int8_t& c = class_of_name[e.name[i]];
      if (c < 0) c = static_cast<int8_t>(classifier.classify(kind, t.strings.at(e.name[i])));
      e.kernel_class[i] = static_cast<uint8_t>(c);
    } else {
      e.kernel_class[i] = static_cast<uint8_t>(classifier.classify(kind, {}));
    }
    // GPU events are on pid = device, tid = stream when the args do not say.
    if (e.device[i] < 0 && e.pid[i] >= 0 && e.pid[i] <= INT32_MAX)
      e.device[i] = static_cast<int32_t>(e.pid[i]);
    if (e.stream[i] < 0 && e.tid[i] >= 0 && e.tid[i] <= INT32_MAX) {
      e.stream[i] = static_cast<int32_t>(e.tid[i]);
      ++stream_from_tid;
    }
  }
  if (stream_from_tid) t.stats.add(Stat::gpu_stream_from_tid, stream_from_tid);
}

bool is_launch_side(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }
bool is_linkable_gpu(EventKind k) { return is_gpu_kind(k) && k != EventKind::kGpuUserAnnotation; }

void link(EventTable& e, EventRow gpu_row, EventRow launch_row) {
  e.partner[gpu_row] = launch_row;
  // A launch points at its first GPU event (a graph launch has many).
  EventRow& first = e.partner[launch_row];
  if (first < 0 || e.ts[gpu_row] < e.ts[first]) first = gpu_row;
}

// Launch rows by correlation id. Ids are usually dense (a counter per process), so a
// direct table is tried first; sparse ids fall back to a sorted list.
class LaunchIndex {
 public:
  explicit LaunchIndex(TraceColumns& t) {
    const auto& e = t.events;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t n = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      if (e.correlation[i] >= 0 && is_launch_side(static_cast<EventKind>(e.kind[i]))) {
        lo = std::min(lo, e.correlation[i]);
        hi = std::max(hi, e.correlation[i]);
        ++n;
      }
    }
    if (n == 0) return;
    // int32 slots, up to 8 per launch: at most twice the memory of the sorted list.
    dense_ = static_cast<uint64_t>(hi - lo) < 8 * static_cast<uint64_t>(n) + 1024;
    base_ = lo;
    if (dense_) table_.assign(static_cast<size_t>(hi - lo) + 1, -1);
    for (size_t i = 0; i < e.size(); ++i) {
      if (e.correlation[i] < 0 || !is_launch_side(static_cast<EventKind>(e.kind[i]))) continue;
      if (dense_) {
        // The first launch of each correlation id wins (file order).
        EventRow& slot = table_[static_cast<size_t>(e.correlation[i] - base_)];
        if (slot >= 0)
          t.stats.add(Stat::duplicate_correlation);
        else
          slot = static_cast<EventRow>(i);
      } else {
        sorted_.emplace_back(e.correlation[i], static_cast<EventRow>(i));
      }
    }
    if (dense_) return;
    std::sort(sorted_.begin(), sorted_.end());
    size_t kept = 0;
    for (size_t i = 0; i < sorted_.size(); ++i) {
      if (kept > 0 && sorted_[kept - 1].first == sorted_[i].first) {
        t.stats.add(Stat::duplicate_correlation);
        continue;
      }
      sorted_[kept++] = sorted_[i];
    }
    sorted_.resize(kept);
  }

  // The launch row with this correlation id, or -1.
  EventRow find(int64_t correlation) const {
    if (dense_) {
      const int64_t k = correlation - base_;
      return k >= 0 && k < static_cast<int64_t>(table_.size()) ? table_[static_cast<size_t>(k)]
                                                               : -1;
    }
    auto it =
        std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(correlation, EventRow{-1}));
    return it != sorted_.end() && it->first == correlation ? it->second : -1;
  }

 private:
  bool dense_ = false;
  int64_t base_ = 0;
  std::vector<EventRow> table_;
  std::vector<std::pair<int64_t, EventRow>> sorted_;
};

void link_by_correlation(TraceColumns& t) {
  auto& e = t.events;
  const LaunchIndex launches(t);
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.correlation[i] < 0 || !is_linkable_gpu(static_cast<EventKind>(e.kind[i]))) continue;
    const EventRow launch = launches.find(e.correlation[i]);
    if (launch >= 0) link(e, static_cast<EventRow>(i), launch);
  }
}

// Binds flows [from, to); returns how many found no event.
size_t bind_flow_range(TraceColumns& t, const ThreadOrder& order, size_t from, size_t to) {
  auto& e = t.events;
  auto& f = t.flows;
  const uint32_t* rows = order.rows().data();
  size_t unbound = 0;
  // Flow endpoints come in start/finish pairs on two threads: remember the last two ranges,
  // and where in each the last flow's search ended: a thread's flows mostly come in time
  // order, so the next one's events are a few places on, found by galloping from there
  // (a binary search over the whole thread, through the rows into ts, cost ~100 ns a flow).
  struct Cached {
    int64_t pid = 0, tid = 0;
    std::pair<size_t, size_t> range{0, 0};
    bool set = false;
    int64_t ts = INT64_MIN;  // the last flow's time, and its search's end in rows
    const uint32_t* at = nullptr;
  } cache[2];
  for (size_t i = from; i < to; ++i) {
    Cached* hit = nullptr;
    for (Cached& c : cache) {
      if (c.set && c.pid == f.pid[i] && c.tid == f.tid[i]) hit = &c;
    }
    if (!hit) {
      hit = &cache[i & 1];
      *hit = {f.pid[i], f.tid[i], order.range(f.pid[i], f.tid[i]), true};
      hit->at = rows + hit->range.first;
    }
    const auto [begin, end] = hit->range;
    // First event of the thread starting after the flow; walk back through those that
    // start at or before it.
    const int64_t flow_ts = f.ts[i];
    const auto starts_by = [&](uint32_t row) { return e.ts[row] <= flow_ts; };
    const uint32_t* it = flow_ts >= hit->ts
                             ? gallop_partition_point(hit->at, rows + end, starts_by)
                             : std::partition_point(rows + begin, hit->at, starts_by);
    hit->ts = flow_ts;
    hit->at = it;
    EventRow bound = -1;
    for (int back = 0; back < 16 && it != rows + begin; ++back) {
      auto r = static_cast<EventRow>(*--it);
      if (e.ts[r] + e.dur[r] >= f.ts[i]) {
        // Of events with the very same extent (zero-length calls at one instant, say),
        // the first in the file.
        while (it != rows + begin && e.ts[it[-1]] == e.ts[r] && e.dur[it[-1]] == e.dur[r])
          r = static_cast<EventRow>(*--it);
        bound = r;
        break;
      }
    }
    f.event[i] = bound;
    unbound += bound < 0;
  }
  return unbound;
}

// Binds each flow endpoint to the innermost X event on its (pid, tid) that contains its
// timestamp (a slice starting exactly there preferred); flows are independent, so halves
// run on two threads when there are and the flows are enough to pay for the thread's start.
void bind_flows(TraceColumns& t, const ThreadOrder& order, int threads) {
  const size_t n = t.flows.size();
  size_t unbound = 0;
  if (threads > 1 && n > 8192) {
    size_t second = 0;
    run_side_by_side([&] { second = bind_flow_range(t, order, n / 2, n); },
                     [&] { unbound = bind_flow_range(t, order, 0, n / 2); });
    unbound += second;
  } else {
    unbound = bind_flow_range(t, order, 0, n);
  }
  if (unbound) t.stats.add(Stat::flow_unbound, unbound);
}

bool is_launch_flow(std::string_view cat) {
  return cat == "ac2g" || cat == "async_cpu_to_gpu" || cat == "async_gpu";
}

void link_by_flows(TraceColumns& t) {
  auto& e = t.events;
  auto& f = t.flows;
  std::vector<int8_t> launch_cat(static_cast<size_t>(t.strings.size()), -1);
  auto is_launch = [&](int32_t cat) {
    if (cat < 0) return false;
    int8_t& known = launch_cat[static_cast<size_t>(cat)];
    if (known < 0) known = is_launch_flow(t.strings.at(cat));
    return known == 1;
  };
  // Finish endpoints on GPU events that correlation ids left unlinked; usually none, and
  // then there is nothing to pair.
  std::vector<std::pair<int64_t, EventRow>> starts, finishes;  // (id, event row)
  for (size_t i = 0; i < f.size(); ++i) {
    const EventRow row = f.event[i];
    if (row < 0 || f.phase[i] == 's' || e.partner[row] >= 0 ||
        !is_linkable_gpu(static_cast<EventKind>(e.kind[row])) || !is_launch(f.cat[i])) {
      continue;
    }
    finishes.emplace_back(f.id[i], row);
  }
  if (finishes.empty()) return;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f.event[i] >= 0 && f.phase[i] == 's' && is_launch(f.cat[i]))
      starts.emplace_back(f.id[i], f.event[i]);
  }
  std::sort(starts.begin(), starts.end());
  for (auto [id, gpu_row] : finishes) {
    if (e.partner[gpu_row] >= 0) continue;
    auto it = std::lower_bound(starts.begin(), starts.end(), std::make_pair(id, EventRow{-1}));
    if (it == starts.end() || it->first != id) continue;
    if (is_launch_side(static_cast<EventKind>(e.kind[it->second]))) link(e, gpu_row, it->second);
  }
}

void count_unlinked(TraceColumns& t) {
  auto& e = t.events;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.partner[i] < 0 && is_linkable_gpu(static_cast<EventKind>(e.kind[i]))) {
      t.stats.add(Stat::gpu_event_unlinked);
    }
  }
}

// Whether open event p holds r, which starts at or after p (sorted by start, longer first).
// p holds what starts inside it, and what starts with it: a zero-length op holds the launch
// recorded at its instant. Two zero-length events at one instant are ambiguous by time
// alone; there the External id decides, when both have one.
bool holds(const EventTable& e, int64_t p, int64_t r) {
  if (e.ts[p] + e.dur[p] > e.ts[r]) return true;
  if (e.ts[p] != e.ts[r]) return false;
  return e.external_id[p] < 0 || e.external_id[r] < 0 || e.external_id[p] == e.external_id[r];
}

// Runtime and driver calls are leaves: a launch never encloses another launch or an op,
// even when two zero-length calls share a timestamp.
bool can_be_parent(EventKind k) { return k != EventKind::kRuntime && k != EventKind::kDriver; }

// The parent of r among the open events (innermost last). Time alone puts a zero-length
// event that starts at the instant its innermost open event starts inside that event; where
// their External ids differ, the id names the op r belongs to (aten::matmul's launch at the
// microsecond its aten::mm starts): the nearest open event with r's id, if any, is its parent.
int64_t parent_of(const EventTable& e, const Rows& stack, int64_t r) {
  if (stack.empty()) return -1;
  const int64_t p = stack.back();
  const int64_t x = e.external_id[r];
  if (e.dur[r] != 0 || e.ts[p] != e.ts[r] || x < 0) return p;
  if (e.external_id[p] < 0 || e.external_id[p] == x) return p;
  for (size_t k = stack.size() - 1; k-- > 0;) {
    if (e.external_id[stack[k]] == x) return stack[k];
  }
  return p;
}

// Parent = innermost enclosing CPU event on the same thread: sweep each thread's events
// (by start, longer first) with a stack of open events.
void nest_cpu_events(EventTable& e, const ThreadOrder& order) {
  const uint32_t* rows = order.rows().data();
  Rows stack;
  for (size_t g = 0; g < order.threads(); ++g) {
    stack.clear();
    for (size_t k = order.begin(g); k < order.begin(g + 1); ++k) {
      const auto r = static_cast<EventRow>(rows[k]);
      const auto kind = static_cast<EventKind>(e.kind[r]);
      if (is_gpu_kind(kind)) continue;
      while (!stack.empty() && !holds(e, stack.back(), r)) stack.pop_back();
      e.parent[r] = parent_of(e, stack, r);
      if (can_be_parent(kind)) stack.push_back(r);
    }
  }
}

// Profiler steps: CPU events named "ProfilerStep#N" define windows; CPU events take the
// step whose window holds their start, GPU events the step of their launch.
void assign_steps(TraceColumns& t) {
  auto& e = t.events;
  struct Window {
    int64_t start, end;
    int32_t step;
  };
  std::vector<int32_t> step_of_name(static_cast<size_t>(t.strings.size()), -2);
  std::vector<Window> windows;
  constexpr std::string_view kPrefix = "ProfilerStep#";
  for (size_t i = 0; i < e.size(); ++i) {
    const auto kind = static_cast<EventKind>(e.kind[i]);
    if (e.name[i] < 0 || is_gpu_kind(kind)) continue;
    int32_t& s = step_of_name[e.name[i]];
    if (s == -2) {
      std::string_view name = t.strings.at(e.name[i]);
      s = -1;
      if (name.substr(0, kPrefix.size()) == kPrefix && name.size() > kPrefix.size() &&
          name.size() - kPrefix.size() < 10) {
        char* end = nullptr;
        const std::string digits(name.substr(kPrefix.size()));
        const long v = std::strtol(digits.c_str(), &end, 10);
        if (end && *end == '\0' && v >= 0) s = static_cast<int32_t>(v);
      }
    }
    if (s >= 0) {
      windows.push_back({e.ts[i], e.ts[i] + e.dur[i], s});
      t.steps.row.push_back(static_cast<EventRow>(i));
      t.steps.step.push_back(s);
      t.steps.ts.push_back(e.ts[i]);
      t.steps.dur.push_back(e.dur[i]);
    }
  }
  if (windows.empty()) return;
  std::sort(windows.begin(), windows.end(),
            [](const Window& a, const Window& b) { return a.start < b.start; });
  // The window starting last at or before each event's start: most often the one before
  // it's, as a thread's events come in time order; searched for when not.
  size_t w = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (is_gpu_kind(static_cast<EventKind>(e.kind[i]))) continue;
    const int64_t ts = e.ts[i];
    if (ts < windows[w].start || (w + 1 < windows.size() && ts >= windows[w + 1].start)) {
      auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                                 [](int64_t t, const Window& x) { return t < x.start; });
      if (it == windows.begin()) continue;
      w = static_cast<size_t>(it - windows.begin()) - 1;
    }
    if (ts < windows[w].end || ts == windows[w].start) e.step[i] = windows[w].step;
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (is_gpu_kind(static_cast<EventKind>(e.kind[i])) && e.partner[i] >= 0) {
      e.step[i] = e.step[e.partner[i]];
    }
  }
}

}  // namespace

void link_trace(TraceColumns& t, const LinkOptions& options) {
  check_event_rows(t.events.size());
  const StringIdRange ids = place_string_ids(t);
  t.string_id_base = ids.base;
  t.string_id_floor = ids.floor;
  shift_times(t, options.base_time_ns);
  // The per-thread order reads only pid, tid, ts and dur, which the kinds and the launch
  // links do not write: it is built beside them.
  std::unique_ptr<ThreadOrder> order;
  const auto kinds_and_launches = [&] {
    assign_kinds(t, options);
    link_by_correlation(t);
  };
  if (options.threads > 1) {
    run_side_by_side([&] { order = std::make_unique<ThreadOrder>(t.events, options.threads); },
                     kinds_and_launches);
  } else {
    kinds_and_launches();
    order = std::make_unique<ThreadOrder>(t.events, 1);
  }
  bind_flows(t, *order, options.threads);
  link_by_flows(t);
  count_unlinked(t);
  if (options.threads > 1) {
    // Independent passes: the nesting writes only `parent`, the steps only `step` and the
    // steps table, and both only read the rest.
    run_side_by_side([&] { assign_steps(t); }, [&] { nest_cpu_events(t.events, *order); });
  } else {
    nest_cpu_events(t.events, *order);
    assign_steps(t);
  }
}

}  // namespace hta
