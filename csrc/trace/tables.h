// The column tables a trace is loaded into. Each table is a struct of std::vector columns,
// declared once through an X-macro so that the parser, the merge and the Python binding all
// walk the same list. Missing values are sentinels here (-1, or NaN for floats); the binding
// turns them into Arrow nulls.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace hta {

// Leaves new elements uninitialised on resize(n), so that chunks can be copied into a
// column grown at once without writing it twice. push_back and friends are unchanged.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U> struct rebind { using other = DefaultInitAllocator<U>; };
  using std::allocator<T>::allocator;
  template <class U> void construct(U* p) { ::new (static_cast<void*>(p)) U; }
  template <class U, class... Args> void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T> using Column = std::vector<T, DefaultInitAllocator<T>>;

// Complete events (ph "X"): CPU ops, runtime calls, kernels, copies, annotations, ...
#define HTA_EVENT_COLUMNS(X)                                                          \
  X(int64_t, ts)          /* ns, absolute */                                          \
  X(int64_t, dur)         /* ns */                                                    \
  X(int32_t, name)        /* StringPool id */                                         \
  X(int32_t, cat)         /* StringPool id */                                         \
  X(int64_t, pid)         /* string pids: kStringIdBase - pool id */                  \
  X(int64_t, tid)                                                                     \
  X(uint8_t, kind)        /* EventKind, set by the link pass */                       \
  X(uint8_t, kernel_class) /* KernelClass, set by the link pass */                    \
  X(int32_t, device)                                                                  \
  X(int32_t, stream)                                                                  \
  X(int64_t, correlation)                                                             \
  X(int64_t, external_id)                                                             \
  X(int64_t, partner)     /* row of the linked launch / first GPU event */            \
  X(int64_t, parent)      /* row of the enclosing CPU event on the same thread */     \
  X(int32_t, step)        /* profiler step number */

// Arguments of GPU events (kernels, memcpy, memset); one row per GPU event that has any.
#define HTA_KERNEL_ARG_COLUMNS(X)                                                     \
  X(int64_t, row) X(int32_t, queued) X(int32_t, context)                              \
  X(int32_t, grid_x) X(int32_t, grid_y) X(int32_t, grid_z)                            \
  X(int32_t, block_x) X(int32_t, block_y) X(int32_t, block_z)                         \
  X(int32_t, registers_per_thread) X(int32_t, shared_memory)                          \
  X(float, blocks_per_sm) X(float, warps_per_sm) X(float, est_achieved_occupancy)     \
  X(int64_t, bytes) X(double, memory_bandwidth_gbps)

// Arguments of CPU operators (record_shapes and friends).
#define HTA_OP_ARG_COLUMNS(X)                                                         \
  X(int64_t, row) X(int64_t, record_function_id) X(int64_t, sequence_number)          \
  X(int64_t, fwd_thread_id) X(int64_t, ev_idx)                                        \
  X(int32_t, input_dims) X(int32_t, input_type) X(int32_t, input_strides)             \
  X(int32_t, concrete_inputs) /* raw JSON text, StringPool ids */

// Collective arguments (record_param_comms and, on newer traces, NCCL kernels).
#define HTA_COMM_ARG_COLUMNS(X)                                                       \
  X(int64_t, row) X(int32_t, collective_name) X(int64_t, in_msg_nelems)               \
  X(int64_t, out_msg_nelems) X(int32_t, dtype) X(int32_t, group_size)                 \
  X(int32_t, process_group_name) X(int32_t, process_group_desc)                       \
  X(int32_t, process_group_ranks) X(int32_t, in_split_size)                           \
  X(int32_t, out_split_size) X(int32_t, rank) X(int64_t, seq)

// cuda_sync events: what they wait on.
#define HTA_SYNC_ARG_COLUMNS(X)                                                       \
  X(int64_t, row) X(int32_t, wait_on_stream) X(int64_t, wait_on_event_correlation)

// Flow events (ph s/f/t): launch -> GPU event arrows (ac2g), fwd -> bwd, ...
#define HTA_FLOW_COLUMNS(X)                                                           \
  X(int64_t, ts) X(int64_t, pid) X(int64_t, tid) X(int64_t, id)                       \
  X(uint8_t, phase) /* 's', 'f' or 't' */ X(uint8_t, binds_enclosing) /* bp "e" */    \
  X(int32_t, cat) X(int32_t, name) X(int64_t, event) /* row of the bound X event */

// Counter events (ph C): one row per (event, series) value.
#define HTA_COUNTER_COLUMNS(X)                                                        \
  X(int64_t, ts) X(int64_t, pid) X(int64_t, tid) X(int32_t, name) X(int32_t, series)  \
  X(double, value)

// Instant events (ph i/I), including the allocator's [memory] events.
#define HTA_INSTANT_COLUMNS(X)                                                        \
  X(int64_t, ts) X(int64_t, pid) X(int64_t, tid) X(int32_t, name) X(int32_t, cat)     \
  X(uint8_t, scope) X(int64_t, bytes) X(int64_t, total_allocated)                     \
  X(int64_t, total_reserved) X(int64_t, addr) X(int32_t, device_type)                 \
  X(int32_t, device_id)

// Metadata events (ph M): process and thread names, labels and sort indices.
#define HTA_META_COLUMNS(X)                                                           \
  X(int32_t, name) X(int64_t, pid) X(int64_t, tid) X(int32_t, value)                  \
  X(int64_t, sort_index)

// Profiler steps (CPU events named ProfilerStep#N), filled by the link pass.
#define HTA_STEP_COLUMNS(X)                                                           \
  X(int64_t, row) X(int32_t, step) X(int64_t, ts) X(int64_t, dur)

#define HTA_DECLARE_COLUMN(type, col) Column<type> col;
#define HTA_VISIT_COLUMN(type, col) f(#col, col);

#define HTA_DEFINE_TABLE(Name, COLUMNS, first)                                        \
  struct Name {                                                                       \
    COLUMNS(HTA_DECLARE_COLUMN)                                                       \
    template <class F> void for_each_column(F&& f) { COLUMNS(HTA_VISIT_COLUMN) }      \
    size_t size() const { return first.size(); }                                      \
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

// String pids/tids ("Spans", "stream 7", "") are stored as kStringIdBase - (pool id), far
// below any real (possibly negative) pid, so they stay distinct and stable.
constexpr int64_t kStringIdBase = -(int64_t{1} << 32);
inline bool is_string_id(int64_t v) { return v <= kStringIdBase; }

template <class T> constexpr T missing() { return T(-1); }
template <> constexpr float missing<float>() { return NAN; }
template <> constexpr double missing<double>() { return NAN; }

}  // namespace hta
