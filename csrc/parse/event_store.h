// Appends one read event to the columns of its kind (or counts why it is not kept): the one
// place the column layout meets the events, for both event readers.
#pragma once
#include <algorithm>
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

// A table's rows written ahead of its columns' sizes: every column is resized a block of
// rows at a time (DefaultInitAllocator leaves the new rows unwritten) and written by index,
// then trimmed to the rows written. One size check a row instead of one push_back a column
// (~20 columns for an operator with its arguments).
template <class Table>
class RowsAhead {
 public:
  explicit RowsAhead(Table& table) : table_(table), first_(table.size()), rows_(first_) {}

  size_t rows() const { return rows_; }
  // The row to write next.
  size_t add() {
    if (rows_ == room_) grow();
    return rows_++;
  }
  // Trims the columns to the rows written; returns the first of them.
  size_t trim() {
    if (room_ != rows_) table_.for_each_column([&](const char*, auto& c) { c.resize(rows_); });
    room_ = rows_;
    return first_;
  }

 private:
  // Up to a block more, within what every column holds already where it can: a column
  // regrows (twice its size, as a push_back would) only when it is full, so writing ahead
  // sizes no column beyond what the parser reserved for it (SequentialParser).
  void grow() {
    size_t capacity = SIZE_MAX;
    table_.for_each_column(
        [&](const char*, auto& c) { capacity = std::min(capacity, c.capacity()); });
    room_ = capacity > rows_ ? std::min(capacity, rows_ + kBlock) : rows_ + 1;
    table_.for_each_column([&](const char*, auto& c) { c.resize(room_); });
  }
  static constexpr size_t kBlock = 4096;
  Table& table_;
  size_t first_, rows_;
  size_t room_ = rows_;
};

// Stores a chunk's events (or counts why one is not kept). The columns hold exactly the
// rows stored once it ends: its destructor trims what was written ahead and gives the event
// columns the link pass fills (kind, kernel class, partner, parent, step) their defaults.
class EventStore {
 public:
  explicit EventStore(TraceColumns& out)
      : out_(out), events_(out.events), kernels_(out.kernel_args), ops_(out.op_args) {}
  ~EventStore();
  EventStore(const EventStore&) = delete;
  EventStore& operator=(const EventStore&) = delete;

  // Appends an event to the columns of its kind.
  void store(RawEvent& ev, uint64_t offset, const char* where, EventEnd& end);
  // Counter values (ph C) are kept until their event is stored, since ts may follow args.
  void add_counter(int32_t series, double value) { counter_values_.emplace_back(series, value); }
  void count_non_numeric_counter() { ++non_numeric_counters_; }

 private:
  void note_lenient_reads(const RawEvent& ev, uint64_t offset, std::string_view text);
  // The name of a call that carries a cbid: the one Kineto writes since 2026 where the
  // event says INVALID or unknown and the cbid names one (cbid_names.h), else its own.
  int32_t call_name(const RawEvent& ev);
  // One per phase: M, X, s/f/t, C, i/I.
  void store_meta(RawEvent& ev);
  void store_complete(RawEvent& ev, uint64_t offset, const char* where, EventEnd& end);
  void store_flow(const RawEvent& ev);
  void store_counter(const RawEvent& ev);
  void store_instant(RawEvent& ev);
  // The rows of a complete event's argument groups, which name its row in the events table.
  void store_kernel_args(EventRow row, const ArgValues& a);
  void store_op_args(EventRow row, const ArgValues& a);
  void store_comm_args(EventRow row, const ArgValues& a);
  void store_sync_args(EventRow row, const ArgValues& a);

  TraceColumns& out_;
  RowsAhead<EventTable> events_;
  RowsAhead<KernelArgTable> kernels_;
  RowsAhead<OpArgTable> ops_;
  std::vector<std::pair<int32_t, double>> counter_values_;
  uint64_t non_numeric_counters_ = 0;
};

}  // namespace hta
