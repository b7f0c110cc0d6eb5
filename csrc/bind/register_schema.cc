// What the columns mean, declared once in C++ and read by hta_fast.schema: the enums
// (EventKind, KernelClass, ColumnRole), the spec of every column, where string ids start, and
// which kinds are GPU work.
#include <pybind11/native_enum.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "trace/column_spec.h"
#include "trace/event_kind.h"
#include "trace/trace_columns.h"

namespace py = pybind11;

namespace {

// One column as Python sees it (hta_fast._core.ColumnSpec).
struct ColumnSpecView {
  std::string table, name, type;
  hta::ColumnRole role;
  py::object sentinel;                              // int, NaN, or None when every value is real
  py::object unit;                                  // str or None
  py::object description;                           // str or None
  std::vector<std::pair<int, std::string>> labels;  // (code, label) of an enum column
};

py::object text_or_none(const char* s) { return *s ? py::object(py::str(s)) : py::none(); }

std::vector<ColumnSpecView> column_specs() {
  std::vector<ColumnSpecView> out;
  for (const hta::ColumnDecl& d : hta::column_decls()) {
    ColumnSpecView v{d.table,
                     d.name,
                     d.type,
                     d.spec.role,
                     py::none(),
                     text_or_none(d.spec.unit),
                     text_or_none(d.spec.description),
                     {}};
    if (d.spec.nullable) {
      v.sentinel = d.floating ? py::object(py::float_(NAN)) : py::object(py::int_(d.int_sentinel));
    }
    for (size_t i = 0; i < d.spec.n_labels; ++i) {
      v.labels.emplace_back(d.spec.labels[i].code, d.spec.labels[i].label);
    }
    out.push_back(std::move(v));
  }
  return out;
}

template <class E>
void bind_enum(py::module_& m, const char* name, const char* base, const char* doc,
               std::initializer_list<std::pair<const char*, E>> values) {
  py::native_enum<E> e(m, name, base, doc);
  for (const auto& [label, value] : values) e.value(label, value);
  e.finalize();
}

}  // namespace

void register_schema(py::module_& m) {
#define HTA_ENUM_VALUE(id, name, value) {#name, hta::EventKind::id},
  bind_enum<hta::EventKind>(m, "EventKind", "enum.IntEnum", "What an event is (events.kind).",
                            {HTA_EVENT_KINDS(HTA_ENUM_VALUE)});
#undef HTA_ENUM_VALUE
#define HTA_ENUM_VALUE(id, name, value) {#name, hta::KernelClass::id},
  bind_enum<hta::KernelClass>(m, "KernelClass", "enum.IntEnum",
                              "What class of work a GPU event does (events.kernel_class).",
                              {HTA_KERNEL_CLASSES(HTA_ENUM_VALUE)});
#undef HTA_ENUM_VALUE
#define HTA_ENUM_VALUE(id, name) {#name, hta::ColumnRole::id},
  bind_enum<hta::ColumnRole>(m, "ColumnRole", "enum.Enum", "How a column's values are read.",
                             {HTA_COLUMN_ROLES(HTA_ENUM_VALUE)});
#undef HTA_ENUM_VALUE

  py::class_<ColumnSpecView>(m, "ColumnSpec", "One column of a loaded trace's tables.")
      .def_readonly("table", &ColumnSpecView::table)
      .def_readonly("name", &ColumnSpecView::name)
      .def_readonly("type", &ColumnSpecView::type, "Arrow name of the value type")
      .def_readonly("role", &ColumnSpecView::role)
      .def_readonly("sentinel", &ColumnSpecView::sentinel,
                    "the stored value that means missing (a null in Arrow); None: none does")
      .def_readonly("unit", &ColumnSpecView::unit)
      .def_readonly("description", &ColumnSpecView::description)
      .def_readonly("labels", &ColumnSpecView::labels, "(code, label) of an enum column")
      .def("__repr__", [](const ColumnSpecView& v) {
        return "<ColumnSpec " + v.table + "." + v.name + " " + v.type + ">";
      });
  m.def("column_specs", &column_specs, "Every column of every table, in table order.");
  m.def("is_gpu_kind", [](hta::EventKind k) { return hta::is_gpu_kind(k); }, py::arg("kind"));
  m.attr("STRING_ID_BASE") = hta::kStringIdBase;
}
