// A parsed JSON value (the trace header) as Python objects: dict, list, str, int, float, bool,
// None. An object's duplicated key keeps its last value, as Python's json does.
#pragma once
#include <pybind11/pybind11.h>
#include <simdjson.h>

namespace hta::bind {

pybind11::object to_python(simdjson::dom::element value);

}  // namespace hta::bind
