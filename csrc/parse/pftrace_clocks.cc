#include "parse/pftrace_clocks.h"

namespace hta {
namespace {

using protozero::pbf_wire_type;
using protozero::tag_and_type;

constexpr uint32_t kFirstSequenceClock = 64, kEndSequenceClock = 128;
constexpr uint32_t kBoottime = 6;  // BuiltinClock.BUILTIN_CLOCK_BOOTTIME

}  // namespace

// ClockSnapshot: clocks 1 (Clock: clock_id 1, timestamp 2, is_incremental 3,
// unit_multiplier_ns 4); primary_trace_clock 2 is not needed, every global clock being read
// as one.
void SequenceClocks::snapshot(protozero::data_view message) {
  std::vector<Clock> read;
  int64_t global = 0;
  bool has_global = false;
  protozero::pbf_reader m(message);
  while (m.next()) {
    if (m.tag_and_type() != tag_and_type(1, pbf_wire_type::length_delimited)) {
      m.skip();
      continue;
    }
    Clock c;
    protozero::pbf_reader f(m.get_view());
    while (f.next()) {
      switch (f.tag_and_type()) {
        case tag_and_type(1, pbf_wire_type::varint):
          c.id = f.get_uint32();
          break;
        case tag_and_type(2, pbf_wire_type::varint):
          c.last = c.at_snapshot = f.get_uint64();
          break;
        case tag_and_type(3, pbf_wire_type::varint):
          c.incremental = f.get_bool();
          break;
        case tag_and_type(4, pbf_wire_type::varint):
          c.multiplier = f.get_uint64();
          break;
        default:
          f.skip();
      }
    }
    if (c.id >= kFirstSequenceClock && c.id < kEndSequenceClock) {
      read.push_back(c);
    } else if (!has_global || c.id == kBoottime) {
      global = static_cast<int64_t>(c.at_snapshot * c.multiplier);
      has_global = true;
    }
  }
  for (Clock& c : read) {
    c.global_at_snapshot = global;
    c.tied = has_global;
    bool replaced = false;
    for (Clock& old : clocks_) {
      if (old.id == c.id) {
        old = c;
        replaced = true;
      }
    }
    if (!replaced) clocks_.push_back(c);
  }
}

int64_t SequenceClocks::to_trace_time(uint32_t id, uint64_t timestamp) {
  if (id >= kFirstSequenceClock && id < kEndSequenceClock) {
    for (Clock& c : clocks_) {
      if (c.id != id) continue;
      c.last = c.incremental ? c.last + timestamp : timestamp;
      const int64_t since = static_cast<int64_t>((c.last - c.at_snapshot) * c.multiplier);
      return c.tied ? c.global_at_snapshot + since : static_cast<int64_t>(c.last * c.multiplier);
    }
  }
  return static_cast<int64_t>(timestamp);
}

}  // namespace hta
