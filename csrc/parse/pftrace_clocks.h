// The clocks a packet sequence defines for itself (protos/perfetto/trace/clock_snapshot.proto,
// ids 64-127: "sequence-scoped"), which the Perfetto SDK uses for incremental timestamps:
// each packet's timestamp is then a delta from the sequence's previous one, in units of
// unit_multiplier_ns, on a clock that a ClockSnapshot of the sequence ties to a global one.
#pragma once
#include <cstdint>
#include <protozero/pbf_reader.hpp>
#include <vector>

namespace hta {

class SequenceClocks {
 public:
  // Reads a ClockSnapshot of the sequence: its sequence-scoped clocks, each tied to the
  // snapshot's first global clock (BOOTTIME where the snapshot has it). Throws
  // protozero::exception on broken protobuf.
  void snapshot(protozero::data_view message);
  // A packet's timestamp on clock `id` as ns on the global clock; a global or unknown clock's
  // value is taken as it is (every global clock is read as one).
  int64_t to_trace_time(uint32_t id, uint64_t timestamp);

 private:
  struct Clock {
    uint32_t id = 0;
    bool incremental = false;
    uint64_t multiplier = 1;  // unit_multiplier_ns
    uint64_t last = 0;        // the clock's value, in its units
    uint64_t at_snapshot = 0;
    int64_t global_at_snapshot = 0;
    bool tied = false;  // the snapshot had a global clock
  };
  std::vector<Clock> clocks_;
};

}  // namespace hta
