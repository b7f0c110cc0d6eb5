// hta_fast._core.load_file / load_bytes: read, link, and return the columns as numpy arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bind/numpy_owner.h"
#include "io/byte_source.h"
#include "io/format_error.h"
#include "parse/header_fields.h"
#include "parse/trace_reader.h"
#include "trace/link_pass.h"

namespace py = pybind11;
using hta::bind::to_numpy;

namespace {

// Text from the input (snippets, messages) may be invalid UTF-8: never fail on it.
py::str safe_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// Chunk buffers and link-pass scratch, once freed, may sit in malloc's heap and still count
// as resident memory: hand them back to the system before the next stage grows.
void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

py::dict to_python(hta::ReadResult& r) {
  py::dict tables;
  r.columns.for_each_table([&](const char* name, auto& table) {
    py::dict cols;
    table.for_each_column([&](const char* col, auto& v) { cols[col] = to_numpy(std::move(v)); });
    tables[name] = cols;
  });
  py::list stats;
  for (size_t i = 0; i < hta::kNumStats; ++i) {
    const auto s = static_cast<hta::Stat>(i);
    const auto& info = hta::stat_info(s);
    py::list examples;
    for (const auto& ex : r.columns.stats.examples(s)) examples.append(py::make_tuple(ex.offset, safe_str(ex.text)));
    stats.append(py::make_tuple(info.name, info.severity, info.description, r.columns.stats.count(s), examples));
  }
  std::vector<char> chars = std::move(r.columns.strings.data());
  std::vector<uint8_t> data(chars.begin(), chars.end());
  py::dict out;
  out["tables"] = tables;
  out["string_offsets"] = to_numpy(std::move(r.columns.strings.offsets()));
  out["string_data"] = to_numpy(std::move(data));
  out["header_json"] = py::bytes(r.header_json);
  out["json_bytes"] = r.json_bytes;
  out["array_format"] = r.array_format;
  out["stats"] = stats;
  py::dict timings;
  timings["read_s"] = r.read_seconds;
  timings["parse_s"] = r.parse_seconds;
  timings["merge_s"] = r.merge_seconds;
  timings["link_s"] = r.link_seconds;
  out["timings"] = timings;
  return out;
}

struct LoadArgs {
  int threads;
  bool recover;
  size_t chunk_size;
  std::vector<std::pair<std::string, int>> kernel_class_rules;
};

py::dict load(hta::ByteSource& source, const LoadArgs& args) {
  hta::ReadOptions options;
  options.threads = args.threads;
  options.parse.recover = args.recover;
  if (args.chunk_size > 0) options.chunk_size = args.chunk_size;
  hta::ReadResult result;
  {
    py::gil_scoped_release release;
    const auto t0 = std::chrono::steady_clock::now();
    hta::read_trace(source, options, result);
    release_free_memory();
    const auto t1 = std::chrono::steady_clock::now();
    hta::LinkOptions link;
    link.kernel_class_rules = args.kernel_class_rules;
    link.base_time_ns = hta::base_time_ns(result.header_json);
    link.threads = args.threads > 0 ? args.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    hta::link_trace(result.columns, link);
    release_free_memory();
    const auto t2 = std::chrono::steady_clock::now();
    result.read_seconds = std::chrono::duration<double>(t1 - t0).count();
    result.link_seconds = std::chrono::duration<double>(t2 - t1).count();
  }
  return to_python(result);
}

}  // namespace

// table -> names of its columns that hold string ids: the schema reads this list.
py::dict string_columns() {
  py::dict out;
  hta::TraceColumns columns;
  columns.for_each_table([&](const char* table, auto& t) {
    py::list names;
    t.for_each_column([&](const char* col, auto&) {
      if (hta::is_string_column(table, col)) names.append(col);
    });
    out[table] = names;
  });
  return out;
}

void register_loader(py::module_& m) {
  m.def("string_columns", &string_columns);
  static py::exception<hta::FormatError> format_error(m, "FormatError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const hta::FormatError& e) {
      py::tuple args = py::make_tuple(safe_str(e.what()), e.offset());
      PyErr_SetObject(format_error.ptr(), args.ptr());
    }
  });

  m.def(
      "load_file",
      [](const std::string& path, int threads, bool recover, size_t chunk_size,
         std::vector<std::pair<std::string, int>> rules) {
        auto source = hta::open_file(path);
        return load(*source, {threads, recover, chunk_size, std::move(rules)});
      },
      py::arg("path"), py::arg("threads") = 0, py::arg("recover") = false,
      py::arg("chunk_size") = 0, py::arg("kernel_class_rules") = std::vector<std::pair<std::string, int>>{});
  m.def(
      "load_bytes",
      [](py::buffer data, int threads, bool recover, size_t chunk_size,
         std::vector<std::pair<std::string, int>> rules) {
        py::buffer_info info = data.request();
        auto source = hta::open_memory(static_cast<const char*>(info.ptr), static_cast<size_t>(info.size * info.itemsize));
        return load(*source, {threads, recover, chunk_size, std::move(rules)});
      },
      py::arg("data"), py::arg("threads") = 0, py::arg("recover") = false,
      py::arg("chunk_size") = 0, py::arg("kernel_class_rules") = std::vector<std::pair<std::string, int>>{});
}
