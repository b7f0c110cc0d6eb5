// One event as read from the text, before it is stored: what both event readers (the
// Kineto walker and the On-Demand reader) fill and the store appends to the columns.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "parse/number_text.h"
#include "trace/same_text.h"

namespace hta {

class StringPool;

// Arguments of one event that the loader keeps, with a bit per argument group present.
// Only the fields every event is read for are reset per event; a group's fields get their
// defaults when the event first touches the group (resetting all ~300 bytes per event
// showed in profiles).
struct ArgValues {
  enum Group : uint8_t {
    kKernel = 1,
    kOp = 2,
    kComm = 4,
    kSync = 8,
    kMemory = 16,
    kMeta = 32,
    kCall = 64
  };
  uint8_t groups = 0;
  int64_t correlation = -1, external_id = -1;
  int32_t device = -1, stream = -1;
  // kKernel
  int32_t queued, context, grid[3], block[3], registers, shared_memory;
  float blocks_per_sm, warps_per_sm, occupancy;
  int64_t bytes;
  double bandwidth;
  int32_t launched_kernel;  // ROCm launch calls name their kernel (args.kernel)
  int64_t hsa_queue;        // ROCm: the HSA queue the work ran on (args.hsa_queue)
  // kOp
  int64_t record_function_id, sequence_number, fwd_thread_id, ev_idx;
  int32_t input_dims, input_type, input_strides, concrete_inputs;
  // kComm
  int32_t collective_name, dtype, group_size, pg_name, pg_desc, pg_ranks, in_split, out_split, rank,
      comms_id;
  int64_t in_nelems, out_nelems, seq;
  // kSync
  int32_t wait_on_stream;
  int64_t wait_on_event_correlation;
  // kCall
  int64_t cbid;
  // kMeta
  int32_t meta_value;
  int64_t sort_index;
  // kMemory
  int64_t mem_bytes, total_allocated, total_reserved, addr;
  int32_t device_type, device_id;

  void start() {
    groups = 0;
    correlation = external_id = -1;
    device = stream = -1;
  }
  // Gives the group's fields their defaults the first time the event touches it.
  void touch(Group g) {
    if (groups & g) return;
    groups |= g;
    switch (g) {
      case kKernel:
        queued = context = registers = shared_memory = -1;
        grid[0] = grid[1] = grid[2] = block[0] = block[1] = block[2] = -1;
        blocks_per_sm = warps_per_sm = occupancy = NAN;
        bytes = -1;
        bandwidth = NAN;
        launched_kernel = -1;
        hsa_queue = -1;
        return;
      case kOp:
        record_function_id = sequence_number = fwd_thread_id = ev_idx = -1;
        input_dims = input_type = input_strides = concrete_inputs = -1;
        return;
      case kComm:
        collective_name = dtype = group_size = pg_name = pg_desc = pg_ranks = -1;
        in_split = out_split = rank = comms_id = -1;
        in_nelems = out_nelems = seq = -1;
        return;
      case kSync:
        wait_on_stream = -1;
        wait_on_event_correlation = -1;
        return;
      case kCall:
        cbid = -1;
        return;
      case kMeta:
        meta_value = -1;
        sort_index = -1;
        return;
      case kMemory:
        mem_bytes = total_allocated = total_reserved = addr = -1;
        device_type = device_id = -1;
        return;
    }
  }
};

struct RawEvent {
  char ph;
  int32_t name, cat;
  int64_t pid, tid, id;
  int64_t ts, dur;
  bool has_ts, has_dur, binds_enclosing;
  char scope;
  // What was read leniently, counted when the event is stored: an argument that could not
  // be read (recover=True).
  bool bad_arg;
  ArgValues args;

  void start() {
    ph = 0;
    name = cat = -1;
    pid = tid = id = -1;
    ts = dur = 0;
    has_ts = has_dur = binds_enclosing = false;
    scope = 0;
    bad_arg = false;
    args.start();
  }
};

// Thrown inside one chunk; turned into a ChunkError at the chunk boundary. `key` is filled
// in on the way out, by the loop that knows which field was being read.
struct FieldError {
  const char* what;
  bool structural;
  std::string key = {};
};

// The structural characters that cannot start a value (',', '}', ']', ':'): where one stands
// in a value's place, the value is missing. A table, one load rather than four comparisons:
// the walker asks for every member it reads.
inline constexpr auto kNotAValue = [] {
  std::array<bool, 256> table{};
  for (const char c : {',', '}', ']', ':'}) table[static_cast<unsigned char>(c)] = true;
  return table;
}();
inline bool not_a_value(char c) { return kNotAValue[static_cast<unsigned char>(c)]; }

// A wrong-typed value is a bad field; a "value" that is a bracket, comma or colon (or
// nothing) is broken JSON, which no event-level recovery can step over reliably.
[[noreturn]] void bad_value(std::string_view tok, const char* what);

// A stat's example: up to `max` bytes from `start`, never past `end` (the event's end, or
// the last real byte of the chunk), without trailing whitespace or a character cut in two.
std::string_view snippet(const char* start, const char* end, size_t max = 80);

// Values from their text as written: `tok` runs from the value's first byte to the next
// structural character (trailing whitespace included), as the reader finds it, in a chunk
// padded as simdjson needs (its first 32 bytes may be read: number_text.h's *_padded). Each throws
// FieldError on a value of the wrong kind, with the message both readers give.
// What int_value and time_value make of a value number_text.h did not read (`status`):
// null (-1) or the FieldError. Out of line and cold: the numbers' fast path is inlined
// where each event's values are read.
[[gnu::cold]] int64_t int_value_failed(std::string_view tok, NumberStatus status);
[[gnu::cold]] int64_t time_value_failed(std::string_view tok, NumberStatus status);
inline int64_t int_value(std::string_view tok) {  // null -> -1
  int64_t x = 0;
  const NumberStatus status = parse_int64_padded(tok, x);
  return status == NumberStatus::kOk ? x : int_value_failed(tok, status);
}
inline int64_t time_value(std::string_view tok) {  // microseconds -> nanoseconds
  int64_t ns = 0;
  const NumberStatus status = micros_to_ns_padded(tok, ns);
  return status == NumberStatus::kOk ? ns : time_value_failed(tok, status);
}
int32_t int32_value(std::string_view tok);
double double_value(std::string_view tok);   // null -> NaN
int32_t stream_value(std::string_view tok);  // names and "0x0" -> -1
// pid/tid/id written as an integer: true, with `id` set (an integer that would read as a
// string id is interned as its text until the trace is one: trace/string_ids.h); false for
// any other text (a name, for the caller).
bool integer_id(std::string_view tok, StringPool& strings, int64_t& id);
// ph, s and bp written plainly ("X"): the letter; 0 when the text needs unescaping.
inline char plain_char(std::string_view tok) {
  auto printable = [](char c) { return c >= 0x20 && c < 0x7f; };
  if (tok.size() >= 3 && tok[0] == '"' && tok[2] == '"' && tok[1] != '\\' && tok[1] != '"' &&
      printable(tok[1])) {
    return tok[1];
  }
  return 0;
}

// The value a field had in the event before, by its exact text: pid, tid and cat repeat
// from event to event, and comparing a few bytes is cheaper than parsing or interning them
// again. The text is a view into the chunk, which outlives the reader.
template <class T>
struct LastValue {
  std::string_view text;
  T value{};
  bool matches(std::string_view tok) const { return !text.empty() && same_text(tok, text); }
  T remember(std::string_view tok, T v) {
    text = tok;
    value = v;
    return v;
  }
};

}  // namespace hta
