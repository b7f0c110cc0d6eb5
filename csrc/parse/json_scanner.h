// An exact, byte-at-a-time scanner of a trace's JSON structure. It carries string, escape
// and depth state across buffers and finds: where the traceEvents array begins, the
// boundaries between its events, where it ends, and the header text around it. It checks
// brackets and the commas between events, not the full grammar: the parser checks the
// inside of each event.
//
// The fast path (find_last_boundary) guesses boundaries without this state and lets the
// parser verify them; this scanner is the exact fallback and reads the file's two ends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/format_error.h"

namespace hta {

// The last `}` ws* `,` ws* `{` in [p, p+n) whose `{` is at or after p[from]: sets `end` just
// past the `}` and `next` at the `{`. `from` lets a caller that grows a buffer search only
// the new bytes (the `}` and `,` may lie before them). Speculative: the match may sit inside
// a string or a nested value, which makes the chunk fail to parse, and the loader then falls
// back to JsonScanner.
bool find_last_boundary(const char* p, size_t n, size_t& end, size_t& next, size_t from = 0);

class JsonScanner {
 public:
  enum class Phase : uint8_t { kStart, kHeader, kEvents, kSuffix, kDone };
  enum class Stop : uint8_t { kNone, kEventsBegin, kEventsEnd };

  // Starts at the first byte of the file.
  JsonScanner() = default;
  // Starts between two events of the traceEvents array (speculative chunk boundary).
  static JsonScanner inside_events(bool object_format);

  // Scans p[0..n) and returns how many bytes it consumed: all of them, or fewer when it
  // stops at the begin or the end of the events array (the stop byte is consumed).
  // Throws FormatError (offsets are `base` + index).
  size_t scan(const char* p, size_t n, uint64_t base, Stop& stop);

  Phase phase() const { return phase_; }
  bool object_format() const { return events_depth_ == 2; }
  // Within the last scan(): index just past the last `,` between events (npos if none) and
  // just past the last complete event.
  size_t last_boundary() const { return last_boundary_; }
  size_t last_complete_end() const { return last_complete_end_; }

 private:
  [[noreturn]] void fail(uint64_t offset, const std::string& what,
                         ErrorCode code = ErrorCode::kBadJson) const;
  // In the header's top-level object, reading a key (kept to find traceEvents).
  bool reading_header_key() const { return phase_ == Phase::kHeader && depth_ == 1 && expect_key_; }
  // A byte inside a string that can change the state: a quote, an escape or a header key's.
  void string_byte(char c);
  // A byte outside strings and whitespace, one function per phase; `offset` is the byte's
  // in the file, `i` its index in the scanned buffer. start_byte and header_byte return true
  // on the '[' that opens traceEvents, events_byte on the ']' that closes it: scan stops
  // there.
  bool start_byte(char c, uint64_t offset);
  bool header_byte(char c, uint64_t offset);
  bool events_byte(char c, size_t i, uint64_t base);
  void suffix_byte(char c, uint64_t offset);
  // Within traceEvents, between events: checks the ',' and bare scalars; false when c starts
  // an event that event_byte reads.
  bool between_events_byte(char c, size_t i, uint64_t base);
  // Within an event: its strings and brackets.
  void event_byte(char c, size_t i, uint64_t base);

  Phase phase_ = Phase::kStart;
  int depth_ = 0;
  int events_depth_ = 2;
  bool in_string_ = false, escape_ = false;
  bool expect_key_ = false, key_is_events_ = false, after_events_key_ = false;
  std::string key_;
  // Inside traceEvents: the brackets open within the current event ('{' or '['), so a
  // mismatched close is caught where it happens; and whether an event just ended, so that
  // anything but ',' or ']' after it is reported there rather than at the end of the file.
  std::string open_;
  bool after_event_ = false, in_scalar_ = false;
  size_t last_boundary_ = 0, last_complete_end_ = 0;
};

}  // namespace hta
