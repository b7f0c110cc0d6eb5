// The few header fields the core itself needs; the rest of the header is read in Python.
#pragma once
#include <cstdint>
#include <string>

namespace hta {

// baseTimeNanoseconds (an epoch time above 2^53, so read as an integer), or 0.
int64_t base_time_ns(const std::string& header_json);

}  // namespace hta
