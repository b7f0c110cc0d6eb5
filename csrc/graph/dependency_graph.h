// The dependency graph of one rank's events: the performance model's skeleton.
//
// Why: the time a step takes is decided by what waits on what (a kernel on its launch and on the
// kernel before it on its stream, a host sync on the GPU work it waits for), not by the sum of
// durations. Every event becomes two nodes (start 2i, end 2i+1) plus one source node (2n, the
// window's start); each edge carries the time that must pass between its ends and a type that
// says what that time is. docs/model.md lists the rules and the fields each one reads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/csr.h"

namespace hta::graph {

// What an edge's time is; declared once here and bound for Python by name (the binding's
// EdgeType, read by hta_fast.model.graph.dependency_graph). X(name, value):
//   release        window start -> an event with no other predecessor
//   cpu_self       start -> end of a CPU event without children: its duration
//   cpu_nest_down  parent start -> first child start
//   cpu_nest_up    last child end -> parent end
//   cpu_sibling    end -> start of the next event on the thread with the same parent
//   gpu_self       GPU event start -> end: its duration
//   launch         launch call start -> GPU event start
//   kernel_kernel  GPU event end -> start of the next one on its stream
//   cross_stream   recorded GPU work end -> first GPU event after the stream wait (or GPU
//                  work held behind another stream's, held_by)
//   sync_wait      GPU work end -> end of the blocking call that waits for it
//   sync_self      blocking call start -> end, the part that is not waiting
//   cross_thread   the event that woke a thread -> its first event's start
//   thread_join    a worker thread's last event end -> the event waiting for it
//   join_tail      the waiting event's own last stretch, the part that is not waiting
#define HTA_EDGE_TYPES(X) \
  X(release, 0)           \
  X(cpu_self, 1)          \
  X(cpu_nest_down, 2)     \
  X(cpu_nest_up, 3)       \
  X(cpu_sibling, 4)       \
  X(gpu_self, 5)          \
  X(launch, 6)            \
  X(kernel_kernel, 7)     \
  X(cross_stream, 8)      \
  X(sync_wait, 9)         \
  X(sync_self, 10)        \
  X(cross_thread, 11)     \
  X(thread_join, 12)      \
  X(join_tail, 13)

// What a CPU event waits on (sync_kind; GPU rows use none). X(name, value):
//   none         nothing
//   stream       the GPU work on wait_lane launched before it (corr < own)
//   event        the GPU work on wait_lane launched before the record (wait_corr)
//   device       the GPU work on every GPU lane launched before it
//   own_copy     a synchronous (or pageable) copy: its own GPU event, the one it launched
//   stream_wait  cudaStreamWaitEvent: GPU work on target_lane after it waits for the work
//                on wait_lane launched before the record (wait_corr)
#define HTA_SYNC_KINDS(X) \
  X(none, 0)              \
  X(stream, 1)            \
  X(event, 2)             \
  X(device, 3)            \
  X(own_copy, 4)          \
  X(stream_wait, 5)

#define HTA_GRAPH_ENUMERATOR(name, value) name = value,
enum class EdgeType : uint8_t { HTA_EDGE_TYPES(HTA_GRAPH_ENUMERATOR) };
enum class SyncKind : uint8_t { HTA_SYNC_KINDS(HTA_GRAPH_ENUMERATOR) };
#define HTA_GRAPH_COUNT(name, value) +1
constexpr int kEdgeTypes = 0 HTA_EDGE_TYPES(HTA_GRAPH_COUNT);
#undef HTA_GRAPH_COUNT
#undef HTA_GRAPH_ENUMERATOR

// Rigid edges hold a measured CPU or GPU duration; the others are waits whose length the
// calibration reads off the trace (calibrate.h).
inline bool is_rigid(EdgeType t) {
  return t == EdgeType::cpu_self || t == EdgeType::cpu_nest_down || t == EdgeType::cpu_nest_up ||
         t == EdgeType::cpu_sibling || t == EdgeType::gpu_self || t == EdgeType::release;
}

inline bool is_blocking(SyncKind k) {
  return k == SyncKind::stream || k == SyncKind::event || k == SyncKind::device ||
         k == SyncKind::own_copy;
}

// One row per event, indices local to this graph (-1: none).
struct GraphInput {
  size_t n = 0;
  const int64_t* ts = nullptr;    // ns
  const int64_t* dur = nullptr;   // ns
  const int64_t* lane = nullptr;  // thread (CPU) or stream (GPU) key; lanes never mix kinds
  const uint8_t* is_gpu = nullptr;
  const int64_t* parent = nullptr;  // CPU: enclosing CPU event
  const int64_t* launch = nullptr;  // GPU: the call that launched it
  const int64_t* corr = nullptr;    // launch order: GPU events carry their launch's correlation
  const uint8_t* sync_kind = nullptr;
  const int64_t* wait_lane = nullptr;
  const int64_t* wait_corr = nullptr;
  const int64_t* target_lane = nullptr;
  int64_t window_start = 0;  // ns: the source node's time
  // Optional, per event: the node its nodes without a predecessor are released from instead
  // of the source (-1: the source). A chain of profiler steps releases a step's nodes from
  // the step's start, so that they move with it.
  const int64_t* release_from = nullptr;
  // Optional, per event: for GPU work, the GPU event on another stream whose end it waited
  // for where no sync record says so (-1: none); inferred from the measured times
  // (hta_fast/model/graph/held_waits.py). Each becomes a cross_stream edge.
  const int64_t* held_by = nullptr;
};

struct Graph {
  size_t n_events = 0;
  std::vector<int64_t> src, dst;
  std::vector<uint8_t> type;
  std::vector<int64_t> order;  // nodes in topological order, source first
  Csr out;                     // edges by source node, kept for every replay of the graph

  void add_edge(int64_t from, int64_t to, EdgeType t) {
    src.push_back(from);
    dst.push_back(to);
    type.push_back(static_cast<uint8_t>(t));
  }
};

inline int64_t start_node(int64_t row) { return 2 * row; }
inline int64_t end_node(int64_t row) { return 2 * row + 1; }

// Edge builders, one file each; they append to g.
void add_cpu_edges(const GraphInput& in, Graph& g);
void add_gpu_edges(const GraphInput& in, Graph& g);
void add_sync_edges(const GraphInput& in, Graph& g);
void add_thread_edges(const GraphInput& in, Graph& g);

// All of the above, then release edges for nodes left without a predecessor and the
// topological order. Throws std::runtime_error when the edges form a cycle.
Graph build_graph(const GraphInput& in);

// Measured time of every node: ts, ts + dur, and window_start for the source.
std::vector<int64_t> measured_times(const GraphInput& in);

}  // namespace hta::graph
