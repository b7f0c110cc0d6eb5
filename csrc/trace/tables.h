// The column tables a trace is loaded into. Each table is a struct of std::vector columns,
// declared once through an X-macro so that the parser, the merge, the Python binding and the
// Arrow schema all walk the same list. Missing values are sentinels here (-1, or NaN for
// floats); the Arrow schema turns them into nulls where the column's spec says so.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "trace/column_spec.h"
#include "trace/event_kind.h"
#include "trace/row_limit.h"

namespace hta {

// Leaves new elements uninitialised on resize(n), so that chunks can be copied into a
// column grown at once without writing it twice. push_back and friends are unchanged.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using Column = std::vector<T, DefaultInitAllocator<T>>;

// Each column is X(type, name, spec); the spec (column_spec.h) says what the column means
// for the Arrow schema, which reads it through the binding (hta_fast._core.column_specs).
// Rows of the events table are EventRows (int32, trace/row_limit.h: 2^31 events would be a
// trace of some 200 GB of JSON, and the loader refuses more).
#define HTA_ROW_IN_EVENTS row_in_events().about("row in events")

// Complete events (ph "X"): CPU ops, runtime calls, kernels, copies, annotations, ...
#define HTA_EVENT_COLUMNS(X)                                                                   \
  X(int64_t, ts,                                                                               \
    exact().in("ns").about("start, ns since the epoch (baseTimeNanoseconds applied)"))         \
  X(int64_t, dur, exact().in("ns"))                                                            \
  X(int32_t, name, string_id())                                                                \
  X(int32_t, cat, string_id())                                                                 \
  X(int64_t, pid,                                                                              \
    process_or_thread().about(                                                                 \
        "process id; string ids are -(2**32) - string index (Trace.id_name)"))                 \
  X(int64_t, tid, process_or_thread())                                                         \
  X(uint8_t, kind, enumeration(kEventKindLabels))           /* set by the link pass */         \
  X(uint8_t, kernel_class, enumeration(kKernelClassLabels)) /* set by the link pass */         \
  X(int32_t, device, plain())                                                                  \
  X(int32_t, stream, plain())                                                                  \
  X(int64_t, correlation, plain())                                                             \
  X(int64_t, external_id, plain())                                                             \
  X(EventRow, partner,                                                                         \
    row_in_events().about("row of the linked launch (GPU event) or first GPU event (launch)")) \
  X(EventRow, parent,                                                                          \
    row_in_events().about("row of the innermost enclosing CPU event on the same thread"))      \
  X(int32_t, step, plain().about("profiler step; GPU events take their launch's step"))

// Arguments of GPU events (kernels, memcpy, memset); one row per GPU event that has any.
#define HTA_KERNEL_ARG_COLUMNS(X)                                                                \
  X(EventRow, row, HTA_ROW_IN_EVENTS)                                                            \
  X(int32_t, queued, plain())                                                                    \
  X(int32_t, context, plain())                                                                   \
  X(int32_t, grid_x, plain())                                                                    \
  X(int32_t, grid_y, plain())                                                                    \
  X(int32_t, grid_z, plain())                                                                    \
  X(int32_t, block_x, plain())                                                                   \
  X(int32_t, block_y, plain())                                                                   \
  X(int32_t, block_z, plain())                                                                   \
  X(int32_t, registers_per_thread, plain())                                                      \
  X(int32_t, shared_memory, plain().in("B"))                                                     \
  X(float, blocks_per_sm, plain())                                                               \
  X(float, warps_per_sm, plain())                                                                \
  X(float, est_achieved_occupancy, plain())                                                      \
  X(int64_t, bytes, plain().in("B"))                                                             \
  X(double, memory_bandwidth_gbps, plain().in("GB/s"))                                           \
  X(int32_t, launched_kernel,                                                                    \
    string_id().about("kernel a launch call names (ROCm records it; CUDA does not)"))            \
  X(int64_t, hsa_queue,                                                                          \
    plain().about("ROCm: the HSA queue the work ran on (Kineto from June 2026, whose stream is " \
                  "then the HIP stream)"))

// Arguments of CPU operators (record_shapes and friends); the string ones hold raw JSON text.
#define HTA_OP_ARG_COLUMNS(X)             \
  X(EventRow, row, HTA_ROW_IN_EVENTS)     \
  X(int64_t, record_function_id, plain()) \
  X(int64_t, sequence_number, plain())    \
  X(int64_t, fwd_thread_id, plain())      \
  X(int64_t, ev_idx, plain())             \
  X(int32_t, input_dims, string_id())     \
  X(int32_t, input_type, string_id())     \
  X(int32_t, input_strides, string_id())  \
  X(int32_t, concrete_inputs, string_id())

// Collective arguments (record_param_comms and, on newer traces, NCCL kernels).
#define HTA_COMM_ARG_COLUMNS(X)                \
  X(EventRow, row, HTA_ROW_IN_EVENTS)          \
  X(int32_t, collective_name, string_id())     \
  X(int64_t, in_msg_nelems, plain())           \
  X(int64_t, out_msg_nelems, plain())          \
  X(int32_t, dtype, string_id())               \
  X(int32_t, group_size, plain())              \
  X(int32_t, process_group_name, string_id())  \
  X(int32_t, process_group_desc, string_id())  \
  X(int32_t, process_group_ranks, string_id()) \
  X(int32_t, in_split_size, string_id())       \
  X(int32_t, out_split_size, string_id())      \
  X(int32_t, rank, plain())                    \
  X(int64_t, seq, plain())                     \
  X(int32_t, comms_id, string_id())

// cuda_sync events: what they wait on.
#define HTA_SYNC_ARG_COLUMNS(X)       \
  X(EventRow, row, HTA_ROW_IN_EVENTS) \
  X(int32_t, wait_on_stream, plain()) \
  X(int64_t, wait_on_event_correlation, plain())

// Flow phases, stored as their character.
constexpr EnumLabel kFlowPhaseLabels[] = {{'f', "f"}, {'s', "s"}, {'t', "t"}};

// Flow events (ph s/f/t): launch -> GPU event arrows (ac2g), fwd -> bwd, ...
#define HTA_FLOW_COLUMNS(X)                         \
  X(int64_t, ts, exact().in("ns"))                  \
  X(int64_t, pid, process_or_thread())              \
  X(int64_t, tid, process_or_thread())              \
  X(int64_t, id, flow_id())                         \
  X(uint8_t, phase, enumeration(kFlowPhaseLabels))  \
  X(uint8_t, binds_enclosing, exact()) /* bp "e" */ \
  X(int32_t, cat, string_id())                      \
  X(int32_t, name, string_id())                     \
  X(EventRow, event, row_in_events().about("row in events that this flow endpoint binds to"))

// Counter events (ph C): one row per (event, series) value.
#define HTA_COUNTER_COLUMNS(X)         \
  X(int64_t, ts, exact().in("ns"))     \
  X(int64_t, pid, process_or_thread()) \
  X(int64_t, tid, process_or_thread()) \
  X(int32_t, name, string_id())        \
  X(int32_t, series, string_id())      \
  X(double, value, exact())

// Instant events (ph i/I), including the allocator's [memory] events.
#define HTA_INSTANT_COLUMNS(X)                 \
  X(int64_t, ts, exact().in("ns"))             \
  X(int64_t, pid, process_or_thread())         \
  X(int64_t, tid, process_or_thread())         \
  X(int32_t, name, string_id())                \
  X(int32_t, cat, string_id())                 \
  X(uint8_t, scope, exact())                   \
  X(int64_t, bytes, plain().in("B"))           \
  X(int64_t, total_allocated, plain().in("B")) \
  X(int64_t, total_reserved, plain().in("B"))  \
  X(int64_t, addr, plain())                    \
  X(int32_t, device_type, plain())             \
  X(int32_t, device_id, plain())

// Metadata events (ph M): process and thread names, labels and sort indices.
#define HTA_META_COLUMNS(X)            \
  X(int32_t, name, string_id())        \
  X(int64_t, pid, process_or_thread()) \
  X(int64_t, tid, process_or_thread()) \
  X(int32_t, value, string_id())       \
  X(int64_t, sort_index, plain())

// Profiler steps (CPU events named ProfilerStep#N), filled by the link pass.
#define HTA_STEP_COLUMNS(X)                                                            \
  X(EventRow, row, row_in_events().about("row in events of the ProfilerStep#N event")) \
  X(int32_t, step, plain())                                                            \
  X(int64_t, ts, exact().in("ns"))                                                     \
  X(int64_t, dur, exact().in("ns"))

#define HTA_DECLARE_COLUMN(type, col, spec) Column<type> col;
#define HTA_VISIT_COLUMN(type, col, spec) f(#col, col);
#define HTA_VISIT_COLUMN_SPEC(type, col, spec) f(#col, col, spec);
#define HTA_DESCRIBE_COLUMN(type, col, spec) f(#col, static_cast<type*>(nullptr), spec);

// for_each_column(f): f(name, column) over the columns, in order; for_each_column_spec(f)
// adds the spec; describe(f): f(name, (T*)nullptr, spec), without a table.
#define HTA_DEFINE_TABLE(Name, COLUMNS, first)                                      \
  struct Name {                                                                     \
    COLUMNS(HTA_DECLARE_COLUMN)                                                     \
    template <class F>                                                              \
    void for_each_column(F&& f) {                                                   \
      COLUMNS(HTA_VISIT_COLUMN)                                                     \
    }                                                                               \
    template <class F>                                                              \
    void for_each_column_spec(F&& f) {                                              \
      COLUMNS(HTA_VISIT_COLUMN_SPEC)                                                \
    }                                                                               \
    template <class F>                                                              \
    static void describe(F&& f){COLUMNS(HTA_DESCRIBE_COLUMN)} size_t size() const { \
      return first.size();                                                          \
    }                                                                               \
  };

HTA_DEFINE_TABLE(EventTable, HTA_EVENT_COLUMNS, ts)
HTA_DEFINE_TABLE(KernelArgTable, HTA_KERNEL_ARG_COLUMNS, row)
HTA_DEFINE_TABLE(OpArgTable, HTA_OP_ARG_COLUMNS, row)
HTA_DEFINE_TABLE(CommArgTable, HTA_COMM_ARG_COLUMNS, row)
HTA_DEFINE_TABLE(SyncArgTable, HTA_SYNC_ARG_COLUMNS, row)
HTA_DEFINE_TABLE(FlowTable, HTA_FLOW_COLUMNS, ts)
HTA_DEFINE_TABLE(CounterTable, HTA_COUNTER_COLUMNS, ts)
HTA_DEFINE_TABLE(InstantTable, HTA_INSTANT_COLUMNS, ts)
HTA_DEFINE_TABLE(MetaTable, HTA_META_COLUMNS, name)
HTA_DEFINE_TABLE(StepTable, HTA_STEP_COLUMNS, row)

// String pids/tids/flow ids ("Spans", "stream 7", "") are stored as kStringIdBase - (pool
// id), far below any real (possibly negative) pid, so they stay distinct and stable. The
// parser keeps an integer at or below kStringIdBase as its decimal text (a string id), so
// the two ranges never meet (parse/event_parser.cc, read_id).
constexpr int64_t kStringIdBase = -(int64_t{1} << 32);
inline bool is_string_id(int64_t v) { return v <= kStringIdBase; }

template <class T>
constexpr T missing() {
  return T(-1);
}
template <>
constexpr float missing<float>() {
  return NAN;
}
template <>
constexpr double missing<double>() {
  return NAN;
}

}  // namespace hta
