// Cross-thread edges: a thread that starts working inside the window (an autograd worker, a
// data loader thread) was woken by something another thread did, and another thread may wait
// for it to finish. A thread's first event hangs from the last CPU event on any other thread
// that ended before it started (cross_thread), or, where another thread was then between two
// children of its innermost running event (the main thread in `backward()`), from that
// event's last child to end (the thread that waits on it is the one that woke it); its last event's
// end leads to the end of the innermost event on another thread that was running when it ended
// (thread_join), whose own last stretch then becomes a wait (join_tail) like a sync call's. Where
// that event was between two of its children then (the main thread inside ProfilerStep#N, in
// `backward()` with nothing traced while the autograd thread ran), the join leads to the start of
// the child that came next instead, and the gap before it becomes the wait: the host went on when
// the worker was done, not at a fixed time. The thread holding the window's first event gets
// neither. Happens-before guesses, not recorded dependencies: the trace does not say which call
// woke a thread or which one waited for it.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/dependency_graph.h"
#include "ops/group_sort.h"

namespace hta::graph {

namespace {

struct LaneSpan {
  int64_t first = -1, last = -1;  // rows of the earliest start and the latest end
};
// Per query (time, lane): the shortest CPU event on another lane running at that time
// (ts <= time < end; ties: the lowest row), where there is one. One sweep over the queries in
// time order, with the events started by then in a set ordered by duration: an event that has
// ended by one query's time has ended by every later one and leaves the set, so a chain of
// many steps (a lane per worker thread and step) costs n log n, not lanes x n.
std::unordered_map<int64_t, int64_t> innermost_running(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    std::vector<std::pair<int64_t, int64_t>> queries) {
  const auto end_of = [&](int64_t r) { return in.ts[r] + in.dur[r]; };
  std::sort(queries.begin(), queries.end());
  // (ts, row) pairs in order. cpu comes in row order, nearly in time: merging its sorted
  // runs is linear.
  std::vector<std::pair<int64_t, int64_t>> by_start;
  by_start.reserve(cpu.size());
  for (int64_t r : cpu) by_start.emplace_back(in.ts[r], r);
  hta::ops::detail::sort_runs(by_start.begin(), by_start.end(),
                              std::less<std::pair<int64_t, int64_t>>());
  std::set<std::pair<int64_t, int64_t>> running;  // (dur, row) of events started by now
  std::unordered_map<int64_t, int64_t> out;
  size_t next = 0;
  for (const auto& [time, lane] : queries) {
    for (; next < by_start.size() && by_start[next].first <= time; ++next) {
      const int64_t r = by_start[next].second;
      // One that has ended by now is running at no later query either: most events never
      // enter the set.
      if (end_of(r) > time) running.emplace(in.dur[r], r);
    }
    for (auto it = running.begin(); it != running.end();) {
      const int64_t r = it->second;
      if (end_of(r) <= time) {
        it = running.erase(it);  // ended: not running at this or any later query
      } else if (in.lane[r] == lane) {
        ++it;  // the lane's own enclosing calls
      } else {
        out[lane] = r;
        break;
      }
    }
  }
  return out;
}

// Per lane other than main_lane: the innermost event on another thread running when the
// lane's work ended.
std::unordered_map<int64_t, int64_t> joined_events(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    const std::unordered_map<int64_t, LaneSpan>& lanes, int64_t main_lane) {
  std::vector<std::pair<int64_t, int64_t>> queries;  // (done, lane)
  for (const auto& [lane, s] : lanes)
    if (lane != main_lane) queries.emplace_back(in.ts[s.last] + in.dur[s.last], lane);
  return innermost_running(in, cpu, std::move(queries));
}

// Per event in `parents`: its children (CPU events whose parent it is), in one pass.
std::unordered_map<int64_t, std::vector<int64_t>> children_of(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    const std::unordered_map<int64_t, int64_t>& parents) {
  std::unordered_map<int64_t, std::vector<int64_t>> out;
  for (const auto& [lane, y] : parents) out.emplace(y, std::vector<int64_t>());
  for (int64_t r : cpu) {
    const auto it = in.parent[r] >= 0 ? out.find(in.parent[r]) : out.end();
    if (it != out.end()) it->second.push_back(r);
  }
  return out;
}

// Per lane other than main_lane: where, when the lane's first event started, another thread
// was between two children of its innermost running event (the main thread in `backward()`,
// nothing traced, as the autograd thread starts), that event's last child to end by then:
// the thread waiting on this one is the one that woke it, rather than whichever call on any
// thread happened to end last (a polling thread's).
std::unordered_map<int64_t, int64_t> waiting_wakers(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    const std::unordered_map<int64_t, LaneSpan>& lanes, int64_t main_lane) {
  std::vector<std::pair<int64_t, int64_t>> queries;  // (first start, lane)
  for (const auto& [lane, s] : lanes)
    if (lane != main_lane) queries.emplace_back(in.ts[s.first], lane);
  const auto holders = innermost_running(in, cpu, std::move(queries));
  const auto kids = children_of(in, cpu, holders);
  std::unordered_map<int64_t, int64_t> out;
  for (const auto& [lane, y] : holders) {
    const int64_t start = in.ts[lanes.at(lane).first];
    int64_t best = -1;
    for (int64_t k : kids.at(y)) {
      const int64_t end = in.ts[k] + in.dur[k];
      if (end <= start && (best < 0 || end > in.ts[best] + in.dur[best] ||
                           (end == in.ts[best] + in.dur[best] && k > best)))
        best = k;
    }
    if (best >= 0) out[lane] = best;
  }
  return out;
}

// A thread that waited for another resumes this soon after it ended (its wake-up and the
// interpreter's way back to the next traced call: 0.25 ms on df_index_resolver); a child that
// started later was not resumed by that end.
constexpr int64_t kResumeWithin = 1'000'000;  // ns

// Per joining lane: the child of its joined event that started first at or after the lane's
// work ended, where the joined event has one (it was between children then: the child running
// at that time, being shorter, would have been the joined event) and it started within
// kResumeWithin of that end, and the lane is the last of those resuming that child to end.
std::unordered_map<int64_t, int64_t> resumed_children(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    const std::unordered_map<int64_t, LaneSpan>& lanes,
    const std::unordered_map<int64_t, int64_t>& joined) {
  const auto kids = children_of(in, cpu, joined);
  std::unordered_map<int64_t, int64_t> out;
  for (const auto& [lane, y] : joined) {
    const int64_t last = lanes.at(lane).last;
    const int64_t done = in.ts[last] + in.dur[last];
    int64_t best = -1;
    for (int64_t k : kids.at(y))
      if (in.ts[k] >= done && in.ts[k] - done <= kResumeWithin &&
          (best < 0 || in.ts[k] < in.ts[best] || (in.ts[k] == in.ts[best] && k < best)))
        best = k;
    if (best >= 0) out[lane] = best;
  }
  // Of the lanes that resume the same child, the one that ended last is what the thread
  // waited for (it went on right after); the others keep the join to the event's end (a
  // polling thread that ended earlier in the gap did not hold it).
  std::unordered_map<int64_t, int64_t> last_to_end;  // child -> lane
  const auto done_of = [&](int64_t lane) {
    const int64_t r = lanes.at(lane).last;
    return in.ts[r] + in.dur[r];
  };
  for (const auto& [lane, child] : out) {
    auto [it, fresh] = last_to_end.emplace(child, lane);
    if (!fresh && (done_of(lane) > done_of(it->second) ||
                   (done_of(lane) == done_of(it->second) && lane > it->second)))
      it->second = lane;
  }
  for (auto it = out.begin(); it != out.end();)
    it = last_to_end.at(it->second) == it->first ? std::next(it) : out.erase(it);
  return out;
}

// Per lane other than main_lane: the CPU event with the latest (end, row) among those that
// ended by the lane's first start, or -1. The events are binned by the first of those starts
// they ended by, in one pass (the starts are few: one per lane), and the latest carried
// forward: no sort of every event by its end.
std::unordered_map<int64_t, int64_t> waking_events(
    const GraphInput& in, const std::vector<int64_t>& cpu,
    const std::unordered_map<int64_t, LaneSpan>& lanes, int64_t main_lane) {
  std::vector<int64_t> starts;
  for (const auto& [lane, s] : lanes)
    if (lane != main_lane) starts.push_back(in.ts[s.first]);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  using EndRow = std::pair<int64_t, int64_t>;
  std::vector<EndRow> latest(starts.size(), {std::numeric_limits<int64_t>::min(), -1});
  for (int64_t r : cpu) {
    const int64_t end = in.ts[r] + in.dur[r];
    const auto bin = std::lower_bound(starts.begin(), starts.end(), end) - starts.begin();
    if (bin < static_cast<std::ptrdiff_t>(starts.size()))
      latest[bin] = std::max(latest[bin], EndRow{end, r});
  }
  for (size_t k = 1; k < latest.size(); ++k) latest[k] = std::max(latest[k], latest[k - 1]);
  std::unordered_map<int64_t, int64_t> out;
  for (const auto& [lane, s] : lanes)
    if (lane != main_lane) {
      const auto k =
          std::lower_bound(starts.begin(), starts.end(), in.ts[s.first]) - starts.begin();
      out[lane] = latest[k].second;
    }
  return out;
}
}  // namespace

void add_thread_edges(const GraphInput& in, Graph& g) {
  const auto end_of = [&](int64_t r) { return in.ts[r] + in.dur[r]; };
  std::unordered_map<int64_t, LaneSpan> lanes;
  std::vector<int64_t> cpu;
  for (size_t i = 0; i < in.n; ++i) {
    if (in.is_gpu[i]) continue;
    const auto r = static_cast<int64_t>(i);
    cpu.push_back(r);
    LaneSpan& s = lanes[in.lane[i]];
    if (s.first < 0 || in.ts[r] < in.ts[s.first]) s.first = r;
    if (s.last < 0 || end_of(r) > end_of(s.last)) s.last = r;
  }
  if (lanes.size() < 2) return;
  int64_t main_lane = -1, earliest = std::numeric_limits<int64_t>::max();
  for (const auto& [lane, s] : lanes)
    if (in.ts[s.first] < earliest || (in.ts[s.first] == earliest && lane < main_lane)) {
      earliest = in.ts[s.first];
      main_lane = lane;
    }

  const std::unordered_map<int64_t, int64_t> woken = waking_events(in, cpu, lanes, main_lane);
  const std::unordered_map<int64_t, int64_t> waiting = waiting_wakers(in, cpu, lanes, main_lane);
  const std::unordered_map<int64_t, int64_t> joined = joined_events(in, cpu, lanes, main_lane);
  const std::unordered_map<int64_t, int64_t> resumed = resumed_children(in, cpu, lanes, joined);
  std::vector<int64_t> join_targets;
  for (const auto& [lane, s] : lanes) {
    if (lane == main_lane) continue;
    // Woken: the last end at or before its first start (on another thread: nothing on this
    // lane ends before its first event starts).
    const int64_t x = s.first;
    const auto holder = waiting.find(lane);
    const int64_t w = holder != waiting.end() ? holder->second : woken.at(lane);
    if (w >= 0 && in.lane[w] != lane)
      g.add_edge(end_node(w), start_node(x), EdgeType::cross_thread);
    // Joined: the shortest event on another thread running when this thread's work ended.
    const auto found = joined.find(lane);
    if (found == joined.end()) continue;
    const int64_t y = found->second;
    const auto next = resumed.find(lane);
    const int64_t target = next == resumed.end() ? end_node(y) : start_node(next->second);
    g.add_edge(end_node(s.last), target, EdgeType::thread_join);
    join_targets.push_back(target);
  }
  // The joined event's end was reached through a rigid edge (its duration or its last child's
  // end plus a gap) that holds the waiting; it becomes a wait edge so that the worker's end can
  // decide it.
  if (join_targets.empty()) return;
  std::sort(join_targets.begin(), join_targets.end());
  for (size_t e = 0; e < g.dst.size(); ++e) {
    const auto t = static_cast<EdgeType>(g.type[e]);
    if ((t == EdgeType::cpu_self || t == EdgeType::cpu_nest_up || t == EdgeType::cpu_sibling ||
         t == EdgeType::cpu_nest_down) &&
        std::binary_search(join_targets.begin(), join_targets.end(), g.dst[e]))
      g.type[e] = static_cast<uint8_t>(EdgeType::join_tail);
  }
}

}  // namespace hta::graph
