// Parses one chunk of the traceEvents array ("[" + complete events + "]", padded) into
// columns with simdjson On-Demand. One EventParser per thread, reused across chunks.
#pragma once
#include <simdjson.h>

#include <cstdint>
#include <string>

#include "parse/utf8_text.h"
#include "trace/trace_columns.h"

namespace hta {

struct ParseOptions {
  // Instead of failing: skip events with a bad field, read a bad argument as missing and
  // replace invalid UTF-8 with U+FFFD (each counted in stats).
  bool recover = false;
};

struct ChunkError {
  bool failed = false;
  bool field_error = false;  // a well-formed event with a bad field (not a split problem)
  bool recoverable = false;  // recover=True would have read past it
  uint64_t offset = 0;       // in the decompressed JSON text
  std::string key;           // the field at fault ("ts", "args.bytes"), if one is
  std::string message;
};

class EventParser {
 public:
  explicit EventParser(const ParseOptions& options) : options_(options) {}

  // `text` holds `len` bytes of JSON followed by at least simdjson::SIMDJSON_PADDING
  // readable bytes. `file_offset` is the offset in the file of text[1] (text[0] is the
  // "[" the splitter adds). Appends to `out`.
  ChunkError parse(const char* text, size_t len, uint64_t file_offset, TraceColumns& out);

 private:
  ParseOptions options_;
  simdjson::ondemand::parser parser_;
  Utf8Repair repair_;  // recover=True: a chunk with invalid UTF-8, repaired
};

}  // namespace hta
