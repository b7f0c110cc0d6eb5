// Parses one chunk of the traceEvents array ("[" + complete events + "]", padded) into
// columns: the index walker (parse/event_walker.h) where it can, simdjson On-Demand where it
// cannot. One EventParser per thread, reused across chunks.
#pragma once
#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parse/member_layout.h"
#include "parse/recent_strings.h"
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
  // The On-Demand reader read some or all of the chunk's events (not an error).
  bool on_demand = false;
};

class EventParser {
 public:
  explicit EventParser(const ParseOptions& options);
  ~EventParser();

  // `text` holds `len` bytes of JSON followed by at least simdjson::SIMDJSON_PADDING
  // readable bytes. `file_offset` is the offset in the file of text[1] (text[0] is the
  // "[" the splitter adds). Appends to `out`: the walker where it can, the On-Demand reader
  // from where it cannot.
  ChunkError parse(const char* text, size_t len, uint64_t file_offset, TraceColumns& out);

 private:
  ChunkError read_on_demand(const char* text, size_t len, uint64_t file_offset, TraceColumns& out);

  ParseOptions options_;
  // HTA_FAST_WALKER=0 reads every event with On-Demand: the reference the walker is tested
  // against, and a way around it should it ever be wrong.
  bool walk_ = true;
  std::unique_ptr<simdjson::internal::dom_parser_implementation> index_;  // the walker's
  MemberLayout layout_;                                                   // the walker's
  RecentStrings recent_;                                                  // the walker's
  std::vector<char> rest_;  // the events from the one the walker stopped at
  simdjson::ondemand::parser parser_;
  Utf8Repair repair_;  // recover=True: a chunk with invalid UTF-8, repaired
};

}  // namespace hta
