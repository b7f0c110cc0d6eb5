// Small array helpers the Python layer needs to build Arrow arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bind/numpy_owner.h"

namespace py = pybind11;

namespace {

// Arrow validity bitmap (LSB first): bit i set when values[i] is not the sentinel (or not
// NaN for floats). Returns None when every value is valid.
template <class T>
py::object validity(py::array_t<T, py::array::c_style> values, T sentinel) {
  const auto n = static_cast<size_t>(values.size());
  const T* v = values.data();
  std::vector<uint8_t> bits((n + 7) / 8, 0);
  size_t nulls = 0;
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      bool valid;
      if constexpr (std::is_floating_point_v<T>)
        valid = !std::isnan(v[i]);
      else
        valid = v[i] != sentinel;
      bits[i >> 3] |= static_cast<uint8_t>(valid) << (i & 7);
      nulls += !valid;
    }
  }
  if (nulls == 0) return py::none();
  return hta::bind::to_numpy(std::move(bits));
}

}  // namespace

void register_arrays(py::module_& m) {
  m.def("validity", &validity<int64_t>, py::arg("values"), py::arg("sentinel"));
  m.def("validity", &validity<int32_t>, py::arg("values"), py::arg("sentinel"));
  m.def("validity", &validity<uint8_t>, py::arg("values"), py::arg("sentinel"));
  m.def("validity", &validity<float>, py::arg("values"), py::arg("sentinel"));
  m.def("validity", &validity<double>, py::arg("values"), py::arg("sentinel"));
}
