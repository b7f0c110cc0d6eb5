// Parses chunks one after another on the calling thread, straight into one TraceColumns,
// sizing the columns ahead so that they are not regrown (and copied) as the input goes on:
// from the first chunk's rows for the bytes expected, then, as the rows per byte so far
// show, for tables the first chunk lacked (GPU kernels come after the CPU side); and backing
// the next chunk's rows with pages before they are written (trace/pages_ahead.h).
#pragma once
#include <cstdint>
#include <vector>

#include "parse/event_parser.h"
#include "trace/pages_ahead.h"

namespace hta {

class SequentialParser {
 public:
  // Parses with `parser` (one per thread, reused: it keeps its buffers and learned
  // layouts). `origin`: the file offset where this input starts; `expected_bytes`: how many
  // bytes of it are to come (0 if not known), both only to size the columns.
  SequentialParser(EventParser& parser, TraceColumns& out, uint64_t origin,
                   uint64_t expected_bytes);

  // Parses text[0..len) ("[" + events + "]", padded), text[1] at `file_offset`, unless a
  // chunk before it failed: after a failure nothing more is read.
  const ChunkError& parse(const char* text, size_t len, uint64_t file_offset);
  const ChunkError& error() const { return error_; }
  int64_t parse_ns() const { return parse_ns_; }
  uint64_t on_demand_chunks() const { return on_demand_chunks_; }

 private:
  // Regrows the columns ahead of the rows still to come (expected_bytes_ known), `done`
  // bytes read, the last `len` of them adding `recent` rows.
  void size_ahead(const std::vector<size_t>& rows, const std::vector<size_t>& recent, size_t len,
                  uint64_t done, bool has_events);

  EventParser& parser_;
  TraceColumns& out_;
  uint64_t origin_, expected_bytes_;
  bool reserved_ = false;
  ChunkError error_;
  int64_t parse_ns_ = 0;
  uint64_t on_demand_chunks_ = 0;
  std::vector<size_t> rows_before_;  // each table's rows after the chunk before
  PagesAhead pages_ahead_;
};

}  // namespace hta
