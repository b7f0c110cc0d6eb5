// A Kineto JSON trace (as `hta-fast slice` writes one) rewritten as a Perfetto protobuf
// trace that read_pftrace (pftrace_reader.h) loads back to the same tables: the inverse of
// the field mappings in pftrace_reader.cc, pftrace_tracks.cc and pftrace_annotation.cc.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace hta {

struct PftraceWritten {
  std::string bytes;  // the serialized perfetto.protos.Trace
  // What the protobuf trace cannot carry, by reason, with the number of events left out.
  std::map<std::string, int64_t> left_out;
};

// Parses `json` (a Chrome-trace object with traceEvents, or a bare array of events) and
// writes it as Perfetto TracePackets. Throws FormatError on text that is not such JSON.
PftraceWritten json_to_pftrace(std::string_view json);

}  // namespace hta
