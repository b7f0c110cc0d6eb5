// The link pass (trace/link_pass.h): launches and their GPU events linked by correlation id
// (ac2g flows where ids are missing), flow endpoints bound to events, CPU events nested per
// thread and profiler steps assigned. Each trace is built so that its links are known.
#include "trace/link_pass.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "io/format_error.h"
#include "trace/test_trace.h"

namespace hta {
namespace {

using test::add_event;
using test::add_flow;

constexpr int64_t kCpu = 100;   // the CPU process
constexpr int64_t kGpu = 0;     // the GPU's pid (the device)
constexpr int64_t kStream = 7;  // its tid (the stream)
constexpr int64_t kThread = 1;

EventRow launch(TraceColumns& t, int64_t ts, int64_t correlation, int64_t tid = kThread) {
  return add_event(t, "cuda_runtime", "cudaLaunchKernel", kCpu, tid, ts, 5, correlation);
}

EventRow kernel(TraceColumns& t, int64_t ts, int64_t correlation, int64_t stream = kStream) {
  return add_event(t, "kernel", "gemm", kGpu, stream, ts, 20, correlation);
}

void link(TraceColumns& t, int threads = 1) {
  LinkOptions options;
  options.threads = threads;
  link_trace(t, options);
}

EventKind kind(const TraceColumns& t, EventRow r) {
  return static_cast<EventKind>(t.events.kind[r]);
}

TEST_CASE("a launch and its kernel are linked by correlation id") {
  TraceColumns t;
  const EventRow op = add_event(t, "cpu_op", "aten::mm", kCpu, kThread, 0, 50);
  const EventRow l = launch(t, 10, 42);
  const EventRow k = kernel(t, 100, 42);
  link(t);
  CHECK(kind(t, op) == EventKind::kCpuOp);
  CHECK(kind(t, l) == EventKind::kRuntime);
  CHECK(kind(t, k) == EventKind::kKernel);
  CHECK(t.events.partner[k] == l);
  CHECK(t.events.partner[l] == k);
  CHECK(t.events.partner[op] == -1);
  CHECK(t.events.parent[l] == op);
  CHECK(t.events.parent[k] == -1);  // GPU events are not nested
  // Without device and stream arguments, a GPU event's pid and tid say them.
  CHECK(t.events.device[k] == kGpu);
  CHECK(t.events.stream[k] == kStream);
  CHECK(t.stats.count(Stat::gpu_stream_from_tid) == 1);
  CHECK(t.stats.count(Stat::gpu_event_unlinked) == 0);
  CHECK(t.stats.count(Stat::duplicate_correlation) == 0);
}

TEST_CASE("unmatched launches and GPU events stay unlinked, and the GPU events are counted") {
  TraceColumns t;
  const EventRow k = kernel(t, 100, 43);     // no launch has 43
  const EventRow l = launch(t, 10, 44);      // no GPU event has 44
  const EventRow bare = kernel(t, 200, -1);  // no correlation id at all
  // A CPU op is no launch, whatever its correlation id.
  const EventRow op = add_event(t, "cpu_op", "aten::mm", kCpu, kThread, 20, 5, 45);
  const EventRow k45 = kernel(t, 300, 45);
  // GPU annotations are never linked, and not counted as unlinked.
  const EventRow note = add_event(t, "gpu_user_annotation", "step", kGpu, kStream, 0, 500, 44);
  link(t);
  CHECK(t.events.partner[k] == -1);
  CHECK(t.events.partner[l] == -1);
  CHECK(t.events.partner[bare] == -1);
  CHECK(t.events.partner[op] == -1);
  CHECK(t.events.partner[k45] == -1);
  CHECK(t.events.partner[note] == -1);
  CHECK(t.stats.count(Stat::gpu_event_unlinked) == 3);
}

TEST_CASE("a correlation id shared by two launches: the first in the file wins") {
  for (const bool sparse : {false, true}) {
    CAPTURE(sparse);
    TraceColumns t;
    const EventRow first = launch(t, 20, 5);
    const EventRow second = launch(t, 10, 5);  // earlier in time, later in the file
    // Ids spread far apart are looked up in a sorted list, not a table.
    if (sparse) launch(t, 30, int64_t{1} << 40);
    const EventRow k = kernel(t, 100, 5);
    link(t);
    CHECK(t.events.partner[k] == first);
    CHECK(t.events.partner[first] == k);
    CHECK(t.events.partner[second] == -1);
    CHECK(t.stats.count(Stat::duplicate_correlation) == 1);
  }
}

TEST_CASE("a graph launch owns every GPU event of its id, and points at the first in time") {
  TraceColumns t;
  const EventRow l = add_event(t, "cuda_runtime", "cudaGraphLaunch", kCpu, kThread, 10, 5, 9);
  const EventRow k300 = kernel(t, 300, 9);
  const EventRow k100 = kernel(t, 100, 9, 8);
  const EventRow k200 = kernel(t, 200, 9);
  const EventRow copy = add_event(t, "gpu_memcpy", "Memcpy HtoD", kGpu, kStream, 150, 10, 9);
  link(t);
  for (EventRow g : {k300, k100, k200, copy}) CHECK(t.events.partner[g] == l);
  CHECK(t.events.partner[l] == k100);
  CHECK(kind(t, copy) == EventKind::kMemcpy);
}

TEST_CASE("out of order: GPU events before their launches, ids in reverse") {
  for (const int64_t spread : {int64_t{1}, int64_t{1} << 36}) {  // a dense and a sparse index
    CAPTURE(spread);
    TraceColumns t;
    constexpr int kN = 50;
    std::vector<EventRow> kernels, launches(kN);
    for (int i = 0; i < kN; ++i) kernels.push_back(kernel(t, 1000 + i, i * spread));
    for (int i = kN; i-- > 0;) launches[i] = launch(t, 10 * i, i * spread);
    link(t);
    for (int i = 0; i < kN; ++i) {
      CHECK(t.events.partner[kernels[i]] == launches[i]);
      CHECK(t.events.partner[launches[i]] == kernels[i]);
    }
    CHECK(t.stats.count(Stat::gpu_event_unlinked) == 0);
  }
}

TEST_CASE("ac2g flows link what correlation ids leave unlinked") {
  TraceColumns t;
  const EventRow op = add_event(t, "cpu_op", "aten::mm", kCpu, kThread, 0, 100);
  const EventRow l = launch(t, 10, -1);
  const EventRow k = kernel(t, 200, -1);
  const size_t s = add_flow(t, 's', "ac2g", 77, kCpu, kThread, 10);
  const size_t f = add_flow(t, 'f', "ac2g", 77, kGpu, kStream, 200);
  // A flow of another category, and an ac2g flow from an op, link nothing.
  const EventRow k2 = kernel(t, 300, -1);
  add_flow(t, 's', "fwdbwd", 78, kCpu, kThread, 12);
  add_flow(t, 'f', "fwdbwd", 78, kGpu, kStream, 300);
  const EventRow k3 = kernel(t, 400, -1);
  add_flow(t, 's', "ac2g", 79, kCpu, kThread, 50);  // binds to the op: not a launch
  add_flow(t, 'f', "ac2g", 79, kGpu, kStream, 400);
  link(t);
  CHECK(t.flows.event[s] == l);
  CHECK(t.flows.event[f] == k);
  CHECK(t.events.partner[k] == l);
  CHECK(t.events.partner[l] == k);
  CHECK(t.events.partner[k2] == -1);
  CHECK(t.events.partner[k3] == -1);
  CHECK(t.events.partner[op] == -1);
  CHECK(t.stats.count(Stat::gpu_event_unlinked) == 2);
}

TEST_CASE("a correlation id wins over a flow") {
  TraceColumns t;
  const EventRow a = launch(t, 10, 42);
  const EventRow b = launch(t, 20, -1);
  const EventRow k = kernel(t, 200, 42);
  add_flow(t, 's', "ac2g", 5, kCpu, kThread, 20);
  add_flow(t, 'f', "ac2g", 5, kGpu, kStream, 200);
  link(t);
  CHECK(t.events.partner[k] == a);
  CHECK(t.events.partner[a] == k);
  CHECK(t.events.partner[b] == -1);
}

TEST_CASE("a flow endpoint binds to the innermost event holding its time") {
  TraceColumns t;
  const EventRow outer = add_event(t, "cpu_op", "outer", kCpu, kThread, 0, 100);
  const EventRow inner = add_event(t, "cpu_op", "inner", kCpu, kThread, 10, 10);
  const EventRow zero = add_event(t, "cpu_op", "zero", kCpu, kThread, 20, 0);
  add_event(t, "cpu_op", "zero", kCpu, kThread, 20, 0);  // its twin: alike, later in the file
  const std::vector<std::pair<int64_t, EventRow>> expected = {
      {15, inner},  {50, outer}, {10, inner},  // a slice starting at the flow's time
      {20, zero},                              // the first of two alike, not the twin
      {100, outer},                            // the end is inside
      {101, -1},    {-5, -1}};
  for (const auto& [ts, row] : expected) add_flow(t, 's', "fwdbwd", 1, kCpu, kThread, ts);
  add_flow(t, 's', "fwdbwd", 1, kCpu, 99, 15);  // a thread without events
  link(t);
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(expected[i].first);
    CHECK(t.flows.event[i] == expected[i].second);
  }
  CHECK(t.flows.event[expected.size()] == -1);
  CHECK(t.stats.count(Stat::flow_unbound) == 3);
}

TEST_CASE("flow endpoints out of time order bind as in order") {
  TraceColumns t;
  std::vector<EventRow> ops;
  for (int i = 0; i < 40; ++i) {
    ops.push_back(add_event(t, "cpu_op", "op", kCpu, kThread, i * 100, 50));
  }
  std::vector<int> order(40);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  for (int i : order) add_flow(t, 's', "fwdbwd", i, kCpu, kThread, i * 100 + 25);
  link(t);
  for (size_t j = 0; j < order.size(); ++j) CHECK(t.flows.event[j] == ops[order[j]]);
}

TEST_CASE("CPU events nest per thread: the innermost enclosing event is the parent") {
  TraceColumns t;
  auto op = [&](const char* name, int64_t tid, int64_t ts, int64_t dur, int64_t ext) {
    return add_event(t, "cpu_op", name, kCpu, tid, ts, dur, -1, ext);
  };
  const EventRow a = op("a", kThread, 0, 100, 1);
  const EventRow b = op("b", kThread, 10, 40, 2);
  const EventRow c = launch(t, 20, -1);
  const EventRow other = op("other thread", 2, 15, 5, -1);
  // Two launches at one instant: a launch holds nothing.
  const EventRow g = add_event(t, "cuda_runtime", "cudaMemcpy", kCpu, kThread, 70, 0);
  const EventRow h = add_event(t, "cuda_runtime", "cudaMemcpy", kCpu, kThread, 70, 0);
  // aten::matmul and its aten::mm start at one instant; a zero-length launch there belongs
  // to the op its External id names.
  const EventRow matmul = op("aten::matmul", kThread, 200, 100, 10);
  const EventRow mm = op("aten::mm", kThread, 200, 50, 11);
  const EventRow of_matmul = add_event(t, "cuda_runtime", "x", kCpu, kThread, 200, 0, -1, 10);
  const EventRow of_mm = add_event(t, "cuda_runtime", "y", kCpu, kThread, 200, 0, -1, 11);
  // Two zero-length ops at one instant: nested only when their External ids agree.
  const EventRow z1 = op("z1", kThread, 400, 0, 20);
  const EventRow z2 = op("z2", kThread, 400, 0, 20);
  const EventRow z3 = op("z3", kThread, 500, 0, 30);
  const EventRow z4 = op("z4", kThread, 500, 0, 31);
  link(t);
  const auto& parent = t.events.parent;
  CHECK(parent[a] == -1);
  CHECK(parent[b] == a);
  CHECK(parent[c] == b);
  CHECK(parent[other] == -1);
  CHECK(parent[g] == a);
  CHECK(parent[h] == a);
  CHECK(parent[matmul] == -1);
  CHECK(parent[mm] == matmul);
  CHECK(parent[of_matmul] == matmul);
  CHECK(parent[of_mm] == mm);
  CHECK(parent[z2] == z1);
  CHECK(parent[z4] == -1);
  CHECK(parent[z3] == -1);
}

TEST_CASE("profiler steps: CPU events by their start, GPU events by their launch") {
  TraceColumns t;
  const EventRow s4 = add_event(t, "user_annotation", "ProfilerStep#4", kCpu, kThread, 2000, 1000);
  const EventRow s3 = add_event(t, "user_annotation", "ProfilerStep#3", kCpu, kThread, 1000, 1000);
  const EventRow in3 = add_event(t, "cpu_op", "op", kCpu, kThread, 1500, 10);
  const EventRow at4 = add_event(t, "cpu_op", "op", kCpu, kThread, 2000, 10);  // the window's start
  const EventRow before = add_event(t, "cpu_op", "op", kCpu, kThread, 500, 10);
  const EventRow after = add_event(t, "cpu_op", "op", kCpu, kThread, 3000, 10);  // the end: out
  const EventRow l = launch(t, 2500, 50);
  const EventRow k = kernel(t, 9000, 50);  // long after its step, still its launch's
  const EventRow lone = kernel(t, 1500, 51);
  // Not steps: no number, or one of ten digits or more.
  add_event(t, "user_annotation", "ProfilerStep#x", kCpu, kThread, 4000, 10);
  add_event(t, "user_annotation", "ProfilerStep#1234567890", kCpu, kThread, 4000, 10);
  link(t);
  const auto& step = t.events.step;
  CHECK(step[s3] == 3);
  CHECK(step[s4] == 4);
  CHECK(step[in3] == 3);
  CHECK(step[at4] == 4);
  CHECK(step[before] == -1);
  CHECK(step[after] == -1);
  CHECK(step[l] == 4);
  CHECK(step[k] == 4);
  CHECK(step[lone] == -1);
  REQUIRE(t.steps.row.size() == 2);
  CHECK(t.steps.row[0] == s4);  // file order
  CHECK(t.steps.step[0] == 4);
  CHECK(t.steps.ts[1] == 1000);
  CHECK(t.steps.dur[1] == 1000);
}

TEST_CASE("base_time_ns moves every timestamp, and past int64 is an error") {
  TraceColumns t;
  launch(t, 10, 1);
  add_flow(t, 's', "ac2g", 1, kCpu, kThread, 11);
  test::append_missing_row(t.counters);
  t.counters.ts.back() = 12;
  test::append_missing_row(t.instants);
  t.instants.ts.back() = 13;
  LinkOptions options;
  options.base_time_ns = 1000;
  link_trace(t, options);
  CHECK(t.events.ts[0] == 1010);
  CHECK(t.flows.ts[0] == 1011);
  CHECK(t.counters.ts[0] == 1012);
  CHECK(t.instants.ts[0] == 1013);

  TraceColumns late;
  launch(late, std::numeric_limits<int64_t>::max() - 5, 1);
  options.base_time_ns = 10;
  try {
    link_trace(late, options);
    FAIL("no error");
  } catch (const FormatError& e) {
    CHECK(e.code() == ErrorCode::kBadField);
    CHECK(e.key() == "ts");
  }
}

// A trace of n launches, each in an op on one of four threads, with its kernel on one of
// three streams: even ones linked by correlation id, odd ones by an ac2g flow pair (enough
// flows that they are bound on two threads); events and flows added in a shuffled order.
struct Built {
  TraceColumns t;
  std::vector<EventRow> op, launch, kernel;
};

Built build_shuffled(int n, unsigned seed) {
  Built b;
  b.op.resize(n);
  b.launch.resize(n);
  b.kernel.resize(n);
  std::vector<int> order(3 * static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (int x : order) {
    const int i = x / 3;
    const int64_t tid = 1 + i % 4, ts = int64_t{i} * 100;
    const int64_t corr = i % 2 == 0 ? i : -1;
    switch (x % 3) {
      case 0:
        b.op[i] = add_event(b.t, "cpu_op", "op", kCpu, tid, ts, 50);
        break;
      case 1:
        b.launch[i] = launch(b.t, ts + 10, corr, tid);
        break;
      default:
        b.kernel[i] = kernel(b.t, 10000000 + ts, corr, 7 + i % 3);
    }
  }
  std::vector<int> flows;
  for (int i = 1; i < n; i += 2) flows.push_back(i);
  std::shuffle(flows.begin(), flows.end(), rng);
  for (int i : flows) {
    const int64_t ts = int64_t{i} * 100;
    add_flow(b.t, 'f', "ac2g", i, kGpu, 7 + i % 3, 10000000 + ts);
    add_flow(b.t, 's', "ac2g", i, kCpu, 1 + i % 4, ts + 12);
  }
  return b;
}

TEST_CASE("many launches, shuffled: every link as built, on one thread or four") {
  constexpr int kN = 20000;
  Built one = build_shuffled(kN, 11);
  Built four = build_shuffled(kN, 11);
  REQUIRE(one.t.flows.size() > 8192);
  link(one.t, 1);
  link(four.t, 4);
  for (int i = 0; i < kN; ++i) {
    const auto& e = one.t.events;
    REQUIRE(e.partner[one.kernel[i]] == one.launch[i]);
    REQUIRE(e.partner[one.launch[i]] == one.kernel[i]);
    REQUIRE(e.parent[one.launch[i]] == one.op[i]);
  }
  CHECK(one.t.stats.count(Stat::gpu_event_unlinked) == 0);
  CHECK(one.t.stats.count(Stat::flow_unbound) == 0);
  CHECK(one.t.events.partner == four.t.events.partner);
  CHECK(one.t.events.parent == four.t.events.parent);
  CHECK(one.t.events.step == four.t.events.step);
  CHECK(one.t.events.kind == four.t.events.kind);
  CHECK(one.t.flows.event == four.t.flows.event);
}

}  // namespace
}  // namespace hta
