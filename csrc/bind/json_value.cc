#include "bind/json_value.h"

#include "bind/py_text.h"

namespace py = pybind11;

namespace hta::bind {

// Recursion is bounded by the parser's depth limit (parse/header_fields.h).
py::object to_python(simdjson::dom::element value) {
  using Type = simdjson::dom::element_type;
  switch (value.type()) {
    case Type::OBJECT: {
      py::dict out;
      // Held by name: a range-for over value_unsafe() of a temporary would dangle.
      const simdjson::dom::object fields = value.get_object().value_unsafe();
      for (simdjson::dom::key_value_pair field : fields) {
        out[safe_str(field.key)] = to_python(field.value);
      }
      return std::move(out);
    }
    case Type::ARRAY: {
      py::list out;
      const simdjson::dom::array items = value.get_array().value_unsafe();
      for (simdjson::dom::element item : items) out.append(to_python(item));
      return std::move(out);
    }
    case Type::STRING:
      return safe_str(value.get_string().value_unsafe());
    case Type::INT64:
      return py::int_(value.get_int64().value_unsafe());
    case Type::UINT64:
      return py::int_(value.get_uint64().value_unsafe());
    case Type::DOUBLE:
      return py::float_(value.get_double().value_unsafe());
    case Type::BOOL:
      return py::bool_(value.get_bool().value_unsafe());
    case Type::NULL_VALUE:
      break;
  }
  return py::none();
}

}  // namespace hta::bind
