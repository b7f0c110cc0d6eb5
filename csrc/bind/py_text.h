// Text from the input (snippets, messages, header strings) may be invalid UTF-8: turn it into
// a Python str without ever failing on it.
#pragma once
#include <pybind11/pybind11.h>

#include <string_view>

namespace hta::bind {

inline pybind11::str safe_str(std::string_view s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (!o) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(o);
}

}  // namespace hta::bind
