// hta_fast._core: each area registers itself from its own file.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_errors(py::module_& m);
void register_schema(py::module_& m);
void register_loader(py::module_& m);
void register_arrays(py::module_& m);
void register_ops(py::module_& m);
void register_graph(py::module_& m);
void register_build_info(py::module_& m);
void register_writer(py::module_& m);
void tune_malloc();

PYBIND11_MODULE(_core, m) {
  m.doc() = "hta_fast native core";
  m.attr("__version__") = HTA_FAST_VERSION;
  tune_malloc();
  // Errors and enums first: the functions registered after them name these types.
  register_errors(m);
  register_schema(m);
  register_arrays(m);
  register_loader(m);
  register_ops(m);
  register_graph(m);
  register_build_info(m);
  register_writer(m);
}
