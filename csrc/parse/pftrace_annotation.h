// One debug annotation of a Perfetto TrackEvent (protos/perfetto/trace/track_event/
// debug_annotation.proto), decoded and read as a JSON event's argument is: arg_fields.h's
// read_arg fills the same columns from it (the Value interface there).
#pragma once
#include <cstdint>
#include <protozero/pbf_reader.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hta {

class StringPool;

// A protobuf string or bytes field as text (protozero's data_view is not a string_view).
inline std::string_view text_of(protozero::data_view v) { return {v.data(), v.size()}; }

// Interned strings of one packet sequence by iid (interned_data's InternedString lists).
using InternedText = std::unordered_map<uint64_t, std::string>;

struct Annotation {
  enum class Kind : uint8_t { kNone, kBool, kUint, kInt, kDouble, kString, kJson, kArray, kDict };
  // DebugAnnotation.name (10) or name_iid (1): the caller resolves the iid.
  std::string_view name;
  uint64_t name_iid = 0;
  bool has_name_iid = false;
  Kind kind = Kind::kNone;
  bool b = false;                           // bool_value (2)
  uint64_t u = 0;                           // uint_value (3), pointer_value (7)
  int64_t i = 0;                            // int_value (4)
  double d = 0;                             // double_value (5)
  std::string_view s;                       // string_value (6), string_value_iid (17) resolved,
                                            // legacy_json_value (9)
  std::vector<protozero::data_view> items;  // array_values (12) or dict_entries (11)

  // Decodes one DebugAnnotation message; `strings` resolves string_value_iid. Throws
  // protozero::exception on broken protobuf.
  void read(protozero::data_view message, const InternedText& strings);
};

// Annotation as arg_fields.h's Value: the same readings a JSON argument gets (a number where
// a number is wanted, a pool id for text). A value of the wrong kind throws FieldError.
class AnnotationArg {
 public:
  AnnotationArg(const Annotation& a, StringPool& pool, const InternedText& strings)
      : a_(a), pool_(pool), strings_(strings) {}
  int64_t int64();
  int32_t int32();
  double float64();
  int32_t string();
  int32_t raw_json();
  int32_t stream();
  bool dim3(int32_t (&out)[3]);

 private:
  const Annotation& a_;
  StringPool& pool_;
  const InternedText& strings_;
};

// The value as JSON text: what the JSON reader keeps of an argument it stores as text
// (a string's content unquoted at the top level, anything else as written).
void annotation_json(const Annotation& a, const InternedText& strings, bool top, std::string& out);

}  // namespace hta
