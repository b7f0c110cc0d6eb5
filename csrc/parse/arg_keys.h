// The keys the loader reads, of an event and of its args, matched without hashing: a switch
// on the length, then one comparison.
#pragma once
#include <cstdint>
#include <string_view>

namespace hta {

// The members of an event the loader reads; the rest are skipped.
enum class EventKey : uint8_t {
  kOther,
  kPh,
  kTs,
  kId,
  kBp,
  kCat,
  kPid,
  kTid,
  kDur,
  kName,
  kArgs,
  kScope
};

inline EventKey event_key(std::string_view k) {
  switch (k.size()) {
    case 1:
      if (k == "s") return EventKey::kScope;
      break;
    case 2:
      if (k == "ph") return EventKey::kPh;
      if (k == "ts") return EventKey::kTs;
      if (k == "id") return EventKey::kId;
      if (k == "bp") return EventKey::kBp;
      break;
    case 3:
      if (k == "cat") return EventKey::kCat;
      if (k == "pid") return EventKey::kPid;
      if (k == "tid") return EventKey::kTid;
      if (k == "dur") return EventKey::kDur;
      break;
    case 4:
      if (k == "name") return EventKey::kName;
      if (k == "args") return EventKey::kArgs;
      break;
    default:
      break;
  }
  return EventKey::kOther;
}

enum class ArgKey : uint8_t {
  kUnknown,
  // every GPU event and launch
  kCorrelation,
  kExternalId,
  kDevice,
  kStream,
  kQueued,
  kContext,
  // kernels
  kGrid,
  kBlock,
  kRegisters,
  kSharedMemory,
  kBlocksPerSm,
  kWarpsPerSm,
  kOccupancy,
  // memcpy / memset
  kBytes,
  kBandwidth,
  kLaunchedKernel,
  kHsaQueue,  // ROCm: the HSA queue of a kernel or copy (kineto #1425, June 2026)
  // CPU ops
  kRecordFunctionId,
  kSequenceNumber,
  kFwdThreadId,
  kEvIdx,
  kInputDims,
  kInputType,
  kInputStrides,
  kConcreteInputs,
  // collectives
  kCollectiveName,
  kInMsgNelems,
  kOutMsgNelems,
  kDtype,
  kGroupSize,
  kPgName,
  kPgDesc,
  kPgRanks,
  kInSplitSize,
  kOutSplitSize,
  kRank,
  kSeq,
  kCommsId,  // a hash of the collective's group, sequence number and ranks (kineto, 2026)
  // CUDA runtime and driver calls: the CUPTI callback id, the call's one name where Kineto
  // wrote INVALID / unknown for it (cbid_names.h)
  kCbid,
  // cuda_sync
  kWaitOnStream,
  kWaitOnEventCorrelation,
  // metadata (ph M)
  kMetaName,
  kMetaLabels,
  kMetaSortIndex,
  // allocator instants ([memory])
  kMemBytes,
  kMemTotalAllocated,
  kMemTotalReserved,
  kMemAddr,
  kMemDeviceType,
  kMemDeviceId,
};

inline ArgKey arg_key(std::string_view k) {
  switch (k.size()) {
    case 3:
      if (k == "Seq") return ArgKey::kSeq;
      break;
    case 4:
      if (k == "grid") return ArgKey::kGrid;
      if (k == "Rank") return ArgKey::kRank;
      if (k == "name") return ArgKey::kMetaName;
      if (k == "cbid") return ArgKey::kCbid;
      if (k == "Addr") return ArgKey::kMemAddr;
      break;
    case 5:
      if (k == "block") return ArgKey::kBlock;
      if (k == "bytes") return ArgKey::kBytes;
      if (k == "dtype") return ArgKey::kDtype;
      if (k == "Bytes") return ArgKey::kMemBytes;
      break;
    case 6:
      if (k == "device") return ArgKey::kDevice;
      if (k == "stream") return ArgKey::kStream;
      if (k == "kernel") return ArgKey::kLaunchedKernel;
      if (k == "queued") return ArgKey::kQueued;
      if (k == "Ev Idx") return ArgKey::kEvIdx;
      if (k == "labels") return ArgKey::kMetaLabels;
      break;
    case 7:
      if (k == "context") return ArgKey::kContext;
      break;
    case 8:
      if (k == "Comms Id") return ArgKey::kCommsId;
      break;
    case 9:
      if (k == "Device Id") return ArgKey::kMemDeviceId;
      if (k == "hsa_queue") return ArgKey::kHsaQueue;
      break;
    case 10:
      if (k == "Input Dims") return ArgKey::kInputDims;
      if (k == "Input type") return ArgKey::kInputType;
      if (k == "Group size") return ArgKey::kGroupSize;
      if (k == "sort_index") return ArgKey::kMetaSortIndex;
      break;
    case 11:
      if (k == "correlation") return ArgKey::kCorrelation;
      if (k == "External id") return ArgKey::kExternalId;
      if (k == "external id") return ArgKey::kExternalId;
      if (k == "Device Type") return ArgKey::kMemDeviceType;
      break;
    case 13:
      if (k == "shared memory") return ArgKey::kSharedMemory;
      if (k == "blocks per SM") return ArgKey::kBlocksPerSm;
      if (k == "Fwd thread id") return ArgKey::kFwdThreadId;
      if (k == "Input Strides") return ArgKey::kInputStrides;
      if (k == "In msg nelems") return ArgKey::kInMsgNelems;
      if (k == "In split size") return ArgKey::kInSplitSize;
      break;
    case 12:
      if (k == "warps per SM") return ArgKey::kWarpsPerSm;
      break;
    case 14:
      if (k == "Out msg nelems") return ArgKey::kOutMsgNelems;
      if (k == "Out split size") return ArgKey::kOutSplitSize;
      if (k == "wait_on_stream") return ArgKey::kWaitOnStream;
      if (k == "Total Reserved") return ArgKey::kMemTotalReserved;
      break;
    case 15:
      if (k == "Sequence number") return ArgKey::kSequenceNumber;
      if (k == "Concrete Inputs") return ArgKey::kConcreteInputs;
      if (k == "Collective name") return ArgKey::kCollectiveName;
      if (k == "Total Allocated") return ArgKey::kMemTotalAllocated;
      break;
    case 18:
      if (k == "Record function id") return ArgKey::kRecordFunctionId;
      if (k == "Process Group Name") return ArgKey::kPgName;
      break;
    case 19:
      if (k == "Process Group Ranks") return ArgKey::kPgRanks;
      break;
    case 20:
      if (k == "registers per thread") return ArgKey::kRegisters;
      break;
    case 23:
      if (k == "memory bandwidth (GB/s)") return ArgKey::kBandwidth;
      break;
    case 25:
      if (k == "est. achieved occupancy %") return ArgKey::kOccupancy;
      if (k == "Process Group Description") return ArgKey::kPgDesc;
      break;
    case 33:
      if (k == "wait_on_cuda_event_record_corr_id") return ArgKey::kWaitOnEventCorrelation;
      break;
    default:
      break;
  }
  return ArgKey::kUnknown;
}

}  // namespace hta
