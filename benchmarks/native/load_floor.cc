// The floor under the loader: how fast this machine inflates a trace, how fast simdjson's
// first stage indexes it, and what a fresh process pays the kernel for the pages a load's
// result fills, against the whole load and against simdjson's own full parse: CPU seconds
// per stage, so that a target for the loader can be held against what the stages it cannot
// skip cost. Built only with -DHTA_FAST_BENCH_TOOLS=ON (see benchmarks/README.md).
//
//   load_floor FILE [RUNS]   -> one line per stage: MB of JSON per CPU-second (median)
#include <simdjson.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <type_traits>
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

// Reads the whole (inflated) text in chunk-sized blocks; `each` sees every block. On the
// calling thread, as a one-thread load reads (no prefetch thread, no copy between blocks).
template <class Each>
size_t read_all(const std::string& path, Each&& each) {
  auto source = hta::open_file(path, /*prefetch=*/false);
  std::vector<char> buf(kChunk + simdjson::SIMDJSON_PADDING, ' ');
  size_t total = 0;
  for (size_t n; (n = source->read(buf.data(), kChunk)) > 0;) {
    each(buf.data(), n);
    total += n;
  }
  return total;
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// CPU seconds to fault in `pages` fresh pages of anonymous memory, a byte written to each:
// what a fresh process pays the kernel for the pages a load's result fills.
double first_touch_seconds(long pages) {
  const size_t size = static_cast<size_t>(pages) * 4096;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  const double c0 = cpu_seconds();
  for (size_t at = 0; at < size; at += 4096) static_cast<volatile char*>(p)[at] = 1;
  const double s = cpu_seconds() - c0;
  munmap(p, size);
  return s;
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
  // Median CPU seconds of `body`, less what it reports as not its own (a double it returns).
  auto time = [&](auto&& body) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
      const double c0 = cpu_seconds();
      double excluded = 0;
      if constexpr (std::is_same_v<decltype(body()), double>) {
        excluded = body();
      } else {
        body();
      }
      t.push_back(cpu_seconds() - c0 - excluded);
    }
    return median(t);
  };
  auto load_once = [&] {
    auto source = hta::open_file(path, /*prefetch=*/false);
    hta::ReadOptions options;
    options.threads = 1;
    auto result = std::make_unique<hta::ReadResult>();
    hta::read_trace(*source, options, *result);
    return result;
  };
  // The pages a load faults in, counted on the process's first load: later ones may reuse
  // the heap's pages that earlier ones freed, where a fresh process cannot.
  const long f0 = minor_faults();
  load_once().reset();
  const long pages = minor_faults() - f0;
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
  stage1.reset();
  // A generic parser's whole pass: stage 1 and stage 2 (every value read onto simdjson's
  // tape, numbers converted, strings unescaped), the parser's buffers reused from run to run
  // so that no run after the first pays their first touch. What the loader does past stage 1
  // (fields told apart, timestamps to ns, names interned, rows stored) is at least this.
  simdjson::dom::parser dom;
  bool parsed = true;
  const double dom_s = time([&] {
    parsed = dom.parse(reinterpret_cast<const uint8_t*>(text.data()), bytes, false).error() ==
             simdjson::SUCCESS;
  });
  if (!parsed) std::fprintf(stderr, "dom parse failed on %s\n", path.c_str());
  text = {};
  dom = simdjson::dom::parser{};
  // Each load's result is freed outside its timing.
  const double load_s = time([&] {
    auto result = load_once();
    const double c0 = cpu_seconds();
    result.reset();
    return cpu_seconds() - c0;
  });
  std::vector<double> touch;
  for (int r = 0; r < runs; ++r) touch.push_back(first_touch_seconds(pages));
  const double touch_s = median(touch);
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("%s: %.1f MB of JSON, median of %d runs, MB per CPU-second\n", path.c_str(), mb,
              runs);
  std::printf("  read (inflate for .gz)        %7.0f\n", mb / read_s);
  std::printf("  stage-1 index                 %7.0f\n", mb / index_s);
  std::printf("  the two together              %7.0f\n", mb / (read_s + index_s));
  std::printf("  DOM parse (stages 1 and 2)    %7.0f\n", mb / dom_s);
  std::printf("  read + DOM parse              %7.0f\n", mb / (read_s + dom_s));
  std::printf("  first touch of the load's %ld pages %4.0f\n", pages, mb / touch_s);
  std::printf("  read + stage 1 + first touch  %7.0f   (a load that did nothing else)\n",
              mb / (read_s + index_s + touch_s));
  std::printf("  read_trace (the whole C++ load) %5.0f\n", mb / load_s);
  return 0;
}
