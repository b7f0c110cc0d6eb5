// Appends one read event to the columns of its kind (or counts why it is not kept): the one
// place the column layout meets the events, for both event readers.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "parse/raw_event.h"
#include "trace/trace_columns.h"

namespace hta {

// Where an event's text ends, asked only when a stat needs the event as an example.
struct EventEnd {
  virtual const char* at(const char* start) = 0;

 protected:
  ~EventEnd() = default;
};

// The event columns the link pass fills (kind, kernel class, partner, parent, step) are
// not appended to event by event: the rows stored since are given their defaults here, in
// bulk, at the end of each chunk (five appends an event were ~2 % of a load's work).
void fill_link_columns(EventTable& e);

class EventStore {
 public:
  explicit EventStore(TraceColumns& out) : out_(out) {}

  // Appends an X event to every event column but those of fill_link_columns.
  void store(RawEvent& ev, uint64_t offset, const char* where, EventEnd& end);
  // Counter values (ph C) are kept until their event is stored, since ts may follow args.
  void add_counter(int32_t series, double value) { counter_values_.emplace_back(series, value); }
  void count_non_numeric_counter() { ++non_numeric_counters_; }

 private:
  void note_lenient_reads(const RawEvent& ev, uint64_t offset, std::string_view text);

  TraceColumns& out_;
  std::vector<std::pair<int32_t, double>> counter_values_;
  uint64_t non_numeric_counters_ = 0;
};

}  // namespace hta
