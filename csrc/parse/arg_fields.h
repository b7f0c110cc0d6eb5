// Which column each promoted argument fills, written once for both event readers. `Value`
// reads one argument's value: int64(), int32(), float64(), string() and raw_json() (pool
// ids), stream(), and dim3(int32_t (&)[3]) (false for a value that is not an array).
#pragma once
#include <algorithm>

#include "parse/arg_keys.h"
#include "parse/raw_event.h"

namespace hta {

// grid/block of a kernel: [x, y, z]. Other events reuse the names for other things
// (Triton's "grid": "grid(100,)"), which are not kernel arguments.
template <class Value>
void read_dim3(Value& v, ArgValues& a, int32_t (&field)[3]) {
  int32_t dims[3] = {-1, -1, -1};
  if (!v.dim3(dims)) return;
  a.touch(ArgValues::kKernel);
  std::copy(dims, dims + 3, field);
}

// An argument of a kernel, a memcpy or a memset (group kKernel). read_arg calls it with
// those keys only.
template <class Value>
void read_kernel_arg(ArgKey key, Value& v, ArgValues& a) {
  // grid and block join the group only when they are kernel dimensions (read_dim3).
  if (key == ArgKey::kGrid) return read_dim3(v, a, a.grid);
  if (key == ArgKey::kBlock) return read_dim3(v, a, a.block);
  a.touch(ArgValues::kKernel);
  switch (key) {
    case ArgKey::kQueued:
      a.queued = v.int32();
      return;
    case ArgKey::kContext:
      a.context = v.int32();
      return;
    case ArgKey::kRegisters:
      a.registers = v.int32();
      return;
    case ArgKey::kSharedMemory:
      a.shared_memory = v.int32();
      return;
    case ArgKey::kBlocksPerSm:
      a.blocks_per_sm = float(v.float64());
      return;
    case ArgKey::kWarpsPerSm:
      a.warps_per_sm = float(v.float64());
      return;
    case ArgKey::kOccupancy:
      a.occupancy = float(v.float64());
      return;
    case ArgKey::kBytes:
      a.bytes = v.int64();
      return;
    case ArgKey::kBandwidth:
      a.bandwidth = v.float64();
      return;
    case ArgKey::kHsaQueue:
      a.hsa_queue = v.int64();
      return;
    case ArgKey::kLaunchedKernel:
      a.launched_kernel = v.string();
      return;
    default:
      return;
  }
}

// An argument of a CPU operator (group kOp). read_arg calls it with those keys only.
template <class Value>
void read_op_arg(ArgKey key, Value& v, ArgValues& a) {
  a.touch(ArgValues::kOp);
  switch (key) {
    case ArgKey::kRecordFunctionId:
      a.record_function_id = v.int64();
      return;
    case ArgKey::kSequenceNumber:
      a.sequence_number = v.int64();
      return;
    case ArgKey::kFwdThreadId:
      a.fwd_thread_id = v.int64();
      return;
    case ArgKey::kEvIdx:
      a.ev_idx = v.int64();
      return;
    case ArgKey::kInputDims:
      a.input_dims = v.raw_json();
      return;
    case ArgKey::kInputType:
      a.input_type = v.raw_json();
      return;
    case ArgKey::kInputStrides:
      a.input_strides = v.raw_json();
      return;
    case ArgKey::kConcreteInputs:
      a.concrete_inputs = v.raw_json();
      return;
    default:
      return;
  }
}

// An argument of a collective (group kComm). read_arg calls it with those keys only.
template <class Value>
void read_comm_arg(ArgKey key, Value& v, ArgValues& a) {
  a.touch(ArgValues::kComm);
  switch (key) {
    case ArgKey::kCollectiveName:
      a.collective_name = v.string();
      return;
    case ArgKey::kInMsgNelems:
      a.in_nelems = v.int64();
      return;
    case ArgKey::kOutMsgNelems:
      a.out_nelems = v.int64();
      return;
    case ArgKey::kDtype:
      a.dtype = v.raw_json();
      return;
    case ArgKey::kGroupSize:
      a.group_size = v.int32();
      return;
    case ArgKey::kPgName:
      a.pg_name = v.raw_json();
      return;
    case ArgKey::kPgDesc:
      a.pg_desc = v.raw_json();
      return;
    case ArgKey::kPgRanks:
      a.pg_ranks = v.raw_json();
      return;
    case ArgKey::kInSplitSize:
      a.in_split = v.raw_json();
      return;
    case ArgKey::kOutSplitSize:
      a.out_split = v.raw_json();
      return;
    case ArgKey::kRank:
      a.rank = v.int32();
      return;
    case ArgKey::kSeq:
      a.seq = v.int64();
      return;
    case ArgKey::kCommsId:  // a uint64 hash, kept as its text: compared, never computed on
      a.comms_id = v.raw_json();
      return;
    default:
      return;
  }
}

// An argument of an allocator instant (group kMemory). read_arg calls it with those keys
// only.
template <class Value>
void read_memory_arg(ArgKey key, Value& v, ArgValues& a) {
  a.touch(ArgValues::kMemory);
  switch (key) {
    case ArgKey::kMemBytes:
      a.mem_bytes = v.int64();
      return;
    case ArgKey::kMemTotalAllocated:
      a.total_allocated = v.int64();
      return;
    case ArgKey::kMemTotalReserved:
      a.total_reserved = v.int64();
      return;
    case ArgKey::kMemAddr:
      a.addr = v.int64();
      return;
    case ArgKey::kMemDeviceType:
      a.device_type = v.int32();
      return;
    case ArgKey::kMemDeviceId:
      a.device_id = v.int32();
      return;
    default:
      return;
  }
}

// Reads one argument into its field: the fields of every GPU event here, the groups of
// many keys in a function each. Out of line: inlined into the readers' member loops, it made
// them run more instructions per argument.
template <class Value>
[[gnu::noinline]] void read_arg(ArgKey key, Value& v, ArgValues& a) {
  using G = ArgValues;
  switch (key) {
    case ArgKey::kUnknown:
      return;
    case ArgKey::kCorrelation:
      a.correlation = v.int64();
      return;
    case ArgKey::kExternalId:
      a.external_id = v.int64();
      return;
    case ArgKey::kDevice:
      a.device = v.int32();
      return;
    case ArgKey::kStream:
      a.stream = v.stream();
      return;
    case ArgKey::kQueued:
    case ArgKey::kContext:
    case ArgKey::kGrid:
    case ArgKey::kBlock:
    case ArgKey::kRegisters:
    case ArgKey::kSharedMemory:
    case ArgKey::kBlocksPerSm:
    case ArgKey::kWarpsPerSm:
    case ArgKey::kOccupancy:
    case ArgKey::kBytes:
    case ArgKey::kBandwidth:
    case ArgKey::kLaunchedKernel:
    case ArgKey::kHsaQueue:
      return read_kernel_arg(key, v, a);
    case ArgKey::kRecordFunctionId:
    case ArgKey::kSequenceNumber:
    case ArgKey::kFwdThreadId:
    case ArgKey::kEvIdx:
    case ArgKey::kInputDims:
    case ArgKey::kInputType:
    case ArgKey::kInputStrides:
    case ArgKey::kConcreteInputs:
      return read_op_arg(key, v, a);
    case ArgKey::kCollectiveName:
    case ArgKey::kInMsgNelems:
    case ArgKey::kOutMsgNelems:
    case ArgKey::kDtype:
    case ArgKey::kGroupSize:
    case ArgKey::kPgName:
    case ArgKey::kPgDesc:
    case ArgKey::kPgRanks:
    case ArgKey::kInSplitSize:
    case ArgKey::kOutSplitSize:
    case ArgKey::kRank:
    case ArgKey::kSeq:
    case ArgKey::kCommsId:
      return read_comm_arg(key, v, a);
    case ArgKey::kCbid:
      a.touch(G::kCall);
      a.cbid = v.int64();
      return;
    case ArgKey::kWaitOnStream:
      a.touch(G::kSync);
      a.wait_on_stream = v.int32();
      return;
    case ArgKey::kWaitOnEventCorrelation:
      a.touch(G::kSync);
      a.wait_on_event_correlation = v.int64();
      return;
    case ArgKey::kMetaName:
    case ArgKey::kMetaLabels:
      a.touch(G::kMeta);
      a.meta_value = v.raw_json();
      return;
    case ArgKey::kMetaSortIndex:
      a.touch(G::kMeta);
      a.sort_index = v.int64();
      return;
    case ArgKey::kMemBytes:
    case ArgKey::kMemTotalAllocated:
    case ArgKey::kMemTotalReserved:
    case ArgKey::kMemAddr:
    case ArgKey::kMemDeviceType:
    case ArgKey::kMemDeviceId:
      return read_memory_arg(key, v, a);
  }
}

}  // namespace hta
