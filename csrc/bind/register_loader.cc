// hta_fast._core.load_file / load_bytes: read, link, and return a LoadedTrace: the columns as
// numpy arrays plus the header, parsed once, here (parse/header_fields.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <optional>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bind/json_value.h"
#include "bind/numpy_owner.h"
#include "bind/py_text.h"
#include "io/byte_source.h"
#include "parse/header_fields.h"
#include "parse/pftrace_reader.h"
#include "parse/trace_reader.h"
#include "trace/link_pass.h"

namespace py = pybind11;
using hta::bind::safe_str;
using hta::bind::to_numpy;

namespace {

// What one load hands to Python; the fields are read-only (hta_fast/_core.pyi declares them).
struct LoadedTrace {
  py::dict tables;             // table -> column -> numpy array (sentinels: ColumnSpec)
  py::array string_offsets;    // int64, Arrow large_string offsets of the string pool
  py::array string_data;       // uint8
  py::dict header;             // the top-level members other than traceEvents
  int64_t base_time_ns = 0;    // added to every timestamp
  uint64_t json_bytes = 0;     // decompressed size
  bool array_format = false;   // the file was a bare array of events
  py::list stats;              // (name, severity, description, count, [(offset, text)])
  int64_t string_id_base = 0;  // string ids sit at base - (pool id), in [floor, base]
  int64_t string_id_floor = 0;
  py::dict timings;  // seconds per stage
};

// Chunk buffers and link-pass scratch, once freed, may sit in malloc's heap and still count
// as resident memory: hand them back to the system once the load is done. Not between the
// read and the link pass: the pass's scratch (the per-thread order, its merge buffer) takes the
// freed chunk buffers' place, warm; trimmed, it was faulted in anew (5 % of a load's CPU
// here, the peak unchanged, since the read's own peak held those buffers and more).
void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

py::list stats_of(const hta::LoadStats& s) {
  py::list stats;
  for (size_t i = 0; i < hta::kNumStats; ++i) {
    const auto stat = static_cast<hta::Stat>(i);
    const auto& info = hta::stat_info(stat);
    py::list examples;
    for (const auto& ex : s.examples(stat)) {
      examples.append(py::make_tuple(ex.offset, safe_str(ex.text)));
    }
    stats.append(
        py::make_tuple(info.name, info.severity, info.description, s.count(stat), examples));
  }
  return stats;
}

LoadedTrace to_python(hta::ReadResult& r, const hta::TraceHeader& header) {
  LoadedTrace out;
  r.columns.for_each_table([&](const char* name, auto& table) {
    py::dict cols;
    table.for_each_column([&](const char* col, auto& v) { cols[col] = to_numpy(std::move(v)); });
    out.tables[name] = cols;
  });
  out.stats = stats_of(r.columns.stats);
  out.string_id_base = r.columns.string_id_base;
  out.string_id_floor = r.columns.string_id_floor;
  std::vector<char> chars = std::move(r.columns.strings.data());
  std::vector<uint8_t> data(chars.begin(), chars.end());
  out.string_offsets = to_numpy(std::move(r.columns.strings.offsets()));
  out.string_data = to_numpy(std::move(data));
  out.header = py::reinterpret_borrow<py::dict>(hta::bind::to_python(header.root()));
  out.base_time_ns = header.base_time_ns();
  out.json_bytes = r.json_bytes;
  out.array_format = r.array_format;
  out.timings["read_s"] = r.read_seconds;
  out.timings["parse_s"] = r.parse_seconds;
  out.timings["merge_s"] = r.merge_seconds;
  out.timings["link_s"] = r.link_seconds;
  // Not a time: how many chunks the On-Demand reader read (partly), not the index walker.
  out.timings["on_demand_chunks"] = static_cast<double>(r.on_demand_chunks);
  // Nor this: the parts a plain file was read in, one thread to a part (0: not mapped).
  out.timings["mapped_parts"] = static_cast<double>(r.mapped_parts);
  return out;
}

struct LoadArgs {
  int threads;
  bool recover;
  size_t chunk_size;
  std::vector<std::pair<std::string, int>> kernel_class_rules;
};

LoadedTrace load(hta::ByteSource& source, const LoadArgs& args) {
  hta::ReadOptions options;
  options.threads = args.threads;
  options.parse.recover = args.recover;
  if (args.chunk_size > 0) options.chunk_size = args.chunk_size;
  hta::ReadResult result;
  std::optional<hta::TraceHeader> header;
  {
    py::gil_scoped_release release;
    const auto t0 = std::chrono::steady_clock::now();
    // By content, not by name: a Perfetto protobuf trace, else JSON.
    if (hta::is_pftrace(source)) {
      hta::read_pftrace(source, options, result);
    } else {
      hta::read_trace(source, options, result);
    }
    const auto t1 = std::chrono::steady_clock::now();
    header.emplace(result.header_json, args.recover);
    result.columns.stats.add(hta::Stat::invalid_utf8, header->repaired_utf8());
    hta::LinkOptions link;
    link.kernel_class_rules = args.kernel_class_rules;
    link.base_time_ns = header->base_time_ns();
    link.threads = args.threads > 0
                       ? args.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    hta::link_trace(result.columns, link);
    release_free_memory();
    const auto t2 = std::chrono::steady_clock::now();
    result.read_seconds = std::chrono::duration<double>(t1 - t0).count();
    result.link_seconds = std::chrono::duration<double>(t2 - t1).count();
  }
  return to_python(result, *header);
}

using Rules = std::vector<std::pair<std::string, int>>;

}  // namespace

void register_loader(py::module_& m) {
  py::class_<LoadedTrace>(m, "LoadedTrace", "One trace as the core loaded it (read-only fields).")
      .def_readonly("tables", &LoadedTrace::tables)
      .def_readonly("string_offsets", &LoadedTrace::string_offsets)
      .def_readonly("string_data", &LoadedTrace::string_data)
      .def_readonly("header", &LoadedTrace::header)
      .def_readonly("base_time_ns", &LoadedTrace::base_time_ns)
      .def_readonly("json_bytes", &LoadedTrace::json_bytes)
      .def_readonly("array_format", &LoadedTrace::array_format)
      .def_readonly("stats", &LoadedTrace::stats)
      .def_readonly("string_id_base", &LoadedTrace::string_id_base)
      .def_readonly("string_id_floor", &LoadedTrace::string_id_floor)
      .def_readonly("timings", &LoadedTrace::timings);

  m.def(
      "load_file",
      [](const std::string& path, int threads, bool recover, size_t chunk_size, Rules rules) {
        // One thread: decompression too runs on it (ranks loaded side by side each use one).
        auto source = hta::open_file(path, /*prefetch=*/threads != 1);
        return load(*source, {threads, recover, chunk_size, std::move(rules)});
      },
      py::arg("path"), py::arg("threads") = 0, py::arg("recover") = false,
      py::arg("chunk_size") = 0, py::arg("kernel_class_rules") = Rules{});
  m.def(
      "load_bytes",
      [](py::buffer data, int threads, bool recover, size_t chunk_size, Rules rules) {
        py::buffer_info info = data.request();
        auto source = hta::open_memory(static_cast<const char*>(info.ptr),
                                       static_cast<size_t>(info.size * info.itemsize),
                                       /*prefetch=*/threads != 1);
        return load(*source, {threads, recover, chunk_size, std::move(rules)});
      },
      py::arg("data"), py::arg("threads") = 0, py::arg("recover") = false,
      py::arg("chunk_size") = 0, py::arg("kernel_class_rules") = Rules{});
}
