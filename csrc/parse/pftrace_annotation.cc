#include "parse/pftrace_annotation.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "parse/raw_event.h"
#include "trace/string_pool.h"

namespace hta {
namespace {

using protozero::pbf_wire_type;
using protozero::tag_and_type;
using Kind = Annotation::Kind;

constexpr int kMaxDepth = 32;  // nested arrays and dicts rendered as text

void append_double(double d, std::string& out) {
  if (!std::isfinite(d)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
}

void append_quoted(std::string_view s, std::string& out) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void render(const Annotation& a, const InternedText& strings, bool top, int depth,
            std::string& out);

void render_items(const Annotation& a, const InternedText& strings, int depth, std::string& out) {
  if (depth > kMaxDepth) throw FieldError{"values nested too deep", false};
  const bool dict = a.kind == Kind::kDict;
  out += dict ? '{' : '[';
  Annotation item;
  for (size_t k = 0; k < a.items.size(); ++k) {
    if (k) out += ", ";
    item.read(a.items[k], strings);
    if (dict) {
      append_quoted(item.name, out);
      out += ": ";
    }
    render(item, strings, false, depth + 1, out);
  }
  out += dict ? '}' : ']';
}

void render(const Annotation& a, const InternedText& strings, bool top, int depth,
            std::string& out) {
  switch (a.kind) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += a.b ? "true" : "false";
      return;
    case Kind::kUint:
      out += std::to_string(a.u);
      return;
    case Kind::kInt:
      out += std::to_string(a.i);
      return;
    case Kind::kDouble:
      return append_double(a.d, out);
    case Kind::kString:
      if (top) {
        out.append(a.s);
      } else {
        append_quoted(a.s, out);
      }
      return;
    case Kind::kJson:
      out.append(a.s);
      return;
    case Kind::kArray:
    case Kind::kDict:
      return render_items(a, strings, depth, out);
  }
}

[[noreturn]] void wrong(const char* what) { throw FieldError{what, false}; }

}  // namespace

// Fields of DebugAnnotation (debug_annotation.proto): name_iid 1, bool_value 2, uint_value 3,
// int_value 4, double_value 5, string_value 6, pointer_value 7, legacy_json_value 9, name 10,
// dict_entries 11, array_values 12, string_value_iid 17. nested_value (8) and the proto_*
// values are not read: the value is then missing, as an argument that is not there.
void Annotation::read(protozero::data_view message, const InternedText& strings) {
  name = {};
  has_name_iid = false;
  kind = Kind::kNone;
  items.clear();
  protozero::pbf_reader m(message);
  while (m.next()) {
    switch (m.tag_and_type()) {
      case tag_and_type(1, pbf_wire_type::varint):
        name_iid = m.get_uint64();
        has_name_iid = true;
        break;
      case tag_and_type(10, pbf_wire_type::length_delimited):
        name = text_of(m.get_view());
        break;
      case tag_and_type(2, pbf_wire_type::varint):
        kind = Kind::kBool;
        b = m.get_bool();
        break;
      case tag_and_type(3, pbf_wire_type::varint):
      case tag_and_type(7, pbf_wire_type::varint):
        kind = Kind::kUint;
        u = m.get_uint64();
        break;
      case tag_and_type(4, pbf_wire_type::varint):
        kind = Kind::kInt;
        i = m.get_int64();
        break;
      case tag_and_type(5, pbf_wire_type::fixed64):
        kind = Kind::kDouble;
        d = m.get_double();
        break;
      case tag_and_type(6, pbf_wire_type::length_delimited):
        kind = Kind::kString;
        s = text_of(m.get_view());
        break;
      case tag_and_type(17, pbf_wire_type::varint): {
        const auto it = strings.find(m.get_uint64());
        kind = it == strings.end() ? Kind::kNone : Kind::kString;
        if (it != strings.end()) s = it->second;
        break;
      }
      case tag_and_type(9, pbf_wire_type::length_delimited):
        kind = Kind::kJson;
        s = text_of(m.get_view());
        break;
      case tag_and_type(11, pbf_wire_type::length_delimited):
        if (kind != Kind::kDict) items.clear();
        kind = Kind::kDict;
        items.push_back(m.get_view());
        break;
      case tag_and_type(12, pbf_wire_type::length_delimited):
        if (kind != Kind::kArray) items.clear();
        kind = Kind::kArray;
        items.push_back(m.get_view());
        break;
      default:
        m.skip();
    }
  }
}

void annotation_json(const Annotation& a, const InternedText& strings, bool top, std::string& out) {
  render(a, strings, top, 0, out);
}

int64_t AnnotationArg::int64() {
  switch (a_.kind) {
    case Kind::kNone:
      return -1;
    case Kind::kInt:
      return a_.i;
    case Kind::kUint:
      if (a_.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        wrong("integer out of range");
      }
      return static_cast<int64_t>(a_.u);
    case Kind::kDouble:
      // A whole number written as a double reads as the integer, as its JSON text would.
      if (std::trunc(a_.d) == a_.d && std::fabs(a_.d) < 9.2e18) return static_cast<int64_t>(a_.d);
      wrong("expected an integer");
    default:
      wrong("expected an integer");
  }
}

int32_t AnnotationArg::int32() {
  const int64_t x = int64();
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
    wrong("integer out of range");
  }
  return static_cast<int32_t>(x);
}

double AnnotationArg::float64() {
  switch (a_.kind) {
    case Kind::kNone:
      return NAN;
    case Kind::kInt:
      return static_cast<double>(a_.i);
    case Kind::kUint:
      return static_cast<double>(a_.u);
    case Kind::kDouble:
      return a_.d;
    default:
      wrong("expected a number");
  }
}

int32_t AnnotationArg::string() {
  if (a_.kind == Kind::kNone) return -1;
  if (a_.kind != Kind::kString) wrong("expected a string");
  return pool_.intern(a_.s);
}

int32_t AnnotationArg::raw_json() {
  if (a_.kind == Kind::kNone) return -1;
  if (a_.kind == Kind::kString || a_.kind == Kind::kJson) return pool_.intern(a_.s);
  std::string text;
  annotation_json(a_, strings_, true, text);
  return pool_.intern(text);
}

// A stream is a number; a name ("stream 7") or anything else that is not one is no stream.
int32_t AnnotationArg::stream() {
  if (a_.kind == Kind::kString) {
    int32_t x = -1;
    const auto r = std::from_chars(a_.s.data(), a_.s.data() + a_.s.size(), x);
    return r.ec == std::errc() && r.ptr == a_.s.data() + a_.s.size() ? x : -1;
  }
  return int32();
}

// grid/block: array_values of three integers, or the same as legacy JSON text ("[1, 1, 1]").
bool AnnotationArg::dim3(int32_t (&out)[3]) {
  if (a_.kind == Kind::kArray) {
    Annotation item;
    for (size_t k = 0; k < a_.items.size() && k < 3; ++k) {
      item.read(a_.items[k], strings_);
      out[k] = AnnotationArg(item, pool_, strings_).int32();
    }
    return true;
  }
  if (a_.kind != Kind::kJson) return false;
  simdjson::dom::parser parser;
  simdjson::dom::array values;
  if (parser.parse(a_.s.data(), a_.s.size()).get_array().get(values)) return false;
  size_t k = 0;
  for (auto v : values) {
    int64_t x = 0;
    if (v.get_int64().get(x) || x < std::numeric_limits<int32_t>::min() ||
        x > std::numeric_limits<int32_t>::max()) {
      wrong("expected an integer");
    }
    if (k < 3) out[k] = static_cast<int32_t>(x);
    ++k;
  }
  return true;
}

}  // namespace hta
