#include "trace/trace_columns.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "trace/pages_ahead.h"
#include "trace/row_limit.h"

namespace hta {

const std::vector<ColumnDecl>& column_decls() {
  static const std::vector<ColumnDecl> decls = [] {
    std::vector<ColumnDecl> out;
    TraceColumns columns;
    columns.for_each_table([&](const char* table, auto& t) {
      using Table = std::decay_t<decltype(t)>;
      Table::describe([&](const char* name, auto* type, const ColumnSpec& spec) {
        using T = std::remove_pointer_t<decltype(type)>;
        ColumnDecl d{table, name, arrow_type_name<T>(), spec, std::is_floating_point_v<T>, 0};
        if constexpr (!std::is_floating_point_v<T>) d.int_sentinel = missing<T>();
        out.push_back(d);
      });
    });
    return out;
  }();
  return decls;
}

void rebase_chunk(TraceColumns& chunk, StringPool& pool, int64_t row_base) {
  check_event_rows(static_cast<size_t>(row_base) + chunk.events.size());
  const auto row_shift = static_cast<EventRow>(row_base);
  std::vector<int32_t> remap(static_cast<size_t>(chunk.strings.size()));
  bool identity = true;
  for (int32_t i = 0; i < chunk.strings.size(); ++i) {
    remap[i] = pool.intern(chunk.strings.at(i));
    identity &= remap[i] == i;
  }
  chunk.for_each_table([&](const char*, auto& table) {
    table.for_each_column_spec([&](const char*, auto& v, const ColumnSpec& spec) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      if constexpr (std::is_same_v<T, int32_t>) {
        if (!identity && spec.role == ColumnRole::kString) {
          for (auto& x : v) {
            if (x >= 0) x = remap[x];
          }
        }
      }
      if constexpr (std::is_same_v<T, EventRow>) {
        if (spec.role == ColumnRole::kRow && row_shift != 0) {
          for (auto& x : v) {
            if (x >= 0) x += row_shift;
          }
        }
      }
      if constexpr (std::is_same_v<T, int64_t>) {
        if (!identity && spec.role == ColumnRole::kId) {
          for (auto& x : v) {
            if (is_string_id(x)) x = kStringIdBase - remap[kStringIdBase - x];
          }
        }
      }
    });
  });
}

namespace {

// Calls f(dst, src) for each column of `into` with the same column of `chunk` (const or not).
template <class Chunk, class F>
void zip_columns(TraceColumns& into, Chunk& chunk, F&& f) {
  using Source = std::conditional_t<std::is_const_v<Chunk>, const void*, void*>;
  std::vector<Source> sources;
  const_cast<TraceColumns&>(chunk).for_each_table([&](const char*, auto& table) {
    table.for_each_column([&](const char*, auto& col) { sources.push_back(&col); });
  });
  size_t c = 0;
  into.for_each_table([&](const char*, auto& table) {
    table.for_each_column([&](const char*, auto& dst) {
      using Col = std::decay_t<decltype(dst)>;
      using Src = std::conditional_t<std::is_const_v<Chunk>, const Col, Col>;
      f(dst, *static_cast<Src*>(sources[c++]));
    });
  });
}

}  // namespace

bool fits(const TraceColumns& into, const TraceColumns& chunk) {
  bool ok = true;
  zip_columns(const_cast<TraceColumns&>(into), chunk,
              [&](auto& dst, const auto& src) { ok &= dst.size() + src.size() <= dst.capacity(); });
  return ok;
}

void reserve_for(TraceColumns& into, const TraceColumns& chunk, double growth) {
  zip_columns(into, chunk, [&](auto& dst, const auto& src) {
    const size_t need = dst.size() + src.size();
    if (need > dst.capacity()) dst.reserve(static_cast<size_t>(static_cast<double>(need) * growth));
  });
}

void append_columns(TraceColumns& into, TraceColumns& part, double growth) {
  zip_columns(into, part, [&](auto& dst, auto& src) {
    using T = typename std::decay_t<decltype(src)>::value_type;
    const size_t at = dst.size(), need = at + src.size();
    if (need > dst.capacity()) dst.reserve(static_cast<size_t>(static_cast<double>(need) * growth));
    // Grown uninitialised (Column's allocator) and filled by memcpy: insert() would copy
    // element by element, as the allocator constructs each one.
    dst.resize(need);
    if (!src.empty()) {
      // The destination's pages populated in one call first, not faulted in by the copy one
      // page at a time (trace/pages_ahead.h).
      populate_pages(dst.data() + at, src.size() * sizeof(T));
      std::memcpy(dst.data() + at, src.data(), src.size() * sizeof(T));
    }
    std::decay_t<decltype(src)>().swap(src);  // freed now, not with the whole part
  });
  into.stats.merge(part.stats);
  part.strings.clear();
}

std::vector<void*> extend_columns(TraceColumns& into, const TraceColumns& chunk) {
  std::vector<void*> places;
  zip_columns(into, chunk, [&](auto& dst, const auto& src) {
    const size_t at = dst.size();
    dst.resize(at + src.size());  // uninitialised: Column's allocator
    places.push_back(dst.data() + at);
  });
  return places;
}

void copy_columns(const std::vector<void*>& places, const TraceColumns& chunk) {
  size_t c = 0;
  const_cast<TraceColumns&>(chunk).for_each_table([&](const char*, auto& table) {
    table.for_each_column([&](const char*, auto& src) {
      using T = typename std::decay_t<decltype(src)>::value_type;
      if (!src.empty()) std::memcpy(places[c], src.data(), src.size() * sizeof(T));
      ++c;
    });
  });
}

void reserve_for_input(TraceColumns& into, const TraceColumns& sample, size_t sample_bytes,
                       uint64_t expected_bytes) {
  if (expected_bytes == 0 || sample_bytes == 0) return;
  into.reserve_like(sample,
                    2.0 * static_cast<double>(expected_bytes) / static_cast<double>(sample_bytes));
}

std::vector<size_t> table_rows(const TraceColumns& columns) {
  std::vector<size_t> rows;
  const_cast<TraceColumns&>(columns).for_each_table(
      [&](const char*, auto& table) { rows.push_back(table.size()); });
  return rows;
}

void grow_ahead(TraceColumns& into, const std::vector<size_t>& final_rows) {
  size_t t = 0;
  into.for_each_table([&](const char*, auto& table) {
    const size_t rows = table.size();
    const size_t want = final_rows[t++] + 64;
    table.for_each_column([&](const char*, auto& col) {
      if (col.capacity() >= rows + rows / 8 + 16) return;  // room enough for now
      col.reserve(std::max(want, col.capacity() + col.capacity() / 2));
    });
  });
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
