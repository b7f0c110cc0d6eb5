// Small array helpers the Python layer needs to build Arrow arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "bind/numpy_owner.h"

namespace py = pybind11;

namespace {

template <class T>
bool is_valid(T value, T sentinel) {
  if constexpr (std::is_floating_point_v<T>) {
    return !std::isnan(value);
  } else {
    return value != sentinel;
  }
}

// Arrow validity bitmap (LSB first): bit i set when values[i] is not the sentinel (or not
// NaN for floats). Returns None when every value is valid. Each byte of the bitmap is built
// from its eight values in a register and stored once, in one pass over the column (which
// is read from memory, not cache: a read-modify-write of the byte per value, or a second
// pass, each cost a few percent of a load's CPU).
template <class T>
py::object validity(py::array_t<T, py::array::c_style> values, T sentinel) {
  const auto n = static_cast<size_t>(values.size());
  const T* v = values.data();
  std::vector<uint8_t> bits((n + 7) / 8);
  unsigned missing = 0;  // the bits of the null values, OR-ed over the bytes
  {
    py::gil_scoped_release release;
    const size_t whole = n / 8;
    for (size_t b = 0; b < whole; ++b) {
      const T* p = v + 8 * b;
      unsigned byte = 0;
      for (unsigned j = 0; j < 8; ++j) byte |= static_cast<unsigned>(is_valid(p[j], sentinel)) << j;
      bits[b] = static_cast<uint8_t>(byte);
      missing |= ~byte & 0xFFu;
    }
    const size_t rest = n - 8 * whole;
    if (rest > 0) {
      unsigned byte = 0;
      for (size_t j = 0; j < rest; ++j) {
        byte |= static_cast<unsigned>(is_valid(v[8 * whole + j], sentinel)) << j;
      }
      bits[whole] = static_cast<uint8_t>(byte);
      missing |= ~byte & ((1u << rest) - 1);
    }
  }
  if (missing == 0) return py::none();
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
