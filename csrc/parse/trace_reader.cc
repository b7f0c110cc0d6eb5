#include "parse/trace_reader.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "io/format_error.h"
#include "parse/chunk_pipeline.h"
#include "parse/json_scanner.h"
#include "parse/mapped_events.h"

namespace hta {
namespace {

constexpr size_t npos = static_cast<size_t>(-1);

// Thrown when a speculative split produced a chunk that does not parse; the file is then
// read again with exact splitting.
struct SplitFailed {};

std::string_view strip(std::string_view s, char edge_char) {
  auto is_ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  if (!s.empty() && s.front() == edge_char) s.remove_prefix(1);
  if (!s.empty() && s.back() == edge_char) s.remove_suffix(1);
  return s;
}

class Reader {
 public:
  Reader(ByteSource& source, const ReadOptions& options, bool exact, ReadResult& result)
      : source_(source), options_(options), exact_(exact), result_(result) {}

  void run();

 private:
  // Reads more bytes into buf after `used` bytes; returns how many.
  size_t fill(std::vector<char>& buf, size_t used, size_t want) {
    if (buf.size() < used + want + simdjson::SIMDJSON_PADDING) {
      buf.resize(used + want + simdjson::SIMDJSON_PADDING);
    }
    size_t n = 0;
    try {
      n = source_.read(buf.data() + used, want);
    } catch (const TruncatedInput& e) {
      // A compressed stream cut short: with recover, what was decompressed is the file.
      // That keeps the complete events only when the cut falls among them.
      if (!options_.parse.recover) {
        if (in_events_) throw;
        throw FormatError(e.code(), e.offset(), e.what());
      }
    }
    total_ += n;
    return n;
  }
  void read_header_prefix();
  void read_mapped_events(MappedFile& map, int threads);
  [[noreturn]] void fail(const ChunkError& err) const;
  void read_events(ChunkPipeline& pipeline);
  void read_suffix(std::string_view rest, uint64_t base);
  void dispatch(ChunkPipeline& pipeline, std::vector<char>& buf, size_t events_end,
                uint64_t offset);
  [[noreturn]] void truncated(uint64_t at) const;

  ByteSource& source_;
  const ReadOptions& options_;
  bool exact_;
  ReadResult& result_;
  JsonScanner scanner_;
  uint64_t total_ = 0;
  std::string prefix_, suffix_;
  std::vector<char> carry_;         // bytes after the last boundary, not yet parsed
  uint64_t carry_offset_ = 0;       // file offset of carry_[0]
  size_t carry_scanned_ = 0;        // leading bytes of carry_ already searched or scanned
  uint64_t events_end_offset_ = 0;  // file offset just past the last event handed to parsing
  bool in_events_ = false;          // reading inside the traceEvents array
  ChunkError mapped_error_;         // a bad field in the events read in place
};

[[noreturn]] void Reader::truncated(uint64_t at) const {
  throw FormatError(ErrorCode::kTruncated, at,
                    "the file ends inside the traceEvents array at byte " + std::to_string(at) +
                        " (the profiler may have stopped while writing); pass recover=True "
                        "to keep the complete events before the cut",
                    {}, /*recoverable=*/true);
}

void Reader::read_header_prefix() {
  // Scan from the start until the events array opens; keep the header text before it.
  std::vector<char> buf;
  for (;;) {
    const size_t n = fill(buf, 0, 1 << 16);
    const uint64_t base = total_ - n;
    if (n == 0) {
      if (base == 0) throw FormatError(ErrorCode::kEmpty, 0, "empty file");
      if (scanner_.phase() == JsonScanner::Phase::kStart) {
        throw FormatError(ErrorCode::kEmpty, base, "no JSON in the file: it holds only whitespace");
      }
      if (scanner_.phase() == JsonScanner::Phase::kDone) {
        throw FormatError(ErrorCode::kNotATrace, std::nullopt,
                          "not a trace: the JSON object has no traceEvents array");
      }
      throw FormatError(ErrorCode::kTruncated, base, "the file ends inside the trace header");
    }
    JsonScanner::Stop stop;
    const size_t used = scanner_.scan(buf.data(), n, base, stop);
    if (stop == JsonScanner::Stop::kEventsBegin) {
      prefix_.append(buf.data(), used);
      carry_.assign(buf.begin() + static_cast<long>(used), buf.begin() + static_cast<long>(n));
      carry_offset_ = events_end_offset_ = base + used;
      result_.array_format = !scanner_.object_format();
      in_events_ = true;
      return;
    }
    prefix_.append(buf.data(), n);
  }
}

void Reader::dispatch(ChunkPipeline& pipeline, std::vector<char>& buf, size_t events_end,
                      uint64_t offset) {
  buf[events_end] = ']';
  events_end_offset_ = offset + events_end - 1;
  pipeline.submit(std::move(buf), events_end + 1, offset);
  if (pipeline.error().failed && !pipeline.error().field_error && !exact_) throw SplitFailed{};
}

// Fast path for plain files: the events are parsed where they lie in the mapped file, in
// parts on several threads (parse/mapped_events.h); the end of the file is left to
// read_events, which scans it exactly.
void Reader::read_mapped_events(MappedFile& map, int threads) {
  const size_t chunk = options_.chunk_size ? options_.chunk_size : size_t{512} << 10;
  MappedEvents read =
      hta::read_mapped_events(map, carry_offset_, threads, chunk, options_.parse, result_.columns);
  result_.parse_seconds += read.parse_seconds;
  result_.merge_seconds += read.merge_seconds;
  result_.on_demand_chunks += read.on_demand_chunks;
  result_.mapped_parts = read.parts;
  mapped_error_ = read.error;
  if (mapped_error_.failed && !mapped_error_.field_error) throw SplitFailed{};
  if (read.rest == carry_offset_) return;
  events_end_offset_ = read.events_end;
  // The rest through the buffered path.
  carry_.clear();
  carry_offset_ = read.rest;
  source_.seek(read.rest);
  total_ = read.rest;
}

void Reader::read_events(ChunkPipeline& pipeline) {
  const size_t chunk = options_.chunk_size     ? options_.chunk_size
                       : options_.threads == 1 ? size_t{512} << 10
                                               : size_t{1} << 20;
  for (;;) {
    // The chunk buffer: "[" + carried bytes + blocks read straight into it, until it holds
    // an event boundary or the input ends. An event larger than a block so grows this one
    // buffer (geometrically, by vector's growth) and is searched once: copying or searching
    // the carried bytes again for every block made one huge event cost quadratic time.
    std::vector<char> buf = pipeline.take_buffer(1 + carry_.size() + chunk);
    buf[0] = '[';
    std::memcpy(buf.data() + 1, carry_.data(), carry_.size());
    const uint64_t offset = carry_offset_;
    size_t text_len = 1 + carry_.size();
    // Leading bytes of buf[1..] already searched (fast path) or scanned (exact path).
    size_t seen = carry_scanned_;
    for (;;) {
      const size_t n = fill(buf, text_len, chunk);
      text_len += n;
      size_t end = npos, next = npos;
      // A short read means the input is exhausted: the end of the array (and any header
      // after it, which may hold `},{` of its own) is in this buffer, so scan it exactly.
      const bool last_block = n < chunk;
      if (!exact_ && !last_block) {
        // Fast path: split at the last `},{` and let the parser verify it. The bytes seen
        // before hold no boundary (or the buffer would have been dispatched).
        if (find_last_boundary(buf.data() + 1, text_len - 1, end, next, seen)) {
          ++end, ++next;  // to buffer indices
        }
      } else {
        // Exact path. At the end of the input, the buffer (which starts at an event
        // boundary) is scanned afresh so the last complete event is known.
        size_t from = 1 + seen;
        if (n == 0 || !exact_) {
          scanner_ = JsonScanner::inside_events(!result_.array_format);
          from = 1;
        }
        JsonScanner::Stop stop;
        const size_t used =
            scanner_.scan(buf.data() + from, text_len - from, offset + from - 1, stop);
        if (stop == JsonScanner::Stop::kEventsEnd) {
          const size_t close = from + used - 1;  // the ']' of traceEvents
          in_events_ = false;
          read_suffix(std::string_view(buf.data() + close + 1, text_len - close - 1),
                      offset + close);
          carry_.clear();
          dispatch(pipeline, buf, close, offset);
          return;
        }
        if (scanner_.last_boundary() != npos) {
          next = from + scanner_.last_boundary();
          end = next - 1;  // the ',' becomes the closing ']'
        }
        if (n == 0) {
          // The source ended inside the array: the file was cut short.
          if (!options_.parse.recover) truncated(offset + text_len - 1);
          const size_t complete = scanner_.last_complete_end();
          const size_t cut = complete != npos ? from + complete : 1;
          const uint64_t kept_end = complete != npos ? offset + cut - 1 : events_end_offset_;
          result_.columns.stats.add(Stat::truncated_file, total_, "end of file");
          result_.columns.stats.add(Stat::truncated_tail_bytes, total_ - kept_end);
          carry_.clear();
          if (cut > 1) dispatch(pipeline, buf, cut, offset);
          return;
        }
      }
      seen = text_len - 1;
      if (end == npos) continue;  // no boundary yet: read the next block after this one
      carry_.assign(buf.begin() + static_cast<long>(next),
                    buf.begin() + static_cast<long>(text_len));
      carry_offset_ = offset + next - 1;
      carry_scanned_ = carry_.size();
      dispatch(pipeline, buf, end, offset);
      break;
    }
  }
}

[[noreturn]] void Reader::fail(const ChunkError& err) const {
  if (!exact_ && !err.field_error) throw SplitFailed{};
  throw FormatError(err.field_error ? ErrorCode::kBadField : ErrorCode::kBadJson, err.offset,
                    err.message, err.key, err.recoverable);
}

void Reader::read_suffix(std::string_view rest, uint64_t base) {
  // The header members after the events array, up to the end of the file.
  JsonScanner::Stop stop;
  scanner_.scan(rest.data(), rest.size(), base, stop);
  suffix_.assign(rest);
  std::vector<char> buf;
  for (;;) {
    const size_t n = fill(buf, 0, 1 << 16);
    if (n == 0) break;
    scanner_.scan(buf.data(), n, total_ - n, stop);
    suffix_.append(buf.data(), n);
  }
  if (scanner_.phase() != JsonScanner::Phase::kDone) {
    throw FormatError(ErrorCode::kTruncated, total_,
                      "the file ends inside the trace header after traceEvents");
  }
}

void Reader::run() {
  read_header_prefix();
  const int threads = options_.threads > 0
                          ? options_.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  {
    uint64_t expected_bytes = source_.size_hint();
    if (std::unique_ptr<MappedFile> map = exact_ ? nullptr : source_.map()) {
      const uint64_t begin = carry_offset_;
      read_mapped_events(*map, threads);
      // The columns are sized for the whole file already; what is left is two or three chunks.
      if (carry_offset_ != begin) expected_bytes = 0;
    }
    ChunkPipeline pipeline(expected_bytes ? threads : 1, options_.parse, result_.columns,
                           expected_bytes);
    try {
      read_events(pipeline);
    } catch (const FormatError&) {
      // In fast mode a wrong speculative split can make the file's tail look broken; the
      // exact pass tells a real fault from that.
      if (!exact_) throw SplitFailed{};
      throw;
    }
    const ChunkError& err = pipeline.finish();
    result_.parse_seconds += pipeline.parse_seconds();
    result_.merge_seconds += pipeline.merge_seconds();
    result_.on_demand_chunks += pipeline.on_demand_chunks();
    // The first failure in file order: the events read in place come first.
    if (mapped_error_.failed) fail(mapped_error_);
    if (err.failed) fail(err);
  }
  result_.json_bytes = total_;
  const auto& st = result_.columns.stats;
  if (result_.array_format && st.count(Stat::non_object_event) > 0 &&
      result_.columns.events.size() == 0 && result_.columns.meta.size() == 0 &&
      result_.columns.flows.size() == 0) {
    throw FormatError(ErrorCode::kNotATrace, std::nullopt,
                      "not a trace: a JSON array whose entries are not event objects");
  }
  // Header: the members before and after the array, joined into one object.
  if (result_.array_format) {
    result_.header_json = "{}";
    return;
  }
  std::string_view before = strip(std::string_view(prefix_), ',');
  // prefix_ ends with `"traceEvents": [`; drop that key.
  const size_t key = before.rfind("\"traceEvents\"");
  before = strip(before.substr(0, key == std::string_view::npos ? 0 : key), ',');
  if (!before.empty() && before.front() == '{') before = strip(before.substr(1), ',');
  std::string_view after = strip(std::string_view(suffix_), ',');
  if (!after.empty() && after.back() == '}') after = strip(after.substr(0, after.size() - 1), ',');
  result_.header_json = "{";
  result_.header_json.append(before);
  if (!before.empty() && !after.empty()) result_.header_json += ",";
  result_.header_json.append(after);
  result_.header_json += "}";
}

}  // namespace

void read_trace(ByteSource& source, const ReadOptions& options, ReadResult& result) {
  try {
    Reader(source, options, /*exact=*/false, result).run();
  } catch (const SplitFailed&) {
    // A speculative boundary fell inside a string or a nested value: read again, exactly.
    source.rewind();
    result = ReadResult{};
    result.columns.stats.add(Stat::speculative_split_retry);
    Reader(source, options, /*exact=*/true, result).run();
  }
}

}  // namespace hta
