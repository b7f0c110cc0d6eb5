#include "parse/sequential_parser.h"

#include <algorithm>

#include "parse/stage_clock.h"

namespace hta {

SequentialParser::SequentialParser(EventParser& parser, TraceColumns& out, uint64_t origin,
                                   uint64_t expected_bytes)
    : parser_(parser),
      out_(out),
      origin_(origin),
      expected_bytes_(expected_bytes),
      // The rows already there are not this input's: the end of a file read after its
      // mapped parts starts on the whole trace, and counted as one chunk's rows they had
      // every column's slack populated (1-3 ms, and resident, on a 56 MB trace).
      rows_before_(table_rows(out)) {}

const ChunkError& SequentialParser::parse(const char* text, size_t len, uint64_t file_offset) {
  if (error_.failed) return error_;
  const int64_t t0 = now_ns();
  const size_t before = out_.events.size();
  error_ = parser_.parse(text, len, file_offset, out_);
  parse_ns_ += now_ns() - t0;
  if (error_.on_demand) ++on_demand_chunks_;
  if (error_.failed) return error_;
  const std::vector<size_t> rows = table_rows(out_);
  rows_before_.resize(rows.size(), 0);
  std::vector<size_t> recent(rows.size());
  for (size_t t = 0; t < rows.size(); ++t) recent[t] = rows[t] - std::min(rows[t], rows_before_[t]);
  rows_before_ = rows;
  const uint64_t done = file_offset - 1 + len - origin_;  // bytes read so far
  if (expected_bytes_ != 0) size_ahead(rows, recent, len, done, out_.events.size() > before);
  // The next chunk's rows, each table's as this one's with half to spare, and no more than
  // the input has left room for: what is populated and never written stays resident.
  const double share =
      expected_bytes_ == 0
          ? 1.0
          : std::min(1.0, static_cast<double>(expected_bytes_ - std::min(expected_bytes_, done)) /
                              static_cast<double>(len));
  for (size_t& r : recent) r = static_cast<size_t>(1.5 * share * static_cast<double>(r));
  pages_ahead_.before_rows(out_, recent);
  return error_;
}

void SequentialParser::size_ahead(const std::vector<size_t>& rows,
                                  const std::vector<size_t>& recent, size_t len, uint64_t done,
                                  bool has_events) {
  if (!reserved_ && has_events) {
    // The first chunk with events: room for the whole input at its rows per byte.
    reserved_ = true;
    reserve_for_input(out_, out_, len, expected_bytes_);
  }
  if (!reserved_ || expected_bytes_ <= done || done == 0) return;
  // Each table's final rows: what it holds, plus its rows per byte for the bytes to come,
  // at the faster of its rate so far and its rate in this chunk (with half to spare, which
  // costs nothing until written: reserve_for_input): tables written mostly near the end
  // (GPU kernels, metadata) are otherwise regrown, and copied, several times on the way.
  const double left = static_cast<double>(expected_bytes_ - done);
  std::vector<size_t> final_rows(rows.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    const double so_far = static_cast<double>(rows[t]) / static_cast<double>(done);
    const double rate = static_cast<double>(recent[t]) / static_cast<double>(len);
    final_rows[t] = rows[t] + static_cast<size_t>(1.5 * std::max(so_far, rate) * left);
  }
  grow_ahead(out_, final_rows);
}

}  // namespace hta
