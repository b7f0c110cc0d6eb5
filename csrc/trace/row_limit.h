// Every column that points at a row of the events table is an EventRow (tables.h: partner,
// parent, the argument tables' row, ...): int32, half the bytes of int64 in the tables that
// are most of a loaded trace's memory. A trace of more events is refused, not wrapped: 2^31
// events would be some 200 GB of JSON.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include "io/format_error.h"

namespace hta {

using EventRow = int32_t;
constexpr size_t kMaxEventRows = std::numeric_limits<EventRow>::max();

// Throws kTooLarge when a table of `rows` events could not be pointed into.
inline void check_event_rows(size_t rows) {
  if (rows > kMaxEventRows) {
    throw FormatError(ErrorCode::kTooLarge, std::nullopt,
                      "more than 2^31 - 1 events in one trace (rows are 32-bit)");
  }
}

}  // namespace hta
