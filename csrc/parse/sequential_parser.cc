#include "parse/sequential_parser.h"

#include <chrono>

namespace hta {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SequentialParser::SequentialParser(EventParser& parser, TraceColumns& out, uint64_t origin,
                                   uint64_t expected_bytes)
    : parser_(parser), out_(out), origin_(origin), expected_bytes_(expected_bytes) {}

const ChunkError& SequentialParser::parse(const char* text, size_t len, uint64_t file_offset) {
  if (error_.failed) return error_;
  const int64_t t0 = now_ns();
  const size_t before = out_.events.size();
  error_ = parser_.parse(text, len, file_offset, out_);
  parse_ns_ += now_ns() - t0;
  if (error_.on_demand) ++on_demand_chunks_;
  if (error_.failed || expected_bytes_ == 0) return error_;
  const uint64_t done = file_offset - 1 + len - origin_;  // bytes read so far
  if (!reserved_ && out_.events.size() > before) {
    // The first chunk with events: room for the whole input at its rows per byte.
    reserved_ = true;
    out_.reserve_like(out_, 1.3 * static_cast<double>(expected_bytes_) / static_cast<double>(len));
  }
  if (reserved_ && expected_bytes_ > done && done > 0) {
    // The rows so far over the bytes so far, for the whole input (with a tenth to spare).
    grow_ahead(out_, 1.1 * static_cast<double>(expected_bytes_) / static_cast<double>(done));
  }
  return error_;
}

}  // namespace hta
