// The floor under the loader: how fast this machine inflates a trace and how fast simdjson's
// first stage indexes it, alone and together, against the whole load — CPU seconds per
// stage, so that a target for the loader can be held against what the stages it cannot skip
// cost. Built only with -DHTA_FAST_BENCH_TOOLS=ON (see benchmarks/README.md).
//
//   load_floor FILE [RUNS]   -> one line per stage: MB of JSON per CPU-second (median)
#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "io/byte_source.h"
#include "parse/trace_reader.h"

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr size_t kChunk = size_t{1} << 20;

// Reads the whole (inflated) text in chunk-sized blocks; `each` sees every block.
template <class Each>
size_t read_all(const std::string& path, Each&& each) {
  auto source = hta::open_file(path);
  std::vector<char> buf(kChunk + simdjson::SIMDJSON_PADDING, ' ');
  size_t total = 0;
  for (size_t n; (n = source->read(buf.data(), kChunk)) > 0;) {
    each(buf.data(), n);
    total += n;
  }
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: load_floor FILE [RUNS]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  size_t bytes = 0;
  auto time = [&](auto&& body) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
      const double c0 = cpu_seconds();
      body();
      t.push_back(cpu_seconds() - c0);
    }
    return median(t);
  };
  const double read_s = time([&] { bytes = read_all(path, [](const char*, size_t) {}); });
  // Stage 1 over the whole text at once (the loader runs it chunk by chunk, which costs the
  // same per byte), with the implementation On-Demand's iterate() uses on this CPU.
  std::vector<char> text;
  text.reserve(bytes + simdjson::SIMDJSON_PADDING);
  read_all(path, [&](const char* p, size_t n) { text.insert(text.end(), p, p + n); });
  text.resize(bytes + simdjson::SIMDJSON_PADDING, ' ');
  std::unique_ptr<simdjson::internal::dom_parser_implementation> stage1;
  if (simdjson::get_active_implementation()->create_dom_parser_implementation(bytes, 1024,
                                                                              stage1)) {
    return 1;
  }
  bool indexed = true;
  const double index_s = time([&] {
    indexed = stage1->stage1(reinterpret_cast<const uint8_t*>(text.data()), bytes,
                             simdjson::stage1_mode::regular) == simdjson::SUCCESS;
  });
  if (!indexed) std::fprintf(stderr, "stage 1 failed on %s\n", path.c_str());
  text = {};
  stage1.reset();
  const double load_s = time([&] {
    auto source = hta::open_file(path);
    hta::ReadOptions options;
    options.threads = 1;
    hta::ReadResult result;
    hta::read_trace(*source, options, result);
  });
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("%s: %.1f MB of JSON, median of %d runs, MB per CPU-second\n", path.c_str(), mb,
              runs);
  std::printf("  read (inflate for .gz)        %7.0f\n", mb / read_s);
  std::printf("  stage-1 index                 %7.0f\n", mb / index_s);
  std::printf("  the two together              %7.0f\n", mb / (read_s + index_s));
  std::printf("  read_trace (the whole C++ load) %5.0f\n", mb / load_s);
  return 0;
}
