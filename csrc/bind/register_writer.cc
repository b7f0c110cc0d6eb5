// hta_fast._core.json_to_pftrace: a Chrome-trace JSON rewritten as a Perfetto protobuf
// trace (parse/pftrace_writer.h), for `hta-fast slice --format pftrace`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "parse/pftrace_writer.h"

namespace py = pybind11;

void register_writer(py::module_& m) {
  m.def(
      "json_to_pftrace",
      [](py::bytes json) {
        const std::string_view text = json;
        hta::PftraceWritten written;
        {
          py::gil_scoped_release release;
          written = hta::json_to_pftrace(text);
        }
        py::dict left_out;
        for (const auto& [reason, count] : written.left_out) left_out[py::str(reason)] = count;
        return py::make_tuple(py::bytes(written.bytes), left_out);
      },
      py::arg("json"),
      "A Chrome-trace JSON (bytes) as a Perfetto protobuf trace: (the trace's bytes, "
      "{reason: events left out}). Raises FormatError on bytes that are not such JSON.");
}
