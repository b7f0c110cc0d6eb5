// What a column means, declared beside the column itself (tables.h) and read by the Arrow
// schema through the binding: its role, whether its sentinel stands for a missing value,
// its unit and, for an enum, the label of each code.
#pragma once
#include <cstddef>
#include <cstdint>

namespace hta {

// X(enumerator, Python name): the binding exposes these as hta_fast._core.ColumnRole.
#define HTA_COLUMN_ROLES(X)                                                             \
  X(kPlain, plain)   /* a number */                                                     \
  X(kString, string) /* a StringPool id; -1 = none */                                   \
  X(kEnum, enum)     /* a code with a label (EnumLabel) */                              \
  X(kId, id)         /* a pid/tid/flow id; string ids sit at kStringIdBase - pool id */ \
  X(kRow, row)       /* a row of the events table; -1 = none */

#define HTA_COLUMN_ROLE_ENUMERATOR(id, name) id,
enum class ColumnRole : uint8_t { HTA_COLUMN_ROLES(HTA_COLUMN_ROLE_ENUMERATOR) };
#undef HTA_COLUMN_ROLE_ENUMERATOR

struct EnumLabel {
  int code;
  const char* label;
};

struct ColumnSpec {
  ColumnRole role = ColumnRole::kPlain;
  bool nullable = true;  // the sentinel (missing<T>(): -1, NaN for floats) means "no value"
  const char* unit = "";
  const char* description = "";
  const EnumLabel* labels = nullptr;
  size_t n_labels = 0;

  constexpr ColumnSpec in(const char* u) const {
    ColumnSpec s = *this;
    s.unit = u;
    return s;
  }
  constexpr ColumnSpec about(const char* text) const {
    ColumnSpec s = *this;
    s.description = text;
    return s;
  }
};

// A number whose sentinel means "missing".
constexpr ColumnSpec plain() { return ColumnSpec{}; }
// A number for which every value, -1 included, is real (times, durations, flags).
constexpr ColumnSpec exact() {
  ColumnSpec s;
  s.nullable = false;
  return s;
}
constexpr ColumnSpec row_in_events() {
  ColumnSpec s;
  s.role = ColumnRole::kRow;
  return s;
}
constexpr ColumnSpec string_id() {
  ColumnSpec s;
  s.role = ColumnRole::kString;
  return s;
}
constexpr ColumnSpec process_or_thread() {
  ColumnSpec s;
  s.role = ColumnRole::kId;
  s.nullable = false;
  return s;
}
// A flow id: as a pid/tid (string ids rebased with the strings), but -1 means "none".
constexpr ColumnSpec flow_id() {
  ColumnSpec s;
  s.role = ColumnRole::kId;
  return s;
}
template <size_t N>
constexpr ColumnSpec enumeration(const EnumLabel (&labels)[N]) {
  ColumnSpec s;
  s.role = ColumnRole::kEnum;
  s.nullable = false;
  s.labels = labels;
  s.n_labels = N;
  return s;
}

// The Arrow name of a column's value type.
template <class T>
constexpr const char* arrow_type_name();
template <>
constexpr const char* arrow_type_name<int64_t>() {
  return "int64";
}
template <>
constexpr const char* arrow_type_name<int32_t>() {
  return "int32";
}
template <>
constexpr const char* arrow_type_name<uint8_t>() {
  return "uint8";
}
template <>
constexpr const char* arrow_type_name<float>() {
  return "float32";
}
template <>
constexpr const char* arrow_type_name<double>() {
  return "float64";
}

}  // namespace hta
