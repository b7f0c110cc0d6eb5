#include "trace/trace_columns.h"

#include <type_traits>

namespace hta {
namespace {

// Which columns hold StringPool ids and which hold event rows; named once here so the
// merge needs no per-table code.
bool is_string_column(std::string_view table, std::string_view col) {
  if (col == "name" || col == "cat" || col == "series") return true;
  if (table == "meta") return col == "value";
  if (table == "op_args") {
    return col == "input_dims" || col == "input_type" || col == "input_strides" ||
           col == "concrete_inputs";
  }
  if (table == "comm_args") {
    return col == "collective_name" || col == "dtype" || col == "process_group_name" ||
           col == "process_group_desc" || col == "process_group_ranks" ||
           col == "in_split_size" || col == "out_split_size";
  }
  return false;
}

bool is_id_column(std::string_view col) { return col == "pid" || col == "tid"; }

template <class T>
void append_column(std::vector<T>& dst, const std::vector<T>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}

}  // namespace

void append_chunk(TraceColumns& into, TraceColumns& chunk) {
  std::vector<int32_t> remap(static_cast<size_t>(chunk.strings.size()));
  for (int32_t i = 0; i < chunk.strings.size(); ++i) remap[i] = into.strings.intern(chunk.strings.at(i));
  const int64_t row_base = static_cast<int64_t>(into.events.size());

  // Walk the two TraceColumns side by side: for_each_table visits tables in the same order.
  std::vector<std::pair<std::string_view, void*>> targets;
  into.for_each_table([&](const char* name, auto& table) { targets.emplace_back(name, &table); });
  size_t t = 0;
  chunk.for_each_table([&](const char* table_name, auto& src_table) {
    using Table = std::decay_t<decltype(src_table)>;
    auto& dst_table = *static_cast<Table*>(targets[t++].second);
    std::vector<std::pair<std::string_view, void*>> dst_cols;
    dst_table.for_each_column([&](const char* col, auto& v) { dst_cols.emplace_back(col, &v); });
    size_t c = 0;
    src_table.for_each_column([&](const char* col, auto& src) {
      using Vec = std::decay_t<decltype(src)>;
      using T = typename Vec::value_type;
      auto& dst = *static_cast<Vec*>(dst_cols[c++].second);
      const size_t start = dst.size();
      append_column(dst, src);
      if constexpr (std::is_same_v<T, int32_t>) {
        if (is_string_column(table_name, col)) {
          for (size_t i = start; i < dst.size(); ++i) {
            if (dst[i] >= 0) dst[i] = remap[dst[i]];
          }
        }
      } else if constexpr (std::is_same_v<T, int64_t>) {
        if (is_id_column(col)) {
          for (size_t i = start; i < dst.size(); ++i) {
            if (is_string_id(dst[i])) dst[i] = kStringIdBase - remap[kStringIdBase - dst[i]];
          }
        } else if (std::string_view(col) == "row" && row_base != 0) {
          for (size_t i = start; i < dst.size(); ++i) dst[i] += row_base;
        }
      }
    });
  });
  into.stats.merge(chunk.stats);
}

void TraceColumns::reserve_like(const TraceColumns& sample, double scale) {
  std::vector<size_t> sizes;
  const_cast<TraceColumns&>(sample).for_each_table(
      [&](const char*, auto& table) { sizes.push_back(table.size()); });
  size_t t = 0;
  for_each_table([&](const char*, auto& table) {
    const auto want = static_cast<size_t>(static_cast<double>(sizes[t++]) * scale);
    table.for_each_column([&](const char*, auto& col) { col.reserve(col.size() + want); });
  });
}

}  // namespace hta
