#include "parse/event_store.h"

#include <algorithm>
#include <cstddef>

#include "parse/cbid_names.h"
#include "trace/row_limit.h"

namespace hta {

void EventStore::note_lenient_reads(const RawEvent& ev, uint64_t offset, std::string_view text) {
  if (ev.bad_arg) out_.stats.add(Stat::bad_arg, offset, text);
}

int32_t EventStore::call_name(const RawEvent& ev) {
  auto& pool = out_.strings;
  if (ev.name < 0 || ev.cat < 0 || ev.args.cbid < 0 || !is_unnamed_call(pool.at(ev.name))) {
    return ev.name;
  }
  const auto domain = call_domain(pool.at(ev.cat));
  const std::string_view name = domain ? cuda_call_name(*domain, ev.args.cbid) : "";
  return name.empty() ? ev.name : pool.intern(name);
}

EventStore::~EventStore() {
  kernels_.trim();
  ops_.trim();
  // The link pass fills these; given their defaults here in bulk, not one by one in store.
  auto& e = out_.events;
  const auto first = static_cast<std::ptrdiff_t>(events_.trim());
  std::fill(e.kind.begin() + first, e.kind.end(), 0);
  std::fill(e.kernel_class.begin() + first, e.kernel_class.end(), 0);
  std::fill(e.partner.begin() + first, e.partner.end(), -1);
  std::fill(e.parent.begin() + first, e.parent.end(), -1);
  std::fill(e.step.begin() + first, e.step.end(), -1);
}

void EventStore::store(RawEvent& ev, uint64_t offset, const char* where, EventEnd& end) {
  auto example = [&] { return snippet(where, end.at(where)); };
  if (ev.bad_arg) note_lenient_reads(ev, offset, example());
  if (ev.ph == 0) return out_.stats.add(Stat::missing_phase, offset, example());
  if (ev.ph == 'M') return store_meta(ev);
  if (!ev.has_ts) {
    counter_values_.clear();
    return out_.stats.add(Stat::missing_timestamp, offset, example());
  }
  switch (ev.ph) {
    case 'X':
      return store_complete(ev, offset, where, end);
    case 's':
    case 'f':
    case 't':
      return store_flow(ev);
    case 'C':
      return store_counter(ev);
    case 'i':
    case 'I':
      return store_instant(ev);
    default:
      out_.stats.add(Stat::unsupported_phase, offset, example());
  }
}

inline void EventStore::store_meta(RawEvent& ev) {
  ev.args.touch(ArgValues::kMeta);
  auto& m = out_.meta;
  m.name.push_back(ev.name);
  m.pid.push_back(ev.pid);
  m.tid.push_back(ev.tid);
  m.value.push_back(ev.args.meta_value);
  m.sort_index.push_back(ev.args.sort_index);
}

// Inlined into store: a call per complete event cost about a fifth more instructions there.
[[gnu::always_inline]] inline void EventStore::store_complete(RawEvent& ev, uint64_t offset,
                                                              const char* where, EventEnd& end) {
  auto example = [&] { return snippet(where, end.at(where)); };
  if (!ev.has_dur) out_.stats.add(Stat::missing_duration, offset, example());
  if (ev.dur < 0) {
    out_.stats.add(Stat::negative_duration, offset, example());
    ev.dur = 0;
  }
  auto& e = out_.events;
  check_event_rows(events_.rows() + 1);
  const size_t i = events_.add();
  const auto row = static_cast<EventRow>(i);
  const ArgValues& a = ev.args;
  e.ts[i] = ev.ts;
  e.dur[i] = ev.dur;
  e.name[i] = ev.name;
  if (a.groups & ArgValues::kCall) {
    e.name[i] = call_name(ev);
    if (e.name[i] != ev.name) out_.stats.add(Stat::name_from_cbid, offset, example());
  }
  e.cat[i] = ev.cat;
  e.pid[i] = ev.pid;
  e.tid[i] = ev.tid;
  e.device[i] = a.device;
  e.stream[i] = a.stream;
  e.correlation[i] = a.correlation;
  e.external_id[i] = a.external_id;
  if (a.groups & ArgValues::kKernel) store_kernel_args(row, a);
  if (a.groups & ArgValues::kOp) store_op_args(row, a);
  if (a.groups & ArgValues::kComm) store_comm_args(row, a);
  if (a.groups & ArgValues::kSync) store_sync_args(row, a);
}

inline void EventStore::store_kernel_args(EventRow row, const ArgValues& a) {
  auto& k = out_.kernel_args;
  const size_t j = kernels_.add();
  k.row[j] = row;
  k.queued[j] = a.queued;
  k.context[j] = a.context;
  k.grid_x[j] = a.grid[0];
  k.grid_y[j] = a.grid[1];
  k.grid_z[j] = a.grid[2];
  k.block_x[j] = a.block[0];
  k.block_y[j] = a.block[1];
  k.block_z[j] = a.block[2];
  k.registers_per_thread[j] = a.registers;
  k.shared_memory[j] = a.shared_memory;
  k.blocks_per_sm[j] = a.blocks_per_sm;
  k.warps_per_sm[j] = a.warps_per_sm;
  k.est_achieved_occupancy[j] = a.occupancy;
  k.bytes[j] = a.bytes;
  k.memory_bandwidth_gbps[j] = a.bandwidth;
  k.launched_kernel[j] = a.launched_kernel;
  k.hsa_queue[j] = a.hsa_queue;
}

inline void EventStore::store_op_args(EventRow row, const ArgValues& a) {
  auto& o = out_.op_args;
  const size_t j = ops_.add();
  o.row[j] = row;
  o.record_function_id[j] = a.record_function_id;
  o.sequence_number[j] = a.sequence_number;
  o.fwd_thread_id[j] = a.fwd_thread_id;
  o.ev_idx[j] = a.ev_idx;
  o.input_dims[j] = a.input_dims;
  o.input_type[j] = a.input_type;
  o.input_strides[j] = a.input_strides;
  o.concrete_inputs[j] = a.concrete_inputs;
}

inline void EventStore::store_comm_args(EventRow row, const ArgValues& a) {
  auto& c = out_.comm_args;
  c.row.push_back(row);
  c.collective_name.push_back(a.collective_name);
  c.in_msg_nelems.push_back(a.in_nelems);
  c.out_msg_nelems.push_back(a.out_nelems);
  c.dtype.push_back(a.dtype);
  c.group_size.push_back(a.group_size);
  c.process_group_name.push_back(a.pg_name);
  c.process_group_desc.push_back(a.pg_desc);
  c.process_group_ranks.push_back(a.pg_ranks);
  c.in_split_size.push_back(a.in_split);
  c.out_split_size.push_back(a.out_split);
  c.rank.push_back(a.rank);
  c.seq.push_back(a.seq);
  c.comms_id.push_back(a.comms_id);
}

inline void EventStore::store_sync_args(EventRow row, const ArgValues& a) {
  auto& s = out_.sync_args;
  s.row.push_back(row);
  s.wait_on_stream.push_back(a.wait_on_stream);
  s.wait_on_event_correlation.push_back(a.wait_on_event_correlation);
}

inline void EventStore::store_flow(const RawEvent& ev) {
  auto& f = out_.flows;
  f.ts.push_back(ev.ts);
  f.pid.push_back(ev.pid);
  f.tid.push_back(ev.tid);
  f.id.push_back(ev.id);
  f.phase.push_back(static_cast<uint8_t>(ev.ph));
  f.binds_enclosing.push_back(ev.binds_enclosing);
  f.cat.push_back(ev.cat);
  f.name.push_back(ev.name);
  f.event.push_back(-1);
}

inline void EventStore::store_counter(const RawEvent& ev) {
  auto& c = out_.counters;
  for (auto [series, value] : counter_values_) {
    c.ts.push_back(ev.ts);
    c.pid.push_back(ev.pid);
    c.tid.push_back(ev.tid);
    c.name.push_back(ev.name);
    c.series.push_back(series);
    c.value.push_back(value);
  }
  counter_values_.clear();
  if (non_numeric_counters_) out_.stats.add(Stat::counter_non_numeric, non_numeric_counters_);
  non_numeric_counters_ = 0;
}

inline void EventStore::store_instant(RawEvent& ev) {
  ev.args.touch(ArgValues::kMemory);
  auto& i = out_.instants;
  const ArgValues& a = ev.args;
  i.ts.push_back(ev.ts);
  i.pid.push_back(ev.pid);
  i.tid.push_back(ev.tid);
  i.name.push_back(ev.name);
  i.cat.push_back(ev.cat);
  i.scope.push_back(static_cast<uint8_t>(ev.scope));
  i.bytes.push_back(a.mem_bytes);
  i.total_allocated.push_back(a.total_allocated);
  i.total_reserved.push_back(a.total_reserved);
  i.addr.push_back(a.addr);
  i.device_type.push_back(a.device_type);
  i.device_id.push_back(a.device_id);
}

}  // namespace hta
