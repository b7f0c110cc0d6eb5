// Reads a whole trace from a ByteSource: finds the traceEvents array, splits it into
// chunks at event boundaries, parses the chunks in parallel and keeps the header text.
#pragma once
#include <string>

#include "io/byte_source.h"
#include "parse/event_parser.h"
#include "trace/trace_columns.h"

namespace hta {

struct ReadOptions {
  ParseOptions parse;
  int threads = 0;  // 0 = one per core
  // Bytes of JSON per parsed chunk; 0 picks one. simdjson keeps ~5 bytes of index per byte
  // of its largest document for each parser, so mapped files use 512 KiB chunks (~2.5 MiB
  // per thread; they parse no slower), and so do streams read on one thread, which inflate
  // straight into the chunk (a chunk and its index then stay in a core's 2 MiB L2 here:
  // 1.03x less CPU than 1 MiB, the peak up to 1.2 MB lower). Streams on more threads use 1 MiB:
  // each of their chunks is copied out of the decompressed blocks, and fewer, larger copies cost
  // less.
  size_t chunk_size = 0;
};

struct ReadResult {
  TraceColumns columns;
  std::string header_json;    // the top-level members other than traceEvents, as one object
  uint64_t json_bytes = 0;    // decompressed size
  bool array_format = false;  // the file was a bare array of events
  double parse_seconds = 0;   // summed over parser threads
  double merge_seconds = 0;
  uint64_t on_demand_chunks = 0;  // chunks read (partly) by On-Demand, not the walker
  uint64_t mapped_parts = 0;      // parts a mapped file was read in (0: not mapped)
  double read_seconds = 0;        // the whole read, wall clock
  double link_seconds = 0;
};

// Throws FormatError for a broken file.
void read_trace(ByteSource& source, const ReadOptions& options, ReadResult& result);

}  // namespace hta
