// Reads a Perfetto protobuf trace (protos/perfetto/trace/trace.proto: a stream of
// TracePacket messages, each field 1 of Trace) into the same columns as the JSON reader,
// through the same EventStore: a packet at a time from the ByteSource, so a gzip-compressed
// file is inflated as it is read and never held whole.
#pragma once
#include "io/byte_source.h"
#include "parse/trace_reader.h"

namespace hta {

// True when the source's first bytes are a Trace's first packet rather than JSON; the
// source is rewound either way.
bool is_pftrace(ByteSource& source);

// Throws FormatError for a broken file: a packet that is not valid protobuf, or a stream
// cut short inside a packet (recover=True keeps the packets before the cut).
void read_pftrace(ByteSource& source, const ReadOptions& options, ReadResult& result);

}  // namespace hta
