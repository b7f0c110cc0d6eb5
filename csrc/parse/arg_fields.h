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

template <class Value>
void read_arg(ArgKey key, Value& v, ArgValues& a) {
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
      a.touch(G::kKernel);
      a.queued = v.int32();
      return;
    case ArgKey::kContext:
      a.touch(G::kKernel);
      a.context = v.int32();
      return;
    case ArgKey::kGrid:
      return read_dim3(v, a, a.grid);
    case ArgKey::kBlock:
      return read_dim3(v, a, a.block);
    case ArgKey::kRegisters:
      a.touch(G::kKernel);
      a.registers = v.int32();
      return;
    case ArgKey::kSharedMemory:
      a.touch(G::kKernel);
      a.shared_memory = v.int32();
      return;
    case ArgKey::kBlocksPerSm:
      a.touch(G::kKernel);
      a.blocks_per_sm = float(v.float64());
      return;
    case ArgKey::kWarpsPerSm:
      a.touch(G::kKernel);
      a.warps_per_sm = float(v.float64());
      return;
    case ArgKey::kOccupancy:
      a.touch(G::kKernel);
      a.occupancy = float(v.float64());
      return;
    case ArgKey::kBytes:
      a.touch(G::kKernel);
      a.bytes = v.int64();
      return;
    case ArgKey::kBandwidth:
      a.touch(G::kKernel);
      a.bandwidth = v.float64();
      return;
    case ArgKey::kHsaQueue:
      a.touch(G::kKernel);
      a.hsa_queue = v.int64();
      return;
    case ArgKey::kLaunchedKernel:
      a.touch(G::kKernel);
      a.launched_kernel = v.string();
      return;
    case ArgKey::kRecordFunctionId:
      a.touch(G::kOp);
      a.record_function_id = v.int64();
      return;
    case ArgKey::kSequenceNumber:
      a.touch(G::kOp);
      a.sequence_number = v.int64();
      return;
    case ArgKey::kFwdThreadId:
      a.touch(G::kOp);
      a.fwd_thread_id = v.int64();
      return;
    case ArgKey::kEvIdx:
      a.touch(G::kOp);
      a.ev_idx = v.int64();
      return;
    case ArgKey::kInputDims:
      a.touch(G::kOp);
      a.input_dims = v.raw_json();
      return;
    case ArgKey::kInputType:
      a.touch(G::kOp);
      a.input_type = v.raw_json();
      return;
    case ArgKey::kInputStrides:
      a.touch(G::kOp);
      a.input_strides = v.raw_json();
      return;
    case ArgKey::kConcreteInputs:
      a.touch(G::kOp);
      a.concrete_inputs = v.raw_json();
      return;
    case ArgKey::kCollectiveName:
      a.touch(G::kComm);
      a.collective_name = v.string();
      return;
    case ArgKey::kInMsgNelems:
      a.touch(G::kComm);
      a.in_nelems = v.int64();
      return;
    case ArgKey::kOutMsgNelems:
      a.touch(G::kComm);
      a.out_nelems = v.int64();
      return;
    case ArgKey::kDtype:
      a.touch(G::kComm);
      a.dtype = v.raw_json();
      return;
    case ArgKey::kGroupSize:
      a.touch(G::kComm);
      a.group_size = v.int32();
      return;
    case ArgKey::kPgName:
      a.touch(G::kComm);
      a.pg_name = v.raw_json();
      return;
    case ArgKey::kPgDesc:
      a.touch(G::kComm);
      a.pg_desc = v.raw_json();
      return;
    case ArgKey::kPgRanks:
      a.touch(G::kComm);
      a.pg_ranks = v.raw_json();
      return;
    case ArgKey::kInSplitSize:
      a.touch(G::kComm);
      a.in_split = v.raw_json();
      return;
    case ArgKey::kOutSplitSize:
      a.touch(G::kComm);
      a.out_split = v.raw_json();
      return;
    case ArgKey::kRank:
      a.touch(G::kComm);
      a.rank = v.int32();
      return;
    case ArgKey::kSeq:
      a.touch(G::kComm);
      a.seq = v.int64();
      return;
    case ArgKey::kCommsId:  // a uint64 hash, kept as its text: compared, never computed on
      a.touch(G::kComm);
      a.comms_id = v.raw_json();
      return;
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
      a.touch(G::kMemory);
      a.mem_bytes = v.int64();
      return;
    case ArgKey::kMemTotalAllocated:
      a.touch(G::kMemory);
      a.total_allocated = v.int64();
      return;
    case ArgKey::kMemTotalReserved:
      a.touch(G::kMemory);
      a.total_reserved = v.int64();
      return;
    case ArgKey::kMemAddr:
      a.touch(G::kMemory);
      a.addr = v.int64();
      return;
    case ArgKey::kMemDeviceType:
      a.touch(G::kMemory);
      a.device_type = v.int32();
      return;
    case ArgKey::kMemDeviceId:
      a.touch(G::kMemory);
      a.device_id = v.int32();
      return;
  }
}

}  // namespace hta
