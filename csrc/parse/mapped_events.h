// The events of a plain file, parsed in place in its private mapping (io/mapped_file.h), in
// contiguous parts: one per thread, each read chunk after chunk by its own thread into its
// own columns (the first part straight into the trace's), joined once at the end in file
// order. String ids and rows so come out as a one-thread read gives them, and no thread
// waits for another until the join.
//
// Chunks and parts end at speculative `},{` boundaries: the ',' becomes the chunk's ']' and
// the byte before the next '{' its '[' (when there is no whitespace between them, the ',' is
// the next chunk's '[' and the chunk before is copied out to get its ']').
#pragma once
#include <cstdint>

#include "io/mapped_file.h"
#include "parse/event_parser.h"

namespace hta {

struct MappedEvents {
  uint64_t rest = 0;         // offset of the first event not read (its '{'), for the caller
  uint64_t events_end = 0;   // offset just past the last event read
  ChunkError error;          // the first failure, in file order
  double parse_seconds = 0;  // summed over the parts' threads
  double merge_seconds = 0;  // joining the parts
  uint64_t on_demand_chunks = 0;
  uint64_t parts = 0;  // the parts read (0 when nothing was)
};

// Reads the events from `begin` (map.data()[begin - 1] is the traceEvents '[') to a boundary
// 32 KiB or more (two chunks, for smaller chunks) before the end of the file, and appends
// them to `out`; the rest (the array's end and the header after it) is left to a reader that
// scans it exactly. Reads nothing (rest == begin) when the file is too small or no boundary
// is found there.
MappedEvents read_mapped_events(MappedFile& map, uint64_t begin, int threads, size_t chunk,
                                const ParseOptions& options, TraceColumns& out);

}  // namespace hta
