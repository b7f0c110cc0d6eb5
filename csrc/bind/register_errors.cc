// hta_fast._core.ErrorCode and FormatError; and the OSError a file that cannot be read raises.
//
// A broken input crosses into Python as FormatError with fields, never as text to parse:
// .code (ErrorCode, declared in io/format_error.h), .offset (int, or None when no byte is
// to blame), .key (the field at fault, or None), .recoverable (recover=True would read past
// it) and .reason (the message).
#include <pybind11/native_enum.h>
#include <pybind11/pybind11.h>

#include "bind/py_text.h"
#include "io/file_error.h"
#include "io/format_error.h"

namespace py = pybind11;
using hta::bind::safe_str;

namespace {

PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> format_error_type;

void raise_format_error(const hta::FormatError& e) {
  const py::object& type = format_error_type.get_stored();
  py::str reason = safe_str(e.what());
  py::object error = type(reason);
  error.attr("code") = py::cast(e.code());
  error.attr("offset") = e.offset() ? py::object(py::int_(*e.offset())) : py::none();
  error.attr("reason") = reason;
  error.attr("key") = e.key().empty() ? py::object(py::none()) : py::object(safe_str(e.key()));
  error.attr("recoverable") = py::bool_(e.recoverable());
  PyErr_SetObject(type.ptr(), error.ptr());
}

// OSError(errno, strerror, filename) is the subclass Python itself raises for that errno.
void raise_os_error(const hta::FileError& e) {
  py::object os_error = py::reinterpret_borrow<py::object>(PyExc_OSError);
  py::object error = e.path().empty()
                         ? os_error(e.code().value(), e.code().message())
                         : os_error(e.code().value(), e.code().message(), safe_str(e.path()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
}

}  // namespace

void register_errors(py::module_& m) {
  py::native_enum<hta::ErrorCode> codes(m, "ErrorCode", "enum.Enum",
                                        "What is wrong with a trace that does not load.");
#define HTA_BIND_ERROR_CODE(id, name, description) \
  codes.value(#name, hta::ErrorCode::id, description);
  HTA_ERROR_CODES(HTA_BIND_ERROR_CODE)
#undef HTA_BIND_ERROR_CODE
  codes.finalize();

  format_error_type.call_once_and_store_result([&]() -> py::object {
    return py::exception<hta::FormatError>(m, "FormatError", PyExc_ValueError);
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const hta::FormatError& e) {
      raise_format_error(e);
    } catch (const hta::FileError& e) {
      raise_os_error(e);
    }
  });
}
